"""Rewriting the touched Parquet partitions of a layer (bronze batches, quarantine dates) without some
rows, and with others redacted, safely.

A layer is rewritten in two recorded steps, so that a run killed at any moment (SIGKILL) loses no other
row and a re-run finishes the job:

1. **stage**: the kept rows of every touched partition are written in ONE Spark write, partitioned as
   the layer (``_SUCCESS`` last), under the request's staging folder
   ``checkpoints/_erasure/<request>/staging/<layer>/<dataset>/``, a prefix no reader of the lake lists;
2. **swap**, per partition: its original files are deleted, then its staged files are moved in, one by
   one (a partition whose rows are all removed has no staged folder: its files are deleted); the
   staging folder is removed last.

Before ``_SUCCESS`` exists, a re-run stages again (the originals are untouched). Once it exists, a re-run
only swaps: it deletes the originals that are still there and moves the staged files that are still
staged, so a kill between the two steps, or in the middle of either, converges. The layer's columns are
whatever its files hold (bronze may gain columns): rows are copied whole, redaction touches every text
column.
"""
from __future__ import annotations

from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs.io import storage, writers

SUCCESS = "_SUCCESS"


def _visible_files(spark: SparkSession, uri: str) -> list[str]:
    return sorted(path for path, _, _ in storage.list_files(spark, uri))


def staged(spark: SparkSession, staging_uri: str) -> bool:
    return storage.exists(spark, f"{staging_uri}/{SUCCESS}")


def stage_layer(spark: SparkSession, uri: str, column: str, values: list[str], staging_uri: str,
                actions: DataFrame, keys: tuple[str, ...], redact: Callable[[DataFrame], DataFrame],
                action: str = "_erase_action") -> tuple[int, int]:
    """Write the rows of the partitions ``<column>=<value>`` of ``uri`` to ``staging_uri`` (partitioned by
    ``column``), without the rows ``actions`` (joined on ``keys``) marks ``remove`` and with those it
    marks ``redact`` passed through ``redact``; returns (rows read, rows written), from the files' footers."""
    folders = [f"{uri}/{column}={value}" for value in values if storage.has_data_files(spark, f"{uri}/{column}={value}")]
    writers.delete_path(spark, staging_uri)
    if not folders:
        return 0, 0
    inference = spark.conf.get("spark.sql.sources.partitionColumnTypeInference.enabled")
    spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")  # values written back as read
    try:
        rows = spark.read.option("basePath", uri).parquet(*folders)
    finally:
        spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", inference)
    # Without inference a null partition (``__HIVE_DEFAULT_PARTITION__``, a quarantined record with no event
    # date) reads as NullType when it is the only folder read, and Spark cannot partition a write by NullType.
    rows = rows.withColumn(column, F.col(column).cast("string"))
    flagged = rows.join(F.broadcast(actions.select(*keys, action).distinct()), list(keys), "left")
    unchanged = flagged.where(F.col(action).isNull()).select(*rows.columns)
    redacted = redact(flagged.where(F.col(action) == "redact").select(*rows.columns))
    kept = unchanged.unionByName(redacted)
    kept.repartition(column).write.mode("overwrite").partitionBy(column).parquet(staging_uri)
    read = spark.read.option("basePath", uri).parquet(*folders).count()
    written = spark.read.parquet(staging_uri).count() if storage.has_data_files(spark, staging_uri) else 0
    return read, written


def swap(spark: SparkSession, partition_uri: str, staging_uri: str) -> int:
    """Replace the partition's files by the staged ones (see the module docstring); returns files moved."""
    staged_files = _visible_files(spark, staging_uri)
    staged_names = {path.rsplit("/", 1)[1] for path in staged_files}
    for path in _visible_files(spark, partition_uri):
        if path.rsplit("/", 1)[1] not in staged_names:
            writers.delete_path(spark, path)
    for path in staged_files:
        target = f"{partition_uri}/{path.rsplit('/', 1)[1]}"
        if storage.exists(spark, target):  # a move (copy + delete on S3) cut off after its copy
            writers.delete_path(spark, path)
        else:
            storage.rename(spark, path, target)
    writers.delete_path(spark, staging_uri)
    return len(staged_files)
