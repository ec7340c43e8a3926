"""modules/maintenance_schedule.py: the schedule and its role, off unless var.maintenance_schedule.enabled,
starting the request ``deploy-jobs --maintain`` sends, with a role that may start runs on the tenant's
virtual cluster only, with the job role only."""
from __future__ import annotations

import json
import re

import botocore.session
from botocore.validate import ParamValidator

import tenant_model as model
from infra.deploy.request import MAINTAIN, MAINTENANCE_PREFIX, request_from_universal_input
from modules.maintenance_schedule import MaintenanceScheduleConfig
from tests.modules.helpers import condition, data, document_statements, json_policy_statements, resource

COUNT = "${var.maintenance_schedule.enabled ? 1 : 0}"


def test_documented_defaults():
    cfg = MaintenanceScheduleConfig(schedule_name="s", role_name="r", partition="aws", region="eu-west-1",
                                    account_id="123456789012", virtual_cluster_arn="vc", job_role_arn="j",
                                    kms_key_arn="k", target_arn="t", request_input="{}", tags={})
    assert (cfg.enabled, cfg.schedule_expression, cfg.timezone, cfg.flexible_window_minutes) == \
        ("false", "cron(0 3 ? * SUN *)", "UTC", 60)
    assert (cfg.maximum_retry_attempts, cfg.maximum_event_age_seconds) == (2, 3600)
    assert cfg.schedule_arn == "arn:aws:scheduler:eu-west-1:123456789012:schedule/default/s"
    assert model.MAINTENANCE_SCHEDULE_DEFAULTS["enabled"] is False  # off by default (modules/README.md says why)


def test_every_resource_is_counted_on_the_input(tenant_module):
    role = resource(tenant_module, "aws_iam_role", "maintenance_role")
    policy = resource(tenant_module, "aws_iam_role_policy", "maintenance_policy")
    schedule = resource(tenant_module, "aws_scheduler_schedule", "maintenance_schedule")
    assert role["count"] == policy["count"] == schedule["count"] == COUNT
    assert role["name"] == "${var.tenant_id}-maintenance-scheduler" and policy["role"] == "${aws_iam_role.maintenance_role[0].id}"
    assert schedule["name"] == "${var.tenant_id}-lake-maintenance" and schedule["group_name"] == "default"
    assert schedule["schedule_expression"] == "${var.maintenance_schedule.schedule_expression}"
    assert schedule["schedule_expression_timezone"] == "${var.maintenance_schedule.timezone}"
    assert schedule["kms_key_arn"] == "${aws_kms_key.kms_key.arn}"  # CKV_AWS_297: the tenant key
    assert schedule["flexible_time_window"]["mode"] == \
        '${var.maintenance_schedule.flexible_window_minutes > 0 ? "FLEXIBLE" : "OFF"}'
    target = schedule["target"]
    assert target["arn"] == "arn:${data.aws_partition.inputs_partition.partition}:scheduler:::aws-sdk:emrcontainers:startJobRun"
    assert target["role_arn"] == "${aws_iam_role.maintenance_role[0].arn}"
    assert target["retry_policy"] == {"maximum_retry_attempts": 2, "maximum_event_age_in_seconds": 3600}
    outputs = tenant_module["output"]
    assert outputs["maintenance_scheduler_role_arn"]["value"] == '${join("", aws_iam_role.maintenance_role[*].arn)}'


