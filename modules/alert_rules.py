"""The tenant's alert rules: EventBridge rules that turn failures into messages on the alerts topic.

| rule | name | matches |
|---|---|---|
| EMR on EKS job run failed | ``<tenant>-emr-job-failed`` | ``aws.emr-containers`` events of both state-change detail-types (``EMR Job Run State Change``, ``EmrContainers Job Run State Change``) whose ``detail.virtualClusterId`` is the tenant's and ``detail.state`` is ``FAILED`` or ``CANCELLED`` |
| pipeline execution failed | ``<tenant>-pipeline-failed`` | ``Step Functions Execution Status Change`` of the tenant's state machine with ``detail.status`` ``FAILED``, ``TIMED_OUT`` or ``ABORTED`` |
| publish blocked by validation | ``<tenant>-publish-blocked`` | the jobs' own event (``spark_jobs/runs/signals.py``): source ``tenantlake.<tenant>``, detail-type ``Publish Blocked by Validation`` |

Each rule's target turns the event into a JSON message (an input transformer: ``RULES`` gives the paths and the
template; no field of an event carries a record value) and retries a failed delivery (``MAX_RETRY_ATTEMPTS`` within
``MAX_EVENT_AGE_SECONDS``) before it gives the event to the triggers' dead-letter queue. On AWS the target is the
alerts topic. On the local emulator (``var.environment == "local"``) it is a queue of its own,
``<tenant>-lake-alert-events`` (encrypted with the tenant key, written by these rules only): moto's EventBridge
delivers to SQS but not to SNS, and a matching rule with an SNS target makes the emulator's ``PutEvents`` fail. The
patterns, the messages and the topic are the same in both; only the delivery to SNS stays unproven here.
Everything exists only with ``var.orchestration.enabled``.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Mapping

from cdktf import TerraformIterator, TerraformLocal, Token
from cdktf_cdktf_provider_aws.cloudwatch_event_rule import CloudwatchEventRule
from cdktf_cdktf_provider_aws.cloudwatch_event_target import (
    CloudwatchEventTarget,
    CloudwatchEventTargetDeadLetterConfig,
    CloudwatchEventTargetInputTransformer,
    CloudwatchEventTargetRetryPolicy,
)
from cdktf_cdktf_provider_aws.sqs_queue import SqsQueue
from cdktf_cdktf_provider_aws.sqs_queue_policy import SqsQueuePolicy
from constructs import Construct

from modules.policy_document import Statement, deny_insecure_transport, for_service, policy_json
from modules.refs import address, tenant_rule_arns
from tenant_model import PUBLISH_BLOCKED_DETAIL_TYPE

EVENTS_SERVICE = "events.amazonaws.com"
MAX_RETRY_ATTEMPTS = 3
MAX_EVENT_AGE_SECONDS = 3600
EMR_JOB_DETAIL_TYPES: tuple[str, ...] = ("EMR Job Run State Change", "EmrContainers Job Run State Change")
EMR_JOB_ALERT_STATES: tuple[str, ...] = ("FAILED", "CANCELLED")
EXECUTION_DETAIL_TYPE = "Step Functions Execution Status Change"
EXECUTION_ALERT_STATUSES: tuple[str, ...] = ("FAILED", "TIMED_OUT", "ABORTED")


def emr_job_failed_pattern(virtual_cluster_id: str) -> dict[str, Any]:
    return {"source": ["aws.emr-containers"], "detail-type": list(EMR_JOB_DETAIL_TYPES),
            "detail": {"virtualClusterId": [virtual_cluster_id], "state": list(EMR_JOB_ALERT_STATES)}}


def pipeline_failed_pattern(state_machine_arn: str) -> dict[str, Any]:
    return {"source": ["aws.states"], "detail-type": [EXECUTION_DETAIL_TYPE],
            "detail": {"stateMachineArn": [state_machine_arn], "status": list(EXECUTION_ALERT_STATUSES)}}


def publish_blocked_pattern(event_source: str) -> dict[str, Any]:
    return {"source": [event_source], "detail-type": [PUBLISH_BLOCKED_DETAIL_TYPE]}


def _template(fields: Mapping[str, str]) -> str:
    """A JSON object template: ``"<x>"`` stays a quoted placeholder, ``<<x>>`` becomes a bare one (a JSON value)."""
    return json.dumps(dict(fields)).replace('"<<', "<").replace('>>"', ">")


def rules(tenant_id: str, virtual_cluster_id: str, state_machine_arn: str, event_source: str) -> dict[str, dict[str, Any]]:
    """Each rule's pattern, input paths and message template, by the key of its name in ``tenant_model``."""
    return {
        "emr_job_failed_rule": {
            "description": "tenantlake: an EMR on EKS job run on the tenant's virtual cluster FAILED or was CANCELLED",
            "pattern": emr_job_failed_pattern(virtual_cluster_id),
            "paths": {"id": "$.detail.id", "name": "$.detail.name", "state": "$.detail.state",
                      "cluster": "$.detail.virtualClusterId", "time": "$.time"},
            "template": _template({"alert": "EMR on EKS job run <state>", "tenant": tenant_id, "job_run": "<name>",
                                   "job_run_id": "<id>", "virtual_cluster": "<cluster>", "time": "<time>"})},
        "pipeline_failed_rule": {
            "description": "tenantlake: an execution of the tenant's pipeline state machine failed, timed out or was aborted",
            "pattern": pipeline_failed_pattern(state_machine_arn),
            "paths": {"execution": "$.detail.name", "status": "$.detail.status", "time": "$.time"},
            "template": _template({"alert": "pipeline execution <status>", "tenant": tenant_id,
                                   "execution": "<execution>", "time": "<time>"})},
        "publish_blocked_rule": {
            "description": "tenantlake: validation blocked a publish (the job's own event)",
            "pattern": publish_blocked_pattern(event_source),
            "paths": {"dataset": "$.detail.dataset", "layer": "$.detail.layer", "run_id": "$.detail.run_id",
                      "manifest": "$.detail.manifest", "rules": "$.detail.rules", "quarantined": "$.detail.quarantined",
                      "time": "$.time"},
            "template": _template({"alert": "publish blocked by validation", "tenant": tenant_id, "dataset": "<dataset>",
                                   "layer": "<layer>", "run_id": "<run_id>", "rules": "<<rules>>",
                                   "quarantined": "<<quarantined>>", "manifest": "<manifest>", "time": "<time>"})},
    }


