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


def test_a_partitioned_write_clusters_and_sorts_its_rows_by_partition(spark, tmp_path):
    """Rows of 60 months in one task: shuffled by the partition value and sorted by it within each task, so
    a task writes its partitions one after the other with one file open."""
    from tests.spark_jobs.io.test_tables import _write_plans

    rows = [(f"id{i}", f"{1990 + i // 12}-{1 + i % 12:02d}") for i in range(60)]
    before = len(_write_plans(spark))
    writers.replace_partitions(spark.createDataFrame(rows, "v string, event_month string").coalesce(1),
                               str(tmp_path / "q"), ["event_month"])
    final = _write_plans(spark)[before:][-1].split("== Initial Plan ==")[0]
    assert "Exchange" in final and "Sort (" in final
    assert "hashpartitioning(event_month" in _write_plans(spark)[-1]
    assert len(_visible_partitions(spark, str(tmp_path / "q"))) == 60
