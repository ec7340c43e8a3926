"""A suite's metrics in one Spark job (spark_jobs/quality/one_pass.py): the same results as GX's stock expectations."""
from __future__ import annotations

import datetime as dt
import itertools
import re

import pytest

from spark_jobs.quality import runner
from spark_jobs.quality.suites import ExpectationSpec as Spec

pytestmark = pytest.mark.integration

DDL = ("id string, part string, avg_x double, min_x double, max_x double, n long, ts timestamp, status string, "
       "note string")
T0 = dt.datetime(2026, 11, 21, 12, 0, 0)
_GROUPS = itertools.count(1)


def _rows() -> list[tuple]:
    """Passing rows and rows that fail each expectation below, with NULLs where the semantics differ."""
    rows = []
    for i in range(24):
        avg = 10.0 + i % 4
        low = avg - 1 if i % 6 else avg + 2          # every 6th row: avg below min
        high = avg + 1 if i % 7 else avg - 3         # every 7th row: avg above max
        rows.append((f"e{i}", f"p{i % 3}", avg, low, high, i, T0 - dt.timedelta(hours=i),
                     ("ok", "warn", "fault", "bad")[i % 4], None if i % 5 else "x"))
    rows += [("e1", "p1", None, 3.0, None, 1, None, None, "y"),          # duplicate key; pair values missing
             ("e2", "p9", 5.0, None, 9.0, 2, T0, "ok", None),            # duplicate id only, not (id, part)
             (None, None, 5.0, 5.0, 5.0, None, None, "ok", None),        # compound key all missing
             (None, "p0", 4.0, 4.0, 4.0, 3, T0, "ok", None),             # compound key partly missing
             (None, "p0", 4.0, 4.0, 4.0, 3, T0, "ok", None)]             # ... twice
    return rows


PAIR = {"or_equal": True, "ignore_row_if": "either_value_is_missing"}
SPECS = [
    Spec("row_count", "expect_table_row_count_to_be_between", {"min_value": 1}),
    Spec("row_count_max", "expect_table_row_count_to_be_between", {"min_value": 1, "max_value": 10}),
    Spec("columns", "expect_table_columns_to_match_set", {"column_set": ["id", "ts"], "exact_match": False}),
    Spec("id_required", "expect_column_values_to_not_be_null", {"column": "id"}),
    Spec("avg_required_mostly", "expect_column_values_to_not_be_null", {"column": "avg_x"}, mostly=0.9),
    Spec("note_null", "expect_column_values_to_be_null", {"column": "note"}, mostly=0.5),
    Spec("id_type", "expect_column_values_to_be_of_type", {"column": "id", "type_": "StringType"}),
    Spec("avg_range", "expect_column_values_to_be_between", {"column": "avg_x", "min_value": 10, "max_value": 12}),
    Spec("avg_range_strict", "expect_column_values_to_be_between",
         {"column": "avg_x", "min_value": 10, "max_value": 13, "strict_min": True, "strict_max": True}),
    Spec("n_at_least", "expect_column_values_to_be_between", {"column": "n", "min_value": 3}),
    Spec("n_at_most", "expect_column_values_to_be_between", {"column": "n", "max_value": 30}),
    Spec("status_allowed", "expect_column_values_to_be_in_set", {"column": "status", "value_set": ["ok", "warn", "fault"]}),
    Spec("id_regex", "expect_column_values_to_match_regex", {"column": "id", "regex": "^e1"}),
    Spec("id_unique", "expect_column_values_to_be_unique", {"column": "id"}),
    Spec("avg_not_below_min", "expect_column_pair_values_a_to_be_greater_than_b",
         {"column_A": "avg_x", "column_B": "min_x", **PAIR}),
    Spec("avg_not_above_max", "expect_column_pair_values_a_to_be_greater_than_b",
         {"column_A": "max_x", "column_B": "avg_x", **PAIR}),
    Spec("max_above_min_strict", "expect_column_pair_values_a_to_be_greater_than_b",
         {"column_A": "max_x", "column_B": "min_x", "ignore_row_if": "both_values_are_missing"}),
    Spec("n_sum", "expect_column_sum_to_be_between", {"column": "n", "min_value": 300, "max_value": 300}),
    Spec("ts_freshness", "expect_column_max_to_be_between", {"column": "ts", "min_value": T0 - dt.timedelta(hours=1)}),
    Spec("avg_min", "expect_column_min_to_be_between", {"column": "avg_x", "min_value": 5}),
    Spec("no_fault_hot", "unexpected_rows_expectation",
         {"unexpected_rows_query": "SELECT * FROM {batch} WHERE NOT (NOT (status = 'fault' AND avg_x > 11))"}),
]
COMPOUND = Spec("key_unique", "expect_compound_columns_to_be_unique", {"column_list": ["id", "part"]})
# Every result field the report shows (runner._result_row) besides the spec's own.
REPORTED = ("success", "observed_value", "element_count", "unexpected_count", "unexpected_percent",
            "partial_unexpected_list", "exception")


