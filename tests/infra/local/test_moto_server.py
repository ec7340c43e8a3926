"""infra/local/moto_server.py: the emulator's corrections to moto, each against the session's emulator, and
pinned against stock moto so that a moto upgrade that fixes one shows up here."""
from __future__ import annotations

import uuid

import boto3
import pytest
from botocore.exceptions import ClientError

from infra.local.moto_server import FIXTURE_VPC_ID_TAG

pytestmark = pytest.mark.integration
REGION = "us-east-1"


def _endpoint_request(ec2, vpc_id: str, subnet_id: str, token: str, service: str = "kms") -> dict:
    return dict(VpcId=vpc_id, ServiceName=f"com.amazonaws.{REGION}.{service}", VpcEndpointType="Interface",
                SubnetIds=[subnet_id], ClientToken=token,
                TagSpecifications=[{"ResourceType": "vpc-endpoint", "Tags": [{"Key": "tenant", "Value": "retried"}]}])


def _network(ec2) -> tuple[str, str]:
    vpc = ec2.create_vpc(CidrBlock="10.99.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.99.1.0/24", AvailabilityZone=f"{REGION}a")["Subnet"]["SubnetId"]
    return vpc, subnet


def test_a_retried_create_vpc_endpoint_returns_the_endpoint_it_created(boto_session):
    """What the AWS provider's SDK does after a 5xx or a dropped connection: the same request, same ClientToken."""
    ec2 = boto_session("ec2", REGION)
    vpc, subnet = _network(ec2)
    token = uuid.uuid4().hex
    first = ec2.create_vpc_endpoint(**_endpoint_request(ec2, vpc, subnet, token))["VpcEndpoint"]["VpcEndpointId"]
    retried = ec2.create_vpc_endpoint(**_endpoint_request(ec2, vpc, subnet, token))["VpcEndpoint"]["VpcEndpointId"]
    assert retried == first
    live = [e["VpcEndpointId"] for e in ec2.describe_vpc_endpoints(
        Filters=[{"Name": "vpc-id", "Values": [vpc]}])["VpcEndpoints"] if e["State"] != "deleted"]
    assert live == [first]
    # A new token is a new endpoint; a token reused for another service is refused, as on AWS.
    other = ec2.create_vpc_endpoint(**_endpoint_request(ec2, vpc, subnet, uuid.uuid4().hex, "sts"))
    assert other["VpcEndpoint"]["VpcEndpointId"] != first
    with pytest.raises(ClientError, match="IdempotentParameterMismatch"):
        ec2.create_vpc_endpoint(**_endpoint_request(ec2, vpc, subnet, token, "logs"))


def test_stock_moto_creates_a_second_endpoint_on_a_retry():
    """Why the correction exists (moto 5.2.5 stores the token and ignores it).  If this fails, moto honours
    ClientToken itself and the correction in infra/local/moto_server.py can go."""
    from moto import mock_aws

    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        vpc, subnet = _network(ec2)
        for _ in range(2):
            ec2.create_vpc_endpoint(**_endpoint_request(ec2, vpc, subnet, "same-token"))
        assert len(ec2.describe_vpc_endpoints()["VpcEndpoints"]) == 2


def test_create_vpc_takes_the_fixture_id_from_its_tag(boto_session):
    ec2 = boto_session("ec2", REGION)
    wanted = "vpc-0" + uuid.uuid4().hex[:16]
    tags = [{"ResourceType": "vpc", "Tags": [{"Key": FIXTURE_VPC_ID_TAG, "Value": wanted}]}]
    vpc = ec2.create_vpc(CidrBlock="10.98.0.0/16", TagSpecifications=tags)["Vpc"]
    assert vpc["VpcId"] == wanted
    assert ec2.describe_vpcs(VpcIds=[wanted])["Vpcs"][0]["CidrBlock"] == "10.98.0.0/16"
    with pytest.raises(ClientError, match="already exists"):
        ec2.create_vpc(CidrBlock="10.97.0.0/16", TagSpecifications=tags)
    assert ec2.create_vpc(CidrBlock="10.96.0.0/16")["Vpc"]["VpcId"] != wanted  # untagged: moto's own ids
    bad = [{"ResourceType": "vpc", "Tags": [{"Key": FIXTURE_VPC_ID_TAG, "Value": "subnet-0123"}]}]
    with pytest.raises(ClientError, match="is not a VPC id"):
        ec2.create_vpc(CidrBlock="10.95.0.0/16", TagSpecifications=bad)
