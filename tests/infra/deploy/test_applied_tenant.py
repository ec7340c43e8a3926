"""`make deploy-jobs TENANT=acme` on the tenant that `make apply TENANT=acme` created in the session emulator.

The outputs come from the tenant's real Terraform state (no hand-made resources). First a dry run
(what an operator checks before a deploy): one pipeline run per dataset, each with the dependency
archive. Then a deploy: the session emulator is a moto server process, so its job runs cannot be moved
to COMPLETED from here; the test ends each run the way an operator would, with ``cancel_job_run`` (a
real API call), which covers the failure path end to end. Success paths and full ordering are covered
in test_cli.py.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests import shell

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
REPO = Path(__file__).resolve().parents[3]
DATE = "2024-05-01"


def _runs(emr, cluster_id: str) -> dict[str, dict]:
    runs: dict[str, dict] = {}
    for page in emr.get_paginator("list_job_runs").paginate(virtualClusterId=cluster_id):
        runs.update({run["id"]: run for run in page["jobRuns"]})
    return runs


def _deploy_and_cancel_first_run(env, emr, cluster_id: str) -> tuple[subprocess.CompletedProcess, dict, int, int]:
    """Start the deploy, wait for its first run, check nothing else starts while it runs, cancel it.
    Returns (make result, the run, runs that appeared while it was active, earlier runs of the same name)."""
    earlier = _runs(emr, cluster_id)
    before = set(earlier)
    proc = subprocess.Popen(["make", "-s", "deploy-jobs", "TENANT=acme",
                             f"ARGS=--datasets iot,clickstream --date {DATE} --poll-seconds 0.2"],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        new: list[dict] = []
        while not new and time.monotonic() < deadline and proc.poll() is None:
            new = [run for run_id, run in _runs(emr, cluster_id).items() if run_id not in before]
            time.sleep(0.3)
        if not new:  # the deploy ended (or never submitted): hand its output to the test
            out, err = proc.communicate(timeout=120)
            return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), {}, 0, 0
        assert len(new) == 1, new
        time.sleep(1.5)  # an observation window, not a wait: clickstream's run must not appear meanwhile
        runs_while_active = len(set(_runs(emr, cluster_id)) - before)
        emr.cancel_job_run(id=new[0]["id"], virtualClusterId=cluster_id)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    result = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    run = emr.describe_job_run(id=new[0]["id"], virtualClusterId=cluster_id)["jobRun"]
    same_name = sum(1 for other in earlier.values() if other["name"] == run["name"])
    return result, run, runs_while_active, same_name


def test_make_deploy_jobs_on_the_applied_tenant(applied_tenant, emulator, boto_session, job_deps_archive):
    lake = applied_tenant("acme")
    env = {**os.environ, "TENANTLAKE_STATE_DIR": str(Path(emulator.log_file).parent)}
    region, bucket, cluster_id = lake["region"], lake["lake_bucket_name"], lake["emr_virtual_cluster_id"]
    emr, s3 = boto_session("emr-containers", region), boto_session("s3", region)
    deps_uri = job_deps_archive.uri(bucket)

    dry = shell.make("deploy-jobs", "TENANT=acme", "ARGS=--dry-run", timeout=300, env=env).check()
    requests = json.loads(dry.stdout)
    assert [(r["tags"]["dataset"], r["tags"]["layer"]) for r in requests] == [
        ("clickstream", "pipeline"), ("inventory", "pipeline"), ("iot", "pipeline")]
    for request in requests:
        driver = request["jobDriver"]["sparkSubmitJobDriver"]
        assert driver["entryPointArguments"][:3] == ["run-all", "--dataset", request["tags"]["dataset"]]
        assert f" --archives {deps_uri}#deps " in f" {driver['sparkSubmitParameters']} "
        assert "spark.executorEnv.PYTHONPATH=./deps" in driver["sparkSubmitParameters"]
    assert f"{job_deps_archive.summary()}: {deps_uri}" in dry.stderr
    assert "dry run: 3 request(s), pipeline (bronze -> silver -> gold per run)" in dry.stderr

    result, run, runs_while_active, same_name = _deploy_and_cancel_first_run(env, emr, cluster_id)
    assert run, result.stderr
    assert result.returncode != 0 and "deploy-jobs] Error 1" in result.stderr, result.stderr
    version = re.search(r"artifact: spark_jobs version ([0-9a-f]{12})", result.stderr).group(1)
    prefix = f"s3://{bucket}/artifacts/spark_jobs/{version}/"
    assert runs_while_active == 1
    assert run["executionRoleArn"] == lake["job_execution_role_arn"]
    assert run["releaseLabel"] == "emr-7.5.0-latest"
    driver = run["jobDriver"]["sparkSubmitJobDriver"]
    assert driver["entryPoint"] == prefix + "entrypoint.py"
    assert driver["entryPointArguments"] == ["run-all", "--dataset", "iot", "--date", DATE, "--lake-uri", f"s3://{bucket}",
                                             "--kms-key-arn", lake["kms_key_arn"], "--region", region,
                                             "--glue-databases", ",".join(f"{layer}={db}" for layer, db in
                                                                          sorted(lake["glue_database_names"].items())),
                                             "--data-classification", ",".join(sorted(lake["data_classification"])),
                                             # the run tags its tables' columns for Lake Formation (issue 44)
                                             "--lf-classification-tag", lake["lake_formation"]["classification_tag"],
                                             # acme's orchestration (issue 54): its runs put metrics and emit events
                                             "--metric-namespace", "tenantlake/acme", "--event-source", "tenantlake.acme"]
    assert driver["sparkSubmitParameters"].startswith(f"--py-files {prefix}spark_jobs.zip ")
    monitoring = run["configurationOverrides"]["monitoringConfiguration"]
    assert monitoring["cloudWatchMonitoringConfiguration"]["logGroupName"] == lake["log_group_name"]
    assert monitoring["s3MonitoringConfiguration"]["logUri"] == f"s3://{bucket}/logs/"
    assert run["tags"] == {"tenant": "acme", "dataset": "iot", "layer": "pipeline", "code_version": version,
                           "run_date": DATE, "event_date": DATE, "attempt": str(same_name)}
    assert f"--archives {deps_uri}#deps" in driver["sparkSubmitParameters"]
    # Cancelled before any layer wrote its manifest: the report says where the pipeline stopped.
    assert (f"error: iot/bronze ended CANCELLED (pipeline run {run['id']}): JobRun CANCELLED successfully.; "
            "bronze wrote no run manifest") in result.stderr
    assert "not submitted (an earlier run did not complete): clickstream/pipeline" in result.stdout

    zip_key = f"artifacts/spark_jobs/{version}/spark_jobs.zip"
    head = s3.head_object(Bucket=bucket, Key=zip_key)
    assert (head["ServerSideEncryption"], head["SSEKMSKeyId"]) == ("aws:kms", lake["kms_key_arn"])
    assert len(head["Metadata"]["sha256"]) == 64
    deps_head = s3.head_object(Bucket=bucket, Key=job_deps_archive.key)
    assert (deps_head["ServerSideEncryption"], deps_head["SSEKMSKeyId"]) == ("aws:kms", lake["kms_key_arn"])
    assert deps_head["Metadata"]["sha256"] == job_deps_archive.sha256

    # A re-run: the unchanged artifact is not uploaded again; the cancelled run is retried as attempt 1.
    again, retry, _, _ = _deploy_and_cancel_first_run(env, emr, cluster_id)
    assert again.returncode != 0 and "deploy-jobs] Error 1" in again.stderr, again.stderr
    assert f"artifact: spark_jobs version {version}" in again.stderr
    assert "unchanged, not uploaded again" in again.stderr and "uploaded artifacts/" not in again.stderr
    assert s3.head_object(Bucket=bucket, Key=zip_key)["ETag"] == head["ETag"]
    assert job_deps_archive.key in again.stderr.split("unchanged, not uploaded again:", 1)[1].splitlines()[0]
    assert (retry["tags"]["layer"], retry["tags"]["attempt"]) == ("pipeline", str(same_name + 1))
