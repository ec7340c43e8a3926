"""The CDKTF app of the platform Lake Formation unit: one account's Lake Formation settings in one region.

One stack, synthesized once (``python -m infra.synth``) into ``infra/build/platform_lake_formation/``, applied by
the Terragrunt units ``tenants/_platform/lake-formation-<region>`` (one per account and region). It composes
``modules/lake_formation_settings.py``: the administrators (the identity applying it and ``admin_principal_arns``)
and no ``IAM_ALLOWED_PRINCIPALS`` default for new databases and tables. Rules come from
``infra.platform_lake_formation`` and ``tenant_model``.
"""
from __future__ import annotations

import os

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from cdktf import App  # noqa: E402
from constructs import Construct  # noqa: E402

import tenant_model  # noqa: E402
from infra import platform_lake_formation as model  # noqa: E402
from infra.platform_stack import PlatformStack, check, regex  # noqa: E402
from modules.bucket_policy import DeployerIdentity  # noqa: E402
from modules.lake_formation_settings import LakeFormationSettings, LakeFormationSettingsConfig  # noqa: E402
from modules.refs import address  # noqa: E402

STACK_NAME = "platform_lake_formation"


class PlatformLakeFormationStack(PlatformStack):
    """The Lake Formation settings of one account in one region."""

    def __init__(self, scope: Construct, id_: str = STACK_NAME) -> None:
        super().__init__(scope, id_)
        self.region_variable("The region whose Lake Formation settings the unit holds (the provider's region).")
        self.variable("account_id", "string", "The account whose settings these are; applying with another account's "
                      "credentials is refused.", checks=[
                          check(regex(tenant_model.ACCOUNT_ID_RE, "var.account_id"), "account_id",
                                tenant_model.RULE_TEXTS["account_id"].format(account_id="${var.account_id}"))])
        self.variable("admin_principal_arns", "list(string)",
                      "Lake Formation administrators besides the identity applying the unit (IAM role or user ARNs).",
                      default=[], checks=[
                          check(f"alltrue([for a in var.admin_principal_arns : {regex(model.ADMIN_ARN_RE, 'a')}]) && "
                                "length(distinct(var.admin_principal_arns)) == length(var.admin_principal_arns)",
                                "admin_principal_arns", model.RULE_TEXTS["admin_principal_arns"])])
        self.environment_variable()

        deployer = DeployerIdentity(self, "deployer")
        settings = LakeFormationSettings(self, "lf", LakeFormationSettingsConfig(
            admin_arns=f"concat([{deployer.arn_ref}], var.admin_principal_arns)", account_id="var.account_id",
            caller_account_id=deployer.account_ref))
        resource = address(settings.settings)
        outputs = {
            "region": ("${var.region}", "Region of the settings."),
            "account_id": ("${var.account_id}", "Account of the settings."),
            "admins": (f"${{{resource}.admins}}", "The Lake Formation administrators."),
            "create_database_default_permissions": (
                f"${{{resource}.create_database_default_permissions}}",
                "Default permissions of new databases: none (no IAM_ALLOWED_PRINCIPALS; Lake Formation's grants decide)."),
            "create_table_default_permissions": (
                f"${{{resource}.create_table_default_permissions}}",
                "Default permissions of new tables in new databases: none (no IAM_ALLOWED_PRINCIPALS)."),
        }
        self.outputs(outputs)


def build(outdir: str) -> App:
    """The app with the platform Lake Formation stack, ready to ``synth()`` into ``outdir``."""
    app = App(outdir=outdir)
    PlatformLakeFormationStack(app)
    return app
