"""Iceberg table writes: one commit replaces exactly the covered partitions, re-runs are idempotent, the
snapshot of a run is found by its run id, and the table is what the contract says (v2, hidden days())."""
from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import functions as F

from spark_jobs.io import iceberg_files, tables
from spark_jobs.lake import LakeConfig
from tests.spark_jobs.conftest import ts

DAYS = tables.Partitioning("event_ts", "day")


def test_covering_filters_are_aligned_with_the_partitions():
    assert DAYS.covering(["2020-11-17", "2020-11-16", "2020-11-18", "2020-11-20"], include_null=False) == (
        "(`event_ts` >= TIMESTAMP '2020-11-16 00:00:00' AND `event_ts` < TIMESTAMP '2020-11-19 00:00:00') OR "
        "(`event_ts` >= TIMESTAMP '2020-11-20 00:00:00' AND `event_ts` < TIMESTAMP '2020-11-21 00:00:00')")
    assert DAYS.covering([], include_null=True) == "`event_ts` IS NULL"
    assert DAYS.covering([], include_null=False) == "false"
    identity = tables.Partitioning("event_date", "identity")
    assert identity.covering(["2020-11-17", "2020-11-16"], include_null=True) == \
        "`event_date` IN (DATE '2020-11-16', DATE '2020-11-17') OR `event_date` IS NULL"
    assert (DAYS.sql, DAYS.spec, identity.sql, identity.spec) == (
        "days(`event_ts`)", "days(event_ts)", "`event_date`", "event_date")


def _rows(spark, rows):
    return spark.createDataFrame(rows, "id string, event_ts timestamp, v double").withColumn(
        "event_date", F.to_date("event_ts"))


def _content(spark, tbl, snapshot_id=None):
    return sorted(tuple(r) for r in tables.read(spark, tbl, snapshot_id).select("id", "event_ts", "v").collect())


@pytest.fixture
def silver(spark, tmp_path):
    lake = LakeConfig(lake_uri=str(tmp_path / "lake"))
    return tables.table(spark, lake, "silver", "events")


def test_overwrite_replaces_exactly_the_covered_days_in_one_commit(spark, silver):
    first = _rows(spark, [("a", ts("2020-11-16 10:00:00"), 1.0), ("b", ts("2020-11-17 10:00:00"), 1.0),
                          ("c", ts("2020-11-18 23:59:59"), 1.0), ("n", None, 1.0)])
    covered = DAYS.covering(["2020-11-16", "2020-11-17", "2020-11-18"], include_null=True)
    one = tables.overwrite(first, silver, DAYS, covered, "run-1")
    assert (one["run_id"], one["parent_id"], one["added_records"], one["total_records"]) == ("run-1", None, 4, 4)

    # A --date style run for the 17th and 18th: the 17th changes, the 18th now has no rows, the 16th and
    # the null partition are not covered and stay.
    second = _rows(spark, [("b", ts("2020-11-17 10:00:00"), 2.0)])
    two = tables.overwrite(second, silver, DAYS, DAYS.covering(["2020-11-17", "2020-11-18"], False), "run-2")
    assert (two["parent_id"], two["operation"], two["added_records"], two["deleted_records"]) == (
        one["snapshot_id"], "overwrite", 1, 2)
    assert _content(spark, silver) == [("a", ts("2020-11-16 10:00:00"), 1.0), ("b", ts("2020-11-17 10:00:00"), 2.0),
                                       ("n", None, 1.0)]
    assert tables.current_snapshot(spark, silver)["snapshot_id"] == two["snapshot_id"]
    assert tables.snapshot_of_run(spark, silver, "run-1")["snapshot_id"] == one["snapshot_id"]
    assert len(_content(spark, silver, one["snapshot_id"])) == 4  # the earlier snapshot stays readable

    # The same input again: the same rows, in a new snapshot that deleted and added them.
    three = tables.overwrite(second, silver, DAYS, DAYS.covering(["2020-11-17", "2020-11-18"], False), "run-3")
    assert (three["added_records"], three["deleted_records"]) == (1, 1)
    assert _content(spark, silver, three["snapshot_id"]) == _content(spark, silver, two["snapshot_id"])
    assert tables.count_where(spark, silver, three["snapshot_id"], DAYS.covering(["2020-11-17"], False)) == 1


def test_table_is_format_v2_with_hidden_day_partitions_and_the_manifest_record_matches(spark, silver):
    tables.overwrite(_rows(spark, [("a", ts("2020-11-16 10:00:00"), 1.0)]), silver, DAYS,
                     DAYS.covering(["2020-11-16"], True), "run-1")
    meta = iceberg_files.table_metadata(silver.location)
    assert meta["format-version"] == 2
    spec = next(s for s in meta["partition-specs"] if s["spec-id"] == meta["default-spec-id"])
    field_names = {f["id"]: f["name"] for s in meta["schemas"] for f in s["fields"]}
    assert [(p["transform"], field_names[p["source-id"]]) for p in spec["fields"]] == [("day", "event_ts")]
    record = tables.publish_record(spark, silver, tables.current_snapshot(spark, silver))
    assert record["table"] == "silver.events" and record["location"] == silver.location
    assert record["partitioning"] == ["days(event_ts)"]
    assert record["columns"] == [["id", "string"], ["event_ts", "timestamp"], ["v", "double"], ["event_date", "date"]]
    assert record["snapshot_id"] == meta["current-snapshot-id"]
    # Partition pruning from the column itself: a filter on event_ts reads one day's file.
    assert iceberg_files.data_files(silver.location)[0].path.parent.name == "event_ts_day=2020-11-16"
    # A gold-style table: identity on its event_date column.
    gold = tables.Table(catalog=silver.catalog, layer="gold", name="daily")
    identity = tables.Partitioning("event_date", "identity")
    created = tables.overwrite(_rows(spark, [("a", ts("2020-11-16 10:00:00"), 1.0)]), gold, identity,
                               identity.covering(["2020-11-16"], True), "run-1")
    assert tables.publish_record(spark, gold, created)["partitioning"] == ["event_date"]


def test_a_column_the_contract_adds_appears_with_its_first_values(spark, silver):
    rows = _rows(spark, [("a", ts("2020-11-16 10:00:00"), 1.0)])
    tables.overwrite(rows, silver, DAYS, DAYS.covering(["2020-11-16"], False), "run-1")
    tables.overwrite(rows.withColumn("unit", F.lit("C")), silver, DAYS, DAYS.covering(["2020-11-16"], False), "run-2")
    assert [tuple(r) for r in tables.read(spark, silver).select("id", "unit").collect()] == [("a", "C")]


def test_parquet_folders_from_before_the_tables_are_refused_in_one_line(spark, silver, tmp_path):
    rows = _rows(spark, [("a", ts("2020-11-16 10:00:00"), 1.0)])
    rows.write.partitionBy("event_date").parquet(silver.location)
    with pytest.raises(tables.TableError, match=r"holds files from before the Iceberg tables \(_SUCCESS, "
                                                r"event_date=2020-11-16\); move them away"):
        tables.overwrite(rows, silver, DAYS, DAYS.covering(["2020-11-16"], False), "run-1")
    assert not tables.exists(spark, silver)


def test_date_ranges_merge_across_month_and_year_ends():
    days = [(dt.date(2023, 12, 30) + dt.timedelta(days=i)).isoformat() for i in range(5)]
    assert tables._date_ranges(days) == [("2023-12-30", "2024-01-04")]
