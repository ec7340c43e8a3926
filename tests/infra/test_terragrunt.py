"""The Terragrunt fallback: it reads the tenant files as Terragrunt would, and refuses what it cannot do.

Fast tests: no terraform and no emulator (the apply path is in tests/integration/).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import hcl2
import pytest

from infra import tenant as tenant_model
from infra import terragrunt as tg
from infra.local.network import fixture_ids

REPO = Path(__file__).resolve().parents[2]
TENANTS = REPO / "tenants"
SAMPLE_TENANTS = {
    "acme": ("eu-west-1", ["gdpr"]),
    "globex": ("us-east-1", ["internal"]),
    "initech": ("eu-central-1", ["pii", "gdpr"]),
}


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    """The variables the runner exports before evaluating (local env, no emulator needed to parse)."""
    for key in ("TENANTLAKE_ENV", "TENANTLAKE_AWS_ENDPOINT", "TENANTLAKE_STAGE", "TENANTLAKE_MODULE_SOURCE",
                "TENANTLAKE_STATE_REGION"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("TENANTLAKE_STATE_ACCOUNT_ID", tg.LOCAL_ACCOUNT_ID)


def _raw_inputs(path: Path) -> dict:
    with open(path) as fh:
        return hcl2.load(fh, serialization_options=hcl2.SerializationOptions(
            strip_string_quotes=True, explicit_blocks=False, with_comments=False))["inputs"]


@pytest.fixture
def scratch_tenants():
    """A tenants dir inside the repo (get_repo_root needs a git work tree), in the ignored .local/."""
    folder = REPO / ".local" / "test-tenants" / uuid.uuid4().hex[:8]
    folder.mkdir(parents=True)
    shutil.copy2(TENANTS / "root.hcl", folder / "root.hcl")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _write_tenant(folder: Path, name: str, body: str) -> None:
    (folder / name).mkdir(parents=True, exist_ok=True)
    (folder / name / "terragrunt.hcl").write_text(body)


def _tenant_file(tenant_id: str, region: str, classes: str, extra: str = "") -> str:
    return f'''include "root" {{
  path = find_in_parent_folders("root.hcl")
}}
inputs = {{
  tenant_id           = "{tenant_id}"
  region              = "{region}"
  data_classification = [{classes}]
  account_id          = "123456789012"
  vpc_ids             = ["{fixture_ids.fixture_vpc_id(tenant_id)}"]
  {extra}
}}
'''


# ---- the sample tenants, as Terragrunt would build them ---------------------------------------------
def test_sample_tenants_exist_with_the_documented_region_and_classification():
    assert tg.tenant_names(TENANTS) == sorted(SAMPLE_TENANTS)
    for name, (region, classes) in SAMPLE_TENANTS.items():
        cfg = tg.load_tenant(name, TENANTS).config
        assert (cfg.region, list(cfg.data_classification)) == (region, classes)


@pytest.mark.parametrize("name", sorted(SAMPLE_TENANTS))
def test_fallback_inputs_equal_terragrunts_shallow_merge(name):
    """Terragrunt: root inputs, then the child's on top. The root adds only `environment`."""
    run = tg.load_tenant(name, TENANTS)
    expected = {"environment": "local", **_raw_inputs(TENANTS / name / "terragrunt.hcl")}
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


@pytest.mark.parametrize("name", sorted(SAMPLE_TENANTS))
def test_local_vpc_ids_are_the_fixture_network_ids(name):
    cfg = tg.load_tenant(name, TENANTS).config
    assert list(cfg.vpc_ids) == [fixture_ids.fixture_vpc_id(name, i) for i in range(len(cfg.vpc_ids))]


def test_fixture_vpc_id_is_what_moto_generates_after_the_seed():
    """Same generator moto uses (moto.ec2.utils.random_vpc_id over mock_random), seeded the same way."""
    from moto.ec2 import utils as ec2_utils
    from moto.moto_api._internal import mock_random

    state = mock_random.getstate()
    try:
        mock_random.seed(fixture_ids.fixture_seed("acme"))
        assert ec2_utils.random_vpc_id() == fixture_ids.fixture_vpc_id("acme")
    finally:
        mock_random.setstate(state)


