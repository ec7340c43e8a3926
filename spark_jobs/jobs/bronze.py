"""Bronze job: landing/<dataset>/ -> bronze/<dataset>/_batch_id=<n>/, exactly once.

Structured Streaming's file source (checkpoint under ``checkpoints/<dataset>/bronze/``) writes each
micro-batch's file list to its offset log BEFORE the batch runs, and marks the batch done in its
commit log AFTER the sink returns. A restart therefore replays an unfinished batch with the SAME id
and the SAME files, and never re-reads a committed one. The sink is ``foreachBatch`` writing the
partition ``_batch_id=<id>`` with dynamic partition overwrite: a replay replaces that partition
instead of appending to it, so every landing record is in bronze exactly once. (The built-in file
sink with its ``_spark_metadata`` log is exactly-once too, but then every reader of bronze must go
through that log; a plain partitioned layout is readable by any engine.)

``availableNow`` (the default) processes everything new, in batches of ``max_files_per_trigger``
files, then stops: a batch-like run. ``continuous`` polls every ``trigger_seconds`` until stopped
(or ``max_runtime_seconds``).
"""
from __future__ import annotations

import datetime as dt
import functools

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_jobs.io import landing as landing_io
from spark_jobs.io import storage, writers
from spark_jobs.jobs.checkpoint import CheckpointCorruptError, check_checkpoint, is_checkpoint_failure
from spark_jobs.jobs.runtime import JobFailed, JobRun
from spark_jobs.manifest import InvariantViolation
from spark_jobs.transforms import bronze as bronze_tx
from spark_jobs.transforms import landing_lines

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

    failures: list[BaseException] = []

    def write_batch(landing_batch: DataFrame, batch_id: int) -> None:
        try:
            write_one_batch(landing_batch, batch_id)
        except BaseException as exc:  # surfaced as itself, not as Spark's wrapper, after the query stops
            failures.append(exc)
            raise

    def write_one_batch(landing_batch: DataFrame, batch_id: int) -> None:
        listed = [(r[0], int(r[1])) for r in landing_batch.select("_source_file", "length").collect()]
        split = _split_batch(spark, listed, contract)
        stamp = functools.partial(bronze_tx.add_ingest_metadata, batch_id=batch_id,
                                  ingested_at=dt.datetime.now(dt.timezone.utc), source_field=contract.source_field,
                                  source=bronze_tx.source_value(contract))
        staged = stamp(split).persist()
        whole = None
        try:
            try:  # the first action reads the batch's files: a file Hadoop cannot decompress fails here
                not_records = (staged.where(F.col("_kind") != F.lit(bronze_tx.RECORD_KIND))
                               .select("_source_file", "_kind", "_file_problem").distinct().collect())
            except Exception as exc:
                bad_files = landing_io.unreadable_text_files(spark, landing_io.failed_file(exc)) if landing.is_text else []
                if not bad_files:
                    raise
                raise _bad_landing_files(dataset, sorted(bad_files)) from None
            bad_files = sorted((r[0], r[2]) for r in not_records if r[1] == landing_lines.KIND_PROBLEM)
            if bad_files:
                raise _bad_landing_files(dataset, bad_files)
            records = staged.where(F.col("_kind") == F.lit(bronze_tx.RECORD_KIND))
            broken = sorted(r[0] for r in not_records if r[1] == landing_lines.KIND_BROKEN_ARRAY)
            if broken:  # not one JSON array: each such file is ONE malformed record, kept whole
                whole = stamp(bronze_tx.whole_file_records(landing_io.read_whole_files(spark, broken),
                                                           split.columns)).persist()
                records = records.where(~F.col("_source_file").isin(broken)).unionByName(whole)
            records = records.drop("_kind", "_file_problem")
            counts = records.agg(
                F.count(F.lit(1)).alias("rows"),
                F.sum(F.col("_is_malformed").cast("int")).alias("malformed"),
                F.countDistinct("_source_file").alias("files"),
            ).first()
            rows_in, malformed, files = int(counts["rows"]), int(counts["malformed"] or 0), int(counts["files"])
            run.validate(records, batch_id=batch_id)
            writers.replace_partitions(records, bronze_uri, ["_batch_id"])
        finally:
            staged.unpersist()
            if whole is not None:
                whole.unpersist()
        partition = f"{bronze_uri}/_batch_id={batch_id}"
        rows_out = spark.read.parquet(partition).count() if rows_in else 0
        if rows_out != rows_in:
            raise InvariantViolation(f"bronze {dataset} batch {batch_id}: wrote {rows_in} rows, {rows_out} read back")
        manifest.batches.append({"batch_id": batch_id, "files": files, "rows": rows_in, "malformed": malformed})
        manifest.rows_in += rows_in
        manifest.rows_out += rows_out
        manifest.malformed += malformed
        run.stage(f"batch {batch_id}", files=files, rows=rows_in, malformed=malformed)

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


def _split_batch(spark, files: list[tuple[str, int]], contract) -> DataFrame:
    """One micro-batch of landing files (``(path, length)``) -> bronze records (with ``_kind`` and
    ``_file_problem``), by the landing format."""
    landing = contract.landing
    if landing.is_text:
        lines = landing_io.read_lines(spark, files)
        return bronze_tx.records_from_lines(lines, landing, contract.landing_fields)
    paths = [path for path, length in files if length > 0]
    frames, problems = landing_io.read_parquet_files(spark, paths)
    if problems:
        raise _bad_landing_files(contract.dataset, problems)
    if not frames:  # only 0-byte files: no records
        return spark.createDataFrame([], "_raw string, _is_malformed boolean, _source_file string, "
                                         "_record_index long, _fields map<string,string>, _kind string, _file_problem string")
    records = [bronze_tx.parquet_rows_to_records(frame) for frame in frames]
    return functools.reduce(DataFrame.unionByName, records)


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
