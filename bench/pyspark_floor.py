"""The plain PySpark floor of the wide-span benchmark (issue 56, part 3): the job a Spark user would write by
hand for one CSV export, with none of tenantlake's plumbing, run in the same benchmark run as ``run-all``.

What it does, on the landing file itself (no bronze copy, no validation suite, no quarantine, no counts table):

1. read the CSV typed, the schema from the contract (``floor_schema``; ``multiLine``, as the file has quoted
   line breaks; the contract's null text, e.g. ``NA``, read as null);
2. keep the rows that pass the contract's column rules (``valid_rows``: required, min/max, allowed, regex),
   what a hand-written ``where`` says; the others are dropped, not written anywhere;
3. dedupe on the contract key (``dropDuplicates(key)``);
4. write silver: an Iceberg table partitioned by ``months(<event time>)`` (or ``days()``, by the contract's
   ``partition_granularity``), the contract's columns plus ``event_date``, in a Hadoop catalog on a local
   folder, the catalog kind our local runs use;
5. read that table back and build each of the contract's gold tables with the same transformation ours runs
   (``spark_jobs.transforms.gold.<name>.build``: the aggregation is the same work by definition), written as
   an Iceberg table partitioned by ``months(event_date)`` (or ``event_date``).

The session is built as ours (``spark_jobs.runs.session.build_session``: ``local[2]``, the 2g driver heap, 8 shuffle
partitions) in a fresh process, so the two differ by the work done, not by the settings. The pure parts
(``floor_schema``, ``csv_options``, ``named_columns``, ``valid_rows``, ``deduped``, ``silver_rows``, ``gold_tables``) take and
return DataFrames; ``run_floor`` does the I/O and times each step (``steps_s``: ``silver`` = read, filter,
dedupe and the silver write and commit; ``gold`` = the read-back, the aggregation and the gold write).

What the floor leaves out, and ours does (where run-all's extra time goes, FINDINGS.md): a value that does not
cast is null here (Spark's PERMISSIVE mode), where ours quarantines it under ``<col>_type``; no lineage
columns, late flag, strings trimmed, unknown-fields check, quarantine, expectations, report, manifest, lease,
bronze copy of the landing records, or counts table. On the benchmark's files no value fails to cast and no
string has blanks around it, so silver's rows and gold's values are the same (checked against DuckDB).

The ingest floor (issue 56, part 2; ``run_ingest``): Spark's own readers doing what DuckDB's ingest does
(``bench/duckdb_reference.ingest_file``): the landing file (CSV with the contract's dialect, ``multiLine`` as
the file has quoted line breaks, or JSON lines) read with every landing field as text, the file's path and a
batch id added, written as Parquet. No raw text, line numbers, malformed or unknown-field checks, staging,
count or expectations: the least a Spark bronze can cost on this machine, beside bronze and DuckDB's ingest.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.contract.model import Contract
from spark_jobs.contract.parts import ColumnSpec, decimal_precision_scale, is_decimal_type
from spark_jobs.io.partitioning import Partitioning
from spark_jobs.lake.config import gold_table_name
from spark_jobs.transforms.gold import load_gold

CATALOG = "floor"
_SPARK_TYPES: dict[str, Callable[[], T.DataType]] = {
    "string": T.StringType, "int": T.IntegerType, "integer": T.IntegerType, "long": T.LongType,
    "double": T.DoubleType, "boolean": T.BooleanType, "timestamp": T.TimestampType, "date": T.DateType,
}
DEFAULT_TIMESTAMP_FORMAT = "yyyy-MM-dd'T'HH:mm:ss'Z'"  # the contract's default for a timestamp without a format


class FloorError(ValueError):
    """A contract the floor job cannot express as a plain typed CSV read (computed columns, derived columns)."""


# ---------------------------------------------------------------------------- pure: schema, rules, dedupe, gold
def spark_type(col: ColumnSpec) -> T.DataType:
    """The Spark type of a contract column (``decimal(P,S)`` included)."""
    if is_decimal_type(col.type):
        return T.DecimalType(*decimal_precision_scale(col.type))
    if col.type not in _SPARK_TYPES:
        raise FloorError(f"column {col.name}: type {col.type} has no plain CSV reading in bench/pyspark_floor.py")
    return _SPARK_TYPES[col.type]()


def landing_columns(contract: Contract) -> list[ColumnSpec]:
    """The contract's columns read from the landing file, in its order; a contract with computed or derived
    columns is refused (a plain read cannot make them)."""
    if contract.derived or any(col.computed for col in contract.schema):
        raise FloorError(f"{contract.dataset}: computed or derived columns need more than a plain read of the file")
    return [col for col in contract.schema if col.landing_name is not None]


def floor_schema(contract: Contract) -> T.StructType:
    """The landing file's columns, in the contract's order, typed: the schema a hand-written read passes."""
    return T.StructType([T.StructField(col.landing_name, spark_type(col)) for col in landing_columns(contract)])


def csv_options(contract: Contract) -> dict[str, str]:
    """``spark.read.csv`` options for the contract's landing dialect. ``multiLine``: quoted fields may hold
    line breaks. Spark takes one null text: the contract's first that is not blank (a blank field of a typed
    column is null anyway)."""
    landing = contract.landing
    if landing.format != "csv":
        raise FloorError(f"{contract.dataset}: landing format {landing.format}; the floor job reads CSV")
    timestamp = next((col.format for col in contract.schema if col.type == "timestamp" and col.format), None)
    date = next((col.format for col in contract.schema if col.type == "date" and col.format), None)
    null_text = next((value for value in landing.null_values if value.strip()), "")
    # enforceSchema off: Spark checks the header's names against the schema's instead of trusting positions.
    return {"header": str(landing.header).lower(), "enforceSchema": "false", "sep": landing.delimiter, "quote": landing.quote,
            "escape": landing.escape, "nullValue": null_text, "multiLine": "true", "mode": "PERMISSIVE",
            "timestampFormat": timestamp or DEFAULT_TIMESTAMP_FORMAT, "dateFormat": date or "yyyy-MM-dd",
            "encoding": landing.encoding}


def text_schema(contract: Contract) -> T.StructType:
    """The landing file's fields, every one as text (``StringType``): what bronze and DuckDB's ingest keep."""
    return T.StructType([T.StructField(col.landing_name, T.StringType()) for col in landing_columns(contract)])


def ingest_reader_options(contract: Contract) -> dict[str, str]:
    """``spark.read`` options for the ingest floor: ``csv_options`` without the typed parts (a text field needs
    no timestamp format); none for JSON lines (Spark reads a number into a text field as its text)."""
    if contract.landing.format == "json_lines":
        return {"mode": "PERMISSIVE"}
    options = csv_options(contract)
    for typed in ("timestampFormat", "dateFormat"):
        options.pop(typed)
    return options


def ingest_rows(records: DataFrame) -> DataFrame:
    """The records as the ingest floor writes them: the fields, the landing file's path and batch 0."""
    return records.select("*", F.col("_metadata.file_path").alias("_source_file"), F.lit(0).cast("long").alias("_batch_id"))


