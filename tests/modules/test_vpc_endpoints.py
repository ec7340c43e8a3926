"""modules/vpc_endpoints.py: data lookups, gateway + interface endpoints, security group."""
from __future__ import annotations

from modules.vpc_endpoints import S3_ENDPOINT_ACTIONS, VpcEndpointsConfig
from tests.modules.helpers import data, document_statements, resource


def test_documented_defaults():
    cfg = VpcEndpointsConfig(vpc_ids=[], region="r", name_prefix="p", bucket_arns=[], tags={})
    assert cfg.interface_services == ("sts", "kms", "logs") and cfg.https_port == 443


def test_vpc_lookups_per_vpc(tenant_module):
    assert data(tenant_module, "aws_vpc", "endpoints_vpc")["for_each"] == "${toset(var.vpc_ids)}"
    assert data(tenant_module, "aws_route_tables", "endpoints_route_tables")["vpc_id"] == "${each.value}"
    assert data(tenant_module, "aws_subnets", "endpoints_subnets")["filter"] == [
        {"name": "vpc-id", "values": ["${each.value}"]}]
    # One subnet per AZ (AWS allows one per AZ for an interface endpoint), lowest id first.
    assert "availability_zone => id..." in tenant_module["locals"]["endpoint_subnet_ids"]
    assert ": sort(ids)[0]]" in tenant_module["locals"]["endpoint_subnet_ids"]


def test_gateway_endpoint_in_every_vpc_on_its_route_tables(tenant_module):
    gw = resource(tenant_module, "aws_vpc_endpoint", "endpoints_gateway")
    assert gw["for_each"] == "${toset(var.vpc_ids)}"
    assert gw["vpc_endpoint_type"] == "Gateway" and gw["service_name"] == "com.amazonaws.${var.region}.s3"
    assert gw["route_table_ids"] == "${data.aws_route_tables.endpoints_route_tables[each.value].ids}"
    assert gw["policy"] == "${data.aws_iam_policy_document.endpoints_gateway_policy.json}"


def test_gateway_policy_allows_only_the_tenant_lake(tenant_module):
    [only] = document_statements(tenant_module, "endpoints_gateway_policy").values()
    assert only["sid"] == "TenantBucketsOnly" and only["effect"] == "Allow"
    assert only["actions"] == list(S3_ENDPOINT_ACTIONS)
    lake = "arn:${data.aws_partition.inputs_partition.partition}:s3:::${var.tenant_id}-${var.region}-lake"
    assert only["resources"] == [lake, f"{lake}/*"]


def test_interface_endpoints_sts_kms_logs_with_private_dns(tenant_module):
    assert tenant_module["locals"]["interface_endpoints"] == (
        '${{ for pair in setproduct(var.vpc_ids, ["sts", "kms", "logs"]) : '
        '"${pair[0]}.${pair[1]}" => { vpc_id = pair[0], service = pair[1] } }}')
    ep = resource(tenant_module, "aws_vpc_endpoint", "endpoints_interface")
    assert ep["vpc_endpoint_type"] == "Interface" and ep["private_dns_enabled"] is True
    assert ep["service_name"] == "com.amazonaws.${var.region}.${each.value.service}"
    assert ep["subnet_ids"] == "${local.endpoint_subnet_ids[each.value.vpc_id]}"
    assert ep["security_group_ids"] == ["${aws_security_group.endpoints_security_group[each.value.vpc_id].id}"]


def test_security_group_allows_only_https_from_the_vpc_cidr_and_no_egress(tenant_module):
    sg = resource(tenant_module, "aws_security_group", "endpoints_security_group")
    assert "ingress" not in sg and "egress" not in sg  # terraform removes AWS's default allow-all egress
    rules = tenant_module["resource"]["aws_vpc_security_group_ingress_rule"]
    assert list(rules) == ["endpoints_https_from_vpc"]
    assert "aws_vpc_security_group_egress_rule" not in tenant_module["resource"]
    rule = rules["endpoints_https_from_vpc"]
    assert (rule["ip_protocol"], rule["from_port"], rule["to_port"]) == ("tcp", 443, 443)
    assert rule["cidr_ipv4"] == "${data.aws_vpc.endpoints_vpc[each.value].cidr_block}"
