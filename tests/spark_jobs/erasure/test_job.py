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

from infra.local.network import fixture_ids
from spark_jobs.io.iceberg_files import read_avro
from tests import shell
from tests.conftest import REPO_ROOT, TEST_STATE_DIR, run_make

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]
TENANT = "eraseco"
SUBJECT = "user-0016"  # in seed 42's data: silver rows, a malformed (quarantined) record, several files
SCRATCH = TEST_STATE_DIR / "erasure-tenants"
DATASET = "clickstream"
GOLD = ("clickstream_site_hourly", "clickstream_user_sessions")


def _tenant_file() -> str:
    return (f'include "root" {{\n  path = find_in_parent_folders("root.hcl")\n}}\ninputs = {{\n'
            f'  tenant_id           = "{TENANT}"\n  region              = "eu-west-1"\n'
            f'  data_classification = ["gdpr"]\n  account_id          = "123456789012"\n'
            f'  vpc_ids             = ["{fixture_ids.fixture_vpc_id(TENANT)}"]\n}}\n')


def _cli(env, *args, timeout=900, expect=0) -> shell.ShellResult:
    result = shell.run([sys.executable, "-m", "spark_jobs", *args], timeout=timeout, env=env)
    assert result.returncode == expect, result.tail(40)
    return result


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


def _per_user(env, *lake: str) -> dict[str, int]:
    rows = _rows(env, "SELECT user_id AS u, count(*) AS n FROM silver.clickstream GROUP BY user_id", *lake)
    return {json.loads(r)["u"]: json.loads(r)["n"] for r in rows}


@pytest.fixture(scope="module")
def tenant(emulator, aws_env):
    import boto3

    from infra.local.s3a_jars import ensure_jars

    (SCRATCH / TENANT).mkdir(parents=True, exist_ok=True)
    (SCRATCH / TENANT / "terragrunt.hcl").write_text(_tenant_file())
    (SCRATCH / "root.hcl").write_text((REPO_ROOT / "tenants" / "root.hcl").read_text())
    run_make("apply", f"TENANT={TENANT}", f"TENANTS_DIR={SCRATCH}").check()
    lake = json.loads((TEST_STATE_DIR / "tenants" / TENANT / "lake.json").read_text())
    env = {**aws_env, "TENANTLAKE_STATE_DIR": str(TEST_STATE_DIR), "SPARK_LOCAL_IP": "127.0.0.1",
           "TENANTLAKE_SPARK_JARS": ",".join(str(j) for j in ensure_jars())}
    s3 = boto3.client("s3", region_name=lake["region"], endpoint_url=aws_env["AWS_ENDPOINT_URL"],
                      verify=aws_env["AWS_CA_BUNDLE"], aws_access_key_id=aws_env["AWS_ACCESS_KEY_ID"],
                      aws_secret_access_key=aws_env["AWS_SECRET_ACCESS_KEY"])
    return {"lake": lake, "env": env, "s3": s3, "bucket": lake["lake_bucket_name"]}


def test_erase_a_user_killed_midway_and_resumed(tenant, tmp_path):
    env, s3, bucket = tenant["env"], tenant["s3"], tenant["bucket"]
    lake = ["--tenant", TENANT]
    _cli(env, "datagen", *lake, "--dataset", DATASET, "--records", "400", "--bad-rate", "0.03")
    _cli(env, "run-all", *lake, "--dataset", DATASET, "--allow-warn", timeout=1200)
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

    dry = _cli(env, "erase", *lake, "--subject", f"user_id={SUBJECT}", "--dry-run")
    assert "dry run, nothing changed" in dry.stdout and "would remove" in dry.stderr
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
    # Gold equals gold computed without the user; other users' silver rows are unchanged.
    for table in GOLD:
        sql = f"SELECT * FROM gold.{table}"
        assert _rows(env, sql, *lake) == _rows(ref_env, sql, "--lake-uri", str(reference)), table
    assert _per_user(env, *lake) == {u: n for u, n in users_before.items() if u != SUBJECT}
    # The receipt is in the lake and in the data-quality index.
    key = f"reports/erasure/{receipt['request_id']}/receipt.json"
    assert json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())["request_id"] == receipt["request_id"]
    index = TEST_STATE_DIR / "dq" / TENANT / "reports"
    assert receipt["request_id"] in (index / "index.html").read_text()
    assert receipt["request_id"] in json.loads((index / "index.json").read_text())["erasure"]
    # The pipeline runs again once the request is done.
    _cli(env, "run", *lake, "--dataset", DATASET, "--layer", "silver", "--allow-warn")
