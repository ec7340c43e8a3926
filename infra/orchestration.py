"""The tenant module's orchestration and alerts (``var.orchestration``), composed from ``modules/``: the pipeline
state machine, its triggers per dataset, the alerts topic and rules, a freshness alarm per dataset, and the job
role's right to put the freshness metric and the blocked-publish event.

What each dataset gets comes from its contract (``trigger``, ``freshness``) at synthesis: the contracts shipped in
``spark_jobs/contracts/`` (``spark_jobs.contract.model.packaged_contracts``). A changed contract needs ``make synth``
(the committed module's test says so).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import tenant_model as model
from modules.alert_rules import AlertRules, AlertRulesConfig
from modules.alerts_topic import AlertsTopic, AlertsTopicConfig, key_statement as alerts_key_statement
from modules.freshness_alarms import FreshnessAlarms, FreshnessAlarmsConfig
from modules.kms import logs_statement
from modules.pipeline_signals import PipelineSignals, PipelineSignalsConfig
from modules.pipeline_state_machine import LAYERS, DatasetRun, PipelineStateMachine, PipelineStateMachineConfig
from modules.pipeline_triggers import PipelineTriggers, PipelineTriggersConfig
from modules.policy_document import Statement
from modules.tenant_inputs import TenantInputs

# Names the module renders with a 24-character tenant id (the longest) must fit EventBridge's and Scheduler's 64.
LONGEST_TENANT_ID = "t" * 24


def contracts_for_orchestration() -> list:
    """The packaged contracts, each checked for names that fit (one line naming the dataset and the limit)."""
    from spark_jobs.contract.model import packaged_contracts

    contracts = packaged_contracts()
    for contract in contracts:
        for kind in ("pipeline_schedule", "arrival_rule"):
            name = model.pipeline_name(kind, contract.dataset, tenant_id=LONGEST_TENANT_ID)
            if len(name) > model.MAX_RULE_NAME:
                raise ValueError(f"contract '{contract.dataset}': its {kind.replace('_', ' ')} name would be {len(name)} "
                                 f"characters for a 24-character tenant id, more than {model.MAX_RULE_NAME}; "
                                 "shorten the dataset name")
    return contracts


def key_statements(inputs: TenantInputs) -> list[Statement]:
    """The key policy's statements for the orchestration's services: EventBridge and CloudWatch (the alerts topic,
    the encrypted queues) and the Logs service for the state machine's log group."""
    log_group_arn = (f"arn:{inputs.partition}:logs:{inputs.region}:{inputs.account_id}:log-group:"
                     f"{inputs.names['pipeline_log_group']}")
    return [alerts_key_statement(inputs.account_id),
            logs_statement("CloudWatchLogsEncryptsPipelineLogGroup", inputs.region, log_group_arn)]


def key_principal_arns(inputs: TenantInputs) -> str:
    """The orchestration's roles on the key's allow-list (by the ARNs their name templates give; the roles'
    policies name the key): a bare Terraform list expression, empty when it is off."""
    arns = ", ".join(f'"arn:${{{inputs.partition_ref}}}:iam::${{var.account_id}}:role/{inputs.names[kind]}"'
                     for kind in ("pipeline_runner_role", "pipeline_scheduler_role"))
    return f"{inputs.orchestration_enabled} ? [{arns}] : []"


@dataclasses.dataclass(frozen=True)
class OrchestrationResources:
    """The parts the module's outputs name."""

    state_machine_arn: str
    topic_arn: str
    outputs: dict[str, Any]


