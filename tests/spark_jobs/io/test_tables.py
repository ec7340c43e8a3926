"""Iceberg table writes: one commit replaces exactly the covered partitions, re-runs are idempotent, the
snapshot of a run is found by its run id, and the table is what the contract says (v2, hidden days())."""
from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import functions as F

from spark_jobs.io import iceberg_files, tables
from spark_jobs.io.partitioning import MAX_RANGE_TERMS, Partitioning, _date_ranges, granule
from spark_jobs.lake.config import LakeConfig
from tests.spark_jobs.conftest import ts


def snapshot_of_run(spark, tbl: tables.Table, run_id: str) -> dict | None:
    """The newest snapshot whose summary carries ``run_id`` (None: the run committed nothing)."""
    return tables._snapshot_of_run(tables._iceberg_table(spark, tbl), run_id)

DAYS = Partitioning("event_ts", "day")


def test_covering_filters_are_aligned_with_the_partitions():
    assert DAYS.covering(["2020-11-17", "2020-11-16", "2020-11-18", "2020-11-20"], include_null=False) == (
        "(`event_ts` >= TIMESTAMP '2020-11-16 00:00:00' AND `event_ts` < TIMESTAMP '2020-11-19 00:00:00') OR "
        "(`event_ts` >= TIMESTAMP '2020-11-20 00:00:00' AND `event_ts` < TIMESTAMP '2020-11-21 00:00:00')")
    assert DAYS.covering([], include_null=True) == "`event_ts` IS NULL"
    assert DAYS.covering([], include_null=False) == "false"
    identity = Partitioning("event_date", "identity")
    assert identity.covering(["2020-11-17", "2020-11-16"], include_null=True) == \
        "`event_date` IN (DATE '2020-11-16', DATE '2020-11-17') OR `event_date` IS NULL"
    assert (DAYS.sql, DAYS.spec, identity.sql, identity.spec) == (
        "days(`event_ts`)", "days(event_ts)", "`event_date`", "event_date")


def _rows(spark, rows):
    return spark.createDataFrame(rows, "id string, event_ts timestamp, v double").withColumn(
        "event_date", F.to_date("event_ts"))


def _count_where(spark, tbl, snapshot_id, condition):
    """Rows of the snapshot matching ``condition``, read from its data files (Iceberg's aggregate push-down off:
    it would answer from the manifests' record counts, which the jobs check commits with)."""
    return (spark.read.option("snapshot-id", str(snapshot_id)).option("aggregate-push-down-enabled", "false")
            .table(tbl.qualified).where(F.expr(condition)).count())


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
    assert snapshot_of_run(spark, silver, "run-1")["snapshot_id"] == one["snapshot_id"]
    assert len(_content(spark, silver, one["snapshot_id"])) == 4  # the earlier snapshot stays readable

    # The same input again: the same rows, in a new snapshot that deleted and added them.
    three = tables.overwrite(second, silver, DAYS, DAYS.covering(["2020-11-17", "2020-11-18"], False), "run-3")
    assert (three["added_records"], three["deleted_records"]) == (1, 1)
    assert _content(spark, silver, three["snapshot_id"]) == _content(spark, silver, two["snapshot_id"])
    assert _count_where(spark, silver, three["snapshot_id"], DAYS.covering(["2020-11-17"], False)) == 1


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
    identity = Partitioning("event_date", "identity")
    created = tables.overwrite(_rows(spark, [("a", ts("2020-11-16 10:00:00"), 1.0)]), gold, identity,
                               identity.covering(["2020-11-16"], True), "run-1")
    assert tables.publish_record(spark, gold, created)["partitioning"] == ["event_date"]


