"""modules/vpc_endpoints.py: data lookups, gateway + interface endpoints, security group, endpoint policies.

As the tenant module uses it (its own VPCs, looked up); the platform network's use (a created fixture VPC,
policies over many tenants) is in tests/infra/test_platform_app.py.
"""
from __future__ import annotations

from modules.vpc_endpoints import KMS_ENDPOINT_ACTIONS, S3_ENDPOINT_ACTIONS, VpcEndpointsConfig
from tests.modules.helpers import data, document_statements, resource


def test_documented_defaults():
    cfg = VpcEndpointsConfig(region="r", name_prefix="p", bucket_arns=[], tags={})
    assert cfg.interface_services == ("sts", "kms", "logs") and cfg.https_port == 443
    assert (cfg.vpc_ids, cfg.networks, cfg.read_only_bucket_arns, cfg.kms_statements) == ((), None, (), ())


def test_vpc_lookups_per_vpc(tenant_module):
    assert data(tenant_module, "aws_vpc", "endpoints_vpc")["for_each"] == "${toset(var.vpc_ids)}"
    assert data(tenant_module, "aws_route_tables", "endpoints_route_tables")["vpc_id"] == "${each.value}"
    assert data(tenant_module, "aws_subnets", "endpoints_subnets")["filter"] == [
        {"name": "vpc-id", "values": ["${each.value}"]}]
    networks = tenant_module["locals"]["endpoint_networks"]
    # Every VPC in one shape, keyed by its id; one subnet per AZ (AWS allows one per AZ), lowest id first.
    assert networks.startswith("${{ for k, v in data.aws_vpc.endpoints_vpc : k => { vpc_id = v.id,")
    assert "route_table_ids = data.aws_route_tables.endpoints_route_tables[k].ids" in networks
    assert "availability_zone => id..." in networks and ": sort(ids)[0]]" in networks


def test_gateway_endpoint_in_every_vpc_on_its_route_tables(tenant_module):
    gw = resource(tenant_module, "aws_vpc_endpoint", "endpoints_gateway")
    assert gw["for_each"] == "${local.endpoint_networks}"
    assert gw["vpc_endpoint_type"] == "Gateway" and gw["service_name"] == "com.amazonaws.${var.region}.s3"
    assert gw["vpc_id"] == "${local.endpoint_networks[each.key].vpc_id}"
    assert gw["route_table_ids"] == "${local.endpoint_networks[each.key].route_table_ids}"
    assert gw["policy"] == "${data.aws_iam_policy_document.endpoints_gateway_policy.json}"


def test_gateway_policy_allows_only_the_tenant_lake(tenant_module):
    [only] = document_statements(tenant_module, "endpoints_gateway_policy").values()
    assert only["sid"] == "TenantBucketsOnly" and only["effect"] == "Allow"
    assert only["actions"] == list(S3_ENDPOINT_ACTIONS)
    # GDPR erase runs read every object version and delete noncurrent ones through the endpoint.
    assert {"s3:GetObjectVersion", "s3:ListBucketVersions", "s3:DeleteObjectVersion"} <= set(only["actions"])
    lake = "arn:${data.aws_partition.inputs_partition.partition}:s3:::${var.tenant_id}-${var.region}-lake"
    assert only["resources"] == [lake, f"{lake}/*"]


def test_kms_endpoint_policy_allows_only_the_tenant_key(tenant_module):
    [only] = document_statements(tenant_module, "endpoints_kms_policy").values()
    assert only["sid"] == "TenantKeysOnly" and only["effect"] == "Allow"
    assert only["actions"] == list(KMS_ENDPOINT_ACTIONS) and "kms:*" not in only["actions"]
    assert only["resources"] == ["${aws_kms_key.kms_key.arn}"]
    ep = resource(tenant_module, "aws_vpc_endpoint", "endpoints_interface")
    assert ep["policy"] == '${each.value.service == "kms" ? data.aws_iam_policy_document.endpoints_kms_policy.json : null}'


def test_interface_endpoints_sts_kms_logs_with_private_dns(tenant_module):
    assert tenant_module["locals"]["interface_endpoints"] == (
        '${{ for pair in setproduct(keys(local.endpoint_networks), ["sts", "kms", "logs"]) : '
        '"${pair[0]}.${pair[1]}" => { network = pair[0], service = pair[1] } }}')
    ep = resource(tenant_module, "aws_vpc_endpoint", "endpoints_interface")
    assert ep["vpc_endpoint_type"] == "Interface" and ep["private_dns_enabled"] is True
    assert ep["service_name"] == "com.amazonaws.${var.region}.${each.value.service}"
    assert ep["subnet_ids"] == "${local.endpoint_networks[each.value.network].subnet_ids}"
    assert ep["security_group_ids"] == ["${aws_security_group.endpoints_security_group[each.value.network].id}"]


def test_security_group_allows_only_https_from_the_vpc_cidr_and_no_egress(tenant_module):
    sg = resource(tenant_module, "aws_security_group", "endpoints_security_group")
    assert "ingress" not in sg and "egress" not in sg  # terraform removes AWS's default allow-all egress
    rules = tenant_module["resource"]["aws_vpc_security_group_ingress_rule"]
    assert list(rules) == ["endpoints_https_from_vpc"]
    assert "aws_vpc_security_group_egress_rule" not in tenant_module["resource"]
    rule = rules["endpoints_https_from_vpc"]
    assert (rule["ip_protocol"], rule["from_port"], rule["to_port"]) == ("tcp", 443, 443)
    assert rule["cidr_ipv4"] == "${local.endpoint_networks[each.key].cidr_block}"
