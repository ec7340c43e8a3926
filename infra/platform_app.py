"""The CDKTF app of the platform network: the endpoints of a shared EKS cluster's VPC(s).

One stack, synthesized once (``python -m infra.synth``) into ``infra/build/platform_network/``, applied by
the Terragrunt unit ``tenants/_platform/network``.  It composes ``modules/vpc_endpoints.py`` (the same
construct a tenant with its own VPC uses) over the cluster's VPCs, with endpoint policies scoped to the
tenants the network serves (``var.tenants``), and, on the local emulator only, ``modules/fixture_vpc.py``
as the cluster's VPC.  Rules and names come from ``infra.platform`` and ``tenant_model``.
"""
from __future__ import annotations

import json
import os

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from cdktf import App, TerraformLocal, Token  # noqa: E402
from cdktf_cdktf_provider_aws.data_aws_partition import DataAwsPartition  # noqa: E402
from constructs import Construct  # noqa: E402

from infra import platform as model  # noqa: E402
import tenant_model  # noqa: E402
from modules.fixture_vpc import FixtureVpc, FixtureVpcConfig  # noqa: E402
from modules.policy_document import Condition, ListExpr, Principal, Statement  # noqa: E402
from infra.platform_stack import PlatformStack, check as _check, regex as _regex  # noqa: E402
from modules.vpc_endpoints import KMS_ENDPOINT_ACTIONS, VpcEndpoints, VpcEndpointsConfig  # noqa: E402

STACK_NAME = "platform_network"


class PlatformNetworkStack(PlatformStack):
    """The shared network of one cluster (one region)."""

    def __init__(self, scope: Construct, id_: str = STACK_NAME) -> None:
        super().__init__(scope, id_)
        rules, trules = model.RULE_TEXTS, tenant_model.RULE_TEXTS
        var = self.variable
        self.region_variable("Region of the cluster VPCs; every tenant the network serves keeps its lake there.")
        var("tenants", "map(string)",
            "Tenant id => account id of each tenant whose jobs run on the cluster; the endpoint policies allow "
            "exactly their lake buckets and KMS keys.", checks=[
                _check(f"length(var.tenants) > 0 && alltrue([for t, a in var.tenants : "
                       f"{_regex(tenant_model.TENANT_ID_RE, 't')} && {_regex(tenant_model.ACCOUNT_ID_RE, 'a')}])",
                       "tenants", rules["tenants"])])
        vpc_ids = var("vpc_ids", "list(string)", "The cluster's existing VPCs (empty with create_fixture_vpc).", default=[], checks=[
            _check(f"length(distinct(var.vpc_ids)) == length(var.vpc_ids) && "
                   f"alltrue([for v in var.vpc_ids : {_regex(tenant_model.VPC_ID_RE, 'v')}])", "vpc_ids",
                   trules["vpc_ids"]),
            _check("(length(var.vpc_ids) > 0) != var.create_fixture_vpc", "vpc_ids", rules["vpcs"])])
        var("create_fixture_vpc", "bool",
            "Local emulator only: create a stand-in VPC (two private subnets with their route tables) for the "
            "cluster and use it instead of vpc_ids.", default=False, checks=[
                _check('!var.create_fixture_vpc || var.environment == "local"', "create_fixture_vpc",
                       rules["fixture"].format(environment="${var.environment}"))])
        var("name", "string", "Prefix of names and of the Name tag.", default="tenantlake", checks=[
            _check(_regex(model.NETWORK_NAME_RE, "var.name"), "name", rules["name"].format(name="${var.name}"))])
        var("cluster_read_buckets", "list(string)",
            "More buckets the cluster may read (s3:GetObject) through the S3 gateway endpoint, besides the ECR "
            "layer bucket and the AL2023 package repository of the region.", default=[], checks=[
                _check(f"alltrue([for b in var.cluster_read_buckets : {_regex(model.BUCKET_NAME_RE, 'b')}])",
                       "cluster_read_buckets", rules["buckets"])])
        self.environment_variable()
        var("cost_center", "string", "Cost-allocation tag.", default="data-platform")
        var("tags", "map(string)", "Extra tags on every taggable resource (the standard tags win).", default={})

        DataAwsPartition(self, "partition")
        partition = "${data.aws_partition.partition.partition}"  # plain text: CDKTF tokens inside ${...} lose theirs
        TerraformLocal(self, "resource_tags", (
            f'${{merge(var.tags, {{ component = "{model.COMPONENT_TAG}", environment = var.environment, '
            f'cost_center = var.cost_center }})}}'))
        tenant_ids = "sort(keys(var.tenants))"
        lake = tenant_model.render_name("lake_bucket", tenant_id="${t}", region="${var.region}")
        alias = tenant_model.render_name("kms_alias", tenant_id="${t}")
        read_buckets = ", ".join(json.dumps(b.format(region="${var.region}")) for b in model.CLUSTER_READ_BUCKETS)

        fixture = FixtureVpc(self, "fixture", FixtureVpcConfig(
            enabled="var.create_fixture_vpc", region="${var.region}", name="${var.name}", tags="local.resource_tags"))
        endpoints = VpcEndpoints(self, "endpoints", VpcEndpointsConfig(
            vpc_ids=vpc_ids.list_value, region="${var.region}", name_prefix="${var.name}-network",
            bucket_arns=ListExpr(f'${{[for t in {tenant_ids} : "arn:{partition}:s3:::{lake}"]}}'),
            read_only_bucket_arns=ListExpr(
                f'${{[for b in concat([{read_buckets}], var.cluster_read_buckets) : "arn:{partition}:s3:::${{b}}"]}}'),
            tags=Token.as_string_map("${local.resource_tags}"), networks=fixture.networks,
            kms_statements=[Statement(
                "TenantKeysOnly", list(KMS_ENDPOINT_ACTIONS),
                ListExpr(f'${{[for a in distinct(values(var.tenants)) : "arn:{partition}:kms:${{var.region}}:${{a}}:key/*"]}}'),
                principals=[Principal("*", ["*"])],
                conditions=[Condition("ForAnyValue:StringEquals", "kms:ResourceAliases",
                                      ListExpr(f'${{[for t in {tenant_ids} : "{alias}"]}}'))])]))

        outputs = {
            "region": ("${var.region}", "Region of the network."),
            "vpc_ids": ("${[for n in values(local.endpoint_networks) : n.vpc_id]}", "The cluster VPCs the network serves."),
            "route_table_ids": ("${{ for n in values(local.endpoint_networks) : n.vpc_id => n.route_table_ids }}",
                                "Route tables per VPC id (the S3 gateway endpoint is on all of them)."),
            "gateway_endpoint_ids": (endpoints.gateway_ids,
                                     "S3 gateway endpoint id per VPC id (tenant input shared_gateway_endpoint_ids)."),
            "interface_endpoint_ids": (endpoints.interface_ids,
                                       "Interface endpoint id per \"<vpc_id>.<service>\" (tenant input "
                                       "shared_interface_endpoint_ids)."),
            "tenants": (f"${{{tenant_ids}}}", "The tenants whose lake buckets and keys the endpoint policies allow."),
        }
        self.outputs(outputs)


def build(outdir: str) -> App:
    """The app with the platform network stack, ready to ``synth()`` into ``outdir``."""
    app = App(outdir=outdir)
    PlatformNetworkStack(app)
    return app
