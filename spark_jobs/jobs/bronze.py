"""Bronze job: landing/<dataset>/ -> bronze/<dataset>/_batch_id=<n>/, exactly once.

Structured Streaming's file source (checkpoint under ``checkpoints/<dataset>/bronze/``) lists the landing
files (path and length: never their bytes) and writes each micro-batch's file list to its offset log
BEFORE the batch runs, and marks the batch done in its commit log AFTER the sink returns. A restart
therefore replays an unfinished batch with the SAME id and the SAME files, and never re-reads a
committed one. The sink is ``foreachBatch``: it reads the batch's files itself (``io/landing.py``), in
ONE pass that splits them into records and writes them to a staging folder
(``checkpoints/<dataset>/bronze-staging/``), counting its rows, malformed rows and files on that write's own
Spark job (``writers.write_counted``), then checks and validates what it wrote (read back from Parquet),
and only then moves it into the partition ``_batch_id=<id>``, replacing what a
replay of the same batch left: every landing record is in bronze exactly once. (The built-in file
sink with its ``_spark_metadata`` log is exactly-once too, but then every reader of bronze must go
through that log; a plain partitioned layout is readable by any engine.)

``availableNow`` (the default) processes everything new, in batches of ``max_files_per_trigger``
files, then stops: a batch-like run. ``continuous`` polls every ``trigger_seconds`` until stopped
(or ``max_runtime_seconds``).
"""
from __future__ import annotations

import datetime as dt
import functools

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs import quality
from spark_jobs.io import landing as landing_io
from spark_jobs.io import readers, storage, writers
from spark_jobs.jobs.checkpoint import CheckpointCorruptError, check_checkpoint, is_checkpoint_failure, nothing_new
from spark_jobs.jobs.runtime import JobRun
from spark_jobs.lake.failures import JobFailed
from spark_jobs.runs.manifest import InvariantViolation
from spark_jobs.transforms import bronze as bronze_tx
from spark_jobs.transforms import landing_lines, landing_text

DEFAULT_MAX_FILES_PER_TRIGGER = 200
DEFAULT_TRIGGER_SECONDS = 10


