"""Bucket policies: deny what must never happen, whoever asks.

Statements of the lake bucket's policy (the log bucket's policy has the first and the last, plus
the S3 logging service's write grant):

1. ``DenyInsecureTransport``: any request without TLS (``aws:SecureTransport = false``).
2. ``DenyUnencryptedUploads``: ``s3:PutObject`` without an ``x-amz-server-side-encryption`` header.
3. ``DenyNonKmsUploads``: ``s3:PutObject`` whose encryption header is not ``aws:kms``.
4. ``DenyWrongKeyUploads``: ``s3:PutObject`` not naming the tenant key's ARN in
   ``x-amz-server-side-encryption-aws-kms-key-id`` (without it S3 would use the aws/s3 key).
5. ``DenyOutsideTenantVpcEndpoints``: any request that does not come through one of the tenant's S3
   gateway endpoints (``aws:SourceVpce``), unless the caller is an admin principal: the deployer
   identity that runs terraform (so an apply never locks itself out) and ``admin_principal_arns``.
   On the log bucket, AWS services (the S3 logging service) are exempt too.
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

from cdktf_cdktf_provider_aws.data_aws_caller_identity import DataAwsCallerIdentity
from cdktf_cdktf_provider_aws.data_aws_iam_session_context import DataAwsIamSessionContext
from cdktf_cdktf_provider_aws.s3_bucket_policy import S3BucketPolicy
from constructs import Construct

from modules.refs import address
from modules.policy_document import Condition, ListExpr, Principal, Statement, policy_json

# {"AWS": "*"} is IAM's equivalent of "Principal": "*" (everyone, anonymous included).  The object form
# also keeps moto 5.2.5 working: its log-delivery permission check crashes on a string Principal.
EVERYONE = Principal("AWS", "*")
# A single string, not a list: moto only recognises the log-delivery grant in this form.
LOG_DELIVERY_SERVICE = "logging.s3.amazonaws.com"


@dataclasses.dataclass(frozen=True)
class BucketPolicyConfig:
    """Inputs of ``BucketPolicy`` (values may be Terraform expressions).

    Attributes:
        bucket: the bucket id (name).
        bucket_arn: the bucket's ARN.
        vpc_endpoint_ids: list expression of the S3 gateway endpoints requests must come through.
        admin_principal_arns: list expression of the principals exempt from the endpoint rule (the
            module passes the deployer identity plus ``var.admin_principal_arns``).
        kms_key_arn: the only key uploads may name; None skips the upload-encryption statements
            (the log bucket, written by the S3 logging service with SSE-S3). @default - None
        log_delivery_source_arns: when set, the bucket receives server access logs: the S3 logging
            service may put objects for these source buckets, and AWS services are exempt from the
            endpoint rule. @default - ()
        account_id: the account whose buckets may deliver logs (with ``log_delivery_source_arns``).
            @default - None
    """

    bucket: str
    bucket_arn: str
    vpc_endpoint_ids: ListExpr
    admin_principal_arns: ListExpr
    kms_key_arn: Optional[str] = None
    log_delivery_source_arns: Sequence[str] = ()
    account_id: Optional[str] = None


class DeployerIdentity(Construct):
    """The identity running terraform, as an IAM principal ARN (the role behind an assumed-role session)."""

    def __init__(self, scope: Construct, id_: str) -> None:
        super().__init__(scope, id_)
        caller = DataAwsCallerIdentity(self, "caller")
        self.account_id = caller.account_id
        session = DataAwsIamSessionContext(self, "session", arn=caller.arn)
        self.arn = session.issuer_arn
        # For use inside other expressions (e.g. concat([...], var.admin_principal_arns)).
        self.arn_ref = f"{address(session)}.issuer_arn"


def bucket_policy_statements(cfg: BucketPolicyConfig) -> list[Statement]:
    objects = f"{cfg.bucket_arn}/*"
    both = [cfg.bucket_arn, objects]
    statements = [
        Statement("DenyInsecureTransport", ["s3:*"], both, effect="Deny", principals=[EVERYONE],
                  conditions=[Condition("Bool", "aws:SecureTransport", ["false"])]),
    ]
    if cfg.kms_key_arn:
        statements += [
            Statement("DenyUnencryptedUploads", ["s3:PutObject"], objects, effect="Deny", principals=[EVERYONE],
                      conditions=[Condition("Null", "s3:x-amz-server-side-encryption", ["true"])]),
            Statement("DenyNonKmsUploads", ["s3:PutObject"], objects, effect="Deny", principals=[EVERYONE],
                      conditions=[Condition("StringNotEqualsIfExists", "s3:x-amz-server-side-encryption", ["aws:kms"])]),
            Statement("DenyWrongKeyUploads", ["s3:PutObject"], objects, effect="Deny", principals=[EVERYONE],
                      conditions=[Condition("StringNotEquals", "s3:x-amz-server-side-encryption-aws-kms-key-id",
                                            [cfg.kms_key_arn])]),
        ]
    if cfg.log_delivery_source_arns:
        statements.append(Statement(
            "S3ServerAccessLogsDelivery", ["s3:PutObject"], objects,
            principals=[Principal("Service", LOG_DELIVERY_SERVICE)],
            conditions=[Condition("ArnLike", "aws:SourceArn", list(cfg.log_delivery_source_arns)),
                        Condition("StringEquals", "aws:SourceAccount", [cfg.account_id])]))
    outside = [
        Condition("StringNotEquals", "aws:SourceVpce", cfg.vpc_endpoint_ids),
        Condition("ArnNotLike", "aws:PrincipalArn", cfg.admin_principal_arns),
    ]
    if cfg.log_delivery_source_arns:
        outside.append(Condition("Bool", "aws:PrincipalIsAWSService", ["false"]))
    statements.append(Statement("DenyOutsideTenantVpcEndpoints", ["s3:*"], both, effect="Deny",
                                principals=[EVERYONE], conditions=outside))
    return statements


class BucketPolicy(Construct):
    """The bucket policy: one ``aws_s3_bucket_policy`` whose JSON names every statement literally."""

    def __init__(self, scope: Construct, id_: str, cfg: BucketPolicyConfig, depends_on: list | None = None) -> None:
        super().__init__(scope, id_)
        self.policy = S3BucketPolicy(self, "policy", bucket=cfg.bucket, policy=policy_json(bucket_policy_statements(cfg)),
                                     depends_on=depends_on)
