"""Partition publishing: a failed write leaves the previous partitions as they were."""
import datetime as dt

import pytest
from pyspark.sql import functions as F

from spark_jobs.io import storage, writers

D1, D2, D3 = dt.date(2020, 11, 16), dt.date(2020, 11, 17), dt.date(2020, 11, 18)


def _rows(spark, uri):
    return sorted(tuple(r) for r in spark.read.parquet(uri).select("event_date", "v").collect())


def _visible_partitions(spark, uri):
    return [name for name in storage.list_dir(spark, uri) if not name.startswith(("_", "."))]


def test_a_write_that_dies_mid_way_publishes_nothing(spark, tmp_path):
    uri = str(tmp_path / "silver")
    before = spark.createDataFrame([(D1, "a"), (D2, "b")], "event_date date, v string")
    writers.replace_partitions(before, uri, ["event_date"])
    # 200 rows over 3 dates, spread over several tasks; one row makes its task fail after others wrote.
    rows = [(D1 if i % 3 == 0 else D3, "boom" if i == 150 else f"n{i}") for i in range(200)]
    after = spark.createDataFrame(rows, "event_date date, v string").repartition(4)
    crashing = after.withColumn("v", F.when(F.col("v") == "boom", F.raise_error(F.lit("simulated crash")))
                                .otherwise(F.col("v")))
    with pytest.raises(Exception, match="simulated crash"):
        writers.replace_partitions(crashing, uri, ["event_date"])
    assert _rows(spark, uri) == [(D1, "a"), (D2, "b")]
    assert _visible_partitions(spark, uri) == ["event_date=2020-11-16", "event_date=2020-11-17"]


def test_rewrite_replaces_only_the_partitions_it_covers(spark, tmp_path):
    uri = str(tmp_path / "gold")
    writers.replace_partitions(spark.createDataFrame([(D1, "a"), (D2, "b"), (D3, "c")], "event_date date, v string"),
                               uri, ["event_date"])
    rerun = spark.createDataFrame([(D1, "a2")], "event_date date, v string")
    writers.replace_partitions(rerun, uri, ["event_date"], covered=[str(D1), str(D2)])
    # D1 replaced, D2 covered but now empty -> removed, D3 not covered -> untouched.
    assert _rows(spark, uri) == [(D1, "a2"), (D3, "c")]
    writers.replace_partitions(rerun, uri, ["event_date"], covered=[str(D1), str(D2)])
    assert _rows(spark, uri) == [(D1, "a2"), (D3, "c")]