def test_a_write_never_changes_the_schema_an_evolution_does_without_rewriting_a_file(spark, silver):
    """A DataFrame with a column the table lacks fails the write (no merge-schema: the contract's plan decides);
    ``evolve`` adds, widens, renames and drops in ONE metadata commit: no snapshot, the same data files, old rows
    null in the new column, and the first snapshot still read with its own schema (time travel)."""
    from spark_jobs.lake.failures import one_line

    rows = spark.createDataFrame([("a", ts("2020-11-16 10:00:00"), 1.0, 7, "x")],
                                 "id string, event_ts timestamp, v double, n int, gone string").withColumn(
        "event_date", F.to_date("event_ts"))
    first = tables.overwrite(rows, silver, DAYS, DAYS.covering(["2020-11-16"], False), "run-1")
    with pytest.raises(Exception) as refused:
        tables.overwrite(rows.withColumn("unit", F.lit("C")), silver, DAYS, DAYS.covering(["2020-11-16"], False), "run-2")
    assert one_line(refused.value) == ("IllegalArgumentException: the data does not match the table's schema: column "
                                       "unit is not in the table (the table was not changed; `python -m spark_jobs "
                                       "contract plan` shows how the contract and the table differ)")
    loaded = tables.load(spark, silver)
    files = iceberg_files.data_files(silver.location)
    tables.evolve(spark, loaded, [tables.SchemaStep("add", "unit", type="string", after="v"),
                                  tables.SchemaStep("widen", "n", type="bigint"),
                                  tables.SchemaStep("rename", "v", new_name="value"),
                                  tables.SchemaStep("drop", "gone")], {"tenantlake.key": "id"})
    assert iceberg_files.data_files(silver.location) == files
    assert tables.snapshot_now(loaded)["snapshot_id"] == first["snapshot_id"]
    assert tables.schema_id(loaded) == 1 and tables.table_property(loaded, "tenantlake.key") == "id"
    assert tables.table_columns(spark, loaded) == [("id", "string"), ("event_ts", "timestamp"), ("value", "double"),
                                                   ("unit", "string"), ("n", "bigint"), ("event_date", "date")]
    assert [tuple(r) for r in tables.read(spark, silver).select("id", "value", "unit", "n").collect()] == [("a", 1.0, None, 7)]
    old = spark.sql(f"SELECT * FROM {silver.qualified} VERSION AS OF {first['snapshot_id']}")
    assert old.columns == ["id", "event_ts", "v", "n", "gone", "event_date"] and old.first()["gone"] == "x"
    # A write in another column order is put in the table's order; a column the table keeps and the
    # DataFrame lacks is written as null.
    later = spark.createDataFrame([(8, "C", "b", ts("2020-11-17 10:00:00"))], "n bigint, unit string, id string, "
                                  "event_ts timestamp").withColumn("event_date", F.to_date("event_ts"))
    aligned = tables.in_table_order(later, [name for name, _ in tables.table_columns(spark, loaded)])
    assert aligned.columns == ["id", "event_ts", "unit", "n", "event_date"]
    tables.overwrite(aligned, silver, DAYS, DAYS.covering(["2020-11-17"], False), "run-3")
    assert sorted(tuple(r) for r in tables.read(spark, silver).select("id", "value", "unit").collect()) == [
        ("a", 1.0, None), ("b", None, "C")]


def test_parquet_folders_from_before_the_tables_are_refused_in_one_line(spark, silver, tmp_path):
    rows = _rows(spark, [("a", ts("2020-11-16 10:00:00"), 1.0)])
    rows.write.partitionBy("event_date").parquet(silver.location)
    with pytest.raises(tables.TableError, match=r"holds files from before the Iceberg tables \(_SUCCESS, "
                                                r"event_date=2020-11-16\); move them away"):
        tables.overwrite(rows, silver, DAYS, DAYS.covering(["2020-11-16"], False), "run-1")
    assert not tables.exists(spark, silver)


def test_date_ranges_merge_across_month_and_year_ends():
    days = [(dt.date(2023, 12, 30) + dt.timedelta(days=i)).isoformat() for i in range(5)]
    assert _date_ranges(days) == [("2023-12-30", "2024-01-04")]


MONTHS = Partitioning.of("event_ts", "timestamp", "month")


