"""validate_layer / publish_report on real Spark DataFrames with Great Expectations 1.x."""
from __future__ import annotations

import json
import os

import pytest
from pyspark.sql import functions as F

from spark_jobs import quality
from spark_jobs.quality import report

from .conftest import SILVER_DDL, silver_rows

pytestmark = pytest.mark.integration


def _quarantine(spark, rules_per_row, run_id="20261121T120000Z-0000abcd"):
    rows = [(f'{{"event_id": "q{i}"}}', rules, "landing/iot/f.json", run_id) for i, rules in enumerate(rules_per_row)]
    return spark.createDataFrame(rows, "_raw string, _failed_rules array<string>, _source_file string, _run_id string")


def _context(tmp_path, run_id="20261121T120000Z-0000abcd", **extra):
    return {"run_id": run_id, "lake_uri": str(tmp_path / "lake"), "dataset": "iot", "layer": "silver",
            "tenant": "acme", **extra}


def test_clean_silver_passes_and_report_lands_in_lake_and_mirror(spark, contract, tmp_path, state_dir):
    df = spark.createDataFrame(silver_rows(20), SILVER_DDL)
    context = _context(tmp_path, quarantine_df=_quarantine(spark, []))
    contract["expectations"]["silver"] = [{"name": "event_ts_freshness", "severity": "warn"}]
    validation = quality.validate_layer(spark, layer="silver", contract=contract, df=df, context=context)
    assert not validation.blocking
    failed = [r["name"] for r in validation.results if not r["success"]]
    assert failed in ([], ["event_ts_freshness"])  # the fixture rows are dated 2026-11-21 12:00
    where = quality.publish_report(spark, layer="silver", contract=contract, validation=validation,
                                   manifest={"run_id": context["run_id"], "rows_in": 20, "rows_out": 20},
                                   context=context)
    lake_folder = tmp_path / "lake" / "reports" / "silver" / "iot" / context["run_id"]
    assert where == str(lake_folder)
    mirror = state_dir / "dq" / "acme" / "reports" / "silver" / "iot" / context["run_id"]
    for folder in (lake_folder, mirror):
        assert (folder / "summary.html").is_file() and (folder / "validation.json").is_file()
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["rows_validated"] == 20 and summary["counts"] == {"rows_in": 20, "rows_out": 20}
        assert summary["links"]["data_docs"].startswith("data_docs/validations/")
        assert (folder / summary["links"]["data_docs"]).is_file()
    assert json.loads((mirror / "validation.json").read_text())["statistics"]["evaluated_expectations"] == len(
        validation.results)
    assert (state_dir / "dq" / "acme" / "reports" / "index.html").is_file()


def test_error_failure_blocks_publish_and_links_quarantined_rows(spark, contract, tmp_path, state_dir):
    # 20 published rows, 3 rows quarantined for sensor_id_regex: 3/23 = 13 % > 1 % allowed -> fail.
    df = spark.createDataFrame(silver_rows(20), SILVER_DDL)
    quarantine_df = _quarantine(spark, [["sensor_id_regex"]] * 3 + [["temperature_range", "status_allowed"]])
    validation = quality.validate_layer(spark, layer="silver", contract=contract, df=df,
                                        context=_context(tmp_path, quarantine_df=quarantine_df))
    assert (validation.status, validation.blocking, validation.exit_code) == ("fail", True, 4)
    regex = next(r for r in validation.results if r["name"] == "sensor_id_regex")
    assert (regex["success"], regex["published_success"]) == (False, True)
    assert (regex["unexpected_count"], regex["element_count"], regex["quarantined_rows"]) == (3, 24, 3)
    assert "sensor_id_regex (3 unexpected of 24)" in validation.reason
    assert validation.quarantine["by_rule"] == {"sensor_id_regex": 3, "status_allowed": 1, "temperature_range": 1}
    assert validation.quarantine["total"] == 4
    assert len(validation.quarantine["samples"]["sensor_id_regex"]) == 3
    where = quality.publish_report(spark, layer="silver", contract=contract, validation=validation,
                                   manifest={"published": False, "reason": validation.reason},
                                   context=_context(tmp_path, quarantine_df=quarantine_df))
    summary = json.loads((tmp_path / "lake" / "reports" / "silver" / "iot" /
                          "20261121T120000Z-0000abcd" / "summary.json").read_text())
    assert where and summary["status"] == "fail" and summary["exit_code"] == 4 and summary["published"] is False
    assert {"sensor_id_regex", "temperature_range", "status_allowed"} <= set(summary["failed_expectations"])
    page = (tmp_path / "lake" / "reports" / "silver" / "iot" / "20261121T120000Z-0000abcd" / "summary.html").read_text()
    assert 'href="#q-sensor_id_regex"' in page and 'id="q-sensor_id_regex"' in page and "Not published." in page


