"""200 daily runs committed to an Iceberg table on s3a (the session emulator, the Hadoop catalog), then
``maintain``: data files, manifests and snapshots go down, every row stays (count and content hash), and
the run's report lands in the lake and in the tenant's data-quality index.

The workload is the maintenance benchmark's (``bench/maintenance.py``) at 200 runs of 20 rows: one Spark
job writes every day's file, then each day is committed as its own append snapshot (Iceberg's API), so
the test costs 200 commits, not 200 Spark jobs. It runs in a subprocess: its own JVM with the s3a jars.
"""
from __future__ import annotations

import json
import sys

import pytest

from tests import shell
from tests.conftest import REPO_ROOT, TEST_STATE_DIR

# One test of 130 to 150 s in the last whole runs (tests/README.md, runs 6 and 7), 6 to 9 minutes before the
# emulator kept connections alive: the 1800 s keeps a margin on a busier machine than those.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]
RUNS, ROWS_PER_RUN = 200, 20
BUCKET = "tenantlake-test-daily-runs"
REGION = "eu-west-1"


@pytest.fixture
def lake_config(emulator, aws_env, boto_session, tmp_path_factory):
    key_arn = boto_session("kms").create_key(Description="daily runs test key")["KeyMetadata"]["Arn"]
    boto_session("s3").create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    path = tmp_path_factory.mktemp("daily-runs") / "lake.json"
    path.write_text(json.dumps({"tenant_id": "dailyruns", "region": REGION, "lake_bucket_name": BUCKET,
                                "kms_key_arn": key_arn, "s3_endpoint": emulator.endpoint,
                                "ca_bundle": emulator.ca_bundle, "truststore": emulator.truststore}))
    return path


def test_maintain_after_200_daily_runs_keeps_every_row(lake_config, aws_env, boto_session):
    from infra.local.s3a_jars import ensure_jars

    env = {**aws_env, "TENANTLAKE_STATE_DIR": str(TEST_STATE_DIR), "SPARK_LOCAL_IP": "127.0.0.1",
           "TENANTLAKE_SPARK_JARS": ",".join(str(j) for j in ensure_jars())}
    done = shell.run([sys.executable, "-m", "bench.maintenance", "--runs", str(RUNS), "--rows-per-run",
                      str(ROWS_PER_RUN), "--scan-repeats", "0", "--lake-config", str(lake_config), "--no-result",
                      "--json"], cwd=REPO_ROOT, env=env, timeout=1800)
    assert done.returncode == 0, done.tail()
    result = json.loads(done.stdout)
    before, after = result["before"], result["after"]
    assert result["small_input_session"] is True  # sized as `maintain` sizes it: 4,000 rows are small
    # 200 runs: one file and one snapshot each (plus nothing else: the table was created empty).
    assert result["files"] == RUNS and (before["snapshots"], before["data_files"]) == (RUNS, RUNS)
    assert before["retained_data_files"] == RUNS and before["manifests"] > 1
    # After: one file per month of the 200 days (2024-01-01 .. 2024-07-18), one manifest, one snapshot.
    assert (after["data_files"], after["retained_data_files"], after["manifests"], after["snapshots"]) == (7, 7, 1, 1)
    assert after["retained_data_bytes"] < before["retained_data_bytes"]
    # Every row unchanged: the same count and the same content hash, read back from the data files.
    assert before["fingerprint"] == after["fingerprint"] and after["fingerprint"]["rows"] == RUNS * ROWS_PER_RUN
    assert before["records"] == after["records"] == RUNS * ROWS_PER_RUN
    assert result["procedures"]["rewritten_data_files"] == RUNS and result["procedures"]["added_data_files"] == 7
    assert result["procedures"]["expired_data_files"] == RUNS and result["procedures"]["orphan_files_removed"] == 0

    # The report: in the lake (SSE-KMS with the tenant key, as every s3a write) and in the local index.
    key = result["report"].removeprefix(f"s3a://{BUCKET}/")
    assert key.startswith("reports/maintenance/") and key.endswith("/report.json")
    obj = boto_session("s3").get_object(Bucket=BUCKET, Key=key)
    assert obj["ServerSideEncryption"] == "aws:kms"
    report = json.loads(obj["Body"].read())
    assert report["status"] == "completed" and report["datasets"] == ["iot"]
    [table] = report["tables"]
    assert table["table"] == "silver.iot" and table["before"]["data_files"] == RUNS and table["after"]["data_files"] == 7
    assert report["totals"]["before"]["data_bytes"] == before["data_bytes"]
    assert report["totals"]["after"]["data_bytes"] == after["data_bytes"]
    mirror = TEST_STATE_DIR / "dq" / "dailyruns" / "reports"
    index = json.loads((mirror / "index.json").read_text())
    assert index["maintenance"]["run_id"] == report["run_id"]
    page = (mirror / "index.html").read_text()
    assert f'data-maintenance="{report["run_id"]}"' in page and "Table maintenance" in page
