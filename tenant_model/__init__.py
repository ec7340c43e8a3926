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
TENANT_ID_RULE = "3-24 characters, lowercase, matching [a-z][a-z0-9-]*"  # also inside RULE_TEXTS
ACCOUNT_ID_RE = r"^[0-9]{12}$"
VPC_ID_RE = r"^vpc-[0-9a-f]{8,17}$"
VPC_ENDPOINT_ID_RE = r"^vpce-[0-9a-f]{8,17}$"
REGION_RE = r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]$"
# No backslashes in these patterns: each is also embedded in a Terraform regex() call in the module.
EKS_CLUSTER_NAME_RE = r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$"
K8S_NAMESPACE_RE = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
OIDC_PROVIDER_ARN_RE = r"^arn:aws[a-z-]*:iam::[0-9]{12}:oidc-provider/.+$"
ADMIN_PRINCIPAL_ARN_RE = r"^arn:aws[a-z-]*:(iam|sts)::[0-9]{12}:.+$"

CLASSIFICATIONS: tuple[str, ...] = ("public", "internal", "confidential", "pii", "gdpr")
# A tenant with one of these holds personal data: each dataset's contract must say which columns identify a
# data subject (``subject_keys``), so that erasure requests can be honoured (spark_jobs/README.md, "Erasure").
PERSONAL_DATA_CLASSIFICATIONS: tuple[str, ...] = ("pii", "gdpr")
# Regions where GDPR data may live: the EU (eu-*) only.  eu-central-2 (Zurich) and eu-south-* are EU
# regions by AWS naming; a stricter org can narrow this list.
EU_REGION_PREFIX = "eu-"
ENVIRONMENTS: tuple[str, ...] = ("local", "dev", "staging", "prod")

# The lake bucket's prefixes (the seed design: one bucket per tenant, layered by prefix).  ``logs`` holds
# the EMR job logs (the logUri of every job run; expires after retention_days["logs"]); ``athena`` the
# tenant's Athena query results (its workgroup's output location; expires like logs). S3 server access
# logs go to the separate per-tenant log bucket, not under a prefix of the lake.
LAKE_PREFIXES: tuple[str, ...] = (
    "landing", "bronze", "silver", "gold", "quarantine", "reports", "checkpoints", "artifacts", "logs", "athena",
)

# Resource names, as str.format templates over the tenant's inputs.  Python renders them with plain
# values; the CDKTF module renders the SAME templates with Terraform tokens (var.tenant_id, ...), so
# ``acme-eu-west-1-lake`` and ``${var.tenant_id}-${var.region}-lake`` come from one string.
NAME_TEMPLATES: dict[str, str] = {
    "lake_bucket": "{tenant_id}-{region}-lake",
    "log_bucket": "{tenant_id}-{region}-lake-logs",
    "kms_alias": "alias/{tenant_id}-lake",
    "emr_namespace": "emr-{tenant_id}",
    "job_execution_role": "{tenant_id}-emr-job-execution",
    "ingest_writer_role": "{tenant_id}-lake-ingest-writer",
    "consumer_role": "{tenant_id}-lake-consumer",
    # GDPR erase runs (python -m spark_jobs erase on EMR on EKS): the only role that may delete object versions.
    "erasure_role": "{tenant_id}-emr-erasure",
    "log_group": "/tenantlake/{tenant_id}/emr",
    "virtual_cluster": "{tenant_id}-lake",
    "athena_workgroup": "{tenant_id}-lake",
    # Query results per principal (modules/athena_workgroup.py): the readers of personal data query in a workgroup
    # of their own, whose results the consumer cannot read; they attach the module's managed policy.
    "athena_personal_workgroup": "{tenant_id}-lake-personal",
    "personal_data_reader_policy": "{tenant_id}-lake-personal-data-reader",
    # Table maintenance on a schedule (modules/maintenance_schedule.py): the EventBridge Scheduler schedule
    # and the role it starts EMR job runs with.
    "maintenance_schedule": "{tenant_id}-lake-maintenance",
    "maintenance_scheduler_role": "{tenant_id}-maintenance-scheduler",
    # Lake Formation (modules/lake_formation.py): the tenant's two LF-tag keys (LF-tag keys are account-wide,
    # and tenants share accounts, so each tenant owns keys of its own) and the role Lake Formation reads the
    # registered silver/ and gold/ locations with when it vends credentials to Athena.
    "lf_tag_classification": "{tenant_id}-classification",
    "lf_tag_layer": "{tenant_id}-layer",
    "lake_formation_role": "{tenant_id}-lakeformation-access",
    "oidc_provider_placeholder": "arn:aws:iam::{account_id}:oidc-provider/oidc.eks.{region}.amazonaws.com/id/{cluster_upper}",
    # Orchestration and alerts (modules/pipeline_*.py, modules/alert_*.py, modules/freshness_alarms.py): the state
    # machine that runs a dataset's layers on EMR on EKS, its role and log group, the roles EventBridge Scheduler and
    # EventBridge rules start it with, the dead-letter queue of their targets, the tenant's alerts topic and rules, the
    # queue the alert rules deliver to on the local emulator (moto's EventBridge cannot deliver to SNS), and the
    # CloudWatch namespace and EventBridge source the jobs put their metrics and events under.
    "pipeline_state_machine": "{tenant_id}-lake-pipeline",
    "pipeline_runner_role": "{tenant_id}-pipeline-runner",
    "pipeline_scheduler_role": "{tenant_id}-pipeline-scheduler",
    "pipeline_events_role": "{tenant_id}-pipeline-events",
    "pipeline_log_group": "/aws/vendedlogs/states/{tenant_id}-lake-pipeline",
    "trigger_dlq": "{tenant_id}-lake-trigger-dlq",
    "alerts_topic": "{tenant_id}-lake-alerts",
    "alert_events_queue": "{tenant_id}-lake-alert-events",
    "emr_job_failed_rule": "{tenant_id}-emr-job-failed",
    "pipeline_failed_rule": "{tenant_id}-pipeline-failed",
    "publish_blocked_rule": "{tenant_id}-publish-blocked",
    "metric_namespace": "tenantlake/{tenant_id}",
    "event_source": "tenantlake.{tenant_id}",
}


