"""tenant_model/: the tenant model's rules, names and defaults (plain Python, no cdktf)."""
from __future__ import annotations

import pytest

import tenant_model as model

GOOD = {"tenant_id": "acme", "region": "eu-west-1", "account_id": "123456789012",
        "data_classification": ["internal", "gdpr"], "vpc_ids": ["vpc-0123456789abcdef0"]}


def _error(**overrides) -> model.TenantConfigError:
    with pytest.raises(model.TenantConfigError) as info:
        model.from_inputs({**GOOD, **overrides})
    return info.value


def test_valid_inputs_and_derived_names():
    cfg = model.from_inputs(GOOD)
    assert cfg.lake_bucket_name == "acme-eu-west-1-lake" == model.lake_bucket_name("acme", "eu-west-1")
    assert cfg.log_bucket_name == "acme-eu-west-1-lake-logs"
    assert cfg.kms_alias == "alias/acme-lake" and cfg.namespace == "emr-acme"
    assert cfg.name("job_execution_role") == "acme-emr-job-execution"
    assert cfg.name("erasure_role") == "acme-emr-erasure"
    assert cfg.name("log_group") == "/tenantlake/acme/emr"
    assert cfg.oidc_provider_arn == "arn:aws:iam::123456789012:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/TENANTLAKE"
    assert cfg.effective_retention_days == {"landing": 30, "bronze": 365, "quarantine": 30, "logs": 90, "snapshots": 7}
    assert cfg.effective_maintenance_schedule == {"enabled": False, "schedule_expression": "cron(0 3 ? * SUN *)",
                                                  "timezone": "UTC", "flexible_window_minutes": 60}
    assert cfg.name("maintenance_schedule") == "acme-lake-maintenance"
    assert cfg.name("maintenance_scheduler_role") == "acme-maintenance-scheduler"
    assert cfg.standard_tags() == {"tenant": "acme", "data_classification": "gdpr-internal",
                                   "environment": "local", "cost_center": "data-platform"}


MAX_IAM_ROLE_NAME = 64


def test_role_names_of_the_longest_tenant_id_fit_iam():
    longest = model.from_inputs({**GOOD, "tenant_id": "a" * 24, "region": "eu-central-1"})
    roles = [kind for kind in model.NAME_TEMPLATES if kind.endswith("_role")]
    assert {"job_execution_role", "ingest_writer_role", "consumer_role", "erasure_role"} <= set(roles)
    names = [longest.name(kind) for kind in roles]
    names += [longest.stream_name("firehose_role", dataset) for dataset in model.STREAM_DATASETS]
    assert max(len(name) for name in names) <= MAX_IAM_ROLE_NAME, names


def test_standard_tags_win_over_user_tags():
    cfg = model.from_inputs({**GOOD, "tags": {"tenant": "spoof", "team": "data"}})
    assert cfg.standard_tags()["tenant"] == "acme" and cfg.standard_tags()["team"] == "data"


def test_comma_separated_strings_are_accepted_for_lists():
    cfg = model.from_inputs({**GOOD, "data_classification": '"internal", "pii"'})
    assert cfg.data_classification == ("internal", "pii")


