"""The tenant module's inputs: typed, described Terraform variables with plan-time validation.

The module is synthesized once and reused by every tenant, so tenant values are Terraform variables,
not Python values.  Every regex, allowed value and error text comes from ``tenant_model`` (the same
constants ``tenant_model.validate`` uses), so a rule is written once: a bad tenant fails the Python
config check and, if it got past that, ``terraform plan`` with the same one-line message.

The construct also derives the values every other construct needs (names, tags, retention) as
Terraform locals, from the same ``NAME_TEMPLATES``.
"""
from __future__ import annotations

import json

from cdktf import TerraformLocal, TerraformVariable, TerraformVariableValidationConfig, Token
from cdktf_cdktf_provider_aws.data_aws_partition import DataAwsPartition
from constructs import Construct

import tenant_model as model
from modules.refs import address

# Each input referenced by name inside Terraform expressions.
V = {name: "${var.%s}" % name for name in sorted(model.FIELDS)}


# Terraform types of the maintenance_schedule attributes (tenant_model.MAINTENANCE_SCHEDULE_DEFAULTS).
_SCHEDULE_TYPES = {"enabled": "bool", "schedule_expression": "string", "timezone": "string",
                   "flexible_window_minutes": "number"}


def _hcl_list(values) -> str:
    return json.dumps(list(values))


def _check(condition: str, field: str, rule: str) -> TerraformVariableValidationConfig:
    # error_message names the input and the rule, like TenantConfigError does (without the tenant
    # prefix: Terraform already prints which variable failed).
    return TerraformVariableValidationConfig(condition="${%s}" % condition, error_message=f"{field}: {rule}")


def _regex(pattern: str, ref: str) -> str:
    return f"can(regex({json.dumps(pattern)}, {ref}))"


