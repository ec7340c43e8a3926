"""Bad tenant configs, through the user path: ``make apply TENANT=<t> TENANTS_DIR=<scratch>``.

Each case writes a tenant file that breaks one rule and asserts: a non-zero exit, exactly ONE error line
(besides make's own ``make: ***`` line) that names the tenant, the field and the rule, nothing on stdout,
and nothing applied: the state dir stays empty, so no emulator was started, no state bucket, fixture VPC
or tenant working dir was created, and terraform never ran.  No emulator is needed, so these are fast.
"""
from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

import tenant_model
from infra.local.network import fixture_ids
from tests import shell
from tests.conftest import REPO_ROOT

GOOD = {"region": '"eu-west-1"', "data_classification": '["internal"]', "account_id": '"123456789012"'}


def _tenant_file(tenant_id: str, **overrides: str) -> str:
    values = {**GOOD, "vpc_ids": f'["{fixture_ids.fixture_vpc_id(tenant_id)}"]', **overrides}
    body = "\n".join(f"  {key} = {value}" for key, value in {"tenant_id": f'"{tenant_id}"', **values}.items())
    return f'include "root" {{\n  path = find_in_parent_folders("root.hcl")\n}}\ninputs = {{\n{body}\n}}\n'


@pytest.fixture
def scratch(tmp_path):
    """A tenants dir inside the repo (get_repo_root needs the git work tree) and an empty state dir."""
    folder = REPO_ROOT / ".local" / "test-tenants" / uuid.uuid4().hex[:8]
    folder.mkdir(parents=True)
    shutil.copy2(REPO_ROOT / "tenants" / "root.hcl", folder / "root.hcl")
    state = tmp_path / "state"
    state.mkdir()
    yield folder, state
    shutil.rmtree(folder, ignore_errors=True)


def _write(folder: Path, directory: str, text: str) -> None:
    (folder / directory).mkdir(exist_ok=True)
    (folder / directory / "terragrunt.hcl").write_text(text)


def _make(target: str, folder: Path, state: Path, *args: str) -> shell.ShellResult:
    return shell.make(target, *args, f"TENANTS_DIR={folder}", timeout=120, env={"TENANTLAKE_STATE_DIR": str(state)})


def _assert_one_line_and_nothing_applied(result: shell.ShellResult, state: Path, expected: str) -> None:
    ours = [line for line in result.stderr.splitlines() if not line.startswith("make:")]
    assert result.returncode != 0
    assert ours == [f"error: {expected}"], result.stderr
    assert result.stdout == ""  # terraform never ran (it prints to stdout)
    assert list(state.iterdir()) == []  # no emulator.json, no tenants/<t>/, no network/


LONG_ID = "a" * 25
LONG_NAMESPACE = "n" * 64
CASES = {
    # case: (tenant id = directory, overrides, expected error without "error: ")
    "unknown classification": ("badcls", {"data_classification": '["internal", "secret"]'},
                               "tenant 'badcls': data_classification: 'secret' is not one of public, internal, "
                               "confidential, pii, gdpr"),
    "gdpr outside the EU": ("gdprus", {"region": '"us-east-1"', "data_classification": '["pii", "gdpr"]'},
                            "tenant 'gdprus': region: us-east-1 is outside the EU but data_classification includes gdpr"),
    "malformed account id": ("badacct", {"account_id": '"12345678901a"'},
                             "tenant 'badacct': account_id: '12345678901a' must be exactly 12 digits"),
    "account id as a number": ("numacct", {"account_id": "123456789012"},
                               "tenant 'numacct': account_id: must be a string, got int"),
    "malformed VPC id": ("badvpc", {"vpc_ids": '["vpc-12345"]'},
                         "tenant 'badvpc': vpc_ids: 'vpc-12345' is not a VPC id like vpc-0123456789abcdef0"),
    "VPC id that is a subnet id": ("subvpc", {"vpc_ids": '["subnet-0123456789abcdef0"]'},
                                   "tenant 'subvpc': vpc_ids: 'subnet-0123456789abcdef0' is not a VPC id like "
                                   "vpc-0123456789abcdef0"),
    "overlong tenant id": (LONG_ID, {},
                           f"tenant '{LONG_ID}': tenant_id: '{LONG_ID}' must be "
                           "3-24 characters, lowercase, matching [a-z][a-z0-9-]*"),
    "overlong EMR namespace": ("longns", {"emr_namespace": f'"{LONG_NAMESPACE}"'},
                               f"tenant 'longns': emr_namespace: '{LONG_NAMESPACE}' is not a Kubernetes namespace name"),
    "the account's Lake Formation settings, which moved to a platform unit": (
        "oldlf", {"lake_formation": "{ manage_settings = true }"},
        "tenant 'oldlf': lake_formation.manage_settings: the account's Lake Formation settings moved to the platform "
        "unit tenants/_platform/lake-formation-eu-west-1/ (tenants/README.md, \"Lake Formation settings\"), on which "
        "the tenant depends; remove manage_settings from the tenant's file"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_config_fails_in_one_line_and_applies_nothing(case, scratch):
    folder, state = scratch
    tenant_id, overrides, expected = CASES[case]
    _write(folder, tenant_id, _tenant_file(tenant_id, **overrides))
    _assert_one_line_and_nothing_applied(_make("apply", folder, state, f"TENANT={tenant_id}"), state, expected)


def test_rule_texts_are_the_models(scratch):
    """The expected lines above are tenant_model's rule texts, not copies that could drift apart silently."""
    assert CASES["gdpr outside the EU"][2].endswith(tenant_model.RULE_TEXTS["gdpr"].format(region="us-east-1"))
    assert CASES["malformed account id"][2].endswith(
        tenant_model.RULE_TEXTS["account_id"].format(account_id="12345678901a"))
    assert CASES["overlong tenant id"][2].endswith(tenant_model.RULE_TEXTS["tenant_id"].format(tenant_id=LONG_ID))


DUPLICATE = ("tenant 'dupco': tenant_id: duplicate tenant id: tenants/dupco-copy/ and tenants/dupco/ both declare "
             "it; each tenant needs its own id, equal to its directory name")


@pytest.mark.parametrize("command", ["apply TENANT=dupco", "apply TENANT=dupco-copy", "plan-all", "apply-all"])
def test_duplicate_tenant_id_fails_in_one_line_and_applies_nothing(command, scratch):
    """A copied tenant dir that kept the original's tenant_id: both would write the same state and buckets.
    Every command that loads the tenants refuses it, the untouched original included."""
    folder, state = scratch
    _write(folder, "dupco", _tenant_file("dupco"))
    _write(folder, "dupco-copy", _tenant_file("dupco"))
    target, *args = command.split()
    _assert_one_line_and_nothing_applied(_make(target, folder, state, *args), state, DUPLICATE)
