"""The Lake Formation settings units (``tenants/_platform/lake-formation-*``) and the tenants that need them.

* **One unit per account and region, and every tenant there after it** (``check_layout``, static, before anything
  runs): two units for one account and region are refused; a tenant whose account and region have such a unit must
  depend on it (a ``dependency`` block), so ``apply-all`` and a local ``make apply`` put the settings in place before
  the tenant's Glue databases; a tenant's dependency on the unit of another account or region is refused.
* **No tenant apply where the defaults remain** (``check_default_permissions``, before a tenant's apply, against the
  cloud): where the account's data-lake settings in the tenant's region (``GetDataLakeSettings``) still give
  ``IAM_ALLOWED_PRINCIPALS`` a permission in ``CreateDatabaseDefaultPermissions`` or ``CreateTableDefaultPermissions``,
  AWS would hand the tenant's new databases and tables to IAM alone and its LF-tags and grants would decide nothing:
  the apply is refused in one line naming the fix (apply the platform unit that manages them). Where that unit is
  applied (the runner applies a tenant's dependencies first locally), the settings hold no such default and the
  apply proceeds. The emulator starts with AWS's out-of-the-box defaults, ``IAM_ALLOWED_PRINCIPALS`` in both.
"""
from __future__ import annotations

from typing import Mapping

from infra import platform_lake_formation as model
from infra.terragrunt.config import PLATFORM_DIR, UnitRun, platform_kind
from infra.terragrunt.environment import boto_client, rel
from infra.terragrunt.errors import TerragruntError

# The settings resource's address in the platform module (modules/lake_formation_settings.py, infra/platform_lake_formation_app.py).
SETTINGS_ADDRESS = "aws_lakeformation_data_lake_settings.lf_settings"


def units_by_place(runs: list[UnitRun]) -> dict[tuple[str, str], UnitRun]:
    """The Lake Formation units by (account, region); two for one place is a one-line error."""
    places: dict[tuple[str, str], list[UnitRun]] = {}
    for run in runs:
        if run.kind == model.UNIT_KIND:
            places.setdefault((run.config.account_id, run.config.region), []).append(run)
    for (account_id, region), units in sorted(places.items()):
        if len(units) > 1:
            names = sorted(u.name for u in units)
            raise TerragruntError(f"unit '{names[1]}': " + model.RULE_TEXTS["one_per_account"].format(
                account_id=account_id, region=region, units=" and ".join(names)))
    return {place: units[0] for place, units in places.items()}


def check_layout(runs: list[UnitRun]) -> None:
    """Static checks over every unit's inputs (no cloud calls); the first broken rule is a one-line error."""
    places = units_by_place(runs)
    by_name = {r.name: r for r in runs}
    for tenant in (r for r in runs if r.is_tenant):
        place = (tenant.config.account_id, tenant.config.region)
        settings = [by_name[d.unit] for d in tenant.dependencies if d.unit in by_name and by_name[d.unit].kind == model.UNIT_KIND]
        for unit in settings:
            if (unit.config.account_id, unit.config.region) != place:
                raise TerragruntError(
                    f"tenant '{tenant.name}': it depends on {unit.name}, the Lake Formation settings of account "
                    f"{unit.config.account_id} in {unit.config.region}, but its lake is in account {place[0]}, region "
                    f"{place[1]}: point the dependency at the unit of its own account and region")
        owner = places.get(place)
        if owner is not None and owner not in settings:
            raise TerragruntError(
                f"tenant '{tenant.name}': the Lake Formation settings of account {place[0]} in {place[1]} are "
                f"{owner.name}'s, and the tenant must be applied after them: add dependency \"lake_formation\" "
                f"{{ config_path = \"../{owner.name}\" }} (with mock_outputs, as in tenants/acme/terragrunt.hcl) to "
                f"{rel(tenant.config_path)}")


def check_default_permissions(run: UnitRun, env: Mapping[str, str]) -> None:
    """Before a tenant's apply: the account's Lake Formation settings in its region give new databases and tables no
    ``IAM_ALLOWED_PRINCIPALS`` default, or the apply is refused in one line naming the fix (nothing applied)."""
    client = boto_client("lakeformation", run.config.region, env)
    try:
        settings = client.get_data_lake_settings()["DataLakeSettings"]
    except client.exceptions.ClientError as exc:
        error = exc.response.get("Error", {})
        raise TerragruntError(
            f"tenant '{run.name}': cannot read the account's Lake Formation settings in {run.config.region} "
            f"(GetDataLakeSettings: {error.get('Code', '?')}); the identity applying tenants needs "
            "lakeformation:GetDataLakeSettings, and the runner refuses a tenant whose account keeps "
            f"{model.IAM_ALLOWED_PRINCIPALS} defaults") from None
    kept = model.iam_allowed_defaults(settings)
    if not kept:
        return
    units = [d.unit for d in run.dependencies
             if d.unit.startswith(PLATFORM_DIR + "/") and platform_kind(d.unit) == model.UNIT_KIND]
    if units:
        fix = (f"apply the platform unit that manages them: make apply UNIT={units[0]} (applied already, and the "
               f"defaults came back since: make apply UNIT={units[0]} TF_ARGS=-replace={SETTINGS_ADDRESS})")
    else:
        fix = (f"add a platform unit that manages them, tenants/_platform/{model.UNIT_KIND}-{run.config.region}/ "
               f"(region {run.config.region}, account_id {run.config.account_id}: copy "
               f"tenants/_platform/{model.UNIT_KIND}-eu-west-1/), a dependency \"lake_formation\" on it in "
               f"{rel(run.config_path)}, and apply (tenants/README.md, \"Lake Formation settings\")")
    raise TerragruntError(
        f"tenant '{run.name}': the Lake Formation settings of account {run.config.account_id} in {run.config.region} "
        f"give new databases and tables to {model.IAM_ALLOWED_PRINCIPALS} ({' and '.join(kept)}), so the tenant's "
        f"LF-tags and grants would decide nothing; nothing was applied. Fix: {fix}")
