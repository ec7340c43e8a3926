"""modules/lake_bucket.py: the lake bucket and its log bucket, every documented default."""
from __future__ import annotations

import pytest

from modules.lake_bucket import LakeBucketConfig
from tests.modules.helpers import resource

BUCKETS = {"lake": "${var.tenant_id}-${var.region}-lake", "log_bucket": "${var.tenant_id}-${var.region}-lake-logs"}


def test_documented_defaults():
    cfg = LakeBucketConfig(bucket_name="b", tags={})
    assert (cfg.kms_key_arn, cfg.log_bucket, cfg.log_prefix, cfg.force_destroy, cfg.eventbridge, cfg.purpose) == (
        None, None, None, False, True, "lake")


@pytest.mark.parametrize("prefix", BUCKETS)
def test_bucket_name_tags_and_local_only_force_destroy(tenant_module, prefix):
    bucket = resource(tenant_module, "aws_s3_bucket", f"{prefix}_bucket")
    assert bucket["bucket"] == BUCKETS[prefix]
    assert bucket["force_destroy"] == '${var.environment == "local"}'
    purpose = "lake" if prefix == "lake" else "access-logs"
    assert bucket["tags"] == f'${{merge(local.resource_tags, {{"bucket_purpose" = "{purpose}"}})}}'


@pytest.mark.parametrize("prefix", BUCKETS)
def test_versioning_public_access_block_ownership_notifications(tenant_module, prefix):
    ref = f"${{aws_s3_bucket.{prefix}_bucket.id}}"
    assert resource(tenant_module, "aws_s3_bucket_versioning", f"{prefix}_versioning")["versioning_configuration"] == {
        "status": "Enabled"}
    pab = resource(tenant_module, "aws_s3_bucket_public_access_block", f"{prefix}_public_access_block")
    assert pab["bucket"] == ref
    assert all(pab[k] is True for k in ("block_public_acls", "block_public_policy", "ignore_public_acls",
                                        "restrict_public_buckets"))
    ownership = resource(tenant_module, "aws_s3_bucket_ownership_controls", f"{prefix}_ownership")
    assert ownership["rule"] == {"object_ownership": "BucketOwnerEnforced"}
    notification = resource(tenant_module, "aws_s3_bucket_notification", f"{prefix}_notification")
    assert notification["eventbridge"] is True and notification["bucket"] == ref
    # No emulator workaround in the module: drift of the switch is planned back in every environment (the
    # emulator reports the switch, infra/local/moto_server.py).
    assert "lifecycle" not in notification


def test_lake_is_sse_kms_with_the_tenant_key_and_bucket_key(tenant_module):
    sse = resource(tenant_module, "aws_s3_bucket_server_side_encryption_configuration", "lake_encryption")
    assert sse["rule"] == [{"apply_server_side_encryption_by_default": {
        "kms_master_key_id": "${aws_kms_key.kms_key.arn}", "sse_algorithm": "aws:kms"}, "bucket_key_enabled": True}]


def test_log_bucket_is_sse_s3_because_log_delivery_requires_it(tenant_module):
    sse = resource(tenant_module, "aws_s3_bucket_server_side_encryption_configuration", "log_bucket_encryption")
    assert sse["rule"] == [{"apply_server_side_encryption_by_default": {"sse_algorithm": "AES256"}}]


def test_access_logging_goes_to_the_log_bucket_which_does_not_log_itself(tenant_module):
    lake = resource(tenant_module, "aws_s3_bucket_logging", "lake_logging")
    assert lake["target_bucket"] == "${aws_s3_bucket.log_bucket_bucket.id}"
    assert lake["target_prefix"] == "s3-access/${var.tenant_id}-${var.region}-lake/"
    # Logging into itself, the log bucket would write an access record for every log delivery, forever.
    assert list(tenant_module["resource"]["aws_s3_bucket_logging"]) == ["lake_logging"]


def test_access_logging_waits_for_the_log_bucket_policy(tenant_module):
    # S3 (and moto) refuse a logging target whose policy does not grant logging.s3.amazonaws.com yet.
    assert resource(tenant_module, "aws_s3_bucket_logging", "lake_logging")["depends_on"] == [
        "aws_s3_bucket_policy.log_policy_policy"]
