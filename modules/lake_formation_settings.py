"""The account's Lake Formation settings in one region: who administers Lake Formation, and no default that leaves
new databases and tables to IAM alone.

| resource | what |
|---|---|
| ``aws_lakeformation_data_lake_settings`` | administrators: the identity applying the unit and ``admin_principal_arns``
(an STS role session or federated user among them is left out: Lake Formation takes IAM users and roles);
``create_database_default_permissions`` and ``create_table_default_permissions`` not set, which the AWS provider
sends as no entry: new databases and tables get no ``IAM_ALLOWED_PRINCIPALS`` grant, so Lake Formation's grants
decide |

The settings are one per account and region and destroying them empties the administrators, so one platform unit per
account and region holds this construct (``infra/platform_lake_formation_app.py``), never a tenant. A precondition
refuses to apply them with credentials of another account than the unit's ``account_id``.
"""
from __future__ import annotations

import dataclasses

from cdktf import Postcondition, Precondition, TerraformResourceLifecycle, Token
from cdktf_cdktf_provider_aws.lakeformation_data_lake_settings import LakeformationDataLakeSettings
from constructs import Construct

from modules.refs import address


# An STS principal (a role session, a federated user): no Lake Formation administrator.
STS_SESSION_ARN_RE = ":sts::[0-9]{12}:(assumed-role|federated-user)/"


@dataclasses.dataclass(frozen=True)
class LakeFormationSettingsConfig:
    """Inputs of ``LakeFormationSettings`` (values are Terraform expressions without ``${}``).

    Attributes:
        admin_arns: list expression of the administrators (the deployer's ARN and ``var.admin_principal_arns``).
        account_id: string expression of the account the settings must belong to (``var.account_id``).
        caller_account_id: string expression of the account of the credentials applying them
            (``data.aws_caller_identity.<name>.account_id``).
    """

    admin_arns: str
    account_id: str
    caller_account_id: str


class LakeFormationSettings(Construct):
    """The settings resource (``settings``), applied only in the account ``account_id``."""

    def __init__(self, scope: Construct, id_: str, cfg: LakeFormationSettingsConfig) -> None:
        super().__init__(scope, id_)
        self.settings = LakeformationDataLakeSettings(
            self, "settings",
            admins=Token.as_list(f'${{distinct([for a in {cfg.admin_arns} : a if !can(regex("{STS_SESSION_ARN_RE}", a))])}}'))
        self.settings.lifecycle = TerraformResourceLifecycle(
            precondition=[Precondition(
                condition=f"${{{cfg.caller_account_id} == {cfg.account_id}}}",
                error_message=f"account_id: the credentials are of account ${{{cfg.caller_account_id}}}, not "
                              f"${{{cfg.account_id}}}: apply this unit in the account whose Lake Formation settings it "
                              "holds")],
            # The provider compares only what it sets, and it sets no default permission: defaults put back outside
            # the unit (a console click) would stay through any plan. This names them and the way back.
            postcondition=[Postcondition(
                condition="${length(self.create_database_default_permissions) == 0 && "
                          "length(self.create_table_default_permissions) == 0}",
                error_message="the account's Lake Formation settings give new databases or tables default permissions "
                              "(IAM_ALLOWED_PRINCIPALS), put back outside this unit; restore them: apply again with "
                              f"-replace={address(self.settings)}")])
