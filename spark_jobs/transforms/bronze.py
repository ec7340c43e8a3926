"""Bronze: landing files -> one row per raw record, malformed input kept and flagged, never dropped.

Formats (the contract's ``landing``): ``json_array``, ``json_lines``, ``csv`` (each record's raw text,
plus the file's header line as ``_header``; ``landing_csv.csv_patterns`` says what a CSV record is) and
``parquet`` (each row as one JSON object, from ``parquet_rows_to_records``).
A text file that is not text at all (NUL bytes, gzip or Parquet magic bytes) gets a ``_file_problem``:
the job fails the batch naming the file instead of ingesting binary noise.

A text landing file is read line by line (``io/landing.read_lines``) and turned into records in one
streamed pass per file (``transforms/landing_lines.py``, in the Python workers): time linear in the
file, memory bounded by a record. ``_record_index`` is the record's position in its file (CSV: among
its records, blank ones and the header counted; JSON lines: its line; JSON array: its element; Parquet:
its row), so the tiebreak of the silver dedupe is deterministic. A ``json_array`` file that is not a
JSON array (a truncated upload, a JSON-lines file, two arrays one after the other) becomes ONE bronze
row holding the whole file, flagged malformed. Every array element is a record, ``null`` and ``""``
included (flagged malformed); only blank lines of a ``json_lines`` file and a whitespace-only file
hold no record.

**Parsed once.** Each well-formed record's fields are kept as ``_fields`` (field name -> text, a nested
JSON value as its JSON text; null for a malformed record), so silver reads them instead of parsing
``_raw`` again; ``_raw`` stays for lineage and the quarantine. CSV records are split in the worker;
a JSON record is parsed once here, by ONE ``from_json`` that also proves it strict.

For JSON, well-formed means strict JSON (RFC 8259): exactly one JSON object and nothing after it, no single
quotes or NaN, and valid UTF-8. Spark's JSON functions alone would accept ``{"a":1}\n{"b":2}`` as the
object ``{"a":1}`` and silently drop the rest; and invalid UTF-8 bytes decode to U+FFFD, so a record
carrying U+FFFD is taken as damaged in transit (two different ids could decode to the same text and
collapse in the dedupe) and flagged malformed rather than ingested altered.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import zlib

from pyspark.accumulators import AccumulatorParam
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_type

from spark_jobs.contract.model import Contract
from spark_jobs.contract.parts import LandingSpec
from spark_jobs.transforms import csv_records
from spark_jobs.transforms import landing_lines, landing_text
from spark_jobs.transforms.stream_records import STREAM_COLUMNS, STREAM_OBJECT_PATTERN, envelope_columns

BRONZE_COLUMNS: tuple[str, ...] = (
    "_raw", "_is_malformed", "_source_file", "_record_index", "_ingested_at", "_batch_id",
)  # plus the contract's source field (sensor, site, org), read from the record's fields for per-source checks
# Parsed once: ``_fields`` (struct: the text of each of the contract's landing fields; null when the record is
# malformed), ``_unknown_fields`` (the record's field names the contract does not know) and ``_fields_id``
# (which contract fields and landing options they were parsed with: ``fields_id``).
FIELDS_COLUMN, UNKNOWN_COLUMN, FIELDS_ID_COLUMN = "_fields", "_unknown_fields", "_fields_id"
MAP_TYPE = T.MapType(T.StringType(), T.StringType())
_TEXT_ARRAY = T.ArrayType(T.StringType())
_STRICT_JSON = {"allowSingleQuotes": "false", "allowNonNumericNumbers": "false"}
# Appended after the text as a second array element: the parser reaches it only if the text is exactly
# one JSON value (Spark's JSON parser stops after the first value and ignores whatever follows).
_END_MARK = "tenantlake:end-of-record"
# The same idea for one parse that also yields an object's fields: [<text>,{"<mark>":"1"}] as an array of
# maps has exactly two elements, the second holding the mark, only when the text is one JSON object.
_OBJECT_AND_MARK = T.ArrayType(MAP_TYPE)
REPLACEMENT_CHAR = "\ufffd"  # what an invalid UTF-8 byte sequence decodes to
PARQUET_TIMESTAMP_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'"
_PARQUET_JSON_OPTIONS = {"timestampFormat": PARQUET_TIMESTAMP_FORMAT, "timestampNTZFormat": PARQUET_TIMESTAMP_FORMAT,
                         "dateFormat": "yyyy-MM-dd"}
RECORD_KIND = landing_text.KIND_RECORD


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


def json_object_parse(raw: Column) -> Column:
    """ONE strict parse of ``raw`` as ``[<raw>,{"<mark>":"1"}]`` (array of maps); read it with
    ``json_object_fields``."""
    return F.from_json(F.concat(F.lit("["), raw, F.lit(f',{{"{_END_MARK}":"1"}}]')), _OBJECT_AND_MARK, _STRICT_JSON)


def json_object_fields(raw: Column, parsed: Column) -> Column:
    """The fields of ``raw`` as a map (top-level name -> text; a nested value as its JSON text) when it is one
    well-formed JSON object (as ``is_json_object`` judges it), else null; ``parsed`` is ``json_object_parse(raw)``."""
    starts_as_object = F.coalesce(raw.rlike(r"^\s*\{"), F.lit(False))
    decoded_cleanly = ~F.coalesce(raw.contains(REPLACEMENT_CHAR), F.lit(False))
    one_object = (F.size(parsed) == 2) & (F.element_at(F.element_at(parsed, 2), F.lit(_END_MARK)) == F.lit("1"))
    return F.when(starts_as_object & decoded_cleanly & F.coalesce(one_object, F.lit(False)), F.element_at(parsed, 1))


def fields_type(field_names: tuple[str, ...]) -> T.StructType:
    """The ``_fields`` struct as Spark types: ``landing_text.fields_type`` (what the workers write), converted."""
    return from_arrow_type(landing_text.fields_type(field_names))


def fields_id(landing: LandingSpec, field_names: tuple[str, ...]) -> int:
    """Which parse ``_fields`` holds: a hash of the landing options and the contract's landing fields.
    Silver uses a row's ``_fields`` only when its id is the current contract's, and parses ``_raw`` otherwise."""
    if landing.format == "csv":
        key = json.dumps(["csv", landing.header, landing.delimiter, landing.quote, landing.escape,
                          list(landing.null_values), landing.encoding, list(field_names)])
    else:  # JSON lines, JSON arrays and Parquet rows (kept as JSON objects) are parsed alike
        key = json.dumps(["json", list(field_names)])
    return zlib.crc32(key.encode()) & 0x7FFFFFFF


def fields_from_map(fields: Column, field_names: tuple[str, ...]) -> tuple[Column, Column]:
    """(``_fields``, ``_unknown_fields``) of a record parsed to a map (null map: malformed)."""
    names = list(dict.fromkeys(field_names))
    known = F.array(*[F.lit(name) for name in names]) if names else F.array().cast("array<string>")
    struct = F.struct(*[fields.getItem(name).alias(name) for name in names])
    return F.when(fields.isNotNull(), struct), F.array_except(F.map_keys(fields), known)


class FileReport(AccumulatorParam):
    """A Spark accumulator of ``(path, kind, problem)`` sets: the landing files that are not records, as the
    workers find them (a set, so a retried task adds nothing new)."""

    def zero(self, value: set) -> set:
        return set()

    def addInPlace(self, value1: set, value2: set) -> set:
        value1 |= value2
        return value1


def landing_spec(landing: LandingSpec | str) -> LandingSpec:
    return landing if isinstance(landing, LandingSpec) else LandingSpec(format=landing)


def line_options(landing: LandingSpec, field_names: tuple[str, ...] = (), streams: bool = True) -> landing_text.LineOptions:
    """What the workers need of the contract's landing spec. ``streams``: in a JSON dataset, files under
    Firehose's time prefix are stream objects (JSON lines, envelopes unwrapped here)."""
    return landing_text.LineOptions(
        format=landing.format, delimiter=landing.delimiter, quote=landing.quote, escape=landing.escape,
        header=landing.header, null_values=tuple(landing.null_values), encoding=landing.encoding,
        field_names=tuple(field_names),
        stream_pattern=STREAM_OBJECT_PATTERN if streams and landing.format in ("json_array", "json_lines") else None)


