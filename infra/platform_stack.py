"""What every platform unit's CDKTF stack shares: readable addresses, typed and validated variables, and the two
variables every platform module takes (``region``, ``environment``: root.hcl passes ``environment`` to every unit).

Used by ``infra/platform_app.py`` (the shared cluster network) and ``infra/platform_lake_formation_app.py`` (one
account's Lake Formation settings). Rule texts come from ``tenant_model``, so a plan-time error reads as the runner's.
"""
from __future__ import annotations

import json
import os

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from cdktf import TerraformOutput, TerraformStack, TerraformVariable, TerraformVariableValidationConfig  # noqa: E402
from cdktf_cdktf_provider_aws.provider import AwsProvider  # noqa: E402
from constructs import Construct  # noqa: E402

import tenant_model  # noqa: E402
from modules.refs import logical_id  # noqa: E402


def check(condition: str, field: str, rule: str) -> TerraformVariableValidationConfig:
    """A variable validation whose message names the field and the rule (``<field>: <rule>``)."""
    return TerraformVariableValidationConfig(condition="${%s}" % condition, error_message=f"{field}: {rule}")


def regex(pattern: str, ref: str) -> str:
    """A Terraform condition: ``ref`` matches ``pattern``."""
    return f"can(regex({json.dumps(pattern)}, {ref}))"


class PlatformStack(TerraformStack):
    """A platform module: no backend, a provider block only for CDKTF's validation (synth.py strips it; Terragrunt
    generates provider.tf), variables under ``inputs`` keeping their own names."""

    def _allocate_logical_id(self, tf_element) -> str:  # same readable addresses as the tenant stack
        return logical_id(tf_element)

    def __init__(self, scope: Construct, id_: str) -> None:
        super().__init__(scope, id_)
        AwsProvider(self, "aws", region="${var.region}")
        self.inputs = Construct(self, "inputs")  # variables keep their own names (modules/refs.py)

    def variable(self, name: str, type_: str, description: str, default=None, checks=()) -> TerraformVariable:
        return TerraformVariable(self.inputs, name, type=type_, description=description, default=default,
                                 validation=list(checks) or None)

    def region_variable(self, description: str) -> TerraformVariable:
        return self.variable("region", "string", description, checks=[
            check(regex(tenant_model.REGION_RE, "var.region"), "region",
                  tenant_model.RULE_TEXTS["region"].format(region="${var.region}"))])

    def environment_variable(self) -> TerraformVariable:
        environments = ", ".join(tenant_model.ENVIRONMENTS)
        return self.variable(
            "environment", "string", f"Deployment environment, one of {environments}.", default="local", checks=[
                check(f"contains({json.dumps(list(tenant_model.ENVIRONMENTS))}, var.environment)", "environment",
                      tenant_model.RULE_TEXTS["environment"].format(environment="${var.environment}",
                                                                    environments=environments))])

    def outputs(self, outputs: dict[str, tuple[str, str]]) -> None:
        """One output per entry: name -> (value, description)."""
        for name, (value, description) in outputs.items():
            TerraformOutput(self, name, value=value, description=description)
