"""modules/pipeline_state_machine.py: the definition (window claim, per-layer .sync tasks of the deploy's requests,
retry, alert) and the role, log group and state machine of the synthesized module, all off unless
var.orchestration.enabled. Its runs in moto's interpreter: tests/integration/test_orchestration_acme.py."""
from __future__ import annotations

import json

import pytest

from infra.deploy.request import automation_request, universal_target_input
from infra.deploy.target import DeployTarget
from modules.pipeline_state_machine import (
    EMR_SYNC_RESOURCE, LAYER_FAILED_ERROR, LAYERS, RETRY, DatasetRun, RetryPolicy, definition, swap_sync_tasks,
    window_table,
)
from tests.modules.helpers import condition, document_statements, resource

COUNT = "${var.orchestration.enabled ? 1 : 0}"
TARGET = DeployTarget(tenant_id="acme", region="eu-west-1", bucket="acme-eu-west-1-lake",
                      kms_key_arn="arn:aws:kms:eu-west-1:123456789012:key/k", role_arn="arn:aws:iam::123456789012:role/j",
                      virtual_cluster_id="vc123", log_group="/tenantlake/acme/emr",
                      glue_databases=(("gold", "acme_gold"), ("silver", "acme_silver")))


def _runs() -> list[DatasetRun]:
    requests = {layer: universal_target_input(automation_request(TARGET, "iot", layer)) for layer in LAYERS}
    return [DatasetRun("iot", requests, debounce_minutes=10),
            DatasetRun("inventory", {layer: universal_target_input(automation_request(TARGET, "inventory", layer))
                                     for layer in LAYERS})]


def test_documented_retry_defaults():
    assert RETRY == RetryPolicy(30, 2.0, 3, 300, "FULL")
    assert RETRY.retrier() == {"ErrorEquals": ["States.ALL"], "IntervalSeconds": 30, "BackoffRate": 2.0,
                               "MaxAttempts": 3, "MaxDelaySeconds": 300, "JitterStrategy": "FULL"}


@pytest.mark.parametrize("minutes, minute, start", [(1, 7, "07"), (10, 0, "00"), (10, 9, "00"), (10, 10, "10"),
                                                    (10, 59, "50"), (15, 44, "30"), (60, 59, "00")])
def test_a_minute_falls_in_the_window_that_starts_at_its_floor(minutes, minute, start):
    assert json.loads(window_table(minutes))[minute] == start


def test_each_layer_runs_the_deploys_per_layer_request_with_retry_and_an_alert():
    states = definition(_runs(), "acme", "arn:topic")["States"]
    for dataset in ("iot", "inventory"):
        for index, layer in enumerate(LAYERS):
            task = states[f"{dataset}: {layer}"]
            assert task["Resource"] == EMR_SYNC_RESOURCE
            expected = universal_target_input(automation_request(TARGET, dataset, layer))
            assert {k: v for k, v in task["Parameters"].items() if k != "Tags"} == \
                {k: v for k, v in expected.items() if k != "Tags"}
            assert task["Parameters"]["Tags"] == {**expected["Tags"], "execution.$": "$$.Execution.Name"}
            assert task["Retry"] == [RETRY.retrier()]
            assert task["Catch"] == [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error",
                                      "Next": f"{dataset}: {layer} failed"}]
            assert task["Next"] == (f"{dataset}: {LAYERS[index + 1]}" if index < 2 else f"{dataset}: done")
            alert = states[f"{dataset}: {layer} failed"]["Parameters"]
            # The alert names the dataset and the layer, and the error's name only (its cause may quote data).
            assert alert == {"alert": "pipeline layer failed", "tenant": "acme", "dataset": dataset, "layer": layer,
                             "trigger.$": "$.trigger", "execution.$": "$$.Execution.Name",
                             "error.$": "$.error.Error"}
    assert states["Publish alert"]["Parameters"]["TopicArn"] == "arn:topic"
    assert states["Layer failed"] == {"Type": "Fail", "Error": LAYER_FAILED_ERROR,
                                      "Cause": "a layer failed after its retries; the alert names it"}


def test_an_arrival_run_waits_out_its_window_and_a_scheduled_one_does_not():
    states = definition(_runs(), "acme", "arn:topic")["States"]
    which = states["Which dataset"]["Choices"]
    assert {c["StringEquals"]: c["Next"] for c in which} == {"iot": "iot: arrival?", "inventory": "inventory: bronze"}
    assert states["iot: arrival?"]["Choices"][0]["Next"] == "iot: wait for the window"
    assert states["iot: wait for the window"] == {"Type": "Wait", "Seconds": 600, "Next": "iot: bronze"}
    windows = states["Which window"]["Choices"]
    assert [c["Next"] for c in windows] == ["Window: iot arrival"]  # inventory has no arrival trigger
    assert window_table(10) in states["Window: iot arrival"]["Parameters"]["name.$"]
    assert window_table(1) in states["Window: schedule"]["Parameters"]["name.$"]
    claim = states["Claim the window"]
    assert claim["Catch"][0]["ErrorEquals"] == ["StepFunctions.ExecutionAlreadyExistsException"]
    assert claim["Parameters"]["Input"]["run"] is True


