"""`python -m spark_jobs erase` end to end on the emulator, on a gdpr tenant of its own (eraseco).

Clickstream data for 59 users (with malformed, quarantined and duplicate records) goes through run-all.
Then one user is erased: the first attempt is SIGKILLed in the middle of its rewrites, a pipeline run is
refused while the request holds the dataset, and the same command run again completes. The test then
checks, with its own readers (DuckDB for Parquet, the Avro reader for Iceberg manifests, text for the
rest), that no current or noncurrent version of any object in the bucket holds the user's id; that gold
equals gold computed (on a separate lake) from the landing data without that user; that every other
user's silver rows are unchanged; and that the receipt is in the report index.
"""
from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from spark_jobs.io.iceberg_files import read_avro
from tests import shell
from tests.conftest import REPO_ROOT, TEST_STATE_DIR
from tests.spark_jobs.erasure.conftest import CLICKSTREAM, TENANT, cli

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]
SUBJECT = "user-0016"  # in seed 42's data: silver rows, a malformed (quarantined) record, several files
DATASET = CLICKSTREAM
GOLD = ("clickstream_site_hourly", "clickstream_user_sessions")
_cli = cli


def _versions(s3, bucket):
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        yield from page.get("Versions", [])


def _texts(data: bytes, tmp: Path):
    """The test's own reading of an object: DuckDB for Parquet, Avro records, gzip, else text."""
    if data[:2] == b"\x1f\x8b":
        yield from _texts(gzip.decompress(data), tmp)
    elif data[:4] == b"PAR1":
        path = tmp / "scan.parquet"
        path.write_bytes(data)
        for row in duckdb.sql(f"SELECT COLUMNS(*)::VARCHAR FROM read_parquet('{path}')").fetchall():
            yield json.dumps(row, default=str)
    elif data[:4] == b"Obj\x01":
        yield json.dumps(read_avro(data), default=lambda b: b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b))
    else:
        yield data.decode("utf-8", "replace")


def _holding(s3, bucket, needle: str, tmp: Path) -> list[str]:
    found = []
    for version in _versions(s3, bucket):
        data = s3.get_object(Bucket=bucket, Key=version["Key"], VersionId=version["VersionId"])["Body"].read()
        if any(needle in text.lower() for text in _texts(data, tmp)):
            found.append(f"{version['Key']}@{'current' if version['IsLatest'] else 'noncurrent'}")
    return found


def _rows(env, sql: str, *lake: str) -> list[str]:
    result = _cli(env, "query", *lake, "--json", "--max-rows", "100000", sql)
    return sorted(json.dumps(row, sort_keys=True, default=str) for row in json.loads(result.stdout))


def _gold_and_users(env, *lake: str) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """Both gold tables' rows and silver's rows per user, in ONE query (a JVM per `query` run)."""
    sql = " UNION ALL ".join([*(f"SELECT '{table}' AS t, to_json(struct(*)) AS r FROM gold.{table}" for table in GOLD),
                              f"SELECT 'silver' AS t, to_json(struct(user_id AS u, count(*) AS n)) AS r "
                              f"FROM silver.{DATASET} GROUP BY user_id"])
    rows = [json.loads(row) for row in _rows(env, sql, *lake)]
    gold = sorted((row["t"], row["r"]) for row in rows if row["t"] != "silver")
    users = {json.loads(row["r"])["u"]: json.loads(row["r"])["n"] for row in rows if row["t"] == "silver"}
    return gold, users


def _per_user(env, *lake: str) -> dict[str, int]:
    rows = _rows(env, "SELECT user_id AS u, count(*) AS n FROM silver.clickstream GROUP BY user_id", *lake)
    return {json.loads(r)["u"]: json.loads(r)["n"] for r in rows}


def test_only_hits_in_a_dataset_the_request_left_out_are_set_apart():
    """``erase --dataset D`` scans the whole bucket; a hit in another dataset's own objects is named in the
    receipt, not counted against the request. Anything else (a similar name, a report) still is."""
    from spark_jobs.contract import load_contract
    from spark_jobs.erasure.job import _outside_request
    from spark_jobs.erasure.objects import Version

    keys = ["silver/clickstream/data/a.parquet", "gold/clickstream_user_sessions/data/b.parquet",
            "checkpoints/clickstream/bronze/sources/0/0", "landing/clickstream/f.json",
            "silver/clickmonth/data/c.parquet", "reports/dq/clickstream/x.json", "landing/clickstreamx/d.json"]
    found = _outside_request([Version(k, "v1", True, 1) for k in keys], [load_contract(DATASET)])
    assert {name: [v.key for v in hits] for name, hits in found.items()} == {DATASET: keys[:4]}
    assert _outside_request([Version(k, "v1", True, 1) for k in keys], []) == {}


