"""modules/fixture_vpc.py, as the platform network module uses it: a VPC, two private subnets with their route
tables, all created only when ``var.create_fixture_vpc`` (local emulator only) is true."""
from __future__ import annotations

from modules.fixture_vpc import FixtureVpcConfig
from tests.modules.helpers import resource


def test_documented_defaults():
    cfg = FixtureVpcConfig(enabled="true", region="r", name="n", tags="local.t")
    assert (cfg.cidr_block, cfg.network_key) == ("10.30.0.0/16", "fixture")


def test_everything_is_conditional_on_the_switch(platform_module):
    assert resource(platform_module, "aws_vpc", "fixture_vpc")["count"] == "${var.create_fixture_vpc ? 1 : 0}"
    assert platform_module["locals"]["fixture_subnet_cidrs"].endswith("if var.create_fixture_vpc }}")
    for type_, name in (("aws_subnet", "fixture_subnet"), ("aws_route_table", "fixture_route_table"),
                        ("aws_route_table_association", "fixture_association")):
        assert resource(platform_module, type_, name)["for_each"] == "${local.fixture_subnet_cidrs}", name


def test_the_vpc_is_handed_to_the_endpoints_with_all_its_route_tables(platform_module):
    vpc = resource(platform_module, "aws_vpc", "fixture_vpc")
    assert vpc["enable_dns_support"] is True and vpc["enable_dns_hostnames"] is True  # private DNS of endpoints
    networks = platform_module["locals"]["endpoint_networks"]
    assert "fixture = { vpc_id = one(aws_vpc.fixture_vpc[*].id)" in networks
    assert ("route_table_ids = concat(aws_vpc.fixture_vpc[*].main_route_table_id, "
            "[for rt in aws_route_table.fixture_route_table : rt.id])") in networks
    assert networks.endswith("key => net if var.create_fixture_vpc })}")
