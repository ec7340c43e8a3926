"""infra/platform_lake_formation.py: the Lake Formation settings unit's inputs and rules, and when the account's
settings leave new databases and tables to IAM alone, in plain Python."""
from __future__ import annotations

import dataclasses

import pytest

from infra import platform_lake_formation as model

GOOD = {"region": "eu-west-1", "account_id": "123456789012"}
OPEN = [{"Principal": {"DataLakePrincipalIdentifier": "IAM_ALLOWED_PRINCIPALS"}, "Permissions": ["ALL"]}]


def test_documented_defaults():
    cfg = model.from_inputs(GOOD, "_platform/lake-formation-eu-west-1")
    defaults = {f.name: f.default for f in dataclasses.fields(model.LakeFormationSettingsConfig)
                if f.default is not dataclasses.MISSING}
    assert defaults == {"admin_principal_arns": (), "environment": "local"}
    assert (cfg.region, cfg.account_id) == ("eu-west-1", "123456789012")


@pytest.mark.parametrize("overrides, field, text", [
    ({"region": "mars"}, "region", "is not an AWS region name"),
    ({"account_id": "1234"}, "account_id", "must be exactly 12 digits"),
    ({"environment": "qa"}, "environment", "is not one of local, dev, staging, prod"),
    ({"admin_principal_arns": ["arn:aws:sts::123456789012:assumed-role/ops/jane"]}, "admin_principal_arns",
     "must be an IAM role or user ARN"),
    ({"admin_principal_arns": ["arn:aws:iam::123456789012:role/a"] * 2}, "admin_principal_arns", "each once"),
    ({"admin_principal_arns": "arn:aws:iam::123456789012:role/a"}, "admin_principal_arns", "must be a list of strings"),
    ({"account_id": 123456789012}, "account_id", "must be a string"),
    ({"tenants": {}}, "tenants", "unknown input (known: account_id, admin_principal_arns, environment, region)"),
])
def test_bad_inputs_give_one_line_errors_naming_the_unit_and_field(overrides, field, text):
    with pytest.raises(model.PlatformConfigError) as err:
        model.from_inputs({**GOOD, **overrides}, "_platform/lake-formation-eu-west-1")
    assert err.value.field == field and text in str(err.value)
    assert str(err.value).startswith("unit '_platform/lake-formation-eu-west-1': ") and "\n" not in str(err.value)


def test_a_missing_required_input_is_named():
    with pytest.raises(model.PlatformConfigError, match="account_id: is required"):
        model.from_inputs({"region": "eu-west-1"}, "_platform/lake-formation-eu-west-1")


def test_which_defaults_leave_new_databases_and_tables_to_iam():
    assert model.iam_allowed_defaults({"CreateDatabaseDefaultPermissions": OPEN, "CreateTableDefaultPermissions": OPEN}) == [
        "CreateDatabaseDefaultPermissions", "CreateTableDefaultPermissions"]
    assert model.iam_allowed_defaults({"CreateDatabaseDefaultPermissions": [], "CreateTableDefaultPermissions": OPEN}) == [
        "CreateTableDefaultPermissions"]
    # What AWS (and the emulator) hold after the platform unit's apply: no entry, or the keys left out.
    assert model.iam_allowed_defaults({"DataLakeAdmins": [{"DataLakePrincipalIdentifier": "arn:aws:iam::1:role/a"}]}) == []
    other = [{"Principal": {"DataLakePrincipalIdentifier": "arn:aws:iam::123456789012:role/a"}, "Permissions": ["ALL"]}]
    assert model.iam_allowed_defaults({"CreateDatabaseDefaultPermissions": other}) == []
