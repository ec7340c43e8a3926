"""The maintenance schedule of an applied tenant (acme enables it): what EventBridge Scheduler holds on the
emulator is the request ``deploy-jobs --maintain`` sends, valid for ``StartJobRun``, with the role of its own."""
from __future__ import annotations

import json

import botocore.session
import pytest
from botocore.validate import ParamValidator

from infra.deploy import job_deps
from infra.deploy.request import (
    MAINTAIN, RequestOptions, request_from_universal_input, scheduled_maintenance_request, universal_target_input,
)
from infra.deploy.target import target_from_outputs

pytestmark = pytest.mark.integration
TENANT = "acme"


@pytest.fixture(scope="module")
def acme(applied_tenant):
    return applied_tenant(TENANT)


def test_the_applied_schedule_runs_the_deploys_maintenance_request(acme, boto_session):
    scheduler = boto_session("scheduler")
    schedule = scheduler.get_schedule(Name=acme["maintenance_schedule_name"], GroupName="default")
    assert acme["maintenance_schedule_name"] == "acme-lake-maintenance"
    assert schedule["ScheduleExpression"] == "cron(0 3 ? * SUN *)"
    assert schedule["ScheduleExpressionTimezone"] == "UTC"
    assert schedule["FlexibleTimeWindow"] == {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 60}
    assert schedule["KmsKeyArn"] == acme["kms_key_arn"]
    target = schedule["Target"]
    assert target["Arn"] == "arn:aws:scheduler:::aws-sdk:emrcontainers:startJobRun"
    assert target["RoleArn"] == acme["maintenance_scheduler_role_arn"]
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 3600}

    # What Terraform rendered from the module's references equals what the deploy builds from the outputs.
    deploy_target = target_from_outputs(TENANT, acme)
    python = job_deps.target_for_release(job_deps.DEFAULT_RELEASE_LABEL, job_deps.DEFAULT_ARCH).interpreter
    expected = scheduled_maintenance_request(deploy_target, RequestOptions(python=python))
    sent = json.loads(target["Input"])
    assert sent == universal_target_input(expected)
    request = request_from_universal_input(sent)
    assert request["virtualClusterId"] == acme["emr_virtual_cluster_id"]
    assert request["executionRoleArn"] == acme["job_execution_role_arn"]
    args = request["jobDriver"]["sparkSubmitJobDriver"]["entryPointArguments"]
    assert args[:3] == [MAINTAIN, "--snapshot-retention-days", str(acme["retention_days"]["snapshots"])]
    # Valid for the service model once the SDK has filled in the idempotency token, as it does per call.
    shape = botocore.session.get_session().get_service_model("emr-containers").operation_model("StartJobRun").input_shape
    assert shape.members["clientToken"].metadata.get("idempotencyToken") is True
    report = ParamValidator().validate({**request, "clientToken": "0" * 32}, shape)
    assert not report.has_errors(), report.generate_report()


def test_the_scheduler_role_trusts_only_the_scheduler_for_this_schedule(acme, boto_session):
    iam = boto_session("iam")
    name = acme["maintenance_scheduler_role_arn"].rsplit("/", 1)[-1]
    assert name == "acme-maintenance-scheduler"
    trust = iam.get_role(RoleName=name)["Role"]["AssumeRolePolicyDocument"]
    trust = json.loads(trust) if isinstance(trust, str) else trust
    [statement] = trust["Statement"]
    assert statement["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert statement["Condition"]["StringEquals"]["aws:SourceAccount"] == "123456789012"
    assert statement["Condition"]["ArnEquals"]["aws:SourceArn"] == \
        "arn:aws:scheduler:eu-west-1:123456789012:schedule/default/acme-lake-maintenance"
    assert iam.list_role_policies(RoleName=name)["PolicyNames"] == ["start-maintenance-runs"]
