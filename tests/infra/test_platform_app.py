"""infra/platform_app.py: the committed platform network module is fresh and valid; its plans put the shared
endpoints on the cluster VPC (or the local fixture VPC) with policies scoped to the served tenants; its
validations refuse a bad network at plan time.  Plans run with `terraform test` and a mocked provider."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from infra import synth
from infra.local import terraform_config
from tests.modules.helpers import data, document_statements, resource

TF_ENV_KEYS = {"TF_CLI_CONFIG_FILE": terraform_config.cli_config(), "TF_IN_AUTOMATION": "1",
               "AWS_EC2_METADATA_DISABLED": "true"}

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
    defaults = { ids = ["rtb-01", "rtb-02"] }
  }
  mock_data "aws_partition" {
    defaults = { partition = "aws" }
  }
}

variables {
  region  = "eu-west-1"
  tenants = { acme = "123456789012", globex = "210987654321" }
}

run "cluster_vpcs_get_one_gateway_and_three_interface_endpoints_each" {
  command = plan
  variables {
    vpc_ids     = ["vpc-0123456789abcdef0", "vpc-0fedcba9876543210"]
    environment = "prod"
  }
  assert {
    condition     = length(aws_vpc_endpoint.endpoints_gateway) == 2 && length(aws_vpc_endpoint.endpoints_interface) == 6 && length(aws_vpc.fixture_vpc) == 0
    error_message = "one gateway and three interface endpoints per cluster VPC, no fixture"
  }
  assert {
    condition     = aws_vpc_endpoint.endpoints_gateway["vpc-0123456789abcdef0"].route_table_ids == toset(["rtb-01", "rtb-02"])
    error_message = "the gateway endpoint is on every route table of its VPC"
  }
  assert {
    condition     = data.aws_iam_policy_document.endpoints_gateway_policy.statement[0].resources == toset(["arn:aws:s3:::acme-eu-west-1-lake", "arn:aws:s3:::acme-eu-west-1-lake/*", "arn:aws:s3:::globex-eu-west-1-lake", "arn:aws:s3:::globex-eu-west-1-lake/*"])
    error_message = "the served tenants' lakes, nothing else"
  }
  assert {
    condition     = data.aws_iam_policy_document.endpoints_gateway_policy.statement[1].actions == toset(["s3:GetObject"]) && data.aws_iam_policy_document.endpoints_gateway_policy.statement[1].resources == toset(["arn:aws:s3:::prod-eu-west-1-starport-layer-bucket/*", "arn:aws:s3:::al2023-repos-eu-west-1-de612dc2/*"])
    error_message = "the cluster reads ECR's layer bucket and the AL2023 repository"
  }
  assert {
    condition     = data.aws_iam_policy_document.endpoints_kms_policy.statement[0].resources == toset(["arn:aws:kms:eu-west-1:123456789012:key/*", "arn:aws:kms:eu-west-1:210987654321:key/*"])
    error_message = "KMS keys of the tenants' accounts in the region"
  }
  assert {
    condition     = toset(one(data.aws_iam_policy_document.endpoints_kms_policy.statement[0].condition).values) == toset(["alias/acme-lake", "alias/globex-lake"])
    error_message = "only the keys behind the tenants' aliases"
  }
  assert {
    condition     = output.tenants == tolist(["acme", "globex"]) && length(output.vpc_ids) == 2
    error_message = "outputs"
  }
}

run "local_fixture_vpc_stands_in_for_the_cluster" {
  command = plan
  variables {
    create_fixture_vpc = true
  }
  assert {
    condition     = length(aws_vpc.fixture_vpc) == 1 && length(aws_subnet.fixture_subnet) == 2 && length(aws_route_table.fixture_route_table) == 2
    error_message = "a VPC, two subnets, two route tables"
  }
  assert {
    condition     = keys(aws_vpc_endpoint.endpoints_gateway) == ["fixture"] && length(aws_vpc_endpoint.endpoints_interface) == 3
    error_message = "the endpoints go into the fixture VPC"
  }
  assert {
    condition     = aws_subnet.fixture_subnet["a"].availability_zone == "eu-west-1a" && aws_subnet.fixture_subnet["b"].cidr_block == "10.30.2.0/24"
    error_message = "one subnet per availability zone"
  }
}
'''

BAD = {
    "fixture_outside_local": ("create_fixture_vpc", {"create_fixture_vpc": True, "environment": "prod"}),
    "no_vpc": ("vpc_ids", {}),
    "vpc_and_fixture": ("vpc_ids", {"create_fixture_vpc": True, "vpc_ids": ["vpc-0123456789abcdef0"]}),
    "no_tenant": ("tenants", {"create_fixture_vpc": True, "tenants": {}}),
    "bad_account": ("tenants", {"create_fixture_vpc": True, "tenants": {"acme": "1"}}),
    "bad_bucket": ("cluster_read_buckets", {"create_fixture_vpc": True, "cluster_read_buckets": ["Bad_Bucket"]}),
}


def _hcl(value) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_hcl(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def _terraform(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(["terraform", *args], cwd=cwd, env={**os.environ, **TF_ENV_KEYS}, capture_output=True,
                          text=True, timeout=600)


def test_committed_module_is_fresh(platform_module):
    committed = (synth.BUILD_DIR / "platform_network" / synth.MODULE_FILE).read_text()
    assert committed == synth.render(platform_module), "infra/build/platform_network is stale: run `make synth`"


def test_module_has_no_provider_backend_or_tenant_tag(platform_module):
    assert "provider" not in platform_module and "//" not in platform_module
    assert platform_module["locals"]["resource_tags"] == (
        '${merge(var.tags, { component = "platform-network", environment = var.environment, '
        'cost_center = var.cost_center })}')  # a shared network is no tenant's: no tenant tag


def test_every_variable_is_typed_described_and_validations_name_it(platform_module):
    for name, var in platform_module["variable"].items():
        assert var.get("type") and var.get("description"), name
        for validation in var.get("validation", []):
            assert validation["error_message"].startswith(f"{name}: "), validation


def test_kms_endpoint_allows_only_keys_behind_the_tenant_aliases(platform_module):
    [only] = document_statements(platform_module, "endpoints_kms_policy").values()
    assert only["effect"] == "Allow" and "kms:*" not in only["actions"]
    assert only["condition"] == [{"test": "ForAnyValue:StringEquals", "variable": "kms:ResourceAliases",
                                  "values": '${[for t in sort(keys(var.tenants)) : "alias/${t}-lake"]}'}]
    assert resource(platform_module, "aws_vpc_endpoint", "endpoints_interface")["policy"].startswith(
        '${each.value.service == "kms" ? ')
    assert data(platform_module, "aws_partition", "partition") is not None


def terraform_test(folder: Path, module: dict, tftest: str, bad: dict[str, tuple[str, dict]]) -> str:
    """``terraform test`` of ``module`` in ``folder``: the runs of ``tftest``, then a plan per ``bad`` entry (name ->
    (the variable whose validation must fail, the variables)); returns its output once it passed."""
    (folder / synth.MODULE_FILE).write_text(synth.render(module))
    (folder / "tests").mkdir()
    runs = "\n".join(
        f'run "{name}" {{\n  command = plan\n  variables {{\n'
        + "\n".join(f"    {k} = {_hcl(v)}" for k, v in overrides.items())
        + f"\n  }}\n  expect_failures = [var.{var}]\n}}\n" for name, (var, overrides) in bad.items())
    (folder / "tests" / "module.tftest.hcl").write_text(tftest + "\n" + runs)
    init = _terraform(["init", "-backend=false", "-input=false", "-no-color"], folder)
    assert init.returncode == 0, init.stdout + init.stderr
    result = _terraform(["test", "-no-color"], folder)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    return result.stdout


@pytest.mark.integration
def test_plans_and_validations(tmp_path, platform_module):
    assert f"{2 + len(BAD)} passed, 0 failed" in terraform_test(tmp_path, platform_module, TFTEST, BAD)
