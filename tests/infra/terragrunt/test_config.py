"""infra/terragrunt/config.py: the tenant files read as Terragrunt would, validated, and refused when the
fallback cannot do what they say."""
from __future__ import annotations

import pytest

import tenant_model
from infra import terragrunt as tg
from tests.infra.terragrunt.conftest import (REPO, SAMPLE_TENANTS, TENANTS, raw_inputs, tenant_file,
                                             write_tenant)


def test_sample_tenants_exist_with_the_documented_region_and_classification():
    assert tg.tenant_names(TENANTS) == sorted(SAMPLE_TENANTS)
    for name, (region, classes) in SAMPLE_TENANTS.items():
        cfg = tg.load_tenant(name, TENANTS).config
        assert (cfg.region, list(cfg.data_classification)) == (region, classes)


@pytest.mark.parametrize("name", sorted(SAMPLE_TENANTS))
def test_fallback_inputs_equal_terragrunts_shallow_merge(name):
    """Terragrunt: root inputs, then the child's on top. The root adds only `environment`.  Validating, a
    dependency's mock_outputs stand in for its outputs (the network unit is not applied)."""
    run = tg.load_tenant(name, TENANTS)
    mocks = {d.name: d.mock_outputs for d in run.dependencies}
    expected = {"environment": "local", **raw_inputs(TENANTS / name / "terragrunt.hcl")}
    for key, value in expected.items():
        if isinstance(value, str) and value.startswith("${dependency."):
            _, dep, _, output = value[2:-1].split(".")
            expected[key] = mocks[dep][output]
    assert run.inputs == expected
    assert run.inputs["tenant_id"] == name
    assert run.mocked == tuple(mocks)


@pytest.mark.parametrize("name", sorted(SAMPLE_TENANTS))
def test_backend_key_bucket_and_locking(name):
    run = tg.load_tenant(name, TENANTS)
    assert run.backend == "s3"
    assert run.backend_config["key"] == f"tenants/{name}/terraform.tfstate"  # path_relative_to_include()
    assert run.backend_config["bucket"] == "tenantlake-tfstate-123456789012-eu-west-1"
    assert run.backend_config["encrypt"] is True and run.backend_config["use_lockfile"] is True
    assert run.backend_file is not None and run.backend_file.path == "backend.tf"


def test_environment_switch_changes_only_provider_and_backend_settings(monkeypatch):
    monkeypatch.setenv("TENANTLAKE_AWS_ENDPOINT", "https://127.0.0.1:1234")
    monkeypatch.setenv("AWS_CA_BUNDLE", "/tmp/ca.pem")
    local = tg.load_tenant("acme", TENANTS)
    provider = {g.path: g.contents for g in local.generate}["provider.tf"]
    assert 'emrcontainers = "https://127.0.0.1:1234"' in provider
    assert 'custom_ca_bundle            = "/tmp/ca.pem"' in provider
    assert local.backend_config["use_path_style"] is True
    assert local.backend_config["endpoints"] == {"s3": "https://127.0.0.1:1234"}

    monkeypatch.setenv("TENANTLAKE_ENV", "aws")
    monkeypatch.setenv("TENANTLAKE_STATE_ACCOUNT_ID", "210987654321")
    monkeypatch.setenv("TENANTLAKE_STATE_REGION", "eu-central-1")
    monkeypatch.delenv("TENANTLAKE_AWS_ENDPOINT")
    aws = tg.load_tenant("acme", TENANTS)
    provider = {g.path: g.contents for g in aws.generate}["provider.tf"]
    assert provider == 'provider "aws" {\n  region = var.region\n}\n'
    assert aws.backend_config["bucket"] == "tenantlake-tfstate-210987654321-eu-central-1"
    assert not any(aws.backend_config[k] for k in ("use_path_style", "skip_credentials_validation",
                                                   "skip_requesting_account_id", "skip_region_validation"))
    assert aws.inputs["environment"] == "dev"
    assert aws.source == local.source == f"{REPO}/infra/build//tenant_lake"
    assert {k: v for k, v in aws.inputs.items() if k != "environment"} == \
           {k: v for k, v in local.inputs.items() if k != "environment"}


