"""Table maintenance on a schedule: an EventBridge Scheduler schedule that starts one EMR on EKS job run
of ``spark_jobs maintain`` on the tenant's virtual cluster, and the role it starts it with.

| resource | name | what |
|---|---|---|
| IAM role | ``<tenant>-maintenance-scheduler`` | assumed only by ``scheduler.amazonaws.com`` for this schedule (``aws:SourceAccount``, ``aws:SourceArn``) |
| its policy ``start-maintenance-runs`` | | ``emr-containers:StartJobRun`` on the tenant's virtual cluster only, and only with the job role as execution role; ``iam:PassRole`` of the job role only, to EMR on EKS; ``kms:Decrypt`` with the tenant key (the schedule's input is encrypted with it) |
| schedule | ``<tenant>-lake-maintenance`` (group ``default``) | ``schedule_expression`` in ``timezone``, within ``flexible_window_minutes``; target the universal target ``arn:aws:scheduler:::aws-sdk:emrcontainers:startJobRun`` with the request of ``infra.deploy.request.scheduled_maintenance_request``; input encrypted with the tenant key |

Every resource has ``count = enabled ? 1 : 0``: a tenant without the schedule has none of them. The
role has no S3, Glue or log permission: the job run does the work, as the job role.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

from cdktf import Token
from cdktf_cdktf_provider_aws.iam_role import IamRole
from cdktf_cdktf_provider_aws.iam_role_policy import IamRolePolicy
from cdktf_cdktf_provider_aws.scheduler_schedule import (
    SchedulerSchedule,
    SchedulerScheduleFlexibleTimeWindow,
    SchedulerScheduleTarget,
    SchedulerScheduleTargetRetryPolicy,
)
from constructs import Construct

import tenant_model as model
from modules.policy_document import Condition, Statement, for_service, policy_document
from modules.refs import address

SCHEDULE_GROUP = "default"
EMR_CONTAINERS_SERVICE = "emr-containers.amazonaws.com"
SCHEDULER_SERVICE = "scheduler.amazonaws.com"
DEFAULTS = model.MAINTENANCE_SCHEDULE_DEFAULTS


@dataclasses.dataclass(frozen=True)
class MaintenanceScheduleConfig:
    """Inputs of ``MaintenanceSchedule`` (values may be Terraform expressions).

    Attributes:
        schedule_name: ``<tenant>-lake-maintenance``.
        role_name: ``<tenant>-maintenance-scheduler``.
        partition, region, account_id: where the schedule runs.
        virtual_cluster_arn: the only virtual cluster the role may start runs on.
        job_role_arn: the only execution role the runs may use, and the only role the role may pass.
        kms_key_arn: the tenant key; encrypts the schedule's input (``CKV_AWS_297``).
        target_arn: the universal target of StartJobRun, ``arn:<partition>:scheduler:::aws-sdk:emrcontainers:startJobRun``
            (``infra.deploy.request.SCHEDULER_TARGET``).
        request_input: the target's input, JSON (``infra.deploy.request.universal_target_input`` of
            ``scheduled_maintenance_request``; may hold ``${...}`` references).
        tags: tags of the role (schedules take none).
        enabled: a bare Terraform bool expression (no ``${}``); false creates nothing. @default - "false"
        schedule_expression: ``cron(...)`` or ``rate(...)``. @default - "cron(0 3 ? * SUN *)" (Sundays 03:00)
        timezone: the expression's time zone. @default - "UTC"
        flexible_window_minutes: start within this many minutes after the time (``FLEXIBLE``); 0 starts on
            time (``OFF``). A number or a bare Terraform expression. @default - 60
        maximum_retry_attempts: retries of a StartJobRun call that failed. @default - 2
        maximum_event_age_seconds: no retry after this long. @default - 3600
    """

    schedule_name: str
    role_name: str
    partition: str
    region: str
    account_id: str
    virtual_cluster_arn: str
    job_role_arn: str
    kms_key_arn: str
    target_arn: str
    request_input: str
    tags: Mapping[str, str]
    enabled: str = "false"
    schedule_expression: str = DEFAULTS["schedule_expression"]
    timezone: str = DEFAULTS["timezone"]
    flexible_window_minutes: str | int = DEFAULTS["flexible_window_minutes"]
    maximum_retry_attempts: int = 2
    maximum_event_age_seconds: int = 3600

    @property
    def schedule_arn(self) -> str:
        return (f"arn:{self.partition}:scheduler:{self.region}:{self.account_id}:schedule/"
                f"{SCHEDULE_GROUP}/{self.schedule_name}")


def trust_statements(cfg: MaintenanceScheduleConfig) -> list[Statement]:
    """EventBridge Scheduler, for this schedule of this account only (the confused-deputy conditions)."""
    return [for_service("SchedulerForTheMaintenanceSchedule", ["sts:AssumeRole"], [], SCHEDULER_SERVICE,
                        [cfg.account_id], [cfg.schedule_arn], arn_test="ArnEquals")]


def permission_statements(cfg: MaintenanceScheduleConfig) -> list[Statement]:
    return [
        Statement("StartRunsOnTenantCluster", ["emr-containers:StartJobRun"], [cfg.virtual_cluster_arn],
                  conditions=[Condition("ArnEquals", "emr-containers:ExecutionRoleArn", [cfg.job_role_arn])]),
        Statement("PassJobRoleToEmr", ["iam:PassRole"], [cfg.job_role_arn],
                  conditions=[Condition("StringEquals", "iam:PassedToService", [EMR_CONTAINERS_SERVICE])]),
        Statement("DecryptScheduleInput", ["kms:Decrypt"], [cfg.kms_key_arn]),
    ]


class MaintenanceSchedule(Construct):
    """The schedule and its role (``count`` 0 or 1). ``role_arn``: the role's ARN, or "" without it."""

    def __init__(self, scope: Construct, id_: str, cfg: MaintenanceScheduleConfig) -> None:
        super().__init__(scope, id_)
        count = Token.as_number(f"${{{cfg.enabled} ? 1 : 0}}")
        trust = policy_document(self, "trust", trust_statements(cfg))
        self.role = IamRole(self, "role", count=count, name=cfg.role_name, assume_role_policy=trust.json,
                            description="tenantlake maintenance scheduler: starts maintenance runs on the tenant's "
                                        "virtual cluster", tags=cfg.tags)
        role = address(self.role)
        permissions = policy_document(self, "permissions", permission_statements(cfg))
        IamRolePolicy(self, "policy", count=count, name="start-maintenance-runs", role=f"${{{role}[0].id}}",
                      policy=permissions.json)
        window_ref = str(cfg.flexible_window_minutes)
        self.schedule = SchedulerSchedule(
            self, "schedule", count=count, name=cfg.schedule_name, group_name=SCHEDULE_GROUP,
            description="tenantlake: Iceberg table maintenance (spark_jobs maintain) on EMR on EKS",
            schedule_expression=cfg.schedule_expression, schedule_expression_timezone=cfg.timezone,
            state="ENABLED", kms_key_arn=cfg.kms_key_arn,
            flexible_time_window=SchedulerScheduleFlexibleTimeWindow(
                mode=f'${{{window_ref} > 0 ? "FLEXIBLE" : "OFF"}}',
                maximum_window_in_minutes=Token.as_number(f"${{{window_ref} > 0 ? {window_ref} : null}}")),
            target=SchedulerScheduleTarget(
                arn=cfg.target_arn, role_arn=f"${{{role}[0].arn}}", input=cfg.request_input,
                retry_policy=SchedulerScheduleTargetRetryPolicy(
                    maximum_retry_attempts=cfg.maximum_retry_attempts,
                    maximum_event_age_in_seconds=cfg.maximum_event_age_seconds)))
        self.role_arn = f'${{join("", {role}[*].arn)}}'
        self.schedule_name = f'${{join("", {address(self.schedule)}[*].name)}}'