def test_erase_a_user_killed_midway_and_resumed(loaded, tmp_path):
    tenant = loaded
    env, s3, bucket = tenant["env"], tenant["s3"], tenant["bucket"]
    lake = ["--tenant", TENANT]
    users_before = _per_user(env, *lake)
    assert users_before[SUBJECT] > 0
    before = _holding(s3, bucket, SUBJECT, tmp_path)
    assert any(k.startswith("landing/") for k in before) and any(k.startswith("quarantine/") for k in before)
    assert any(k.startswith("bronze/") for k in before) and any(k.startswith("silver/") for k in before)

    # The reference: the same landing files without the user's records, through the pipeline on a folder lake.
    reference = tmp_path / "reference"
    for obj in s3.list_objects_v2(Bucket=bucket, Prefix=f"landing/{DATASET}/")["Contents"]:
        text = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read().decode()
        target = reference / obj["Key"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(line for line in text.splitlines(True) if SUBJECT not in line))
    ref_env = {**env, "TENANTLAKE_TENANT": "eraseref"}
    _cli(ref_env, "run-all", "--lake-uri", str(reference), "--dataset", DATASET, "--allow-warn", timeout=1200)

    # A pipeline run in progress (its lease; finished runs leave none) stops a new request, which changes nothing.
    runs_prefix = f"checkpoints/{DATASET}/runs/"
    leases = s3.list_objects_v2(Bucket=bucket, Prefix=runs_prefix).get("Contents", [])
    assert [o["Key"] for o in leases if o["Key"].endswith(".lease")] == []  # (s3a leaves a folder marker)
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    s3.put_object(Bucket=bucket, Key=f"{runs_prefix}other.lease", ServerSideEncryption="aws:kms",
                  SSEKMSKeyId=tenant["lake"]["kms_key_arn"],
                  Body=json.dumps({"layer": "silver", "host": "elsewhere", "pid": 1, "since": since}).encode())
    busy = _cli(env, "erase", *lake, "--subject", f"user_id={SUBJECT}", expect=2)
    assert "a silver run is in progress" in busy.stderr and f"{runs_prefix}other.lease" in busy.stderr
    assert s3.list_objects_v2(Bucket=bucket, Prefix=f"checkpoints/{DATASET}/erasure.lock").get("KeyCount", 0) == 0
    assert _holding(s3, bucket, SUBJECT, tmp_path) == before
    s3.delete_object(Bucket=bucket, Key=f"{runs_prefix}other.lease")

    dry = _cli(env, "erase", *lake, "--subject", f"user_id={SUBJECT}", "--dry-run")
    assert "dry run, nothing changed" in dry.stdout and "would touch" in dry.stderr
    # user-001 is nobody: a prefix of user-0010 ... user-0019, whose records stay out of it (issue 31).
    nobody = json.loads(_cli(env, "erase", *lake, "--subject", "user_id=user-001", "--dry-run", "--json").stdout)
    assert nobody["datasets"][DATASET]["would_touch"] == {"bronze": {}, "quarantine": {}, "landing_files": [],
                                                          "event_dates": [], "silver": {}}
    assert _holding(s3, bucket, SUBJECT, tmp_path) == before  # nothing touched

    # First attempt: SIGKILL a few seconds into the rewrites (after the matches are recorded).
    proc = subprocess.Popen([sys.executable, "-m", "spark_jobs", "erase", *lake, "--subject", f"user_id={SUBJECT}"],
                            cwd=REPO_ROOT, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    seen = []
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            seen.append(line)
            if f"{DATASET}: matched" in line:  # matched; the rewrites start now
                time.sleep(4)
                break
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert any("matched" in line for line in seen), "".join(seen[-20:])
    journal_keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="checkpoints/_erasure/").get("Contents", [])]
    assert any(k.endswith("/state.json") for k in journal_keys)
    print("killed after:", seen[-1].strip())

    refused = _cli(env, "run", *lake, "--dataset", DATASET, "--layer", "silver", expect=1)
    assert "erasure request er-" in refused.stderr and "is in progress on this dataset" in refused.stderr

    done = _cli(env, "erase", *lake, "--subject", f"user_id={SUBJECT}", "--json", timeout=1200)
    receipt = json.loads(done.stdout)
    assert receipt["status"] == "completed" and receipt["verification"]["versions_with_subject"] == 0
    assert "resuming" in done.stderr
    assert SUBJECT not in done.stdout and all(len(s["subject_hash"]) == 64 for s in receipt["subjects"])
    touched = receipt["datasets"][DATASET]
    assert touched["silver"]["rows_deleted"] == users_before[SUBJECT]
    assert touched["bronze"]["rows_removed"] >= users_before[SUBJECT] and touched["quarantine"]["rows_removed"] >= 1
    assert receipt["object_versions_removed"] > 0

    # Nothing of the user left anywhere, by the test's own reading of every version.
    assert _holding(s3, bucket, SUBJECT, tmp_path) == []
    # Gold equals gold computed without the user; other users' silver rows are unchanged (a query per lake).
    gold, users_after = _gold_and_users(env, *lake)
    assert gold == _gold_and_users(ref_env, "--lake-uri", str(reference))[0]
    assert {table for table, _ in gold} == set(GOLD)
    assert users_after == {u: n for u, n in users_before.items() if u != SUBJECT}
    # The receipt is in the lake and in the data-quality index.
    key = f"reports/erasure/{receipt['request_id']}/receipt.json"
    assert json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())["request_id"] == receipt["request_id"]
    index = TEST_STATE_DIR / "dq" / TENANT / "reports"
    assert receipt["request_id"] in (index / "index.html").read_text()
    assert receipt["request_id"] in json.loads((index / "index.json").read_text())["erasure"]
    # The pipeline runs again once the request is done.
    _cli(env, "run", *lake, "--dataset", DATASET, "--layer", "silver", "--allow-warn")


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
    from spark_jobs.catalog import EMR_ICEBERG_JAR
    from tests.infra.deploy.test_entrypoint import PYTHONPATH_ENTRY, VENV_BIN, _spark_submit_command, bare_python

    tenant = loaded
    env, s3, bucket, outputs = tenant["env"], tenant["s3"], tenant["bucket"], tenant["lake"]
    lake = ["--tenant", TENANT]
    users_before = _per_user(env, *lake)
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
    assert result.returncode == 0, output[-4000:]
    assert ": completed; receipt" in output
    # Every log the run wrote, INFO lines and the event log included: the id is in none of them.
    logs = {"stdout": result.stdout, "stderr": result.stderr,
            **{f"event log {p.name}": p.read_text(errors="replace") for p in event_logs.rglob("*") if p.is_file()}}
    assert len(logs) >= 3 and sum(" INFO " in text for text in logs.values()) >= 1
    assert "SparkListenerSQLExecutionStart" in "".join(logs.values())  # the plans are in it
    assert {name: text.count(other) for name, text in logs.items() if other in text} == {}

    # The user is gone from every version of every object, the subject file included (all its versions).
    assert _holding(s3, bucket, other, tmp_path) == []
    assert s3.list_object_versions(Bucket=bucket, Prefix=inbox_key).get("Versions", []) == []
    assert _per_user(env, *lake) == {u: n for u, n in users_before.items() if u != other}


