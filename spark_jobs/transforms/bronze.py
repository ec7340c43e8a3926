"""Bronze: landing files -> one row per raw record, malformed input kept and flagged, never dropped.

Formats (the contract's ``landing``): ``json_array``, ``json_lines``, ``csv`` (each record's raw text,
plus the file's header line as ``_header``; ``transforms/csv_records.py`` says what a CSV record is) and
``parquet`` (each row as one JSON object, from ``parquet_rows_to_records``).
A text file that is not text at all (NUL bytes, gzip or Parquet magic bytes) gets a ``_file_problem``:
the job fails the batch naming the file instead of ingesting binary noise.

A text landing file is read whole (``wholetext``), so a record's position in its file is known and the
tiebreak of the silver dedupe is deterministic (a Parquet row's position is its ``row_index``). A ``json_array`` file that is not a JSON array (a
truncated upload, a JSON-lines file, two arrays one after the other) becomes ONE bronze row holding the
whole file, flagged malformed. Every array element is a record, ``null`` and ``""`` included (flagged
malformed); only blank lines of a ``json_lines`` file and a whitespace-only file hold no record.

For JSON, well-formed means strict JSON (RFC 8259): exactly one JSON object and nothing after it, no single
quotes or NaN, and valid UTF-8. Spark's JSON functions alone would accept ``{"a":1}\n{"b":2}`` as the
object ``{"a":1}`` and silently drop the rest; and the text reader decodes invalid UTF-8 bytes to
U+FFFD, so a record carrying U+FFFD is taken as damaged in transit (two different ids could decode to
the same text and collapse in the dedupe) and flagged malformed rather than ingested altered.
"""
from __future__ import annotations

import datetime as dt
import re

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.contract import Contract, LandingSpec
from spark_jobs.transforms import csv_records

BRONZE_COLUMNS: tuple[str, ...] = (
    "_raw", "_is_malformed", "_source_file", "_record_index", "_ingested_at", "_batch_id",
)  # plus the contract's source field (sensor, site, org), read from the raw text for per-source checks
_TEXT_ARRAY = T.ArrayType(T.StringType())
_STRICT_JSON = {"allowSingleQuotes": "false", "allowNonNumericNumbers": "false"}
# Appended after the text as a second array element: the parser reaches it only if the text is exactly
# one JSON value (Spark's JSON parser stops after the first value and ignores whatever follows).
_END_MARK = "tenantlake:end-of-record"
REPLACEMENT_CHAR = "\ufffd"  # what an invalid UTF-8 byte sequence decodes to
PARQUET_TIMESTAMP_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'"
_PARQUET_JSON_OPTIONS = {"timestampFormat": PARQUET_TIMESTAMP_FORMAT, "timestampNTZFormat": PARQUET_TIMESTAMP_FORMAT,
                         "dateFormat": "yyyy-MM-dd"}


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


def landing_spec(landing: LandingSpec | str) -> LandingSpec:
    return landing if isinstance(landing, LandingSpec) else LandingSpec(format=landing)


def file_problem(value: Column, landing: LandingSpec) -> Column:
    """Why a landing file's bytes are not ``landing.format`` text at all (null when they may be)."""
    head = F.substring(value.cast("binary"), 1, 4)
    kind = {"csv": "CSV", "json_array": "JSON", "json_lines": "JSON lines"}.get(landing.format, landing.format)
    return (
        F.when(F.substring(head, 1, 2) == F.unhex(F.lit("1F8B")),
               F.lit("is gzip-compressed, but its name does not end in .gz"))
        .when(head == F.unhex(F.lit("50415231")), F.lit(f"is a Parquet file, not {kind}"))
        .when(value.contains("\u0000"), F.lit(f"holds NUL bytes: binary data, not {kind} text"))
    )