def test_month_filters_cover_whole_months_and_select_rows_by_day():
    dates = ["2024-01-31", "2024-02-01", "2024-12-05"]
    assert MONTHS.covering(dates, include_null=True) == (
        "(`event_ts` >= TIMESTAMP '2024-01-01 00:00:00' AND `event_ts` < TIMESTAMP '2024-03-01 00:00:00') OR "
        "(`event_ts` >= TIMESTAMP '2024-12-01 00:00:00' AND `event_ts` < TIMESTAMP '2025-01-01 00:00:00') OR "
        "`event_ts` IS NULL")
    assert MONTHS.rows(dates, include_null=False) == (
        "(`event_ts` >= TIMESTAMP '2024-01-31 00:00:00' AND `event_ts` < TIMESTAMP '2024-02-02 00:00:00') OR "
        "(`event_ts` >= TIMESTAMP '2024-12-05 00:00:00' AND `event_ts` < TIMESTAMP '2024-12-06 00:00:00')")
    february = [f"2024-02-{d:02d}" for d in range(1, 30)]  # a leap year: 29 days cover February
    assert MONTHS.partial(["2024-01-31", *february]) == ["2024-01"]
    assert DAYS.partial(["2024-01-31"]) == []
    gold = Partitioning.of("event_date", "date", "month")
    assert gold.covering(["2024-12-05"], False) == "(`event_date` >= DATE '2024-12-01' AND `event_date` < DATE '2025-01-01')"
    assert (MONTHS.sql, MONTHS.spec, gold.spec) == ("months(`event_ts`)", "months(event_ts)", "months(event_date)")
    assert Partitioning.of("event_date", "date", "day") == Partitioning("event_date", "identity", "date")
    assert (granule("2024-02-29", "month"), granule("2024-02-29", "day")) == ("2024-02", "2024-02-29")


def test_scattered_dates_are_one_range_and_a_date_list(spark, silver):
    """A reading every few days over years: more than MAX_RANGE_TERMS ranges would be thousands of OR'ed
    terms (code too large for Spark to compile); one range AND the date list selects the same rows."""
    dates = [(dt.date(1990, 1, 1) + dt.timedelta(days=3 * i)).isoformat() for i in range(MAX_RANGE_TERMS + 1)]
    assert MONTHS.rows(dates[:2], include_null=False).count(" OR ") == 1
    compact = MONTHS.rows(dates, include_null=True)
    assert compact == ("(`event_ts` >= TIMESTAMP '1990-01-01 00:00:00' AND `event_ts` < TIMESTAMP '1990-04-08 00:00:00' "
                       f"AND CAST(`event_ts` AS DATE) IN ({', '.join(f'DATE {d!r}' for d in dates)})) OR `event_ts` IS NULL")
    rows = [(f"r{i}", dt.datetime(1990, 1, 1) + dt.timedelta(hours=36 * i), 1.0) for i in range(80)] + [("n", None, 1.0)]
    frame = _rows(spark, rows)
    assert sorted(r["id"] for r in frame.where(F.expr(compact)).collect()) == sorted(
        r["id"] for r in frame.where(F.col("event_date").cast("string").isin(dates) | F.col("event_ts").isNull()).collect())


def _write_plans(spark) -> list[str]:
    """The physical plans of the writes this session ran (Spark's SQL status store keeps them, UI or not)."""
    executions = spark._jsparkSession.sharedState().statusStore().executionsList()
    plans = [executions.apply(i).physicalPlanDescription() for i in range(executions.size())]
    return [plan for plan in plans if "OverwriteByExpression" in plan or "InsertIntoHadoopFsRelationCommand" in plan]


