"""Bronze: landing files -> one row per raw record, malformed input kept and flagged, never dropped.

The landing file is read whole (``wholetext``), so a record's position in its file is known and the
tiebreak of the silver dedupe is deterministic. A ``json_array`` file that is not a JSON array (a
truncated upload, say) becomes ONE bronze row holding the whole file, flagged malformed.
"""
from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

BRONZE_COLUMNS: tuple[str, ...] = (
    "_raw", "_is_malformed", "_source_file", "_record_index", "_ingested_at", "_batch_id",
)  # plus the contract's source field (sensor, site, org), read from the raw text for per-source checks
_ANY_JSON_OBJECT = T.MapType(T.StringType(), T.StringType())


def is_json_object(raw: Column) -> Column:
    """True when ``raw`` parses as a JSON object (the record shape every contract expects)."""
    return F.from_json(raw, _ANY_JSON_OBJECT).isNotNull()


def split_landing_records(landing_files: DataFrame, landing_format: str) -> DataFrame:
    """(value: whole file text, _source_file) -> (_raw, _is_malformed, _source_file, _record_index).

    json_array: each array element is a record (kept as its JSON text); a file that is not an array
    is one malformed record. json_lines: each non-blank line is a record.
    """
    files = landing_files.select("value", "_source_file")
    if landing_format == "json_array":
        elements = F.from_json(F.col("value"), T.ArrayType(T.StringType()))
        file_is_array = elements.isNotNull()
        records = F.when(file_is_array, elements).otherwise(F.array(F.col("value")))
    elif landing_format == "json_lines":
        records = F.split(F.col("value"), r"\r?\n")
    else:
        raise ValueError(f"landing format '{landing_format}' is not one of json_array, json_lines")
    exploded = files.select("_source_file", F.posexplode(records).alias("_record_index", "_raw"))
    is_blank_line = F.trim(F.col("_raw")) == ""
    return (
        exploded
        .where(~is_blank_line)
        .select(
            "_raw",
            (~is_json_object(F.col("_raw"))).alias("_is_malformed"),
            "_source_file",
            F.col("_record_index").cast("int").alias("_record_index"),
        )
    )


def add_ingest_metadata(records: DataFrame, batch_id: int, ingested_at: dt.datetime, source_field: str) -> DataFrame:
    """Stamp each record with the micro-batch id and ingest time, and expose the per-source field
    (text, null when absent or malformed); states the bronze schema."""
    return records.select(
        F.get_json_object(F.col("_raw"), f"$.{source_field}").alias(source_field),
        "_raw",
        "_is_malformed",
        "_source_file",
        "_record_index",
        F.lit(ingested_at).cast("timestamp").alias("_ingested_at"),
        F.lit(batch_id).cast("long").alias("_batch_id"),
        # Stream metadata, when the records came through transforms.stream_records (README "Streaming").
        *[c for c in records.columns if c.startswith("_stream_")],
    )
