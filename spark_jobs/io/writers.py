"""Writers: partitioned Parquet with dynamic partition overwrite (bronze batches, quarantine). Silver and
gold are Iceberg tables, written by ``spark_jobs.io.tables``.

Why a half-written run is never visible: Spark's commit protocol writes every task's files under a
hidden staging directory (``.spark-staging-<job>`` / ``_temporary``, names Spark's readers skip) and
moves them into ``<col>=<value>/`` only at job commit, replacing exactly the partitions the job
produced (``partitionOverwriteMode=dynamic``). A job that fails or is killed before commit leaves the
previous partitions untouched; a re-run with the same input rewrites the same partitions with the same
rows. This holds on local paths, s3a and EMRFS. (On S3 the commit-time move is a copy per file, so
the window is the commit step only; EMR's S3-optimized committer narrows it further.)
"""
from __future__ import annotations

import json
from typing import Any

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType

from spark_jobs.io import storage


def replace_partitions(
    df: DataFrame, uri: str, partition_by: list[str] | tuple[str, ...], covered: list[str] | None = None,
    present: list[str] | None = None,
) -> None:
    """Overwrite the partitions present in ``df``; ``covered`` (values of the single partition
    column this run is responsible for) also clears partitions that now receive no rows.
    ``present`` (the values ``df`` holds, when the caller has counted them already) saves a Spark job.

    Rows are clustered by the partition columns first: one file per partition instead of one per
    shuffle task and partition, which on object stores (where each commit-time move is a copy)
    is most of the write time for small and medium partitions; and sorted by them within each task, so
    a task writes its partitions one after the other with one file open, however many partitions its
    rows span. The stale partitions are found with one listing of ``uri``, not one existence check per
    covered value (a year of dates: 365 checks)."""
    (
        df.repartition(*partition_by)
        .sortWithinPartitions(*partition_by)
        .write.mode("overwrite")
        .option("partitionOverwriteMode", "dynamic")
        # The committer's _SUCCESS marker would go into Spark's staging folder, which the job commit deletes
        # with it: four S3 requests per write for a file nobody reads.
        .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
        .partitionBy(*partition_by)
        .parquet(uri)
    )
    if covered and len(partition_by) == 1:
        column = partition_by[0]
        if present is None:
            present = [str(row[0]) for row in df.select(column).distinct().collect()]
        stale = {f"{column}={value}" for value in covered} - {f"{column}={value}" for value in present}
        for name in sorted(stale & set(storage.list_dir(df.sparkSession, uri))):
            delete_path(df.sparkSession, f"{uri}/{name}")


def delete_path(spark: SparkSession, uri: str) -> None:
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if fs.exists(path):
        fs.delete(path, True)


def write_counted(df: DataFrame, uri: str, aggregates: dict[str, Column],
                  options: dict[str, str] | None = None) -> tuple[DataFrame, dict[str, Any]]:
    """Write ``df`` as Parquet to ``uri`` (overwrite) and compute ``aggregates`` over the rows written, in the
    write's own Spark job (an ``Observation``), instead of a job that reads them back to count. Returns the
    written rows (read with ``df``'s schema: no job to infer it from the files' footers) and the values. An
    aggregate of an array type comes back through JSON (``to_json``), as a Python list. An observed aggregate
    cannot be a distinct one: count distinct values as ``F.size(F.collect_set(...))``. ``options``: the
    write's own (Parquet writer settings, e.g. ``parquet.enable.dictionary#<column>``)."""
    types = df.agg(*[column.alias(name) for name, column in aggregates.items()]).schema  # analysed only: no job
    as_json = {field.name for field in types.fields if isinstance(field.dataType, ArrayType)}
    observation = Observation("tenantlake-write-counts")
    observed = df.observe(observation, *[(F.to_json(column) if name in as_json else column).alias(name)
                                         for name, column in aggregates.items()])
    observed.write.mode("overwrite").options(**(options or {})).parquet(uri)
    values = dict(observation.get)
    for name in as_json:
        values[name] = json.loads(values[name]) if values[name] is not None else None
    return df.sparkSession.read.schema(df.schema).parquet(uri), values
