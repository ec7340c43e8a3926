"""The CDKTF app of the platform Lake Formation unit: one account's Lake Formation settings in one region.

One stack, synthesized once (``python -m infra.synth``) into ``infra/build/platform_lake_formation/``, applied by
the Terragrunt units ``tenants/_platform/lake-formation-<region>`` (one per account and region). It composes
``modules/lake_formation_settings.py``: the administrators (the identity applying it and ``admin_principal_arns``)
and no ``IAM_ALLOWED_PRINCIPALS`` default for new databases and tables. Rules come from
``infra.platform_lake_formation`` and ``tenant_model``.
"""
from __future__ import annotations

import json
import os

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from cdktf import App, TerraformOutput, TerraformStack, TerraformVariable  # noqa: E402
from cdktf import TerraformVariableValidationConfig  # noqa: E402
from cdktf_cdktf_provider_aws.provider import AwsProvider  # noqa: E402
from constructs import Construct  # noqa: E402

import tenant_model  # noqa: E402
from infra import platform_lake_formation as model  # noqa: E402
from modules.bucket_policy import DeployerIdentity  # noqa: E402
from modules.lake_formation_settings import LakeFormationSettings, LakeFormationSettingsConfig  # noqa: E402
from modules.refs import address, logical_id  # noqa: E402

STACK_NAME = "platform_lake_formation"


def _check(condition: str, field: str, rule: str) -> TerraformVariableValidationConfig:
    return TerraformVariableValidationConfig(condition="${%s}" % condition, error_message=f"{field}: {rule}")


def _regex(pattern: str, ref: str) -> str:
    return f"can(regex({json.dumps(pattern)}, {ref}))"


class PlatformLakeFormationStack(TerraformStack):
    """The Lake Formation settings of one account in one region."""

    def _allocate_logical_id(self, tf_element) -> str:  # same readable addresses as the tenant stack
        return logical_id(tf_element)

    def __init__(self, scope: Construct, id_: str = STACK_NAME) -> None:
        super().__init__(scope, id_)
        AwsProvider(self, "aws", region="${var.region}")  # stripped by synth.py; Terragrunt generates provider.tf
        rules, trules = model.RULE_TEXTS, tenant_model.RULE_TEXTS
        inputs = Construct(self, "inputs")  # variables keep their own names (modules/refs.py)

        def var(name: str, type_: str, description: str, default=None, checks=()) -> TerraformVariable:
            return TerraformVariable(inputs, name, type=type_, description=description, default=default,
                                     validation=list(checks) or None)

        var("region", "string", "The region whose Lake Formation settings the unit holds (the provider's region).",
            checks=[_check(_regex(tenant_model.REGION_RE, "var.region"), "region",
                           trules["region"].format(region="${var.region}"))])
        var("account_id", "string", "The account whose settings these are; applying with another account's "
            "credentials is refused.", checks=[
                _check(_regex(tenant_model.ACCOUNT_ID_RE, "var.account_id"), "account_id",
                       trules["account_id"].format(account_id="${var.account_id}"))])
        var("admin_principal_arns", "list(string)",
            "Lake Formation administrators besides the identity applying the unit (IAM role or user ARNs).",
            default=[], checks=[
                _check(f"alltrue([for a in var.admin_principal_arns : {_regex(model.ADMIN_ARN_RE, 'a')}]) && "
                       "length(distinct(var.admin_principal_arns)) == length(var.admin_principal_arns)",
                       "admin_principal_arns", rules["admin_principal_arns"])])
        var("environment", "string", f"Deployment environment, one of {', '.join(tenant_model.ENVIRONMENTS)}.",
            default="local", checks=[
                _check(f"contains({json.dumps(list(tenant_model.ENVIRONMENTS))}, var.environment)", "environment",
                       trules["environment"].format(environment="${var.environment}",
                                                    environments=", ".join(tenant_model.ENVIRONMENTS)))])

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
        for name, (value, description) in outputs.items():
            TerraformOutput(self, name, value=value, description=description)


def build(outdir: str) -> App:
    """The app with the platform Lake Formation stack, ready to ``synth()`` into ``outdir``."""
    app = App(outdir=outdir)
    PlatformLakeFormationStack(app)
    return app