def test_warn_failure_does_not_block(spark, contract, tmp_path, state_dir):
    df = spark.createDataFrame(silver_rows(20, hot=2), SILVER_DDL)  # 2 of 20 published rows out of range
    contract["expectations"]["silver"] = [{"name": "temperature_range", "severity": "warn", "mostly": 0.95}]
    validation = quality.validate_layer(spark, layer="silver", contract=contract, df=df, context=_context(tmp_path))
    hot = next(r for r in validation.results if r["name"] == "temperature_range")
    assert (hot["success"], hot["unexpected_count"], hot["severity"]) == (False, 2, "warn")
    assert validation.status in ("warn",) and validation.blocking is False and validation.exit_code == 5


def test_mostly_tolerates_a_trickle_of_quarantined_rows(spark, contract, tmp_path, state_dir):
    df = spark.createDataFrame(silver_rows(200), SILVER_DDL)
    contract["expectations"]["silver"] = [{"name": "event_ts_freshness", "severity": "warn"}]
    validation = quality.validate_layer(spark, layer="silver", contract=contract, df=df,
                                        context=_context(tmp_path, quarantine_df=_quarantine(spark, [["sensor_id_regex"]])))
    regex = next(r for r in validation.results if r["name"] == "sensor_id_regex")
    assert regex["success"] and regex["quarantined_rows"] == 1 and regex["unexpected_count"] == 1
    assert not validation.blocking


def test_gold_referential_check_against_silver_count(spark, contract, tmp_path, state_dir):
    gold = spark.createDataFrame([("sensor-001", 3, 1.0, 2.0, 3.0), ("sensor-002", 2, 5.0, 4.0, 6.0)],
                                 "sensor_id string, reading_count long, temperature_min double, "
                                 "temperature_avg double, temperature_max double")
    validation = quality.validate_layer(spark, layer="gold", contract=contract, df=gold,
                                        context=_context(tmp_path, layer="gold", silver_count=6, gold_name="iot_hourly"))
    by_name = {r["name"]: r for r in validation.results}
    assert by_name["covers_every_silver_row"]["success"] is False  # 5 readings aggregated, silver had 6
    assert by_name["covers_every_silver_row"]["observed_value"] == 5
    assert by_name["temperature_avg_not_below_min"]["success"] is False  # sensor-002: avg 4.0 below min 5.0
    assert validation.blocking and validation.suite_name == "iot.gold.iot_hourly"


def test_previous_run_is_linked(spark, contract, tmp_path, state_dir):
    df = spark.createDataFrame(silver_rows(5), SILVER_DDL)
    for run_id in ("20261121T100000Z-00000001", "20261121T110000Z-00000002"):
        context = _context(tmp_path, run_id=run_id)
        validation = quality.validate_layer(spark, layer="silver", contract=contract, df=df, context=context)
        quality.publish_report(spark, layer="silver", contract=contract, validation=validation,
                               manifest={}, context=context)
    mirror = report.mirror_root("acme") / "silver" / "iot"
    second = json.loads((mirror / "20261121T110000Z-00000002" / "summary.json").read_text())
    assert second["previous_run_id"] == "20261121T100000Z-00000001"
    assert second["links"]["previous_run"] == "../20261121T100000Z-00000001/summary.html"
    index_html = (report.mirror_root("acme") / "index.html").read_text()
    assert "silver/iot/20261121T110000Z-00000002/summary.html" in index_html and "<svg" in index_html


def test_validation_switch_off_skips_everything(spark, contract, tmp_path, monkeypatch):
    monkeypatch.setenv("TENANTLAKE_VALIDATION", "off")
    df = spark.createDataFrame(silver_rows(5), SILVER_DDL)
    validation = quality.validate_layer(spark, layer="silver", contract=contract, df=df, context=_context(tmp_path))
    assert validation.skipped and validation.status == "skipped" and not df.is_cached