def add_orchestration(scope, inputs: TenantInputs, *, key_arn: str, job_role_id: str, job_role_arn: str,
                      virtual_cluster, deploy_target, request_options) -> OrchestrationResources:
    """Every orchestration construct, off unless ``var.orchestration.enabled``. ``deploy_target`` (the module's
    references as an ``infra.deploy.target.DeployTarget``) and ``request_options`` render the state machine's
    requests with ``infra.deploy.request.automation_request``."""
    from infra.deploy.request import automation_request, universal_target_input

    enabled, names = inputs.orchestration_enabled, inputs.names
    contracts = contracts_for_orchestration()
    target = dataclasses.replace(deploy_target, metric_namespace=names["metric_namespace"],
                                 event_source=names["event_source"])
    runs = [DatasetRun(contract.dataset,
                       {layer: universal_target_input(automation_request(target, contract.dataset, layer, request_options))
                        for layer in LAYERS},
                       contract.trigger.on_arrival.debounce_minutes
                       if contract.trigger and contract.trigger.on_arrival else None)
            for contract in contracts]
    topic_cfg = AlertsTopicConfig(name=names["alerts_topic"], tenant_id=inputs.tenant_id, partition=inputs.partition,
                                  region=inputs.region, account_id=inputs.account_id, kms_key_arn=key_arn,
                                  subscriptions="var.orchestration.alert_subscriptions", tags=inputs.tags,
                                  enabled=enabled)
    topic = AlertsTopic(scope, "alerts", topic_cfg)
    machine = PipelineStateMachine(scope, "pipeline", PipelineStateMachineConfig(
        name=names["pipeline_state_machine"], role_name=names["pipeline_runner_role"],
        log_group_name=names["pipeline_log_group"], partition=inputs.partition, region=inputs.region,
        account_id=inputs.account_id, tenant_id=inputs.tenant_id, virtual_cluster_arn=virtual_cluster.arn,
        job_role_arn=job_role_arn, kms_key_arn=key_arn, topic_arn=topic_cfg.arn, datasets=runs, tags=inputs.tags,
        log_retention_days=inputs.retention["logs"], enabled=enabled))
    machine_arn = (f"arn:{inputs.partition}:states:{inputs.region}:{inputs.account_id}:stateMachine:"
                   f"{names['pipeline_state_machine']}")
    triggers = PipelineTriggers(scope, "triggers", PipelineTriggersConfig(
        tenant_id=inputs.tenant_id, partition=inputs.partition, region=inputs.region, account_id=inputs.account_id,
        names=names, state_machine_arn=machine_arn, kms_key_arn=key_arn, lake_bucket=names["lake_bucket"],
        schedules={c.dataset: {"cron": c.trigger.schedule.cron, "timezone": c.trigger.schedule.timezone,
                               "flexible_window_minutes": c.trigger.schedule.flexible_window_minutes}
                   for c in contracts if c.trigger and c.trigger.schedule},
        arrivals=tuple(c.dataset for c in contracts if c.trigger and c.trigger.on_arrival),
        tags=inputs.tags, enabled=enabled))
    rules = AlertRules(scope, "alert_rules", AlertRulesConfig(
        tenant_id=inputs.tenant_id, partition=inputs.partition, region=inputs.region, account_id=inputs.account_id,
        names=names, virtual_cluster_id=virtual_cluster.id, state_machine_arn=machine_arn,
        event_source=names["event_source"], topic_arn=topic.arn, dlq_arn=triggers.dlq_arn, kms_key_arn=key_arn,
        tags=inputs.tags, enabled=enabled, is_local=f"({inputs.is_local[2:-1]})"))
    alarms = FreshnessAlarms(scope, "freshness", FreshnessAlarmsConfig(
        tenant_id=inputs.tenant_id, namespace=names["metric_namespace"],
        targets={c.dataset: c.freshness.max_minutes_since_publish for c in contracts if c.freshness},
        topic_arn=topic.arn, tags=inputs.tags, enabled=enabled))
    PipelineSignals(scope, "signals", PipelineSignalsConfig(
        role_id=job_role_id, partition=inputs.partition, region=inputs.region, account_id=inputs.account_id,
        metric_namespace=names["metric_namespace"], event_source=names["event_source"], enabled=enabled))

    def when_enabled(value: str) -> str:
        return f'${{{enabled} ? "{value}" : ""}}'

    outputs = {
        "enabled": f"${{{enabled}}}",
        "state_machine_arn": machine.arn,
        "runner_role_arn": machine.role_arn,
        "alerts_topic_arn": topic.arn,
        "metric_namespace": when_enabled(names["metric_namespace"]),
        "event_source": when_enabled(names["event_source"]),
        "schedules": triggers.schedule_names,
        "arrival_rules": triggers.arrival_rule_names,
        "scheduler_role_arn": triggers.scheduler_role_arn,
        "events_role_arn": triggers.events_role_arn,
        "trigger_dlq_url": triggers.dlq_url,
        "alert_rules": rules.rule_names,
        "alert_events_queue_url": rules.queue_url,
        "freshness_alarms": alarms.alarm_names,
        "freshness_minutes": {c.dataset: c.freshness.max_minutes_since_publish for c in contracts if c.freshness},
    }
    return OrchestrationResources(state_machine_arn=machine.arn, topic_arn=topic.arn, outputs=outputs)

