"""Stable Terraform addresses for constructs, so Terraform expressions can index for_each elements.

The tenant stack names every element after its construct path (``lake/bucket`` ->
``lake_bucket``) instead of CDKTF's hashed ids, which keeps the synthesized JSON readable and lets
an expression such as ``data.aws_vpc.endpoints_vpc[each.value].cidr_block`` be written here.
"""
from __future__ import annotations

from constructs import Node
from cdktf import TerraformDataSource, TerraformElement, TerraformLocal, TerraformOutput, TerraformResource, TerraformVariable


def logical_id(element: TerraformElement | Node) -> str:
    """Variables, locals and outputs keep their own id (they are the module's interface)."""
    node = element if isinstance(element, Node) else element.node
    if isinstance(element, (TerraformVariable, TerraformLocal, TerraformOutput)):
        return node.id
    parts = node.path.split("/")[1:]  # drop the stack
    return "_".join(parts).replace("-", "_")


def address(element: TerraformResource | TerraformDataSource) -> str:
    """``aws_x.name`` or ``data.aws_x.name``, for use inside ``${...}``."""
    prefix = "data." if isinstance(element, TerraformDataSource) else ""
    return f"{prefix}{element.terraform_resource_type}.{logical_id(element)}"


def tenant_rule_arns(partition: str, region: str, account_id: str, tenant_id: str) -> str:
    """The ARN pattern of every EventBridge rule of a tenant (its rules are named ``<tenant>-...``): what the alerts
    topic, the alert rules' local queue and the triggers' dead-letter queue admit as ``aws:SourceArn``."""
    return f"arn:{partition}:events:{region}:{account_id}:rule/{tenant_id}-*"
