"""VPC endpoints in each of the tenant's (existing) VPCs.

* An S3 **gateway** endpoint per VPC, on all of the VPC's route tables (looked up), whose endpoint
  policy allows only the tenant's buckets: code in the VPC cannot reach any other bucket through it.
* **Interface** endpoints for STS, KMS and CloudWatch Logs per VPC, in one subnet per availability
  zone (AWS allows at most one), with private DNS, behind a security group that allows only HTTPS
  (443/tcp) from the VPC's CIDR and no egress.

The VPCs are inputs we do not own: data sources look up each VPC's CIDR, route tables and subnets.
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

from modules.policy_document import Principal, Statement, policy_document
from modules.refs import address

# What code inside the tenant's VPCs may do on the tenant's buckets through the gateway endpoint.
S3_ENDPOINT_ACTIONS: tuple[str, ...] = (
    "s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload",
    "s3:ListMultipartUploadParts", "s3:ListBucket", "s3:ListBucketMultipartUploads", "s3:GetBucketLocation",
)


@dataclasses.dataclass(frozen=True)
class VpcEndpointsConfig:
    """Inputs of ``VpcEndpoints`` (values may be Terraform expressions).

    Attributes:
        vpc_ids: the list of VPC ids (a CDKTF list token, e.g. the variable's ``list_value``).
        region: AWS region (endpoint service names are ``com.amazonaws.<region>.<service>``).
        name_prefix: prefix of the security groups' names, e.g. ``<tenant>-lake``.
        bucket_arns: the only buckets the S3 gateway endpoint policy allows.
        tags: tags of endpoints and security groups.
        interface_services: services that get an interface endpoint. @default - ("sts", "kms", "logs")
        https_port: the only port the endpoints' security group allows in. @default - 443
    """

    vpc_ids: Sequence[str]
    region: str
    name_prefix: str
    bucket_arns: Sequence[str]
    tags: Mapping[str, str]
    interface_services: Sequence[str] = ("sts", "kms", "logs")
    https_port: int = 443


class VpcEndpoints(Construct):
    """Gateway + interface endpoints per VPC. ``gateway_ids`` / ``interface_ids``: maps, as expressions."""

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
        # One subnet per availability zone and VPC (the lowest id, so the choice is stable).
        TerraformLocal(self, "endpoint_subnet_ids", (
            f"${{{{ for vpc_id in var.vpc_ids : vpc_id => [for az, ids in "
            f"{{ for id in {address(subnets)}[vpc_id].ids : {address(subnet)}[id].availability_zone => id... }} "
            f": sort(ids)[0]] }}}}"))
        services = "[" + ", ".join(f'"{s}"' for s in cfg.interface_services) + "]"
        interface_endpoints = TerraformLocal(self, "interface_endpoints", (
            f"${{{{ for pair in setproduct(var.vpc_ids, {services}) : "
            f"\"${{pair[0]}}.${{pair[1]}}\" => {{ vpc_id = pair[0], service = pair[1] }} }}}}"))

        policy = policy_document(self, "gateway_policy", [
            Statement("TenantBucketsOnly", list(S3_ENDPOINT_ACTIONS),
                      [r for arn in cfg.bucket_arns for r in (arn, f"{arn}/*")], principals=[Principal("*", ["*"])]),
        ])
        self.gateway = VpcEndpoint(
            self, "gateway", for_each=vpcs, vpc_id=Token.as_string(vpcs.value),
            service_name=f"com.amazonaws.{cfg.region}.s3", vpc_endpoint_type="Gateway",
            route_table_ids=Token.as_list(f"${{{address(route_tables)}[each.value].ids}}"),
            policy=policy.json, tags=cfg.tags)

        self.security_group = SecurityGroup(
            self, "security_group", for_each=vpcs, vpc_id=Token.as_string(vpcs.value),
            name=f"{cfg.name_prefix}-endpoints-${{each.value}}",
            description="tenantlake: HTTPS from the VPC to its STS, KMS and Logs interface endpoints",
            tags=cfg.tags)
        VpcSecurityGroupIngressRule(
            self, "https_from_vpc", for_each=vpcs,
            security_group_id=f"${{{address(self.security_group)}[each.value].id}}",
            cidr_ipv4=f"${{{address(vpc)}[each.value].cidr_block}}",
            ip_protocol="tcp", from_port=cfg.https_port, to_port=cfg.https_port,
            description="HTTPS from the VPC CIDR only", tags=cfg.tags)

        interfaces = TerraformIterator.from_map(interface_endpoints.as_any_map)
        self.interface = VpcEndpoint(
            self, "interface", for_each=interfaces,
            vpc_id=Token.as_string(interfaces.get_string("vpc_id")),
            service_name=f"com.amazonaws.{cfg.region}.${{each.value.service}}",
            vpc_endpoint_type="Interface", private_dns_enabled=True,
            subnet_ids=Token.as_list("${local.endpoint_subnet_ids[each.value.vpc_id]}"),
            security_group_ids=[f"${{{address(self.security_group)}[each.value.vpc_id].id}}"],
            tags=cfg.tags)
        # tomap(): the outputs are map(string), not objects with one attribute per VPC.
        self.gateway_ids = f"${{tomap({{ for k, e in {address(self.gateway)} : k => e.id }})}}"
        self.interface_ids = f"${{tomap({{ for k, e in {address(self.interface)} : k => e.id }})}}"
        self.gateway_id_list = f"${{[for e in {address(self.gateway)} : e.id]}}"
