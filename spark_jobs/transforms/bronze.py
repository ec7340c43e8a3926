"""Bronze: landing files -> one row per raw record, malformed input kept and flagged, never dropped.

The landing file is read whole (``wholetext``), so a record's position in its file is known and the
tiebreak of the silver dedupe is deterministic. A ``json_array`` file that is not a JSON array (a
truncated upload, a JSON-lines file, two arrays one after the other) becomes ONE bronze row holding the
whole file, flagged malformed. Every array element is a record, ``null`` and ``""`` included (flagged
malformed); only blank lines of a ``json_lines`` file and a whitespace-only file hold no record.

Well-formed means strict JSON (RFC 8259): exactly one JSON object and nothing after it, no single
quotes or NaN, and valid UTF-8. Spark's JSON functions alone would accept ``{"a":1}\n{"b":2}`` as the
object ``{"a":1}`` and silently drop the rest; and the text reader decodes invalid UTF-8 bytes to
U+FFFD, so a record carrying U+FFFD is taken as damaged in transit (two different ids could decode to
the same text and collapse in the dedupe) and flagged malformed rather than ingested altered.
"""
from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

BRONZE_COLUMNS: tuple[str, ...] = (
    "_raw", "_is_malformed", "_source_file", "_record_index", "_ingested_at", "_batch_id",
)  # plus the contract's source field (sensor, site, org), read from the raw text for per-source checks
_TEXT_ARRAY = T.ArrayType(T.StringType())
_STRICT_JSON = {"allowSingleQuotes": "false", "allowNonNumericNumbers": "false"}
# Appended after the text as a second array element: the parser reaches it only if the text is exactly
# one JSON value (Spark's JSON parser stops after the first value and ignores whatever follows).
_END_MARK = "tenantlake:end-of-record"
REPLACEMENT_CHAR = "\ufffd"  # what an invalid UTF-8 byte sequence decodes to


def is_single_json_value(text: Column) -> Column:
    """True when ``text`` is exactly one strict JSON value (whitespace around it allowed), nothing more."""
    wrapped = F.from_json(F.concat(F.lit("["), text, F.lit(f',"{_END_MARK}"]')), _TEXT_ARRAY, _STRICT_JSON)
    return F.coalesce((F.size(wrapped) == 2) & (F.element_at(wrapped, 2) == F.lit(_END_MARK)), F.lit(False))


def is_json_object(raw: Column) -> Column:
    """True when ``raw`` is one well-formed JSON object (the record shape every contract expects):
    strict JSON, nothing after the object, no U+FFFD from an invalid UTF-8 byte."""
    starts_as_object = F.coalesce(raw.rlike(r"^\s*\{"), F.lit(False))
    decoded_cleanly = ~F.coalesce(raw.contains(REPLACEMENT_CHAR), F.lit(False))
    return starts_as_object & decoded_cleanly & is_single_json_value(raw)


def split_landing_records(landing_files: DataFrame, landing_format: str) -> DataFrame:
    """(value: whole file text, _source_file) -> (_raw, _is_malformed, _source_file, _record_index).

    json_array: each array element is a record (kept as its JSON text; ``null`` too); a file that is not
    exactly one array is one malformed record, a whitespace-only file none. json_lines: each non-blank
    line is a record.
    """
    # Invalid UTF-8 bytes become U+FFFD here, once: kept raw, they would make the Parquet of bronze and
    # quarantine unreadable to stricter engines (DuckDB rejects the whole file).
    valid_text = F.decode(F.col("value").cast("binary"), "UTF-8")
    files = landing_files.select(valid_text.alias("value"), "_source_file")
    if landing_format == "json_array":
        # One parse per file: [<file>,["<end mark>"]] as array<array<string>> gives the elements and, through
        # the end mark, proves the file is exactly one array with nothing after it.
        wrapped = F.from_json(F.concat(F.lit("["), F.col("value"), F.lit(f',["{_END_MARK}"]]')),
                              T.ArrayType(_TEXT_ARRAY), _STRICT_JSON)
        elements = F.element_at(wrapped, 1)
        ends_at_the_mark = (F.size(wrapped) == 2) & (F.element_at(F.element_at(wrapped, 2), 1) == F.lit(_END_MARK))
        file_is_array = F.coalesce(F.col("value").rlike(r"^\s*\[") & elements.isNotNull() & ends_at_the_mark,
                                   F.lit(False))
        # A null element is a record too (its text is "null"): dropping it would lose it from the counts.
        element_texts = F.transform(elements, lambda element: F.coalesce(element, F.lit("null")))
        records = F.when(file_is_array, element_texts).otherwise(F.array(F.col("value")))
    elif landing_format == "json_lines":
        file_is_array = F.lit(False)
        records = F.split(F.col("value"), r"\r?\n")
    else:
        raise ValueError(f"landing format '{landing_format}' is not one of json_array, json_lines")
    # Both per-file values are computed in a projection BELOW the explode: selected next to posexplode,
    # Spark evaluates them above it, once per record, re-parsing the whole file each time (quadratic).
    per_file = files.select("_source_file", file_is_array.alias("_is_element"), records.alias("_records"))
    exploded = per_file.select(
        "_source_file", "_is_element", F.posexplode("_records").alias("_record_index", "_raw"),
    )
    is_blank_text = F.col("_raw").rlike(r"^\s*$")  # a blank line, or a file of whitespace only
    return (
        exploded
        .where(F.col("_is_element") | ~is_blank_text)
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
