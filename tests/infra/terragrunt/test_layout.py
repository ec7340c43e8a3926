"""infra/terragrunt/layout.py: the layout checks that run before anything is applied.

* statically, over the units' inputs: a shared network serves exactly the tenants that use it (in its
  region and account), and no two units create an S3 gateway endpoint in the same VPC;
* live, against the session's emulator: a VPC whose route table already carries an S3 gateway endpoint the
  unit does not own is refused (AWS allows one per route table; moto would accept a second).
"""
from __future__ import annotations

import json

import pytest

from infra import terragrunt as tg
from infra.terragrunt import cli, layout
from infra.terragrunt.environment import ensure_state_bucket
from tests import shell
from tests.infra.terragrunt.conftest import tenant_file, write_tenant


def _edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


def test_the_sample_layout_passes(scratch_layout):
    assert [r.name for r in cli.load_layout(scratch_layout)] == [
        "_platform/lake-formation-eu-central-1", "_platform/lake-formation-eu-west-1", "_platform/network", "acme",
        "globex", "initech"]


@pytest.mark.parametrize("unit, old, new, error", [
    ("_platform/network", '    globex = "123456789012"\n', "",
     "tenant 'globex': it uses the shared network _platform/network (dependency \"network\"), which does not serve "
     "it: add globex = \"123456789012\" to tenants in "),
    ("_platform/network", 'globex = "123456789012"', 'globex = "210987654321"',
     "lists account 210987654321 for it, its file says 123456789012; the endpoint policies name the account of its key"),
    ("globex", 'region              = "eu-west-1"', 'region              = "eu-central-1"',
     "tenant 'globex': region eu-central-1 differs from the region of the shared network _platform/network "
     "(eu-west-1); VPC endpoints are regional"),
    ("_platform/network", 'globex = "123456789012"', 'globex = "123456789012"\n    hooli = "123456789012"',
     "unit '_platform/network': tenants lists 'hooli', which has no tenants/hooli/; the endpoint policies would "
     "allow a bucket name nobody here owns"),
    ("_platform/network", 'globex = "123456789012"', 'globex = "123456789012"\n    initech = "123456789012"',
     "unit '_platform/network': tenants lists 'initech', which does not use it (no dependency block on it)"),
])
def test_a_shared_network_serves_exactly_its_tenants(scratch_layout, unit, old, new, error):
    _edit(scratch_layout / unit / "terragrunt.hcl", old, new)
    with pytest.raises(tg.TerragruntError) as err:
        cli.load_layout(scratch_layout)
    assert error in str(err.value) and "\n" not in str(err.value)


def test_two_tenants_with_their_own_endpoints_in_one_vpc_are_refused_before_anything_runs(scratch_layout, tmp_path):
    """Two tenants that bring the same VPC would each put an S3 gateway endpoint on all its route tables."""
    initech_vpc = tg.config.load_unit("initech", scratch_layout).config.vpc_ids[0]
    write_tenant(scratch_layout, "hooli", tenant_file("hooli", "eu-central-1", '"internal"').replace(
        tenant_file("hooli", "eu-central-1", '"internal"').split('vpc_ids             = ')[1].split("\n")[0],
        f'["{initech_vpc}"]'))
    result = shell.make("apply-all", f"TENANTS_DIR={scratch_layout}", timeout=120,
                        env={"TENANTLAKE_STATE_DIR": str(tmp_path)})
    ours = [line for line in result.stderr.splitlines() if not line.startswith("make:")]
    assert result.returncode != 0 and result.stdout == ""
    assert ours == [f"error: {initech_vpc} would get two S3 gateway endpoints, from hooli and initech (AWS allows one "
                    "per route table): let the tenant use the shared network's endpoints (a dependency block and "
                    "shared_gateway_endpoint_ids) instead of listing the VPC in vpc_ids"]
    assert list(tmp_path.iterdir()) == []  # no emulator, no state bucket, nothing applied


# ---- live: what is already on the route tables ----------------------------------------------------
REGION = "eu-west-1"


