"""modules/stream_ingest.py: per streamed dataset, a KMS-encrypted Kinesis stream, a Firehose into
landing/<dataset>/ with SSE-KMS and an error prefix, and least-privilege IAM for both ends."""
from __future__ import annotations

import pytest

import tenant_model as model
from modules.stream_ingest import KINESIS_PUT_ACTIONS, KINESIS_READ_ACTIONS
from tests.modules.helpers import condition, document_statements, resource

LAKE = "${aws_s3_bucket.lake_bucket.arn}"
KEY = "${aws_kms_key.kms_key.arn}"
STREAM = "${aws_kinesis_stream.streams_stream[each.key].arn}"
FOR_EACH = "${toset(var.streams)}"


def test_every_stream_resource_is_one_per_streamed_dataset(tenant_module):
    per_stream = [("aws_kinesis_stream", "streams_stream"), ("aws_kinesis_firehose_delivery_stream", "streams_delivery"),
                  ("aws_iam_role", "streams_firehose_role"), ("aws_iam_role_policy", "streams_firehose_policy"),
                  ("aws_iam_role_policy", "streams_producer_policy")]
    for type_, name in per_stream:
        assert resource(tenant_module, type_, name)["for_each"] == FOR_EACH, name
    for name in ("streams_firehose_permissions", "streams_producer_permissions"):
        assert tenant_module["data"]["aws_iam_policy_document"][name]["for_each"] == FOR_EACH


def test_streams_variable_defaults_to_none_and_is_validated(tenant_module):
    variable = tenant_module["variable"]["streams"]
    assert variable["type"] == "list(string)" and variable["default"] == []
    [check] = variable["validation"]
    assert 'contains(["iot", "clickstream", "inventory"], s)' in check["condition"]
    assert "length(distinct(var.streams)) == length(var.streams)" in check["condition"]
    assert check["error_message"] == "streams: every entry must be one of iot, clickstream, inventory, each once"
    assert model.STREAM_DATASETS == ("iot", "clickstream", "inventory")


def test_kinesis_stream_is_encrypted_with_the_tenant_key(tenant_module):
    stream = resource(tenant_module, "aws_kinesis_stream", "streams_stream")
    assert stream["name"] == model.STREAM_NAME_TEMPLATES["kinesis_stream"].format(
        tenant_id="${var.tenant_id}", dataset="${each.value}") == "${var.tenant_id}-lake-${each.value}"
    assert stream["encryption_type"] == "KMS" and stream["kms_key_id"] == KEY
    assert stream["shard_count"] == 1 and stream["retention_period"] == 24
    assert stream["stream_mode_details"] == {"stream_mode": "PROVISIONED"}
    assert stream["tags"] == "${local.resource_tags}"


def test_firehose_reads_its_stream_and_delivers_into_landing_with_sse_kms(tenant_module):
    delivery = resource(tenant_module, "aws_kinesis_firehose_delivery_stream", "streams_delivery")
    assert delivery["name"] == "${var.tenant_id}-lake-${each.value}-to-landing"
    assert delivery["kinesis_source_configuration"] == {
        "kinesis_stream_arn": STREAM, "role_arn": "${aws_iam_role.streams_firehose_role[each.key].arn}"}
    s3 = delivery["extended_s3_configuration"]
    assert s3["bucket_arn"] == LAKE and s3["kms_key_arn"] == KEY
    assert s3["prefix"] == "landing/${each.value}/"
    assert s3["error_output_prefix"] == "quarantine/firehose/${each.value}/!{firehose:error-output-type}/"
    assert (s3["buffering_interval"], s3["buffering_size"]) == (model.STREAM_BUFFER_SECONDS, model.STREAM_BUFFER_MIB) == (60, 1)
    assert s3["file_extension"] == ".jsonl" and s3["compression_format"] == "UNCOMPRESSED"
    assert s3["processing_configuration"] == {"enabled": True, "processors": [{"type": "AppendDelimiterToRecord"}]}
    assert delivery["tags"] == "${local.resource_tags}"
    assert delivery["depends_on"] == ["aws_iam_role_policy.streams_firehose_policy"]


def test_firehose_role_is_trusted_by_firehose_of_the_tenant_account_only(tenant_module):
    role = resource(tenant_module, "aws_iam_role", "streams_firehose_role")
    assert role["name"] == "${var.tenant_id}-lake-${each.value}-firehose" and role["tags"] == "${local.resource_tags}"
    [trust] = document_statements(tenant_module, "streams_firehose_trust").values()
    assert trust["actions"] == ["sts:AssumeRole"]
    assert trust["principals"] == [{"type": "Service", "identifiers": ["firehose.amazonaws.com"]}]
    assert condition(trust, "StringEquals", "aws:SourceAccount") == ["${var.account_id}"]