def records_from_lines(lines: DataFrame, landing: LandingSpec | str, field_names: tuple[str, ...] = (),
                       streams: bool = True, report=None, offsets: dict[tuple[str, int], int] | None = None,
                       splits: dict | None = None) -> DataFrame:
    """``(_line, _source_file[, _split_start])`` (every line of each file, in order within a task, a CSV or
    JSON-array file within one task: as ``io/landing.read_lines`` gives them) -> ``(_raw, _is_malformed,
    _source_file, _record_index, _fields,
    _unknown_fields, _fields_id, [_header,] [stream columns,] _kind, _file_problem)``.

    ``_kind`` is ``record`` for a record; ``problem`` for a file that is not text (``_file_problem`` says
    why); ``broken_array`` for a ``json_array`` file that is not one JSON array (the caller keeps it whole:
    ``whole_file_records``); those rows carry no record. ``field_names``: the contract's landing fields
    (``_fields``; a header-less CSV's fields, in order). CSV records are split in the workers; JSON
    records are checked and parsed here, once; stream objects (``streams``, JSON datasets only) have
    their envelopes unwrapped first. ``report`` (a ``FileReport`` accumulator) also collects ``(path, kind,
    problem)`` of the rows that are no record; ``offsets`` (``io/landing.split_line_offsets``) number the
    lines of a JSON-lines file read in splits across its splits, and ``splits`` (``io/landing.csv_split_plan``)
    say where each split of a CSV file read in splits stands (``io/landing.landing_lines`` gives both).
    """
    landing = landing_spec(landing)
    options = line_options(landing, field_names, streams)
    records = _line_workers(lines, landing, options, report, offsets, splits)
    kind = ["_kind", "_file_problem"]
    parsed_with = F.lit(fields_id(landing, field_names)).alias(FIELDS_ID_COLUMN)
    if landing.format == "csv":
        return records.select("_raw", "_is_malformed", "_source_file", "_record_index", FIELDS_COLUMN, UNKNOWN_COLUMN,
                              parsed_with, "_header", *kind)
    with_stream = [c for c, _ in STREAM_COLUMNS] if options.stream_pattern else []
    if options.stream_pattern:
        records = records.select("*", *envelope_columns(F.col("_raw"), F.col("_from_stream")))
        records = records.select(*[c for c in records.columns if c not in ("_raw",)], F.col("_record_raw").alias("_raw"))
    return json_records(records, field_names, [*with_stream, *kind])


