"""modules/pipeline_signals.py: the job role may put metrics in its tenant's namespace and emit blocked-publish
events under its tenant's source, and nothing else of CloudWatch or EventBridge."""
from __future__ import annotations

from tests.modules.helpers import condition, document_statements, resource
from tenant_model import PUBLISH_BLOCKED_DETAIL_TYPE


def test_the_job_role_signals_under_its_tenants_names_only(tenant_module):
    policy = resource(tenant_module, "aws_iam_role_policy", "signals_policy")
    assert policy["count"] == "${var.orchestration.enabled ? 1 : 0}"
    assert policy["role"] == "${aws_iam_role.roles_job_execution.id}" and policy["name"] == "pipeline-signals"
    statements = document_statements(tenant_module, "signals_permissions")
    assert set(statements) == {"PutFreshnessMetric", "EmitBlockedPublishEvents"}
    metric, events = statements["PutFreshnessMetric"], statements["EmitBlockedPublishEvents"]
    assert metric["actions"] == ["cloudwatch:PutMetricData"] and metric["resources"] == ["*"]
    assert condition(metric, "StringEquals", "cloudwatch:namespace") == ["tenantlake/${var.tenant_id}"]
    assert events["actions"] == ["events:PutEvents"]
    assert events["resources"] == ["arn:${data.aws_partition.inputs_partition.partition}:events:${var.region}:"
                                   "${var.account_id}:event-bus/default"]
    assert condition(events, "ForAllValues:StringEquals", "events:source") == ["tenantlake.${var.tenant_id}"]
    assert condition(events, "ForAllValues:StringEquals", "events:detail-type") == [PUBLISH_BLOCKED_DETAIL_TYPE]
    assert condition(events, "Null", "events:source") == ["false"]