def test_one_report_covers_every_output_of_a_layer_run(spark, contract, tmp_path, state_dir):
    gold = spark.createDataFrame([("sensor-001", 3, 1.0, 2.0, 3.0)], "sensor_id string, reading_count long, "
                                 "temperature_min double, temperature_avg double, temperature_max double")
    context = _context(tmp_path, layer="gold", run_id="20261121T130000Z-00000003")
    run = quality.RunValidations()
    first = quality.validate_layer(spark, layer="gold", contract=contract, df=gold, run=run,
                                   context={**context, "gold_name": "iot_hourly", "silver_count": 3})
    second = quality.validate_layer(spark, layer="gold", contract=contract, df=gold, run=run,
                                    context={**context, "gold_name": "iot_daily", "silver_count": 4})
    assert (first.status, second.status) == ("pass", "fail") and run.parts == [first, second]
    quality.publish_report(spark, layer="gold", contract=contract, validation=second, manifest={}, context=context,
                           run=run)
    summary = json.loads((report.mirror_root("acme") / "gold" / "iot" / "20261121T130000Z-00000003" /
                          "summary.json").read_text())
    assert summary["status"] == "fail" and summary["failed_expectations"] == ["iot_daily/covers_every_silver_row"]
    assert "iot_hourly/row_count" in [e["name"] for e in summary["expectations"]]
    assert summary["links"]["data_docs"].startswith("data_docs/iot_daily/validations/")


def test_job_failing_before_validation_reports_fail(spark, contract, tmp_path, state_dir):
    context = _context(tmp_path, run_id="20261121T140000Z-00000004")
    quality.publish_report(spark, layer="silver", contract=contract, validation=quality.LayerValidation(),
                           manifest={"status": "failed", "error": "AnalysisException: path does not exist"},
                           context=context)
    summary = json.loads((report.mirror_root("acme") / "silver" / "iot" / "20261121T140000Z-00000004" /
                          "summary.json").read_text())
    assert summary["status"] == "fail" and "path does not exist" in summary["reason"]


def test_a_report_that_cannot_be_written_fails_loudly(spark, contract, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")  # the state dir is a file: the report mirror cannot be created under it
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(blocker))
    context = _context(tmp_path, run_id="20261121T150000Z-00000005")
    df = spark.createDataFrame(silver_rows(5), SILVER_DDL)
    validation = quality.validate_layer(spark, layer="silver", contract=contract, df=df, context=context)
    with pytest.raises(quality.ReportNotWritten) as raised:
        quality.publish_report(spark, layer="silver", contract=contract, validation=validation,
                               manifest={"run_id": context["run_id"]}, context=context)
    message = str(raised.value)
    assert message.startswith("silver iot: data published and manifest written, but the data-quality report")
    assert "20261121T150000Z-00000005" in message and "\n" not in message


def test_importing_the_quality_package_starts_no_thread_and_keeps_no_run_state():
    import subprocess
    import sys

    probe = ("import threading, spark_jobs.quality as q; "
             "print(threading.active_count(), sorted(n for n in vars(q) if n.startswith('_RUN')))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "TENANTLAKE_VALIDATION": "on"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().split() == ["1", "[]"]


def test_a_row_rule_counts_its_breaking_rows_without_fetching_them(spark, contract, monkeypatch):
    # GX's UnexpectedRowsExpectation also fetches up to 200 of the rows (more Spark jobs) and then drops
    # them at our BASIC result format; ours asks for the count alone and reports what GX reports.
    import great_expectations.expectations as gxe

    from spark_jobs.quality import runner
    from spark_jobs.quality.suites import build_specs

    rows = silver_rows(10)
    rows[:2] = [(e, s, t, 82.0, "fault") for e, s, t, _, _ in rows[:2]]  # two rows break the rule
    df = spark.createDataFrame(rows, SILVER_DDL).cache()
    df.count()
    specs = [s for s in build_specs(contract, "silver", columns=df.columns, context={})
             if s.expectation == "unexpected_rows_expectation"]
    assert [s.name for s in specs] == ["fault_has_no_full_battery"]

    def validate(group: str):
        spark.sparkContext.setJobGroup(group, group)
        try:
            run = runner.run_suite(df, specs, suite_name=f"iot.silver.{group}")
        finally:
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
        (result,) = run.results
        # The status tracker learns of jobs from Spark's asynchronous listener bus: on a loaded machine it
        # can be behind (a fresh-clone run counted 2 and 2), so wait until it has every event.
        spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
        return result, len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))

    # The query class is what a rule of another query shape gets (the rule here would be an aggregate).
    monkeypatch.setattr(runner, "row_condition_expectation_class", runner.row_rule_expectation_class)
    ours, our_jobs = validate("ours")
    monkeypatch.setattr(runner, "row_condition_expectation_class", lambda: gxe.UnexpectedRowsExpectation)
    monkeypatch.setattr(runner, "row_rule_expectation_class", lambda: gxe.UnexpectedRowsExpectation)
    stock, stock_jobs = validate("stock")
    assert (ours["success"], ours["observed_value"]) == (stock["success"], stock["observed_value"]) == (False, 2)
    assert our_jobs < stock_jobs, (our_jobs, stock_jobs)
    df.unpersist()