def record_counts(lines: DataFrame, landing: LandingSpec | str, field_names: tuple[str, ...] = (),
                  offsets: dict[tuple[str, int], int] | None = None, splits: dict | None = None) -> DataFrame:
    """What ``records_from_lines`` would make of ``lines``, counted: ``(_source_file, _kind, _file_problem,
    _records)``, one row per file, kind and batch of lines (sum ``_records`` per file and kind). The same
    readers find the same records, but no record is decoded, split into fields or handed back to the JVM:
    the counts table's landing row costs a pass of the workers over the lines, not a second bronze."""
    landing = landing_spec(landing)
    options = dataclasses.replace(line_options(landing, field_names), output="counts")
    return _line_workers(lines, landing, options, None, offsets, splits)


def _line_workers(lines: DataFrame, landing: LandingSpec, options: landing_text.LineOptions, report,
                  offsets: dict[tuple[str, int], int] | None, splits: dict | None) -> DataFrame:
    """``lines`` through the Python workers (``landing_lines.lines_to_records``): ``output_schema(options)``."""
    from pyspark.sql.pandas.types import from_arrow_schema

    if not landing.is_text:
        raise ValueError(f"landing format '{landing.format}' is not read as text (json_array, json_lines, csv)")
    split_start = F.col("_split_start") if "_split_start" in lines.columns else F.lit(0).cast("long").alias("_split_start")
    return lines.select("_line", "_source_file", split_start).mapInArrow(
        landing_lines.lines_to_records(options, report, offsets, splits),
        from_arrow_schema(landing_text.output_schema(options)))


def json_records(records: DataFrame, field_names: tuple[str, ...], passed: list[str]) -> DataFrame:
    """``_raw`` JSON texts -> the record columns, each text parsed ONCE: malformed or not, ``_fields``,
    ``_unknown_fields``. ``passed``: further columns kept."""
    parsed = records.select("*", json_object_parse(F.col("_raw")).alias("_parsed"))
    parsed = parsed.select("*", json_object_fields(F.col("_raw"), F.col("_parsed")).alias("_parsed_fields"))
    fields, unknown = fields_from_map(F.col("_parsed_fields"), field_names)
    landing_id = fields_id(LandingSpec(format="json_lines"), field_names)
    return parsed.select(
        "_raw", F.col("_parsed_fields").isNull().alias("_is_malformed"), "_source_file", "_record_index",
        fields.alias(FIELDS_COLUMN), unknown.alias(UNKNOWN_COLUMN), F.lit(landing_id).alias(FIELDS_ID_COLUMN), *passed)


def whole_file_records(files: DataFrame, columns: list[str], schema: T.StructType | None = None) -> DataFrame:
    """``(value, _source_file)`` of broken ``json_array`` files -> one malformed record each, the whole
    text as ``_raw`` (decoded as the line reader's text: invalid UTF-8 as U+FFFD), with ``columns``
    (typed as in ``schema``, the records' own schema, when given)."""
    raw = F.decode(F.col("value").cast("binary"), "UTF-8")
    base = {"_raw": raw, "_is_malformed": F.lit(True), "_source_file": F.col("_source_file"),
            "_record_index": F.lit(0).cast("long"), "_kind": F.lit(RECORD_KIND)}
    types = {f.name: f.dataType for f in schema.fields} if schema is not None else dict(STREAM_COLUMNS)
    return files.select(*[base[c].alias(c) if c in base else F.lit(None).cast(types.get(c, "string")).alias(c)
                          for c in columns])


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


