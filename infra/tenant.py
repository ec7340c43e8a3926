"""The tenant model: inputs, validation rules and resource naming, in plain Python.

One place for every rule. The CDKTF constructs (``modules/``), the synthesized module's variable
validations (``infra/``), the Terragrunt fallback and the tenant-file checks all import this module,
so a rule is written once. It imports no cdktf and no boto3.

Errors are one line and name the tenant, the field and the rule, e.g.
``tenant 'acme': region us-east-1 is outside the EU but data_classification includes gdpr``.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Mapping

TENANT_ID_RE = r"^[a-z][a-z0-9-]{2,23}$"
TENANT_ID_RULE = "3-24 characters, lowercase, matching [a-z][a-z0-9-]*"
ACCOUNT_ID_RE = r"^[0-9]{12}$"
VPC_ID_RE = r"^vpc-[0-9a-f]{8,17}$"
REGION_RE = r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]$"
EKS_CLUSTER_NAME_RE = r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$"
K8S_NAMESPACE_RE = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
OIDC_PROVIDER_ARN_RE = r"^arn:aws[a-z-]*:iam::[0-9]{12}:oidc-provider/.+$"

CLASSIFICATIONS: tuple[str, ...] = ("public", "internal", "confidential", "pii", "gdpr")
# Regions where GDPR data may live: the EU (eu-*) only.  eu-central-2 (Zurich) and eu-south-* are EU
# regions by AWS naming; a stricter org can narrow this list.
EU_REGION_PREFIX = "eu-"
ENVIRONMENTS: tuple[str, ...] = ("local", "dev", "staging", "prod")

# The lake bucket's prefixes (the seed design: one bucket per tenant, layered by prefix).
LAKE_PREFIXES: tuple[str, ...] = (
    "landing", "bronze", "silver", "gold", "quarantine", "reports", "checkpoints", "artifacts", "logs",
)

# Documented defaults (README "Tenant inputs" table; asserted in tests).
DEFAULT_RETENTION_DAYS: dict[str, int] = {
    "landing": 30,     # raw drops are re-readable from bronze after ingest
    "bronze": 365,     # raw history, for replays
    "quarantine": 30,  # bad rows, long enough to investigate
    "logs": 90,        # job logs in S3 and the CloudWatch log group
}
MAX_BUCKET_NAME = 63


class TenantConfigError(ValueError):
    """A tenant input breaks a rule. ``str(err)`` is one line naming the tenant, field and rule."""

    def __init__(self, tenant: str, field: str, rule: str):
        self.tenant, self.field, self.rule = tenant, field, rule
        super().__init__(f"tenant '{tenant}': {field}: {rule}")


@dataclasses.dataclass(frozen=True)
class TenantConfig:
    """Inputs of one tenant's lake. Mirrors the synthesized module's Terraform variables.

    Attributes:
        tenant_id: lowercase id, 3-24 characters, ``[a-z][a-z0-9-]*``; part of every resource name.
        region: AWS region of the lake, e.g. ``eu-west-1``.
        account_id: the 12-digit AWS account that owns the lake.
        data_classification: non-empty subset of ``CLASSIFICATIONS``; ``gdpr`` requires an EU region.
        vpc_ids: the tenant's existing VPCs (``vpc-...``); the lake is reachable only through their endpoints.
        tags: extra tags on every taggable resource. @default - {}
        environment: ``local`` targets the embedded emulator. @default - "local"
        cost_center: cost-allocation tag. @default - "data-platform"
        eks_cluster_name: EKS cluster of the EMR virtual cluster. @default - "tenantlake"
        eks_oidc_provider_arn: the cluster's IAM OIDC provider; "" derives a placeholder in ``account_id``.
            @default - ""
        emr_namespace: Kubernetes namespace of the tenant's EMR jobs. @default - "emr-<tenant_id>"
        retention_days: expiry per prefix, overriding ``DEFAULT_RETENTION_DAYS``. @default - {}
        admin_principal_arns: principals exempt from the VPC-endpoint rule of the bucket policy (the
            deployer role that runs terraform must be one, so an apply never locks itself out). @default - []
    """

    tenant_id: str
    region: str
    account_id: str
    data_classification: tuple[str, ...]
    vpc_ids: tuple[str, ...]
    tags: Mapping[str, str] = dataclasses.field(default_factory=dict)
    environment: str = "local"
    cost_center: str = "data-platform"
    eks_cluster_name: str = "tenantlake"
    eks_oidc_provider_arn: str = ""
    emr_namespace: str = ""
    retention_days: Mapping[str, int] = dataclasses.field(default_factory=dict)
    admin_principal_arns: tuple[str, ...] = ()

    # ---- derived names (the only place resource names are built) -------------------------
    @property
    def namespace(self) -> str:
        return self.emr_namespace or f"emr-{self.tenant_id}"

    @property
    def lake_bucket_name(self) -> str:
        return lake_bucket_name(self.tenant_id, self.region)

    @property
    def log_bucket_name(self) -> str:
        return f"{self.tenant_id}-{self.region}-lake-logs"

    @property
    def kms_alias(self) -> str:
        return f"alias/{self.tenant_id}-lake"

    @property
    def effective_retention_days(self) -> dict[str, int]:
        return {**DEFAULT_RETENTION_DAYS, **dict(self.retention_days)}

    @property
    def oidc_provider_arn(self) -> str:
        return self.eks_oidc_provider_arn or (
            f"arn:aws:iam::{self.account_id}:oidc-provider/oidc.eks.{self.region}.amazonaws.com/id/"
            f"{self.eks_cluster_name.upper()}"
        )

    @property
    def gdpr(self) -> bool:
        return "gdpr" in self.data_classification

    def standard_tags(self) -> dict[str, str]:
        """The four tags every taggable resource carries, plus the user's ``tags`` (ours win)."""
        return {
            **dict(self.tags),
            "tenant": self.tenant_id,
            "data_classification": "-".join(sorted(self.data_classification)),
            "environment": self.environment,
            "cost_center": self.cost_center,
        }


