"""Silver: enforce the contract (schema, types, normalisation), flag invalid rows, dedupe, mark late.

Order (each step a pure function, composed by ``spark_jobs.jobs.silver``):
1. ``parse_records``: every schema field is pulled out of ``_raw`` as text (a JSON field or a CSV
   field, by the landing format), then cast to its contract type (a value that does not cast is null
   in the typed column and fails ``<col>_type``);
2. ``flag_invalid_rows``: ``_failed_rules`` = the names of the row rules the record breaks;
3. valid rows: ``dedupe_latest`` on the contract key (latest ``_ingested_at`` wins; ties broken by
   ``_batch_id``, ``_source_file``, ``_record_index``, so the result never depends on task order; given
   ``duplicate_keys``, only the rows of those keys are ranked); ``flag_late_rows``; ``to_silver``
   (enrichment + ``event_date`` + the silver schema);
4. invalid rows: ``to_quarantine`` (the raw record, the failed rule names, lineage).
Invalid rows are quarantined before the dedupe, so a bad re-send never replaces a good record.
"""
from __future__ import annotations

import functools

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.contract.model import Contract
from spark_jobs.contract.parts import ColumnSpec, ContractError, MALFORMED_RULE, UNKNOWN_FIELDS_RULE
from spark_jobs.transforms import bronze as bronze_tx
from spark_jobs.transforms import csv_records
from spark_jobs.transforms.bronze import FIELDS_COLUMN, FIELDS_ID_COLUMN, UNKNOWN_COLUMN, is_json_object
from spark_jobs.transforms.typed_text import DECIMAL_TEXT, INTEGER_TEXT

RAW_PREFIX = "__raw__"
LINEAGE_COLUMNS: tuple[str, ...] = ("_ingested_at", "_source_file", "_batch_id", "_record_index")
QUARANTINE_COLUMNS: tuple[str, ...] = (
    "_raw", "_failed_rules", "_source_file", "_batch_id", "_record_index", "_ingested_at", "_run_id", "event_date",
)
_BOOLEAN_TEXTS = ("true", "false")


def _raw_name(column: str) -> str:
    return f"{RAW_PREFIX}{column}"


def _typed(col: ColumnSpec) -> Column:
    """The contract-typed value of ``col`` from its raw text; null when the text does not cast."""
    raw = F.col(_raw_name(col.name))  # the grammar of the numbers: transforms/typed_text.py (erasure reads it too)
    if col.type == "string":
        text = F.trim(raw)
        if col.case == "lower":
            text = F.lower(text)
        elif col.case == "upper":
            text = F.upper(text)
        return F.when(F.trim(raw) != "", text)  # blank is missing
    if col.type in ("int", "long"):
        is_integer_text = raw.rlike(INTEGER_TEXT)
        return F.when(is_integer_text, F.trim(raw).cast(col.type))
    if col.type == "double":
        return F.trim(raw).cast("double")
    if col.is_decimal:  # decimal(P,S): a plain number; one that does not fit P digits is null (fails the type rule)
        return F.when(raw.rlike(DECIMAL_TEXT), F.trim(raw).cast(col.type))
    if col.type == "boolean":
        is_boolean_text = F.lower(F.trim(raw)).isin(*_BOOLEAN_TEXTS)
        return F.when(is_boolean_text, F.lower(F.trim(raw)).cast("boolean"))
    if col.type == "timestamp":
        return F.to_timestamp(F.trim(raw), col.format)
    if col.type == "date":
        return F.to_date(F.trim(raw), col.format or "yyyy-MM-dd")
    raise ValueError(f"column {col.name}: unsupported type {col.type}")


def parsed_for_another_contract(bronze: DataFrame, contract: Contract) -> Column:
    """True for a bronze row whose fields silver must parse from ``_raw``: not flagged malformed, and its
    ``_fields`` not this contract's parse (another ``_fields_id``, or none: bronze written before)."""
    if not holds_parse(bronze):
        return ~F.col("_is_malformed")
    current_id = contract_fields_id(contract)
    return ~F.col("_is_malformed") & ~F.coalesce(F.col(FIELDS_ID_COLUMN) == F.lit(current_id), F.lit(False))