def _run(spark, df, specs, one_aggregation: bool, label: str):
    group = f"{label}-{next(_GROUPS)}"  # a job group of its own: the tracker keeps a group's jobs for the session
    spark.sparkContext.setJobGroup(group, group)
    try:
        run = runner.run_suite(df, specs, suite_name=f"one_pass.{label}", one_aggregation=one_aggregation)
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return run, len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def _type(gx_type: str) -> str:
    """A row rule is our count-only class either way (runner.row_rule_expectation_class without Spark: its
    own query; row_condition_expectation_class with it): the one type name that differs."""
    return "row rule" if gx_type.startswith("expect_no_rows_") else gx_type


def _reported(run) -> dict:
    by_name = {r["name"]: {k: r[k] for k in REPORTED} for r in run.results}
    gx = {r["expectation_config"]["meta"]["name"]: (_type(r["expectation_config"]["type"]), r["success"], r["result"])
          for r in run.gx_result["results"]}
    return by_name, gx


@pytest.mark.parametrize("specs", [SPECS, [SPECS[0], COMPOUND] + SPECS[3:8] + SPECS[14:16]],
                         ids=["column-key", "compound-key"])
def test_one_aggregation_reports_what_the_stock_expectations_report(spark, specs):
    df = spark.createDataFrame(_rows(), DDL).repartition(3).cache()  # keys spread over partitions
    df.count()
    # Three partitions: GX keeps the uniqueness (one_pass.plan_for), the rest is one aggregation.
    ours, _ = _run(spark, df, specs, True, "ours")
    stock, _ = _run(spark, df, specs, False, "stock")
    assert _reported(ours) == _reported(stock)
    # One partition, as validate_layer hands GX a small frame: the uniqueness is folded too (grouped by its key).
    ours, our_jobs = _run(spark, df.coalesce(1), specs, True, "ours-jobs")
    stock, stock_jobs = _run(spark, df.coalesce(1), specs, False, "stock-jobs")
    assert _reported(ours) == _reported(stock)
    failed = {r["name"] for r in ours.results if not r["success"]}
    expected_failures = {"row_count_max", "id_required", "avg_range", "avg_range_strict", "n_at_least", "status_allowed",
                         "id_regex", "id_unique", "avg_not_below_min", "avg_not_above_max", "max_above_min_strict",
                         "n_sum", "avg_min", "no_fault_hot", "key_unique"}
    assert failed == expected_failures & {s.name for s in specs}  # each rewritten expectation fails on some rows
    assert {r["name"] for r in ours.results} - failed >= {"row_count", "avg_required_mostly"} & {s.name for s in specs}
    # Undo the fold and GX takes a job per level and per filtered domain.
    assert our_jobs == 1 and stock_jobs >= 8, (our_jobs, stock_jobs)
    df.unpersist()


def test_one_aggregation_on_an_empty_batch_matches_the_stock_expectations(spark):
    """No rows: GX's column-map counts are NULL (a SUM over nothing), its filtered counts 0."""
    df = spark.createDataFrame([], DDL).coalesce(1)
    ours, _ = _run(spark, df, SPECS + [COMPOUND], True, "ours-empty")
    stock, _ = _run(spark, df, SPECS + [COMPOUND], False, "stock-empty")
    assert _reported(ours) == _reported(stock)


def test_gold_suite_is_one_spark_job(spark):
    """Gold's suite (row count, avg between min and max per triplet, the sum against silver): one job, where
    GX's stock expectations take two of their own for each column pair."""
    from spark_jobs.quality.suites import gold_specs

    rows = [(f"s{i}", 10.0, 9.0, 11.0, 1.0, 0.5, 2.0, 3) for i in range(6)]
    df = spark.createDataFrame(rows, "sensor_id string, avg_temperature double, min_temperature double, "
                                     "max_temperature double, avg_humidity double, min_humidity double, "
                                     "max_humidity double, reading_count long").cache()
    df.count()
    specs = gold_specs({}, df.columns, silver_count=18, count_column="reading_count")
    assert sum(s.expectation == "expect_column_pair_values_a_to_be_greater_than_b" for s in specs) == 4
    ours, our_jobs = _run(spark, df.coalesce(1), specs, True, "gold-ours")
    stock, stock_jobs = _run(spark, df.coalesce(1), specs, False, "gold-stock")
    assert _reported(ours) == _reported(stock) and all(r["success"] for r in ours.results)
    assert (our_jobs, stock_jobs) == (1, 10)
    df.unpersist()


def test_data_docs_render_the_same_page(spark, tmp_path):
    """The validation page's table (every expectation, its rendered text and observed values) is the stock one,
    up to the random ids GX gives its collapsible blocks and the run's time."""
    df = spark.createDataFrame(_rows(), DDL)
    pages = []
    for one_aggregation in (True, False):
        folder = tmp_path / str(one_aggregation)
        run = runner.run_suite(df, SPECS, suite_name="one_pass.docs", docs_dir=folder, one_aggregation=one_aggregation)
        text = (folder / run.docs_page).read_text()
        table = text.split("<tbody>", 1)[1]  # the expectations' table, without the run's header
        table = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", table)
        pages.append(re.sub(r"\d{4}-?\d\d-?\d\dT\d\d:?\d\d:?\d\d(\.\d+)?Z", "<run time>", table))
    assert pages[0].count("<tr") == pages[1].count("<tr") > len(SPECS)
    assert pages[0] == pages[1]
