"""Submission order, polling to a terminal state, failure reasons, and no double submission on retry."""
from __future__ import annotations

import datetime
import io

import pytest

from infra.deploy import runner
from infra.deploy.request import ArtifactLocation, RequestOptions, build_request, run_plan
from infra.deploy.target import target_from_outputs

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
DATE = datetime.date(2024, 5, 1)


def _location(target):
    return ArtifactLocation("0123456789ab", f"s3://{target.bucket}/artifacts/spark_jobs/0123456789ab/spark_jobs.zip",
                            f"s3://{target.bucket}/artifacts/spark_jobs/0123456789ab/entrypoint.py")


def _run(emu, target, specs, **kwargs):
    out = io.StringIO()
    outcomes = runner.run_in_order(emu.client("emr-containers"), target, _location(target), specs,
                                   {"iot": "aa", "clickstream": "bb"}, RequestOptions(), poll_seconds=0.05,
                                   out=out, **kwargs)
    return outcomes, out.getvalue()


def test_runs_in_dependency_order_each_after_the_previous_completed(driven_emulator, tenant_outputs, job_driver):
    target = target_from_outputs("acme", tenant_outputs)
    specs = run_plan(["iot", "clickstream"], ["bronze", "silver", "gold"], DATE, DATE)
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
    specs = run_plan(["iot"], ["bronze", "silver", "gold"], DATE)

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
    spec = run_plan(["iot"], ["bronze"], DATE)[0]
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
    specs = run_plan(["iot"], ["bronze", "silver"], DATE)
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


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_prints_changes_in_a_log_and_rewrites_one_line_on_a_terminal():
    spec = run_plan(["iot"], ["bronze"], DATE)[0]
    clock = iter([0.0, 5.0, 10.0, 70.0]).__next__
    log = io.StringIO()
    progress = runner.Progress(log, clock=clock)
    for state, elapsed in (("SUBMITTED", 0), ("RUNNING", 5), ("RUNNING", 10), ("RUNNING", 70)):
        progress.update(1, 3, spec, "j1", state, elapsed)
    lines = log.getvalue().splitlines()
    # SUBMITTED, RUNNING, then the unchanged state again only after the 60 s heartbeat.
    assert [line.split()[2] for line in lines] == ["SUBMITTED", "RUNNING", "RUNNING"]
    assert lines[0].startswith("[1/3] iot/bronze") and lines[-1].split()[3] == "01:10"
    tty = _Tty()
    progress = runner.Progress(tty, clock=iter([0.0, 1.0]).__next__)
    progress.update(1, 3, spec, "j1", "RUNNING", 0)
    progress.update(1, 3, spec, "j1", "COMPLETED", 1)
    progress.done()
    assert tty.getvalue().count("\r") == 2 and tty.getvalue().endswith("\n") and tty.getvalue().count("\n") == 1
