"""The platform network model: inputs, validation rules and naming of a shared cluster's network, in plain Python.

A *platform network* owns the VPC endpoints of one EKS cluster's VPC(s) (one region): an S3 gateway
endpoint per VPC (AWS allows one S3 gateway-endpoint route per route table, so tenants whose jobs run on
that cluster share it) and interface endpoints for STS, KMS and CloudWatch Logs.  Its endpoint policies
are scoped to the tenants it serves, listed in its own inputs (``tenants``: tenant id -> account id), so
it never needs a tenant's outputs: the tenants depend on it (Terragrunt ``dependency``), not the reverse.

Like ``tenant_model``, this module imports no cdktf and no boto3; the platform module's variable
validations (``infra/platform_app.py``), the runner's checks and the tests use these rules.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Mapping

import tenant_model

INTERFACE_SERVICES: tuple[str, ...] = ("sts", "kms", "logs")
# What the cluster itself reads through the S3 gateway endpoint, besides the tenants' lakes (bucket names;
# ``{region}`` is the cluster's).  ECR keeps image layers in this AWS-owned bucket: pulling any image,
# EMR on EKS's release images included, reads it (Amazon ECR User Guide, "Minimum Amazon S3 bucket
# permissions for Amazon ECR").  EKS-optimized AL2023 nodes read their package repository from the second
# (Amazon EMR Management Guide, "Sample policies for private subnets that access Amazon S3").
CLUSTER_READ_BUCKETS: tuple[str, ...] = ("prod-{region}-starport-layer-bucket", "al2023-repos-{region}-de612dc2")
NETWORK_NAME_RE = r"^[a-z][a-z0-9-]{2,30}$"
BUCKET_NAME_RE = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"
COMPONENT_TAG = "platform-network"

RULE_TEXTS: dict[str, str] = {
    "name": "'{name}' must be 3-31 characters, lowercase, matching [a-z][a-z0-9-]*",
    "vpcs": "list the cluster's VPC ids in vpc_ids, or set create_fixture_vpc (local emulator only), not both",
    "fixture": "create_fixture_vpc is for the local emulator only (environment local), not {environment}",
    "tenants": "must map at least one tenant id (3-24 characters, [a-z][a-z0-9-]*) to its 12-digit account id",
    "buckets": "every entry must be an S3 bucket name",
}


class PlatformConfigError(ValueError):
    """A platform-network input breaks a rule. ``str(err)`` is one line naming the unit, field and rule."""

    def __init__(self, unit: str, field: str, rule: str):
        self.unit, self.field, self.rule = unit, field, rule
        super().__init__(f"unit '{unit}': {field}: {rule}")


@dataclasses.dataclass(frozen=True)
class PlatformNetworkConfig:
    """Inputs of the platform network module (``infra/build/platform_network``).

    Attributes:
        region: region of the cluster VPCs; every tenant it serves keeps its lake there.
        tenants: tenant id -> account id of each tenant whose jobs run on the cluster; the endpoint
            policies allow exactly their lake buckets and KMS keys.
        vpc_ids: the cluster's existing VPCs. @default - () (then create_fixture_vpc must be true)
        create_fixture_vpc: create a stand-in VPC (two private subnets, each with its route table) and use
            it instead of vpc_ids; only with environment local. @default - False
        name: prefix of names and the ``Name`` tag. @default - "tenantlake"
        cluster_read_buckets: more buckets the cluster may read (GetObject) through the S3 endpoint,
            besides ``CLUSTER_READ_BUCKETS``. @default - ()
        environment: local targets the embedded emulator. @default - "local"
        cost_center: cost-allocation tag. @default - "data-platform"
        tags: extra tags on every taggable resource. @default - {}
    """

    region: str
    tenants: Mapping[str, str]
    vpc_ids: tuple[str, ...] = ()
    create_fixture_vpc: bool = False
    name: str = "tenantlake"
    cluster_read_buckets: tuple[str, ...] = ()
    environment: str = "local"
    cost_center: str = "data-platform"
    tags: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def lake_bucket_names(self) -> list[str]:
        return [tenant_model.lake_bucket_name(t, self.region) for t in sorted(self.tenants)]

    def kms_aliases(self) -> list[str]:
        return [tenant_model.render_name("kms_alias", tenant_id=t) for t in sorted(self.tenants)]

    def read_buckets(self) -> list[str]:
        return [b.format(region=self.region) for b in CLUSTER_READ_BUCKETS] + list(self.cluster_read_buckets)


def validate(cfg: PlatformNetworkConfig, unit: str) -> PlatformNetworkConfig:
    if not re.match(tenant_model.REGION_RE, cfg.region or ""):
        raise PlatformConfigError(unit, "region", tenant_model.RULE_TEXTS["region"].format(region=cfg.region))
    if not re.match(NETWORK_NAME_RE, cfg.name):
        raise PlatformConfigError(unit, "name", RULE_TEXTS["name"].format(name=cfg.name))
    if cfg.environment not in tenant_model.ENVIRONMENTS:
        raise PlatformConfigError(unit, "environment", tenant_model.RULE_TEXTS["environment"].format(
            environment=cfg.environment, environments=", ".join(tenant_model.ENVIRONMENTS)))
    if bool(cfg.vpc_ids) == bool(cfg.create_fixture_vpc):
        raise PlatformConfigError(unit, "vpc_ids", RULE_TEXTS["vpcs"])
    if cfg.create_fixture_vpc and cfg.environment != "local":
        raise PlatformConfigError(unit, "create_fixture_vpc", RULE_TEXTS["fixture"].format(environment=cfg.environment))
    for vpc in cfg.vpc_ids:
        if not re.match(tenant_model.VPC_ID_RE, vpc):
            raise PlatformConfigError(unit, "vpc_ids", f"'{vpc}' is not a VPC id like vpc-0123456789abcdef0")
    if len(set(cfg.vpc_ids)) != len(cfg.vpc_ids):
        raise PlatformConfigError(unit, "vpc_ids", "lists a VPC more than once")
    if not cfg.tenants or not all(re.match(tenant_model.TENANT_ID_RE, t) and re.match(tenant_model.ACCOUNT_ID_RE, str(a))
                                  for t, a in cfg.tenants.items()):
        raise PlatformConfigError(unit, "tenants", RULE_TEXTS["tenants"])
    for bucket in cfg.cluster_read_buckets:
        if not re.match(BUCKET_NAME_RE, bucket):
            raise PlatformConfigError(unit, "cluster_read_buckets", f"'{bucket}': " + RULE_TEXTS["buckets"])
    return cfg


FIELDS = {f.name for f in dataclasses.fields(PlatformNetworkConfig)}
REQUIRED = {"region", "tenants"}


def refuse_unknown_and_missing(inputs: Mapping[str, Any], unit: str, fields: set[str], required: set[str]) -> None:
    """A platform unit's ``inputs``: its first unknown input, or its first missing required one, in one line."""
    unknown = sorted(set(inputs) - fields)
    if unknown:
        raise PlatformConfigError(unit, unknown[0], f"unknown input (known: {', '.join(sorted(fields))})")
    missing = sorted(required - set(inputs))
    if missing:
        raise PlatformConfigError(unit, missing[0], "is required")


def from_inputs(inputs: Mapping[str, Any], unit: str) -> PlatformNetworkConfig:
    """Build and validate a ``PlatformNetworkConfig`` from a Terragrunt ``inputs`` map."""
    refuse_unknown_and_missing(inputs, unit, FIELDS, REQUIRED)
    values = dict(inputs)
    for field in ("vpc_ids", "cluster_read_buckets"):
        if field in values:
            if not isinstance(values[field], (list, tuple)) or not all(isinstance(v, str) for v in values[field]):
                raise PlatformConfigError(unit, field, "must be a list of strings")
            values[field] = tuple(values[field])
    for field in ("tenants", "tags"):
        if field in values and not isinstance(values[field], Mapping):
            raise PlatformConfigError(unit, field, "must be a map")
    if "create_fixture_vpc" in values and not isinstance(values["create_fixture_vpc"], bool):
        raise PlatformConfigError(unit, "create_fixture_vpc", "must be true or false")
    return validate(PlatformNetworkConfig(**values), unit)