def parquet_rows_to_records(rows: DataFrame, field_names: tuple[str, ...] = ()) -> DataFrame:
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
    with_raw = rows.select(raw.alias("_raw"), "_source_file", F.col("_record_index").cast("long").alias("_record_index"))
    return json_records(with_raw, tuple(field_names), [F.lit(RECORD_KIND).alias("_kind"),
                                                        F.lit(None).cast("string").alias("_file_problem")])


def source_value(contract: Contract) -> Column | None:
    """The per-source field's text of each bronze record (null when absent or malformed), read from the
    record's parsed fields (``_fields``); None when the contract has no source field."""
    if contract.source_field is None:
        return None
    name = contract.column(contract.source_field).landing_name
    if name is None:
        return F.lit(None).cast("string")
    return F.col(FIELDS_COLUMN).getField(name)


def json_path(name: str) -> str:
    """A JSON path selecting the top-level field ``name`` (bracket form when it is not a plain word)."""
    if re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
        return f"$.{name}"
    return "$['" + name.replace("\\", "\\\\").replace("'", "\\'") + "']"


def bronze_schema(contract: Contract, record_index: str = "long") -> T.StructType:
    """The bronze layer's columns for ``contract``, for reading it back: partitions written before a
    column existed (``_fields``, kept since bronze parses once) read it as null instead of leaving
    Spark to pick one file's schema for all. ``record_index``: how the layer stores ``_record_index``
    (``io/readers.record_index_type``: ``long``, or ``int`` in a layer from before it was 64-bit)."""
    index_type = T.LongType() if record_index == "long" else T.IntegerType()
    fields = [T.StructField(contract.source_field, T.StringType())] if contract.source_field else []
    fields += [T.StructField("_raw", T.StringType()), T.StructField("_is_malformed", T.BooleanType()),
               T.StructField("_source_file", T.StringType()), T.StructField("_record_index", index_type),
               T.StructField("_ingested_at", T.TimestampType()), T.StructField("_batch_id", T.LongType())]
    if contract.landing.format == "csv":
        fields.append(T.StructField("_header", T.StringType()))
    elif contract.landing.format in ("json_array", "json_lines"):
        fields += [T.StructField(name, T.TimestampType() if kind == "timestamp" else T.StringType())
                   for name, kind in STREAM_COLUMNS]
    fields += [T.StructField(FIELDS_COLUMN, fields_type(contract.landing_fields)),
               T.StructField(UNKNOWN_COLUMN, T.ArrayType(T.StringType())),
               T.StructField(FIELDS_ID_COLUMN, T.IntegerType())]
    return T.StructType(fields)


INT32_MAX = 2_147_483_647


def _record_index_as(record_index: str) -> Column:
    index = F.col("_record_index").cast("long")
    if record_index == "long":
        return index
    too_large = F.raise_error(F.concat(F.lit("landing file "), F.col("_source_file"), F.lit(
        " holds more than 2,147,483,647 records, and this dataset's bronze stores a 32-bit _record_index (written "
        "before it was 64-bit); land it as several files")))
    return F.when(index > F.lit(INT32_MAX), too_large.cast("int")).otherwise(index.cast("int"))


def add_ingest_metadata(records: DataFrame, batch_id: int, ingested_at: dt.datetime, source_field: str | None,
                        source: Column | None = None, record_index: str = "long") -> DataFrame:
    """Stamp each record with the micro-batch id and ingest time, and expose the per-source field
    (text, null when absent or malformed; ``source`` reads it, default: the JSON field of that name);
    states the bronze schema. ``_fields``, ``_header`` (CSV) and the stream columns pass through when
    present, and so do ``_kind`` and ``_file_problem``, which the job checks and drops before writing.
    ``_record_index`` is 64-bit (``record_index``: ``int`` for a layer from before, whose every partition
    keeps 32 bits: a record past 2,147,483,647 in a file then stops the write instead of wrapping)."""
    if source_field and source is None:
        source = F.get_json_object(F.col("_raw"), json_path(source_field))
    passed = [c for c in records.columns if c in (FIELDS_COLUMN, UNKNOWN_COLUMN, FIELDS_ID_COLUMN, "_header", "_kind",
                                                  "_file_problem") or c.startswith("_stream_")]
    return records.select(
        *([source.alias(source_field)] if source_field else []),
        "_raw",
        "_is_malformed",
        "_source_file",
        _record_index_as(record_index).alias("_record_index"),
        F.lit(ingested_at).cast("timestamp").alias("_ingested_at"),
        F.lit(batch_id).cast("long").alias("_batch_id"),
        # The parsed fields; CSV: the file's header line; stream metadata, when the records came from stream objects.
        *passed,
    )
