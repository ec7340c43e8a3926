"""spark_jobs/io/readers.py: the statistics of Parquet files' row groups, read from their footers without a Spark job."""
from __future__ import annotations

from spark_jobs.io import readers
from spark_jobs.jobs.counters import spark_jobs_started


def test_row_group_statistics_come_from_the_footers_and_give_up_past_the_file_limit(spark, tmp_path, monkeypatch):
    files = []
    for name, rows in (("one", [(7, True), (7, None)]), ("two", [(None, False), (None, False)])):
        spark.createDataFrame(rows, "id int, flag boolean").coalesce(1).write.parquet(str(tmp_path / name))
        files += [str(path) for path in (tmp_path / name).glob("*.parquet")]
    before = spark_jobs_started(spark)
    groups = readers.row_group_statistics(spark, files, ("id", "flag"))
    assert spark_jobs_started(spark) - before == 0
    # (min, max, nulls) per column; a column with only nulls has no statistics to give.
    assert groups == [{"id": (7, 7, 0), "flag": (True, True, 1)}, {"flag": (False, False, 0)}]
    monkeypatch.setattr(readers, "MAX_FOOTER_FILES", 1)
    assert readers.row_group_statistics(spark, files, ("id",)) is None
    assert readers.row_group_statistics(spark, [], ("id",)) is None