def holds_parse(bronze: DataFrame) -> bool:
    """Whether bronze's rows carry the parse bronze made (``_fields``, ``_unknown_fields``, ``_fields_id``);
    bronze written before it parsed once does not, and silver parses every well-formed row from ``_raw``."""
    return {FIELDS_COLUMN, UNKNOWN_COLUMN, FIELDS_ID_COLUMN} <= set(bronze.columns)


def contract_fields_id(contract: Contract) -> int:
    """The ``_fields_id`` of a bronze row whose ``_fields`` are this contract's parse (``bronze_tx.fields_id``)."""
    return bronze_tx.fields_id(contract.landing, contract.landing_fields)


def parse_records(bronze: DataFrame, contract: Contract, read_schema: T.StructType | None = None,
                  reparse: bool = True, keep: tuple[str, ...] = ()) -> DataFrame:
    """Bronze rows -> bronze lineage + ``_raw`` + ``_is_malformed`` + raw text and typed value per column.

    The text of each column is its landing field's text, which bronze parsed once (``_fields``: CSV
    fields by the file's header, or without a header by position in the schema; JSON fields, a nested
    value as its JSON text; Parquet rows, which bronze keeps as JSON objects), and the unknown field
    names are bronze's ``_unknown_fields``. A column's ``source`` names its landing field; a
    ``computed`` column's text is its Spark SQL expression over the other columns' texts. Malformed
    means flagged in bronze.

    A row whose ``_fields_id`` is not this contract's (bronze written before it parsed once, or before
    the contract's landing fields or options changed) is parsed here instead, from ``_raw``, and
    checked again: a JSON object (one parse per record, into a map of every top-level field's text),
    or a well-formed CSV record of the right field count. ``read_schema`` (only the naive benchmark baseline passes one: an inferred
    schema) reads the fields through that struct from ``_raw`` instead, each as text (null when the
    schema lacks it), at the cost of a second parse. ``reparse=False`` (the caller has checked that no row
    is ``parsed_for_another_contract``) leaves the parse of ``_raw`` out of the plan altogether: its
    expressions alone, never evaluated, made Spark's generated code for a CSV contract several seconds
    slower to compile and run. ``keep``: other bronze columns to carry through as they are (the erasure reads
    a row's texts and its typed subject columns together).
    """
    landing = contract.landing
    plain = [col for col in contract.schema if col.landing_name is not None]
    reparsed, still_ok = _parse_raw(contract) if reparse else (F.lit(None).cast(bronze_tx.MAP_TYPE), F.lit(True))
    known_fields = F.array(*[F.lit(name) for name in contract.landing_fields])
    current_id = bronze_tx.fields_id(landing, contract.landing_fields)
    parsed_in_bronze = {FIELDS_COLUMN, UNKNOWN_COLUMN, FIELDS_ID_COLUMN} <= set(bronze.columns)
    if parsed_in_bronze:
        current = F.coalesce(F.col(FIELDS_ID_COLUMN) == F.lit(current_id), F.lit(False))
    else:
        current = F.lit(False)
    needs_parse = (~current & ~F.col("_is_malformed")) if reparse else F.lit(False)
    # The parse of an old row is its own column, so that every use below reads it and none repeats it.
    step = bronze.select(
        "*", current.alias("__current"),
        F.when(needs_parse, F.struct(F.when(still_ok, reparsed).alias("fields"), still_ok.alias("ok"))).alias("__reparsed"))
    step = step.select(
        *[c for c in step.columns if c != "_is_malformed"],
        (F.col("_is_malformed") | F.coalesce(~F.col("__reparsed.ok"), F.lit(False))).alias("_is_malformed"))
    bronze, is_malformed = step, F.col("_is_malformed")
    old_fields = F.col("__reparsed.fields")
    if read_schema is None:
        texts = [(F.when(F.col("__current"), F.col(FIELDS_COLUMN).getField(col.landing_name))
                  .otherwise(old_fields.getItem(col.landing_name)) if reparse else
                  F.col(FIELDS_COLUMN).getField(col.landing_name)) if parsed_in_bronze
                 else old_fields.getItem(col.landing_name) for col in plain]
    else:
        parsed = F.from_json(F.col("_raw"), read_schema)
        present = set(read_schema.fieldNames())
        texts = [F.when(~is_malformed, parsed.getField(col.landing_name).cast("string")) if col.landing_name in present
                 else F.lit(None).cast("string") for col in plain]
    old_unknown = (F.array().cast("array<string>") if landing.format == "csv" and not landing.header  # named by the contract
                   else F.array_except(F.map_keys(old_fields), known_fields))
    if not parsed_in_bronze:
        unknown = old_unknown
    else:
        unknown = F.when(F.col("__current"), F.col(UNKNOWN_COLUMN)).otherwise(old_unknown) if reparse else F.col(UNKNOWN_COLUMN)
    with_text = bronze.select(
        "_raw",
        is_malformed.alias("_is_malformed"),
        F.coalesce(unknown, F.array().cast("array<string>")).alias("_unknown_fields"),
        *LINEAGE_COLUMNS, *keep,
        *[text.alias(_raw_name(col.name)) for col, text in zip(plain, texts)],
    )
    with_text = _add_computed_texts(with_text, contract, plain)
    return with_text.select(
        "_raw", "_is_malformed", "_unknown_fields", *LINEAGE_COLUMNS, *keep,
        *[_raw_name(name) for name in contract.column_names],
        *[_typed(col).alias(col.name) for col in contract.schema],
    )


