"""Lifecycle rules of the lake bucket (and the log bucket), with documented defaults.

A bucket-wide rule ``all`` aborts incomplete multipart uploads after ``abort_multipart_days`` and
expires noncurrent versions after ``noncurrent_days``, so every prefix (also one added later) gets
both.  Per-prefix rules add, by default (README "Tenant module" table; asserted in
tests/modules/test_lifecycle.py):

| prefix      | transitions                               | expiry                                   |
|-------------|-------------------------------------------|------------------------------------------|
| landing     | -                                         | retention_days["landing"] (30 d)         |
| bronze      | STANDARD_IA at 30 d, GLACIER_IR at 90 d   | retention_days["bronze"] (365 d)         |
| silver      | STANDARD_IA at 90 d                       | -                                        |
| gold        | INTELLIGENT_TIERING at 0 d                | -                                        |
| quarantine  | -                                         | retention_days["quarantine"] (30 d)      |
| checkpoints | noncurrent versions expire after 7 d      | -                                        |
| logs        | -                                         | retention_days["logs"] (90 d)            |

Where rules overlap, S3 applies the earliest expiry (checkpoints' 7 d beats the bucket-wide 30 d).
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

from cdktf_cdktf_provider_aws.s3_bucket_lifecycle_configuration import (
    S3BucketLifecycleConfiguration,
    S3BucketLifecycleConfigurationRule,
    S3BucketLifecycleConfigurationRuleAbortIncompleteMultipartUpload,
    S3BucketLifecycleConfigurationRuleExpiration,
    S3BucketLifecycleConfigurationRuleFilter,
    S3BucketLifecycleConfigurationRuleNoncurrentVersionExpiration,
    S3BucketLifecycleConfigurationRuleTransition,
)
from constructs import Construct

from tenant_model import LAKE_PREFIXES

Number = float  # a number or a CDKTF number token


@dataclasses.dataclass(frozen=True)
class LifecycleConfig:
    """Inputs of ``LakeLifecycle``.

    Attributes:
        bucket: the bucket id.
        expiry_days: expiry per prefix (only prefixes listed here expire); the module passes the
            merged ``retention_days`` for landing, bronze, quarantine and logs.
        prefixes: the prefixes that may get a rule (one with at least one action). @default -
            ``tenant_model.LAKE_PREFIXES``
        transitions: storage-class transitions per prefix, (days, class) pairs.
            @default - bronze: (30, STANDARD_IA), (90, GLACIER_IR); silver: (90, STANDARD_IA);
            gold: (0, INTELLIGENT_TIERING)
        abort_multipart_days: abort incomplete multipart uploads after. @default - 7 days
        noncurrent_days: expire noncurrent versions after. @default - 30 days
        checkpoint_noncurrent_days: the same for ``checkpoints/``. @default - 7 days
    """

    bucket: str
    expiry_days: Mapping[str, Number]
    prefixes: Sequence[str] = LAKE_PREFIXES
    transitions: Mapping[str, Sequence[tuple[int, str]]] = dataclasses.field(default_factory=lambda: {
        "bronze": ((30, "STANDARD_IA"), (90, "GLACIER_IR")),
        "silver": ((90, "STANDARD_IA"),),
        "gold": ((0, "INTELLIGENT_TIERING"),),
    })
    abort_multipart_days: int = 7
    noncurrent_days: int = 30
    checkpoint_noncurrent_days: int = 7


class LakeLifecycle(Construct):
    """One ``aws_s3_bucket_lifecycle_configuration``: the bucket-wide rule, then a rule per prefix."""

    def __init__(self, scope: Construct, id_: str, cfg: LifecycleConfig) -> None:
        super().__init__(scope, id_)
        rules = [S3BucketLifecycleConfigurationRule(
            id="all", status="Enabled",
            filter=[S3BucketLifecycleConfigurationRuleFilter(prefix="")],
            abort_incomplete_multipart_upload=[S3BucketLifecycleConfigurationRuleAbortIncompleteMultipartUpload(
                days_after_initiation=cfg.abort_multipart_days)],
            noncurrent_version_expiration=[S3BucketLifecycleConfigurationRuleNoncurrentVersionExpiration(
                noncurrent_days=cfg.noncurrent_days)],
            expiration=[S3BucketLifecycleConfigurationRuleExpiration(days=cfg.expiry_days[""])]
            if "" in cfg.expiry_days else None,
        )]
        for prefix in cfg.prefixes:
            transitions = [S3BucketLifecycleConfigurationRuleTransition(days=days, storage_class=cls)
                           for days, cls in cfg.transitions.get(prefix, ())]
            expiration = ([S3BucketLifecycleConfigurationRuleExpiration(days=cfg.expiry_days[prefix])]
                          if prefix in cfg.expiry_days else [])
            noncurrent = ([S3BucketLifecycleConfigurationRuleNoncurrentVersionExpiration(
                noncurrent_days=cfg.checkpoint_noncurrent_days)] if prefix == "checkpoints" else [])
            if not (transitions or expiration or noncurrent):
                continue
            rules.append(S3BucketLifecycleConfigurationRule(
                id=prefix, status="Enabled",
                filter=[S3BucketLifecycleConfigurationRuleFilter(prefix=f"{prefix}/")],
                transition=transitions or None, expiration=expiration or None,
                noncurrent_version_expiration=noncurrent or None,
            ))
        self.configuration = S3BucketLifecycleConfiguration(self, "configuration", bucket=cfg.bucket, rule=rules)
