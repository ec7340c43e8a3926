"""Checks of the whole layout before anything is applied: AWS limits the emulator does not enforce, and the
contract between a platform network unit and the tenants that use it.

* **One S3 gateway endpoint per route table.**  AWS allows one gateway-endpoint route per service in a
  route table, so a VPC gets its S3 gateway endpoint from exactly one unit (our modules attach it to every
  route table of the VPC).  ``check_layout`` refuses two units that would each create one in the same VPC
  (a tenant's own ``vpc_ids``, a platform network's ``vpc_ids``); ``check_gateway_routes`` then looks at the
  VPCs themselves before a plan or apply and refuses one whose route tables already carry an S3 gateway
  endpoint the unit does not own (its state does not hold it), whoever made it.  Moto accepts a second
  one; AWS fails the apply halfway.
* **A shared network serves exactly the tenants that use it.**  Each tenant with a ``dependency`` on a
  platform network unit must be listed in that unit's ``tenants`` (with its account) and keep its lake in
  the network's region (endpoints are regional); each tenant the network lists must exist and use it (the
  policies would otherwise allow a bucket name anyone could create).
"""
from __future__ import annotations

import json
from typing import Any, Mapping

from infra.terragrunt.config import UnitRun
from infra.terragrunt.environment import DEFAULT_STATE_REGION, boto_client
from infra.terragrunt.environment import rel
from infra.terragrunt.errors import TerragruntError

INACTIVE_ENDPOINT_STATES = ("deleted", "deleting", "rejected", "failed", "expired")


def gateway_vpcs(run: UnitRun) -> tuple[str, ...]:
    """The VPCs (known before apply) in which the unit creates an S3 gateway endpoint (a Lake Formation unit: none)."""
    return tuple(getattr(run.config, "vpc_ids", ()))


def check_layout(runs: list[UnitRun]) -> None:
    """Static checks over every unit's inputs (no cloud calls); the first broken rule is a one-line error."""
    platforms = {r.name: r for r in runs if r.kind == "network"}
    tenants = {r.name: r for r in runs if r.is_tenant}
    users: dict[str, set[str]] = {name: set() for name in platforms}
    for tenant in tenants.values():
        for dep in tenant.dependencies:
            network = platforms.get(dep.unit)
            if network is None:
                continue
            users[network.name].add(tenant.name)
            served = dict(network.config.tenants)
            where = rel(network.config_path)
            if tenant.name not in served:
                raise TerragruntError(
                    f"tenant '{tenant.name}': it uses the shared network {network.name} (dependency \"{dep.name}\"), "
                    f"which does not serve it: add {tenant.name} = \"{tenant.config.account_id}\" to tenants in {where}")
            if served[tenant.name] != tenant.config.account_id:
                raise TerragruntError(
                    f"tenant '{tenant.name}': {where} lists account {served[tenant.name]} for it, its file says "
                    f"{tenant.config.account_id}; the endpoint policies name the account of its key")
            if tenant.config.region != network.config.region:
                raise TerragruntError(
                    f"tenant '{tenant.name}': region {tenant.config.region} differs from the region of the shared "
                    f"network {network.name} ({network.config.region}); VPC endpoints are regional: keep the lake in "
                    f"{network.config.region} or use a network of its region")
    for name, network in platforms.items():
        for listed in sorted(network.config.tenants):
            if listed not in users[name]:
                why = "has no tenants/" + listed + "/" if listed not in tenants else "does not use it (no dependency block on it)"
                raise TerragruntError(
                    f"unit '{name}': tenants lists '{listed}', which {why}; the endpoint policies would allow a bucket "
                    f"name nobody here owns: remove it from {rel(network.config_path)}")
    owners: dict[str, str] = {}
    for run in runs:
        for vpc in gateway_vpcs(run):
            if vpc in owners:
                raise TerragruntError(
                    f"{vpc} would get two S3 gateway endpoints, from {owners[vpc]} and {run.name} (AWS allows one per "
                    f"route table): let the tenant use the shared network's endpoints (a dependency block and "
                    f"shared_gateway_endpoint_ids) instead of listing the VPC in vpc_ids")
            owners[vpc] = run.name