def _parse_raw(contract: Contract) -> tuple[Column, Column]:
    """For bronze rows whose ``_fields`` are not this contract's parse (written before bronze parsed once, or
    before the contract's landing fields or options changed): (the record's fields parsed from ``_raw``
    as a map, whether the record passes the checks bronze makes). Only evaluated for such rows."""
    landing = contract.landing
    if landing.format == "csv":
        values = csv_records.fields(F.col("_raw"), landing)
        names = (csv_records.header_names(F.col("_header"), landing) if landing.header
                 else F.array(*[F.lit(name) for name in contract.landing_fields]))
        ok = ~bronze_tx.csv_record_is_malformed(
            F.col("_raw"), F.col("_header") if landing.header else F.lit(None).cast("string"), landing,
            len(contract.landing_fields))
        return F.map_from_arrays(names, values), ok
    return F.from_json(F.col("_raw"), bronze_tx.MAP_TYPE), is_json_object(F.col("_raw"))


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
        failures.append((UNKNOWN_FIELDS_RULE, F.size(unknown_fields(contract)) > 0))
    for rule in contract.rules:
        # SQL three-valued logic: a rule over a missing optional value is not broken (null -> valid).
        failures.append((rule.name, ~F.coalesce(F.expr(rule.expr), F.lit(True))))
    failed = [(name, F.coalesce(condition, F.lit(False))) for name, condition in failures]
    failed_names = F.array_compact(F.array(*[F.when(condition, F.lit(name)) for name, condition in failed]))
    # The names are gathered only for a row that fails some rule: building and compacting an array of every
    # rule for each row (nearly all valid) cost more than the rules themselves.
    fails_any = functools.reduce(lambda a, b: a | b, [condition for _, condition in failed], F.lit(False))
    return parsed.select(
        "*",
        F.when(F.col("_is_malformed"), F.array(F.lit(MALFORMED_RULE)))
        .when(fails_any, failed_names)
        .otherwise(F.array().cast("array<string>"))
        .alias("_failed_rules"),
    )


def unknown_fields(contract: Contract) -> Column:
    """The record's landing fields the contract does not know, less those it ignores on purpose
    (``ignored_fields``: its own list and the fields of columns marked ``removed: true``)."""
    if not contract.ignored_fields:
        return F.col("_unknown_fields")
    return F.array_except("_unknown_fields", F.array(*[F.lit(name) for name in contract.ignored_fields]))


