"""What starts the tenant's pipeline state machine, per dataset, from its contract's ``trigger``.

| resource | name | what |
|---|---|---|
| SQS queue | ``<tenant>-lake-trigger-dlq`` | dead-letter queue of every trigger below (and of the alert rules' targets): a start or delivery that failed after its retries lands here (encrypted with the tenant key, 14 days) |
| its policy | | ``sqs:SendMessage`` by ``events.amazonaws.com`` for the tenant's rules only (``aws:SourceArn`` ``rule/<tenant>-*``, ``aws:SourceAccount``: the arrival rules and the alert rules dead-letter here); TLS only |
| IAM role | ``<tenant>-pipeline-scheduler`` | assumed only by ``scheduler.amazonaws.com`` for the tenant's pipeline schedules (``aws:SourceAccount``, ``aws:SourceArn``); policy ``start-pipeline``: ``states:StartExecution`` of the tenant's state machine, ``sqs:SendMessage`` to the dead-letter queue, ``kms:Decrypt`` (the schedules' input) and ``kms:GenerateDataKey`` (the queue's messages) with the tenant key |
| IAM role | ``<tenant>-pipeline-events`` | assumed only by ``events.amazonaws.com`` for the tenant's arrival rules; policy ``start-pipeline``: ``states:StartExecution`` of the tenant's state machine |
| per dataset with ``trigger.schedule`` | ``<tenant>-<dataset>-pipeline`` (group ``default``) | EventBridge Scheduler: the contract's ``cron`` in its ``timezone``, within ``flexible_window_minutes``; target the state machine with ``{"dataset", "trigger": "schedule", "time": <aws.scheduler.scheduled-time>}``; input encrypted with the tenant key |
| per dataset with ``trigger.on_arrival`` | ``<tenant>-<dataset>-arrival`` | EventBridge rule: ``Object Created`` in the lake bucket under ``landing/<dataset>/``; target the state machine with ``{"dataset", "trigger": "arrival", "time": <the event's time>}`` (the state machine debounces: one run per window) |

Every target retries a failed start (``MAX_RETRY_ATTEMPTS`` within ``MAX_EVENT_AGE_SECONDS``) and then gives it to the
dead-letter queue. Every resource exists only with ``var.orchestration.enabled``.
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
from cdktf_cdktf_provider_aws.iam_role import IamRole
from cdktf_cdktf_provider_aws.iam_role_policy import IamRolePolicy
from cdktf_cdktf_provider_aws.scheduler_schedule import (
    SchedulerSchedule,
    SchedulerScheduleFlexibleTimeWindow,
    SchedulerScheduleTarget,
    SchedulerScheduleTargetDeadLetterConfig,
    SchedulerScheduleTargetRetryPolicy,
)
from cdktf_cdktf_provider_aws.sqs_queue import SqsQueue
from cdktf_cdktf_provider_aws.sqs_queue_policy import SqsQueuePolicy
from constructs import Construct

from modules.policy_document import Statement, deny_insecure_transport, for_service, policy_document, policy_json
from modules.refs import address, tenant_rule_arns

SCHEDULE_GROUP = "default"
SCHEDULER_SERVICE = "scheduler.amazonaws.com"
EVENTS_SERVICE = "events.amazonaws.com"
MAX_RETRY_ATTEMPTS = 3
MAX_EVENT_AGE_SECONDS = 3600
DLQ_RETENTION_SECONDS = 14 * 24 * 3600  # SQS's longest
SCHEDULED_TIME = "<aws.scheduler.scheduled-time>"  # Scheduler's context attribute, filled in per invocation


def arrival_pattern(bucket: str, dataset: str) -> dict[str, Any]:
    """The rule's event pattern: S3's ``Object Created`` events of the lake bucket under ``landing/<dataset>/``."""
    return {"source": ["aws.s3"], "detail-type": ["Object Created"],
            "detail": {"bucket": {"name": [bucket]}, "object": {"key": [{"prefix": f"landing/{dataset}/"}]}}}


def schedule_input(dataset: str) -> str:
    return json.dumps({"dataset": dataset, "trigger": "schedule", "time": SCHEDULED_TIME})


def arrival_input_template(dataset: str) -> str:
    """The arrival rule's input: the dataset and trigger, and the event's own ``time``."""
    return json.dumps({"dataset": dataset, "trigger": "arrival", "time": "<time>"}).replace('"<time>"', "<time>")


@dataclasses.dataclass(frozen=True)
class PipelineTriggersConfig:
    """Inputs of ``PipelineTriggers`` (values may be Terraform expressions).

    Attributes:
        tenant_id, partition, region, account_id: where the triggers live; names come from ``tenant_model``.
        names: the tenant's names (``tenant_model.NAME_TEMPLATES``, rendered): ``trigger_dlq``,
            ``pipeline_scheduler_role``, ``pipeline_events_role``.
        state_machine_arn: what every trigger starts.
        kms_key_arn: the tenant key (the schedules' input, the dead-letter queue).
        lake_bucket: the lake bucket, whose ``landing/<dataset>/`` the arrival rules watch.
        schedules: dataset -> ``{cron, timezone, flexible_window_minutes}`` (the contracts' ``trigger.schedule``).
        arrivals: the datasets with ``trigger.on_arrival``.
        tags: tags of every taggable resource.
        enabled: a bare Terraform bool expression: false creates nothing. @default - "false"
    """

    tenant_id: str
    partition: str
    region: str
    account_id: str
    names: Mapping[str, str]
    state_machine_arn: str
    kms_key_arn: str
    lake_bucket: str
    schedules: Mapping[str, Mapping[str, Any]]
    arrivals: tuple[str, ...]
    tags: Mapping[str, str]
    enabled: str = "false"

    def schedule_arns(self) -> str:
        return (f"arn:{self.partition}:scheduler:{self.region}:{self.account_id}:schedule/{SCHEDULE_GROUP}/"
                f"{self.tenant_id}-*-pipeline")

    def rule_arns(self) -> str:
        return tenant_rule_arns(self.partition, self.region, self.account_id, self.tenant_id)

    def arrival_rule_arns(self) -> str:
        return f"arn:{self.partition}:events:{self.region}:{self.account_id}:rule/{self.tenant_id}-*-arrival"


def scheduler_trust_statements(cfg: PipelineTriggersConfig) -> list[Statement]:
    return [for_service("SchedulerForThePipelineSchedules", ["sts:AssumeRole"], [], SCHEDULER_SERVICE, [cfg.account_id],
                        [cfg.schedule_arns()])]


def scheduler_permission_statements(cfg: PipelineTriggersConfig, dlq_arn: str) -> list[Statement]:
    return [
        Statement("StartTenantPipeline", ["states:StartExecution"], [cfg.state_machine_arn]),
        Statement("DeadLetterFailedStarts", ["sqs:SendMessage"], [dlq_arn]),
        Statement("UseTenantKeyForInputAndQueue", ["kms:Decrypt", "kms:GenerateDataKey"], [cfg.kms_key_arn]),
    ]


def events_trust_statements(cfg: PipelineTriggersConfig) -> list[Statement]:
    return [for_service("EventBridgeForTheArrivalRules", ["sts:AssumeRole"], [], EVENTS_SERVICE, [cfg.account_id],
                        [cfg.arrival_rule_arns()])]


def events_permission_statements(cfg: PipelineTriggersConfig) -> list[Statement]:
    return [Statement("StartTenantPipeline", ["states:StartExecution"], [cfg.state_machine_arn])]


def dlq_policy_statements(cfg: PipelineTriggersConfig, dlq_arn: str) -> list[Statement]:
    return [
        # The arrival rules' targets and the alert rules' (modules/alert_rules.py) dead-letter here.
        for_service("TenantRulesDeadLetter", ["sqs:SendMessage"], dlq_arn, EVENTS_SERVICE, cfg.account_id,
                    cfg.rule_arns()),
        deny_insecure_transport(["sqs:*"], dlq_arn),
    ]


class PipelineTriggers(Construct):
    """The dead-letter queue, the two roles, a schedule per scheduled dataset and a rule per arrival dataset."""

    def __init__(self, scope: Construct, id_: str, cfg: PipelineTriggersConfig) -> None:
        super().__init__(scope, id_)
        count = Token.as_number(f"${{{cfg.enabled} ? 1 : 0}}")
        self.dlq = SqsQueue(self, "dlq", count=count, name=cfg.names["trigger_dlq"], kms_master_key_id=cfg.kms_key_arn,
                            message_retention_seconds=DLQ_RETENTION_SECONDS, tags=cfg.tags)
        # By its name, not a reference: the policy documents below are data sources, read even when the queue
        # is not created (count 0).
        dlq_arn = f"arn:{cfg.partition}:sqs:{cfg.region}:{cfg.account_id}:{cfg.names['trigger_dlq']}"
        SqsQueuePolicy(self, "dlq_policy", count=count, queue_url=f"${{{address(self.dlq)}[0].id}}",
                       policy=policy_json(dlq_policy_statements(cfg, dlq_arn)))

        scheduler_trust = policy_document(self, "scheduler_trust", scheduler_trust_statements(cfg))
        self.scheduler_role = IamRole(self, "scheduler_role", count=count, name=cfg.names["pipeline_scheduler_role"],
                                      assume_role_policy=scheduler_trust.json, tags=cfg.tags,
                                      description="tenantlake: starts the pipeline state machine on its schedules")
        scheduler_permissions = policy_document(self, "scheduler_permissions",
                                                scheduler_permission_statements(cfg, dlq_arn))
        IamRolePolicy(self, "scheduler_policy", count=count, name="start-pipeline",
                      role=f"${{{address(self.scheduler_role)}[0].id}}", policy=scheduler_permissions.json)
        events_trust = policy_document(self, "events_trust", events_trust_statements(cfg))
        self.events_role = IamRole(self, "events_role", count=count, name=cfg.names["pipeline_events_role"],
                                   assume_role_policy=events_trust.json, tags=cfg.tags,
                                   description="tenantlake: starts the pipeline state machine when landing data arrives")
        events_permissions = policy_document(self, "events_permissions", events_permission_statements(cfg))
        IamRolePolicy(self, "events_policy", count=count, name="start-pipeline",
                      role=f"${{{address(self.events_role)}[0].id}}", policy=events_permissions.json)

        retries = {"maximum_retry_attempts": MAX_RETRY_ATTEMPTS, "maximum_event_age_in_seconds": MAX_EVENT_AGE_SECONDS}
        TerraformLocal(self, "pipeline_schedules", {
            dataset: {**schedule, "input": schedule_input(dataset)} for dataset, schedule in cfg.schedules.items()})
        schedules = TerraformIterator.from_map(Token.as_any_map(
            f"${{{{for k, v in local.pipeline_schedules : k => v if {cfg.enabled}}}}}"))
        window = "each.value.flexible_window_minutes"
        self.schedules = SchedulerSchedule(
            self, "schedule", for_each=schedules, name=f"{cfg.tenant_id}-${{each.key}}-pipeline",
            group_name=SCHEDULE_GROUP, description="tenantlake: the dataset's pipeline (its contract's trigger.schedule)",
            schedule_expression="${each.value.cron}", schedule_expression_timezone="${each.value.timezone}",
            state="ENABLED", kms_key_arn=cfg.kms_key_arn,
            flexible_time_window=SchedulerScheduleFlexibleTimeWindow(
                mode=f'${{{window} > 0 ? "FLEXIBLE" : "OFF"}}',
                maximum_window_in_minutes=Token.as_number(f"${{{window} > 0 ? {window} : null}}")),
            target=SchedulerScheduleTarget(
                arn=cfg.state_machine_arn, role_arn=f"${{{address(self.scheduler_role)}[0].arn}}",
                input="${each.value.input}",
                retry_policy=SchedulerScheduleTargetRetryPolicy(**retries),
                dead_letter_config=SchedulerScheduleTargetDeadLetterConfig(arn=dlq_arn)))

        TerraformLocal(self, "pipeline_arrivals", {
            dataset: {"pattern": json.dumps(arrival_pattern(cfg.lake_bucket, dataset)),
                      "template": arrival_input_template(dataset)} for dataset in cfg.arrivals})
        arrivals = TerraformIterator.from_map(Token.as_any_map(
            f"${{{{for k, v in local.pipeline_arrivals : k => v if {cfg.enabled}}}}}"))
        self.arrival_rules = CloudwatchEventRule(
            self, "arrival_rule", for_each=arrivals, name=f"{cfg.tenant_id}-${{each.key}}-arrival",
            description="tenantlake: new landing data of the dataset starts its pipeline (trigger.on_arrival)",
            event_pattern="${each.value.pattern}", tags=cfg.tags)
        CloudwatchEventTarget(
            self, "arrival_target", for_each=arrivals, rule=f"${{{address(self.arrival_rules)}[each.key].name}}",
            target_id="pipeline", arn=cfg.state_machine_arn, role_arn=f"${{{address(self.events_role)}[0].arn}}",
            input_transformer=CloudwatchEventTargetInputTransformer(
                input_paths={"time": "$.time"}, input_template="${each.value.template}"),
            retry_policy=CloudwatchEventTargetRetryPolicy(**retries),
            dead_letter_config=CloudwatchEventTargetDeadLetterConfig(arn=dlq_arn))
        self.dlq_arn = f'${{join("", {address(self.dlq)}[*].arn)}}'
        self.dlq_url = f'${{join("", {address(self.dlq)}[*].url)}}'
        self.scheduler_role_arn = f'${{join("", {address(self.scheduler_role)}[*].arn)}}'
        self.events_role_arn = f'${{join("", {address(self.events_role)}[*].arn)}}'
        self.schedule_names = f"${{{{for k, s in {address(self.schedules)} : k => s.name}}}}"
        self.arrival_rule_names = f"${{{{for k, r in {address(self.arrival_rules)} : k => r.name}}}}"

