"""modules/freshness_alarms.py: an alarm per dataset with a freshness target, on the metric the jobs put after each
silver publish, breaching when no data arrives."""
from __future__ import annotations

from spark_jobs.contract.model import packaged_contracts
from tests.modules.helpers import resource
from tenant_model import PUBLISHED_METRIC


def test_each_contracts_target_becomes_an_alarm_that_pages_on_missing_publishes(tenant_module):
    targets = tenant_module["locals"]["freshness_targets"]
    assert targets == {c.dataset: c.freshness.max_minutes_since_publish for c in packaged_contracts() if c.freshness}
    alarm = resource(tenant_module, "aws_cloudwatch_metric_alarm", "freshness_alarm")
    assert alarm["for_each"] == "${{for k, v in local.freshness_targets : k => v if var.orchestration.enabled}}"
    assert alarm["alarm_name"] == "${var.tenant_id}-${each.key}-freshness"
    assert (alarm["namespace"], alarm["metric_name"]) == ("tenantlake/${var.tenant_id}", PUBLISHED_METRIC)
    assert alarm["dimensions"] == {"Dataset": "${each.key}", "Layer": "silver"}
    assert (alarm["statistic"], alarm["period"], alarm["evaluation_periods"], alarm["threshold"]) == \
        ("Sum", "${each.value * 60}", 1, 1)
    assert alarm["comparison_operator"] == "LessThanThreshold" and alarm["treat_missing_data"] == "breaching"
    assert alarm["alarm_actions"] == alarm["ok_actions"] == ['${join("", aws_sns_topic.alerts_topic[*].arn)}']
    assert alarm["actions_enabled"] is True
    # CloudWatch evaluates one period of at most 7 days.
    assert all(60 <= minutes * 60 <= 7 * 24 * 3600 for minutes in targets.values())