@pytest.mark.parametrize("overrides,field,text", [
    ({"tenant_id": "Acme"}, "tenant_id", "must be 3-24 characters"),
    ({"tenant_id": "ab"}, "tenant_id", "must be 3-24 characters"),
    ({"tenant_id": "a" * 25}, "tenant_id", "must be 3-24 characters"),
    ({"region": "mars"}, "region", "is not an AWS region name"),
    ({"region": "us-east-1"}, "region", "us-east-1 is outside the EU but data_classification includes gdpr"),
    ({"account_id": "123"}, "account_id", "must be exactly 12 digits"),
    ({"data_classification": []}, "data_classification", "must name at least one"),
    ({"data_classification": ["secret"]}, "data_classification", "'secret' is not one of"),
    ({"vpc_ids": []}, "vpc_ids", "the tenant needs a network: its own vpc_ids, or a shared network's endpoints"),
    ({"vpc_ids": [], "shared_gateway_endpoint_ids": {"vpc-0123456789abcdef0": "gw-1"}}, "shared_gateway_endpoint_ids",
     "'vpc-0123456789abcdef0' = 'gw-1': must map a VPC id"),
    ({"vpc_ids": [], "shared_gateway_endpoint_ids": {"vpc-0123456789abcdef0": "vpce-0123456789abcdef0"},
      "shared_interface_endpoint_ids": {"vpc-0123456789abcdef0": "vpce-0123456789abcdef1"}},
     "shared_interface_endpoint_ids", '"<VPC id>.<service>" (interface)'),
    ({"shared_gateway_endpoint_ids": {"vpc-0123456789abcdef0": "vpce-0123456789abcdef0"}}, "vpc_ids",
     "vpc-0123456789abcdef0: a VPC in both vpc_ids and shared_gateway_endpoint_ids would get a second S3 gateway"),
    ({"shared_gateway_endpoint_ids": ["vpce-0123456789abcdef0"]}, "shared_gateway_endpoint_ids", "must be a map"),
    ({"vpc_ids": ["vpc-xyz"]}, "vpc_ids", "is not a VPC id"),
    ({"vpc_ids": ["vpc-12345678", "vpc-12345678"]}, "vpc_ids", "more than once"),
    ({"environment": "qa"}, "environment", "'qa' is not one of local, dev, staging, prod"),
    ({"eks_cluster_name": "-bad"}, "eks_cluster_name", "not a valid EKS cluster name"),
    ({"eks_oidc_provider_arn": "nope"}, "eks_oidc_provider_arn", "not an IAM OIDC provider ARN"),
    ({"emr_namespace": "Bad_NS"}, "emr_namespace", "not a Kubernetes namespace name"),
    ({"retention_days": {"gold": 5}}, "retention_days", "'gold' is not one of"),
    ({"retention_days": {"landing": 0}}, "retention_days", "from 1 to 3650"),
    ({"retention_days": {"landing": True}}, "retention_days", "from 1 to 3650"),
    ({"retention_days": {"bronze": 90}}, "retention_days", "bronze must be more than 90 days"),
    ({"retention_days": {"logs": 100}}, "retention_days", "CloudWatch Logs retention period"),
    ({"admin_principal_arns": ["deployer"]}, "admin_principal_arns", "IAM or STS principal ARN"),
    ({"maintenance_schedule": {"enable": True}}, "maintenance_schedule", "'enable': keys must be among enabled, "),
    ({"maintenance_schedule": {"enabled": "yes"}}, "maintenance_schedule", "enabled a bool"),
    ({"maintenance_schedule": {"schedule_expression": "weekly"}}, "maintenance_schedule", "cron(...) or rate(...)"),
    ({"maintenance_schedule": {"timezone": "Europe Dublin"}}, "maintenance_schedule", "an IANA name"),
    ({"maintenance_schedule": {"flexible_window_minutes": 2000}}, "maintenance_schedule", "0 (off) to 1440"),
    ({"maintenance_schedule": ["enabled"]}, "maintenance_schedule", "must be a map"),
    ({"tags": {"a": 1}}, "tags", "must map strings to strings"),
    ({"colour": "red"}, "colour", "unknown input"),
    ({"tenant_id": 7}, "tenant_id", "must be a string"),
])
def test_bad_inputs_give_one_line_errors_naming_the_field(overrides, field, text):
    err = _error(**overrides)
    assert err.field == field and text in str(err)
    assert "\n" not in str(err) and str(err).startswith("tenant '")


def test_missing_required_input():
    inputs = dict(GOOD)
    del inputs["account_id"]
    with pytest.raises(model.TenantConfigError, match=r"^tenant 'acme': account_id: is required$"):
        model.from_inputs(inputs)


def test_a_tenant_on_a_shared_network_lists_no_vpc_of_its_own():
    inputs = {k: v for k, v in GOOD.items() if k != "vpc_ids"}
    cfg = model.from_inputs({**inputs, "shared_gateway_endpoint_ids": {"vpc-0123456789abcdef0": "vpce-0123456789abcdef0"},
                             "shared_interface_endpoint_ids": {"vpc-0123456789abcdef0.kms": "vpce-0123456789abcdef1"}})
    assert cfg.vpc_ids == () and cfg.network_vpc_ids == ("vpc-0123456789abcdef0",)


def test_rule_texts_render_with_python_values_and_terraform_references():
    assert model.RULE_TEXTS["gdpr"].format(region="${var.region}") == \
        "${var.region} is outside the EU but data_classification includes gdpr"
    assert all("\\" not in p for p in (model.TENANT_ID_RE, model.REGION_RE, model.EKS_CLUSTER_NAME_RE))


def test_check_unique_rejects_duplicate_tenants():
    a = model.from_inputs(GOOD)
    with pytest.raises(model.TenantConfigError, match="more than one tenant"):
        model.check_unique([a, a])


@pytest.mark.parametrize("streams,text", [
    (["weather"], "streams: 'weather' is not one of iot, clickstream, inventory"),
    (["iot", "iot"], "streams: lists a dataset more than once"),
    ("iot", None),  # the seed's quoted-string shape is accepted, like data_classification
])
def test_streams_rule(streams, text):
    if text is None:
        assert model.from_inputs({**GOOD, "streams": streams}).streams == ("iot",)
        return
    with pytest.raises(model.TenantConfigError, match=f"^tenant 'acme': {text}$"):
        model.from_inputs({**GOOD, "streams": streams})


def test_streams_default_to_none_and_name_per_dataset():
    cfg = model.from_inputs(GOOD)
    assert cfg.streams == ()
    assert cfg.stream_name("kinesis_stream", "iot") == "acme-lake-iot"
    assert cfg.stream_name("delivery_stream", "iot") == "acme-lake-iot-to-landing"
    assert cfg.stream_name("firehose_role", "clickstream") == "acme-lake-clickstream-firehose"



