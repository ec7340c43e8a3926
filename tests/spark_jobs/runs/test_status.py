"""``python -m spark_jobs status``: per dataset the last run, freshness against its contract's target and open
alarms, from run manifests in the lake (written as the jobs write them: ``RunManifest``) and CloudWatch on the
session emulator. The applied tenant's case (a run made to fail on purpose, ``--tenant``):
tests/integration/test_orchestration_acme.py."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from spark_jobs import cli
from spark_jobs.runs import signals
from spark_jobs.runs.manifest import RunManifest

BUCKET = "tenantlake-status-lake"
NAMESPACE = "tenantlake/statustest"


def _manifest(s3, layer: str, dataset: str, started: dt.datetime, status: str = "succeeded", published: bool = True,
              error: str | None = None, blocking: bool = False) -> None:
    run_id = started.strftime("%Y%m%dT%H%M%SZ") + "-0000abcd"
    manifest = RunManifest(run_id=run_id, dataset=dataset, layer=layer, lake_uri=f"s3a://{BUCKET}",
                           started_at=started.isoformat(), code_version="spark_jobs-test", status=status,
                           finished_at=(started + dt.timedelta(minutes=1)).isoformat(), published=published, error=error)
    if blocking:
        manifest.validation = {"silver": {"status": "fail", "blocking": True, "reason": "x_range (observed 99.5)"}}
    s3.put_object(Bucket=BUCKET, Key=f"reports/{layer}/{dataset}/{run_id}/manifest.json", Body=manifest.to_json())


@pytest.fixture(scope="module")
def lake(emulator, aws_env):
    import boto3

    def client(service):
        return boto3.client(service, region_name="eu-west-1", endpoint_url=aws_env["AWS_ENDPOINT_URL"],
                            verify=aws_env["AWS_CA_BUNDLE"], aws_access_key_id="testing",
                            aws_secret_access_key="testing")  # pragma: allowlist secret - the emulator's

    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)  # the manifests' times are relative to it
    s3 = client("s3")
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    # iot: a whole run four hours ago, then silver again 30 minutes ago (target 180 min: fresh).
    for layer in ("bronze", "silver", "gold"):
        _manifest(s3, layer, "iot", now - dt.timedelta(hours=4))
    _manifest(s3, "silver", "iot", now - dt.timedelta(minutes=31))
    # clickstream: published 5 hours ago (target 120 min: stale), then a run whose silver validation blocked.
    _manifest(s3, "silver", "clickstream", now - dt.timedelta(hours=5))
    _manifest(s3, "bronze", "clickstream", now - dt.timedelta(minutes=20))
    _manifest(s3, "silver", "clickstream", now - dt.timedelta(minutes=18), status="failed", published=False,
              error="JobFailed: silver clickstream: validation blocked the publish: x_range (observed 99.5)",
              blocking=True)
    # inventory: its gold failed after bronze and silver; silver published 2 days ago (target 36 h: stale).
    _manifest(s3, "bronze", "inventory", now - dt.timedelta(days=2))
    _manifest(s3, "silver", "inventory", now - dt.timedelta(days=2))
    _manifest(s3, "gold", "inventory", now - dt.timedelta(days=2) + dt.timedelta(minutes=3), status="failed",
              published=False, error="AnalysisException: [PATH_NOT_FOUND] a value 'secret-42' quoted by Spark")
    client("cloudwatch").put_metric_data(Namespace=NAMESPACE, MetricData=[
        signals.published_metric("iot", "silver", now - dt.timedelta(minutes=30))])
    return ["--lake-uri", f"s3a://{BUCKET}", "--kms-key-arn", "arn:aws:kms:eu-west-1:123456789012:key/k",
            "--region", "eu-west-1", "--s3-endpoint", aws_env["AWS_ENDPOINT_URL"], "--ca-bundle",
            aws_env["AWS_CA_BUNDLE"], "--metric-namespace", NAMESPACE]


def test_each_dataset_shows_its_last_run_and_freshness_against_its_target(lake, capsys, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")  # pragma: allowlist secret - the emulator's
    assert cli.main(["status", *lake, "--json"]) == 0
    rows = {row["dataset"]: row for row in json.loads(capsys.readouterr().out)}
    iot, clickstream, inventory = rows["iot"], rows["clickstream"], rows["inventory"]
    assert (iot["result"], iot["last_layer"], iot["freshness"], iot["target_minutes"]) == ("succeeded", "silver", "fresh", 180)
    assert 29 <= iot["age_minutes"] <= 31 and iot["cloudwatch_publishes"] == 1
    assert (clickstream["result"], clickstream["failed_layer"], clickstream["error"]) == \
        ("blocked", "silver", "validation blocked the publish")
    assert clickstream["freshness"] == "STALE" and clickstream["cloudwatch_publishes"] == 0
    assert (inventory["result"], inventory["failed_layer"], inventory["error"]) == ("failed", "gold", "AnalysisException")
    assert inventory["freshness"] == "STALE" and inventory["target_minutes"] == 2160
    assert "secret-42" not in json.dumps(rows)  # an error's message may quote data: only its class is shown


def test_the_table_names_each_dataset_once(lake, capsys, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")  # pragma: allowlist secret - the emulator's
    assert cli.main(["status", *lake, "--dataset", "clickstream", "--dataset", "iot"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("tenant tenantlake-status-lake: 2 dataset(s) at ")
    assert lines[1].split() == ["dataset", "last", "run", "(UTC)", "result", "failed", "layer", "freshness", "(silver)",
                                "CloudWatch", "open", "alarms"]
    by_dataset = {line.split()[0]: line for line in lines[2:]}
    assert "blocked" in by_dataset["clickstream"] and "silver (validation blocked the publish)" in by_dataset["clickstream"]
    assert "STALE: 4 h 5" in by_dataset["clickstream"] and "(target 2 h 00 min)" in by_dataset["clickstream"]
    assert "succeeded (silver)" in by_dataset["iot"] and "fresh: 30 min ago (target 3 h 00 min)" in by_dataset["iot"]


def test_a_folder_lake_is_refused_in_one_line(tmp_path, capsys):
    assert cli.main(["status", "--lake-uri", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"error: status reads a lake in S3 (its run manifests and CloudWatch); " \
                                              f"{tmp_path} is a folder"
