"""Silver: enforce the contract (schema, types, normalisation), flag invalid rows, dedupe, mark late.

Order (each step a pure function, composed by ``spark_jobs.jobs.silver``):
1. ``parse_records``: every schema field is pulled out of ``_raw`` as text (a JSON field or a CSV
   field, by the landing format), then cast to its contract type (a value that does not cast is null
   in the typed column and fails ``<col>_type``);
2. ``flag_invalid_rows``: ``_failed_rules`` = the names of the row rules the record breaks;
3. valid rows: ``dedupe_latest`` on the contract key (latest ``_ingested_at`` wins; ties broken by
   ``_batch_id``, ``_source_file``, ``_record_index``, so the result never depends on task order);
   ``flag_late_rows``; ``to_silver`` (enrichment + ``event_date`` + the silver schema);
4. invalid rows: ``to_quarantine`` (the raw record, the failed rule names, lineage).
Invalid rows are quarantined before the dedupe, so a bad re-send never replaces a good record.
"""
from __future__ import annotations

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.contract import MALFORMED_RULE, UNKNOWN_FIELDS_RULE, ColumnSpec, Contract, ContractError
from spark_jobs.transforms import bronze as bronze_tx
from spark_jobs.transforms import csv_records
from spark_jobs.transforms.bronze import is_json_object

RAW_PREFIX = "__raw__"
LINEAGE_COLUMNS: tuple[str, ...] = ("_ingested_at", "_source_file", "_batch_id", "_record_index")
QUARANTINE_COLUMNS: tuple[str, ...] = (
    "_raw", "_failed_rules", "_source_file", "_batch_id", "_record_index", "_ingested_at", "_run_id", "event_date",
)
_INTEGER_TEXT = r"^\s*[-+]?[0-9]+\s*$"
_DECIMAL_TEXT = r"^\s*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)\s*$"
_BOOLEAN_TEXTS = ("true", "false")


def _raw_name(column: str) -> str:
    return f"{RAW_PREFIX}{column}"


def _typed(col: ColumnSpec) -> Column:
    """The contract-typed value of ``col`` from its raw text; null when the text does not cast."""
    raw = F.col(_raw_name(col.name))
    if col.type == "string":
        text = F.trim(raw)
        if col.case == "lower":
            text = F.lower(text)
        elif col.case == "upper":
            text = F.upper(text)
        return F.when(F.trim(raw) != "", text)  # blank is missing
    if col.type in ("int", "long"):
        is_integer_text = raw.rlike(_INTEGER_TEXT)
        return F.when(is_integer_text, F.trim(raw).cast(col.type))
    if col.type == "double":
        return F.trim(raw).cast("double")
    if col.is_decimal:  # decimal(P,S): a plain number; one that does not fit P digits is null (fails the type rule)
        return F.when(raw.rlike(_DECIMAL_TEXT), F.trim(raw).cast(col.type))
    if col.type == "boolean":
        is_boolean_text = F.lower(F.trim(raw)).isin(*_BOOLEAN_TEXTS)
        return F.when(is_boolean_text, F.lower(F.trim(raw)).cast("boolean"))
    if col.type == "timestamp":
        return F.to_timestamp(F.trim(raw), col.format)
    if col.type == "date":
        return F.to_date(F.trim(raw), col.format or "yyyy-MM-dd")
    raise ValueError(f"column {col.name}: unsupported type {col.type}")


