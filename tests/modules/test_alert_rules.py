"""modules/alert_rules.py: the three alert rules' patterns against example events in the shapes AWS documents
(tests/modules/event_examples.py), their messages, and their targets (the topic on AWS, a queue of their own on
the local emulator). What the applied rules deliver: tests/integration/test_orchestration_acme.py."""
from __future__ import annotations

import json

import pytest

from modules.alert_rules import (
    EMR_JOB_DETAIL_TYPES, emr_job_failed_pattern, pipeline_failed_pattern, publish_blocked_pattern, rules,
)
from tests.modules.event_examples import EMR_JOB_RUN_STATE_CHANGE, EXECUTION_STATUS_CHANGE, matches, variant
from tests.modules.helpers import json_policy_statements, resource
from tenant_model import PUBLISH_BLOCKED_DETAIL_TYPE

MACHINE = "arn:aws:states:eu-west-1:123456789012:stateMachine:acme-lake-pipeline"


@pytest.mark.parametrize("detail_type", EMR_JOB_DETAIL_TYPES)
def test_an_emr_run_of_the_tenants_cluster_that_failed_or_was_cancelled_matches(detail_type):
    pattern = emr_job_failed_pattern("vc123")
    for state in ("FAILED", "CANCELLED"):
        assert matches(pattern, variant(EMR_JOB_RUN_STATE_CHANGE, detail_type=detail_type, state=state))
    for state in ("COMPLETED", "RUNNING", "CANCEL_PENDING", "SUBMITTED", "PENDING"):
        assert not matches(pattern, variant(EMR_JOB_RUN_STATE_CHANGE, detail_type=detail_type, state=state))
    assert not matches(pattern, variant(EMR_JOB_RUN_STATE_CHANGE, detail_type=detail_type, virtualClusterId="vc999"))
    assert not matches(pattern, variant(EMR_JOB_RUN_STATE_CHANGE, detail_type="EMR Job Run New Driver Attempt"))


def test_an_execution_of_the_tenants_state_machine_that_did_not_succeed_matches():
    pattern = pipeline_failed_pattern(MACHINE)
    for status in ("FAILED", "TIMED_OUT", "ABORTED"):
        assert matches(pattern, variant(EXECUTION_STATUS_CHANGE, status=status))
    for status in ("SUCCEEDED", "RUNNING"):
        assert not matches(pattern, variant(EXECUTION_STATUS_CHANGE, status=status))
    assert not matches(pattern, variant(EXECUTION_STATUS_CHANGE, stateMachineArn=MACHINE.replace("acme", "globex")))


def test_a_blocked_publish_matches_the_tenants_own_source_only():
    event = {"version": "0", "id": "1", "detail-type": PUBLISH_BLOCKED_DETAIL_TYPE, "source": "tenantlake.acme",
             "account": "123456789012", "time": "2024-05-01T10:00:00Z", "region": "eu-west-1", "resources": [],
             "detail": {"dataset": "iot", "layer": "silver"}}
    assert matches(publish_blocked_pattern("tenantlake.acme"), event)
    assert not matches(publish_blocked_pattern("tenantlake.acme"), {**event, "source": "tenantlake.globex"})


def test_each_message_is_json_naming_the_tenant_and_no_record_value():
    for key, rule in rules("acme", "vc123", MACHINE, "tenantlake.acme").items():
        sample = rule["template"]
        for name in rule["paths"]:  # fill every placeholder as EventBridge would (strings quoted in the template)
            sample = sample.replace(f"<{name}>", "[]" if name in ("rules",) else "{}" if name == "quarantined" else "x")
        message = json.loads(sample)
        assert message["tenant"] == "acme" and message["alert"], key
        # Which fields of the event reach the message: names, ids, states and times, counts; never a record value.
        assert set(rule["paths"].values()) <= {
            "$.detail.id", "$.detail.name", "$.detail.state", "$.detail.virtualClusterId", "$.time", "$.detail.status",
            "$.detail.dataset", "$.detail.layer", "$.detail.run_id", "$.detail.manifest", "$.detail.rules",
            "$.detail.quarantined"}, key


def test_the_targets_are_the_topic_on_aws_and_a_queue_of_their_own_locally(tenant_module):
    topic = resource(tenant_module, "aws_cloudwatch_event_target", "alert_rules_alerts_topic")
    local = resource(tenant_module, "aws_cloudwatch_event_target", "alert_rules_local_alert_events")
    assert topic["for_each"] == ('${{for k, v in local.alert_rules : k => v if var.orchestration.enabled && '
                                 '!(var.environment == "local")}}')
    assert local["for_each"] == ('${{for k, v in local.alert_rules : k => v if var.orchestration.enabled && '
                                 '(var.environment == "local")}}')
    assert topic["arn"] == '${join("", aws_sns_topic.alerts_topic[*].arn)}'
    for target in (topic, local):
        assert target["retry_policy"] == {"maximum_retry_attempts": 3, "maximum_event_age_in_seconds": 3600}
        assert target["dead_letter_config"]["arn"] == '${join("", aws_sqs_queue.triggers_dlq[*].arn)}'
    assert set(tenant_module["locals"]["alert_rules"]) == {
        "${var.tenant_id}-emr-job-failed", "${var.tenant_id}-pipeline-failed", "${var.tenant_id}-publish-blocked"}
    queue = resource(tenant_module, "aws_sqs_queue", "alert_rules_local_queue")
    assert queue["count"] == '${var.orchestration.enabled && (var.environment == "local") ? 1 : 0}'
    assert queue["kms_master_key_id"] == "${aws_kms_key.kms_key.arn}"
    policy = json_policy_statements(resource(tenant_module, "aws_sqs_queue_policy", "alert_rules_local_queue_policy")
                                    ["policy"])
    assert policy["TenantRulesDeliver"]["Condition"]["ArnLike"]["aws:SourceArn"].endswith(":rule/${var.tenant_id}-*")
