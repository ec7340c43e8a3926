"""modules/inventory.py: the lake's S3 Inventory (daily, Parquet, every version, SSE-KMS with the tenant key
into the log bucket) and the two grants S3 needs to deliver it."""
from __future__ import annotations

from modules.inventory import DEFAULT_FIELDS, LakeInventoryConfig
from tests.modules.helpers import json_policy_statements, resource

LAKE = "arn:${data.aws_partition.inputs_partition.partition}:s3:::${var.tenant_id}-${var.region}-lake"


def test_documented_defaults():
    cfg = LakeInventoryConfig(bucket="b", destination_bucket_arn="arn:aws:s3:::d", account_id="1", kms_key_arn="k")
    assert (cfg.name, cfg.prefix, cfg.frequency, cfg.included_object_versions, cfg.report_format) == (
        "lake-daily", "inventory", "Daily", "All", "Parquet")
    assert tuple(cfg.optional_fields) == DEFAULT_FIELDS == (
        "Size", "LastModifiedDate", "StorageClass", "ETag", "IsMultipartUploaded", "EncryptionStatus")


def test_lake_inventory_is_daily_parquet_of_every_version_into_the_log_bucket_with_the_tenant_key(tenant_module):
    inventory = resource(tenant_module, "aws_s3_bucket_inventory", "lake_inventory_inventory")
    assert inventory["bucket"] == "${aws_s3_bucket.lake_bucket.id}"
    assert (inventory["name"], inventory["enabled"], inventory["included_object_versions"]) == ("lake-daily", True, "All")
    assert inventory["schedule"] == {"frequency": "Daily"}
    assert inventory["optional_fields"] == list(DEFAULT_FIELDS)
    destination = inventory["destination"]["bucket"]
    assert destination["bucket_arn"] == "${aws_s3_bucket.log_bucket_bucket.arn}"
    assert (destination["format"], destination["prefix"], destination["account_id"]) == (
        "Parquet", "inventory", "${var.account_id}")
    assert destination["encryption"] == {"sse_kms": {"key_id": "${aws_kms_key.kms_key.arn}"}}
    # S3 checks its grant on the destination when the configuration is put: the log bucket's policy first.
    assert inventory["depends_on"] == ["aws_s3_bucket_policy.log_policy_policy"]
    output = tenant_module["output"]["inventory"]["value"]
    assert output == {"id": "lake-daily", "bucket": "${aws_s3_bucket.log_bucket_bucket.bucket}", "prefix": "inventory"}


def test_s3_may_deliver_the_lakes_reports_only_under_the_prefix_and_encrypt_them_with_the_key(tenant_module):
    log_policy = json_policy_statements(resource(tenant_module, "aws_s3_bucket_policy", "log_policy_policy")["policy"])
    delivery = log_policy["S3InventoryDelivery"]
    assert delivery["Effect"] == "Allow" and delivery["Principal"] == {"Service": "s3.amazonaws.com"}
    assert delivery["Action"] == ["s3:PutObject"]
    assert delivery["Resource"] == "${aws_s3_bucket.log_bucket_bucket.arn}/inventory/*"
    assert delivery["Condition"] == {"ArnLike": {"aws:SourceArn": [LAKE]},
                                     "StringEquals": {"aws:SourceAccount": ["${var.account_id}"],
                                                      "s3:x-amz-acl": ["bucket-owner-full-control"]}}
    key_policy = json_policy_statements(resource(tenant_module, "aws_kms_key", "kms_key")["policy"])
    grant = key_policy["S3InventoryEncryptsReports"]
    assert grant["Principal"] == {"Service": "s3.amazonaws.com"} and grant["Action"] == ["kms:GenerateDataKey"]
    assert grant["Condition"] == {"StringEquals": {"aws:SourceAccount": ["${var.account_id}"]},
                                  "ArnLike": {"aws:SourceArn": [LAKE]}}
