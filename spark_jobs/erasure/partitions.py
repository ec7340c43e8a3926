"""Rewriting one Parquet partition (a bronze batch, a quarantine date) without some rows, safely.

A partition is rewritten in two recorded steps, so that a run killed at any moment (SIGKILL) loses no
other row and a re-run finishes the job:

1. **stage**: the rows to keep are written (one Spark write, its ``_SUCCESS`` marker last) under the
   request's staging folder ``checkpoints/_erasure/<request>/staging/<layer>/<dataset>/<partition>/``,
   a prefix no reader of the lake lists;
2. **swap**: the partition's original files are deleted, then the staged files are moved in, one by
   one; the staging folder is removed last.

Before ``_SUCCESS`` exists, a re-run stages again (the originals are untouched). Once it exists, a re-run
only swaps: it deletes the originals that are still there and moves the staged files that are still
staged, so a kill between the two steps, or in the middle of either, converges.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs.io import storage, writers

SUCCESS = "_SUCCESS"


def _visible_files(spark: SparkSession, uri: str) -> list[str]:
    return sorted(path for path, _, _ in storage.list_files(spark, uri))


def staged(spark: SparkSession, staging_uri: str) -> bool:
    return storage.exists(spark, f"{staging_uri}/{SUCCESS}")


def stage(spark: SparkSession, partition_uri: str, staging_uri: str, remove: Column,
          keyed: DataFrame | None = None, keys: tuple[str, ...] = ()) -> tuple[int, int]:
    """Write the partition's rows that ``remove`` does not select, and that do not match a row of
    ``keyed`` on ``keys``, to ``staging_uri``; returns (rows kept, rows removed)."""
    rows = spark.read.parquet(partition_uri)
    flagged, drop = rows, remove
    if keyed is not None and keys:
        flagged = rows.join(F.broadcast(keyed.select(*keys).distinct().withColumn("_erase_by_key", F.lit(True))),
                            list(keys), "left")
        drop = drop | F.coalesce(F.col("_erase_by_key"), F.lit(False))
    flagged = flagged.withColumn("_erase", F.coalesce(drop, F.lit(False))).persist()
    try:
        counts = flagged.groupBy("_erase").count().collect()
        removed = sum(int(r["count"]) for r in counts if r["_erase"])
        kept_rows = sum(int(r["count"]) for r in counts if not r["_erase"])
        kept = flagged.where(~F.col("_erase")).select(*rows.columns)
        writers.delete_path(spark, staging_uri)
        kept.coalesce(1).write.mode("overwrite").parquet(staging_uri)
    finally:
        flagged.unpersist()
    return kept_rows, removed


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
