"""Staging and swapping the touched partitions of a Parquet layer (``spark_jobs/erasure/partitions.py``)."""
from __future__ import annotations

from pyspark.sql import functions as F

from spark_jobs.erasure import partitions
from spark_jobs.erasure.records import HIVE_NULL


def test_a_null_partition_alone_is_staged_and_swapped(spark, tmp_path):
    """A subject's only quarantined record has no event date: the one folder touched is the null partition
    (``__HIVE_DEFAULT_PARTITION__``), read without type inference as NullType; staging it must still work."""
    layer = str(tmp_path / "quarantine")
    rows = spark.createDataFrame([("f1", 0, "2024-05-01", "a"), ("f1", 1, None, "subject"), ("f1", 2, None, "other")],
                                 "_source_file string, _record_index int, event_date string, _raw string")
    rows.write.partitionBy("event_date").parquet(layer)
    actions = spark.createDataFrame([("f1", 1, "remove")], "_source_file string, _record_index int, _erase_action string")
    staging = str(tmp_path / "staging")
    read, written = partitions.stage_layer(spark, layer, "event_date", [HIVE_NULL], staging, actions,
                                           ("_source_file", "_record_index"), lambda df: df)
    assert (read, written) == (2, 1)
    partitions.swap(spark, f"{layer}/event_date={HIVE_NULL}", f"{staging}/event_date={HIVE_NULL}")
    kept = spark.read.parquet(layer).orderBy("_record_index").select("_record_index", F.col("event_date").isNull().alias("null"))
    assert [tuple(r) for r in kept.collect()] == [(0, False), (2, True)]
