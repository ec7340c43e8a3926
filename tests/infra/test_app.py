"""infra/app.py: the composed stack: outputs, names, tags, skips, no CDKTF artefacts."""
from __future__ import annotations

import re

import tenant_model as model
from modules.skips import MAX_SKIPS

INTERFACE_OUTPUTS = {
    "tenant_id", "region", "lake_bucket_name", "lake_bucket_arn", "log_bucket_name", "kms_key_arn", "kms_key_alias",
    "job_execution_role_arn", "ingest_writer_role_arn", "consumer_role_arn", "emr_virtual_cluster_id",
    "emr_namespace", "log_group_name", "gateway_endpoint_ids", "interface_endpoint_ids", "lake_prefixes",
    "kinesis_stream_names", "firehose_delivery_stream_names",  # issue 10 (modules/stream_ingest.py)
    "glue_database_names", "athena_workgroup_name",  # the table catalog on AWS (modules/glue_databases.py, athena_workgroup.py)
    "data_classification",  # the jobs require subject_keys for pii/gdpr tenants (spark_jobs/README.md, "Erasure")
    "erasure_role_arn",  # the executionRoleArn of erase runs (modules/job_roles.py ROLE_ACCESS["erasure"])
    # issue 29: table maintenance (modules/maintenance_schedule.py; the deploy's snapshot retention)
    "emr_virtual_cluster_arn", "retention_days", "maintenance_scheduler_role_arn", "maintenance_schedule_name",
    "inventory",  # issue 30: the lake's S3 Inventory (modules/inventory.py), which `usage` reads
    "lake_formation",  # issue 44: the LF-tag keys the jobs tag columns with (modules/lake_formation.py)
    "orchestration",  # issue 54: the state machine, triggers, alerts and freshness alarms (infra/orchestration.py)
    "personal_data_reader",  # issue 52: the readers' workgroup and the managed policy they attach
}


def test_outputs_are_the_interface_and_described(tenant_module):
    outputs = tenant_module["output"]
    assert set(outputs) == INTERFACE_OUTPUTS
    assert all(o.get("description") for o in outputs.values())
    assert outputs["lake_prefixes"]["value"] == list(model.LAKE_PREFIXES) == [
        "landing", "bronze", "silver", "gold", "quarantine", "reports", "checkpoints", "artifacts", "logs", "athena"]
    assert outputs["glue_database_names"]["value"] == {
        layer: f"${{aws_glue_catalog_database.catalog_{layer}.name}}" for layer in model.CATALOG_LAYERS}
    assert outputs["lake_bucket_name"]["value"] == "${aws_s3_bucket.lake_bucket.bucket}"
    assert outputs["data_classification"]["value"] == "${var.data_classification}"
    assert outputs["erasure_role_arn"]["value"] == "${aws_iam_role.roles_erasure.arn}"
    assert outputs["lake_formation"]["value"] == {
        "classification_tag": "${aws_lakeformation_lf_tag.lf_tag_classification.key}",
        "layer_tag": "${aws_lakeformation_lf_tag.lf_tag_layer.key}", "personal": "pii", "not_personal": "none",
        "data_access_role_arn": "${aws_iam_role.lf_role.arn}",
        "registered_locations": {"gold": "${aws_lakeformation_resource.lf_location_gold.arn}"},
        "personal_data_readers": "${var.lake_formation.personal_data_reader_arns}"}
    # The tenant's own endpoints and a shared network's (tests/modules/test_vpc_endpoints.py, test_synth.py)
    assert outputs["gateway_endpoint_ids"]["value"] == (
        "${merge(var.shared_gateway_endpoint_ids, tomap({ for k, e in aws_vpc_endpoint.endpoints_gateway : e.vpc_id => e.id }))}")
    assert outputs["interface_endpoint_ids"]["value"] == (
        "${merge(var.shared_interface_endpoint_ids, tomap({ for k, e in aws_vpc_endpoint.endpoints_interface : "
        '"${e.vpc_id}.${local.interface_endpoints[k].service}" => e.id }))}')


def test_every_element_has_a_readable_address(tenant_module):
    for kind in ("resource", "data"):
        for type_, blocks in tenant_module[kind].items():
            for name, body in blocks.items():
                assert re.fullmatch(r"[a-z][a-z0-9_]*", name), (type_, name)
                assert body["//"]["metadata"]["uniqueId"] == name


def test_every_resource_with_tags_uses_the_standard_tags(tenant_module):
    tagged = [(t, n, b["tags"]) for t, blocks in tenant_module["resource"].items() for n, b in blocks.items()
              if "tags" in b]
    assert len(tagged) >= 12
    for type_, name, tags in tagged:
        assert "local.resource_tags" in tags, (type_, name)


