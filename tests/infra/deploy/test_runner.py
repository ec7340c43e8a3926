"""Submission order, polling to a terminal state, failure reasons, and no double submission on retry."""
from __future__ import annotations

import datetime
import io

import pytest

from infra.deploy import runner
from infra.deploy.request import LAYERS, ArtifactLocation, RequestOptions, build_request, run_plan
from infra.deploy.target import target_from_outputs

from .conftest import write_manifest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
DATE = datetime.date(2024, 5, 1)


def _location(target):
    return ArtifactLocation("0123456789ab", f"s3://{target.bucket}/artifacts/spark_jobs/0123456789ab/spark_jobs.zip",
                            f"s3://{target.bucket}/artifacts/spark_jobs/0123456789ab/entrypoint.py")


def _run(emu, target, specs, **kwargs):
    out = io.StringIO()
    outcomes = runner.run_in_order(emu.client("emr-containers"), target, _location(target), specs,
                                   {"iot": "aa", "clickstream": "bb"}, RequestOptions(), poll_seconds=0.05,
                                   out=out, s3=emu.client("s3"), **kwargs)
    return outcomes, out.getvalue()


def test_runs_in_dependency_order_each_after_the_previous_completed(driven_emulator, tenant_outputs, job_driver):
    target = target_from_outputs("acme", tenant_outputs)
    specs = run_plan(["iot", "clickstream"], ["bronze", "silver", "gold"], DATE, DATE, per_layer=True)
    with job_driver() as driver:
        outcomes, log = _run(driven_emulator, target, specs)
    assert [o.state for o in outcomes] == ["COMPLETED"] * 6
    assert [(c["tags"]["layer"], c["tags"]["dataset"]) for c in driver.created] == [
        (s.layer, s.dataset) for s in specs]
    for created in driver.created:
        # When a run appeared, every run before it had already COMPLETED.
        assert set(created["states_before"].values()) <= {"COMPLETED"}
        assert len(created["states_before"]) == driver.created.index(created)
    assert "submitted job run" in log and "RUNNING" in log and "COMPLETED" in log
    assert outcomes[0].s3_logs == f"s3://acme-eu-west-1-lake/logs/{target.virtual_cluster_id}/jobs/{outcomes[0].job_run_id}/"
    assert outcomes[0].cloudwatch.startswith("log group /tenantlake/acme/emr-jobs, streams spark_jobs/iot/bronze/")


def test_a_failed_run_stops_the_deploy_and_carries_the_reason(driven_emulator, tenant_outputs, job_driver):
    target = target_from_outputs("acme", tenant_outputs)
    specs = run_plan(["iot"], ["bronze", "silver", "gold"], DATE, per_layer=True)

    def fail_silver(run):
        if run.tags["layer"] == "silver":
            return "FAILED", "USER_ERROR", "Job failed: silver iot: 3 rows broke rule temperature_range"
        return "COMPLETED", "", ""

    with job_driver(fail_silver) as driver:
        outcomes, _ = _run(driven_emulator, target, specs)
    assert [(o.spec.layer, o.state) for o in outcomes] == [("bronze", "COMPLETED"), ("silver", "FAILED")]
    assert [c["tags"]["layer"] for c in driver.created] == ["bronze", "silver"]  # gold never submitted
    assert outcomes[1].failure_reason == "USER_ERROR"
    text = runner.describe_outcome(outcomes[1])
    assert "FAILED" in text and "3 rows broke rule temperature_range" in text and "[failureReason USER_ERROR]" in text


def test_a_retried_deploy_attaches_to_the_active_run_instead_of_submitting_again(driven_emulator, tenant_outputs, job_driver):
    target = target_from_outputs("acme", tenant_outputs)
    spec = run_plan(["iot"], ["bronze"], DATE, per_layer=True)[0]
    emr = driven_emulator.client("emr-containers")
    # A first deploy submitted this run and was interrupted while it ran.
    first_id = emr.start_job_run(**build_request(target, _location(target), spec, "aa"))["id"]
    with job_driver() as driver:
        outcomes, log = _run(driven_emulator, target, [spec])
    assert [(o.action, o.job_run_id, o.state) for o in outcomes] == [("attach", first_id, "COMPLETED")]
    assert driver.created == []  # nothing new was submitted
    assert "attaching instead of submitting again" in log


def test_completed_runs_are_skipped_and_failed_ones_get_a_new_attempt(driven_emulator, tenant_outputs, job_driver):
    target = target_from_outputs("acme", tenant_outputs)
    specs = run_plan(["iot"], ["bronze", "silver"], DATE, per_layer=True)
    with job_driver(lambda run: ("FAILED", "USER_ERROR", "boom") if run.tags["layer"] == "silver"
                    else ("COMPLETED", "", "")) as driver:
        first, _ = _run(driven_emulator, target, specs)
    assert [o.state for o in first] == ["COMPLETED", "FAILED"]
    with job_driver() as driver:
        second, log = _run(driven_emulator, target, specs)
    assert [(o.spec.layer, o.action, o.state) for o in second] == [("bronze", "skip", "COMPLETED"),
                                                                    ("silver", "submit", "COMPLETED")]
    assert "already COMPLETED" in log
    (retry,) = driver.created
    assert retry["tags"]["attempt"] == "1"
    first_token = build_request(target, _location(target), specs[1], "aa")["clientToken"]
    assert retry["client_token"] != first_token


