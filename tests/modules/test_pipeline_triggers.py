"""modules/pipeline_triggers.py: a schedule per dataset with trigger.schedule, an arrival rule per dataset with
trigger.on_arrival (its pattern against S3's documented Object Created event), their roles, retries and dead-letter
queue, all off unless var.orchestration.enabled."""
from __future__ import annotations

import json

from modules.pipeline_triggers import (
    MAX_EVENT_AGE_SECONDS, MAX_RETRY_ATTEMPTS, arrival_input_template, arrival_pattern, schedule_input,
)
from tests.modules.event_examples import S3_OBJECT_CREATED, matches, variant
from tests.modules.helpers import condition, document_statements, json_policy_statements, resource

ENABLED = "${{for k, v in local.%s : k => v if var.orchestration.enabled}}"


def test_the_arrival_pattern_matches_created_objects_under_the_datasets_landing_prefix_only():
    pattern = arrival_pattern("acme-eu-west-1-lake", "iot")
    assert matches(pattern, S3_OBJECT_CREATED)
    assert not matches(pattern, variant(S3_OBJECT_CREATED, object={"key": "landing/iot_extra/x.json"}))
    assert not matches(pattern, variant(S3_OBJECT_CREATED, object={"key": "bronze/iot/x.parquet"}))
    assert not matches(pattern, variant(S3_OBJECT_CREATED, bucket={"name": "globex-eu-west-1-lake"}))
    assert not matches(pattern, variant(S3_OBJECT_CREATED, detail_type="Object Deleted"))


def test_the_inputs_name_the_dataset_the_trigger_and_the_time():
    assert json.loads(schedule_input("inventory")) == {"dataset": "inventory", "trigger": "schedule",
                                                      "time": "<aws.scheduler.scheduled-time>"}
    rendered = arrival_input_template("iot").replace("<time>", json.dumps(S3_OBJECT_CREATED["time"]))
    assert json.loads(rendered) == {"dataset": "iot", "trigger": "arrival", "time": "2024-05-01T10:03:27Z"}


def test_the_contracts_triggers_become_schedules_and_rules(tenant_module):
    schedules = tenant_module["locals"]["pipeline_schedules"]
    assert set(schedules) == {"clickstream", "inventory"}
    assert schedules["inventory"]["cron"] == "cron(30 6 * * ? *)"
    assert schedules["inventory"]["timezone"] == "Europe/Dublin"
    assert set(tenant_module["locals"]["pipeline_arrivals"]) == {"iot", "clickstream"}
    schedule = resource(tenant_module, "aws_scheduler_schedule", "triggers_schedule")
    assert schedule["for_each"] == ENABLED % "pipeline_schedules"
    assert schedule["name"] == "${var.tenant_id}-${each.key}-pipeline"
    assert schedule["kms_key_arn"] == "${aws_kms_key.kms_key.arn}"
    target = schedule["target"]
    assert target["arn"].endswith(":stateMachine:${var.tenant_id}-lake-pipeline")
    assert target["retry_policy"] == {"maximum_retry_attempts": MAX_RETRY_ATTEMPTS,
                                      "maximum_event_age_in_seconds": MAX_EVENT_AGE_SECONDS}
    assert target["dead_letter_config"]["arn"].endswith(":${var.tenant_id}-lake-trigger-dlq")
    rule = resource(tenant_module, "aws_cloudwatch_event_rule", "triggers_arrival_rule")
    assert rule["for_each"] == ENABLED % "pipeline_arrivals" and rule["name"] == "${var.tenant_id}-${each.key}-arrival"
    arrival = resource(tenant_module, "aws_cloudwatch_event_target", "triggers_arrival_target")
    assert arrival["role_arn"] == "${aws_iam_role.triggers_events_role[0].arn}"
    assert arrival["retry_policy"] == target["retry_policy"]
    assert arrival["input_transformer"]["input_paths"] == {"time": "$.time"}
    queue = resource(tenant_module, "aws_sqs_queue", "triggers_dlq")
    assert queue["kms_master_key_id"] == "${aws_kms_key.kms_key.arn}" and queue["count"] == \
        "${var.orchestration.enabled ? 1 : 0}"


def test_the_roles_start_the_tenants_state_machine_only(tenant_module):
    machine = "arn:${data.aws_partition.inputs_partition.partition}:states:${var.region}:${var.account_id}:" \
              "stateMachine:${var.tenant_id}-lake-pipeline"
    scheduler = document_statements(tenant_module, "triggers_scheduler_permissions")
    assert scheduler["StartTenantPipeline"]["resources"] == [machine]
    assert set(scheduler) == {"StartTenantPipeline", "DeadLetterFailedStarts", "UseTenantKeyForInputAndQueue"}
    events = document_statements(tenant_module, "triggers_events_permissions")
    assert events == {"StartTenantPipeline": {**events["StartTenantPipeline"], "resources": [machine]}}
    [trust] = document_statements(tenant_module, "triggers_events_trust").values()
    assert condition(trust, "ArnLike", "aws:SourceArn") == [
        "arn:${data.aws_partition.inputs_partition.partition}:events:${var.region}:${var.account_id}:rule/"
        "${var.tenant_id}-*-arrival"]
    dlq = json_policy_statements(resource(tenant_module, "aws_sqs_queue_policy", "triggers_dlq_policy")["policy"])
    assert dlq["TenantRulesDeadLetter"]["Principal"] == {"Service": ["events.amazonaws.com"]}
    assert dlq["TenantRulesDeadLetter"]["Condition"]["ArnLike"]["aws:SourceArn"].endswith(":rule/${var.tenant_id}-*")
    assert dlq["DenyInsecureTransport"]["Effect"] == "Deny"