def rule_conditions(contract: Contract) -> dict[str, Column]:
    """Rule name -> the condition a row that passes it meets, for each column rule of the contract (the
    names silver uses: ``<col>_required``, ``_range``, ``_allowed``, ``_regex``). A null value passes every
    rule but ``required``, as in silver."""
    conditions: dict[str, Column] = {}
    for col in contract.schema:
        value = F.col(col.name)
        if col.required:
            conditions[f"{col.name}_required"] = value.isNotNull()
        if col.min is not None or col.max is not None:
            within = F.lit(True)
            if col.min is not None:
                within = within & (value >= F.lit(col.min))
            if col.max is not None:
                within = within & (value <= F.lit(col.max))
            conditions[f"{col.name}_range"] = value.isNull() | within
        if col.allowed is not None:
            conditions[f"{col.name}_allowed"] = value.isNull() | value.isin(list(col.allowed))
        if col.regex is not None:
            conditions[f"{col.name}_regex"] = value.isNull() | value.rlike(col.regex)
    return conditions


def valid_rows(observations: DataFrame, contract: Contract) -> DataFrame:
    """The rows that pass every column rule of the contract (``rule_conditions``)."""
    passes_all = F.lit(True)
    for condition in rule_conditions(contract).values():
        passes_all = passes_all & condition
    return observations.where(passes_all)


def deduped(observations: DataFrame, contract: Contract) -> DataFrame:
    """One row per contract key (which of several is kept is Spark's choice: the plain job has no order)."""
    return observations.dropDuplicates(list(contract.key))


def named_columns(observations: DataFrame, contract: Contract) -> DataFrame:
    """The file's fields under the contract's column names (a ``source`` field renamed)."""
    return observations.select(*[F.col(f"`{col.landing_name}`").alias(col.name) for col in contract.schema])


def silver_rows(observations: DataFrame, contract: Contract) -> DataFrame:
    """The silver table's columns: the contract's, then ``event_date`` (the event time's date, which gold
    buckets by, as in our silver)."""
    return observations.select(*contract.column_names,
                               F.to_date(F.col(contract.event_time)).alias("event_date"))