def split_landing_records(landing_files: DataFrame, landing: LandingSpec | str, field_count: int | None = None) -> DataFrame:
    """(value: whole file text, _source_file) -> (_raw, _is_malformed, _source_file, _record_index,
    [_header,] _file_problem).

    json_array: each array element is a record (kept as its JSON text; ``null`` too); a file that is not
    exactly one array is one malformed record, a whitespace-only file none. json_lines: each non-blank
    line is a record. csv: each non-blank record; with ``header`` the file's first record is its
    ``_header`` (on every row of the file, not a record itself); a record is malformed when it is not
    well-formed, its field count differs from the header's (or ``field_count`` without a header), or
    the header is unusable. ``_file_problem`` is set (on one row per file) when the file is not text.
    """
    landing = landing_spec(landing)
    # Invalid UTF-8 bytes become U+FFFD here, once: kept raw, they would make the Parquet of bronze and
    # quarantine unreadable to stricter engines (DuckDB rejects the whole file).
    valid_text = F.decode(F.col("value").cast("binary"), "ISO-8859-1" if landing.encoding == "iso-8859-1" else "UTF-8")
    files = landing_files.select(valid_text.alias("value"), file_problem(F.col("value"), landing).alias("_file_problem"),
                                 "_source_file")
    header = F.lit(None).cast("string")
    if landing.format == "json_array":
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
    elif landing.format == "json_lines":
        file_is_array = F.lit(False)
        records = F.split(F.col("value"), r"\r?\n")
    elif landing.format == "csv":
        file_is_array = F.lit(False)
        all_records = csv_records.split_records(F.col("value"), landing)
        if landing.header:
            # The header is the first non-blank record; its position is kept so data records keep theirs.
            header_index = F.array_position(F.transform(all_records, lambda r: ~r.rlike(r"^\s*$")), True)
            header = F.when(header_index > 0, F.element_at(all_records, header_index.cast("int")))
            records = F.transform(all_records, lambda r, i: F.when(i + 1 > header_index, r).otherwise(F.lit("")))
        else:
            records = all_records
    else:
        raise ValueError(f"landing format '{landing.format}' is not read as text (json_array, json_lines, csv)")
    # A file that is not text yields one placeholder row carrying the problem: the job fails on it.
    records = F.when(F.col("_file_problem").isNull(), records).otherwise(F.array(F.lit("")))
    # Both per-file values are computed in a projection BELOW the explode: selected next to posexplode,
    # Spark evaluates them above it, once per record, re-parsing the whole file each time (quadratic).
    per_file = files.select("_source_file", "_file_problem", file_is_array.alias("_is_element"),
                            header.alias("_header"), records.alias("_records"))
    if landing.format == "csv":  # the header is parsed once per file, not per record
        expected, header_ok = csv_header_shape(F.col("_header"), landing, field_count)
        per_file = per_file.select("*", expected.alias("_expected_fields"), header_ok.alias("_header_ok"))
    exploded = per_file.select(
        *[c for c in per_file.columns if c != "_records"],
        F.posexplode("_records").alias("_record_index", "_raw"),
    )
    is_blank_text = F.col("_raw").rlike(r"^\s*$")  # a blank line, or a file of whitespace only
    if landing.format == "csv":
        is_malformed = csv_record_is_malformed(F.col("_raw"), F.col("_header"), landing, field_count,
                                               shape=(F.col("_expected_fields"), F.col("_header_ok")))
    else:
        is_malformed = ~is_json_object(F.col("_raw"))
    kept = exploded.where(F.col("_is_element") | ~is_blank_text | F.col("_file_problem").isNotNull())
    return kept.select(
        "_raw",
        is_malformed.alias("_is_malformed"),
        "_source_file",
        F.col("_record_index").cast("int").alias("_record_index"),
        *(["_header"] if landing.format == "csv" else []),
        "_file_problem",
    )


def csv_header_shape(header: Column, landing: LandingSpec, field_count: int | None) -> tuple[Column, Column]:
    """(the field count a record must have, whether the header is usable) for a file's header; without
    a header, ``field_count`` (the contract's; None: any count) and true."""
    if landing.header:
        usable = header.isNotNull() & csv_records.is_usable_header(header, landing)
        return F.size(csv_records.header_names(header, landing)), F.coalesce(usable, F.lit(False))
    return F.lit(field_count).cast("int"), F.lit(True)


