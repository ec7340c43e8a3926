"""infra/synth.py: the committed module is fresh, deterministic, valid, and its validations fire at plan time."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from infra import synth
from infra.local import terraform_config

TFTEST = r'''
mock_provider "aws" {
  mock_data "aws_iam_policy_document" {
    defaults = { json = "{\"Version\":\"2012-10-17\",\"Statement\":[]}" }
  }
  mock_data "aws_vpc" {
    defaults = { cidr_block = "10.0.0.0/16" }
  }
  mock_data "aws_subnets" {
    defaults = { ids = ["subnet-0b", "subnet-0a"] }
  }
  mock_data "aws_subnet" {
    defaults = { availability_zone = "eu-west-1a" }
  }
  mock_data "aws_route_tables" {
    defaults = { ids = ["rtb-01"] }
  }
  mock_data "aws_partition" {
    defaults = { partition = "aws" }
  }
  mock_data "aws_caller_identity" {
    defaults = { arn = "arn:aws:iam::123456789012:user/deployer", account_id = "123456789012" }
  }
  mock_data "aws_iam_session_context" {
    defaults = { issuer_arn = "arn:aws:iam::123456789012:user/deployer" }
  }
}

variables {
  tenant_id           = "acme"
  region              = "eu-west-1"
  account_id          = "123456789012"
  data_classification = ["gdpr", "pii"]
  vpc_ids             = ["vpc-0123456789abcdef0", "vpc-0fedcba9876543210"]
  tags                = { team = "data", tenant = "spoofed" }
}

run "valid_tenant_plans" {
  command = plan
  assert {
    condition     = aws_s3_bucket.lake_bucket.bucket == "acme-eu-west-1-lake"
    error_message = "lake bucket name"
  }
  assert {
    condition     = aws_s3_bucket.log_bucket_bucket.bucket == "acme-eu-west-1-lake-logs"
    error_message = "log bucket name"
  }
  assert {
    condition     = aws_kms_alias.kms_alias.name == "alias/acme-lake"
    error_message = "alias"
  }
  assert {
    condition     = local.resource_tags == { team = "data", tenant = "acme", data_classification = "gdpr-pii", environment = "local", cost_center = "data-platform" }
    error_message = "standard tags win over the user's tags"
  }
  assert {
    condition     = local.namespace == "emr-acme" && local.oidc_issuer == "oidc.eks.eu-west-1.amazonaws.com/id/TENANTLAKE"
    error_message = "namespace and OIDC issuer defaults"
  }
  assert {
    condition     = local.retention == { landing = 30, bronze = 365, quarantine = 30, logs = 90, snapshots = 7 }
    error_message = "retention defaults"
  }
  assert {
    condition     = length(aws_scheduler_schedule.maintenance_schedule) == 0 && length(aws_iam_role.maintenance_role) == 0 && output.maintenance_scheduler_role_arn == ""
    error_message = "no maintenance schedule by default"
  }
  assert {
    condition     = length(aws_vpc_endpoint.endpoints_gateway) == 2 && length(aws_vpc_endpoint.endpoints_interface) == 6
    error_message = "one gateway and three interface endpoints per VPC"
  }
  assert {
    condition     = local.endpoint_networks["vpc-0123456789abcdef0"].subnet_ids == ["subnet-0a"]
    error_message = "one subnet per availability zone, lowest id"
  }
  assert {
    condition     = aws_s3_bucket.lake_bucket.force_destroy == true
    error_message = "local environment may empty buckets on destroy"
  }
  assert {
    condition     = length(aws_lakeformation_permissions.lf_reader_tables) == 0
    error_message = "Lake Formation: no reader of personal data by default"
  }
  assert {
    condition     = aws_lakeformation_lf_tag.lf_tag_classification.key == "acme-classification" && aws_lakeformation_lf_tag.lf_tag_layer.key == "acme-layer" && aws_iam_role.lf_role.name == "acme-lakeformation-access"
    error_message = "the tenant's own LF-tag keys and data-access role"
  }
}

run "lake_formation_readers" {
  command = plan
  variables {
    lake_formation = { personal_data_reader_arns = ["arn:aws:iam::123456789012:role/dpo", "arn:aws:iam::123456789012:user/auditor"] }
  }
  assert {
    condition     = toset(keys(aws_lakeformation_permissions.lf_reader_tables)) == toset(["arn:aws:iam::123456789012:role/dpo", "arn:aws:iam::123456789012:user/auditor"]) && length(aws_lakeformation_permissions.lf_reader_databases) == 2
    error_message = "a table and a database grant per reader of personal data"
  }
}

run "tenant_on_a_shared_network_creates_no_endpoint" {
  command = plan
  variables {
    vpc_ids                       = []
    shared_gateway_endpoint_ids   = { "vpc-0aaaaaaaaaaaaaaa1" = "vpce-0bbbbbbbbbbbbbbb1" }
    shared_interface_endpoint_ids = { "vpc-0aaaaaaaaaaaaaaa1.kms" = "vpce-0bbbbbbbbbbbbbbb2" }
  }
  assert {
    condition     = length(aws_vpc_endpoint.endpoints_gateway) == 0 && length(aws_vpc_endpoint.endpoints_interface) == 0 && length(aws_security_group.endpoints_security_group) == 0
    error_message = "no endpoint and no security group of its own"
  }
  assert {
    condition     = output.gateway_endpoint_ids == { "vpc-0aaaaaaaaaaaaaaa1" = "vpce-0bbbbbbbbbbbbbbb1" } && output.interface_endpoint_ids == { "vpc-0aaaaaaaaaaaaaaa1.kms" = "vpce-0bbbbbbbbbbbbbbb2" }
    error_message = "the shared endpoints are the tenant's"
  }
}

run "prod_keeps_data_on_destroy" {
  command = plan
  variables {
    environment    = "prod"
    emr_namespace  = "team-a"
    retention_days = { bronze = 730 }
  }
  assert {
    condition     = aws_s3_bucket.lake_bucket.force_destroy == false && local.namespace == "team-a" && local.retention["bronze"] == 730
    error_message = "overrides"
  }
}

run "maintenance_schedule_on" {
  command = plan
  variables {
    maintenance_schedule = { enabled = true, flexible_window_minutes = 0 }
    retention_days       = { snapshots = 30 }
  }
  assert {
    condition     = aws_scheduler_schedule.maintenance_schedule[0].schedule_expression == "cron(0 3 ? * SUN *)" && aws_scheduler_schedule.maintenance_schedule[0].schedule_expression_timezone == "UTC"
    error_message = "the documented schedule defaults"
  }
  assert {
    condition     = aws_scheduler_schedule.maintenance_schedule[0].flexible_time_window[0].mode == "OFF" && aws_iam_role.maintenance_role[0].name == "acme-maintenance-scheduler"
    error_message = "0 minutes: on time; the role"
  }
  assert {
    condition     = local.retention.snapshots == 30 && output.retention_days.snapshots == 30
    error_message = "the tenant's snapshot retention (the input reaches the run: tests/integration/test_maintenance_schedule.py)"
  }
}
'''

BAD_INPUTS = {
    "gdpr_outside_eu": ("region", {"region": "us-east-1"}),
    "bad_tenant_id": ("tenant_id", {"tenant_id": "Acme_Corp"}),
    "short_tenant_id": ("tenant_id", {"tenant_id": "ab"}),
    "bad_region": ("region", {"region": "mars-1"}),
    "bad_account": ("account_id", {"account_id": "12345"}),
    "unknown_classification": ("data_classification", {"data_classification": ["secret"]}),
    "no_classification": ("data_classification", {"data_classification": []}),
    "bad_vpc": ("vpc_ids", {"vpc_ids": ["subnet-12345678"]}),
    "no_vpc": ("vpc_ids", {"vpc_ids": []}),
    "vpc_also_shared": ("vpc_ids", {"shared_gateway_endpoint_ids": {"vpc-0123456789abcdef0": "vpce-0123456789abcdef0"}}),
    "bad_shared_gateway": ("shared_gateway_endpoint_ids", {"shared_gateway_endpoint_ids": {"vpc-0fedcba987654321": "igw-1"}}),
    "bad_shared_interface": ("shared_interface_endpoint_ids",
                             {"shared_interface_endpoint_ids": {"vpc-0fedcba987654321": "vpce-0123456789abcdef0"}}),
    "duplicate_vpc": ("vpc_ids", {"vpc_ids": ["vpc-12345678", "vpc-12345678"]}),
    "bad_environment": ("environment", {"environment": "qa"}),
    "bad_cluster": ("eks_cluster_name", {"eks_cluster_name": "-x"}),
    "bad_oidc": ("eks_oidc_provider_arn", {"eks_oidc_provider_arn": "arn:aws:iam::1:role/x"}),
    "bad_namespace": ("emr_namespace", {"emr_namespace": "Team_A"}),
    "unknown_retention_key": ("retention_days", {"retention_days": {"gold": 10}}),
    "short_bronze": ("retention_days", {"retention_days": {"bronze": 60}}),
    "bad_log_retention": ("retention_days", {"retention_days": {"logs": 100}}),
    "bad_admin": ("admin_principal_arns", {"admin_principal_arns": ["root"]}),
    "unknown_stream": ("streams", {"streams": ["weather"]}),
    "duplicate_stream": ("streams", {"streams": ["iot", "iot"]}),
    "bad_schedule_expression": ("maintenance_schedule", {"maintenance_schedule": {"schedule_expression": "weekly"}}),
    "bad_schedule_window": ("maintenance_schedule", {"maintenance_schedule": {"flexible_window_minutes": 1441}}),
    "bad_lf_reader": ("lake_formation", {"lake_formation": {"personal_data_reader_arns": ["arn:aws:sts::123456789012:assumed-role/x/y"]}}),
    "duplicate_lf_reader": ("lake_formation", {"lake_formation": {"personal_data_reader_arns": [
        "arn:aws:iam::123456789012:role/x", "arn:aws:iam::123456789012:role/x"]}}),
}


# The CLI config the Makefile chooses (infra/local/terraform_config.py).
TF_ENV = {**os.environ, "TF_CLI_CONFIG_FILE": terraform_config.cli_config(),
          "TF_IN_AUTOMATION": "1", "AWS_EC2_METADATA_DISABLED": "true"}


def _terraform(args: list[str], cwd: Path, check: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(["terraform", *args], cwd=cwd, env=TF_ENV, capture_output=True, text=True,
                          timeout=300, check=check)


def _hcl(value) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_hcl(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def _failing_runs() -> str:
    runs = []
    for name, (var, overrides) in BAD_INPUTS.items():
        variables = "\n".join(f"    {k} = {_hcl(v)}" for k, v in overrides.items())
        runs.append(f'run "{name}" {{\n  command = plan\n  variables {{\n{variables}\n  }}\n'
                    f"  expect_failures = [var.{var}]\n}}\n")
    return "\n".join(runs)


def test_committed_module_is_fresh(tenant_module):
    committed = (synth.MODULE_DIR / synth.MODULE_FILE).read_text()
    assert committed == synth.render(tenant_module), "infra/build/tenant_lake is stale: run `make synth` and commit"


def test_synthesis_is_deterministic(tenant_module):
    assert synth.render(synth.synthesize()) == synth.render(tenant_module)


def test_module_has_no_provider_backend_or_absolute_path(tenant_module):
    assert "provider" not in tenant_module and "//" not in tenant_module
    assert tenant_module["terraform"] == {"required_providers": {"aws": {"source": "aws", "version": "5.100.0"}}}
    text = synth.render(tenant_module)
    assert str(synth.REPO_ROOT) not in text and "/tmp" not in text


def test_cli_writes_and_detects_stale(tmp_path, capsys):
    assert synth.main(["--out", str(tmp_path), "--check"]) == 1
    assert "is stale" in capsys.readouterr().err
    assert synth.main(["--out", str(tmp_path)]) == 0
    assert synth.main(["--out", str(tmp_path), "--check"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["platform_lake_formation", "platform_network", "tenant_lake"]
    (tmp_path / "platform_network" / synth.MODULE_FILE).write_text("{}\n")
    assert synth.main(["--out", str(tmp_path), "--check"]) == 1


def test_make_synth_runs_the_cli():
    dry = subprocess.run(["make", "-n", "synth"], cwd=synth.REPO_ROOT, capture_output=True, text=True, check=True)
    assert ".venv/bin/python -m infra.synth" in dry.stdout


@pytest.fixture(scope="module")
def module_workdir(tmp_path_factory, tenant_module) -> Path:
    """A copy of the module, `terraform init`ed offline from the provider mirror."""
    work = tmp_path_factory.mktemp("tenant_lake")
    (work / synth.MODULE_FILE).write_text(synth.render(tenant_module))
    init = _terraform(["init", "-backend=false", "-input=false", "-no-color"], work)
    assert init.returncode == 0, init.stdout + init.stderr
    return work


@pytest.mark.integration
def test_terraform_validate(module_workdir):
    out = _terraform(["validate", "-json"], module_workdir)
    result = json.loads(out.stdout)
    assert result["valid"] is True and result["error_count"] == 0 and result["warning_count"] == 0, result


@pytest.mark.integration
def test_plan_time_validation_and_defaults(module_workdir):
    """terraform test with a mocked provider: a valid tenant plans; every bad input fails its own validation."""
    tests = module_workdir / "tests"
    tests.mkdir(exist_ok=True)
    (tests / "inputs.tftest.hcl").write_text(TFTEST + "\n" + _failing_runs())
    out = _terraform(["test", "-no-color"], module_workdir)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    expected = 5 + len(BAD_INPUTS)  # the valid runs, then one per bad input
    assert f"Success! {expected} passed, 0 failed." in out.stdout


@pytest.mark.integration
def test_every_taggable_resource_type_is_covered_by_the_tag_check(module_workdir, tenant_module):
    """Taggable = has a `tags` argument in the provider schema; all of them carry the standard tags."""
    schema = json.loads(_terraform(["providers", "schema", "-json"], module_workdir, check=True).stdout)
    [aws] = [p for name, p in schema["provider_schemas"].items() if name.endswith("/aws")]
    taggable = {t for t in tenant_module["resource"]
                if "tags" in aws["resource_schemas"][t]["block"].get("attributes", {})}
    tag_check = (synth.REPO_ROOT / "policies" / "checks" / "tags.yaml").read_text()
    for resource_type in taggable:
        assert f"- {resource_type}\n" in tag_check, f"{resource_type} is taggable but not in CKV2_TL_1"
        for name, body in tenant_module["resource"][resource_type].items():
            assert "local.resource_tags" in body.get("tags", ""), (resource_type, name)