@dataclasses.dataclass(frozen=True)
class AlertRulesConfig:
    """Inputs of ``AlertRules`` (values may be Terraform expressions).

    Attributes:
        tenant_id, partition, region, account_id: where the rules live.
        names: the tenant's names (``tenant_model.NAME_TEMPLATES``, rendered): the three rules' and
            ``alert_events_queue``.
        virtual_cluster_id: the tenant's EMR on EKS virtual cluster.
        state_machine_arn: the tenant's pipeline state machine.
        event_source: the jobs' EventBridge source, ``tenantlake.<tenant>``.
        topic_arn: the alerts topic (the target on AWS).
        dlq_arn: where a delivery that failed after its retries goes.
        kms_key_arn: the tenant key (the local queue's).
        tags: tags of every taggable resource.
        enabled: a bare Terraform bool expression: false creates nothing. @default - "false"
        is_local: a bare Terraform bool expression in parentheses: true delivers to the local queue. @default - "false"
    """

    tenant_id: str
    partition: str
    region: str
    account_id: str
    names: Mapping[str, str]
    virtual_cluster_id: str
    state_machine_arn: str
    event_source: str
    topic_arn: str
    dlq_arn: str
    kms_key_arn: str
    tags: Mapping[str, str]
    enabled: str = "false"
    is_local: str = "false"

    def rule_arns(self) -> str:
        return tenant_rule_arns(self.partition, self.region, self.account_id, self.tenant_id)


def local_queue_statements(cfg: AlertRulesConfig, queue_arn: str) -> list[Statement]:
    return [
        for_service("TenantRulesDeliver", ["sqs:SendMessage"], queue_arn, EVENTS_SERVICE, cfg.account_id,
                    cfg.rule_arns()),
        deny_insecure_transport(["sqs:*"], queue_arn),
    ]


class AlertRules(Construct):
    """The three rules and their targets, and the local queue. ``rule_names``: rule key -> name (empty without)."""

    def __init__(self, scope: Construct, id_: str, cfg: AlertRulesConfig) -> None:
        super().__init__(scope, id_)
        local_count = Token.as_number(f"${{{cfg.enabled} && {cfg.is_local} ? 1 : 0}}")
        self.queue = SqsQueue(self, "local_queue", count=local_count, name=cfg.names["alert_events_queue"],
                              kms_master_key_id=cfg.kms_key_arn, tags=cfg.tags)
        queue_arn = f"${{{address(self.queue)}[0].arn}}"
        SqsQueuePolicy(self, "local_queue_policy", count=local_count, queue_url=f"${{{address(self.queue)}[0].id}}",
                       policy=policy_json(local_queue_statements(cfg, queue_arn)))
        TerraformLocal(self, "alert_rules", {
            cfg.names[key]: {"description": rule["description"], "pattern": json.dumps(rule["pattern"]),
                             "paths": rule["paths"], "template": rule["template"]}
            for key, rule in rules(cfg.tenant_id, cfg.virtual_cluster_id, cfg.state_machine_arn,
                                   cfg.event_source).items()})
        each = TerraformIterator.from_map(Token.as_any_map(
            f"${{{{for k, v in local.alert_rules : k => v if {cfg.enabled}}}}}"))
        self.rules = CloudwatchEventRule(self, "rule", for_each=each, name="${each.key}",
                                         description="${each.value.description}",
                                         event_pattern="${each.value.pattern}", tags=cfg.tags)
        retries = CloudwatchEventTargetRetryPolicy(maximum_retry_attempts=MAX_RETRY_ATTEMPTS,
                                                   maximum_event_age_in_seconds=MAX_EVENT_AGE_SECONDS)
        transformer = CloudwatchEventTargetInputTransformer(input_paths=Token.as_string_map("${each.value.paths}"),
                                                            input_template="${each.value.template}")
        for target_id, arn, when in (("alerts-topic", cfg.topic_arn, f"!{cfg.is_local}"),
                                     ("local-alert-events", queue_arn, cfg.is_local)):
            targets = TerraformIterator.from_map(Token.as_any_map(
                f"${{{{for k, v in local.alert_rules : k => v if {cfg.enabled} && {when}}}}}"))
            CloudwatchEventTarget(self, target_id.replace("-", "_"), for_each=targets, target_id=target_id, arn=arn,
                                  rule=f"${{{address(self.rules)}[each.key].name}}", input_transformer=transformer,
                                  retry_policy=retries, dead_letter_config=CloudwatchEventTargetDeadLetterConfig(
                                      arn=cfg.dlq_arn))
        self.queue_url = f'${{join("", {address(self.queue)}[*].url)}}'
        self.rule_names = f"${{{{for k, r in {address(self.rules)} : k => r.name}}}}"
