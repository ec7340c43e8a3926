"""An S3 bucket with the platform's safe defaults; used for the lake bucket and its log bucket.

Defaults (asserted in tests/modules/test_lake_bucket.py): versioning on; default encryption SSE-KMS
with the tenant key and an S3 bucket key (or SSE-S3 where S3 requires it: server access logs cannot
be delivered to an SSE-KMS bucket); all four public access blocks on; object ownership
``BucketOwnerEnforced`` (ACLs off); server access logging to the log bucket (the log bucket itself
has none: logging it into itself would log every delivery, forever); EventBridge notifications on.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Optional

from cdktf import Fn, TerraformResource, Token
from cdktf_cdktf_provider_aws.s3_bucket import S3Bucket
from cdktf_cdktf_provider_aws.s3_bucket_logging import S3BucketLoggingA
from cdktf_cdktf_provider_aws.s3_bucket_notification import S3BucketNotification
from cdktf_cdktf_provider_aws.s3_bucket_ownership_controls import (
    S3BucketOwnershipControls, S3BucketOwnershipControlsRule,
)
from cdktf_cdktf_provider_aws.s3_bucket_public_access_block import S3BucketPublicAccessBlock
from cdktf_cdktf_provider_aws.s3_bucket_server_side_encryption_configuration import (
    S3BucketServerSideEncryptionConfigurationA,
    S3BucketServerSideEncryptionConfigurationRuleA,
    S3BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultA,
)
from cdktf_cdktf_provider_aws.s3_bucket_versioning import (
    S3BucketVersioningA, S3BucketVersioningVersioningConfiguration,
)
from constructs import Construct

from modules.refs import address


@dataclasses.dataclass(frozen=True)
class LakeBucketConfig:
    """Inputs of ``LakeBucket`` (values may be Terraform expressions).

    Attributes:
        bucket_name: the bucket's name, e.g. ``<tenant>-<region>-lake``.
        tags: tags of the bucket.
        kms_key_arn: customer key for SSE-KMS; None means SSE-S3 (only for the access-log bucket,
            because S3 server access logging does not deliver to SSE-KMS buckets). @default - None
        log_bucket: bucket receiving this bucket's server access logs; None turns server access
            logging off (only for the log bucket itself: a bucket logging into itself writes a log
            record for every log delivery). @default - None
        log_prefix: key prefix of the access logs in ``log_bucket``. @default - "s3-access/<bucket>/"
        force_destroy: allow ``terraform destroy`` to empty the bucket (a bool expression; the module
            passes ``environment == "local"``). @default - False
        eventbridge: send object events to EventBridge. @default - True
        purpose: the ``bucket_purpose`` tag: ``lake`` (tenant data, must be SSE-KMS with the tenant
            key; checked by policies/checks CKV2_TL_3) or ``access-logs``. @default - "lake"
    """

    bucket_name: str
    tags: Mapping[str, str]
    kms_key_arn: Optional[str] = None
    log_bucket: Optional[str] = None
    log_prefix: Optional[str] = None
    force_destroy: object = False
    eventbridge: bool = True
    purpose: str = "lake"


class LakeBucket(Construct):
    """Bucket plus versioning, encryption, public access block, ownership, logging, notifications."""

    def __init__(self, scope: Construct, id_: str, cfg: LakeBucketConfig) -> None:
        super().__init__(scope, id_)
        force = cfg.force_destroy if isinstance(cfg.force_destroy, bool) else Token.as_any(cfg.force_destroy)
        tags = Token.as_string_map(Fn.merge([cfg.tags, {"bucket_purpose": cfg.purpose}]))
        self.bucket = S3Bucket(self, "bucket", bucket=cfg.bucket_name, force_destroy=force, tags=tags)
        b = self.bucket.id
        S3BucketVersioningA(self, "versioning", bucket=b,
                            versioning_configuration=S3BucketVersioningVersioningConfiguration(status="Enabled"))
        by_default = (
            S3BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultA(
                sse_algorithm="aws:kms", kms_master_key_id=cfg.kms_key_arn)
            if cfg.kms_key_arn else
            S3BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultA(sse_algorithm="AES256")
        )
        S3BucketServerSideEncryptionConfigurationA(self, "encryption", bucket=b, rule=[
            S3BucketServerSideEncryptionConfigurationRuleA(
                apply_server_side_encryption_by_default=by_default,
                bucket_key_enabled=True if cfg.kms_key_arn else None)])
        self.public_access_block = S3BucketPublicAccessBlock(
            self, "public_access_block", bucket=b, block_public_acls=True, block_public_policy=True,
            ignore_public_acls=True, restrict_public_buckets=True)
        S3BucketOwnershipControls(self, "ownership", bucket=b,
                                  rule=S3BucketOwnershipControlsRule(object_ownership="BucketOwnerEnforced"))
        # S3 refuses a logging target that does not grant the logging service yet: callers make this
        # depend on the target's bucket policy (``logging_after``).
        self.logging = (S3BucketLoggingA(self, "logging", bucket=b, target_bucket=cfg.log_bucket,
                                         target_prefix=cfg.log_prefix or f"s3-access/{cfg.bucket_name}/")
                        if cfg.log_bucket else None)
        if cfg.eventbridge:
            # No ignore_changes: the emulator reports the switch back (infra/local/moto_server.py), so
            # drift is planned back in every environment.
            S3BucketNotification(self, "notification", bucket=b, eventbridge=True)
        self.name = self.bucket.bucket
        self.arn = self.bucket.arn
        self.id = b

    def logging_after(self, *resources: TerraformResource) -> None:
        """Create the access-logging configuration only after ``resources`` (the target's bucket policy)."""
        if self.logging is not None:
            self.logging.add_override("depends_on", [address(r) for r in resources])