class TenantInputs(Construct):
    """Declares the module's variables (names = ``tenant_model.TenantConfig`` fields) and locals.

    Attributes exposed to the other constructs (Terraform expressions, as strings or tokens):
        tenant_id, region, account_id, partition: scalar inputs (``partition_ref``: the partition as a
            bare reference, for use inside other expressions).
        tags: the four standard tags merged over the user's ``tags`` (ours win).
        names: every name of ``tenant_model.NAME_TEMPLATES`` for this tenant.
        retention: ``retention_days`` merged over ``DEFAULT_RETENTION_DAYS`` (a number per key).
        emr_namespace, oidc_provider_arn, oidc_issuer: derived EMR-on-EKS identity values.
        vpc_ids, admin_principal_arns, environment, eks_cluster_name: list/scalar inputs.
        streams: the list of streamed datasets (``var.streams``).
        maintenance_schedule: the attributes of ``var.maintenance_schedule`` (defaults filled in by its type).
        lake_formation: the attributes of ``var.lake_formation`` (defaults filled in by its type).
        orchestration_enabled: ``var.orchestration.enabled`` as a bare expression (conditions of ``count``).
    """

    def __init__(self, scope: Construct, id_: str) -> None:
        super().__init__(scope, id_)
        rules = model.RULE_TEXTS
        classes = _hcl_list(model.CLASSIFICATIONS)
        retention_keys = _hcl_list(model.DEFAULT_RETENTION_DAYS)
        log_values = json.dumps(list(model.LOG_RETENTION_VALUES))

        def var(name: str, type_: str, description: str, default=None, checks=()) -> TerraformVariable:
            return TerraformVariable(self, name, type=type_, description=description, default=default,
                                     validation=list(checks) or None)

        var("tenant_id", "string", "Tenant id: " + model.TENANT_ID_RULE + "; part of every resource name.", checks=[
            _check(_regex(model.TENANT_ID_RE, "var.tenant_id"), "tenant_id",
                   rules["tenant_id"].format(tenant_id=V["tenant_id"])),
            _check(f'length("{model.NAME_TEMPLATES["log_bucket"].format(**V)}") <= {model.MAX_BUCKET_NAME}',
                   "tenant_id", f"too long for S3 bucket names in {V['region']} (max {model.MAX_BUCKET_NAME} characters)"),
        ])
        var("region", "string", "AWS region of the lake, e.g. eu-west-1.", checks=[
            _check(_regex(model.REGION_RE, "var.region"), "region", rules["region"].format(region=V["region"])),
            # Cross-variable validation (Terraform >= 1.9): gdpr data stays in the EU.
            _check(f'!contains(var.data_classification, "gdpr") || startswith(var.region, "{model.EU_REGION_PREFIX}")',
                   "region", rules["gdpr"].format(region=V["region"])),
        ])
        var("account_id", "string", "The 12-digit AWS account that owns the lake.", checks=[
            _check(_regex(model.ACCOUNT_ID_RE, "var.account_id"), "account_id",
                   rules["account_id"].format(account_id=V["account_id"])),
        ])
        var("data_classification", "list(string)",
            f"Classifications of the tenant's data, a non-empty subset of {', '.join(model.CLASSIFICATIONS)}; "
            "gdpr requires an EU region.", checks=[
                _check(f"length(var.data_classification) > 0 && alltrue([for c in var.data_classification : contains({classes}, c)])",
                       "data_classification", rules["data_classification"].format(classifications=", ".join(model.CLASSIFICATIONS))),
            ])
        vpc_ids = var("vpc_ids", "list(string)",
                      "VPCs the tenant brings itself; the module creates their S3 gateway and interface endpoints. "
                      "Empty when the tenant uses a shared network (shared_gateway_endpoint_ids).", default=[], checks=[
            _check("length(distinct(var.vpc_ids)) == length(var.vpc_ids) && "
                   f"alltrue([for v in var.vpc_ids : {_regex(model.VPC_ID_RE, 'v')}])", "vpc_ids", rules["vpc_ids"]),
            _check("length(var.vpc_ids) > 0 || length(var.shared_gateway_endpoint_ids) > 0", "vpc_ids", rules["network"]),
            _check("length(setintersection(toset(var.vpc_ids), toset(keys(var.shared_gateway_endpoint_ids)))) == 0",
                   "vpc_ids", rules["vpc_overlap"]),
        ])
        endpoint_re = model.VPC_ENDPOINT_ID_RE
        var("shared_gateway_endpoint_ids", "map(string)",
            "VPC id => S3 gateway endpoint id of a shared cluster network (the platform network unit's "
            "gateway_endpoint_ids output); the module creates no endpoint in those VPCs.", default={}, checks=[
                _check(f"alltrue([for k, v in var.shared_gateway_endpoint_ids : {_regex(model.VPC_ID_RE, 'k')} && "
                       f"{_regex(endpoint_re, 'v')}])", "shared_gateway_endpoint_ids", rules["shared_endpoints"]),
            ])
        var("shared_interface_endpoint_ids", "map(string)",
            "\"<VPC id>.<service>\" => interface endpoint id of that shared network (its interface_endpoint_ids "
            "output), reported in this module's interface_endpoint_ids.", default={}, checks=[
                _check(f"alltrue([for k, v in var.shared_interface_endpoint_ids : "
                       f"{_regex(model.VPC_ID_RE[:-1] + '[.][a-z0-9.-]+$', 'k')} && {_regex(endpoint_re, 'v')}])",
                       "shared_interface_endpoint_ids", rules["shared_endpoints"]),
            ])
        var("tags", "map(string)", "Extra tags on every taggable resource (the four standard tags win).", default={})
        var("environment", "string", f"Deployment environment, one of {', '.join(model.ENVIRONMENTS)}; local targets the embedded emulator.",
            default="local", checks=[
                _check(f"contains({_hcl_list(model.ENVIRONMENTS)}, var.environment)", "environment",
                       rules["environment"].format(environment=V["environment"], environments=", ".join(model.ENVIRONMENTS))),
            ])
        var("cost_center", "string", "Cost-allocation tag.", default="data-platform")
        var("eks_cluster_name", "string", "EKS cluster that hosts the tenant's EMR virtual cluster.", default="tenantlake", checks=[
            _check(_regex(model.EKS_CLUSTER_NAME_RE, "var.eks_cluster_name"), "eks_cluster_name",
                   rules["eks_cluster_name"].format(eks_cluster_name=V["eks_cluster_name"])),
        ])
        var("eks_oidc_provider_arn", "string",
            "IAM OIDC provider of the EKS cluster; empty derives a placeholder ARN in account_id.", default="", checks=[
                _check(f'var.eks_oidc_provider_arn == "" || {_regex(model.OIDC_PROVIDER_ARN_RE, "var.eks_oidc_provider_arn")}',
                       "eks_oidc_provider_arn", rules["eks_oidc_provider_arn"].format(eks_oidc_provider_arn=V["eks_oidc_provider_arn"])),
            ])
        var("emr_namespace", "string", "Kubernetes namespace of the tenant's EMR jobs; empty means emr-<tenant_id>.", default="", checks=[
            _check(f'var.emr_namespace == "" || {_regex(model.K8S_NAMESPACE_RE, "var.emr_namespace")}', "emr_namespace",
                   rules["emr_namespace"].format(emr_namespace=V["emr_namespace"])),
        ])
        var("retention_days", "map(number)",
            "Expiry in days per prefix (snapshots: how long table maintenance keeps Iceberg snapshots), overriding "
            "the defaults " + json.dumps(model.DEFAULT_RETENTION_DAYS, sort_keys=True) + ".",
            default={}, checks=[
                _check(f"alltrue([for k, v in var.retention_days : contains({retention_keys}, k) && v >= 1 && v <= 3650 && floor(v) == v])",
                       "retention_days", rules["retention_days"].format(retention_keys=", ".join(model.DEFAULT_RETENTION_DAYS))),
                _check(f'lookup(var.retention_days, "bronze", {model.DEFAULT_RETENTION_DAYS["bronze"]}) > 90',
                       "retention_days", rules["retention_bronze"]),
                _check(f'contains({log_values}, lookup(var.retention_days, "logs", {model.DEFAULT_RETENTION_DAYS["logs"]}))',
                       "retention_days", rules["retention_logs"].format(log_retention_values=", ".join(map(str, model.LOG_RETENTION_VALUES)))),
            ])
        var("admin_principal_arns", "list(string)",
            "Admin principals besides the deployer running terraform: on the allow-lists of the lake, log bucket and "
            "key, and exempt from the bucket policies' VPC-endpoint rule.",
            default=[], checks=[
                _check(f"alltrue([for a in var.admin_principal_arns : {_regex(model.ADMIN_PRINCIPAL_ARN_RE, 'a')}])",
                       "admin_principal_arns", rules["admin_principal_arns"]),
            ])
        stream_datasets = _hcl_list(model.STREAM_DATASETS)
        streams = var("streams", "list(string)",
                      f"Datasets fed by a Kinesis stream and a Firehose into landing/<dataset>/, among "
                      f"{', '.join(model.STREAM_DATASETS)}; empty creates no streams.", default=[], checks=[
                          _check(f"length(distinct(var.streams)) == length(var.streams) && "
                                 f"alltrue([for s in var.streams : contains({stream_datasets}, s)])",
                                 "streams", rules["streams"].format(stream_datasets=", ".join(model.STREAM_DATASETS))),
                      ])

        schedule = model.MAINTENANCE_SCHEDULE_DEFAULTS
        schedule_type = ("object({" + ", ".join(
            f"{key} = optional({_SCHEDULE_TYPES[key]}, {json.dumps(value)})" for key, value in schedule.items()) + "})")
        var("maintenance_schedule", schedule_type,
            "Table maintenance as a scheduled EMR on EKS run (EventBridge Scheduler): enabled (default false), "
            f"schedule_expression (default {schedule['schedule_expression']}), timezone (default "
            f"{schedule['timezone']}), flexible_window_minutes (default {schedule['flexible_window_minutes']}; 0 = "
            "exactly on time). The run uses the code `make deploy-jobs ARGS=--maintain` published.",
            default={}, checks=[
                _check(f"{_regex(model.SCHEDULE_EXPRESSION_RE, 'var.maintenance_schedule.schedule_expression')} && "
                       f"{_regex(model.TIMEZONE_RE, 'var.maintenance_schedule.timezone')} && "
                       "var.maintenance_schedule.flexible_window_minutes >= 0 && "
                       f"var.maintenance_schedule.flexible_window_minutes <= {model.MAX_FLEXIBLE_WINDOW_MINUTES} && "
                       "floor(var.maintenance_schedule.flexible_window_minutes) == var.maintenance_schedule.flexible_window_minutes",
                       "maintenance_schedule", rules["maintenance_schedule"].format(
                           schedule_keys=", ".join(schedule))),
            ])

        lake_formation = model.LAKE_FORMATION_DEFAULTS
        readers = "var.lake_formation.personal_data_reader_arns"
        var("lake_formation", f"object({{personal_data_reader_arns = optional(list(string), "
                              f"{json.dumps(lake_formation['personal_data_reader_arns'])})}})",
            "Lake Formation: personal_data_reader_arns (default []; IAM roles or users granted SELECT on every gold "
            "column, personal ones included). The account's Lake Formation settings are the platform unit's "
            "(tenants/_platform/lake-formation-<region>), not a tenant's.",
            default={}, checks=[
                _check(f"alltrue([for a in {readers} : {_regex(model.LF_READER_ARN_RE, 'a')}]) && "
                       f"length(distinct({readers})) == length({readers})",
                       "lake_formation", rules["lake_formation"].format(lake_formation_keys=", ".join(lake_formation))),
            ])

        orchestration = model.ORCHESTRATION_DEFAULTS
        subscriptions = "var.orchestration.alert_subscriptions"
        var("orchestration", "object({enabled = optional(bool, false), alert_subscriptions = optional(list(object("
                             "{protocol = string, endpoint = string})), [])})",
            "The pipeline's automation on AWS: enabled (default false; a state machine that runs each dataset's layers "
            "on EMR on EKS, its triggers from the contracts (schedules, landing arrivals), the alerts topic and rules, "
            "and a freshness alarm per dataset), alert_subscriptions (default []; {protocol, endpoint} subscribed to "
            "the alerts topic, protocol one of " + ", ".join(model.ALERT_PROTOCOLS) + ").",
            default={}, checks=[
                _check(f"alltrue([for s in {subscriptions} : contains({_hcl_list(model.ALERT_PROTOCOLS)}, s.protocol) "
                       "&& length(trimspace(s.endpoint)) > 0])",
                       "orchestration", rules["orchestration"].format(
                           orchestration_keys=", ".join(orchestration), protocols=", ".join(model.ALERT_PROTOCOLS))),
            ])

        partition = DataAwsPartition(self, "partition")
        self.partition = partition.partition
        # The same, as a bare reference for use inside other expressions (for-expressions, concat()).
        self.partition_ref = f"{address(partition)}.partition"
        self.tenant_id, self.region, self.account_id = V["tenant_id"], V["region"], V["account_id"]
        self.environment, self.eks_cluster_name = V["environment"], V["eks_cluster_name"]
        self.vpc_ids = vpc_ids.list_value
        self.admin_principal_arns_expr = V["admin_principal_arns"]
        self.streams = streams.list_value
        self.maintenance_schedule = {key: "${var.maintenance_schedule.%s}" % key for key in schedule}
        self.lake_formation = {key: "${var.lake_formation.%s}" % key for key in lake_formation}
        self.orchestration_enabled = "var.orchestration.enabled"  # bare, for count/for_each conditions

        name_values = {**V, "cluster_upper": "${upper(var.eks_cluster_name)}"}
        self.names = {kind: model.render_name(kind, **name_values) for kind in model.NAME_TEMPLATES}
        self.emr_namespace = self._local(
            "namespace", f'${{var.emr_namespace != "" ? var.emr_namespace : "{self.names["emr_namespace"]}"}}')
        self.names["emr_namespace"] = self.emr_namespace
        self.oidc_provider_arn = self._local(
            "oidc_provider_arn",
            f'${{var.eks_oidc_provider_arn != "" ? var.eks_oidc_provider_arn : "{self.names["oidc_provider_placeholder"]}"}}')
        # The issuer host/path, as it appears in the trust policy's condition keys.
        self.oidc_issuer = self._local("oidc_issuer", '${element(split(":oidc-provider/", local.oidc_provider_arn), 1)}')

        standard = {
            "tenant": V["tenant_id"],
            "data_classification": '${join("-", sort(var.data_classification))}',
            "environment": V["environment"],
            "cost_center": V["cost_center"],
        }
        TerraformLocal(self, "standard_tags", standard)
        self.tags = TerraformLocal(self, "resource_tags", "${merge(var.tags, local.standard_tags)}").as_string_map
        TerraformLocal(self, "retention_defaults", dict(model.DEFAULT_RETENTION_DAYS))
        self._local("retention", "${merge(local.retention_defaults, var.retention_days)}")
        self.retention = {k: Token.as_number(f'${{local.retention["{k}"]}}') for k in model.DEFAULT_RETENTION_DAYS}
        # Buckets may be emptied on destroy only on the local emulator; elsewhere a destroy keeps data.
        self.is_local = '${var.environment == "local"}'

    def _local(self, name: str, expression: str) -> str:
        TerraformLocal(self, name, expression)
        return "${local.%s}" % name