def test_tenants_do_not_collide():
    runs = tg.load_all(TENANTS)
    for attr in ("state_key",):
        assert len({getattr(r, attr) for r in runs}) == len(runs)
    assert len({r.config.lake_bucket_name for r in runs}) == len(runs)


# ---- the expression subset ------------------------------------------------------------------------
def _ctx(locals_: dict | None = None, child: Path = TENANTS / "acme" / "terragrunt.hcl", include_dir=TENANTS):
    return tg.EvalContext(child, child, include_dir, locals_ or {})


def test_expressions_the_configs_use(monkeypatch):
    monkeypatch.setenv("TG_TEST_VAR", "set")
    ctx = _ctx({"env": '${get_env("TG_TEST_MISSING", "local")}', "is_local": '${local.env == "local"}'})
    assert tg.interpolate('${local.is_local ? "a" : "b"}', ctx) == "a"
    assert tg.interpolate('${local.env != "local"}', ctx) is False
    assert tg.interpolate('x-${get_env("TG_TEST_VAR")}-${path_relative_to_include()}', ctx) == "x-set-acme"
    assert tg.interpolate('${find_in_parent_folders("root.hcl")}', ctx) == str(TENANTS / "root.hcl")
    assert tg.interpolate("${get_repo_root()}", ctx) == str(REPO)
    assert tg.interpolate("<<-EOT\n    a = \"${local.env}\"\n      b\n  EOT", ctx) == 'a = "local"\n  b\n'
    assert tg.interpolate("$${literal}", ctx) == "${literal}"


def test_get_env_without_default_fails_when_unset():
    with pytest.raises(tg.TerragruntError, match="TG_TEST_MISSING is not set"):
        tg.interpolate('${get_env("TG_TEST_MISSING")}', _ctx())


