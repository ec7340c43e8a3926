"""spark_jobs/runs/signals.py against the session emulator: the publish metric read back from CloudWatch, the blocked-
publish event delivered by a rule (SQS target) with names and counts and no record value, and an unreachable
endpoint costing the run one warning line. A run's wiring (runtime.job_run, JobRun.validate): a real s3a run in
tests/spark_jobs/test_pipeline_e2e.py; the tenant's own rule: tests/integration/test_orchestration_acme.py."""
from __future__ import annotations

import datetime as dt
import json
import types

import pytest

from spark_jobs.lake.config import LakeConfig
from spark_jobs.quality import LayerValidation
from spark_jobs.runs import signals
from spark_jobs.runs.manifest import RunManifest
from tenant_model import PUBLISH_BLOCKED_DETAIL_TYPE, PUBLISHED_METRIC

NAMESPACE, SOURCE = "tenantlake/signalstest", "tenantlake.signalstest"


@pytest.fixture
def client(aws_env):
    import boto3

    return lambda service: boto3.client(service, region_name="eu-west-1", endpoint_url=aws_env["AWS_ENDPOINT_URL"],
                                        verify=aws_env["AWS_CA_BUNDLE"], aws_access_key_id="testing",
                                        aws_secret_access_key="testing")  # pragma: allowlist secret - the emulator's


def _run(aws_env, published: bool = True, endpoint: str | None = None, lines: list | None = None):
    lake = LakeConfig(lake_uri="s3a://signals-lake", kms_key_arn="k", s3_endpoint=endpoint or aws_env["AWS_ENDPOINT_URL"],
                      ca_bundle=aws_env["AWS_CA_BUNDLE"], metric_namespace=NAMESPACE, event_source=SOURCE)
    finished = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    manifest = RunManifest(run_id="20240501T100000Z-0000abcd", dataset="iot", layer="silver", lake_uri=lake.lake_uri,
                           started_at=finished.isoformat(), code_version="t", published=published,
                           finished_at=finished.isoformat())
    return types.SimpleNamespace(lake=lake, manifest=manifest, contract=types.SimpleNamespace(dataset="iot"),
                                 layer="silver", run_id=manifest.run_id, progress=(lines if lines is not None else []).append,
                                 report_dir="s3a://signals-lake/reports/silver/iot/20240501T100000Z-0000abcd")


def test_a_publish_puts_one_count_for_its_dataset_and_layer(aws_env, client, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")  # pragma: allowlist secret - the emulator's
    run = _run(aws_env)
    assert signals.layer_published(run) is True
    assert signals.layer_published(_run(aws_env, published=False)) is False  # a run that did not publish: nothing
    now = dt.datetime.now(dt.timezone.utc)
    points = client("cloudwatch").get_metric_statistics(
        Namespace=NAMESPACE, MetricName=PUBLISHED_METRIC, StartTime=now - dt.timedelta(hours=1),
        EndTime=now + dt.timedelta(minutes=1), Period=3600, Statistics=["Sum"],
        Dimensions=[{"Name": "Dataset", "Value": "iot"}, {"Name": "Layer", "Value": "silver"}])["Datapoints"]
    assert [p["Sum"] for p in points] == [1.0]


def test_a_blocked_publish_emits_names_and_counts_but_no_value(aws_env, client, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")  # pragma: allowlist secret - the emulator's
    sqs, events = client("sqs"), client("events")
    url = sqs.create_queue(QueueName="signals-blocked")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="signals-blocked", EventPattern=json.dumps({"source": [SOURCE],
                                                                     "detail-type": [PUBLISH_BLOCKED_DETAIL_TYPE]}))
    events.put_targets(Rule="signals-blocked", Targets=[{"Id": "q", "Arn": arn}])
    validation = LayerValidation(status="fail", blocking=True, reason="humidity_range (observed 101.7)", results=[
        {"name": "humidity_range", "rule": "humidity_range", "column": "humidity", "severity": "error",
         "success": False, "unexpected_count": 4, "element_count": 500, "observed_value": 101.7,
         "partial_unexpected_list": [101.7, 140.2]},
        {"name": "battery_max", "rule": None, "column": "battery", "severity": "warn", "success": False,
         "unexpected_count": 9, "element_count": 500, "observed_value": "sensor-007"},
        {"name": "row_count", "severity": "error", "success": True, "observed_value": 500}],
        quarantine={"total": 4, "by_rule": {"humidity_range": 4}, "samples": [{"humidity": 140.2}]})
    assert signals.publish_blocked(_run(aws_env), validation) is True
    [message] = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=2)["Messages"]
    event = json.loads(message["Body"])
    assert (event["source"], event["detail-type"]) == (SOURCE, PUBLISH_BLOCKED_DETAIL_TYPE)
    assert event["detail"] == {
        "dataset": "iot", "layer": "silver", "run_id": "20240501T100000Z-0000abcd",
        "manifest": "s3a://signals-lake/reports/silver/iot/20240501T100000Z-0000abcd/manifest.json",
        "rules": [{"name": "humidity_range", "rule": "humidity_range", "column": "humidity", "severity": "error",
                   "failed_rows": 4, "checked_rows": 500}],  # the failed error-severity rules only
        "quarantined": {"total": 4, "by_rule": {"humidity_range": 4}}}
    for value in ("101.7", "140.2", "sensor-007"):
        assert value not in message["Body"]


def test_an_unreachable_endpoint_costs_one_warning_line_not_the_run(aws_env):
    lines: list[str] = []
    run = _run(aws_env, endpoint="https://127.0.0.1:9", lines=lines)
    assert signals.layer_published(run) is False
    assert signals.publish_blocked(run, LayerValidation(status="fail", blocking=True)) is False
    assert len(lines) == 2 and all(line.startswith("[signals] warning: ") for line in lines)
    assert lines[0].startswith(f"[signals] warning: metric {PUBLISHED_METRIC} of silver iot not sent (")


def test_a_lake_without_names_puts_and_emits_nothing(aws_env):
    run = _run(aws_env)
    run.lake = LakeConfig(lake_uri="s3a://signals-lake")
    assert signals.layer_published(run) is False
    assert signals.publish_blocked(run, LayerValidation(status="fail", blocking=True)) is False