def parse_records(bronze: DataFrame, contract: Contract, read_schema: T.StructType | None = None) -> DataFrame:
    """Bronze rows -> bronze lineage + ``_raw`` + ``_is_malformed`` + raw text and typed value per column.

    The text of each column is read from ``_raw`` by the contract's landing format: a JSON field (JSON
    landing, and Parquet rows, which bronze keeps as JSON objects) or a CSV field, found by the file's
    header (``_header``) or, without a header, by position in the schema. A column's ``source`` names
    its landing field; a ``computed`` column's text is its Spark SQL expression over the other columns'
    texts. Malformed means: flagged in bronze, or not a JSON object / not a well-formed CSV record of
    the right field count (checked again: bronze may predate a fix).
    JSON is parsed once per record, into a map of every top-level field's text (a nested value as its
    JSON text): the contract's fields and the unknown field names both come from it. ``read_schema``
    (only the naive benchmark baseline passes one: an inferred schema) reads the fields through that
    struct instead, each as text (null when the schema lacks it), at the cost of a second parse.
    """
    landing = contract.landing
    plain = [col for col in contract.schema if col.landing_name is not None]
    if landing.format == "csv":
        values = csv_records.fields(F.col("_raw"), landing)
        names = (csv_records.header_names(F.col("_header"), landing) if landing.header
                 else F.array(*[F.lit(name) for name in contract.landing_fields]))
        is_malformed = F.col("_is_malformed") | bronze_tx.csv_record_is_malformed(
            F.col("_raw"), F.col("_header") if landing.header else F.lit(None).cast("string"), landing,
            len(contract.landing_fields))
        texts = [F.when(~is_malformed, csv_records.field_of(values, names, col.landing_name)) for col in plain]
        all_fields = names if landing.header else F.array().cast("array<string>")
    else:
        # One parse per record: every top-level field as text (a nested value as its JSON text), from
        # which both the contract's fields and the unknown field names are taken.
        fields = F.from_json(F.col("_raw"), T.MapType(T.StringType(), T.StringType()))
        if read_schema is None:
            texts = [fields.getItem(col.landing_name) for col in plain]
        else:
            parsed = F.from_json(F.col("_raw"), read_schema)
            present = set(read_schema.fieldNames())
            texts = [parsed.getField(col.landing_name).cast("string") if col.landing_name in present
                     else F.lit(None).cast("string") for col in plain]
        all_fields = F.map_keys(fields)
        is_malformed = F.col("_is_malformed") | ~is_json_object(F.col("_raw"))
    known_fields = F.array(*[F.lit(name) for name in contract.landing_fields])
    with_text = bronze.select(
        "_raw",
        is_malformed.alias("_is_malformed"),
        F.coalesce(F.array_except(all_fields, known_fields), F.array().cast("array<string>")).alias("_unknown_fields"),
        *LINEAGE_COLUMNS,
        *[text.alias(_raw_name(col.name)) for col, text in zip(plain, texts)],
    )
    with_text = _add_computed_texts(with_text, contract, plain)
    return with_text.select(
        "_raw", "_is_malformed", "_unknown_fields", *LINEAGE_COLUMNS,
        *[_raw_name(name) for name in contract.column_names],
        *[_typed(col).alias(col.name) for col in contract.schema],
    )


def _add_computed_texts(with_text: DataFrame, contract: Contract, plain: list[ColumnSpec]) -> DataFrame:
    """Each ``computed`` column's text: its expression evaluated where every landing column's name
    stands for that column's text (``concat(date, ' ', time)``)."""
    computed = [col for col in contract.schema if col.computed]
    if not computed:
        return with_text
    scope = with_text.select("*", *[F.col(_raw_name(col.name)).alias(col.name) for col in plain])
    for index, col in enumerate(contract.schema):
        if not col.computed:
            continue
        try:
            scope = scope.select("*", F.expr(col.computed).cast("string").alias(_raw_name(col.name)))
        except AnalysisException as exc:
            first_line = (str(exc).strip().splitlines() or [""])[0][:300]
            raise ContractError(contract.dataset, f"schema[{index}] ({col.name}).computed",
                                f"{col.computed!r} does not evaluate over the landing columns ({first_line})") from None
    return scope.drop(*[col.name for col in plain])


def _column_failures(col: ColumnSpec) -> list[tuple[str, Column]]:
    """(rule name, failed condition) for one column; each condition is false when it does not apply."""
    raw, typed = F.col(_raw_name(col.name)), F.col(col.name)
    is_missing = raw.isNull() | (F.trim(raw) == "")
    failures = []
    if col.required:
        failures.append((f"{col.name}_required", is_missing))
    if col.type != "string":
        failures.append((f"{col.name}_type", ~is_missing & typed.isNull()))
    if col.min is not None or col.max is not None:
        below_min = typed < F.lit(col.min) if col.min is not None else F.lit(False)
        above_max = typed > F.lit(col.max) if col.max is not None else F.lit(False)
        failures.append((f"{col.name}_range", typed.isNotNull() & (below_min | above_max)))
    if col.allowed is not None:
        failures.append((f"{col.name}_allowed", typed.isNotNull() & ~typed.isin(*col.allowed)))
    if col.regex is not None:
        failures.append((f"{col.name}_regex", typed.isNotNull() & ~typed.rlike(col.regex)))
    return failures