def test_a_small_frame_is_validated_through_one_partition_with_the_same_results(spark, contract, tmp_path):
    from spark_jobs.quality import SMALL_FRAME_ROWS, _validation_frame

    df = spark.createDataFrame(silver_rows(20, bad_regex=2, hot=1), SILVER_DDL).repartition(4)
    assert _validation_frame(df, 20).rdd.getNumPartitions() == 1
    assert _validation_frame(df, None) is df and _validation_frame(df, SMALL_FRAME_ROWS + 1) is df
    contract["expectations"]["silver"] = [{"name": "temperature_range", "severity": "warn", "mostly": 0.99}]

    def outcome(**rows):
        validation = quality.validate_layer(spark, layer="silver", contract=contract, df=df,
                                            context=_context(tmp_path, **rows))
        return validation.status, [(r["name"], r["success"], r["unexpected_count"], r["observed_value"])
                                   for r in validation.results]

    small, whole = outcome(rows=20), outcome()
    assert small == whole and small[0] == "fail"  # the regex is an error-severity rule
    failed = {name: unexpected for name, success, unexpected, _ in small[1] if not success}
    assert {k: v for k, v in failed.items() if k != "event_ts_freshness"} == {  # fixed event times: stale
        "sensor_id_regex": 2, "temperature_range": 1}, small


def test_validation_caches_a_frame_once_and_never_copies_one_that_reads_a_cache(spark, contract, tmp_path):
    # Bronze validates cached.drop("_file_problem"): persisting that projection again kept a second copy
    # of the batch after the layer ended (run-all's silver at 5M events then ran out of heap).
    from spark_jobs.quality import reads_a_cache

    cached = spark.createDataFrame(silver_rows(20), SILVER_DDL).withColumn("_file_problem", F.lit(None).cast("string"))
    cached = cached.persist()
    cached.count()
    projection = cached.drop("_file_problem")
    assert reads_a_cache(projection) and not projection.is_cached
    quality.validate_layer(spark, layer="silver", contract=contract, df=projection, context=_context(tmp_path))
    assert not projection.is_cached and projection.storageLevel.useMemory is False
    cached.unpersist(blocking=True)
    plain = spark.createDataFrame(silver_rows(20), SILVER_DDL)
    assert not reads_a_cache(plain)
    quality.validate_layer(spark, layer="silver", contract=contract, df=plain, context=_context(tmp_path))
    assert plain.is_cached  # GX's passes and the job's write share one cache
    plain.unpersist()


def test_data_docs_rendered_in_the_background_reach_the_report(spark, contract, tmp_path, state_dir):
    """A layer job renders its Data Docs in a background thread (they overlap its commit); the report waits
    for them and links the same page as a validation that rendered them at once."""
    df = spark.createDataFrame(silver_rows(20), SILVER_DDL)
    context = _context(tmp_path, quarantine_df=_quarantine(spark, []), quarantine_rows=0)
    run = quality.RunValidations()
    validation = quality.validate_layer(spark, layer="silver", contract=contract, df=df, context=context, run=run,
                                        background_docs=True)
    assert validation.docs_pending is not None and validation.docs_dir and not validation.docs_page
    quality.publish_report(spark, layer="silver", contract=contract, validation=validation,
                           manifest={"run_id": context["run_id"], "rows_in": 20, "rows_out": 20}, context=context,
                           run=run)
    assert validation.docs_pending is None and validation.docs_page.startswith("validations/")
    folder = tmp_path / "lake" / "reports" / "silver" / "iot" / context["run_id"]
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["links"]["data_docs"] == f"data_docs/{validation.docs_page}"
    assert (folder / summary["links"]["data_docs"]).is_file() and (folder / "data_docs" / "index.html").is_file()
    assert not os.path.exists(validation.docs_dir)  # the temporary rendering is removed once copied


