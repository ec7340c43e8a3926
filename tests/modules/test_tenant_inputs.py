"""modules/tenant_inputs.py: the module's variables, their defaults, validations and derived locals."""
from __future__ import annotations

import dataclasses
import re

import tenant_model as model

INTERFACE_TYPES = {
    "tenant_id": "string", "region": "string", "account_id": "string", "data_classification": "list(string)",
    "vpc_ids": "list(string)", "tags": "map(string)", "environment": "string", "cost_center": "string",
    "eks_cluster_name": "string", "eks_oidc_provider_arn": "string", "emr_namespace": "string",
    "retention_days": "map(number)", "admin_principal_arns": "list(string)",
    "streams": "list(string)",  # issue 10: streaming ingestion (modules/stream_ingest.py)
    "shared_gateway_endpoint_ids": "map(string)", "shared_interface_endpoint_ids": "map(string)",  # shared network
    # issue 29: table maintenance on a schedule (modules/maintenance_schedule.py)
    "maintenance_schedule": 'object({enabled = optional(bool, false), schedule_expression = optional(string, '
                            '"cron(0 3 ? * SUN *)"), timezone = optional(string, "UTC"), '
                            'flexible_window_minutes = optional(number, 60)})',
    # issue 44: Lake Formation (modules/lake_formation.py)
    "lake_formation": "object({personal_data_reader_arns = optional(list(string), [])})",
    # issue 54: the pipeline's orchestration and alerts (infra/orchestration.py)
    "orchestration": "object({enabled = optional(bool, false), alert_subscriptions = optional(list(object("
                     "{protocol = string, endpoint = string})), [])})",
}


def test_variables_are_the_tenant_config_fields_with_interface_types(tenant_module):
    variables = tenant_module["variable"]
    assert set(variables) == {f.name for f in dataclasses.fields(model.TenantConfig)}
    assert {name: v["type"] for name, v in variables.items()} == INTERFACE_TYPES
    assert all(v.get("description") for v in variables.values())


def test_defaults_match_the_python_model(tenant_module):
    variables = tenant_module["variable"]
    defaults = {f.name: f.default for f in dataclasses.fields(model.TenantConfig)
                if f.default is not dataclasses.MISSING}
    assert variables["environment"]["default"] == defaults["environment"] == "local"
    assert variables["cost_center"]["default"] == defaults["cost_center"] == "data-platform"
    assert variables["eks_cluster_name"]["default"] == defaults["eks_cluster_name"] == "tenantlake"
    assert variables["eks_oidc_provider_arn"]["default"] == "" and variables["emr_namespace"]["default"] == ""
    assert variables["tags"]["default"] == {} and variables["retention_days"]["default"] == {}
    assert variables["admin_principal_arns"]["default"] == []
    assert variables["streams"]["default"] == [] and defaults["streams"] == ()
    assert variables["vpc_ids"]["default"] == [] and defaults["vpc_ids"] == ()
    assert variables["shared_gateway_endpoint_ids"]["default"] == {} == variables["shared_interface_endpoint_ids"]["default"]
    assert variables["maintenance_schedule"]["default"] == {} == model.TenantConfig("t", "r", "a", ()).maintenance_schedule
    assert variables["lake_formation"]["default"] == {} == model.TenantConfig("t", "r", "a", ()).lake_formation
    assert model.LAKE_FORMATION_DEFAULTS == {"personal_data_reader_arns": []}
    for required in model.REQUIRED:
        assert "default" not in variables[required], required


def test_validation_regexes_come_from_the_model_constants(tenant_module):
    conditions = {name: " ".join(v["condition"] for v in var.get("validation", []))
                  for name, var in tenant_module["variable"].items()}
    for name, pattern in [("tenant_id", model.TENANT_ID_RE), ("region", model.REGION_RE),
                          ("account_id", model.ACCOUNT_ID_RE), ("vpc_ids", model.VPC_ID_RE),
                          ("eks_cluster_name", model.EKS_CLUSTER_NAME_RE), ("emr_namespace", model.K8S_NAMESPACE_RE),
                          ("eks_oidc_provider_arn", model.OIDC_PROVIDER_ARN_RE),
                          ("admin_principal_arns", model.ADMIN_PRINCIPAL_ARN_RE),
                          ("lake_formation", model.LF_READER_ARN_RE),
                          ("shared_gateway_endpoint_ids", model.VPC_ENDPOINT_ID_RE)]:
        assert f'regex("{pattern}"' in conditions[name], name
        assert "\\" not in pattern, f"{name}: a backslash would need HCL escaping"
    for c in model.CLASSIFICATIONS:
        assert f'"{c}"' in conditions["data_classification"]


def test_every_validation_message_names_its_input(tenant_module):
    for name, var in tenant_module["variable"].items():
        for validation in var.get("validation", []):
            assert validation["error_message"].startswith(f"{name}: "), validation
            assert "\n" not in validation["error_message"]


def test_gdpr_rule_is_a_cross_variable_validation_on_region(tenant_module):
    [gdpr] = [v for v in tenant_module["variable"]["region"]["validation"] if "gdpr" in v["condition"]]
    assert gdpr["condition"] == '${!contains(var.data_classification, "gdpr") || startswith(var.region, "eu-")}'
    assert gdpr["error_message"] == "region: ${var.region} is outside the EU but data_classification includes gdpr"
    # Same text as the Python rule.
    assert model.RULE_TEXTS["gdpr"].format(region="us-east-1") in str(
        _python_error(region="us-east-1", data_classification=["gdpr"]))


def test_locals_derive_tags_retention_namespace_from_the_model(tenant_module):
    local = tenant_module["locals"]
    assert local["standard_tags"] == {
        "tenant": "${var.tenant_id}", "data_classification": '${join("-", sort(var.data_classification))}',
        "environment": "${var.environment}", "cost_center": "${var.cost_center}"}
    assert local["resource_tags"] == "${merge(var.tags, local.standard_tags)}"  # the standard tags win
    assert local["retention_defaults"] == model.DEFAULT_RETENTION_DAYS
    assert local["retention"] == "${merge(local.retention_defaults, var.retention_days)}"
    assert local["namespace"] == '${var.emr_namespace != "" ? var.emr_namespace : "emr-${var.tenant_id}"}'
    assert re.fullmatch(r'\$\{var\.eks_oidc_provider_arn != "" \? var\.eks_oidc_provider_arn : "arn:aws:iam::'
                        r'\$\{var\.account_id\}:oidc-provider/oidc\.eks\.\$\{var\.region\}\.amazonaws\.com/id/'
                        r'\$\{upper\(var\.eks_cluster_name\)\}"\}', local["oidc_provider_arn"])


def _python_error(**overrides) -> Exception:
    inputs = {"tenant_id": "acme", "region": "eu-west-1", "account_id": "123456789012",
              "data_classification": ["internal"], "vpc_ids": ["vpc-0123456789abcdef0"], **overrides}
    try:
        model.from_inputs(inputs)
    except model.TenantConfigError as exc:
        return exc
    raise AssertionError("no error")
