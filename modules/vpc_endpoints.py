"""VPC endpoints in VPCs: an S3 gateway endpoint and STS, KMS, CloudWatch Logs interface endpoints per VPC.

* An S3 **gateway** endpoint per VPC, on all of the VPC's route tables, whose endpoint policy allows the
  data actions on the given lake buckets, ``s3:GetObject`` on the given read-only buckets (what a cluster
  itself pulls, e.g. ECR image layers), and nothing else: code in the VPC cannot reach any other bucket
  through it.  AWS allows one S3 gateway-endpoint route per route table, so a VPC gets its S3 gateway
  endpoint from exactly one owner (the tenant module for a tenant's own VPC, the platform network for a
  shared cluster VPC; the runner refuses a layout with two).
* **Interface** endpoints for STS, KMS and CloudWatch Logs per VPC, in one subnet per availability zone
  (AWS allows at most one), with private DNS, behind a security group that allows only HTTPS (443/tcp)
  from the VPC's CIDR and no egress.  The KMS endpoint's policy allows the KMS data actions on the given
  keys only (``kms_statements``).

VPCs come in two forms: ``vpc_ids``, existing VPCs looked up with data sources (their ids must be known at
plan time), and ``networks``, VPCs created in the same configuration (the local fixture VPC), given with
their CIDR, route tables and subnets.  Resources are keyed by VPC id for ``vpc_ids`` and by the
``networks`` key otherwise, so the keys are known at plan time even when the created ids are not.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

from cdktf import TerraformIterator, TerraformLocal, Token
from cdktf_cdktf_provider_aws.data_aws_route_tables import DataAwsRouteTables
from cdktf_cdktf_provider_aws.data_aws_subnet import DataAwsSubnet
from cdktf_cdktf_provider_aws.data_aws_subnets import DataAwsSubnets, DataAwsSubnetsFilter
from cdktf_cdktf_provider_aws.data_aws_vpc import DataAwsVpc
from cdktf_cdktf_provider_aws.security_group import SecurityGroup
from cdktf_cdktf_provider_aws.vpc_endpoint import VpcEndpoint
from cdktf_cdktf_provider_aws.vpc_security_group_ingress_rule import VpcSecurityGroupIngressRule
from constructs import Construct

from modules.policy_document import ListExpr, Principal, Statement, Values, policy_document
from modules.refs import address

# What code inside the VPCs may do on the lake buckets through the gateway endpoint.  The version actions
# serve GDPR erase runs (reading every object version, deleting noncurrent ones); the identity policies
# decide who may use them (only the tenant's erasure role may delete versions: modules/job_roles.py).
S3_ENDPOINT_ACTIONS: tuple[str, ...] = (
    "s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload",
    "s3:ListMultipartUploadParts", "s3:ListBucket", "s3:ListBucketMultipartUploads", "s3:GetBucketLocation",
    "s3:GetObjectVersion", "s3:ListBucketVersions", "s3:DeleteObjectVersion",
)
# What code inside the VPCs may do with the allowed KMS keys through the KMS interface endpoint.
KMS_ENDPOINT_ACTIONS: tuple[str, ...] = (
    "kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:GenerateDataKeyWithoutPlaintext",
    "kms:ReEncryptFrom", "kms:ReEncryptTo", "kms:DescribeKey",
)
INTERFACE_SERVICES: tuple[str, ...] = ("sts", "kms", "logs")


def kms_keys_statement(key_arns: Values) -> Statement:
    """The KMS endpoint allows the data actions on exactly these keys (by ARN)."""
    return Statement("TenantKeysOnly", list(KMS_ENDPOINT_ACTIONS), key_arns, principals=[Principal("*", ["*"])])


@dataclasses.dataclass(frozen=True)
class VpcEndpointsConfig:
    """Inputs of ``VpcEndpoints`` (values may be Terraform expressions).

    Attributes:
        region: AWS region (endpoint service names are ``com.amazonaws.<region>.<service>``).
        name_prefix: prefix of the security groups' names, e.g. ``<tenant>-lake``.
        bucket_arns: the lake buckets whose objects the S3 gateway endpoint policy allows (a list, or a
            ``ListExpr``).
        tags: tags of endpoints and security groups.
        kms_statements: the KMS interface endpoint's policy (``kms_keys_statement``, or statements with
            conditions); empty keeps AWS's default (full access). @default - ()
        vpc_ids: existing VPCs (a CDKTF list token, ids known at plan time). @default - ()
        networks: an expression of a map ``key => {vpc_id, cidr_block, route_table_ids, subnet_ids}`` for
            VPCs created in the same configuration (``subnet_ids``: at most one per availability zone).
            @default - None
        read_only_bucket_arns: buckets the gateway endpoint policy allows ``s3:GetObject`` on (a list, or a
            ``ListExpr``). @default - ()
        interface_services: services that get an interface endpoint. @default - ("sts", "kms", "logs")
        https_port: the only port the endpoints' security group allows in. @default - 443
    """

    region: str
    name_prefix: str
    bucket_arns: Values
    tags: Mapping[str, str]
    kms_statements: Sequence[Statement] = ()
    vpc_ids: Sequence[str] = ()
    networks: str | None = None
    read_only_bucket_arns: Values = ()
    interface_services: Sequence[str] = INTERFACE_SERVICES
    https_port: int = 443


class VpcEndpoints(Construct):
    """Gateway + interface endpoints per VPC. ``gateway_ids`` / ``interface_ids``: maps VPC id -> endpoint id
    and ``"<vpc id>.<service>"`` -> endpoint id, as expressions; ``gateway_id_list``: the gateway ids."""

    def __init__(self, scope: Construct, id_: str, cfg: VpcEndpointsConfig) -> None:
        super().__init__(scope, id_)
        vpcs = TerraformIterator.from_list(cfg.vpc_ids)
        vpc = DataAwsVpc(self, "vpc", for_each=vpcs, id=Token.as_string(vpcs.value))
        route_tables = DataAwsRouteTables(self, "route_tables", for_each=vpcs, vpc_id=Token.as_string(vpcs.value))
        subnets = DataAwsSubnets(self, "subnets", for_each=vpcs, filter=[
            DataAwsSubnetsFilter(name="vpc-id", values=[Token.as_string(vpcs.value)])])
        all_subnets = TerraformIterator.from_list(TerraformLocal(
            self, "endpoint_candidate_subnet_ids", f"${{flatten([for s in {address(subnets)} : s.ids])}}").as_list)
        subnet = DataAwsSubnet(self, "subnet", for_each=all_subnets, id=Token.as_string(all_subnets.value))
        # Every VPC, looked up or created here, in one shape.  Interface endpoints go into one subnet per
        # availability zone and VPC (the lowest id, so the choice is stable).
        looked_up = (
            f"{{ for k, v in {address(vpc)} : k => {{ vpc_id = v.id, cidr_block = v.cidr_block, "
            f"route_table_ids = {address(route_tables)}[k].ids, subnet_ids = [for az, ids in "
            f"{{ for id in {address(subnets)}[k].ids : {address(subnet)}[id].availability_zone => id... }} "
            f": sort(ids)[0]] }} }}")
        networks = TerraformLocal(self, "endpoint_networks",
                                  f"${{merge({looked_up}, {cfg.networks[2:-1]})}}" if cfg.networks else f"${{{looked_up}}}")
        services = "[" + ", ".join(f'"{s}"' for s in cfg.interface_services) + "]"
        interface_endpoints = TerraformLocal(self, "interface_endpoints", (
            f"${{{{ for pair in setproduct(keys(local.endpoint_networks), {services}) : "
            f"\"${{pair[0]}}.${{pair[1]}}\" => {{ network = pair[0], service = pair[1] }} }}}}"))
        net = "local.endpoint_networks"

        statements = [Statement("TenantBucketsOnly", list(S3_ENDPOINT_ACTIONS), _objects_and_buckets(cfg.bucket_arns),
                                principals=[Principal("*", ["*"])])]
        if cfg.read_only_bucket_arns:
            statements.append(Statement("ClusterReadOnly", ["s3:GetObject"], _objects(cfg.read_only_bucket_arns),
                                        principals=[Principal("*", ["*"])]))
        policy = policy_document(self, "gateway_policy", statements)
        networks_iter = TerraformIterator.from_map(networks.as_any_map)
        self.gateway = VpcEndpoint(
            self, "gateway", for_each=networks_iter, vpc_id=f"${{{net}[each.key].vpc_id}}",
            service_name=f"com.amazonaws.{cfg.region}.s3", vpc_endpoint_type="Gateway",
            route_table_ids=Token.as_list(f"${{{net}[each.key].route_table_ids}}"),
            policy=policy.json, tags=cfg.tags)

        self.security_group = SecurityGroup(
            self, "security_group", for_each=networks_iter, vpc_id=f"${{{net}[each.key].vpc_id}}",
            name=f"{cfg.name_prefix}-endpoints-${{each.key}}",
            description="tenantlake: HTTPS from the VPC to its STS, KMS and Logs interface endpoints",
            tags=cfg.tags)
        VpcSecurityGroupIngressRule(
            self, "https_from_vpc", for_each=networks_iter,
            security_group_id=f"${{{address(self.security_group)}[each.key].id}}",
            cidr_ipv4=f"${{{net}[each.key].cidr_block}}",
            ip_protocol="tcp", from_port=cfg.https_port, to_port=cfg.https_port,
            description="HTTPS from the VPC CIDR only", tags=cfg.tags)

        kms_policy = policy_document(self, "kms_policy", list(cfg.kms_statements)) if cfg.kms_statements else None
        interfaces = TerraformIterator.from_map(interface_endpoints.as_any_map)
        self.interface = VpcEndpoint(
            self, "interface", for_each=interfaces,
            vpc_id=f"${{{net}[each.value.network].vpc_id}}",
            service_name=f"com.amazonaws.{cfg.region}.${{each.value.service}}",
            vpc_endpoint_type="Interface", private_dns_enabled=True,
            subnet_ids=Token.as_list(f"${{{net}[each.value.network].subnet_ids}}"),
            security_group_ids=[f"${{{address(self.security_group)}[each.value.network].id}}"],
            policy=f'${{each.value.service == "kms" ? {address(kms_policy)}.json : null}}' if kms_policy else None,
            tags=cfg.tags)
        # tomap(): the outputs are map(string), not objects with one attribute per VPC.
        self.gateway_ids = f"${{tomap({{ for k, e in {address(self.gateway)} : e.vpc_id => e.id }})}}"
        self.interface_ids = (f"${{tomap({{ for k, e in {address(self.interface)} : "
                              f"\"${{e.vpc_id}}.${{local.interface_endpoints[k].service}}\" => e.id }})}}")
        self.gateway_id_list = f"${{[for e in {address(self.gateway)} : e.id]}}"


def _objects(arns: Values) -> Values:
    if isinstance(arns, ListExpr):
        return ListExpr(f'${{[for a in {arns[2:-1]} : "${{a}}/*"]}}')
    return [f"{a}/*" for a in ([arns] if isinstance(arns, str) else arns)]


def _objects_and_buckets(arns: Values) -> Values:
    if isinstance(arns, ListExpr):
        return ListExpr(f'${{flatten([for a in {arns[2:-1]} : [a, "${{a}}/*"]])}}')
    return [r for a in ([arns] if isinstance(arns, str) else arns) for r in (a, f"{a}/*")]