def test_firehose_may_only_read_its_stream_and_write_its_own_prefixes(tenant_module):
    s = document_statements(tenant_module, "streams_firehose_permissions")
    assert list(s) == ["ReadOwnStream", "LocateBucket", "ListOwnPrefixes", "WriteOwnPrefixes",
                       "EncryptOwnObjectsWithTenantKey", "DecryptOwnStream"]
    assert s["ReadOwnStream"]["actions"] == list(KINESIS_READ_ACTIONS) and s["ReadOwnStream"]["resources"] == [STREAM]
    own_objects = [f"{LAKE}/landing/${{each.value}}/*", f"{LAKE}/quarantine/firehose/${{each.value}}/*"]
    assert s["WriteOwnPrefixes"]["actions"] == ["s3:PutObject", "s3:AbortMultipartUpload"]
    assert s["WriteOwnPrefixes"]["resources"] == own_objects
    assert condition(s["ListOwnPrefixes"], "StringLike", "s3:prefix") == [
        "landing/${each.value}/", "landing/${each.value}/*",
        "quarantine/firehose/${each.value}/", "quarantine/firehose/${each.value}/*"]
    encrypt = s["EncryptOwnObjectsWithTenantKey"]
    assert encrypt["resources"] == [KEY] and encrypt["actions"] == ["kms:GenerateDataKey", "kms:Decrypt"]
    assert condition(encrypt, "StringEquals", "kms:ViaService") == ["s3.${var.region}.amazonaws.com"]
    # The lake has S3 Bucket Keys on: S3 asks KMS with the bucket's ARN as encryption context, not the object's.
    assert condition(encrypt, "StringLike", "kms:EncryptionContext:aws:s3:arn") == [LAKE, *own_objects]
    decrypt = s["DecryptOwnStream"]
    assert decrypt["actions"] == ["kms:Decrypt"] and decrypt["resources"] == [KEY]
    assert condition(decrypt, "StringEquals", "kms:EncryptionContext:aws:kinesis:arn") == [STREAM]
    policy = resource(tenant_module, "aws_iam_role_policy", "streams_firehose_policy")
    assert policy["role"] == "${aws_iam_role.streams_firehose_role[each.key].id}"
    assert policy["policy"] == "${data.aws_iam_policy_document.streams_firehose_permissions[each.key].json}"


def test_producers_may_put_into_the_stream_through_the_ingest_writer_role(tenant_module):
    policy = resource(tenant_module, "aws_iam_role_policy", "streams_producer_policy")
    assert policy["role"] == "${aws_iam_role.roles_ingest_writer.id}" and policy["name"] == "stream-${each.value}"
    s = document_statements(tenant_module, "streams_producer_permissions")
    assert s["PutOwnStream"]["actions"] == list(KINESIS_PUT_ACTIONS) and s["PutOwnStream"]["resources"] == [STREAM]
    assert s["EncryptOwnStreamWithTenantKey"]["actions"] == ["kms:GenerateDataKey"]
    assert condition(s["EncryptOwnStreamWithTenantKey"], "StringEquals", "kms:ViaService") == [
        "kinesis.${var.region}.amazonaws.com"]


@pytest.mark.parametrize("output,expression", [
    ("kinesis_stream_names", "${tomap({ for k, s in aws_kinesis_stream.streams_stream : k => s.name })}"),
    ("firehose_delivery_stream_names",
     "${tomap({ for k, d in aws_kinesis_firehose_delivery_stream.streams_delivery : k => d.name })}"),
])
def test_stream_outputs_map_dataset_to_name(tenant_module, output, expression):
    assert tenant_module["output"][output]["value"] == expression
    assert tenant_module["output"][output]["description"]


def test_vended_credentials_and_the_ingest_writer_role_read_one_model(tenant_module):
    """spark_jobs.landing.creds (which runs on EMR, without modules/) and the role take their bounds from tenant_model."""
    from spark_jobs.landing import creds

    role = tenant_module["resource"]["aws_iam_role"]["roles_ingest_writer"]
    assert role["max_session_duration"] == creds.TTL_MAX_SECONDS
    document = tenant_module["data"]["aws_iam_policy_document"]["roles_ingest_writer_permissions"]
    put = next(s for s in document["statement"] if s["sid"] == "PutOnlyPrefixes")
    assert put["resources"] == [f"${{aws_s3_bucket.lake_bucket.arn}}/{p}/*" for p in creds.INGEST_ALLOWED_PREFIXES]


def test_firehose_role_arns_render_the_role_name_template():
    from modules.stream_ingest import firehose_role_arns

    assert firehose_role_arns("var.streams", "var.tenant_id", "data.p.partition", "var.account_id") == (
        '[for s in var.streams : "arn:${data.p.partition}:iam::${var.account_id}:role/${var.tenant_id}-lake-${s}-firehose"]')
    # The same names as the role resources (for_each over the same var.streams).
    from tenant_model import stream_name

    assert stream_name("firehose_role", "iot", tenant_id="acme") == "acme-lake-iot-firehose"