def csv_record_is_malformed(raw: Column, header: Column, landing: LandingSpec, field_count: int | None,
                            shape: tuple[Column, Column] | None = None) -> Column:
    """A CSV record is malformed when it is not well-formed, carries U+FFFD (undecodable bytes), has
    another field count than its header (or ``field_count`` without a header), or its header is unusable.
    ``shape``: ``csv_header_shape`` already computed (once per file, by bronze)."""
    expected, header_ok = shape or csv_header_shape(header, landing, field_count)
    values = csv_records.fields(raw, landing)
    decoded_cleanly = ~F.coalesce(raw.contains(REPLACEMENT_CHAR), F.lit(False))
    well_formed = csv_records.is_well_formed(raw, landing) & decoded_cleanly & header_ok
    right_count = F.coalesce(F.size(values) == expected, F.lit(True))  # no header and no field count: any
    return ~F.coalesce(well_formed & right_count, F.lit(False))


def parquet_rows_to_records(rows: DataFrame) -> DataFrame:
    """Rows read from landing Parquet files (their own columns plus ``_source_file`` and
    ``_record_index``) -> the bronze record shape, each row as ONE JSON object in ``_raw``.

    Timestamps are written as ISO-8601 UTC with microseconds (``yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'``, also
    for timestamps without a zone), dates as ``yyyy-MM-dd``; floating-point values as JSON strings, so
    that NaN and infinities stay values (strict JSON has no NaN). Null values are left out of the
    object (to JSON a missing column and a null look the same: both fail ``<col>_required``).
    """
    data_columns = [c for c in rows.columns if c not in ("_source_file", "_record_index")]
    floats = {f.name for f in rows.schema.fields if isinstance(f.dataType, (T.FloatType, T.DoubleType))}

    def as_json_value(name: str) -> Column:
        col = F.col(f"`{name.replace('`', '``')}`")
        return (col.cast("string") if name in floats else col).alias(name)

    as_json = F.to_json(F.struct(*[as_json_value(name) for name in data_columns]), _PARQUET_JSON_OPTIONS)
    # Invalid UTF-8 inside a Parquet string would reach the bronze Parquet as is: decode once, as for text.
    raw = F.decode(as_json.cast("binary"), "UTF-8")
    return rows.select(
        raw.alias("_raw"),
        "_source_file",
        F.col("_record_index").cast("int").alias("_record_index"),
    ).select(
        "_raw", (~is_json_object(F.col("_raw"))).alias("_is_malformed"), "_source_file", "_record_index",
        F.lit(None).cast("string").alias("_file_problem"),
    )


def source_value(contract: Contract) -> Column | None:
    """The per-source field's text of each bronze record (null when absent or malformed), read from
    ``_raw`` by the landing format; None when the contract has no source field."""
    if contract.source_field is None:
        return None
    name = contract.column(contract.source_field).landing_name
    if name is None:
        return F.lit(None).cast("string")
    if contract.landing.format == "csv":
        landing = contract.landing
        names = (csv_records.header_names(F.col("_header"), landing) if landing.header
                 else F.array(*[F.lit(n) for n in contract.landing_fields]))
        return F.when(~F.col("_is_malformed"), csv_records.field_of(csv_records.fields(F.col("_raw"), landing), names, name))
    return F.get_json_object(F.col("_raw"), json_path(name))


def json_path(name: str) -> str:
    """A JSON path selecting the top-level field ``name`` (bracket form when it is not a plain word)."""
    if re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
        return f"$.{name}"
    return "$['" + name.replace("\\", "\\\\").replace("'", "\\'") + "']"


def add_ingest_metadata(records: DataFrame, batch_id: int, ingested_at: dt.datetime, source_field: str | None,
                        source: Column | None = None) -> DataFrame:
    """Stamp each record with the micro-batch id and ingest time, and expose the per-source field
    (text, null when absent or malformed; ``source`` reads it, default: the JSON field of that name);
    states the bronze schema. ``_header`` (CSV) and the stream columns pass through when present, and
    so does ``_file_problem``, which the job checks and drops before writing."""
    if source_field and source is None:
        source = F.get_json_object(F.col("_raw"), json_path(source_field))
    passed = [c for c in records.columns if c in ("_header", "_file_problem") or c.startswith("_stream_")]
    return records.select(
        *([source.alias(source_field)] if source_field else []),
        "_raw",
        "_is_malformed",
        "_source_file",
        "_record_index",
        F.lit(ingested_at).cast("timestamp").alias("_ingested_at"),
        F.lit(batch_id).cast("long").alias("_batch_id"),
        # CSV: the file's header line; stream metadata, when the records came through transforms.stream_records.
        *passed,
    )
