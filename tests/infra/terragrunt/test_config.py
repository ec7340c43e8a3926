"""infra/terragrunt/config.py: the tenant files read as Terragrunt would, validated, and refused when the
fallback cannot do what they say."""
from __future__ import annotations

import pytest

from infra import tenant as tenant_model
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
    """Terragrunt: root inputs, then the child's on top. The root adds only `environment`."""
    run = tg.load_tenant(name, TENANTS)
    expected = {"environment": "local", **raw_inputs(TENANTS / name / "terragrunt.hcl")}
    assert run.inputs == expected
    assert run.inputs["tenant_id"] == name


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
    ('dependency "vpc" {\n  config_path = "../vpc"\n}\n', "`dependency`"),
    ('terraform {\n  source = "git::https://example.com/m.git"\n}\n', "`terraform`"),
    ('iam_role = "arn:aws:iam::123456789012:role/x"\n', "`iam_role`"),
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