def state_resource_ids(run: UnitRun, env: Mapping[str, str], resource_type: str) -> list[str] | None:
    """Ids of the unit's resources of one type, read from its state object (None: no state yet)."""
    state = read_state(run, env)
    if state is None:
        return None
    return [instance["attributes"]["id"] for resource in state.get("resources", [])
            if resource.get("mode") == "managed" and resource.get("type") == resource_type
            for instance in resource.get("instances", [])]


def read_state(run: UnitRun, env: Mapping[str, str]) -> dict[str, Any] | None:
    """The unit's Terraform state (JSON) from the state bucket, or None when it has none."""
    config = run.backend_config
    s3 = boto_client("s3", config.get("region", DEFAULT_STATE_REGION), env)
    try:
        return json.loads(s3.get_object(Bucket=config["bucket"], Key=config["key"])["Body"].read())
    except s3.exceptions.ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NoSuchBucket"):
            return None
        raise TerragruntError(f"unit '{run.name}': cannot read its state: {exc}") from None


def is_applied(run: UnitRun, env: Mapping[str, str]) -> bool:
    """The unit's state holds managed resources."""
    state = read_state(run, env)
    return bool(state and any(r.get("mode") == "managed" and r.get("instances") for r in state.get("resources", [])))


def own_vpcs(run: UnitRun, state: Mapping[str, Any] | None) -> list[str]:
    """The VPCs whose endpoints the unit creates: a tenant's ``vpc_ids``; a network's ``vpc_ids``, or the VPC
    its state says it created (the local fixture VPC)."""
    if run.kind != "network":
        return list(gateway_vpcs(run))
    created = list(((state or {}).get("outputs", {}).get("vpc_ids") or {}).get("value") or [])
    return list(dict.fromkeys([*run.config.vpc_ids, *created]))


def own_tag(run: UnitRun) -> tuple[str, str]:
    """The tag that marks a unit's endpoints: ``tenant=<id>``, or ``component=platform-network``."""
    if run.is_tenant:
        return "tenant", run.config.tenant_id
    from infra import platform as platform_model

    return "component", platform_model.COMPONENT_TAG


def _tracked(state: Mapping[str, Any] | None) -> tuple[set[str], set[str]]:
    """Endpoint ids in the state, and their addresses (``aws_vpc_endpoint.<name>["<key>"]``)."""
    ids, addresses = set(), set()
    for resource in (state or {}).get("resources", []):
        if resource.get("mode") == "managed" and resource.get("type") == "aws_vpc_endpoint":
            for instance in resource.get("instances", []):
                ids.add(instance["attributes"]["id"])
                addresses.add(f'aws_vpc_endpoint.{resource["name"]}["{instance.get("index_key")}"]')
    return ids, addresses


def endpoint_orphans(run: UnitRun, env: Mapping[str, str]) -> list[dict[str, str]]:
    """Endpoints a killed apply of this unit created but never recorded: in its own VPCs, tagged as its own,
    not in its state, and with a unique place in its module (one S3 gateway per VPC, one private-DNS interface
    endpoint per VPC and service), which its state does not fill.  As Terraform import blocks (``to``, ``id``)."""
    state = read_state(run, env)
    vpcs = own_vpcs(run, state)
    if not vpcs:
        return []
    tracked_ids, tracked_addresses = _tracked(state)
    key, value = own_tag(run)
    region = run.config.region
    found = boto_client("ec2", region, env).describe_vpc_endpoints(Filters=[
        {"Name": "vpc-id", "Values": vpcs}, {"Name": f"tag:{key}", "Values": [value]}])["VpcEndpoints"]
    candidates: dict[str, list[str]] = {}
    for endpoint in found:
        if endpoint["VpcEndpointId"] in tracked_ids or endpoint["State"].lower() in INACTIVE_ENDPOINT_STATES:
            continue
        service = endpoint["ServiceName"].removeprefix(f"com.amazonaws.{region}.")
        if endpoint["VpcEndpointType"].lower() == "gateway" and service == "s3":
            address = f'aws_vpc_endpoint.endpoints_gateway["{endpoint["VpcId"]}"]'
        elif endpoint["VpcEndpointType"].lower() == "interface" and endpoint.get("PrivateDnsEnabled"):
            address = f'aws_vpc_endpoint.endpoints_interface["{endpoint["VpcId"]}.{service}"]'
        else:
            continue
        if address not in tracked_addresses:
            candidates.setdefault(address, []).append(endpoint["VpcEndpointId"])
    return [{"to": address, "id": ids[0]} for address, ids in sorted(candidates.items()) if len(ids) == 1]