# Streaming ingestion (modules/stream_ingest.py): datasets a tenant may stream, and the per-stream names.
# These templates take a ``{dataset}`` besides the tenant's inputs, so they live apart from NAME_TEMPLATES
# (whose every entry is rendered once per tenant).  The module renders them with ``${each.value}``.
STREAM_DATASETS: tuple[str, ...] = ("iot", "clickstream", "inventory")
STREAM_NAME_TEMPLATES: dict[str, str] = {
    "kinesis_stream": "{tenant_id}-lake-{dataset}",
    "delivery_stream": "{tenant_id}-lake-{dataset}-to-landing",
    "firehose_role": "{tenant_id}-lake-{dataset}-firehose",
}
# Firehose buffering: an object is written to landing/<dataset>/ after this many seconds or MiB,
# whichever comes first (README "Streaming ingestion"; the local stand-in reads them from the stream).
# The ingest-writer role may only put objects under these prefixes (modules/job_roles.py ROLE_ACCESS); vended
# producer credentials (spark_jobs/landing/creds.py) scope a session inside one of them.
INGEST_WRITER_PUT_PREFIXES: tuple[str, ...] = ("landing",)
# The tenant roles' max_session_duration (modules/job_roles.py), the longest a vended session can last.
ROLE_MAX_SESSION_SECONDS = 3600

# EMR on EKS runs a job's pods under Kubernetes service accounts named
# ``emr-containers-sa-<component>-<job id>-<account>-<base36 of the execution role's name>``; a role's
# trust names exactly its own (what `aws emr-containers update-role-trust-policy` writes), so a pod of a
# run as one role cannot assume another (modules/job_roles.py). The module computes the base36 text in
# Terraform (the role name holds var.tenant_id); ``base36_role_name`` is the reference it is tested against.
EMR_SERVICE_ACCOUNT_PATTERN = "system:serviceaccount:{namespace}:emr-containers-sa-*-*-{account_id}-{role_id}"
EMR_SERVICE_ACCOUNT = "system:serviceaccount:{namespace}:emr-containers-sa-{component}-{job_id}-{account_id}-{role_id}"
BASE36_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
# Characters IAM allows in a role name, and its longest name.
IAM_ROLE_NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+=,.@_-"
MAX_ROLE_NAME_LENGTH = 64


