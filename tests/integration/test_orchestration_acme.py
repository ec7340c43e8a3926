"""The orchestration of an applied tenant (acme enables it), on the emulator: what `make apply` created, the state
machine run by moto's interpreter with only its emr-containers ``.sync`` tasks swapped (moto cannot run that
integration), the alert rules fed events in the shapes AWS documents, and a run made to fail on purpose: it shows in
``status``, and its alert arrives in a test SQS subscription of the tenant's topic, naming the dataset and the layer.

What only AWS can show is listed in modules/README.md ("Orchestration and alerts"): the .sync integration itself,
schedules firing, S3 -> EventBridge -> Step Functions and EventBridge -> SNS deliveries, alarms evaluating.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
import types

import pytest

from infra.deploy import job_deps
from infra.deploy.request import RequestOptions, automation_request, universal_target_input
from infra.deploy.target import target_from_outputs
from modules.alert_rules import emr_job_failed_pattern, pipeline_failed_pattern, publish_blocked_pattern
from modules.pipeline_state_machine import EMR_SYNC_RESOURCE, LAYERS, swap_sync_tasks
from modules.pipeline_triggers import MAX_EVENT_AGE_SECONDS, MAX_RETRY_ATTEMPTS, arrival_pattern
from spark_jobs.lake.config import lake_from_outputs
from spark_jobs.quality import LayerValidation
from spark_jobs.runs import signals
from tests.conftest import REPO_ROOT, TEST_STATE_DIR
from tests.modules.event_examples import EMR_JOB_RUN_STATE_CHANGE, EXECUTION_STATUS_CHANGE, variant
from tenant_model import PUBLISHED_METRIC

pytestmark = pytest.mark.integration
TENANT = "acme"
REGION = "eu-west-1"


@pytest.fixture(scope="module")
def acme(applied_tenant):
    return applied_tenant(TENANT)


@pytest.fixture
def aws(boto_session):
    return lambda service: boto_session(service, REGION)


def _queue(aws, name: str) -> tuple[str, str]:
    sqs = aws("sqs")
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    return url, sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def _messages(aws, url: str, wanted: int, timeout: float = 30.0) -> list[str]:
    bodies: list[str] = []
    deadline = time.monotonic() + timeout
    while len(bodies) < wanted and time.monotonic() < deadline:
        answer = aws("sqs").receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        bodies += [m["Body"] for m in answer.get("Messages", [])]
    return bodies


def _finished(aws, execution_arn: str, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        described = aws("stepfunctions").describe_execution(executionArn=execution_arn)
        if described["status"] != "RUNNING" or time.monotonic() > deadline:
            return described
        time.sleep(0.3)


def _test_machine(aws, acme, name: str, definition: dict) -> str:
    """A copy of the applied state machine (same role) holding ``definition``; its ARN."""
    sfn = aws("stepfunctions")
    applied = sfn.describe_state_machine(stateMachineArn=acme["orchestration"]["state_machine_arn"])
    return sfn.create_state_machine(name=name, definition=json.dumps(definition), roleArn=applied["roleArn"])[
        "stateMachineArn"]


def _applied_definition(aws, acme) -> dict:
    return json.loads(aws("stepfunctions").describe_state_machine(
        stateMachineArn=acme["orchestration"]["state_machine_arn"])["definition"])


def test_apply_creates_every_part_encrypted_with_the_tenant_key(acme, aws):
    orchestration, key = acme["orchestration"], acme["kms_key_arn"]
    assert orchestration["enabled"] is True
    machine = aws("stepfunctions").describe_state_machine(stateMachineArn=orchestration["state_machine_arn"])
    assert machine["roleArn"] == orchestration["runner_role_arn"] and machine["tracingConfiguration"] == {"enabled": True}
    assert machine["loggingConfiguration"]["level"] == "ALL"
    [group] = aws("logs").describe_log_groups(logGroupNamePrefix="/aws/vendedlogs/states/acme-lake-pipeline")["logGroups"]
    assert group["kmsKeyId"] == key
    topic = aws("sns").get_topic_attributes(TopicArn=orchestration["alerts_topic_arn"])["Attributes"]
    assert topic["KmsMasterKeyId"] == key
    assert {s["Sid"] for s in json.loads(topic["Policy"])["Statement"]} == {
        "AccountAdministersTopic", "TenantRulesPublish", "TenantAlarmsPublish", "DenyInsecureTransport"}
    subscriptions = aws("sns").list_subscriptions_by_topic(TopicArn=orchestration["alerts_topic_arn"])["Subscriptions"]
    assert ("email", "acme-data-oncall@example.com") in {(s["Protocol"], s["Endpoint"]) for s in subscriptions}
    for url in (orchestration["trigger_dlq_url"], orchestration["alert_events_queue_url"]):
        assert aws("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["KmsMasterKeyId"])["Attributes"] == \
            {"KmsMasterKeyId": key}
    # The job role may put the freshness metric and the blocked-publish event.
    job_role = acme["job_execution_role_arn"].rsplit("/", 1)[1]
    assert "pipeline-signals" in aws("iam").list_role_policies(RoleName=job_role)["PolicyNames"]


def test_the_contracts_triggers_start_the_state_machine_with_retries_and_a_dead_letter_queue(acme, aws):
    orchestration = acme["orchestration"]
    machine, dlq = orchestration["state_machine_arn"], f"arn:aws:sqs:{REGION}:123456789012:acme-lake-trigger-dlq"
    retry = {"MaximumRetryAttempts": MAX_RETRY_ATTEMPTS, "MaximumEventAgeInSeconds": MAX_EVENT_AGE_SECONDS}
    assert orchestration["schedules"] == {"clickstream": "acme-clickstream-pipeline",
                                          "inventory": "acme-inventory-pipeline"}
    schedule = aws("scheduler").get_schedule(Name="acme-inventory-pipeline", GroupName="default")
    assert (schedule["ScheduleExpression"], schedule["ScheduleExpressionTimezone"]) == \
        ("cron(30 6 * * ? *)", "Europe/Dublin")
    assert schedule["FlexibleTimeWindow"] == {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 15}
    assert schedule["KmsKeyArn"] == acme["kms_key_arn"]
    target = schedule["Target"]
    assert (target["Arn"], target["RoleArn"]) == (machine, orchestration["scheduler_role_arn"])
    assert target["RetryPolicy"] == retry and target["DeadLetterConfig"] == {"Arn": dlq}
    assert json.loads(target["Input"]) == {"dataset": "inventory", "trigger": "schedule",
                                           "time": "<aws.scheduler.scheduled-time>"}
    events = aws("events")
    assert orchestration["arrival_rules"] == {"clickstream": "acme-clickstream-arrival", "iot": "acme-iot-arrival"}
    for dataset, rule in orchestration["arrival_rules"].items():
        assert json.loads(events.describe_rule(Name=rule)["EventPattern"]) == \
            arrival_pattern(acme["lake_bucket_name"], dataset)
        [arrival] = events.list_targets_by_rule(Rule=rule)["Targets"]
        assert (arrival["Arn"], arrival["RoleArn"]) == (machine, orchestration["events_role_arn"])
        assert arrival["RetryPolicy"] == retry and arrival["DeadLetterConfig"] == {"Arn": dlq}
        assert arrival["InputTransformer"]["InputPathsMap"] == {"time": "$.time"}


def test_the_alert_rules_and_alarms_are_the_tenants(acme, aws):
    orchestration, events = acme["orchestration"], aws("events")
    expected = {"acme-emr-job-failed": emr_job_failed_pattern(acme["emr_virtual_cluster_id"]),
                "acme-pipeline-failed": pipeline_failed_pattern(orchestration["state_machine_arn"]),
                "acme-publish-blocked": publish_blocked_pattern("tenantlake.acme")}
    assert set(orchestration["alert_rules"].values()) == set(expected)
    for rule, pattern in expected.items():
        assert json.loads(events.describe_rule(Name=rule)["EventPattern"]) == pattern
        [target] = events.list_targets_by_rule(Rule=rule)["Targets"]
        assert target["Id"] == "local-alert-events"  # moto delivers to SQS, not SNS (modules/alert_rules.py)
    alarms = aws("cloudwatch").describe_alarms(AlarmNames=sorted(orchestration["freshness_alarms"].values()))
    by_name = {a["AlarmName"]: a for a in alarms["MetricAlarms"]}
    for dataset, minutes in orchestration["freshness_minutes"].items():
        alarm = by_name[f"acme-{dataset}-freshness"]
        assert (alarm["Namespace"], alarm["MetricName"], alarm["Period"]) == \
            ("tenantlake/acme", PUBLISHED_METRIC, minutes * 60)
        assert alarm["TreatMissingData"] == "breaching" and alarm["AlarmActions"] == [orchestration["alerts_topic_arn"]]


def test_each_layer_runs_the_deploys_request_in_order_once_per_window(acme, aws):
    definition = _applied_definition(aws, acme)
    python = job_deps.target_for_release(job_deps.DEFAULT_RELEASE_LABEL, job_deps.DEFAULT_ARCH).interpreter
    target = target_from_outputs(TENANT, acme)
    for dataset in ("iot", "clickstream", "inventory"):
        for layer in LAYERS:
            parameters = definition["States"][f"{dataset}: {layer}"]["Parameters"]
            expected = universal_target_input(automation_request(target, dataset, layer, RequestOptions(python=python)))
            assert {**parameters, "Tags": expected["Tags"]} == expected, (dataset, layer)
    steps_url, _ = _queue(aws, "acme-test-sync-steps")
    swapped = swap_sync_tasks(definition, {"Resource": "arn:aws:states:::sqs:sendMessage",
                                           "Parameters": {"QueueUrl": steps_url, "MessageBody.$": "$$.State.Name"}})
    machine = _test_machine(aws, acme, "acme-lake-pipeline-run-test", swapped)
    sfn = aws("stepfunctions")
    started = [sfn.start_execution(stateMachineArn=machine, name=f"schedule-event-{n}", input=json.dumps(
        {"dataset": "inventory", "trigger": "schedule", "time": "2024-05-01T06:30:00Z"}))["executionArn"] for n in (1, 2)]
    outcomes = [_finished(aws, arn) for arn in started]
    assert [o["status"] for o in outcomes] == ["SUCCEEDED", "SUCCEEDED"]
    assert [json.loads(o["output"]).get("name") for o in outcomes] == ["inventory-schedule-2024-05-01T06-30"] * 2
    run = f"{machine.replace(':stateMachine:', ':execution:')}:inventory-schedule-2024-05-01T06-30"
    assert _finished(aws, run)["status"] == "SUCCEEDED"
    # One run for the scheduled time (the second dispatch found it: Debounced), its layers in order.
    assert _messages(aws, steps_url, 3) == ["inventory: bronze", "inventory: silver", "inventory: gold"]
    names = {e["name"] for e in sfn.list_executions(stateMachineArn=machine)["executions"]}
    assert names == {"schedule-event-1", "schedule-event-2", "inventory-schedule-2024-05-01T06-30"}


def test_a_flush_of_landing_objects_starts_one_run_per_debounce_window(acme, aws):
    swapped = swap_sync_tasks(_applied_definition(aws, acme), {"Type": "Pass"})
    machine = _test_machine(aws, acme, "acme-lake-pipeline-window-test", swapped)
    sfn = aws("stepfunctions")
    times = ["2024-05-01T10:01:02Z", "2024-05-01T10:07:59Z", "2024-05-01T10:09:30Z", "2024-05-01T10:12:00Z"]
    for n, moment in enumerate(times):  # iot's contract: a 10-minute window
        execution = sfn.start_execution(stateMachineArn=machine, name=f"arrival-{n}", input=json.dumps(
            {"dataset": "iot", "trigger": "arrival", "time": moment}))["executionArn"]
        assert _finished(aws, execution)["status"] == "SUCCEEDED"
    runs = {e["name"]: e for e in sfn.list_executions(stateMachineArn=machine)["executions"]
            if not e["name"].startswith("arrival-")}
    assert set(runs) == {"iot-arrival-2024-05-01T10-00", "iot-arrival-2024-05-01T10-10"}
    for run in runs.values():  # each waits out its window (600 s) before bronze: stop it here
        assert run["status"] == "RUNNING"
        sfn.stop_execution(executionArn=run["executionArn"])


def test_a_run_made_to_fail_shows_in_status_and_its_alert_reaches_a_subscription(acme, aws, aws_env):
    env = {**os.environ, **aws_env, "TENANTLAKE_STATE_DIR": str(TEST_STATE_DIR), "SPARK_LOCAL_IP": "127.0.0.1"}
    from infra.local.s3a_jars import ensure_jars

    env["TENANTLAKE_SPARK_JARS"] = ",".join(str(j) for j in ensure_jars())
    # 1. On the emulator's lake: clickstream's silver, run before its bronze ever ran, fails (no input).
    failed = subprocess.run([sys.executable, "-m", "spark_jobs", "run", "--tenant", TENANT, "--dataset", "clickstream",
                             "--layer", "silver"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert failed.returncode == 1 and "bronze clickstream has no data" in failed.stderr, failed.stderr[-2000:]
    # The freshness metric as a publish puts it (spark_jobs/runs/signals.py), and iot's freshness alarm in ALARM.
    aws("cloudwatch").put_metric_data(Namespace="tenantlake/acme", MetricData=[
        signals.published_metric("iot", "silver", dt.datetime.now(dt.timezone.utc))])
    aws("cloudwatch").set_alarm_state(AlarmName="acme-iot-freshness", StateValue="ALARM", StateReason="test")
    status = subprocess.run([sys.executable, "-m", "spark_jobs", "status", "--tenant", TENANT, "--json"], cwd=REPO_ROOT,
                            env=env, capture_output=True, text=True, timeout=120)
    assert status.returncode == 0, status.stderr
    rows = {row["dataset"]: row for row in json.loads(status.stdout)}
    assert set(rows) == {"iot", "clickstream", "inventory"}
    assert (rows["clickstream"]["result"], rows["clickstream"]["failed_layer"]) == ("failed", "silver")
    assert rows["clickstream"]["freshness"] == "never published" and rows["clickstream"]["target_minutes"] == 120
    assert rows["iot"]["cloudwatch_publishes"] == 1 and rows["iot"]["open_alarms"] == ["acme-iot-freshness"]

    # 2. On AWS the state machine runs that layer; here its .sync task is swapped for one that fails the same
    # way every attempt (a queue that does not exist), and its retries wait 1 s instead of 30 (moto's interpreter
    # really sleeps them). The alert goes to the tenant's topic, where a test queue is subscribed.
    url, arn = _queue(aws, "acme-test-alert-subscription")
    aws("sns").subscribe(TopicArn=acme["orchestration"]["alerts_topic_arn"], Protocol="sqs", Endpoint=arn,
                         Attributes={"RawMessageDelivery": "true"})
    definition = swap_sync_tasks(_applied_definition(aws, acme), {"Resource": "arn:aws:states:::sqs:sendMessage",
                                                                   "Parameters": {"QueueUrl": url, "MessageBody": "ok"}})
    definition["States"]["clickstream: silver"]["Parameters"] = {"QueueUrl": url + "-missing", "MessageBody": "x"}
    for state in definition["States"].values():
        for retrier in state.get("Retry", []):
            retrier.update(IntervalSeconds=1, MaxDelaySeconds=1)
    machine = _test_machine(aws, acme, "acme-lake-pipeline-fail-test", definition)
    execution = aws("stepfunctions").start_execution(stateMachineArn=machine, name="clickstream-schedule-test",
                                                     input=json.dumps({"dataset": "clickstream", "trigger": "schedule",
                                                                       "time": "2024-05-01T11:05:00Z", "run": True}))
    outcome = _finished(aws, execution["executionArn"], timeout=120)
    assert (outcome["status"], outcome.get("error")) == ("FAILED", "tenantlake.LayerFailed")
    history = aws("stepfunctions").get_execution_history(executionArn=execution["executionArn"],
                                                         maxResults=1000)["events"]
    attempts = [e for e in history if e["type"] == "TaskScheduled"
                and "missing" in e["taskScheduledEventDetails"]["parameters"]]
    assert len(attempts) == 4  # the first attempt and 3 retries
    bodies = [b for b in _messages(aws, url, 2) if b != "ok"]
    [alert] = [json.loads(b) for b in bodies]
    assert {k: alert[k] for k in ("alert", "tenant", "dataset", "layer", "trigger", "execution")} == {
        "alert": "pipeline layer failed", "tenant": "acme", "dataset": "clickstream", "layer": "silver",
        "trigger": "schedule", "execution": "clickstream-schedule-test"}
    # The error's name only: never a cause, which could quote a record.
    assert set(alert) == {"alert", "tenant", "dataset", "layer", "trigger", "execution", "error"}
    assert alert["error"].startswith("SQS.")


def test_the_alert_rules_turn_events_into_messages_without_a_record_value(acme, aws):
    url = acme["orchestration"]["alert_events_queue_url"]
    aws("sqs").purge_queue(QueueUrl=url)
    emr = variant(EMR_JOB_RUN_STATE_CHANGE, virtualClusterId=acme["emr_virtual_cluster_id"], state="FAILED")
    failed = variant(EXECUTION_STATUS_CHANGE, stateMachineArn=acme["orchestration"]["state_machine_arn"], status="TIMED_OUT")
    entries = [{"Source": e["source"], "DetailType": e["detail-type"], "Detail": json.dumps(e["detail"])}
               for e in (emr, variant(emr, detail_type="EmrContainers Job Run State Change", state="CANCELLED"),
                         variant(emr, state="COMPLETED"), failed)]
    assert aws("events").put_events(Entries=entries)["FailedEntryCount"] == 0

    # The job's own event, as a silver run of iot emits it when validation blocks its publish (what the event reads
    # of the run and of its validation: spark_jobs/jobs/runtime.JobRun, spark_jobs.quality.LayerValidation).
    run = types.SimpleNamespace(lake=lake_from_outputs(acme, "lake.json"), contract=types.SimpleNamespace(dataset="iot"),
                                layer="silver", run_id="20240501T100000Z-0000abcd", progress=print,
                                report_dir="s3a://acme-eu-west-1-lake/reports/silver/iot/20240501T100000Z-0000abcd")
    validation = LayerValidation(status="fail", blocking=True, reason="temperature_range (observed 99.5 degrees)",
                                 results=[{"name": "temperature_range", "rule": "temperature_range",
                                           "column": "temperature", "severity": "error", "success": False,
                                           "unexpected_count": 7, "element_count": 200,
                                           "observed_value": "99.5 degrees", "partial_unexpected_list": [99.5]}],
                                 quarantine={"total": 7, "by_rule": {"temperature_range": 7}})
    assert signals.publish_blocked(run, validation)
    messages = [json.loads(b) for b in _messages(aws, url, 4)]
    by_alert = {m["alert"]: m for m in messages}
    assert sorted(by_alert) == ["EMR on EKS job run CANCELLED", "EMR on EKS job run FAILED",
                                "pipeline execution TIMED_OUT", "publish blocked by validation"]
    assert by_alert["EMR on EKS job run FAILED"]["job_run"] == "acme-iot-silver-auto"  # the run names dataset, layer
    assert by_alert["pipeline execution TIMED_OUT"]["execution"] == "iot-arrival-2024-05-01T10-00"
    blocked = by_alert["publish blocked by validation"]
    assert (blocked["dataset"], blocked["layer"], blocked["tenant"]) == ("iot", "silver", "acme")
    assert blocked["rules"] == [{"name": "temperature_range", "rule": "temperature_range", "column": "temperature",
                                 "severity": "error", "failed_rows": 7, "checked_rows": 200}]
    assert blocked["quarantined"] == {"total": 7, "by_rule": {"temperature_range": 7}}
    assert "99.5" not in json.dumps(messages)