def check_gateway_routes(run: UnitRun, env: Mapping[str, str], adopting: set[str] = frozenset()) -> None:
    """Before a plan or apply: no route table of a VPC the unit puts its S3 gateway endpoint in already
    carries an S3 gateway endpoint that the unit's state does not hold (``adopting``: ids about to be
    imported into its state, i.e. its own, left by a killed apply)."""
    vpcs = gateway_vpcs(run)
    if not vpcs:
        return
    owned = set(state_resource_ids(run, env, "aws_vpc_endpoint") or []) | set(adopting)
    region = run.config.region
    ec2 = boto_client("ec2", region, env)
    service = f"com.amazonaws.{region}.s3"
    for vpc in vpcs:
        tables = {t["RouteTableId"] for t in ec2.describe_route_tables(
            Filters=[{"Name": "vpc-id", "Values": [vpc]}])["RouteTables"]}
        for endpoint in ec2.describe_vpc_endpoints(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["VpcEndpoints"]:
            if (endpoint.get("VpcEndpointType", "").lower() != "gateway" or endpoint.get("ServiceName") != service
                    or endpoint.get("State", "").lower() in INACTIVE_ENDPOINT_STATES
                    or endpoint["VpcEndpointId"] in owned):
                continue
            shared = sorted(tables & set(endpoint.get("RouteTableIds") or []))
            if shared:
                tags = {t["Key"]: t["Value"] for t in endpoint.get("Tags", [])}
                own = tags.get(own_tag(run)[0]) == own_tag(run)[1]
                hint = (f"it carries this unit's tag, so a killed apply may have made it: check, then adopt it "
                        f"(python -m infra.terragrunt apply --unit {run.name} --adopt-orphans) or delete it" if own else
                        "use that VPC's shared network endpoints (a dependency block and shared_gateway_endpoint_ids) "
                        "instead of listing it in vpc_ids, or remove the other endpoint")
                raise TerragruntError(
                    f"unit '{run.name}': route table {shared[0]} of {vpc} already has an S3 gateway endpoint "
                    f"({endpoint['VpcEndpointId']}) that this unit does not own, and AWS allows one per route table: "
                    + hint)


def state_outputs(run: UnitRun, env: Mapping[str, str]) -> dict[str, Any] | None:
    """The unit's outputs as its state records them (what ``terraform output`` reads), or None when it has no
    state or no outputs (not applied, or destroyed).  How the fallback reads a dependency's outputs, as
    Terragrunt does when the dependency's state is in a ``remote_state`` backend."""
    state = read_state(run, env)
    values = {name: item["value"] for name, item in (state or {}).get("outputs", {}).items()}
    return values or None


def untracked_endpoints(run: UnitRun, env: Mapping[str, str]) -> list[str]:
    """VPC endpoints in the unit's own VPCs, tagged as the unit's, that its state does not hold.

    After an apply there should be none: one means a create that was carried out twice (a retried request
    the emulator did not recognise, or an apply killed after the create) or someone else's endpoint with
    our tags.  A tenant's are tagged ``tenant=<id>``; a platform network's ``component=platform-network``."""
    state = read_state(run, env)
    vpcs = own_vpcs(run, state)
    if not vpcs:
        return []
    tracked, _ = _tracked(state)
    key, value = own_tag(run)
    found = boto_client("ec2", run.config.region, env).describe_vpc_endpoints(Filters=[
        {"Name": "vpc-id", "Values": vpcs}, {"Name": f"tag:{key}", "Values": [value]}])["VpcEndpoints"]
    return sorted(e["VpcEndpointId"] for e in found
                  if e["VpcEndpointId"] not in tracked and e["State"].lower() not in INACTIVE_ENDPOINT_STATES)