def test_a_pipeline_run_per_dataset_and_the_failed_layer_is_named(driven_emulator, tenant_outputs, job_driver):
    target = target_from_outputs("acme", tenant_outputs)
    specs = run_plan(["iot", "clickstream"], list(LAYERS), DATE, DATE)
    error = "JobFailed: silver iot: validation blocked the publish: temperature_range failed for 3 rows"

    def bronze_ok_silver_fails(run):  # what the job leaves in the lake before the driver exits 4
        write_manifest(driven_emulator, target.bucket, "iot", "bronze", date="2024-05-01")
        write_manifest(driven_emulator, target.bucket, "iot", "silver", "failed", error=error, date="2024-05-01")
        return "FAILED", "USER_ERROR", "Job failed: the driver exited with code 4"

    with job_driver(bronze_ok_silver_fails) as driver:
        outcomes, log = _run(driven_emulator, target, specs)
    assert [(c["tags"]["dataset"], c["tags"]["layer"]) for c in driver.created] == [("iot", "pipeline")]  # clickstream waits
    (failed,) = outcomes
    assert (failed.state, failed.failed_layer, failed.label) == ("FAILED", "silver", "iot/silver")
    assert f"[1/2] iot/silver: FAILED in pipeline run {failed.job_run_id}, bronze succeeded: silver failed" in log
    text = runner.describe_outcome(failed)
    assert text.startswith(f"iot/silver: FAILED (job run {failed.job_run_id}, pipeline run of iot): ")
    assert "[failureReason USER_ERROR]" in text and error in text


@pytest.mark.parametrize("case", ["no manifest", "warnings", "manifests unreadable"])
def test_a_failed_pipeline_run_without_a_failed_manifest(driven_emulator, tenant_outputs, job_driver, case):
    target = target_from_outputs("acme", tenant_outputs)
    spec = run_plan(["iot"], list(LAYERS), DATE, DATE)[0]
    warn = {"silver": {"status": "warn", "blocking": False, "reason": "event_ts_freshness (observed 2020-11-16)"}}

    def decide(run):
        if case == "warnings":
            for layer in LAYERS:
                write_manifest(driven_emulator, target.bucket, "iot", layer, date="2024-05-01",
                               validation=warn if layer == "silver" else None)
        return "FAILED", "USER_ERROR", "Job failed"

    if case == "manifests unreadable":
        target = target_from_outputs("acme", {**tenant_outputs, "lake_bucket_name": "acme-eu-west-1-gone"})
    with job_driver(decide):
        (outcome,), _ = _run(driven_emulator, target, [spec])
    expected = {
        "no manifest": ("bronze", "bronze wrote no run manifest: the driver stopped before or while it ran"),
        "warnings": ("silver", "every layer succeeded, but silver had warn-severity expectations fail "
                               "(the jobs exit 5 on warnings): silver: event_ts_freshness (observed 2020-11-16)"),
        "manifests unreadable": ("", "run manifests not readable, layer unknown (NoSuchBucket reading "
                                     "s3://acme-eu-west-1-gone/reports/)"),
    }[case]
    assert (outcome.failed_layer, outcome.layer_report.split(" (killed")[0]) == expected


def test_pipeline_runs_keep_the_idempotency_rules(driven_emulator, tenant_outputs, job_driver):
    target = target_from_outputs("acme", tenant_outputs)
    spec = run_plan(["iot"], list(LAYERS), DATE, DATE)[0]
    emr = driven_emulator.client("emr-containers")
    # An interrupted deploy left the pipeline run active: attach, do not submit.
    first_id = emr.start_job_run(**build_request(target, _location(target), spec, "aa"))["id"]
    with job_driver(lambda run: ("FAILED", "USER_ERROR", "boom")) as driver:
        attached, _ = _run(driven_emulator, target, [spec])
    assert [(o.action, o.job_run_id, o.state) for o in attached] == [("attach", first_id, "FAILED")]
    assert driver.created == []
    # It failed: the next deploy submits attempt 1 with a new token.
    with job_driver() as driver:
        retried, _ = _run(driven_emulator, target, [spec])
    (created,) = driver.created
    assert [(o.action, o.state) for o in retried] == [("submit", "COMPLETED")] and created["tags"]["attempt"] == "1"
    assert created["client_token"] != build_request(target, _location(target), spec, "aa")["clientToken"]
    # It completed: the next deploy skips it.
    with job_driver() as driver:
        skipped, log = _run(driven_emulator, target, [spec])
    assert [(o.action, o.job_run_id) for o in skipped] == [("skip", retried[0].job_run_id)] and driver.created == []
    assert "iot/pipeline: already COMPLETED" in log


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_prints_changes_in_a_log_and_rewrites_one_line_on_a_terminal():
    spec = run_plan(["iot"], ["bronze"], DATE, per_layer=True)[0]
    clock = iter([0.0, 5.0, 10.0, 70.0]).__next__
    log = io.StringIO()
    progress = runner.Progress(log, clock=clock)
    for state, elapsed in (("SUBMITTED", 0), ("RUNNING", 5), ("RUNNING", 10), ("RUNNING", 70)):
        progress.update(1, 3, spec.label, "j1", state, elapsed)
    lines = log.getvalue().splitlines()
    # SUBMITTED, RUNNING, then the unchanged state again only after the 60 s heartbeat.
    assert [line.split()[2] for line in lines] == ["SUBMITTED", "RUNNING", "RUNNING"]
    assert lines[0].startswith("[1/3] iot/bronze") and lines[-1].split()[3] == "01:10"
    tty = _Tty()
    progress = runner.Progress(tty, clock=iter([0.0, 1.0]).__next__)
    progress.update(1, 3, spec.label, "j1", "RUNNING", 0)
    progress.update(1, 3, spec.label, "j1", "COMPLETED", 1)
    progress.done()
    assert tty.getvalue().count("\r") == 2 and tty.getvalue().endswith("\n") and tty.getvalue().count("\n") == 1