def test_glue_database_names_are_glue_identifiers_and_one_to_one():
    import re

    names = {model.glue_database_name(layer, model.tenant_key(t)) for t in ("acme-eu", "acmeeu", "acme-e-u")
             for layer in model.CATALOG_LAYERS}
    assert len(names) == 6 and all(re.fullmatch(r"[a-z][a-z0-9_]*", n) for n in names)
    cfg = model.from_inputs({**GOOD, "tenant_id": "acme-eu"})
    assert cfg.glue_databases == {"silver": "acme_eu_silver", "gold": "acme_eu_gold"}
    assert cfg.name("athena_workgroup") == "acme-eu-lake"


# ---- Lake Formation (issue 44) ---------------------------------------------------------------------
def test_lake_formation_defaults_and_names():
    cfg = model.from_inputs(GOOD)
    assert cfg.effective_lake_formation == {"personal_data_reader_arns": []}
    assert cfg.name("lf_tag_classification") == "acme-classification" and cfg.name("lf_tag_layer") == "acme-layer"
    assert cfg.name("lake_formation_role") == "acme-lakeformation-access"
    assert model.LF_CLASSIFICATION_VALUES == ("pii", "none") and model.LF_CONSUMER_LAYERS == ("gold",)
    reader = "arn:aws:iam::123456789012:role/privacy-officer"
    cfg = model.from_inputs({**GOOD, "lake_formation": {"personal_data_reader_arns": [reader]}})
    assert cfg.effective_lake_formation == {"personal_data_reader_arns": [reader]}


RULE = ("keys must be among personal_data_reader_arns; personal_data_reader_arns "
        "IAM role or user ARNs like arn:aws:iam::123456789012:role/privacy-officer, each once")


@pytest.mark.parametrize("lake_formation,prefix", [
    ({"manage": True}, "'manage': "),
    ({"personal_data_reader_arns": ["arn:aws:sts::123456789012:assumed-role/x/y"]}, ""),
    ({"personal_data_reader_arns": ["arn:aws:iam::123456789012:role/x", "arn:aws:iam::123456789012:role/x"]}, ""),
    ({"personal_data_reader_arns": "arn:aws:iam::123456789012:role/x"}, ""),
])
def test_lake_formation_rule(lake_formation, prefix):
    error = _error(lake_formation=lake_formation)
    assert str(error) == f"tenant 'acme': lake_formation: {prefix}{RULE}"


def test_lake_formation_must_be_a_map():
    assert str(_error(lake_formation=True)) == "tenant 'acme': lake_formation: must be a map"


@pytest.mark.parametrize("manage", [True, False])
def test_a_tenant_that_still_sets_manage_settings_is_told_where_the_settings_went(manage):
    """The account's Lake Formation settings moved to a platform unit (issue 52): the old key, true or false, is
    refused in one line naming the unit of the tenant's region, not ignored."""
    error = _error(lake_formation={"manage_settings": manage})
    assert str(error) == (
        "tenant 'acme': lake_formation.manage_settings: the account's Lake Formation settings moved to the platform "
        "unit tenants/_platform/lake-formation-eu-west-1/ (tenants/README.md, \"Lake Formation settings\"), on which "
        "the tenant depends; remove manage_settings from the tenant's file")


def test_orchestration_is_off_by_default_and_subscriptions_are_checked():
    assert model.from_inputs(GOOD).effective_orchestration == {"enabled": False, "alert_subscriptions": []}
    on = model.from_inputs({**GOOD, "orchestration": {"enabled": True, "alert_subscriptions": [
        {"protocol": "email", "endpoint": "oncall@example.com"}, {"protocol": "sqs", "endpoint": "arn:aws:sqs:x"}]}})
    assert on.effective_orchestration["enabled"] is True
    rule = model.RULE_TEXTS["orchestration"].format(orchestration_keys="enabled, alert_subscriptions",
                                                    protocols=", ".join(model.ALERT_PROTOCOLS))
    for bad, prefix in (({"on": True}, "'on': "), ({"enabled": "yes"}, ""),
                        ({"alert_subscriptions": [{"protocol": "pager", "endpoint": "x"}]}, ""),
                        ({"alert_subscriptions": [{"protocol": "email", "endpoint": " "}]}, ""),
                        ({"alert_subscriptions": [{"protocol": "email"}]}, "")):
        assert str(_error(orchestration=bad)) == f"tenant 'acme': orchestration: {prefix}{rule}"
    assert str(_error(orchestration=True)) == "tenant 'acme': orchestration: must be a map"


def test_per_dataset_names_of_the_longest_tenant_and_packaged_datasets_fit_eventbridge():
    from spark_jobs.contract.model import packaged_contracts

    for contract in packaged_contracts():
        for kind in model.PIPELINE_NAME_TEMPLATES:
            assert len(model.pipeline_name(kind, contract.dataset, tenant_id="t" * 24)) <= model.MAX_RULE_NAME
    assert model.pipeline_name("arrival_rule", "iot", tenant_id="acme") == "acme-iot-arrival"