def test_the_role_may_only_start_runs_on_its_cluster_with_the_job_role(tenant_module):
    trust = document_statements(tenant_module, "maintenance_trust")
    [(sid, statement)] = trust.items()
    assert statement["principals"] == [{"type": "Service", "identifiers": ["scheduler.amazonaws.com"]}]
    assert condition(statement, "StringEquals", "aws:SourceAccount") == ["${var.account_id}"]
    assert condition(statement, "ArnEquals", "aws:SourceArn") == [
        "arn:${data.aws_partition.inputs_partition.partition}:scheduler:${var.region}:${var.account_id}:"
        "schedule/default/${var.tenant_id}-lake-maintenance"]
    permissions = document_statements(tenant_module, "maintenance_permissions")
    assert set(permissions) == {"StartRunsOnTenantCluster", "PassJobRoleToEmr", "DecryptScheduleInput"}
    start = permissions["StartRunsOnTenantCluster"]
    assert start["actions"] == ["emr-containers:StartJobRun"]
    assert start["resources"] == ["${aws_emrcontainers_virtual_cluster.emr_cluster.arn}"]
    assert condition(start, "ArnEquals", "emr-containers:ExecutionRoleArn") == ["${aws_iam_role.roles_job_execution.arn}"]
    passing = permissions["PassJobRoleToEmr"]
    assert passing["resources"] == ["${aws_iam_role.roles_job_execution.arn}"]
    assert condition(passing, "StringEquals", "iam:PassedToService") == ["emr-containers.amazonaws.com"]
    assert permissions["DecryptScheduleInput"]["actions"] == ["kms:Decrypt"]
    assert not any(a.startswith(("s3:", "glue:", "logs:")) for s in permissions.values() for a in s["actions"])
    # The key's allow-list names the scheduler role only when the schedule exists.
    key_policy = json_policy_statements(resource(tenant_module, "aws_kms_key", "kms_key")["policy"])
    allowed = condition(key_policy["DenyKeyUseOutsideTenant"], "ArnNotLike", "aws:PrincipalArn")
    assert 'var.maintenance_schedule.enabled ? ["arn:${data.aws_partition.inputs_partition.partition}:iam::' \
           '${var.account_id}:role/${var.tenant_id}-maintenance-scheduler"] : []' in allowed[0]


def _render(template: str) -> str:
    """The input with every ``${...}`` replaced by a plausible value of its kind."""
    values = {"var.tenant_id": "acme", "var.region": "eu-west-1", "local.retention.snapshots": "7",
              "local.maintenance_classification": "gdpr", "local.maintenance_catalog_name": "lake_0123456789"}

    def value(match: re.Match) -> str:
        ref = match.group(1)
        if ref in values:
            return values[ref]
        if ref.endswith(".arn"):
            return "arn:aws:iam::123456789012:role/x"
        return "x" + str(abs(hash(ref)) % 1000)

    return re.sub(r"\$\{([^}]+)\}", value, template)


def test_the_input_is_the_deploys_maintenance_request_and_valid_for_start_job_run(tenant_module):
    template = resource(tenant_module, "aws_scheduler_schedule", "maintenance_schedule")["target"]["input"]
    assert '\\"' not in template  # no quoted expression inside: it is a template Terraform evaluates
    request = request_from_universal_input(json.loads(_render(template)))
    driver = request["jobDriver"]["sparkSubmitJobDriver"]
    assert driver["entryPoint"] == f"s3://acme-eu-west-1-lake/{MAINTENANCE_PREFIX}/entrypoint.py"
    assert driver["entryPointArguments"][:3] == [MAINTAIN, "--snapshot-retention-days", "7"]
    assert f"--archives s3://acme-eu-west-1-lake/{MAINTENANCE_PREFIX}/job_deps.tar.gz#deps" in driver["sparkSubmitParameters"]
    assert "clientToken" not in request and request["tags"]["trigger"] == "schedule"
    shape = botocore.session.get_session().get_service_model("emr-containers").operation_model("StartJobRun").input_shape
    report = ParamValidator().validate({**request, "clientToken": "0" * 32}, shape)
    assert not report.has_errors(), report.generate_report()
    assert "${local.maintenance_catalog_name}" in template
    assert data(tenant_module, "aws_iam_policy_document", "maintenance_trust")
    assert tenant_module["locals"]["maintenance_catalog_name"] == \
        'lake_${substr(sha256("s3://${var.tenant_id}-${var.region}-lake"), 0, 10)}'