# Per dataset of the contracts (modules/pipeline_triggers.py, modules/freshness_alarms.py): rendered with
# ``{dataset}`` besides the tenant's inputs, like STREAM_NAME_TEMPLATES.
PIPELINE_NAME_TEMPLATES: dict[str, str] = {
    "pipeline_schedule": "{tenant_id}-{dataset}-pipeline",
    "arrival_rule": "{tenant_id}-{dataset}-arrival",
    "freshness_alarm": "{tenant_id}-{dataset}-freshness",
}
# The longest of those names EventBridge and Scheduler take (rule and schedule names: 1-64 characters).
MAX_RULE_NAME = 64
# Orchestration (the tenant input ``orchestration``): off by default, because its schedules and arrival rules start
# EMR job runs (they cost) from the code a pipeline `make deploy-jobs` published, which does not exist before the
# first such deploy; and because a freshness alarm of a dataset that never ran would page at once.
ORCHESTRATION_DEFAULTS: dict[str, Any] = {
    "enabled": False,
    # SNS subscriptions of the tenant's alerts topic: [{protocol = "email", endpoint = "oncall@example.com"}, ...].
    "alert_subscriptions": [],
}
ALERT_PROTOCOLS: tuple[str, ...] = ("email", "email-json", "https", "sqs", "lambda", "sms")
# What the jobs put and emit (spark_jobs/runs/signals.py) and the module's alarms and rules read.
PUBLISHED_METRIC = "LayerPublished"  # 1 per publish, dimensions Dataset and Layer (Count)
PUBLISHED_METRIC_DIMENSIONS: tuple[str, ...] = ("Dataset", "Layer")
FRESHNESS_LAYER = "silver"  # a dataset is fresh when its silver table was published within its target
PUBLISH_BLOCKED_DETAIL_TYPE = "Publish Blocked by Validation"
# A contract's on_arrival debounce window (minutes): a divisor of 60, so that windows align on the hour.
DEBOUNCE_MINUTES: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60)
# A contract's freshness target (minutes): CloudWatch alarms evaluate at most 7 days at once (one period of the
# target's length).
MIN_FRESHNESS_MINUTES = 5
MAX_FRESHNESS_MINUTES = 7 * 24 * 60


def pipeline_name(kind: str, dataset: str, **values: str) -> str:
    """Render ``PIPELINE_NAME_TEMPLATES[kind]`` for one dataset (values may be CDKTF tokens)."""
    return PIPELINE_NAME_TEMPLATES[kind].format(dataset=dataset, **values)


def base36_role_name(role_name: str) -> str:
    """The role name's bytes read as one big-endian number, written in base 36 (digits, then a-z): the
    AWS CLI's encoding (awscli/customizations/emrcontainers/base36.py), ``"0"`` for an empty name."""
    number = int.from_bytes(role_name.encode("utf-8"), "big") if role_name else 0
    digits = ""
    while number:
        number, remainder = divmod(number, 36)
        digits = BASE36_ALPHABET[remainder] + digits
    return digits or "0"


def emr_service_account_pattern(namespace: str, account_id: str, role_name: str) -> str:
    """The ``sub`` a role's trust admits: the EMR service accounts of runs as that role, in that namespace."""
    return EMR_SERVICE_ACCOUNT_PATTERN.format(namespace=namespace, account_id=account_id,
                                              role_id=base36_role_name(role_name))


def emr_service_account(namespace: str, account_id: str, role_name: str, component: str = "spark-driver",
                        job_id: str = "000000036k9ea4ak7ga") -> str:
    """The ``sub`` of one pod of a run as ``role_name`` (a driver by default): what its web-identity token says."""
    return EMR_SERVICE_ACCOUNT.format(namespace=namespace, component=component, job_id=job_id,
                                      account_id=account_id, role_id=base36_role_name(role_name))

STREAM_BUFFER_SECONDS = 60
STREAM_BUFFER_MIB = 1

# The table catalog (spark_jobs/lake/catalog.py; modules/glue_databases.py on AWS): the layers that are
# Iceberg tables, and one Glue database per tenant and layer. Glue and Athena identifiers take
# lowercase letters, digits and underscores, so the database name uses the tenant id with '-' -> '_'
# (tenant ids have no '_', so the mapping stays one-to-one). The module renders the SAME template with
# ``tenant_key = replace(var.tenant_id, "-", "_")``.
CATALOG_LAYERS: tuple[str, ...] = ("silver", "gold")
GLUE_DATABASE_TEMPLATE = "{tenant_key}_{layer}"
# Where the tenant's Athena workgroups write query results: s3://<lake>/<ATHENA_RESULTS_PREFIX>/, one folder per
# querying principal (each workgroup enforces its own): the consumer's, and the readers of personal data's, whose
# results may hold personal columns and which the consumer may not read (modules/README.md, "Query results").
ATHENA_RESULTS_PREFIX = "athena"
ATHENA_RESULT_PREFIXES: dict[str, str] = {"consumer": "athena/consumer", "personal": "athena/personal"}