def flag_invalid_rows(parsed: DataFrame, contract: Contract) -> DataFrame:
    """Add ``_failed_rules`` (array<string>, empty when valid). A malformed record fails only
    ``malformed_record``: its fields are unknowable, so the other rules would only add noise."""
    failures: list[tuple[str, Column]] = []
    for col in contract.schema:
        failures += _column_failures(col)
    if not contract.allow_extra_fields:
        failures.append((UNKNOWN_FIELDS_RULE, F.size("_unknown_fields") > 0))
    for rule in contract.rules:
        # SQL three-valued logic: a rule over a missing optional value is not broken (null -> valid).
        failures.append((rule.name, ~F.coalesce(F.expr(rule.expr), F.lit(True))))
    failed_names = F.array_compact(F.array(*[
        F.when(F.coalesce(condition, F.lit(False)), F.lit(name)) for name, condition in failures
    ]))
    return parsed.select(
        "*",
        F.when(F.col("_is_malformed"), F.array(F.lit(MALFORMED_RULE)))
        .otherwise(failed_names)
        .alias("_failed_rules"),
    )


def is_invalid() -> Column:
    """True for a flagged row that broke at least one rule (it goes to quarantine)."""
    return F.size("_failed_rules") > 0


def valid_rows(flagged: DataFrame) -> DataFrame:
    return flagged.where(~is_invalid())


def invalid_rows(flagged: DataFrame) -> DataFrame:
    return flagged.where(is_invalid())


def narrow(flagged: DataFrame, contract: Contract) -> DataFrame:
    """Only what the rest of silver reads from the flagged records: the typed columns and lineage of
    every row, the failed rules, and the raw text of the invalid rows alone (the quarantine keeps it; a
    valid row's text is never read again). The silver job persists this frame."""
    return flagged.select(F.when(is_invalid(), F.col("_raw")).alias("_raw"), "_failed_rules", *LINEAGE_COLUMNS,
                          *contract.column_names)


def dedupe_latest(valid: DataFrame, contract: Contract) -> DataFrame:
    """One row per contract key: the latest ``_ingested_at`` wins, with a deterministic tiebreak."""
    latest_first = Window.partitionBy(*contract.key).orderBy(
        F.col("_ingested_at").desc(), F.col("_batch_id").desc(),
        F.col("_source_file").desc(), F.col("_record_index").desc(),
    )
    return (
        valid
        .withColumn("_key_rank", F.row_number().over(latest_first))
        .where(F.col("_key_rank") == 1)
        .drop("_key_rank")
    )


def flag_late_rows(records: DataFrame, contract: Contract) -> DataFrame:
    """``_is_late``: the event time trails the newest event time of the same landing file by more than
    the contract's ``lateness_minutes`` (a late arrival rolled into a newer producer batch).

    The newest event time per file is a small aggregate (one row per landing file) joined back by
    broadcast: no second shuffle and sort of every record, as a window over the file would need."""
    newest = records.groupBy("_source_file").agg(F.max(contract.event_time).alias("_newest_in_file"))
    allowed_lag = F.expr(f"INTERVAL {int(contract.lateness_minutes)} MINUTES")
    joined = records.alias("r").join(F.broadcast(newest.alias("n")),
                                     F.col("r._source_file").eqNullSafe(F.col("n._source_file")), "left")
    return joined.select(*[F.col(f"r.`{name}`") for name in records.columns],
                         (F.col(f"r.`{contract.event_time}`") < F.col("n._newest_in_file") - allowed_lag).alias("_is_late"))


def silver_columns(contract: Contract) -> list[str]:
    return [*contract.column_names, *[d.name for d in contract.derived], "event_date", "_is_late", *LINEAGE_COLUMNS]


def to_silver(records: DataFrame, contract: Contract) -> DataFrame:
    """Enrich (contract ``derived`` expressions) and state the silver schema."""
    enriched = records.select(
        "*",
        *[F.expr(d.expr).alias(d.name) for d in contract.derived],
        F.to_date(contract.event_time).alias("event_date"),
    )
    return enriched.select(*silver_columns(contract))


def quarantine_partition(contract: Contract) -> str:
    """The quarantine's partition column: ``event_date`` at ``day`` granularity, ``event_month``
    (``YYYY-MM``, text) at ``month``."""
    return "event_month" if contract.partition_granularity == "month" else "event_date"


def to_quarantine(invalid: DataFrame, contract: Contract, run_id: str) -> DataFrame:
    """The quarantine schema: raw record, failed rule names and lineage, and the event date (null when
    the event time itself is unreadable); at ``month`` granularity also ``event_month``, its partition."""
    event_date = F.to_date(contract.event_time)
    month = [F.date_format(event_date, "yyyy-MM").alias("event_month")] if contract.partition_granularity == "month" else []
    return invalid.select(
        "_raw",
        "_failed_rules",
        "_source_file",
        "_batch_id",
        "_record_index",
        "_ingested_at",
        F.lit(run_id).alias("_run_id"),
        event_date.alias("event_date"),
        *month,
    )