def test_swapping_the_sync_tasks_changes_nothing_else():
    original = definition(_runs(), "acme", "arn:topic")
    swapped = swap_sync_tasks(original, {"Resource": "arn:aws:states:::sqs:sendMessage", "Parameters": {"QueueUrl": "q"}})
    for name, state in original["States"].items():
        if state.get("Resource") == EMR_SYNC_RESOURCE:
            assert swapped["States"][name] == {**state, "Resource": "arn:aws:states:::sqs:sendMessage",
                                               "Parameters": {"QueueUrl": "q"}}
        else:
            assert swapped["States"][name] == state
    assert sum(s.get("Resource") == EMR_SYNC_RESOURCE for s in original["States"].values()) == 6


def test_the_module_holds_it_off_by_default_logged_and_traced(tenant_module):
    role = resource(tenant_module, "aws_iam_role", "pipeline_role")
    machine = resource(tenant_module, "aws_sfn_state_machine", "pipeline_state_machine")
    log_group = resource(tenant_module, "aws_cloudwatch_log_group", "pipeline_log_group")
    assert role["count"] == machine["count"] == log_group["count"] == COUNT
    assert machine["name"] == "${var.tenant_id}-lake-pipeline" and machine["type"] == "STANDARD"
    assert machine["logging_configuration"] == {
        "level": "ALL", "include_execution_data": True,
        "log_destination": "${aws_cloudwatch_log_group.pipeline_log_group[0].arn}:*"}
    assert machine["tracing_configuration"] == {"enabled": True}
    assert log_group["kms_key_id"] == "${aws_kms_key.kms_key.arn}"
    assert log_group["name"] == "/aws/vendedlogs/states/${var.tenant_id}-lake-pipeline"
    states = json.loads(machine["definition"])["States"]
    # One dataset per packaged contract, each with its three layers.
    assert {name.split(":")[0] for name in states if name.endswith(": bronze")} == {"iot", "clickstream", "inventory"}
    # Its runs put the freshness metric and the blocked-publish event under the tenant's own names.
    arguments = states["iot: silver"]["Parameters"]["JobDriver"]["SparkSubmitJobDriver"]["EntryPointArguments"]
    assert arguments[:5] == ["run", "--dataset", "iot", "--layer", "silver"]
    assert arguments[-4:] == ["--metric-namespace", "tenantlake/${var.tenant_id}", "--event-source",
                              "tenantlake.${var.tenant_id}"]


def test_the_role_starts_runs_on_its_cluster_as_the_job_role_only(tenant_module):
    trust = document_statements(tenant_module, "pipeline_trust")
    [statement] = trust.values()
    assert statement["principals"] == [{"type": "Service", "identifiers": ["states.amazonaws.com"]}]
    assert condition(statement, "ArnEquals", "aws:SourceArn") == [
        "arn:${data.aws_partition.inputs_partition.partition}:states:${var.region}:${var.account_id}:"
        "stateMachine:${var.tenant_id}-lake-pipeline"]
    permissions = document_statements(tenant_module, "pipeline_permissions")
    assert permissions["StartRunsOnTenantCluster"]["resources"] == ["${aws_emrcontainers_virtual_cluster.emr_cluster.arn}"]
    assert condition(permissions["StartRunsOnTenantCluster"], "ArnEquals", "emr-containers:ExecutionRoleArn") == [
        "${aws_iam_role.roles_job_execution.arn}"]
    assert permissions["WatchAndCancelItsRuns"]["resources"] == [
        "${aws_emrcontainers_virtual_cluster.emr_cluster.arn}/jobruns/*"]
    assert permissions["PassJobRoleToEmr"]["resources"] == ["${aws_iam_role.roles_job_execution.arn}"]
    assert condition(permissions["EncryptAlertsThroughSns"], "StringEquals", "kms:ViaService") == [
        "sns.${var.region}.amazonaws.com"]
    # Only the vended-log and X-Ray actions, which take no resource, name "*".
    wildcard = {sid for sid, s in permissions.items() if s["resources"] == ["*"]}
    assert wildcard == {"DeliverExecutionLogs", "SendTraces"}
    assert not any(a.startswith(("s3:", "kms:")) for sid in wildcard for a in permissions[sid]["actions"])