def test_before_hook_resynthesizes_from_the_repo_root():
    (hook,) = tg.load_tenant("acme", TENANTS).before_hooks
    assert hook.execute[-3:] == ("-m", "infra.terragrunt", "synth-if-stale")
    assert hook.working_dir == str(REPO) and "apply" in hook.commands


def test_tenants_do_not_collide():
    runs = tg.load_all(TENANTS)
    assert len({r.state_key for r in runs}) == len(runs)
    assert len({r.config.lake_bucket_name for r in runs}) == len(runs)


@pytest.mark.parametrize("extra_block, refused", [
    ('dependencies {\n  paths = ["../vpc"]\n}\n', "`dependencies`"),
    ('terraform {\n  source = "git::https://example.com/m.git"\n}\n', "local paths only"),
    ('iam_role = "arn:aws:iam::123456789012:role/x"\n', "`iam_role`"),
    ('dependency "vpc" {\n  config_path = "../acme"\n  skip_outputs = true\n}\n', "`dependency.vpc.skip_outputs`"),
    ('terraform {\n  extra_arguments "x" {\n    commands = ["plan"]\n  }\n}\n', "`terraform.extra_arguments`"),
])
def test_unsupported_blocks_in_a_tenant_file_are_refused(scratch_tenants, extra_block, refused):
    write_tenant(scratch_tenants, "acme", tenant_file("acme", "eu-west-1", '"gdpr"') + extra_block)
    with pytest.raises(tg.UnsupportedConstruct, match=refused) as err:
        tg.load_tenant("acme", scratch_tenants)
    assert "\n" not in str(err.value) and "acme/terragrunt.hcl" in str(err.value)


def test_unsupported_function_in_tenant_inputs_names_file_and_attribute(scratch_tenants):
    write_tenant(scratch_tenants, "acme", tenant_file("acme", "eu-west-1", '"gdpr"', 'tags = merge({a = "b"}, {})'))
    with pytest.raises(tg.UnsupportedConstruct, match=r"acme/terragrunt.hcl: inputs: function merge\(\)"):
        tg.load_tenant("acme", scratch_tenants)


# ---- validation before any terraform run ----------------------------------------------------------
def test_gdpr_outside_the_eu_is_refused_with_one_line(scratch_tenants):
    write_tenant(scratch_tenants, "badco", tenant_file("badco", "us-east-1", '"gdpr"'))
    with pytest.raises(tenant_model.TenantConfigError) as err:
        tg.load_tenant("badco", scratch_tenants)
    assert str(err.value) == "tenant 'badco': region: us-east-1 is outside the EU but data_classification includes gdpr"


def test_tenant_id_must_match_its_directory(scratch_tenants):
    write_tenant(scratch_tenants, "other", tenant_file("acme", "eu-west-1", '"gdpr"'))
    with pytest.raises(tenant_model.TenantConfigError, match="must equal its directory name tenants/other/"):
        tg.load_tenant("other", scratch_tenants)


def test_unknown_tenant_lists_the_known_ones():
    with pytest.raises(tg.TerragruntError, match=r"unknown tenant 'nope'.*\(tenants: acme, globex, initech\)"):
        tg.load_tenant("nope", TENANTS)


# ---- units and dependency blocks ------------------------------------------------------------------
def test_the_platform_unit_is_a_unit_and_no_tenant():
    assert tg.config.unit_names(TENANTS) == ["_platform/lake-formation-eu-central-1", "_platform/lake-formation-eu-west-1",
                                             "_platform/network", "acme", "globex", "initech"]
    assert "_platform" not in tg.tenant_names(TENANTS)
    network = tg.config.load_unit("_platform/network", TENANTS)
    assert not network.is_tenant and network.state_key == "tenants/_platform/network/terraform.tfstate"
    assert network.source == f"{REPO}/infra/build//platform_network"  # its terraform block replaces root.hcl's
    assert [h.name for h in network.before_hooks] == ["synth_if_stale"]
    assert network.config.create_fixture_vpc is True and dict(network.config.tenants) == {
        "acme": "123456789012", "globex": "123456789012"}