def gold_tables(silver: DataFrame, contract: Contract) -> dict[str, DataFrame]:
    """Gold table name -> its rows, built by the contract's gold transformations with its ``gold_options``."""
    return {gold_table_name(contract.dataset, name): load_gold(name).build(silver, dict(contract.gold_options.get(name, {})))
            for name in contract.gold}


def partition_term(column: str, granularity: str, is_date: bool) -> str:
    """The ``PARTITIONED BY`` term our tables use (``io.partitioning.Partitioning``): ``months(col)`` by month,
    else ``days(col)`` (a date column: itself)."""
    return Partitioning.of(column, "date" if is_date else "timestamp", granularity).sql


# ---------------------------------------------------------------------------- I/O and timing
def catalog_conf(warehouse: str | Path) -> dict[str, str]:
    """The floor's own Iceberg catalog (Hadoop, at ``warehouse``): tables at ``<warehouse>/<layer>/<table>``."""
    prefix = f"spark.sql.catalog.{CATALOG}"
    return {prefix: "org.apache.iceberg.spark.SparkCatalog", f"{prefix}.type": "hadoop",
            f"{prefix}.warehouse": str(Path(warehouse).resolve())}


def write_table(spark: SparkSession, rows: DataFrame, table: str, partitioned_by: str) -> None:
    """Create the Iceberg table (format v2) partitioned by ``partitioned_by`` and append ``rows`` to it."""
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    columns = ", ".join(f"`{field.name}` {field.dataType.simpleString()}" for field in rows.schema.fields)
    spark.sql(f"CREATE TABLE {table} ({columns}) USING iceberg PARTITIONED BY ({partitioned_by}) "
              "TBLPROPERTIES ('format-version' = '2')")
    rows.writeTo(table).append()


def committed_rows(spark: SparkSession, table: str) -> int:
    """Rows in the table's current snapshot, from its summary (metadata only, no scan)."""
    summary = spark.sql(f"SELECT summary FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1").first()
    return int(summary["summary"]["total-records"])


def run_ingest(spark: SparkSession, contract: Contract, landing_file: str | Path, out: str | Path) -> dict[str, Any]:
    """The ingest floor: ``landing_file`` read by Spark's own reader (``ingest_reader_options``, every field as
    text) and written as Parquet to ``out``. ``wall_s`` is the read and the write (as DuckDB's ``ingest_file``
    times its ``COPY``); the rows are counted after, from the written files."""
    landing = contract.landing
    if landing.format not in ("csv", "json_lines"):
        raise FloorError(f"{contract.dataset}: landing format {landing.format}; the ingest floor reads CSV or JSON lines")
    started = time.perf_counter()
    reader = spark.read.options(**ingest_reader_options(contract)).schema(text_schema(contract))
    records = reader.csv(str(landing_file)) if landing.format == "csv" else reader.json(str(landing_file))
    ingest_rows(records).write.mode("overwrite").parquet(str(out))
    wall = time.perf_counter() - started
    rows = spark.read.parquet(str(out)).count()
    return {"wall_s": wall, "rows_out": rows}


def run_floor(spark: SparkSession, contract: Contract, landing_file: str | Path,
              progress: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """The floor job on ``landing_file``, into the session's ``floor`` catalog (``catalog_conf``). Returns the
    silver rows, gold rows per table, and seconds per step (``steps_s``); the file's rows are not counted
    (that would read it once more)."""
    steps: dict[str, float] = {}
    silver_table = f"{CATALOG}.silver.`{contract.dataset}`"
    event_is_date = contract.column(contract.event_time).type == "date"
    started = time.perf_counter()
    observations = spark.read.options(**csv_options(contract)).schema(floor_schema(contract)).csv(str(landing_file))
    silver = silver_rows(deduped(valid_rows(named_columns(observations, contract), contract), contract), contract)
    write_table(spark, silver, silver_table,
                partition_term(contract.event_time, contract.partition_granularity, event_is_date))
    steps["silver"] = round(time.perf_counter() - started, 2)
    rows_out = committed_rows(spark, silver_table)
    progress(f"floor: silver {rows_out:,} rows in {steps['silver']} s")
    started = time.perf_counter()
    output_rows = {}
    for name, rows in gold_tables(spark.table(silver_table), contract).items():
        table = f"{CATALOG}.gold.`{name}`"
        write_table(spark, rows, table, partition_term("event_date", contract.partition_granularity, True))
        output_rows[name] = committed_rows(spark, table)
    steps["gold"] = round(time.perf_counter() - started, 2)
    progress(f"floor: gold {output_rows} in {steps['gold']} s")
    return {"rows_out": rows_out, "output_rows": output_rows, "steps_s": steps}
