"""A stand-in for an EKS cluster's VPC on the local emulator: a VPC with two private subnets, each with its
own route table (the VPC's main route table comes on top), created only when ``enabled`` is true.

Used by the platform network module so that, locally, the shared network has a VPC to put its endpoints
in and tenants get its id from the network's outputs (no VPC id is written down anywhere).  The module's
validation allows it only with ``environment = "local"``; on AWS the cluster's real VPCs are inputs.
"""
from __future__ import annotations

import dataclasses
from cdktf import TerraformIterator, TerraformLocal, Token
from cdktf_cdktf_provider_aws.route_table import RouteTable
from cdktf_cdktf_provider_aws.route_table_association import RouteTableAssociation
from cdktf_cdktf_provider_aws.subnet import Subnet
from cdktf_cdktf_provider_aws.vpc import Vpc
from constructs import Construct

from modules.refs import address


@dataclasses.dataclass(frozen=True)
class FixtureVpcConfig:
    """Inputs of ``FixtureVpc`` (values may be Terraform expressions).

    Attributes:
        enabled: a Terraform bool expression (without ``${}``), e.g. ``var.create_fixture_vpc``.
        region: the region; subnets go to ``<region>a`` and ``<region>b``.
        name: the ``Name`` tag prefix.
        tags: tags of every resource, as an HCL expression without ``${}``, e.g. ``local.resource_tags``.
        cidr_block: the VPC's CIDR; subnets are its /24s number 1 and 2. @default - "10.30.0.0/16"
        network_key: the key of the VPC in ``networks``. @default - "fixture"
    """

    enabled: str
    region: str
    name: str
    tags: str
    cidr_block: str = "10.30.0.0/16"
    network_key: str = "fixture"


class FixtureVpc(Construct):
    """``networks``: an expression of a map ``{<network_key> = {vpc_id, cidr_block, route_table_ids, subnet_ids}}``
    (empty when disabled), in the shape ``VpcEndpointsConfig.networks`` takes."""

    def __init__(self, scope: Construct, id_: str, cfg: FixtureVpcConfig) -> None:
        super().__init__(scope, id_)
        vpc = Vpc(self, "vpc", count=Token.as_number(f"${{{cfg.enabled} ? 1 : 0}}"), cidr_block=cfg.cidr_block,
                  enable_dns_support=True, enable_dns_hostnames=True,
                  tags=Token.as_string_map(f'${{merge({cfg.tags}, {{ Name = "{cfg.name}-fixture" }})}}'))
        # Keyed by availability-zone suffix; empty when disabled (a filtered for keeps one type for both cases).
        zones = TerraformLocal(self, "fixture_subnet_cidrs", (
            f'${{{{ for zone, index in {{ a = 1, b = 2 }} : zone => cidrsubnet("{cfg.cidr_block}", 8, index) '
            f"if {cfg.enabled} }}}}"))
        each_zone = TerraformIterator.from_map(zones.as_any_map)
        vpc_id = f"${{{address(vpc)}[0].id}}"
        subnet = Subnet(self, "subnet", for_each=each_zone, vpc_id=vpc_id, cidr_block="${each.value}",
                        availability_zone=f"{cfg.region}${{each.key}}",
                        tags=Token.as_string_map(f'${{merge({cfg.tags}, {{ Name = "{cfg.name}-private-${{each.key}}" }})}}'))
        route_table = RouteTable(self, "route_table", for_each=each_zone, vpc_id=vpc_id,
                                 tags=Token.as_string_map(f'${{merge({cfg.tags}, {{ Name = "{cfg.name}-private-${{each.key}}" }})}}'))
        RouteTableAssociation(self, "association", for_each=each_zone,
                              subnet_id=f"${{{address(subnet)}[each.key].id}}",
                              route_table_id=f"${{{address(route_table)}[each.key].id}}")
        self.networks = (
            f"${{{{ for key, net in {{ {cfg.network_key} = {{ vpc_id = one({address(vpc)}[*].id), "
            f"cidr_block = one({address(vpc)}[*].cidr_block), "
            f"route_table_ids = concat({address(vpc)}[*].main_route_table_id, [for rt in {address(route_table)} : rt.id]), "
            f"subnet_ids = [for s in {address(subnet)} : s.id] }} }} : key => net if {cfg.enabled} }}}}")
        self.vpc_ids = f"${{{address(vpc)}[*].id}}"