def test_a_known_quarantine_count_is_not_counted_again(spark, contract, tmp_path, state_dir):
    """The silver job passes the quarantined rows it counted (quarantine_rows): the summary uses them and
    runs one Spark job fewer; the figures are the same as counting."""
    from spark_jobs.jobs.counters import spark_jobs_started
    from spark_jobs.quality import quarantine

    quarantine_df = _quarantine(spark, [["sensor_id_regex"]] * 3 + [["temperature_range", "status_allowed"]]).persist()
    quarantine_df.count()
    before = spark_jobs_started(spark)
    counted = quarantine.summarize(quarantine_df, "20261121T120000Z-0000abcd")
    after_counting = spark_jobs_started(spark)
    given = quarantine.summarize(quarantine_df, "20261121T120000Z-0000abcd", total=4)
    assert given == counted and counted["total"] == 4
    assert 0 < spark_jobs_started(spark) - after_counting < after_counting - before


def test_row_rules_are_counted_in_one_spark_job_with_the_counts_of_their_own_queries(spark, contract, monkeypatch):
    """Row rules whose query is `SELECT * FROM {batch} WHERE NOT (<expr>)` are one aggregate each, all in the
    same Spark job; each count equals what its own query returns (GX's stock expectation, a job per rule)."""
    import great_expectations.expectations as gxe

    from spark_jobs.quality import runner
    from spark_jobs.quality.suites import ExpectationSpec, build_specs

    contract["rules"] += [{"name": "temperature_not_negative", "expr": "temperature >= 0"},
                          {"name": "status_known", "expr": "status IN ('ok', 'warn')"}]
    rows = silver_rows(10)
    rows[:2] = [(e, s, t, 82.0, "fault") for e, s, t, _, _ in rows[:2]]  # two rows break two rules
    rows[2] = (rows[2][0], rows[2][1], rows[2][2], None, "ok")  # NULL temperature: no rule matches it
    df = spark.createDataFrame(rows, SILVER_DDL).cache()
    df.count()
    specs = [s for s in build_specs(contract, "silver", columns=df.columns, context={})
             if s.expectation == "unexpected_rows_expectation"]
    # A query of another shape keeps GX's query metric (a job of its own), with the same answer.
    specs.append(ExpectationSpec("two_faults", "unexpected_rows_expectation",
                                 {"unexpected_rows_query": "SELECT * FROM {batch} WHERE status = 'fault' LIMIT 1"}))
    specs.append(ExpectationSpec("hotter_than_the_mean", "unexpected_rows_expectation", {"unexpected_rows_query":
                 "SELECT * FROM {batch} WHERE NOT (temperature <= (SELECT avg(temperature) + 30 FROM {batch}))"}))
    assert [runner.rule_condition(s.kwargs["unexpected_rows_query"]) for s in specs] == [
        "NOT (NOT (status = 'fault' AND temperature > 80))", "NOT (temperature >= 0)",
        "NOT (status IN ('ok', 'warn'))", None,
        "NOT (temperature <= (SELECT avg(temperature) + 30 FROM {batch}))"]  # a subquery: not an aggregate

    def validate(group: str):
        spark.sparkContext.setJobGroup(group, group)
        try:
            run = runner.run_suite(df, specs, suite_name=f"iot.silver.{group}")
        finally:
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
        types = [r["expectation_config"]["type"] for r in run.gx_result["results"]]
        return ({r["name"]: (r["success"], r["observed_value"]) for r in run.results}, types,
                len(spark.sparkContext.statusTracker().getJobIdsForGroup(group)))

    ours, our_types, our_jobs = validate("ours-conditions")
    monkeypatch.setattr(runner, "row_condition_expectation_class", lambda: gxe.UnexpectedRowsExpectation)
    monkeypatch.setattr(runner, "row_rule_expectation_class", lambda: gxe.UnexpectedRowsExpectation)
    stock, _, stock_jobs = validate("stock-queries")
    assert ours == stock == {"fault_has_no_full_battery": (False, 2), "temperature_not_negative": (True, 0),
                             "status_known": (False, 2), "two_faults": (False, 1), "hotter_than_the_mean": (False, 2)}
    assert our_types.count("expect_no_rows_matching_condition") == 3
    assert our_jobs <= stock_jobs - 3 * 2, (our_jobs, stock_jobs)  # stock: a count and a table per rule
    df.unpersist()
