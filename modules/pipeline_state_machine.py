"""The tenant's pipeline state machine: runs a dataset's layers on EMR on EKS, one ``.sync`` job run per layer, with
retries and an alert, and at most one execution per dataset and trigger window.

| resource | name | what |
|---|---|---|
| IAM role | ``<tenant>-pipeline-runner`` | assumed only by ``states.amazonaws.com`` for this state machine (``aws:SourceAccount``, ``aws:SourceArn``) |
| its policy ``run-pipeline`` | | ``emr-containers:StartJobRun`` on the tenant's virtual cluster only with the job role as execution role; ``DescribeJobRun``/``CancelJobRun`` on its job runs; ``iam:PassRole`` of the job role only, to EMR on EKS; ``states:StartExecution`` of itself (the window claim); ``sns:Publish`` to the alerts topic with the tenant key through SNS; vended-log delivery and X-Ray (their actions take no resource) |
| log group | ``/aws/vendedlogs/states/<tenant>-lake-pipeline`` | the execution history (``ALL``, with execution data: requests and alerts, never a record), encrypted with the tenant key |
| state machine | ``<tenant>-lake-pipeline`` (``STANDARD``) | ``definition`` below; logging on, X-Ray tracing on |

**The definition** (``definition()``; JSONPath, intrinsic functions only). An execution's input is
``{"dataset": D, "trigger": "schedule" | "arrival", "time": "<ISO 8601 UTC>"}`` (what the schedules and arrival rules of
``modules/pipeline_triggers.py`` send); it runs in two steps:

1. **Claim the window.** The window is the trigger's time cut to the minute for a schedule, or to the start of the
   dataset's debounce window for an arrival (``debounce_minutes`` of its contract, a divisor of 60). The execution
   starts the same state machine again, named ``<dataset>-<trigger>-<YYYY-MM-DDTHH>-<MM>`` with ``run: true`` in its
   input. Step Functions refuses a second execution of that name (``ExecutionAlreadyExists``, for 90 days), so every
   event of one window (a flush of many landing objects, a retried schedule) starts one run: the others end
   ``Debounced``.
2. **Run** (``run: true``). An arrival run first waits out its window (``debounce_minutes``), so the whole flush has
   landed. Then bronze, silver and gold, each ``arn:aws:states:::emr-containers:startJobRun.sync`` with the request
   ``infra.deploy.request.automation_request`` builds for that layer (``deploy-jobs --per-layer``'s, from the stable
   pipeline artifact), member names capitalised as the integration takes them, plus the tag ``execution`` = this
   execution's name. Each layer retries any error (``RETRY``: 3 more attempts, 30 s doubling to at most 300 s, full
   jitter); once they are spent, ``Catch`` publishes an alert to the tenant's topic naming the tenant, the dataset,
   the layer, the trigger, the execution and the error's name (never its cause: no record value leaves the lake),
   and the execution fails (``tenantlake.LayerFailed``).

Two runs of one dataset in different windows may still overlap: the jobs' leases refuse the second layer run
(``spark_jobs/runs/leases.py``), which then fails and is retried with backoff like any other failure.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Mapping, Sequence

from cdktf_cdktf_provider_aws.cloudwatch_log_group import CloudwatchLogGroup
from cdktf_cdktf_provider_aws.iam_role import IamRole
from cdktf_cdktf_provider_aws.iam_role_policy import IamRolePolicy
from cdktf_cdktf_provider_aws.sfn_state_machine import (
    SfnStateMachine,
    SfnStateMachineLoggingConfiguration,
    SfnStateMachineTracingConfiguration,
)
from cdktf import Token
from constructs import Construct

from modules.policy_document import Condition, Statement, for_service, policy_document
from modules.refs import address

STATES_SERVICE = "states.amazonaws.com"
EMR_CONTAINERS_SERVICE = "emr-containers.amazonaws.com"
EMR_SYNC_RESOURCE = "arn:aws:states:::emr-containers:startJobRun.sync"
START_EXECUTION_RESOURCE = "arn:aws:states:::states:startExecution"
SNS_PUBLISH_RESOURCE = "arn:aws:states:::sns:publish"
LAYERS: tuple[str, ...] = ("bronze", "silver", "gold")
TRIGGERS: tuple[str, ...] = ("schedule", "arrival")
LAYER_FAILED_ERROR = "tenantlake.LayerFailed"
ALREADY_EXISTS_ERROR = "StepFunctions.ExecutionAlreadyExistsException"
# Step Functions delivers vended logs and X-Ray traces with these; none of them takes a resource (AWS's
# "Logging using CloudWatch Logs" and "AWS X-Ray" pages of the Step Functions developer guide).
LOG_DELIVERY_ACTIONS: tuple[str, ...] = (
    "logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery", "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies", "logs:DescribeLogGroups")
XRAY_ACTIONS: tuple[str, ...] = ("xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules",
                                 "xray:GetSamplingTargets")
PUBLISH_KEY_ACTIONS: tuple[str, ...] = ("kms:GenerateDataKey", "kms:Decrypt")


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """How a failed layer is retried (``Retry`` of its task; ``ErrorEquals: States.ALL``).

    Attributes:
        interval_seconds: before the first retry. @default - 30
        backoff_rate: each retry waits this many times longer. @default - 2
        max_attempts: retries after the first attempt (4 attempts in all). @default - 3
        max_delay_seconds: no wait longer than this. @default - 300
        jitter: ``FULL`` (each wait a random time up to its length) or ``NONE``. @default - "FULL"
    """

    interval_seconds: int = 30
    backoff_rate: float = 2.0
    max_attempts: int = 3
    max_delay_seconds: int = 300
    jitter: str = "FULL"

    def retrier(self) -> dict[str, Any]:
        return {"ErrorEquals": ["States.ALL"], "IntervalSeconds": self.interval_seconds,
                "BackoffRate": self.backoff_rate, "MaxAttempts": self.max_attempts,
                "MaxDelaySeconds": self.max_delay_seconds, "JitterStrategy": self.jitter}


RETRY = RetryPolicy()


@dataclasses.dataclass(frozen=True)
class DatasetRun:
    """One dataset the state machine runs.

    Attributes:
        dataset: the dataset (its contract's name).
        requests: per layer (bronze, silver, gold), the StartJobRun request in the integration's member names
            (``infra.deploy.request.universal_target_input`` of ``automation_request``).
        debounce_minutes: the contract's ``on_arrival`` window; None when the dataset has no arrival trigger.
    """

    dataset: str
    requests: Mapping[str, Mapping[str, Any]]
    debounce_minutes: int | None = None


def _state(name: str) -> str:
    return name  # states are named for people reading the console: "iot: silver", "iot: silver failed"


def window_table(minutes: int) -> str:
    """The 60 window starts (``"00"``...``"59"``, minute -> start of its window) as a JSON text, for
    ``States.ArrayGetItem(States.StringToJson(<this>), <minute>)``."""
    return json.dumps([f"{(minute // minutes) * minutes:02d}" for minute in range(60)], separators=(",", ""))


def window_name_expression(minutes: int) -> str:
    """``<dataset>-<trigger>-<YYYY-MM-DDTHH>-<window start MM>`` from ``$.time`` (``2024-05-01T10:03:27Z``), with
    intrinsic functions only: the hour part, then the minute read as a number (``1MM`` - 100, since ``"03"`` is not
    JSON) and looked up in ``window_table``."""
    hour = "States.ArrayGetItem(States.StringSplit($.time, ':'), 0)"
    minute = ("States.MathAdd(States.StringToJson(States.Format('1{}', "
              "States.ArrayGetItem(States.StringSplit($.time, ':'), 1))), -100)")
    start = f"States.ArrayGetItem(States.StringToJson('{window_table(minutes)}'), {minute})"
    return f"States.Format('{{}}-{{}}-{{}}-{{}}', $.dataset, $.trigger, {hour}, {start})"


def _window_state(minutes: int) -> dict[str, Any]:
    return {"Type": "Pass", "Next": "Claim the window", "Parameters": {
        "dataset.$": "$.dataset", "trigger.$": "$.trigger", "time.$": "$.time",
        "name.$": window_name_expression(minutes)}}


def definition(datasets: Sequence[DatasetRun], tenant_id: str, topic_arn: str, retry: RetryPolicy = RETRY) -> dict[str, Any]:
    """The state machine's definition (module docstring). ``tenant_id`` and ``topic_arn`` may be Terraform
    references; the requests too."""
    states: dict[str, Any] = {
        "Dispatch or run": {"Type": "Choice", "Default": "Which window",
                            "Choices": [{"Variable": "$.run", "IsPresent": True, "Next": "Which dataset"}]},
        "Which window": {"Type": "Choice", "Default": "Window: schedule", "Choices": [
            {"And": [{"Variable": "$.dataset", "StringEquals": run.dataset},
                     {"Variable": "$.trigger", "StringEquals": "arrival"}], "Next": f"Window: {run.dataset} arrival"}
            for run in datasets if run.debounce_minutes]},
        "Window: schedule": _window_state(1),
        "Claim the window": {
            "Type": "Task", "Resource": START_EXECUTION_RESOURCE, "ResultPath": None, "Next": "Claimed",
            "Parameters": {"StateMachineArn.$": "$$.StateMachine.Id", "Name.$": "$.name", "Input": {
                "dataset.$": "$.dataset", "trigger.$": "$.trigger", "time.$": "$.time", "run": True,
                "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$": "$$.Execution.Id"}},
            "Catch": [{"ErrorEquals": [ALREADY_EXISTS_ERROR], "ResultPath": None, "Next": "Debounced"}]},
        "Claimed": {"Type": "Succeed", "Comment": "the run of this window started"},
        "Debounced": {"Type": "Succeed", "Comment": "a run of this window exists already"},
        "Which dataset": {"Type": "Choice", "Default": "Unknown dataset", "Choices": [
            {"Variable": "$.dataset", "StringEquals": run.dataset, "Next": _first_state(run)} for run in datasets]},
        "Unknown dataset": {"Type": "Fail", "Error": "tenantlake.UnknownDataset",
                            "Cause": "the input names a dataset this state machine does not run"},
        "Publish alert": {
            "Type": "Task", "Resource": SNS_PUBLISH_RESOURCE, "ResultPath": None, "Next": "Layer failed",
            "Parameters": {"TopicArn": topic_arn, "Message.$": "States.JsonToString($.alert)",
                           "Subject.$": "States.Format('tenantlake {}: {} {} failed', $.alert.tenant, "
                                        "$.alert.dataset, $.alert.layer)"},
            "Retry": [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 2, "BackoffRate": 2, "MaxAttempts": 2}]},
        "Layer failed": {"Type": "Fail", "Error": LAYER_FAILED_ERROR,
                         "Cause": "a layer failed after its retries; the alert names it"},
    }
    for run in datasets:
        if run.debounce_minutes:
            states[f"Window: {run.dataset} arrival"] = _window_state(run.debounce_minutes)
            states[f"{run.dataset}: arrival?"] = {"Type": "Choice", "Default": f"{run.dataset}: bronze", "Choices": [
                {"Variable": "$.trigger", "StringEquals": "arrival", "Next": f"{run.dataset}: wait for the window"}]}
            states[f"{run.dataset}: wait for the window"] = {"Type": "Wait", "Seconds": run.debounce_minutes * 60,
                                                            "Next": f"{run.dataset}: bronze"}
        for index, layer in enumerate(LAYERS):
            following = LAYERS[index + 1] if index + 1 < len(LAYERS) else None
            parameters = {**run.requests[layer]}
            parameters["Tags"] = {**parameters.get("Tags", {}), "execution.$": "$$.Execution.Name"}
            states[f"{run.dataset}: {layer}"] = {
                "Type": "Task", "Resource": EMR_SYNC_RESOURCE, "Parameters": parameters, "ResultPath": None,
                "Next": f"{run.dataset}: {following}" if following else f"{run.dataset}: done",
                "Retry": [retry.retrier()],
                "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error",
                           "Next": f"{run.dataset}: {layer} failed"}]}
            states[f"{run.dataset}: {layer} failed"] = {
                "Type": "Pass", "ResultPath": "$.alert", "Next": "Publish alert", "Parameters": {
                    "alert": "pipeline layer failed", "tenant": tenant_id, "dataset": run.dataset, "layer": layer,
                    "trigger.$": "$.trigger", "execution.$": "$$.Execution.Name", "error.$": "$.error.Error"}}
        states[f"{run.dataset}: done"] = {"Type": "Succeed"}
    return {"Comment": "tenantlake: a dataset's bronze, silver and gold on EMR on EKS (modules/pipeline_state_machine.py)",
            "StartAt": "Dispatch or run", "States": states}


def _first_state(run: DatasetRun) -> str:
    return f"{run.dataset}: arrival?" if run.debounce_minutes else f"{run.dataset}: bronze"


def swap_sync_tasks(definition_: Mapping[str, Any], replacement: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``definition_`` whose ``emr-containers`` ``.sync`` tasks take ``replacement``'s keys instead of
    their ``Resource`` and ``Parameters`` (their ``Retry``, ``Catch`` and ``Next`` stay): what a test runs in
    moto's interpreter, which cannot run that integration. Nothing else changes."""
    swapped = json.loads(json.dumps(definition_))
    for state in swapped["States"].values():
        if state.get("Resource") == EMR_SYNC_RESOURCE:
            state.pop("Parameters", None)
            state.update(json.loads(json.dumps(replacement)))
    return swapped


@dataclasses.dataclass(frozen=True)
class PipelineStateMachineConfig:
    """Inputs of ``PipelineStateMachine`` (values may be Terraform expressions).

    Attributes:
        name: ``<tenant>-lake-pipeline``.
        role_name: ``<tenant>-pipeline-runner``.
        log_group_name: ``/aws/vendedlogs/states/<tenant>-lake-pipeline``.
        partition, region, account_id: where it runs.
        tenant_id: named in every alert.
        virtual_cluster_arn: the only virtual cluster it may start job runs on.
        job_role_arn: the only execution role of those runs, and the only role it may pass.
        kms_key_arn: the tenant key: the log group's, and the alerts topic's (it publishes through SNS with it).
        topic_arn: the alerts topic.
        datasets: the datasets it runs (``DatasetRun``).
        tags: tags of every taggable resource.
        log_retention_days: days the log group keeps the history (the module passes retention_days["logs"]).
        enabled: a bare Terraform bool expression: false creates nothing. @default - "false"
        retry: how a failed layer is retried. @default - ``RETRY``
    """

    name: str
    role_name: str
    log_group_name: str
    partition: str
    region: str
    account_id: str
    tenant_id: str
    virtual_cluster_arn: str
    job_role_arn: str
    kms_key_arn: str
    topic_arn: str
    datasets: Sequence[DatasetRun]
    tags: Mapping[str, str]
    log_retention_days: Any
    enabled: str = "false"
    retry: RetryPolicy = RETRY

    @property
    def arn(self) -> str:
        return f"arn:{self.partition}:states:{self.region}:{self.account_id}:stateMachine:{self.name}"


def trust_statements(cfg: PipelineStateMachineConfig) -> list[Statement]:
    """Step Functions, for this state machine of this account only."""
    return [for_service("StepFunctionsForThePipeline", ["sts:AssumeRole"], [], STATES_SERVICE, [cfg.account_id],
                        [cfg.arn], arn_test="ArnEquals")]


def permission_statements(cfg: PipelineStateMachineConfig) -> list[Statement]:
    return [
        Statement("StartRunsOnTenantCluster", ["emr-containers:StartJobRun"], [cfg.virtual_cluster_arn],
                  conditions=[Condition("ArnEquals", "emr-containers:ExecutionRoleArn", [cfg.job_role_arn])]),
        Statement("WatchAndCancelItsRuns", ["emr-containers:DescribeJobRun", "emr-containers:CancelJobRun"],
                  [f"{cfg.virtual_cluster_arn}/jobruns/*"]),
        Statement("PassJobRoleToEmr", ["iam:PassRole"], [cfg.job_role_arn],
                  conditions=[Condition("StringEquals", "iam:PassedToService", [EMR_CONTAINERS_SERVICE])]),
        Statement("ClaimTriggerWindows", ["states:StartExecution"], [cfg.arn]),
        Statement("PublishAlerts", ["sns:Publish"], [cfg.topic_arn]),
        Statement("EncryptAlertsThroughSns", list(PUBLISH_KEY_ACTIONS), [cfg.kms_key_arn],
                  conditions=[Condition("StringEquals", "kms:ViaService", [f"sns.{cfg.region}.amazonaws.com"])]),
        Statement("DeliverExecutionLogs", list(LOG_DELIVERY_ACTIONS), ["*"]),
        Statement("SendTraces", list(XRAY_ACTIONS), ["*"]),
    ]


class PipelineStateMachine(Construct):
    """The state machine, its role, policy and log group (``count`` 0 or 1). ``arn``: the state machine's ARN, or ""
    without it; ``role_arn`` likewise."""

    def __init__(self, scope: Construct, id_: str, cfg: PipelineStateMachineConfig) -> None:
        super().__init__(scope, id_)
        count = Token.as_number(f"${{{cfg.enabled} ? 1 : 0}}")
        trust = policy_document(self, "trust", trust_statements(cfg))
        self.role = IamRole(self, "role", count=count, name=cfg.role_name, assume_role_policy=trust.json,
                            description="tenantlake pipeline runner: the state machine's role", tags=cfg.tags)
        role = address(self.role)
        permissions = policy_document(self, "permissions", permission_statements(cfg))
        IamRolePolicy(self, "policy", count=count, name="run-pipeline", role=f"${{{role}[0].id}}",
                      policy=permissions.json)
        self.log_group = CloudwatchLogGroup(self, "log_group", count=count, name=cfg.log_group_name,
                                            kms_key_id=cfg.kms_key_arn, retention_in_days=cfg.log_retention_days,
                                            tags=cfg.tags)
        text = json.dumps(definition(cfg.datasets, cfg.tenant_id, cfg.topic_arn, cfg.retry), indent=1)
        for reference in text.split("${")[1:]:
            if '"' in reference.split("}", 1)[0]:  # a reference with quotes would not survive as a template in JSON
                raise ValueError("the state machine's definition holds an expression with quotes; use a local")
        self.state_machine = SfnStateMachine(
            self, "state_machine", count=count, name=cfg.name, type="STANDARD", role_arn=f"${{{role}[0].arn}}",
            definition=text,
            logging_configuration=SfnStateMachineLoggingConfiguration(
                level="ALL", include_execution_data=True,
                log_destination=f"${{{address(self.log_group)}[0].arn}}:*"),
            tracing_configuration=SfnStateMachineTracingConfiguration(enabled=True),
            tags=cfg.tags)
        self.arn = f'${{join("", {address(self.state_machine)}[*].arn)}}'
        self.role_arn = f'${{join("", {role}[*].arn)}}'
