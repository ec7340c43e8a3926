"""The platform Lake Formation model: the unit that owns one account's Lake Formation settings in one region,
in plain Python (inputs, rules, and what "the defaults remain" means).

Lake Formation's data-lake settings (its administrators; the default permissions of new databases and new tables)
are one per account and region, and out of the box they give ``IAM_ALLOWED_PRINCIPALS`` ``ALL`` on every new
database and table, which leaves IAM alone in charge and the tenants' LF-tags and grants without effect.  They belong
to no tenant: a platform unit per account and region, ``tenants/_platform/lake-formation-<region>/``, applies them
(``infra/platform_lake_formation_app.py``): administrators, and no ``IAM_ALLOWED_PRINCIPALS`` in
``CreateDatabaseDefaultPermissions`` or ``CreateTableDefaultPermissions``.  The tenants of that account and region
depend on it (a Terragrunt ``dependency``), so it is applied before their Glue databases are created, and the
runner refuses a tenant's apply where the account's settings still hold the defaults
(``infra/terragrunt/lake_formation.py``).

Like ``tenant_model`` and ``infra.platform``, this module imports no cdktf and no boto3.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Mapping

import tenant_model
from infra.platform import PlatformConfigError, refuse_unknown_and_missing

# The directory name of such a unit under tenants/_platform/ starts with this (one unit per account and region:
# the samples name theirs after the region, lake-formation-eu-west-1).
UNIT_KIND = "lake-formation"
IAM_ALLOWED_PRINCIPALS = "IAM_ALLOWED_PRINCIPALS"
# The two settings whose IAM_ALLOWED_PRINCIPALS entry leaves new databases and tables to IAM alone.
DEFAULT_PERMISSION_SETTINGS: tuple[str, ...] = ("CreateDatabaseDefaultPermissions", "CreateTableDefaultPermissions")
# Lake Formation administrators are IAM users and roles (no role session, no federated user, no group).
ADMIN_ARN_RE = tenant_model.LF_READER_ARN_RE

RULE_TEXTS: dict[str, str] = {
    "admin_principal_arns": "every entry must be an IAM role or user ARN like arn:aws:iam::123456789012:role/lake-admin, "
                            "each once (Lake Formation administrators are IAM users and roles)",
    "one_per_account": "the Lake Formation settings of account {account_id} in {region} are managed by {units}: they "
                       "are one per account and region; keep one of these units",
}


@dataclasses.dataclass(frozen=True)
class LakeFormationSettingsConfig:
    """Inputs of the platform Lake Formation module (``infra/build/platform_lake_formation``).

    Attributes:
        region: the region whose settings the unit manages (the tenants of this account there depend on it).
        account_id: the account whose settings these are; the module refuses to apply with credentials of another.
        admin_principal_arns: Lake Formation administrators besides the identity that applies the unit (which must
            stay one: the tenants' applies create LF-tags and grants, which only an administrator may). IAM role or
            user ARNs. @default - ()
        environment: local targets the embedded emulator. @default - "local"
    """

    region: str
    account_id: str
    admin_principal_arns: tuple[str, ...] = ()
    environment: str = "local"


def validate(cfg: LakeFormationSettingsConfig, unit: str) -> LakeFormationSettingsConfig:
    if not re.match(tenant_model.REGION_RE, cfg.region or ""):
        raise PlatformConfigError(unit, "region", tenant_model.RULE_TEXTS["region"].format(region=cfg.region))
    if not re.match(tenant_model.ACCOUNT_ID_RE, cfg.account_id or ""):
        raise PlatformConfigError(unit, "account_id", tenant_model.RULE_TEXTS["account_id"].format(
            account_id=cfg.account_id))
    if cfg.environment not in tenant_model.ENVIRONMENTS:
        raise PlatformConfigError(unit, "environment", tenant_model.RULE_TEXTS["environment"].format(
            environment=cfg.environment, environments=", ".join(tenant_model.ENVIRONMENTS)))
    admins = cfg.admin_principal_arns
    if not all(re.match(ADMIN_ARN_RE, a) for a in admins) or len(set(admins)) != len(admins):
        raise PlatformConfigError(unit, "admin_principal_arns", RULE_TEXTS["admin_principal_arns"])
    return cfg


FIELDS = {f.name for f in dataclasses.fields(LakeFormationSettingsConfig)}
REQUIRED = {"region", "account_id"}


def from_inputs(inputs: Mapping[str, Any], unit: str) -> LakeFormationSettingsConfig:
    """Build and validate a ``LakeFormationSettingsConfig`` from a Terragrunt ``inputs`` map."""
    refuse_unknown_and_missing(inputs, unit, FIELDS, REQUIRED)
    values = dict(inputs)
    for field in ("region", "account_id", "environment"):
        if field in values and not isinstance(values[field], str):
            raise PlatformConfigError(unit, field, f"must be a string, got {type(values[field]).__name__}")
    if "admin_principal_arns" in values:
        admins = values["admin_principal_arns"]
        if not isinstance(admins, (list, tuple)) or not all(isinstance(a, str) for a in admins):
            raise PlatformConfigError(unit, "admin_principal_arns", "must be a list of strings")
        values["admin_principal_arns"] = tuple(admins)
    return validate(LakeFormationSettingsConfig(**values), unit)


def iam_allowed_defaults(settings: Mapping[str, Any]) -> list[str]:
    """Which of ``DEFAULT_PERMISSION_SETTINGS`` in ``settings`` (``GetDataLakeSettings``' ``DataLakeSettings``) give
    ``IAM_ALLOWED_PRINCIPALS`` a permission: where they do, new databases and tables are IAM's alone."""
    return [name for name in DEFAULT_PERMISSION_SETTINGS
            if any((entry.get("Principal") or {}).get("DataLakePrincipalIdentifier") == IAM_ALLOWED_PRINCIPALS
                   for entry in settings.get(name) or ())]