def is_invalid() -> Column:
    """True for a flagged row that broke at least one rule (it goes to quarantine)."""
    return F.size("_failed_rules") > 0


def valid_rows(flagged: DataFrame) -> DataFrame:
    return flagged.where(~is_invalid())


def invalid_rows(flagged: DataFrame) -> DataFrame:
    return flagged.where(is_invalid())


def narrow(flagged: DataFrame, contract: Contract) -> DataFrame:
    """Only what the rest of silver reads from the flagged records: the typed columns and lineage of
    every row, the failed rules, and the raw text and unknown field names of the invalid rows alone (the
    quarantine keeps the text; the job names the unknown fields in its counts; a valid row's text is never
    read again). The silver job persists this frame."""
    failed_unknown = F.array_contains("_failed_rules", UNKNOWN_FIELDS_RULE)
    return flagged.select(F.when(is_invalid(), F.col("_raw")).alias("_raw"), "_failed_rules",
                          F.when(failed_unknown, unknown_fields(contract)).alias("_unknown_fields"), *LINEAGE_COLUMNS,
                          *contract.column_names)


def duplicate_keys(valid: DataFrame, contract: Contract) -> DataFrame:
    """The contract keys that more than one valid row holds, with ``_rows`` (how many): one aggregation
    over the key columns alone, so finding them moves a few bytes per row, not the rows."""
    return (valid.groupBy(*contract.key).agg(F.count(F.lit(1)).alias("_rows"))
            .where(F.col("_rows") > 1))


def dedupe_latest(valid: DataFrame, contract: Contract, duplicates: DataFrame | None = None,
                  prefer: str | None = None) -> DataFrame:
    """One row per contract key: the latest ``_ingested_at`` wins, with a deterministic tiebreak.

    ``duplicates`` (``duplicate_keys(valid)``, small enough to broadcast): only the rows of those keys are
    ranked; every other row is already the one row of its key and passes without a shuffle. Without it,
    every row is ranked (one shuffle and sort of all of them). Both give the same rows. ``prefer``: a column
    that breaks the last tie, higher first (an incremental run: the record computed now over the same record
    as the table holds it)."""
    latest_first = Window.partitionBy(*contract.key).orderBy(
        F.col("_ingested_at").desc(), F.col("_batch_id").desc(),
        F.col("_source_file").desc(), F.col("_record_index").desc(),
        *([F.col(prefer).desc()] if prefer else []),
    )
    if duplicates is None:
        ranked = valid
    else:
        keys = F.broadcast(duplicates.select(*[F.col(k).alias(f"_dup_{k}") for k in contract.key]))
        same_key = functools.reduce(lambda a, b: a & b, [F.col(k).eqNullSafe(F.col(f"_dup_{k}")) for k in contract.key])
        ranked = valid.join(keys, same_key, "left_semi")
    winners = (
        ranked
        .withColumn("_key_rank", F.row_number().over(latest_first))
        .where(F.col("_key_rank") == 1)
        .drop("_key_rank")
    )
    if duplicates is None:
        return winners
    return valid.join(keys, same_key, "left_anti").unionByName(winners)


def newest_per_file(records: DataFrame, contract: Contract) -> DataFrame:
    """``(_source_file, _newest_in_file)``: the newest event time of each landing file's records."""
    return records.groupBy("_source_file").agg(F.max(contract.event_time).alias("_newest_in_file"))


def flag_late_rows(records: DataFrame, contract: Contract, newest: DataFrame | None = None) -> DataFrame:
    """``_is_late``: the event time trails the newest event time of the same landing file by more than
    the contract's ``lateness_minutes`` (a late arrival rolled into a newer producer batch).

    The newest event time per file is a small aggregate (one row per landing file, ``newest_per_file``;
    ``newest``: the caller's, computed once) joined back by broadcast: no second shuffle and sort of every
    record, as a window over the file would need."""
    newest = newest if newest is not None else newest_per_file(records, contract)
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
