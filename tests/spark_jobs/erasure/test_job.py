"""`python -m spark_jobs erase` end to end on the emulator, on a gdpr tenant of its own (eraseco).

Clickstream data for 59 users (with malformed, quarantined and duplicate records) goes through run-all.
Then one user is erased: the first attempt is SIGKILLed in the middle of its rewrites, a pipeline run is
refused while the request holds the dataset, and the same command run again completes. The test then
checks, with its own readers (readers.py: DuckDB for Parquet, the Avro reader for Iceberg manifests,
text for the rest), that no current or noncurrent version of any object in the bucket holds the user's
id; that gold equals gold computed (on a separate lake) from the landing data without that user; that
every other user's silver rows are unchanged; and that the receipt is in the report index.

The erasure run `make deploy-jobs` submits is in test_job_deploy.py, and a dataset stored by month in
test_job_by_month.py: modules of their own, so pytest-xdist workers (a module per unit) can run them side
by side, each worker on its own emulator and eraseco lake.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO_ROOT, TEST_STATE_DIR
from tests.spark_jobs.erasure.conftest import TENANT, cli
from tests.spark_jobs.erasure.readers import DATASET, GOLD, SUBJECT, gold_and_users, holding, per_user

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]


def test_only_hits_in_a_dataset_the_request_left_out_are_set_apart():
    """``erase --dataset D`` scans the whole bucket; a hit in another dataset's own objects is named in the
    receipt, not counted against the request. Anything else (a similar name, a report) still is."""
    from spark_jobs.contract.model import load_contract
    from spark_jobs.erasure.job import _outside_request
    from spark_jobs.io.s3 import ObjectVersion as Version

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
    users_before = per_user(env, *lake)
    assert users_before[SUBJECT] > 0
    before = holding(s3, bucket, SUBJECT, tmp_path)
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
    cli(ref_env, "run-all", "--lake-uri", str(reference), "--dataset", DATASET, "--allow-warn", timeout=1200)

    # A pipeline run in progress (its lease; finished runs leave none) stops a new request, which changes nothing.
    runs_prefix = f"checkpoints/{DATASET}/runs/"
    leases = s3.list_objects_v2(Bucket=bucket, Prefix=runs_prefix).get("Contents", [])
    assert [o["Key"] for o in leases if o["Key"].endswith(".lease")] == []  # (s3a leaves a folder marker)
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    s3.put_object(Bucket=bucket, Key=f"{runs_prefix}other.lease", ServerSideEncryption="aws:kms",
                  SSEKMSKeyId=tenant["lake"]["kms_key_arn"],
                  Body=json.dumps({"layer": "silver", "host": "elsewhere", "pid": 1, "since": since}).encode())
    busy = cli(env, "erase", *lake, "--subject", f"user_id={SUBJECT}", expect=2)
    assert "a silver run is in progress" in busy.stderr and f"{runs_prefix}other.lease" in busy.stderr
    assert s3.list_objects_v2(Bucket=bucket, Prefix=f"checkpoints/{DATASET}/erasure.lock").get("KeyCount", 0) == 0
    assert holding(s3, bucket, SUBJECT, tmp_path) == before
    s3.delete_object(Bucket=bucket, Key=f"{runs_prefix}other.lease")

    dry = cli(env, "erase", *lake, "--subject", f"user_id={SUBJECT}", "--dry-run")
    assert "dry run, nothing changed" in dry.stdout and "would touch" in dry.stderr
    assert "a session for small inputs" in dry.stderr  # every version in the bucket, listed before the JVM starts
    # user-001 is nobody: a prefix of user-0010 ... user-0019, whose records stay out of it (issue 31). Nor is
    # USER-0010: user_id has no case rule, so it is not user-0010, whose records stay out of it too (issue 40).
    assert users_before["user-0010"] > 0
    nobody = json.loads(cli(env, "erase", *lake, "--subject", "user_id=user-001", "--subject", "user_id=USER-0010",
                            "--dry-run", "--json").stdout)
    assert nobody["datasets"][DATASET]["would_touch"] == {"bronze": {}, "quarantine": {}, "landing_files": [],
                                                          "event_dates": [], "silver": {}}
    assert holding(s3, bucket, SUBJECT, tmp_path) == before  # nothing touched

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

    refused = cli(env, "run", *lake, "--dataset", DATASET, "--layer", "silver", expect=1)
    assert "erasure request er-" in refused.stderr and "is in progress on this dataset" in refused.stderr

    done = cli(env, "erase", *lake, "--subject", f"user_id={SUBJECT}", "--json", timeout=1200)
    receipt = json.loads(done.stdout)
    assert receipt["status"] == "completed" and receipt["verification"]["versions_with_subject"] == 0
    assert "resuming" in done.stderr
    assert SUBJECT not in done.stdout and all(len(s["subject_hash"]) == 64 for s in receipt["subjects"])
    touched = receipt["datasets"][DATASET]
    assert touched["silver"]["rows_deleted"] == users_before[SUBJECT]
    assert touched["bronze"]["rows_removed"] >= users_before[SUBJECT] and touched["quarantine"]["rows_removed"] >= 1
    assert receipt["object_versions_removed"] > 0

    # Nothing of the user left anywhere, by the test's own reading of every version.
    assert holding(s3, bucket, SUBJECT, tmp_path) == []
    # Gold equals gold computed without the user; other users' silver rows are unchanged (a query per lake).
    gold, users_after = gold_and_users(env, *lake)
    assert gold == gold_and_users(ref_env, "--lake-uri", str(reference))[0]
    assert {table for table, _ in gold} == set(GOLD)
    assert users_after == {u: n for u, n in users_before.items() if u != SUBJECT}
    # The receipt is in the lake and in the data-quality index.
    key = f"reports/erasure/{receipt['request_id']}/receipt.json"
    assert json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())["request_id"] == receipt["request_id"]
    index = TEST_STATE_DIR / "dq" / TENANT / "reports"
    assert receipt["request_id"] in (index / "index.html").read_text()
    assert receipt["request_id"] in json.loads((index / "index.json").read_text())["erasure"]
    # The pipeline runs again once the request is done.
    cli(env, "run", *lake, "--dataset", DATASET, "--layer", "silver", "--allow-warn")