def test_a_write_clusters_its_rows_by_partition_one_open_file_per_task(spark, silver):
    """Rows of 60 months in ONE task: the write shuffles them by month and sorts each task's rows by month, so
    Iceberg writes one month after the other (a task fanned out to one open Parquet writer per month ran out
    of heap on 10M rows over 384 months)."""
    rows = [(f"id{i}", dt.datetime(1990 + i // 12, 1 + i % 12, 3), 1.0) for i in range(60)]
    frame = _rows(spark, rows).coalesce(1)
    before = len(_write_plans(spark))
    tables.publish(frame, silver, MONTHS, sorted({r[1].date().isoformat() for r in rows}), True, "run-1")
    plan = _write_plans(spark)[before:][-1]
    final = plan.split("== Initial Plan ==")[0]
    assert "Exchange" in final and "hashpartitioning(staticinvoke(class org.apache.iceberg.spark.functions.MonthsFunction" in plan
    assert "Sort (" in final and "MonthsFunction$TimestampToMonthsFunction, IntegerType, invoke, event_ts" in plan.split(
        "Arguments: [staticinvoke")[1]
    assert len(iceberg_files.data_files(silver.location)) == 60


def test_month_partitions_replace_one_day_and_keep_the_months_other_days_in_one_commit(spark, silver):
    first = _rows(spark, [("a", ts("2024-01-30 10:00:00"), 1.0), ("b", ts("2024-01-31 10:00:00"), 1.0),
                          ("c", ts("2024-02-01 10:00:00"), 1.0)])
    one = tables.replace_dates(first, silver, MONTHS, ["2024-01-30", "2024-01-31", "2024-02-01"], True, "run-1")
    assert (one["added_records"], one["kept_records"]) == (3, 0)  # an empty table has nothing to keep
    assert tables.describe(spark, silver)["partitioning"] == ["months(event_ts)"]
    # One day of January again: January is one partition, so its other day is written again with it.
    two = tables.replace_dates(_rows(spark, [("b2", ts("2024-01-31 11:00:00"), 2.0)]), silver, MONTHS,
                               ["2024-01-31"], False, "run-2")
    assert (two["added_records"], two["deleted_records"], two["kept_records"], two["total_records"]) == (2, 2, 1, 3)
    assert _content(spark, silver) == [("a", ts("2024-01-30 10:00:00"), 1.0), ("b2", ts("2024-01-31 11:00:00"), 2.0),
                                       ("c", ts("2024-02-01 10:00:00"), 1.0)]
    assert _count_where(spark, silver, two["snapshot_id"], MONTHS.rows(["2024-01-31"], False)) == 1
    assert {f.path.parent.name for f in iceberg_files.data_files(silver.location, two["snapshot_id"])} == {
        "event_ts_month=2024-01", "event_ts_month=2024-02"}


def test_a_changed_granularity_evolves_the_partition_spec_and_keeps_every_row(spark, silver):
    rows = _rows(spark, [("a", ts("2024-01-30 10:00:00"), 1.0), ("b", ts("2024-01-31 10:00:00"), 1.0)])
    tables.replace_dates(rows, silver, DAYS, ["2024-01-30", "2024-01-31"], False, "run-1")
    # Month granularity now, one day re-run: the day-partitioned file of the other day is carried over.
    moved = tables.replace_dates(rows.where("id = 'b'"), silver, MONTHS, ["2024-01-31"], False, "run-2")
    assert tables.describe(spark, silver)["partitioning"] == ["months(event_ts)"]
    assert (moved["kept_records"], moved["total_records"]) == (1, 2)
    assert _content(spark, silver) == [("a", ts("2024-01-30 10:00:00"), 1.0), ("b", ts("2024-01-31 10:00:00"), 1.0)]
    back = tables.replace_dates(rows, silver, DAYS, ["2024-01-30", "2024-01-31"], False, "run-3")
    assert tables.describe(spark, silver)["partitioning"] == ["days(event_ts)"]
    assert (back["kept_records"], back["total_records"]) == (0, 2)


def test_a_month_rewrite_fails_when_the_month_changed_after_its_rows_were_read(spark, silver):
    """The options replace_dates passes: a commit between the read of a month's other dates and the
    overwrite fails the overwrite instead of being silently replaced."""
    tables.replace_dates(_rows(spark, [("a", ts("2024-01-30 10:00:00"), 1.0)]), silver, MONTHS, ["2024-01-30"], False, "run-1")
    read_at = tables.current_snapshot(spark, silver)["snapshot_id"]
    tables.overwrite(_rows(spark, [("a", ts("2024-01-30 10:00:00"), 1.0), ("late", ts("2024-01-29 10:00:00"), 1.0)]),
                     silver, MONTHS, MONTHS.covering(["2024-01-30"], False), "run-2")  # another writer, meanwhile
    with pytest.raises(Exception, match="ValidationException|[Ff]ound conflicting files"):
        tables.overwrite(_rows(spark, [("b", ts("2024-01-31 10:00:00"), 1.0)]), silver, MONTHS,
                         MONTHS.covering(["2024-01-31"], False), "run-3",
                         {"validate-from-snapshot-id": str(read_at), "isolation-level": "serializable"})
    assert snapshot_of_run(spark, silver, "run-3") is None
    assert [r[0] for r in tables.read(spark, silver).select("id").orderBy("id").collect()] == ["a", "late"]
    # Without the options the same overwrite goes through and the other writer's rows are gone.
    tables.overwrite(_rows(spark, [("b", ts("2024-01-31 10:00:00"), 1.0)]), silver, MONTHS,
                     MONTHS.covering(["2024-01-31"], False), "run-4")
    assert [r[0] for r in tables.read(spark, silver).select("id").collect()] == ["b"]


def test_a_publish_looks_its_table_up_once_and_records_what_describe_says(spark, silver, monkeypatch):
    """tables.publish (what silver and gold call): one lookup of the table before the write, the same object
    refreshed after it (the old path, replace_dates + publish_record, looked it up 4 more times), and a
    record equal to publish_record's, whose columns come from Spark's DESCRIBE TABLE."""
    tables.publish(_rows(spark, [("a", ts("2024-01-30 10:00:00"), 1.0)]), silver, MONTHS, ["2024-01-30"], False, "run-1")
    lookups = []
    looked_up = tables._iceberg_table
    monkeypatch.setattr(tables, "_iceberg_table", lambda *args: lookups.append(args) or looked_up(*args))
    rows = _rows(spark, [("b", ts("2024-01-31 10:00:00"), 2.0)])
    record = tables.publish(rows, silver, MONTHS, ["2024-01-31"], False, "run-2")
    assert len(lookups) == 1
    monkeypatch.setattr(tables, "_iceberg_table", looked_up)
    snapshot = {k: v for k, v in record.items() if k not in ("table", "location", "catalog", "columns", "partitioning")}
    assert record == tables.publish_record(spark, silver, snapshot) and record["schema_id"] == 0
    assert ["v", "double"] in record["columns"] and record["partitioning"] == ["months(event_ts)"]
    assert (record["run_id"], record["kept_records"], record["total_records"]) == ("run-2", 1, 2)
    assert record["snapshot_id"] == tables.current_snapshot(spark, silver)["snapshot_id"]


def test_a_snapshots_rows_come_from_its_summary_unless_it_has_delete_files(spark, silver):
    """What `counts` prints for a table: the current snapshot's total-records when no delete file hides
    rows of it, else Spark's count."""
    tables.overwrite(_rows(spark, [("a", ts("2020-11-16 10:00:00"), 1.0), ("b", ts("2020-11-16 11:00:00"), 1.0),
                                   ("c", ts("2020-11-16 12:00:00"), 1.0)]), silver, DAYS,
                     DAYS.covering(["2020-11-16"], False), "run-1")
    assert tables.snapshot_rows(tables.load(spark, silver)) == 3 == tables.read(spark, silver).count()
    spark.sql(f"ALTER TABLE {silver.qualified} SET TBLPROPERTIES ('write.delete.mode' = 'merge-on-read')")
    spark.sql(f"DELETE FROM {silver.qualified} WHERE id = 'b'")
    assert tables.snapshot_rows(tables.load(spark, silver)) is None  # a position delete file: count instead
    assert tables.load(spark, tables.table(spark, LakeConfig(lake_uri=silver.catalog.warehouse), "silver", "none")) is None


def test_a_schema_change_is_undone_when_the_write_it_was_made_for_fails(spark, silver):
    """``evolve`` and the write are two commits; ``undo_evolution`` makes the schema of before current again and
    restores the properties, so a failed write leaves the table as it was (the same schema id, columns and
    properties), and only while nothing else committed since."""
    first = tables.overwrite(_rows(spark, [("a", ts("2020-11-16 10:00:00"), 1.0)]), silver, DAYS,
                             DAYS.covering(["2020-11-16"], False), "run-1")
    loaded = tables.load(spark, silver)
    before = tables.table_columns(spark, loaded)
    evolved = tables.evolve(spark, loaded, [tables.SchemaStep("add", "unit", type="string")],
                            {"tenantlake.contract-version": "sha256:new", "tenantlake.key": "id"})
    assert tables.schema_id(loaded) == 1 and evolved.schema_id_before == 0
    with pytest.raises(Exception):  # a column neither the old nor the new schema has: the write fails
        tables.overwrite(_rows(spark, [("b", ts("2020-11-16 11:00:00"), 2.0)]).withColumn("bogus", F.lit(1)), silver,
                         DAYS, DAYS.covering(["2020-11-16"], False), "run-2")
    assert tables.undo_evolution(spark, loaded, evolved) is True
    again = tables.load(spark, silver)
    assert tables.schema_id(again) == 0 and tables.table_columns(spark, again) == before
    assert tables.table_property(again, "tenantlake.key") is None
    assert tables.table_property(again, "tenantlake.contract-version") is None
    assert tables.snapshot_now(again)["snapshot_id"] == first["snapshot_id"]
    # Once another commit followed the evolution, it is not undone (that commit may have used it).
    evolved = tables.evolve(spark, again, [tables.SchemaStep("add", "unit", type="string")])
    tables.evolve(spark, again, [], {"tenantlake.key": "id"})
    assert tables.undo_evolution(spark, again, evolved) is False and tables.schema_id(again) > 0


def test_marks_commit_with_the_rows_survive_a_replace_and_name_the_changed_partitions(spark, silver):
    """A publish's marks go into its snapshot's summary and beside the table; a commit that names none carries
    them forward; after a manifest rewrite (a ``replace``) and the expiry of every older snapshot the copy
    beside the table still gives them; ``changed_since`` names the partitions the snapshots after a given one
    changed, skipping ``replace`` snapshots."""
    one = tables.publish(_rows(spark, [("a", ts("2020-11-16 10:00:00"), 1.0), ("b", ts("2020-11-17 10:00:00"), 1.0)]),
                         silver, DAYS, ["2020-11-16", "2020-11-17"], True, "run-1",
                         marks={tables.BRONZE_BATCH_MARK: "4"})
    loaded = tables.load(spark, silver)
    assert tables.read_marks(spark, silver, loaded) == {tables.BRONZE_BATCH_MARK: "4"}
    two = tables.publish(_rows(spark, [("c", ts("2020-11-18 10:00:00"), 1.0)]), silver, DAYS, ["2020-11-18"], False,
                         "run-2")  # no marks named: carried forward
    loaded.refresh()
    assert tables.read_marks(spark, silver, loaded) == {tables.BRONZE_BATCH_MARK: "4"}
    three = tables.publish(_rows(spark, [("b", ts("2020-11-20 10:00:00"), 2.0)]), silver, DAYS,
                           ["2020-11-17", "2020-11-20"], False, "run-3", marks={tables.BRONZE_BATCH_MARK: "6"})
    loaded.refresh()
    changed = tables.changed_since(spark, loaded, one["snapshot_id"])
    assert (sorted(changed.dates), changed.null, changed.snapshots) == (["2020-11-17", "2020-11-18", "2020-11-20"], False, 2)
    assert sorted(tables.changed_since(spark, loaded, two["snapshot_id"]).dates) == ["2020-11-17", "2020-11-20"]
    assert tables.changed_since(spark, loaded, 12345) is None  # not in the table's history
    system, name = f"{silver.catalog.name}.system", f"'{silver.catalog.namespace('silver')}.events'"
    spark.sql(f"CALL {system}.rewrite_manifests(table => {name})").collect()
    loaded.refresh()
    replaced = tables.snapshot_now(loaded)["snapshot_id"]
    expired = ", ".join(f"{s.snapshotId()}L" for s in loaded.snapshots() if s.snapshotId() != replaced)
    spark.sql(f"CALL {system}.expire_snapshots(table => {name}, snapshot_ids => array({expired}))").collect()
    loaded.refresh()
    assert tables.latest_data_snapshot(loaded) == three["snapshot_id"] and loaded.snapshot(three["snapshot_id"]) is None
    assert tables.read_marks(spark, silver, loaded) == {tables.BRONZE_BATCH_MARK: "6"}
    changed = tables.changed_since(spark, loaded, three["snapshot_id"])
    assert (changed.dates, changed.snapshots) == (set(), 0)