def lake_bucket_name(tenant_id: str, region: str) -> str:
    return f"{tenant_id}-{region}-lake"


def is_eu_region(region: str) -> bool:
    return region.startswith(EU_REGION_PREFIX)


def _as_tuple(value: Any, tenant: str, field: str) -> tuple[str, ...]:
    if isinstance(value, str):
        # The seed's terragrunt passed a quoted, comma-separated string; accept that shape too.
        value = [v.strip().strip('"') for v in value.split(",") if v.strip()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise TenantConfigError(tenant, field, "must be a list of strings")
    return tuple(value)


def validate(cfg: TenantConfig) -> TenantConfig:
    """Check every rule; raise ``TenantConfigError`` on the first broken one, else return ``cfg``."""
    t = cfg.tenant_id if isinstance(cfg.tenant_id, str) else repr(cfg.tenant_id)
    if not isinstance(cfg.tenant_id, str) or not re.match(TENANT_ID_RE, cfg.tenant_id):
        raise TenantConfigError(t, "tenant_id", f"'{cfg.tenant_id}' must be {TENANT_ID_RULE}")
    if len(lake_bucket_name(cfg.tenant_id, cfg.region) + "-logs") > MAX_BUCKET_NAME:
        raise TenantConfigError(t, "tenant_id", f"too long for S3 bucket names in {cfg.region} (max {MAX_BUCKET_NAME} characters)")
    if not re.match(REGION_RE, cfg.region or ""):
        raise TenantConfigError(t, "region", f"'{cfg.region}' is not an AWS region name like eu-west-1")
    if not re.match(ACCOUNT_ID_RE, cfg.account_id or ""):
        raise TenantConfigError(t, "account_id", f"'{cfg.account_id}' must be exactly 12 digits")
    if not cfg.data_classification:
        raise TenantConfigError(t, "data_classification", f"must name at least one of {', '.join(CLASSIFICATIONS)}")
    for c in cfg.data_classification:
        if c not in CLASSIFICATIONS:
            raise TenantConfigError(t, "data_classification", f"'{c}' is not one of {', '.join(CLASSIFICATIONS)}")
    if cfg.gdpr and not is_eu_region(cfg.region):
        raise TenantConfigError(t, "region", f"{cfg.region} is outside the EU but data_classification includes gdpr")
    if not cfg.vpc_ids:
        raise TenantConfigError(t, "vpc_ids", "must list at least one VPC id")
    for v in cfg.vpc_ids:
        if not re.match(VPC_ID_RE, v):
            raise TenantConfigError(t, "vpc_ids", f"'{v}' is not a VPC id like vpc-0123456789abcdef0")
    if len(set(cfg.vpc_ids)) != len(cfg.vpc_ids):
        raise TenantConfigError(t, "vpc_ids", "lists a VPC more than once")
    if cfg.environment not in ENVIRONMENTS:
        raise TenantConfigError(t, "environment", f"'{cfg.environment}' is not one of {', '.join(ENVIRONMENTS)}")
    if not re.match(EKS_CLUSTER_NAME_RE, cfg.eks_cluster_name):
        raise TenantConfigError(t, "eks_cluster_name", f"'{cfg.eks_cluster_name}' is not a valid EKS cluster name")
    if cfg.eks_oidc_provider_arn and not re.match(OIDC_PROVIDER_ARN_RE, cfg.eks_oidc_provider_arn):
        raise TenantConfigError(t, "eks_oidc_provider_arn", f"'{cfg.eks_oidc_provider_arn}' is not an IAM OIDC provider ARN")
    if not re.match(K8S_NAMESPACE_RE, cfg.namespace):
        raise TenantConfigError(t, "emr_namespace", f"'{cfg.namespace}' is not a Kubernetes namespace name")
    for prefix, days in dict(cfg.retention_days).items():
        if prefix not in DEFAULT_RETENTION_DAYS:
            raise TenantConfigError(t, "retention_days", f"'{prefix}' is not one of {', '.join(DEFAULT_RETENTION_DAYS)}")
        if not isinstance(days, int) or isinstance(days, bool) or not 1 <= days <= 3650:
            raise TenantConfigError(t, "retention_days", f"{prefix}={days!r} must be a whole number of days from 1 to 3650")
    if cfg.effective_retention_days["bronze"] <= 90:
        # bronze moves to GLACIER_IR at 90 d; expiring before that would make the transition moot.
        raise TenantConfigError(t, "retention_days", "bronze must be more than 90 days (it transitions to GLACIER_IR at 90)")
    for key, value in dict(cfg.tags).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TenantConfigError(t, "tags", "must map strings to strings")
    return cfg


FIELDS = {f.name for f in dataclasses.fields(TenantConfig)}
REQUIRED = {"tenant_id", "region", "account_id", "data_classification", "vpc_ids"}


def from_inputs(inputs: Mapping[str, Any], source: str = "") -> TenantConfig:
    """Build and validate a ``TenantConfig`` from a Terragrunt ``inputs`` map (or any dict)."""
    tenant = str(inputs.get("tenant_id", source or "?"))
    unknown = sorted(set(inputs) - FIELDS)
    if unknown:
        raise TenantConfigError(tenant, unknown[0], f"unknown input (known: {', '.join(sorted(FIELDS))})")
    missing = sorted(REQUIRED - set(inputs))
    if missing:
        raise TenantConfigError(tenant, missing[0], "is required")
    values = dict(inputs)
    for field in ("data_classification", "vpc_ids", "admin_principal_arns"):
        if field in values:
            values[field] = _as_tuple(values[field], tenant, field)
    for field in ("tags", "retention_days"):
        if field in values and not isinstance(values[field], Mapping):
            raise TenantConfigError(tenant, field, "must be a map")
    for field in ("tenant_id", "region", "account_id", "environment", "cost_center", "eks_cluster_name",
                  "eks_oidc_provider_arn", "emr_namespace"):
        if field in values and not isinstance(values[field], str):
            raise TenantConfigError(tenant, field, f"must be a string, got {type(values[field]).__name__}")
    return validate(TenantConfig(**values))


def check_unique(configs: list[TenantConfig]) -> None:
    """Tenant ids and lake bucket names must not collide across tenants."""
    seen: dict[str, str] = {}
    for cfg in configs:
        if cfg.tenant_id in seen:
            raise TenantConfigError(cfg.tenant_id, "tenant_id", "is used by more than one tenant")
        seen[cfg.tenant_id] = cfg.region