def test_a_lake_formation_unit_holds_one_accounts_settings_in_one_region():
    unit = tg.config.load_unit("_platform/lake-formation-eu-west-1", TENANTS)
    assert unit.kind == "lake-formation" and not unit.is_tenant
    assert unit.state_key == "tenants/_platform/lake-formation-eu-west-1/terraform.tfstate"
    assert unit.source == f"{REPO}/infra/build//platform_lake_formation"
    assert [h.name for h in unit.before_hooks] == ["synth_if_stale"]
    assert (unit.config.region, unit.config.account_id, unit.config.admin_principal_arns) == (
        "eu-west-1", "123456789012", ())
    assert tg.config.load_unit("_platform/network", TENANTS).kind == "network"
    assert tg.load_tenant("acme", TENANTS).kind == "tenant"


def test_a_platform_unit_named_after_no_kind_is_refused_in_one_line(scratch_tenants):
    write_tenant(scratch_tenants, "_platform/settings", 'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n'
                 'inputs = {\n  region = "eu-west-1"\n  account_id = "123456789012"\n}\n')
    with pytest.raises(tg.TerragruntError) as err:
        tg.config.load_unit("_platform/settings", scratch_tenants)
    assert str(err.value) == (
        "unit '_platform/settings': a platform unit's directory is named after its kind, one of network, "
        "lake-formation (e.g. _platform/network, _platform/lake-formation-eu-west-1); rename it (tenants/README.md)")


def test_on_aws_the_platform_unit_wants_the_cluster_vpc_ids(monkeypatch):
    monkeypatch.setenv("TENANTLAKE_ENV", "aws")
    with pytest.raises(Exception, match="list the cluster's VPC ids in vpc_ids"):
        tg.config.load_unit("_platform/network", TENANTS)


def test_a_dependency_reads_the_real_outputs_when_they_exist():
    real = {"gateway_endpoint_ids": {"vpc-0aaaaaaaaaaaaaaa1": "vpce-0aaaaaaaaaaaaaaa1"}, "interface_endpoint_ids": {}}
    seen = []
    run = tg.load_tenant("acme", TENANTS, "apply", outputs_of=lambda dep: seen.append(dep.unit) or real)
    assert seen == ["_platform/network", "_platform/lake-formation-eu-west-1"] and run.mocked == ()
    assert run.config.shared_gateway_endpoint_ids == real["gateway_endpoint_ids"]


@pytest.mark.parametrize("command, mocked", [("plan", True), ("validate", True), ("destroy", True), ("apply", False)])
def test_mock_outputs_stand_in_only_for_the_allowed_commands(command, mocked):
    if mocked:
        assert tg.load_tenant("acme", TENANTS, command, outputs_of=lambda dep: None).mocked == ("network", "lake_formation")
        return
    with pytest.raises(tg.TerragruntError) as err:
        tg.load_tenant("acme", TENANTS, command, outputs_of=lambda dep: None)
    assert str(err.value) == (
        "tenants/acme/terragrunt.hcl: inputs: dependency.network.outputs.gateway_endpoint_ids: dependency network "
        "(_platform/network) is not applied, and its mock_outputs are not allowed for apply: apply it first "
        "(make apply UNIT=_platform/network, or make apply-all)")


def test_a_dependency_on_no_unit_is_refused(scratch_tenants):
    write_tenant(scratch_tenants, "acme", tenant_file("acme", "eu-west-1", '"gdpr"') +
                 'dependency "network" {\n  config_path = "../_platform/nowhere"\n}\n')
    with pytest.raises(tg.TerragruntError, match=r"acme/terragrunt.hcl: dependency.network.config_path "
                                                 r"../_platform/nowhere: no other unit there"):
        tg.load_tenant("acme", scratch_tenants)


def test_without_mock_outputs_validation_names_what_to_add(scratch_layout):
    path = scratch_layout / "globex" / "terragrunt.hcl"
    text = path.read_text()
    path.write_text(text[:text.index("  # Until the network")] + text[text.index("}\n\ninputs"):])
    with pytest.raises(tg.TerragruntError, match="has no mock_outputs allowed for validate, and the runner validates "
                                                 "every unit before anything runs"):
        tg.load_tenant("globex", scratch_layout)
