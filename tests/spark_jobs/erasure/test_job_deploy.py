"""The erasure run `make deploy-jobs` submits, run the way EMR on EKS would run it (a bare Python, the
archive as ./deps), on the shared eraseco lake's clickstream (conftest.py's ``loaded``)."""
from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from tests import shell
from tests.conftest import TEST_STATE_DIR
from tests.spark_jobs.erasure.conftest import TENANT
from tests.spark_jobs.erasure.readers import DATASET, SUBJECT, boto3_client, holding, per_user

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]


def test_the_erasure_run_make_deploy_jobs_submits_runs_with_a_bare_python_and_the_archive(loaded, tmp_path):
    """`make deploy-jobs ARGS=--erase-subject-file F` submits an erasure run to the session emulator's
    virtual cluster, which never runs it; the test then plays EMR on EKS with the request EMR received
    (describe_job_run): spark-submit with its parameters, the archive unpacked as ./deps, and a Python
    whose only packages are pyspark and py4j (tests/infra/deploy/test_entrypoint.py does the same for a
    pipeline run). What a laptop changes: local paths for the s3:// artifact URIs, the local Iceberg and
    s3a jars for EMR's own, s3a:// and the emulator's endpoint and CA for EMRFS and AWS's.

    No id outside the lake: the run logs at INFO and, against the request's own setting, writes Spark's
    event log (every SQL text and plan); the id is in none of what it wrote (driver and executors share
    the process here: its stdout and stderr, the Python workers' included, and the event log)."""
    from infra.deploy import job_deps
    from infra.local.iceberg_jar import ensure_jar
    from infra.local.s3a_jars import ensure_jars
    from spark_jobs.lake.catalog import EMR_ICEBERG_JAR
    from tests.infra.deploy.test_entrypoint import PYTHONPATH_ENTRY, VENV_BIN, _spark_submit_command, bare_python

    tenant = loaded
    env, s3, bucket, outputs = tenant["env"], tenant["s3"], tenant["bucket"], tenant["lake"]
    lake = ["--tenant", TENANT]
    users_before = per_user(env, *lake)
    other = max((u for u in users_before if u != SUBJECT), key=lambda u: (users_before[u], u))
    subjects = tmp_path / "subjects.txt"
    subjects.write_text(f"user_id={other}\n")

    # The deploy: code, archive and subject file uploaded, one run submitted; nothing runs it, so the
    # deploy gives up waiting after a few seconds (exit 1) and the test cancels the run afterwards.
    # The tenant lives in a scratch tenants dir: its outputs come from lake.json (what apply wrote from them).
    outputs_file = TEST_STATE_DIR / "tenants" / TENANT / "lake.json"
    deploy = shell.make("deploy-jobs", f"TENANT={TENANT}", f"ARGS=--erase-subject-file {subjects} --datasets "
                        f"{DATASET} --outputs-file {outputs_file} --poll-seconds 0.5 --timeout-minutes 0.1",
                        timeout=900, env=env)
    assert deploy.returncode != 0 and "still" in deploy.stdout + deploy.stderr, deploy.tail(30)
    emr = boto3_client(tenant, "emr-containers")
    cluster = outputs["emr_virtual_cluster_id"]
    (run,) = [r for page in emr.get_paginator("list_job_runs").paginate(virtualClusterId=cluster)
              for r in page["jobRuns"] if (r.get("tags") or {}).get("layer") == "erase"]
    request = emr.describe_job_run(id=run["id"], virtualClusterId=cluster)["jobRun"]
    emr.cancel_job_run(id=run["id"], virtualClusterId=cluster)
    assert request["executionRoleArn"] == outputs["erasure_role_arn"] != outputs["job_execution_role_arn"]
    assert other not in json.dumps(request, default=str)
    driver = request["jobDriver"]["sparkSubmitJobDriver"]
    subject_uri = driver["entryPointArguments"][driver["entryPointArguments"].index("--subject-file") + 1]
    inbox_key = subject_uri.split(f"s3://{bucket}/", 1)[1]
    assert s3.get_object(Bucket=bucket, Key=inbox_key)["Body"].read().decode() == f"user_id={other}\n"

    # Playing EMR: the driver pod's working dir, the archive as ./deps, a bare Python.
    deps = job_deps.build_job_deps(job_deps.target_for_release(job_deps.DEFAULT_RELEASE_LABEL))
    artifacts = {}
    for key in ("spark_jobs.zip", "entrypoint.py"):
        uri = driver["entryPoint"].rsplit("/", 1)[0] + f"/{key}"
        path = tmp_path / key
        path.write_bytes(s3.get_object(Bucket=bucket, Key=uri.split(f"s3://{bucket}/", 1)[1])["Body"].read())
        artifacts[uri] = str(path)
    python = bare_python(tmp_path / "bare")
    workdir = tmp_path / "driver-pod"
    (workdir / "deps").mkdir(parents=True)
    subprocess.run(["tar", "-xzf", str(deps.path), "-C", str(workdir / "deps")], check=True, timeout=300)
    local = {**artifacts, deps.uri(bucket): str(deps.path), "python": str(python),
             f"local://{EMR_ICEBERG_JAR}": ",".join([str(ensure_jar(quiet=True)), *(str(j) for j in ensure_jars())])}
    command = _spark_submit_command(request, local, f"s3a://{bucket}")
    command[-len(driver["entryPointArguments"]):] = [
        a.replace(f"s3://{bucket}", f"s3a://{bucket}") for a in command[-len(driver["entryPointArguments"]):]]
    truststore = (f"-Djavax.net.ssl.trustStore={outputs['truststore']} -Djavax.net.ssl.trustStoreType=PKCS12 "
                  "-Djavax.net.ssl.trustStorePassword=changeit")
    command[1:1] = ["--conf", f"spark.driver.extraJavaOptions={truststore}"]
    event_logs = tmp_path / "event-logs"
    event_logs.mkdir()
    entry = command.index(local[driver["entryPoint"]])
    command[entry:entry] = ["--conf", "spark.log.level=INFO", "--conf", "spark.eventLog.enabled=true",
                            "--conf", f"spark.eventLog.dir=file://{event_logs}"]
    command += ["--s3-endpoint", outputs["s3_endpoint"], "--ca-bundle", outputs["ca_bundle"]]
    run_env = {k: v for k, v in {**os.environ, **env}.items()
               if k not in ("PYTHONPATH", "SPARK_HOME", "VIRTUAL_ENV", "PYSPARK_GATEWAY_PORT", "TENANTLAKE_STATE_DIR",
                            "TENANTLAKE_SPARK_JARS")}
    run_env.update(PATH=f"{VENV_BIN}:{os.environ.get('PATH', '')}", PYTHONPATH=PYTHONPATH_ENTRY,
                   PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python))
    result = subprocess.run(command, cwd=workdir, env=run_env, capture_output=True, text=True, timeout=1200)
    output = "\n".join(line for line in (result.stdout + result.stderr).splitlines() if " INFO " not in line)
    # A failure names its cause: the job's own lines (Spark's plans at INFO would fill any tail).
    assert result.returncode == 0, "\n".join(
        line for line in output.splitlines()
        if re.search(r"error|exception|traceback|erase|receipt|verif|subject|\bat ", line, re.I))[-6000:]
    assert ": completed; receipt" in output
    # Every log the run wrote, INFO lines and the event log included: the id is in none of them.
    logs = {"stdout": result.stdout, "stderr": result.stderr,
            **{f"event log {p.name}": p.read_text(errors="replace") for p in event_logs.rglob("*") if p.is_file()}}
    assert len(logs) >= 3 and sum(" INFO " in text for text in logs.values()) >= 1
    assert "SparkListenerSQLExecutionStart" in "".join(logs.values())  # the plans are in it
    assert {name: text.count(other) for name, text in logs.items() if other in text} == {}

    # The user is gone from every version of every object, the subject file included (all its versions).
    assert holding(s3, bucket, other, tmp_path) == []
    assert s3.list_object_versions(Bucket=bucket, Prefix=inbox_key).get("Versions", []) == []
    assert per_user(env, *lake) == {u: n for u, n in users_before.items() if u != other}