@pytest.fixture
def vpc_with_a_gateway_endpoint(boto_session):
    """A VPC whose main route table carries an S3 gateway endpoint made by someone else."""
    ec2 = boto_session("ec2", REGION)
    vpc = ec2.create_vpc(CidrBlock="10.77.0.0/16")["Vpc"]["VpcId"]
    tables = [t["RouteTableId"] for t in ec2.describe_route_tables(
        Filters=[{"Name": "vpc-id", "Values": [vpc]}])["RouteTables"]]
    endpoint = ec2.create_vpc_endpoint(VpcId=vpc, ServiceName=f"com.amazonaws.{REGION}.s3", VpcEndpointType="Gateway",
                                       RouteTableIds=tables)["VpcEndpoint"]["VpcEndpointId"]
    yield vpc, endpoint, tables
    ec2.delete_vpc_endpoints(VpcEndpointIds=[endpoint])


@pytest.mark.integration
def test_a_route_table_that_already_has_an_s3_gateway_endpoint_is_refused(
        vpc_with_a_gateway_endpoint, scratch_tenants, emulator, aws_env, boto_session):
    vpc, endpoint, tables = vpc_with_a_gateway_endpoint
    write_tenant(scratch_tenants, "gwco", tenant_file("gwco", REGION, '"internal"').replace(
        tenant_file("gwco", REGION, '"internal"').split('vpc_ids             = ')[1].split("\n")[0], f'["{vpc}"]'))
    run = tg.load_tenant("gwco", scratch_tenants)
    env = {**aws_env, "TENANTLAKE_AWS_ENDPOINT": emulator.endpoint}
    with pytest.raises(tg.TerragruntError) as err:
        layout.check_gateway_routes(run, env)
    assert str(err.value) == (
        f"unit 'gwco': route table {sorted(tables)[0]} of {vpc} already has an S3 gateway endpoint ({endpoint}) that "
        "this unit does not own, and AWS allows one per route table: use that VPC's shared network endpoints (a "
        "dependency block and shared_gateway_endpoint_ids) instead of listing it in vpc_ids, or remove the other endpoint")
    # The unit's own endpoint (its state holds it) is no conflict: a re-plan of an applied unit passes.
    ensure_state_bucket(run.backend_config, env)
    s3 = boto_session("s3", REGION)
    state = {"version": 4, "resources": [{"mode": "managed", "type": "aws_vpc_endpoint", "name": "endpoints_gateway",
                                          "instances": [{"attributes": {"id": endpoint}}]}]}
    s3.put_object(Bucket=run.backend_config["bucket"], Key=run.state_key, Body=json.dumps(state).encode())
    try:
        layout.check_gateway_routes(run, env)
    finally:
        s3.delete_object(Bucket=run.backend_config["bucket"], Key=run.state_key)


@pytest.mark.integration
def test_endpoints_tagged_as_the_units_but_not_in_its_state_are_named(
        scratch_tenants, emulator, aws_env, boto_session):
    """What the runner prints after an apply when a create was carried out twice."""
    ec2 = boto_session("ec2", REGION)
    vpc = ec2.create_vpc(CidrBlock="10.78.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.78.1.0/24", AvailabilityZone=f"{REGION}a")["Subnet"]["SubnetId"]
    tags = [{"ResourceType": "vpc-endpoint", "Tags": [{"Key": "tenant", "Value": "dupco"}]}]
    made = [ec2.create_vpc_endpoint(VpcId=vpc, ServiceName=f"com.amazonaws.{REGION}.kms", VpcEndpointType="Interface",
                                    SubnetIds=[subnet], TagSpecifications=tags)["VpcEndpoint"]["VpcEndpointId"]
            for _ in range(2)]
    write_tenant(scratch_tenants, "dupco", tenant_file("dupco", REGION, '"internal"').replace(
        tenant_file("dupco", REGION, '"internal"').split('vpc_ids             = ')[1].split("\n")[0], f'["{vpc}"]'))
    run = tg.load_tenant("dupco", scratch_tenants)
    env = {**aws_env, "TENANTLAKE_AWS_ENDPOINT": emulator.endpoint}
    ensure_state_bucket(run.backend_config, env)
    s3 = boto_session("s3", REGION)
    state = {"version": 4, "resources": [{"mode": "managed", "type": "aws_vpc_endpoint", "name": "endpoints_interface",
                                          "instances": [{"attributes": {"id": made[0]}}]}]}
    s3.put_object(Bucket=run.backend_config["bucket"], Key=run.state_key, Body=json.dumps(state).encode())
    try:
        assert layout.untracked_endpoints(run, env) == [made[1]]
    finally:
        s3.delete_object(Bucket=run.backend_config["bucket"], Key=run.state_key)
        ec2.delete_vpc_endpoints(VpcEndpointIds=made)
