"""What the job role may tell the tenant's monitoring (``spark_jobs/runs/signals.py``): one inline policy on it.

| statement | action | resource | condition |
|---|---|---|---|
| ``PutFreshnessMetric`` | ``cloudwatch:PutMetricData`` | ``*`` (the action takes no resource) | ``cloudwatch:namespace`` = ``tenantlake/<tenant>`` |
| ``EmitBlockedPublishEvents`` | ``events:PutEvents`` | the account's default event bus | every entry's ``events:source`` = ``tenantlake.<tenant>`` and ``events:detail-type`` = ``Publish Blocked by Validation`` (``ForAllValues``: both keys hold one value per entry), and a source named |

So a job of one tenant can neither put metrics into another tenant's namespace nor emit events under another
tenant's source (which that tenant's rules would turn into its alerts). The policy exists only with
``var.orchestration.enabled``.
"""
from __future__ import annotations

import dataclasses

from cdktf import Token
from cdktf_cdktf_provider_aws.iam_role_policy import IamRolePolicy
from constructs import Construct

from modules.policy_document import Condition, Statement, policy_document
from tenant_model import PUBLISH_BLOCKED_DETAIL_TYPE

POLICY_NAME = "pipeline-signals"


@dataclasses.dataclass(frozen=True)
class PipelineSignalsConfig:
    """Inputs of ``PipelineSignals`` (values may be Terraform expressions).

    Attributes:
        role_id: the job role (its name: the policy's ``role``).
        partition, region, account_id: where the default event bus is.
        metric_namespace: ``tenantlake/<tenant>``.
        event_source: ``tenantlake.<tenant>``.
        enabled: a bare Terraform bool expression: false creates nothing. @default - "false"
    """

    role_id: str
    partition: str
    region: str
    account_id: str
    metric_namespace: str
    event_source: str
    enabled: str = "false"


def permission_statements(cfg: PipelineSignalsConfig) -> list[Statement]:
    bus = f"arn:{cfg.partition}:events:{cfg.region}:{cfg.account_id}:event-bus/default"
    return [
        Statement("PutFreshnessMetric", ["cloudwatch:PutMetricData"], ["*"],
                  conditions=[Condition("StringEquals", "cloudwatch:namespace", [cfg.metric_namespace])]),
        # events:source and events:detail-type are multivalued (one value per entry of a PutEvents call): every
        # entry must be the tenant's, and a call must name its source (no vacuous ForAllValues match).
        Statement("EmitBlockedPublishEvents", ["events:PutEvents"], [bus],
                  conditions=[Condition("ForAllValues:StringEquals", "events:source", [cfg.event_source]),
                              Condition("ForAllValues:StringEquals", "events:detail-type", [PUBLISH_BLOCKED_DETAIL_TYPE]),
                              Condition("Null", "events:source", ["false"])]),
    ]


class PipelineSignals(Construct):
    def __init__(self, scope: Construct, id_: str, cfg: PipelineSignalsConfig) -> None:
        super().__init__(scope, id_)
        permissions = policy_document(self, "permissions", permission_statements(cfg))
        IamRolePolicy(self, "policy", count=Token.as_number(f"${{{cfg.enabled} ? 1 : 0}}"), name=POLICY_NAME,
                      role=cfg.role_id, policy=permissions.json)