def run_bronze(run: JobRun, *, continuous: bool = False, trigger_seconds: int = DEFAULT_TRIGGER_SECONDS,
               max_runtime_seconds: float | None = None,
               max_files_per_trigger: int = DEFAULT_MAX_FILES_PER_TRIGGER) -> None:
    spark, lake, contract, manifest = run.spark, run.lake, run.contract, run.manifest
    dataset, landing = contract.dataset, contract.landing
    landing_uri, bronze_uri = lake.landing(dataset), lake.bronze(dataset)
    manifest.inputs = [landing_uri]
    manifest.outputs = {"bronze": bronze_uri, "checkpoint": lake.checkpoint(dataset)}
    if not storage.has_data_files(spark, landing_uri):
        raise JobFailed(f"bronze {dataset}: no landing files under {landing_uri}; land some first: "
                        f"`python -m spark_jobs land --dataset {dataset} PATH...` (or `datagen` for the seed datasets)", 1)
    # A broken checkpoint must stop the run before Spark starts the query: see jobs/checkpoint.py.
    check_checkpoint(spark, lake, dataset)
    if not continuous and nothing_new(spark, lake, dataset, landing):
        run.stage("no new landing files", stream="not started: every landing file was read already")
        manifest.check_invariant()
        manifest.published = True
        return

    failures: list[BaseException] = []

    def write_batch(landing_batch: DataFrame, batch_id: int) -> None:
        try:
            write_one_batch(landing_batch, batch_id)
        except BaseException as exc:  # surfaced as itself, not as Spark's wrapper, after the query stops
            failures.append(exc)
            raise

    def write_one_batch(landing_batch: DataFrame, batch_id: int) -> None:
        quality.prewarm()  # a batch to validate: Great Expectations loads while the batch is read
        listed = [(r[0], int(r[1])) for r in landing_batch.select("_source_file", "length").collect()]
        staging = f"{staging_root}/_batch_id={batch_id}"
        writers.delete_path(spark, staging_root)
        report = spark.sparkContext.accumulator(set(), bronze_tx.FileReport())
        stamp = functools.partial(bronze_tx.add_ingest_metadata, batch_id=batch_id,
                                  ingested_at=dt.datetime.now(dt.timezone.utc), source_field=contract.source_field,
                                  source=bronze_tx.source_value(contract), record_index=record_index)
        # ONE pass over the batch's files: read, split into records, write. The records go to a staging
        # folder first: nothing is visible in bronze until the batch is checked, counted and validated.
        # Planning the read may run Spark jobs over the files (a large file's split plan): inside the same handler.
        try:
            split = _split_batch(spark, listed, contract, report)
            counts = _write_records(stamp(split), staging)
        except Exception as exc:  # a file Hadoop cannot decompress fails the read
            bad_files = landing_io.unreadable_text_files(spark, landing_io.failed_file(exc)) if landing.is_text else []
            writers.delete_path(spark, staging_root)
            if not bad_files:
                raise
            raise _bad_landing_files(dataset, sorted(bad_files)) from None
        run.stage(f"batch {batch_id} staged", files=len(listed))
        not_records = sorted(report.value)
        bad_files = [(path, problem) for path, kind, problem in not_records if kind == landing_text.KIND_PROBLEM]
        if bad_files:
            writers.delete_path(spark, staging_root)
            raise _bad_landing_files(dataset, bad_files)
        broken = [path for path, kind, _ in not_records if kind == landing_text.KIND_BROKEN_ARRAY]
        partly_written = any(problem == landing_lines.ELEMENTS_BEFORE_BREAK for _, kind, problem in not_records
                             if kind == landing_text.KIND_BROKEN_ARRAY)
        records_root = staging_root  # the folder that holds the batch's records from here on
        if broken:  # not one JSON array: each such file is ONE malformed record, kept whole
            whole = stamp(bronze_tx.whole_file_records(landing_io.read_whole_files(spark, broken), split.columns,
                                                       split.schema))
            if not partly_written:  # none of their elements was written: the whole files go beside the records
                _write_records(whole, staging, mode="append")
                run.stage(f"batch {batch_id} broken arrays added", files=len(broken))
            else:  # some elements of a broken file were written: the batch is written again without them
                kept = spark.read.parquet(staging_root).where(~F.col("_source_file").isin(broken)).drop("_batch_id")
                records_root = fixed_folder(staging_root)
                writers.delete_path(spark, records_root)
                _write_records(kept.unionByName(whole.select(*kept.columns)), f"{records_root}/_batch_id={batch_id}",
                               add_batch_id=False)
                # The batch is published from the second folder: no rename onto the folder just deleted (on S3 a
                # folder is a listing; an emulator may still list a deleted one, and a rename is a copy anyway).
                writers.delete_path(spark, staging_root)
        written = spark.read.parquet(records_root)
        if broken:  # records were added or written again: counted from the files (a rare batch)
            counts = written.agg(*[column.alias(name) for name, column in batch_counts().items()]).first().asDict()
        rows_in, malformed, files = int(counts["rows"]), int(counts["malformed"] or 0), int(counts["files"])
        run.stage(f"batch {batch_id} counted", rows=rows_in)
        try:
            run.validate(written, batch_id=batch_id, rows=rows_in, read_from_storage=True)
        except BaseException:
            writers.delete_path(spark, records_root)
            raise
        run.stage(f"batch {batch_id} validated")
        # The batch's move is its commit (Spark's commit log follows when this returns): only under the lease.
        run.fence(f"bronze batch {batch_id}")
        if rows_in:  # a batch of empty files adds no partition
            _publish(spark, f"{records_root}/_batch_id={batch_id}", f"{bronze_uri}/_batch_id={batch_id}", bronze_uri)
        writers.delete_path(spark, records_root)
        partition = f"{bronze_uri}/_batch_id={batch_id}"
        rows_out = spark.read.parquet(partition).count() if rows_in else 0
        if rows_out != rows_in:
            raise InvariantViolation(f"bronze {dataset} batch {batch_id}: wrote {rows_in} rows, {rows_out} read back")
        manifest.batches.append({"batch_id": batch_id, "files": files, "rows": rows_in, "malformed": malformed})
        manifest.rows_in += rows_in
        manifest.rows_out += rows_out
        manifest.malformed += malformed
        run.stage(f"batch {batch_id}", files=files, rows=rows_in, malformed=malformed)

    staging_root = staging_folder(lake, dataset)
    record_index = readers.record_index_type(spark, bronze_uri)  # 64-bit, unless the layer is from before
    for leftover in (staging_root, fixed_folder(staging_root)):
        if storage.exists(spark, leftover):  # a run killed before it published its batch (not committed: replayed)
            writers.delete_path(spark, leftover)
            run.stage("removed leftovers", location=leftover)
    _quiet_stream_errors(spark)
    landing_files = landing_io.landing_stream(spark, landing_uri, landing, max_files_per_trigger)
    writer = (
        landing_files.writeStream.queryName(f"bronze_{dataset}_{run.run_id.replace('-', '_')}")
        .foreachBatch(write_batch)
        .option("checkpointLocation", lake.checkpoint(dataset))
    )
    if continuous:
        try:
            query = writer.trigger(processingTime=f"{int(trigger_seconds)} seconds").start()
        except Exception as exc:
            _raise_checkpoint_failure(exc, lake, dataset)
            raise
        run.stage("streaming", trigger_seconds=trigger_seconds)
        try:
            query.awaitTermination(max_runtime_seconds) if max_runtime_seconds else query.awaitTermination()
        except KeyboardInterrupt:
            run.stage("interrupted")
        except Exception as exc:
            if failures:
                raise failures[0] from None
            _raise_checkpoint_failure(exc, lake, dataset)
            raise
        finally:
            if query.isActive:
                query.stop()
        if failures:
            raise failures[0]
    else:
        try:
            query = writer.trigger(availableNow=True).start()
            query.awaitTermination()
        except Exception as exc:
            if failures:
                raise failures[0] from None
            _raise_checkpoint_failure(exc, lake, dataset)
            raise
    if failures:
        raise failures[0]
    if not manifest.batches:
        run.stage("no new landing files")
    manifest.check_invariant()
    manifest.published = True


