"""S3 Inventory of the lake bucket: a daily Parquet list of every object version, in the log bucket.

``python -m spark_jobs usage`` reads bytes and object counts per layer and dataset from the newest
report instead of listing the lake (a listing costs one LIST request per 1,000 versions; an inventory
report costs $0.0025 per million objects listed and no requests of ours). Defaults (asserted in
tests/modules/test_inventory.py):

- every version (``IncludedObjectVersions = All``): current and noncurrent bytes are reported apart;
- daily, Parquet, under ``inventory/`` of the log bucket (S3 writes
  ``inventory/<lake bucket>/<id>/<YYYY-MM-DDTHH-MMZ>/manifest.json`` and ``.../data/<uuid>.parquet``);
- the reports encrypted SSE-KMS with the tenant key (the log bucket's own default is SSE-S3, the only
  encryption S3 access-log delivery supports; the inventory names the tenant key itself);
- the fields ``usage`` needs: size, last modified date, storage class, ETag, multipart, encryption status.

S3 writes the reports as the service principal ``s3.amazonaws.com``: the log bucket's policy lets it put
under the prefix for the lake bucket only (``delivery_statement``), and the key policy lets it generate
data keys for that source only (``key_statement``). Both follow the Amazon S3 User Guide, "Configuring
Amazon S3 Inventory" (destination bucket policy; "Granting Amazon S3 permission to use your customer
managed key for encryption").
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

from cdktf_cdktf_provider_aws.s3_bucket_inventory import (
    S3BucketInventory,
    S3BucketInventoryDestination,
    S3BucketInventoryDestinationBucket,
    S3BucketInventoryDestinationBucketEncryption,
    S3BucketInventoryDestinationBucketEncryptionSseKms,
    S3BucketInventorySchedule,
)
from constructs import Construct

from modules.policy_document import Condition, Principal, Statement

S3_SERVICE = "s3.amazonaws.com"  # the principal S3 Inventory (and S3 Batch Operations) deliver as
DEFAULT_NAME = "lake-daily"
DEFAULT_PREFIX = "inventory"
# What spark_jobs.usage reads (the bucket, key, version id, latest and delete-marker columns come always
# with IncludedObjectVersions = All).
DEFAULT_FIELDS: tuple[str, ...] = (
    "Size", "LastModifiedDate", "StorageClass", "ETag", "IsMultipartUploaded", "EncryptionStatus",
)


@dataclasses.dataclass(frozen=True)
class LakeInventoryConfig:
    """Inputs of ``LakeInventory`` (values may be Terraform expressions).

    Attributes:
        bucket: the source bucket's id (the lake).
        destination_bucket_arn: where the reports go (the log bucket's ARN).
        account_id: the account that owns the destination bucket.
        kms_key_arn: the key the reports are encrypted with (SSE-KMS; the tenant key).
        name: the inventory configuration's id. @default - "lake-daily"
        prefix: key prefix of the reports in the destination bucket. @default - "inventory"
        frequency: ``Daily`` or ``Weekly``. @default - "Daily"
        included_object_versions: ``All`` or ``Current``. @default - "All" (noncurrent bytes are reported too)
        report_format: ``Parquet``, ``ORC`` or ``CSV``. @default - "Parquet"
        optional_fields: extra columns. @default - ``DEFAULT_FIELDS`` (size, last modified, storage class,
            ETag, multipart, encryption status)
    """

    bucket: str
    destination_bucket_arn: str
    account_id: str
    kms_key_arn: str
    name: str = DEFAULT_NAME
    prefix: str = DEFAULT_PREFIX
    frequency: str = "Daily"
    included_object_versions: str = "All"
    report_format: str = "Parquet"
    optional_fields: Sequence[str] = DEFAULT_FIELDS


def delivery_statement(source_bucket_arns: Sequence[str], account_id: str, destination_bucket_arn: str,
                       prefix: str = DEFAULT_PREFIX) -> Statement:
    """The destination bucket's grant: S3 may put inventory reports of these source buckets under ``prefix``."""
    return Statement(
        "S3InventoryDelivery", ["s3:PutObject"], f"{destination_bucket_arn}/{prefix}/*",
        principals=[Principal("Service", S3_SERVICE)],
        conditions=[Condition("ArnLike", "aws:SourceArn", list(source_bucket_arns)),
                    Condition("StringEquals", "aws:SourceAccount", [account_id]),
                    Condition("StringEquals", "s3:x-amz-acl", ["bucket-owner-full-control"])])


def key_statement(source_bucket_arns: Sequence[str], account_id: str) -> Statement:
    """The key policy's grant: S3 may generate data keys to encrypt inventory reports of these buckets."""
    return Statement(
        "S3InventoryEncryptsReports", ["kms:GenerateDataKey"], "*",
        principals=[Principal("Service", S3_SERVICE)],
        conditions=[Condition("StringEquals", "aws:SourceAccount", [account_id]),
                    Condition("ArnLike", "aws:SourceArn", list(source_bucket_arns))])


class LakeInventory(Construct):
    """One ``aws_s3_bucket_inventory`` on the lake bucket."""

    def __init__(self, scope: Construct, id_: str, cfg: LakeInventoryConfig, depends_on: list | None = None) -> None:
        super().__init__(scope, id_)
        self.inventory = S3BucketInventory(
            self, "inventory", bucket=cfg.bucket, name=cfg.name, enabled=True,
            included_object_versions=cfg.included_object_versions,
            schedule=S3BucketInventorySchedule(frequency=cfg.frequency),
            optional_fields=list(cfg.optional_fields),
            destination=S3BucketInventoryDestination(bucket=S3BucketInventoryDestinationBucket(
                bucket_arn=cfg.destination_bucket_arn, account_id=cfg.account_id, format=cfg.report_format,
                prefix=cfg.prefix, encryption=S3BucketInventoryDestinationBucketEncryption(
                    sse_kms=S3BucketInventoryDestinationBucketEncryptionSseKms(key_id=cfg.kms_key_arn)))),
            depends_on=depends_on)
        self.name = cfg.name
        self.prefix = cfg.prefix
