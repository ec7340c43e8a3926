"""infra/terragrunt/lake_formation.py: the Lake Formation settings units and the tenants that need them.

* statically, over the units' inputs: one unit per account and region, and every tenant there depends on it (so it
  is applied first), never on the unit of another account or region;
* live, against the session's emulator (which starts with AWS's out-of-the-box settings, IAM_ALLOWED_PRINCIPALS in
  both default lists): a tenant's apply is refused in one line naming the fix while its account keeps them (the unit
  to add, or the unit to apply), and is not once the platform unit that manages them is applied. That a plan of the
  unit names defaults put back behind its back, and the replace that restores them, is
  tests/infra/test_platform_lake_formation_app.py's.
"""
from __future__ import annotations

import shutil

import pytest

from infra import terragrunt as tg
from infra.terragrunt import cli, lake_formation
from tests.conftest import TEST_STATE_DIR, run_make
from tests.infra.terragrunt.conftest import TENANTS, write_tenant

LF_WEST = "_platform/lake-formation-eu-west-1"


def _edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


def _without_lake_formation_dependency(text: str) -> str:
    start = text.index("# The account's Lake Formation settings in this region")
    return text[:start] + text[text.index("\n}\n", text.index('dependency "lake_formation"')) + 3:]


def test_every_sample_tenant_depends_on_the_settings_of_its_account_and_region():
    runs = {r.name: r for r in tg.config.load_units(TENANTS)}
    assert {name: [d.unit for d in run.dependencies if d.name == "lake_formation"]
            for name, run in runs.items() if run.is_tenant} == {
        "acme": [LF_WEST], "globex": [LF_WEST], "initech": ["_platform/lake-formation-eu-central-1"]}
    lake_formation.check_layout(list(runs.values()))


def test_a_tenant_that_does_not_depend_on_its_settings_unit_is_refused(scratch_layout):
    path = scratch_layout / "globex" / "terragrunt.hcl"
    path.write_text(_without_lake_formation_dependency(path.read_text()))
    with pytest.raises(tg.TerragruntError) as err:
        cli.load_layout(scratch_layout)
    assert str(err.value) == (
        "tenant 'globex': the Lake Formation settings of account 123456789012 in eu-west-1 are "
        "_platform/lake-formation-eu-west-1's, and the tenant must be applied after them: add dependency "
        "\"lake_formation\" { config_path = \"../_platform/lake-formation-eu-west-1\" } (with mock_outputs, as in "
        f"tenants/acme/terragrunt.hcl) to {tg.environment.rel(path)}")


def test_two_units_for_one_account_and_region_are_refused(scratch_layout):
    shutil.copytree(scratch_layout / LF_WEST, scratch_layout / "_platform" / "lake-formation-ireland")
    with pytest.raises(tg.TerragruntError) as err:
        cli.load_layout(scratch_layout)
    assert str(err.value) == (
        "unit '_platform/lake-formation-ireland': the Lake Formation settings of account 123456789012 in eu-west-1 "
        "are managed by _platform/lake-formation-eu-west-1 and _platform/lake-formation-ireland: they are one per "
        "account and region; keep one of these units")


def test_a_dependency_on_the_settings_of_another_region_is_refused(scratch_layout):
    _edit(scratch_layout / "initech" / "terragrunt.hcl", '"../_platform/lake-formation-eu-central-1"',
          '"../_platform/lake-formation-eu-west-1"')
    with pytest.raises(tg.TerragruntError, match=(
            "^tenant 'initech': it depends on _platform/lake-formation-eu-west-1, the Lake Formation settings of "
            "account 123456789012 in eu-west-1, but its lake is in account 123456789012, region eu-central-1: point "
            "the dependency at the unit of its own account and region$")):
        cli.load_layout(scratch_layout)


# ---- live: the account's settings on the session emulator -----------------------------------------------------
REGION = "eu-north-1"  # no other test touches its Lake Formation settings: they start as AWS's out-of-the-box ones
UNIT = f"_platform/lake-formation-{REGION}"
OPEN = [{"Principal": {"DataLakePrincipalIdentifier": "IAM_ALLOWED_PRINCIPALS"}, "Permissions": ["ALL"]}]
# On a shared network given literally (no dependency, no VPC of its own): the refusal needs no fixture network.
NORDCO = '''include "root" {
  path = find_in_parent_folders("root.hcl")
}
%s
inputs = {
  tenant_id                   = "nordco"
  region                      = "eu-north-1"
  data_classification         = ["gdpr"]
  account_id                  = "123456789012"
  shared_gateway_endpoint_ids = { "vpc-0aaaaaaaaaaaaaaa1" = "vpce-0aaaaaaaaaaaaaaa1" }
}
'''
DEPENDENCY = f'''dependency "lake_formation" {{
  config_path                             = "../{UNIT}"
  mock_outputs                            = {{ region = "{REGION}" }}
  mock_outputs_allowed_terraform_commands = ["validate", "plan", "destroy"]
}}
'''


