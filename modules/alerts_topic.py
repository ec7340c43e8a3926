"""The tenant's alerts topic: where the pipeline's alerts go, and who is told.

| resource | name | what |
|---|---|---|
| SNS topic | ``<tenant>-lake-alerts`` | encrypted with the tenant key (a customer-managed key: AWS's ``alias/aws/sns`` cannot be used by CloudWatch alarms) |
| its policy | | ``sns:Publish`` by ``events.amazonaws.com`` for the tenant's rules and by ``cloudwatch.amazonaws.com`` for the tenant's alarms only (``aws:SourceAccount``, ``aws:SourceArn``); the account administers it; no publish without TLS |
| subscriptions | | one per entry of ``var.orchestration.alert_subscriptions`` (``{protocol, endpoint}``) |

Who publishes: the state machine's role (its identity policy, ``modules/pipeline_state_machine.py``), the tenant's
EventBridge rules (``modules/alert_rules.py``) and freshness alarms (``modules/freshness_alarms.py``). The key
policy admits the same two services with ``aws:SourceAccount`` (``key_statement``), since SNS encrypts each
message with a data key the publishing service asks for. Everything exists only with ``var.orchestration.enabled``.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

from cdktf import TerraformIterator, Token
from cdktf_cdktf_provider_aws.sns_topic import SnsTopic
from cdktf_cdktf_provider_aws.sns_topic_policy import SnsTopicPolicy
from cdktf_cdktf_provider_aws.sns_topic_subscription import SnsTopicSubscription
from constructs import Construct

from modules.policy_document import Condition, Principal, Statement, deny_insecure_transport, for_service, policy_json
from modules.refs import address, tenant_rule_arns

EVENTS_SERVICE = "events.amazonaws.com"
CLOUDWATCH_SERVICE = "cloudwatch.amazonaws.com"
# What EventBridge and CloudWatch need of the key to publish to a topic encrypted with it (SNS's "Enable
# compatibility between event sources from AWS services and encrypted topics").
PUBLISHER_KEY_ACTIONS: tuple[str, ...] = ("kms:GenerateDataKey*", "kms:Decrypt")


@dataclasses.dataclass(frozen=True)
class AlertsTopicConfig:
    """Inputs of ``AlertsTopic`` (values may be Terraform expressions).

    Attributes:
        name: ``<tenant>-lake-alerts``.
        tenant_id, partition, region, account_id: where it lives; the rules and alarms it admits are the tenant's
            (``<tenant>-*``).
        kms_key_arn: the tenant key.
        subscriptions: a Terraform list expression of ``{protocol, endpoint}`` objects (bare, no ``${}``).
        tags: tags of the topic.
        enabled: a bare Terraform bool expression: false creates nothing. @default - "false"
    """

    name: str
    tenant_id: str
    partition: str
    region: str
    account_id: str
    kms_key_arn: str
    subscriptions: str
    tags: Mapping[str, str]
    enabled: str = "false"

    @property
    def arn(self) -> str:
        return f"arn:{self.partition}:sns:{self.region}:{self.account_id}:{self.name}"

    def rule_arns(self) -> str:
        return tenant_rule_arns(self.partition, self.region, self.account_id, self.tenant_id)

    def alarm_arns(self) -> str:
        return f"arn:{self.partition}:cloudwatch:{self.region}:{self.account_id}:alarm:{self.tenant_id}-*"


def topic_policy_statements(cfg: AlertsTopicConfig) -> list[Statement]:
    return [
        Statement("AccountAdministersTopic", ["sns:GetTopicAttributes", "sns:SetTopicAttributes", "sns:Subscribe",
                                              "sns:ListSubscriptionsByTopic", "sns:Publish", "sns:DeleteTopic"],
                  cfg.arn, principals=[Principal("AWS", f"arn:{cfg.partition}:iam::{cfg.account_id}:root")]),
        for_service("TenantRulesPublish", ["sns:Publish"], cfg.arn, EVENTS_SERVICE, cfg.account_id, cfg.rule_arns()),
        for_service("TenantAlarmsPublish", ["sns:Publish"], cfg.arn, CLOUDWATCH_SERVICE, cfg.account_id,
                    cfg.alarm_arns()),
        deny_insecure_transport(["sns:Publish"], cfg.arn),
    ]


def key_statement(account_id: str) -> Statement:
    """The key policy's statement for EventBridge and CloudWatch publishing to (and EventBridge delivering to the
    encrypted queues of) the tenant: data keys and decrypt, for this account's resources only."""
    return Statement("AlertServicesUseKeyForTenantTopic", list(PUBLISHER_KEY_ACTIONS), "*",
                     principals=[Principal("Service", [EVENTS_SERVICE, CLOUDWATCH_SERVICE])],
                     conditions=[Condition("StringEquals", "aws:SourceAccount", account_id)])


class AlertsTopic(Construct):
    """The topic, its policy and its subscriptions. ``arn``: the topic's ARN, or "" without it."""

    def __init__(self, scope: Construct, id_: str, cfg: AlertsTopicConfig) -> None:
        super().__init__(scope, id_)
        count = Token.as_number(f"${{{cfg.enabled} ? 1 : 0}}")
        self.topic = SnsTopic(self, "topic", count=count, name=cfg.name, kms_master_key_id=cfg.kms_key_arn,
                              display_name="tenantlake alerts", tags=cfg.tags)
        topic_arn = f"${{{address(self.topic)}[0].arn}}"
        SnsTopicPolicy(self, "policy", count=count, arn=topic_arn, policy=policy_json(topic_policy_statements(cfg)))
        subscriptions = TerraformIterator.from_map(Token.as_any_map(
            f"${{{{for i, s in {cfg.subscriptions} : tostring(i) => s if {cfg.enabled}}}}}"))
        SnsTopicSubscription(self, "subscription", for_each=subscriptions, topic_arn=topic_arn,
                             protocol="${each.value.protocol}", endpoint="${each.value.endpoint}")
        self.arn = f'${{join("", {address(self.topic)}[*].arn)}}'