# Lake Formation tag-based access control (modules/lake_formation.py, spark_jobs/tables/lf_tags.py). Every column is
# classified personal (LF_PERSONAL) or not (LF_NOT_PERSONAL) under the tenant's classification key. The
# databases carry LF_PERSONAL, so a table and any column nobody tagged inherit it: a column is readable by
# the consumer only once the tag step has tagged it LF_NOT_PERSONAL.
LF_PERSONAL = "pii"
LF_NOT_PERSONAL = "none"
LF_CLASSIFICATION_VALUES: tuple[str, ...] = (LF_PERSONAL, LF_NOT_PERSONAL)
# The layers whose tables the consumer and the readers of personal data may select (through Athena).
LF_CONSUMER_LAYERS: tuple[str, ...] = ("gold",)
LAKE_FORMATION_DEFAULTS: dict[str, Any] = {
    # Principals (IAM role or user ARNs) granted SELECT on every column of the consumer layers, personal ones too.
    "personal_data_reader_arns": [],
}
LF_READER_ARN_RE = r"^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/[A-Za-z0-9+=,.@_/-]+$"
# Keys a tenant's lake_formation input once took and no longer does, with where the setting went: the account's Lake
# Formation settings are one per account and region and belong to a platform unit (infra/platform_lake_formation.py).
LAKE_FORMATION_MOVED: dict[str, str] = {
    "manage_settings": "the account's Lake Formation settings moved to the platform unit "
                       "tenants/_platform/lake-formation-{region}/ (tenants/README.md, \"Lake Formation settings\"), "
                       "on which the tenant depends; remove manage_settings from the tenant's file",
}


def tenant_key(tenant_id: str) -> str:
    """The tenant id as a Glue/Athena identifier: ``'-'`` becomes ``'_'``."""
    return tenant_id.replace("-", "_")


def glue_database_name(layer: str, tenant_key: str) -> str:
    """The Glue database of one layer (``tenant_key`` from ``tenant_key()``, or a CDKTF token)."""
    return GLUE_DATABASE_TEMPLATE.format(tenant_key=tenant_key, layer=layer)


def stream_name(kind: str, dataset: str, **values: str) -> str:
    """Render ``STREAM_NAME_TEMPLATES[kind]`` for one streamed dataset (values may be CDKTF tokens)."""
    return STREAM_NAME_TEMPLATES[kind].format(dataset=dataset, **values)


def render_name(kind: str, **values: str) -> str:
    """Render ``NAME_TEMPLATES[kind]``; ``values`` may be plain strings or CDKTF tokens."""
    return NAME_TEMPLATES[kind].format(**values)


# Rule texts shared by ``validate`` (Python) and the module's variable validations (Terraform), so a
# plan-time error and a config-check error read the same.  ``{...}`` fields are the offending values.
RULE_TEXTS: dict[str, str] = {
    "tenant_id": "'{tenant_id}' must be " + "3-24 characters, lowercase, matching [a-z][a-z0-9-]*",
    "region": "'{region}' is not an AWS region name like eu-west-1",
    "gdpr": "{region} is outside the EU but data_classification includes gdpr",
    "account_id": "'{account_id}' must be exactly 12 digits",
    "data_classification": "every entry must be one of {classifications}, and at least one is required",
    "vpc_ids": "must list VPC ids like vpc-0123456789abcdef0, each once",
    "network": "the tenant needs a network: its own vpc_ids, or a shared network's endpoints "
               "(shared_gateway_endpoint_ids, from a platform network unit)",
    "shared_endpoints": "must map a VPC id (gateway) or \"<VPC id>.<service>\" (interface) to an endpoint id "
                        "like vpce-0123456789abcdef0",
    "vpc_overlap": "a VPC in both vpc_ids and shared_gateway_endpoint_ids would get a second S3 gateway endpoint "
                   "(AWS allows one per route table)",
    "environment": "'{environment}' is not one of {environments}",
    "eks_cluster_name": "'{eks_cluster_name}' is not a valid EKS cluster name",
    "eks_oidc_provider_arn": "'{eks_oidc_provider_arn}' is not an IAM OIDC provider ARN",
    "emr_namespace": "'{emr_namespace}' is not a Kubernetes namespace name",
    "admin_principal_arns": "every entry must be an IAM or STS principal ARN like arn:aws:iam::123456789012:role/deployer",
    "retention_days": "keys must be among {retention_keys}, values whole days from 1 to 3650",
    "retention_bronze": "bronze must be more than 90 days (it transitions to GLACIER_IR at 90)",
    "retention_logs": "logs must be a CloudWatch Logs retention period ({log_retention_values})",
    "streams": "every entry must be one of {stream_datasets}, each once",
    "maintenance_schedule": "keys must be among {schedule_keys}; enabled a bool, schedule_expression cron(...) or "
                            "rate(...), timezone an IANA name like UTC or Europe/Dublin, flexible_window_minutes "
                            "0 (off) to 1440",
    "lake_formation": "keys must be among {lake_formation_keys}; personal_data_reader_arns "
                      "IAM role or user ARNs like arn:aws:iam::123456789012:role/privacy-officer, each once",
    "orchestration": "keys must be among {orchestration_keys}; enabled a bool, alert_subscriptions a list of "
                     "{{protocol, endpoint}} with protocol one of {protocols} and a non-empty endpoint",
}
# The retention periods CloudWatch Logs accepts (the log group's retention is retention_days["logs"]).
LOG_RETENTION_VALUES: tuple[int, ...] = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
)

