"""A freshness alarm per dataset with a ``freshness`` target in its contract: silver published within the target.

| resource | name | what |
|---|---|---|
| CloudWatch alarm (per dataset) | ``<tenant>-<dataset>-freshness`` | the ``Sum`` of ``LayerPublished`` (dimensions ``Dataset`` = the dataset, ``Layer`` = ``silver``) in the namespace ``tenantlake/<tenant>`` over one period of the contract's ``max_minutes_since_publish``, ``LessThanThreshold`` 1: no silver publish within the target is ``ALARM``; ``treat_missing_data = breaching``, so a dataset that stops publishing (no data point at all) pages too; alarm and OK actions: the alerts topic |

The jobs put the metric after each publish (``spark_jobs/runs/signals.py``). CloudWatch evaluates one period of at most 7
days (a contract's target: 5 to 10080 minutes). Every alarm exists only with ``var.orchestration.enabled``.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

from cdktf import TerraformIterator, TerraformLocal, Token
from cdktf_cdktf_provider_aws.cloudwatch_metric_alarm import CloudwatchMetricAlarm
from constructs import Construct

from modules.refs import address
from tenant_model import FRESHNESS_LAYER, PUBLISHED_METRIC


@dataclasses.dataclass(frozen=True)
class FreshnessAlarmsConfig:
    """Inputs of ``FreshnessAlarms`` (values may be Terraform expressions).

    Attributes:
        tenant_id: alarm names are ``<tenant>-<dataset>-freshness``.
        namespace: the CloudWatch namespace the jobs put the metric in, ``tenantlake/<tenant>``.
        targets: dataset -> its contract's ``max_minutes_since_publish``.
        topic_arn: the alerts topic (alarm and OK actions).
        tags: tags of every alarm.
        enabled: a bare Terraform bool expression: false creates nothing. @default - "false"
    """

    tenant_id: str
    namespace: str
    targets: Mapping[str, int]
    topic_arn: str
    tags: Mapping[str, str]
    enabled: str = "false"


class FreshnessAlarms(Construct):
    """One alarm per dataset. ``alarm_names``: dataset -> alarm name (empty without)."""

    def __init__(self, scope: Construct, id_: str, cfg: FreshnessAlarmsConfig) -> None:
        super().__init__(scope, id_)
        TerraformLocal(self, "freshness_targets", {dataset: minutes for dataset, minutes in cfg.targets.items()})
        each = TerraformIterator.from_map(Token.as_any_map(
            f"${{{{for k, v in local.freshness_targets : k => v if {cfg.enabled}}}}}"))
        self.alarms = CloudwatchMetricAlarm(
            self, "alarm", for_each=each, alarm_name=f"{cfg.tenant_id}-${{each.key}}-freshness",
            alarm_description=f"tenantlake: no {FRESHNESS_LAYER} publish of ${{each.key}} within its freshness target "
                              "(${each.value} minutes, its contract's freshness.max_minutes_since_publish)",
            namespace=cfg.namespace, metric_name=PUBLISHED_METRIC,
            dimensions={"Dataset": "${each.key}", "Layer": FRESHNESS_LAYER},
            statistic="Sum", period=Token.as_number("${each.value * 60}"), evaluation_periods=1, threshold=1,
            comparison_operator="LessThanThreshold", treat_missing_data="breaching", actions_enabled=True,
            alarm_actions=[cfg.topic_arn], ok_actions=[cfg.topic_arn], tags=cfg.tags)
        self.alarm_names = f"${{{{for k, a in {address(self.alarms)} : k => a.alarm_name}}}}"