def boto3_client(tenant, service: str):
    import boto3

    aws = tenant["env"]
    return boto3.client(service, region_name=tenant["lake"]["region"], endpoint_url=aws["AWS_ENDPOINT_URL"],
                        verify=aws["AWS_CA_BUNDLE"], aws_access_key_id=aws["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=aws["AWS_SECRET_ACCESS_KEY"])



def test_erasure_of_a_dataset_stored_by_month(loaded, tmp_path):
    """A copy of clickstream with ``partition_granularity: month``: the quarantine's month folders are
    rewritten without the subject, gold months are recomputed with their other days kept, and gold then
    equals the pipeline's gold from the same landing files without the subject (a folder lake). The
    subject is also in the tenant's clickstream, which ``--dataset clickmonth`` leaves out: the request
    completes, and its receipt names the versions of clickstream that still hold the subject."""
    import re

    import yaml

    from spark_jobs.contract import CONTRACTS_DIR

    tenant, dataset = loaded, "clickmonth"
    contracts = tmp_path / "contracts"
    contracts.mkdir()
    raw = yaml.safe_load((CONTRACTS_DIR / "clickstream.yaml").read_text())
    raw.update(dataset=dataset, partition_granularity="month", expectations={})
    (contracts / f"{dataset}.yaml").write_text(yaml.safe_dump(raw))
    # Validation off: a tenth of the records is bad on purpose, which the default expectations would block.
    env = {**tenant["env"], "TENANTLAKE_CONTRACTS_DIR": str(contracts), "TENANTLAKE_VALIDATION": "off"}
    s3, bucket = tenant["s3"], tenant["bucket"]
    lake = ["--tenant", TENANT]
    # Three files a day apart across a month end, with bad records (some quarantined with a user id in them).
    local = tmp_path / "local"
    _cli(env, "datagen", "--lake-uri", str(local), "--dataset", DATASET, "--records", "300", "--batch-size", "100",
         "--interval", "86400", "--start", "2024-01-30T00:00:00Z", "--bad-rate", "0.1")
    _cli(env, "land", *lake, "--dataset", dataset, str(local / "landing" / DATASET))
    _cli(env, "run-all", *lake, "--dataset", dataset, "--allow-warn", timeout=1200)
    quarantine_keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=f"quarantine/{dataset}/")["Contents"]
                       if o["Key"].endswith(".parquet")]
    assert {k.split("/")[2] for k in quarantine_keys} >= {"event_month=2024-01", "event_month=2024-02"}
    in_quarantine = {u for k in quarantine_keys
                     for text in _texts(s3.get_object(Bucket=bucket, Key=k)["Body"].read(), tmp_path)
                     for u in re.findall(r"user-\d{4}", text)}
    users, in_clickstream = _per_user_of(env, dataset, *lake), _per_user(env, *lake)
    subject = max(in_quarantine & set(users) & set(in_clickstream), key=lambda u: (users[u], u))

    reference = tmp_path / "reference"
    (reference / "landing" / dataset).mkdir(parents=True)
    for path in (local / "landing" / DATASET).iterdir():
        (reference / "landing" / dataset / path.name).write_text(
            "".join(line for line in path.read_text().splitlines(True) if f'"{subject}"' not in line))
    _cli(env, "run-all", "--lake-uri", str(reference), "--dataset", dataset, "--allow-warn", timeout=1200)

    erased_run = _cli(env, "erase", *lake, "--dataset", dataset, "--subject", f"user_id={subject}", "--json",
                      timeout=1200)
    receipt = json.loads(erased_run.stdout)
    assert receipt["status"] == "completed" and list(receipt["datasets"]) == [dataset]
    assert f"to erase it there: the same command with --dataset {DATASET}" in erased_run.stderr
    left_out = receipt["verification"]["outside_request"]
    assert list(left_out) == [DATASET] and left_out[DATASET]["versions"] >= 1
    assert all(k.startswith((f"landing/{DATASET}/", f"bronze/{DATASET}/", f"quarantine/{DATASET}/",
                             f"silver/{DATASET}/", f"gold/{DATASET}_", f"checkpoints/{DATASET}/"))
               for k in receipt["verification"]["keys_with_subject"])
    assert receipt["verification"]["status"] == "verified; subject data remains in datasets outside this request"
    touched = receipt["datasets"][dataset]
    assert touched["quarantine"]["rows_removed"] >= 1
    assert set(touched["matched"]["quarantine_partitions"]) <= {"2024-01", "2024-02", "__HIVE_DEFAULT_PARTITION__"}
    assert [k for k in _holding(s3, bucket, subject, tmp_path) if f"/{dataset}" in k] == []
    # One query per lake (a JVM each): both gold tables and the silver rows per user.
    sql = " UNION ALL ".join([*(f"SELECT '{gold}' AS t, to_json(struct(*)) AS r FROM gold.{dataset}_{gold}" for gold in GOLD),
                              f"SELECT 'silver' AS t, to_json(struct(user_id, count(*))) AS r FROM silver.{dataset} "
                              "GROUP BY user_id"])
    erased, expected = _rows(env, sql, *lake), _rows(env, sql, "--lake-uri", str(reference))
    assert len(erased) > len(users) and erased == expected


def _per_user_of(env, dataset: str, *lake: str) -> dict[str, int]:
    rows = _rows(env, f"SELECT user_id AS u, count(*) AS n FROM silver.{dataset} GROUP BY user_id", *lake)
    return {json.loads(r)["u"]: json.loads(r)["n"] for r in rows}