# Documented defaults (README "Tenant inputs" table; asserted in tests).
DEFAULT_RETENTION_DAYS: dict[str, int] = {
    "landing": 30,     # raw drops are re-readable from bronze after ingest
    "bronze": 365,     # raw history, for replays
    "quarantine": 30,  # bad rows, long enough to investigate
    "logs": 90,        # job logs under logs/ in S3 and in the CloudWatch log group
    "snapshots": 7,    # not a prefix: table maintenance expires Iceberg snapshots older than this
}
# The keys of retention_days that are lake prefixes with a lifecycle rule (the others are not prefixes).
RETENTION_PREFIXES: tuple[str, ...] = ("landing", "bronze", "quarantine", "logs")

# Table maintenance as a scheduled EMR on EKS run (modules/maintenance_schedule.py; infra/deploy/README.md,
# "Maintenance runs"). Off by default: the schedule starts job runs (cost) from the code a
# `make deploy-jobs ARGS=--maintain` published, which does not exist before the first such deploy.
MAINTENANCE_SCHEDULE_DEFAULTS: dict[str, Any] = {
    "enabled": False,
    # Weekly, Sunday 03:00 in ``timezone``: daily runs add one snapshot (and a few files) per table a day.
    "schedule_expression": "cron(0 3 ? * SUN *)",
    "timezone": "UTC",
    # Start within an hour of the time, so tenants on one cluster do not all start at once.
    "flexible_window_minutes": 60,
}
SCHEDULE_EXPRESSION_RE = r"^(cron|rate)[(][^()]+[)]$"
TIMEZONE_RE = r"^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$"
MAX_FLEXIBLE_WINDOW_MINUTES = 1440
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
        vpc_ids: VPCs the tenant brings itself (``vpc-...``); the module creates their endpoints. @default - ()
            (then the tenant uses a shared network: ``shared_gateway_endpoint_ids``)
        tags: extra tags on every taggable resource. @default - {}
        environment: ``local`` targets the embedded emulator. @default - "local"
        cost_center: cost-allocation tag. @default - "data-platform"
        eks_cluster_name: EKS cluster of the EMR virtual cluster. @default - "tenantlake"
        eks_oidc_provider_arn: the cluster's IAM OIDC provider; "" derives a placeholder in ``account_id``.
            @default - ""
        emr_namespace: Kubernetes namespace of the tenant's EMR jobs. @default - "emr-<tenant_id>"
        retention_days: expiry per prefix, overriding ``DEFAULT_RETENTION_DAYS``. @default - {}
        admin_principal_arns: admin principals besides the identity that runs terraform: on the allow-lists
            of the lake, the log bucket and the key (every other principal is denied), and exempt from the
            bucket policies' VPC-endpoint rule. @default - []
        streams: datasets fed by a Kinesis stream and a Firehose into ``landing/<dataset>/``, among
            ``STREAM_DATASETS``. @default - [] (no streams)
        shared_gateway_endpoint_ids: VPC id -> S3 gateway endpoint id of a shared cluster network (the platform
            network unit's ``gateway_endpoint_ids``); the lake is reachable through these too. @default - {}
        shared_interface_endpoint_ids: ``"<VPC id>.<service>"`` -> interface endpoint id of that network
            (its ``interface_endpoint_ids``; reported in the outputs). @default - {}
        maintenance_schedule: the scheduled table maintenance, over ``MAINTENANCE_SCHEDULE_DEFAULTS``:
            ``enabled``, ``schedule_expression``, ``timezone``, ``flexible_window_minutes``. @default - {}
            (off)
        lake_formation: Lake Formation options over ``LAKE_FORMATION_DEFAULTS``: ``personal_data_reader_arns``
            (granted SELECT on personal columns too). The account's settings are no tenant's: a platform unit per
            account and region holds them (``LAKE_FORMATION_MOVED``). @default - {} (no readers)
        orchestration: the pipeline's automation over ``ORCHESTRATION_DEFAULTS``: ``enabled`` (the state machine, its
            triggers per dataset, the alerts topic and rules, a freshness alarm per dataset) and
            ``alert_subscriptions`` (``[{protocol, endpoint}]``, subscribed to the alerts topic). @default - {} (off)
    """

    tenant_id: str
    region: str
    account_id: str
    data_classification: tuple[str, ...]
    vpc_ids: tuple[str, ...] = ()
    tags: Mapping[str, str] = dataclasses.field(default_factory=dict)
    environment: str = "local"
    cost_center: str = "data-platform"
    eks_cluster_name: str = "tenantlake"
    eks_oidc_provider_arn: str = ""
    emr_namespace: str = ""
    retention_days: Mapping[str, int] = dataclasses.field(default_factory=dict)
    admin_principal_arns: tuple[str, ...] = ()
    streams: tuple[str, ...] = ()
    shared_gateway_endpoint_ids: Mapping[str, str] = dataclasses.field(default_factory=dict)
    shared_interface_endpoint_ids: Mapping[str, str] = dataclasses.field(default_factory=dict)
    maintenance_schedule: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    lake_formation: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    orchestration: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    # ---- derived names (the only place resource names are built) -------------------------
    @property
    def namespace(self) -> str:
        return self.emr_namespace or render_name("emr_namespace", tenant_id=self.tenant_id)

    @property
    def lake_bucket_name(self) -> str:
        return lake_bucket_name(self.tenant_id, self.region)

    @property
    def log_bucket_name(self) -> str:
        return render_name("log_bucket", tenant_id=self.tenant_id, region=self.region)

    @property
    def kms_alias(self) -> str:
        return render_name("kms_alias", tenant_id=self.tenant_id)

    def name(self, kind: str) -> str:
        """Any resource name of ``NAME_TEMPLATES`` for this tenant."""
        return render_name(kind, tenant_id=self.tenant_id, region=self.region, account_id=self.account_id,
                           cluster_upper=self.eks_cluster_name.upper())

    @property
    def effective_retention_days(self) -> dict[str, int]:
        return {**DEFAULT_RETENTION_DAYS, **dict(self.retention_days)}

    @property
    def effective_maintenance_schedule(self) -> dict[str, Any]:
        return {**MAINTENANCE_SCHEDULE_DEFAULTS, **dict(self.maintenance_schedule)}

    @property
    def effective_lake_formation(self) -> dict[str, Any]:
        return {**LAKE_FORMATION_DEFAULTS, **dict(self.lake_formation)}

    @property
    def effective_orchestration(self) -> dict[str, Any]:
        return {**ORCHESTRATION_DEFAULTS, **dict(self.orchestration)}

    @property
    def oidc_provider_arn(self) -> str:
        return self.eks_oidc_provider_arn or self.name("oidc_provider_placeholder")

    @property
    def network_vpc_ids(self) -> tuple[str, ...]:
        """Every VPC the lake is reachable from: the tenant's own, then the shared network's."""
        return (*self.vpc_ids, *sorted(set(dict(self.shared_gateway_endpoint_ids)) - set(self.vpc_ids)))

    @property
    def gdpr(self) -> bool:
        return "gdpr" in self.data_classification

    @property
    def glue_databases(self) -> dict[str, str]:
        """The Glue database of each table layer (``CATALOG_LAYERS``)."""
        return {layer: glue_database_name(layer, tenant_key(self.tenant_id)) for layer in CATALOG_LAYERS}

    def stream_name(self, kind: str, dataset: str) -> str:
        """A per-stream name of ``STREAM_NAME_TEMPLATES`` for this tenant."""
        return stream_name(kind, dataset, tenant_id=self.tenant_id)

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
    return render_name("lake_bucket", tenant_id=tenant_id, region=region)


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
        raise TenantConfigError(t, "tenant_id", RULE_TEXTS["tenant_id"].format(tenant_id=cfg.tenant_id))
    if len(lake_bucket_name(cfg.tenant_id, cfg.region) + "-logs") > MAX_BUCKET_NAME:
        raise TenantConfigError(t, "tenant_id", f"too long for S3 bucket names in {cfg.region} (max {MAX_BUCKET_NAME} characters)")
    if not re.match(REGION_RE, cfg.region or ""):
        raise TenantConfigError(t, "region", RULE_TEXTS["region"].format(region=cfg.region))
    if not re.match(ACCOUNT_ID_RE, cfg.account_id or ""):
        raise TenantConfigError(t, "account_id", RULE_TEXTS["account_id"].format(account_id=cfg.account_id))
    if not cfg.data_classification:
        raise TenantConfigError(t, "data_classification", f"must name at least one of {', '.join(CLASSIFICATIONS)}")
    for c in cfg.data_classification:
        if c not in CLASSIFICATIONS:
            raise TenantConfigError(t, "data_classification", f"'{c}' is not one of {', '.join(CLASSIFICATIONS)}")
    if cfg.gdpr and not is_eu_region(cfg.region):
        raise TenantConfigError(t, "region", RULE_TEXTS["gdpr"].format(region=cfg.region))
    for v in cfg.vpc_ids:
        if not re.match(VPC_ID_RE, v):
            raise TenantConfigError(t, "vpc_ids", f"'{v}' is not a VPC id like vpc-0123456789abcdef0")
    if len(set(cfg.vpc_ids)) != len(cfg.vpc_ids):
        raise TenantConfigError(t, "vpc_ids", "lists a VPC more than once")
    for field, shared, key_re in (("shared_gateway_endpoint_ids", cfg.shared_gateway_endpoint_ids, VPC_ID_RE),
                                  ("shared_interface_endpoint_ids", cfg.shared_interface_endpoint_ids,
                                   VPC_ID_RE[:-1] + r"\.[a-z0-9.-]+$")):
        for key, endpoint in dict(shared).items():
            if not (isinstance(key, str) and isinstance(endpoint, str) and re.match(key_re, key)
                    and re.match(VPC_ENDPOINT_ID_RE, endpoint)):
                raise TenantConfigError(t, field, f"{key!r} = {endpoint!r}: " + RULE_TEXTS["shared_endpoints"])
    if not cfg.vpc_ids and not cfg.shared_gateway_endpoint_ids:
        raise TenantConfigError(t, "vpc_ids", RULE_TEXTS["network"])
    overlap = sorted(set(cfg.vpc_ids) & set(dict(cfg.shared_gateway_endpoint_ids)))
    if overlap:
        raise TenantConfigError(t, "vpc_ids", f"{overlap[0]}: " + RULE_TEXTS["vpc_overlap"])
    if cfg.environment not in ENVIRONMENTS:
        raise TenantConfigError(t, "environment", RULE_TEXTS["environment"].format(
            environment=cfg.environment, environments=", ".join(ENVIRONMENTS)))
    if not re.match(EKS_CLUSTER_NAME_RE, cfg.eks_cluster_name):
        raise TenantConfigError(t, "eks_cluster_name", RULE_TEXTS["eks_cluster_name"].format(eks_cluster_name=cfg.eks_cluster_name))
    if cfg.eks_oidc_provider_arn and not re.match(OIDC_PROVIDER_ARN_RE, cfg.eks_oidc_provider_arn):
        raise TenantConfigError(t, "eks_oidc_provider_arn", RULE_TEXTS["eks_oidc_provider_arn"].format(
            eks_oidc_provider_arn=cfg.eks_oidc_provider_arn))
    if not re.match(K8S_NAMESPACE_RE, cfg.namespace):
        raise TenantConfigError(t, "emr_namespace", RULE_TEXTS["emr_namespace"].format(emr_namespace=cfg.namespace))
    for prefix, days in dict(cfg.retention_days).items():
        if prefix not in DEFAULT_RETENTION_DAYS:
            raise TenantConfigError(t, "retention_days", f"'{prefix}' is not one of {', '.join(DEFAULT_RETENTION_DAYS)}")
        if not isinstance(days, int) or isinstance(days, bool) or not 1 <= days <= 3650:
            raise TenantConfigError(t, "retention_days", f"{prefix}={days!r} must be a whole number of days from 1 to 3650")
    if cfg.effective_retention_days["bronze"] <= 90:
        # bronze moves to GLACIER_IR at 90 d; expiring before that would make the transition moot.
        raise TenantConfigError(t, "retention_days", RULE_TEXTS["retention_bronze"])
    if cfg.effective_retention_days["logs"] not in LOG_RETENTION_VALUES:
        raise TenantConfigError(t, "retention_days", RULE_TEXTS["retention_logs"].format(
            log_retention_values=", ".join(map(str, LOG_RETENTION_VALUES))))
    for arn in cfg.admin_principal_arns:
        if not re.match(ADMIN_PRINCIPAL_ARN_RE, arn):
            raise TenantConfigError(t, "admin_principal_arns", f"'{arn}': " + RULE_TEXTS["admin_principal_arns"])
    for dataset in cfg.streams:
        if dataset not in STREAM_DATASETS:
            raise TenantConfigError(t, "streams", f"'{dataset}' is not one of {', '.join(STREAM_DATASETS)}")
    if len(set(cfg.streams)) != len(cfg.streams):
        raise TenantConfigError(t, "streams", "lists a dataset more than once")
    for key, value in dict(cfg.tags).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TenantConfigError(t, "tags", "must map strings to strings")
    _validate_maintenance_schedule(t, cfg)
    _validate_lake_formation(t, cfg)
    _validate_orchestration(t, cfg)
    return cfg


def _refuse_unknown_keys(t: str, field: str, given: Mapping[str, Any], defaults: Mapping[str, Any], rule: str) -> None:
    """An object input (a map with documented keys and defaults): its first unknown key, in one line."""
    unknown = sorted(set(dict(given)) - set(defaults))
    if unknown:
        raise TenantConfigError(t, field, f"'{unknown[0]}': " + rule)


def _validate_lake_formation(t: str, cfg: TenantConfig) -> None:
    for key, where in LAKE_FORMATION_MOVED.items():
        if key in dict(cfg.lake_formation):
            raise TenantConfigError(t, f"lake_formation.{key}", where.format(region=cfg.region))
    rule = RULE_TEXTS["lake_formation"].format(lake_formation_keys=", ".join(LAKE_FORMATION_DEFAULTS))
    _refuse_unknown_keys(t, "lake_formation", cfg.lake_formation, LAKE_FORMATION_DEFAULTS, rule)
    options = cfg.effective_lake_formation
    readers = options["personal_data_reader_arns"]
    if not (isinstance(readers, (list, tuple))
            and all(isinstance(a, str) and re.match(LF_READER_ARN_RE, a) for a in readers)
            and len(set(readers)) == len(readers)):
        raise TenantConfigError(t, "lake_formation", rule)


def _validate_orchestration(t: str, cfg: TenantConfig) -> None:
    rule = RULE_TEXTS["orchestration"].format(orchestration_keys=", ".join(ORCHESTRATION_DEFAULTS),
                                              protocols=", ".join(ALERT_PROTOCOLS))
    _refuse_unknown_keys(t, "orchestration", cfg.orchestration, ORCHESTRATION_DEFAULTS, rule)
    options = cfg.effective_orchestration
    subscriptions = options["alert_subscriptions"]
    if not (isinstance(options["enabled"], bool) and isinstance(subscriptions, (list, tuple))
            and all(isinstance(s, Mapping) and set(s) == {"protocol", "endpoint"} and s["protocol"] in ALERT_PROTOCOLS
                    and isinstance(s["endpoint"], str) and s["endpoint"].strip() for s in subscriptions)):
        raise TenantConfigError(t, "orchestration", rule)


def _validate_maintenance_schedule(t: str, cfg: TenantConfig) -> None:
    rule = RULE_TEXTS["maintenance_schedule"].format(schedule_keys=", ".join(MAINTENANCE_SCHEDULE_DEFAULTS))
    _refuse_unknown_keys(t, "maintenance_schedule", cfg.maintenance_schedule, MAINTENANCE_SCHEDULE_DEFAULTS, rule)
    schedule = cfg.effective_maintenance_schedule
    window = schedule["flexible_window_minutes"]
    if not (isinstance(schedule["enabled"], bool)
            and isinstance(schedule["schedule_expression"], str)
            and re.match(SCHEDULE_EXPRESSION_RE, schedule["schedule_expression"])
            and isinstance(schedule["timezone"], str) and re.match(TIMEZONE_RE, schedule["timezone"])
            and isinstance(window, int) and not isinstance(window, bool)
            and 0 <= window <= MAX_FLEXIBLE_WINDOW_MINUTES):
        raise TenantConfigError(t, "maintenance_schedule", rule)


FIELDS = {f.name for f in dataclasses.fields(TenantConfig)}
REQUIRED = {"tenant_id", "region", "account_id", "data_classification"}


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
    for field in ("data_classification", "vpc_ids", "admin_principal_arns", "streams"):
        if field in values:
            values[field] = _as_tuple(values[field], tenant, field)
    for field in ("tags", "retention_days", "shared_gateway_endpoint_ids", "shared_interface_endpoint_ids",
                  "maintenance_schedule", "lake_formation", "orchestration"):
        if field in values and not isinstance(values[field], Mapping):
            raise TenantConfigError(tenant, field, "must be a map")
    for field in ("tenant_id", "region", "account_id", "environment", "cost_center", "eks_cluster_name",
                  "eks_oidc_provider_arn", "emr_namespace"):
        if field in values and not isinstance(values[field], str):
            raise TenantConfigError(tenant, field, f"must be a string, got {type(values[field]).__name__}")
    return validate(TenantConfig(**values))


def check_unique(configs: list[TenantConfig]) -> None:
    """Tenant ids must not collide across tenants."""
    seen: dict[str, str] = {}
    for cfg in configs:
        if cfg.tenant_id in seen:
            raise TenantConfigError(cfg.tenant_id, "tenant_id", "is used by more than one tenant")
        seen[cfg.tenant_id] = cfg.region
