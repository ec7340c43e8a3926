"""make dq-report's lake sync: reports in the tenant's bucket (on the emulator) land in the mirror and index."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests import shell

from .test_index import summary

pytestmark = pytest.mark.integration
REPO_ROOT = __import__("pathlib").Path(__file__).resolve().parents[3]


def test_dq_report_pulls_reports_from_the_lake_and_prints_the_index_url(emulator, aws_env, boto_session, tmp_path):
    s3 = boto_session("s3")
    bucket = "tenantlake-acme-sync-test"
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    run = summary("20261121T100000Z-0000aaaa", "fail", ["sensor_id_regex"])
    s3.put_object(Bucket=bucket, Key=f"reports/silver/iot/{run['run_id']}/summary.json", Body=json.dumps(run))
    s3.put_object(Bucket=bucket, Key=f"reports/silver/iot/{run['run_id']}/summary.html", Body=b"<html></html>")
    s3.put_object(Bucket=bucket, Key=f"reports/silver/iot/{run['run_id']}/part.parquet", Body=b"PAR1")
    state = tmp_path / "state"
    (state / "tenants" / "acme").mkdir(parents=True)
    (state / "tenants" / "acme" / "lake.json").write_text(json.dumps({
        "lake_bucket_name": bucket, "region": "eu-west-1", "s3_endpoint": emulator.endpoint,
        "ca_bundle": aws_env["AWS_CA_BUNDLE"]}))
    env = {"PATH": "/usr/bin:/bin", "TENANTLAKE_STATE_DIR": str(state), "HOME": str(tmp_path)}
    result = shell.make("dq-report", "TENANT=acme", timeout=120, env=env, inherit=False).check()
    index = state / "dq" / "acme" / "reports" / "index.html"
    assert result.stdout.strip() == index.resolve().as_uri()
    assert "pulled 2 new report files" in result.stderr
    assert not (state / "dq" / "acme" / "reports" / "silver" / "iot" / run["run_id"] / "part.parquet").exists()
    assert 'tr data-run="20261121T100000Z-0000aaaa"' in index.read_text()
    again = subprocess.run([sys.executable, "-m", "spark_jobs.quality", "index", "--tenant", "acme"], cwd=REPO_ROOT,
                           env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "pulled 0 new report files" in again.stderr