def staging_folder(lake, dataset: str) -> str:
    """Where a batch's records are written before they are checked and moved into bronze."""
    return lake.staging(dataset, "bronze")


def _split_batch(spark, files: list[tuple[str, int]], contract, report=None) -> DataFrame:
    """One micro-batch of landing files (``(path, length)``) -> bronze records (with ``_kind`` and
    ``_file_problem``), by the landing format. ``report`` (an accumulator) learns of files that are not
    records (text formats)."""
    landing = contract.landing
    if landing.is_text:  # a large file split across tasks where the format allows (io/landing.landing_lines)
        lines, offsets, splits = landing_io.landing_lines(spark, files, bronze_tx.line_options(landing, contract.landing_fields))
        return bronze_tx.records_from_lines(lines, landing, contract.landing_fields, report=report, offsets=offsets,
                                            splits=splits)
    paths = [path for path, length in files if length > 0]
    frames, problems = landing_io.read_parquet_files(spark, paths)
    if problems:
        raise _bad_landing_files(contract.dataset, problems)
    if not frames:  # only 0-byte files: no records
        schema = T.StructType([T.StructField("_raw", T.StringType()), T.StructField("_is_malformed", T.BooleanType()),
                               T.StructField("_source_file", T.StringType()), T.StructField("_record_index", T.LongType()),
                               T.StructField(bronze_tx.FIELDS_COLUMN, bronze_tx.fields_type(contract.landing_fields)),
                               T.StructField(bronze_tx.UNKNOWN_COLUMN, T.ArrayType(T.StringType())),
                               T.StructField(bronze_tx.FIELDS_ID_COLUMN, T.IntegerType()),
                               T.StructField("_kind", T.StringType()), T.StructField("_file_problem", T.StringType())])
        return spark.createDataFrame([], schema)
    records = [bronze_tx.parquet_rows_to_records(frame, contract.landing_fields) for frame in frames]
    return functools.reduce(DataFrame.unionByName, records)