def test_names_follow_the_model_templates(tenant_module):
    r = tenant_module["resource"]
    tf = {"tenant_id": "${var.tenant_id}", "region": "${var.region}"}
    assert r["aws_s3_bucket"]["lake_bucket"]["bucket"] == model.NAME_TEMPLATES["lake_bucket"].format(**tf)
    assert r["aws_s3_bucket"]["log_bucket_bucket"]["bucket"] == model.NAME_TEMPLATES["log_bucket"].format(**tf)
    assert r["aws_kms_alias"]["kms_alias"]["name"] == model.NAME_TEMPLATES["kms_alias"].format(**tf)
    assert r["aws_cloudwatch_log_group"]["log_group_log_group"]["name"] == model.NAME_TEMPLATES["log_group"].format(**tf)
    assert r["aws_athena_workgroup"]["athena_workgroup"]["name"] == model.NAME_TEMPLATES["athena_workgroup"].format(**tf)
    key = '${replace(var.tenant_id, "-", "_")}'
    for layer in model.CATALOG_LAYERS:
        database = r["aws_glue_catalog_database"][f"catalog_{layer}"]
        assert database["name"] == model.glue_database_name(layer, key) == f"{key}_{layer}"
        assert database["location_uri"] == f"s3://{model.NAME_TEMPLATES['lake_bucket'].format(**tf)}/{layer}/"


def test_athena_workgroup_enforces_encrypted_results_under_the_lake(tenant_module):
    workgroup = tenant_module["resource"]["aws_athena_workgroup"]["athena_workgroup"]
    config = workgroup["configuration"]
    assert config["enforce_workgroup_configuration"] is True and config["bytes_scanned_cutoff_per_query"] > 0
    results = config["result_configuration"]
    assert results["output_location"] == "s3://${var.tenant_id}-${var.region}-lake/athena/consumer/"
    assert results["encryption_configuration"] == {"encryption_option": "SSE_KMS",
                                                    "kms_key_arn": "${aws_kms_key.kms_key.arn}"}
    assert workgroup["force_destroy"] == '${var.environment == "local"}'


def test_checkov_skips_are_few_and_justified(tenant_module):
    skips = [(name, check, reason) for blocks in tenant_module["resource"].values() for name, body in blocks.items()
             for check, reason in body["//"].get("checkov", {}).get("skip", {}).items()]
    assert len(skips) <= MAX_SKIPS == 3
    assert {(n, c) for n, c, _ in skips} == {("lake_bucket", "CKV_AWS_144"), ("log_bucket_bucket", "CKV_AWS_144"),
                                             ("log_bucket_bucket", "CKV_AWS_145")}
    assert all(len(reason) > 40 for _, _, reason in skips)


def test_resource_inventory(tenant_module):
    counts = {t: len(b) for t, b in tenant_module["resource"].items()}
    assert counts == {
        "aws_athena_workgroup": 2, "aws_glue_catalog_database": 2,  # the consumer's and the readers'; one per table layer
        "aws_iam_policy": 1,  # the readers of personal data's managed policy
        "aws_cloudwatch_log_group": 1 + 1, "aws_emrcontainers_virtual_cluster": 1,  # + the state machine's (count)
        # + per-stream (for_each) Firehose role, 2 policies; + the maintenance scheduler's role and policy (count);
        # + Lake Formation's data-access role and policy; + the orchestration's: the state machine's, the schedules'
        # and the arrival rules' roles and policies, and the job role's signal policy (count)
        "aws_iam_role": 4 + 1 + 1 + 1 + 3, "aws_iam_role_policy": 4 + 2 + 1 + 1 + 4,
        "aws_scheduler_schedule": 1 + 1,  # + the pipeline's (for_each over the datasets with trigger.schedule)
        # issue 54 (infra/orchestration.py): the state machine, the alerts topic, its policy and subscriptions, the
        # arrival and alert rules and their targets (for_each), the dead-letter and local alert queues and their
        # policies, the freshness alarms (for_each)
        "aws_sfn_state_machine": 1, "aws_sns_topic": 1, "aws_sns_topic_policy": 1, "aws_sns_topic_subscription": 1,
        "aws_cloudwatch_event_rule": 2, "aws_cloudwatch_event_target": 3, "aws_sqs_queue": 2, "aws_sqs_queue_policy": 2,
        "aws_cloudwatch_metric_alarm": 1,
        "aws_kinesis_stream": 1, "aws_kinesis_firehose_delivery_stream": 1, "aws_kms_alias": 1, "aws_kms_key": 1, "aws_s3_bucket": 2,
        "aws_s3_bucket_inventory": 1, "aws_s3_bucket_lifecycle_configuration": 2, "aws_s3_bucket_logging": 1,  # the lake only: the log bucket does not log itself
        "aws_s3_bucket_notification": 2,
        "aws_s3_bucket_ownership_controls": 2, "aws_s3_bucket_policy": 2, "aws_s3_bucket_public_access_block": 2,
        "aws_s3_bucket_server_side_encryption_configuration": 2, "aws_s3_bucket_versioning": 2,
        "aws_security_group": 1, "aws_vpc_endpoint": 2, "aws_vpc_security_group_ingress_rule": 1,
        # modules/lake_formation.py: two tags, a tag set per database, the gold location, and the grants
        # (modules.lake_formation.GRANTS, the job role's location and tag grants); the account's settings are the
        # platform unit's (infra/platform_lake_formation_app.py)
        "aws_lakeformation_lf_tag": 2, "aws_lakeformation_resource_lf_tags": 2,
        "aws_lakeformation_resource": 1, "aws_lakeformation_permissions": 8 + 2}