@pytest.mark.parametrize("expression, refused", [
    ('${merge(local.a, local.b)}', "function merge()"),
    ('${get_aws_account_id()}', "function get_aws_account_id()"),
    ('${dependency.vpc.outputs.id}', "reference `dependency.vpc.outputs.id`"),
    ('${include.root.locals.env}', "reference `include.root.locals.env`"),
    ('${[for v in local.a : v]}', "expression"),
    ('${local.a + 1}', "expression"),
    ('%{ if true }x%{ endif }', "template directives"),
])
def test_unsupported_expressions_are_refused(expression, refused):
    with pytest.raises(tg.UnsupportedConstruct, match=refused.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[")):
        tg.interpolate(expression, _ctx({"a": "x", "b": "y"}))


@pytest.mark.parametrize("extra_block, refused", [
    ('dependency "vpc" {\n  config_path = "../vpc"\n}\n', "`dependency`"),
    ('terraform {\n  source = "git::https://example.com/m.git"\n}\n', "`terraform`"),
    ('iam_role = "arn:aws:iam::123456789012:role/x"\n', "`iam_role`"),
])
def test_unsupported_blocks_in_a_tenant_file_are_refused(scratch_tenants, extra_block, refused):
    _write_tenant(scratch_tenants, "acme", _tenant_file("acme", "eu-west-1", '"gdpr"') + extra_block)
    with pytest.raises(tg.UnsupportedConstruct, match=refused) as err:
        tg.load_tenant("acme", scratch_tenants)
    assert "\n" not in str(err.value) and "acme/terragrunt.hcl" in str(err.value)


def test_unsupported_function_in_tenant_inputs_names_file_and_attribute(scratch_tenants):
    _write_tenant(scratch_tenants, "acme", _tenant_file("acme", "eu-west-1", '"gdpr"', 'tags = merge({a = "b"}, {})'))
    with pytest.raises(tg.UnsupportedConstruct, match=r"acme/terragrunt.hcl: inputs: function merge\(\)"):
        tg.load_tenant("acme", scratch_tenants)


def test_remote_module_sources_are_refused():
    with pytest.raises(tg.UnsupportedConstruct, match="local paths only"):
        tg._module_dir("git::git@github.com:opencredo/terraform-modules.git//s3_datalake")


# ---- validation before any terraform run ----------------------------------------------------------
def test_gdpr_outside_the_eu_is_refused_with_one_line(scratch_tenants):
    _write_tenant(scratch_tenants, "badco", _tenant_file("badco", "us-east-1", '"gdpr"'))
    with pytest.raises(tenant_model.TenantConfigError) as err:
        tg.load_tenant("badco", scratch_tenants)
    assert str(err.value) == "tenant 'badco': region: us-east-1 is outside the EU but data_classification includes gdpr"


def test_tenant_id_must_match_its_directory(scratch_tenants):
    _write_tenant(scratch_tenants, "other", _tenant_file("acme", "eu-west-1", '"gdpr"'))
    with pytest.raises(tenant_model.TenantConfigError, match="must equal its directory name tenants/other/"):
        tg.load_tenant("other", scratch_tenants)


def test_unknown_tenant_lists_the_known_ones():
    with pytest.raises(tg.TerragruntError, match=r"unknown tenant 'nope'.*\(tenants: acme, globex, initech\)"):
        tg.load_tenant("nope", TENANTS)


def test_unknown_environment_is_refused(monkeypatch):
    monkeypatch.setenv("TENANTLAKE_ENV", "staging")
    with pytest.raises(tg.TerragruntError, match="TENANTLAKE_ENV='staging' is not one of local, aws"):
        tg.env_name()


def test_make_plan_unknown_tenant_fails_in_one_line_and_changes_nothing(tmp_path):
    env = {**os.environ, "TENANTLAKE_STATE_DIR": str(tmp_path)}
    result = subprocess.run(["make", "-s", "plan", "TENANT=nope"], cwd=REPO, env=env, capture_output=True, text=True)
    assert result.returncode != 0
    ours = [line for line in result.stderr.splitlines() if not line.startswith("make:")]
    assert ours == ["error: unknown tenant 'nope': no tenants/nope/terragrunt.hcl (tenants: acme, globex, initech)"]
    assert list(tmp_path.iterdir()) == []  # no emulator started, no working dir


def test_make_plan_bad_tenant_file_fails_before_anything_runs(tmp_path, scratch_tenants):
    _write_tenant(scratch_tenants, "badco", _tenant_file("badco", "us-east-1", '"gdpr"'))
    env = {**os.environ, "TENANTLAKE_STATE_DIR": str(tmp_path)}
    result = subprocess.run(["make", "-s", "apply", "TENANT=badco", f"TENANTS_DIR={scratch_tenants}"], cwd=REPO,
                            env=env, capture_output=True, text=True)
    assert result.returncode != 0
    assert "error: tenant 'badco': region: us-east-1 is outside the EU but data_classification includes gdpr" \
        in result.stderr.splitlines()
    assert list(tmp_path.iterdir()) == []


# ---- what the fallback writes and reads -----------------------------------------------------------
def test_backend_config_file_is_valid_hcl_with_the_same_settings(tmp_path):
    config = tg.load_tenant("acme", TENANTS).backend_config
    path = tmp_path / "backend.hcl"
    path.write_text(tg._backend_hcl(config))
    with open(path) as fh:
        parsed = hcl2.load(fh, serialization_options=hcl2.SerializationOptions(strip_string_quotes=True))
    assert parsed == config


def test_inputs_become_tf_vars_like_terragrunt():
    tf_vars = tg._tf_vars({"region": "eu-west-1", "vpc_ids": ["vpc-1"], "tags": {"a": "b"}})
    assert tf_vars == {"TF_VAR_region": "eu-west-1", "TF_VAR_vpc_ids": '["vpc-1"]', "TF_VAR_tags": '{"a": "b"}'}


def test_outputs_of_an_unapplied_tenant_raise_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path))
    with pytest.raises(tg.TenantNotAppliedError, match="tenant 'acme' is not applied here") as err:
        tg.outputs("acme")
    assert "\n" not in str(err.value)


def test_working_dir_and_lake_json_follow_the_state_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path))
    assert tg.work_dir("acme") == tmp_path.resolve() / "tenants" / "acme"


def test_validate_command_checks_every_sample_tenant():
    for name in SAMPLE_TENANTS:
        assert tg.main(["validate", "--tenant", name]) == 0


def test_outputs_without_a_running_emulator_raise_instead_of_starting_an_empty_one(monkeypatch, tmp_path):
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("TENANTLAKE_FORCE_FALLBACK", "1")
    (tmp_path / "tenants" / "acme" / ".terraform").mkdir(parents=True)
    with pytest.raises(tg.TenantNotAppliedError, match="no emulator runs for"):
        tg.outputs("acme")
    assert not (tmp_path / "emulator.json").exists()