def fixed_folder(staging_root: str) -> str:
    """Where a batch with broken JSON-array files is written again (its records plus one whole-file record
    per broken file), next to the staging folder."""
    return f"{staging_root}-fixed"


def batch_counts() -> dict[str, Column]:
    """What a batch's manifest entry says of its records: rows, malformed rows and files (those with a record).
    Observed on the write's own Spark job (``writers.write_counted``), where an aggregate cannot be a distinct
    one: hence ``size(collect_set)`` (at most ``max_files_per_trigger`` paths)."""
    return {"rows": F.count(F.lit(1)), "malformed": F.sum(F.col("_is_malformed").cast("int")),
            "files": F.size(F.collect_set("_source_file"))}


# ``_raw`` is one record's text, distinct per row: a dictionary of it never pays (Parquet's writer falls back to
# plain encoding for it), but the writer hashes and compares each value until it does. The other columns keep
# theirs (``_source_file``, ``_header`` and the fields of few values shrink by it).
PARQUET_OPTIONS = {"parquet.enable.dictionary#_raw": "false"}


def _write_records(records: DataFrame, uri: str, add_batch_id: bool = True, mode: str = "overwrite"
                   ) -> dict[str, int | None] | None:
    """The batch's records (not the rows that only report a file) as Parquet files in ``uri`` (the
    ``_batch_id`` folder of a staging tree: the column is the folder, as in bronze); ``mode`` ``append``
    adds files beside those already there. The batch's first write (``overwrite``, ``add_batch_id``) returns
    ``batch_counts`` of the rows it wrote, counted by the write's own job; the others None."""
    if add_batch_id:
        records = records.where(F.col("_kind") == F.lit(bronze_tx.RECORD_KIND)).drop("_kind", "_file_problem", "_batch_id")
        if mode == "overwrite":
            return writers.write_counted(records, uri, batch_counts(), PARQUET_OPTIONS)[1]
    records.write.mode(mode).options(**PARQUET_OPTIONS).parquet(uri)
    return None


def _publish(spark, staging: str, partition: str, bronze_uri: str) -> None:
    """Move the staged batch into bronze, replacing the partition a replayed batch left (one rename; on S3
    a copy per object). A run killed in between leaves the batch uncommitted: its replay writes it again."""
    writers.delete_path(spark, partition)
    storage.make_dirs(spark, bronze_uri)
    storage.rename(spark, staging, partition)


def _bad_landing_files(dataset: str, problems: list[tuple[str, str]]) -> JobFailed:
    """Landing files that are not the contract's format at all: one line per file, nothing written."""
    return JobFailed("\n".join(
        f"bronze {dataset}: landing file {path} {reason}; nothing of this batch was written: move the file out of "
        f"landing/{dataset}/ and run bronze again" for path, reason in problems), 1)


def _raise_checkpoint_failure(exc: BaseException, lake, dataset: str) -> None:
    """Spark's own checkpoint errors (a case ``check_checkpoint`` let through) get the same one line."""
    if is_checkpoint_failure(exc, lake, dataset):
        first_line = (str(exc).strip().splitlines() or [""])[0]
        raise CheckpointCorruptError(dataset, lake.checkpoint(dataset), first_line[:300], lake.lake_uri) from None


def _quiet_stream_errors(spark) -> None:
    """A failing batch is reported once, by this job, in one line; Spark would also log the query's
    termination with a JVM stack trace."""
    jvm = spark.sparkContext._jvm
    try:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
            "org.apache.spark.sql.execution.streaming.MicroBatchExecution", jvm.org.apache.logging.log4j.Level.OFF)
    except Exception:  # noqa: BLE001 - logging tweaks are best effort (another log4j on EMR)
        pass
