"""modules/alerts_topic.py: the alerts topic, encrypted with the tenant key, published to by the tenant's rules
and alarms only, subscribed from the tenant's inputs; the key admits the same services."""
from __future__ import annotations

from modules.alerts_topic import PUBLISHER_KEY_ACTIONS
from tests.modules.helpers import condition, json_policy_statements, resource


def test_the_topic_is_encrypted_with_the_tenant_key_and_off_by_default(tenant_module):
    topic = resource(tenant_module, "aws_sns_topic", "alerts_topic")
    assert topic["count"] == "${var.orchestration.enabled ? 1 : 0}"
    assert topic["name"] == "${var.tenant_id}-lake-alerts" and topic["kms_master_key_id"] == "${aws_kms_key.kms_key.arn}"
    subscription = resource(tenant_module, "aws_sns_topic_subscription", "alerts_subscription")
    assert subscription["for_each"] == ("${{for i, s in var.orchestration.alert_subscriptions : tostring(i) => s "
                                        "if var.orchestration.enabled}}")
    assert (subscription["protocol"], subscription["endpoint"]) == ("${each.value.protocol}", "${each.value.endpoint}")


def test_only_the_tenants_rules_and_alarms_of_this_account_publish(tenant_module):
    policy = json_policy_statements(resource(tenant_module, "aws_sns_topic_policy", "alerts_policy")["policy"])
    rules, alarms = policy["TenantRulesPublish"], policy["TenantAlarmsPublish"]
    assert rules["Principal"] == {"Service": ["events.amazonaws.com"]}
    assert alarms["Principal"] == {"Service": ["cloudwatch.amazonaws.com"]}
    for statement, resource_type in ((rules, ":rule/"), (alarms, ":alarm:")):
        assert condition(statement, "StringEquals", "aws:SourceAccount") == "${var.account_id}"
        assert condition(statement, "ArnLike", "aws:SourceArn").endswith(f"{resource_type}${{var.tenant_id}}-*")
    assert policy["DenyInsecureTransport"]["Effect"] == "Deny"


def test_the_key_lets_eventbridge_and_cloudwatch_encrypt_for_this_account_only(tenant_module):
    key_policy = json_policy_statements(resource(tenant_module, "aws_kms_key", "kms_key")["policy"])
    statement = key_policy["AlertServicesUseKeyForTenantTopic"]
    assert statement["Principal"] == {"Service": ["events.amazonaws.com", "cloudwatch.amazonaws.com"]}
    assert statement["Action"] == list(PUBLISHER_KEY_ACTIONS)
    assert condition(statement, "StringEquals", "aws:SourceAccount") == "${var.account_id}"
    logs = key_policy["CloudWatchLogsEncryptsPipelineLogGroup"]
    assert condition(logs, "ArnEquals", "kms:EncryptionContext:aws:logs:arn").endswith(
        ":log-group:/aws/vendedlogs/states/${var.tenant_id}-lake-pipeline")
    # The state machine's and the schedules' roles are on the key's allow-list when orchestration is on.
    denied_unless = condition(key_policy["DenyKeyUseOutsideTenant"], "ArnNotLike", "aws:PrincipalArn")
    assert "${var.tenant_id}-pipeline-runner" in denied_unless[0] and "${var.tenant_id}-pipeline-scheduler" in denied_unless[0]