@pytest.mark.integration
def test_a_tenant_is_refused_in_one_line_while_its_account_keeps_the_defaults(scratch_tenants, emulator, aws_env,
                                                                               boto_session):
    lf = boto_session("lakeformation", REGION)
    assert lf.get_data_lake_settings()["DataLakeSettings"]["CreateTableDefaultPermissions"] == OPEN  # AWS's start
    write_tenant(scratch_tenants, "nordco", NORDCO % "")
    refused = run_make("apply", "TENANT=nordco", f"TENANTS_DIR={scratch_tenants}")
    ours = [line for line in refused.stderr.splitlines() if not line.startswith("make:")]
    assert refused.returncode != 0 and ours == [
        "error: tenant 'nordco': the Lake Formation settings of account 123456789012 in eu-north-1 give new databases "
        "and tables to IAM_ALLOWED_PRINCIPALS (CreateDatabaseDefaultPermissions and CreateTableDefaultPermissions), so "
        "the tenant's LF-tags and grants would decide nothing; nothing was applied. Fix: add a platform unit that "
        "manages them, tenants/_platform/lake-formation-eu-north-1/ (region eu-north-1, account_id 123456789012: copy "
        "tenants/_platform/lake-formation-eu-west-1/), a dependency \"lake_formation\" on it in "
        f"{tg.environment.rel(scratch_tenants / 'nordco' / 'terragrunt.hcl')}, and apply (tenants/README.md, "
        "\"Lake Formation settings\")"]
    assert "terraform" not in refused.stdout.lower() and not (TEST_STATE_DIR / "tenants" / "nordco").exists()
    assert not [b for b in boto_session("s3", REGION).list_buckets()["Buckets"] if b["Name"].startswith("nordco-")]

    # With the unit in the layout and the tenant depending on it, the fix names that unit (a local `make apply` of the
    # tenant applies it first; here only the check runs, the unit stays unapplied and the settings as AWS starts them).
    (scratch_tenants / UNIT).mkdir(parents=True)
    (scratch_tenants / UNIT / "terragrunt.hcl").write_text(
        (TENANTS / LF_WEST / "terragrunt.hcl").read_text().replace('region = "eu-west-1"', f'region = "{REGION}"'))
    write_tenant(scratch_tenants, "nordco", NORDCO % DEPENDENCY)
    cli.load_layout(scratch_tenants)
    env = {**aws_env, "TENANTLAKE_AWS_ENDPOINT": emulator.endpoint}
    with pytest.raises(tg.TerragruntError) as err:
        lake_formation.check_default_permissions(tg.load_tenant("nordco", scratch_tenants), env)
    assert str(err.value).split("Fix: ")[1] == (
        f"apply the platform unit that manages them: make apply UNIT={UNIT} (applied already, and the defaults came "
        f"back since: make apply UNIT={UNIT} TF_ARGS=-replace=aws_lakeformation_data_lake_settings.lf_settings)")


@pytest.mark.integration
def test_once_the_platform_unit_manages_the_settings_a_tenant_proceeds(lake_formation_settings, emulator, aws_env,
                                                                       boto_session):
    """The session's one apply of tenants/_platform/lake-formation-eu-west-1 (shared with every tenant fixture of the
    worker): administrators, no default permission, and acme passes the check its apply makes."""
    lake_formation_settings("eu-west-1")
    settings = boto_session("lakeformation", "eu-west-1").get_data_lake_settings()["DataLakeSettings"]
    assert settings["DataLakeAdmins"] and not settings.get("CreateDatabaseDefaultPermissions") \
        and not settings.get("CreateTableDefaultPermissions")
    env = {**aws_env, "TENANTLAKE_AWS_ENDPOINT": emulator.endpoint}
    lake_formation.check_default_permissions(tg.load_tenant("acme", TENANTS), env)
