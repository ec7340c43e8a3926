"""Bucket policies: deny what must never happen, whoever asks.

Statements of the lake bucket's policy (README "Policies" in modules/README.md):

1. ``DenyInsecureTransport``: any request without TLS (``aws:SecureTransport = false``).
2. The encryption of uploads (lake only): every object is SSE-KMS under the tenant key, never SSE-S3, DSSE-KMS,
   SSE-C, the aws/s3 key or another key. An ``s3:PutObject`` request that names an encryption must name exactly
   ``aws:kms`` and the tenant key's ARN; one that names none (``UploadPart`` and ``CompleteMultipartUpload``, which
   carry no encryption header because S3 takes the upload's encryption from ``CreateMultipartUpload``; a plain PUT
   or ``CopyObject`` without one) is encrypted with the bucket's default, SSE-KMS with the tenant key
   (``modules/lake_bucket.py``), and passes. Each deny tests that its header is present (``Null`` ``false``) before
   comparing it: a negated operator (``StringNotEquals``, and ``StringNotEqualsIfExists`` too, which IAM evaluates
   as true for an absent key) matches a request without the header, and so denied every multipart upload.

   a. ``DenyNonKmsUploads``: an ``x-amz-server-side-encryption`` header that is not ``aws:kms`` (``AES256``,
      ``aws:kms:dsse``).
   b. ``DenyWrongKeyUploads``: an ``x-amz-server-side-encryption-aws-kms-key-id`` header that is not the tenant
      key's ARN.
   c. ``DenyAwsManagedKeyUploads``: ``aws:kms`` without a key id: S3 would use the aws/s3 key, not the bucket
      default's (the ``SSEKMSKeyId`` documentation of ``PutObject`` and ``CreateMultipartUpload``).
   d. ``DenyCustomerKeyUploads``: an ``x-amz-server-side-encryption-customer-algorithm`` header (SSE-C, a key S3
      does not keep); ``UploadPart`` carries it for an SSE-C upload, so none can begin or go on.
3. ``DenyUnconditionalLandingWrites`` (lake only): an object creation (``PutObject``,
   ``CompleteMultipartUpload``: ``s3:ObjectCreationOperation`` true) under ``landing/`` without an
   ``If-None-Match`` header (``s3:if-none-match`` absent), by anyone but a Firehose delivery role. Landing
   writes are create-only: bronze reads each name once, so new bytes under a name it has read would never be
   ingested; with the header S3 refuses to replace an existing name (412). The parts of a multipart upload
   (``CreateMultipartUpload``, ``UploadPart``: ``s3:ObjectCreationOperation`` false) cannot carry the header
   and pass; its completion needs it. A ``CopyObject`` into landing/ is denied (S3 supports no conditional
   copy). Firehose writes a new, unique key per object and sends no such header: its roles are exempt by
   ARN (the role-name pattern ``<tenant>-lake-*-firehose``; the allow-list of statement 4 still names each).
4. ``DenyPrincipalsOutsideTenant``: any request whose ``aws:PrincipalArn`` is not on the allow-list:
   the tenant's own roles, its Firehose delivery roles and the admin principals. Defence in depth: a
   mis-scoped identity policy in another tenant (or account) cannot reach the bucket. An assumed-role
   session's ``aws:PrincipalArn`` is its role's ARN, so the list names roles; anonymous requests carry no
   ``aws:PrincipalArn`` and are denied too (a negated condition on an absent key matches).
5. ``DenyOutsideTenantVpcEndpoints``: any request that does not come through one of the tenant's S3
   gateway endpoints (``aws:SourceVpce``), unless the caller is exempt by principal ARN: an admin
   principal (the deployer identity that runs terraform, so an apply never locks itself out, and
   ``admin_principal_arns``) or a Firehose delivery role (Firehose writes from AWS's network, never
   through a VPC endpoint), and on the lake requests Athena makes for a caller
   (``aws:CalledViaFirst = athena.amazonaws.com``: Athena reads tables and writes query results with
   the caller's credentials from AWS's network). Nothing else is exempt on the lake: no
   ``aws:ViaAWSService`` or ``aws:PrincipalIsAWSService`` escape.
6. ``DenyAthenaOutsideConsumers`` (lake only): requests made through Athena for anyone but the Athena
   principals (the consumer role and the readers of personal data), so statement 5's Athena exemption opens no
   path for other roles.
7. ``DenyPersonalResultsOutsideReaders`` (lake only): any request on the readers of personal data's query results
   (``athena/personal/``: their workgroup's output location, which may hold personal columns) by anyone but those
   readers, the erasure role (it scrubs query results) and the admin principals. The consumer's identity policy
   names ``athena/consumer/`` only; this deny keeps the readers' results closed even to a role whose identity
   policy a mistake widens.

The log bucket's policy has 1, ``S3ServerAccessLogsDelivery`` (the S3 logging service may put access logs
of the lake bucket, and only of it), ``S3InventoryDelivery`` (S3 may put the lake's inventory reports under
``inventory/``, and only the lake's: ``modules/inventory.py``), 4 with the admin principals only, and 5; AWS
services (the S3 logging service and S3 itself, which sign as service principals and carry no
``aws:PrincipalArn``) are exempt from 5 and 6 there.
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

from cdktf_cdktf_provider_aws.data_aws_caller_identity import DataAwsCallerIdentity
from cdktf_cdktf_provider_aws.data_aws_iam_session_context import DataAwsIamSessionContext
from cdktf_cdktf_provider_aws.s3_bucket_policy import S3BucketPolicy
from constructs import Construct

from modules.inventory import DEFAULT_PREFIX as INVENTORY_PREFIX, delivery_statement
from modules.refs import address
from modules.policy_document import Condition, ListExpr, Principal, Statement, policy_json

# {"AWS": "*"} is IAM's equivalent of "Principal": "*" (everyone, anonymous included: IAM documents both
# forms as the same principal). Of the two equivalent forms this one is used in every environment because
# moto 5.2.5's PutBucketLogging check crashes on a string Principal; on AWS the choice changes nothing.
EVERYONE = Principal("AWS", "*")
# A single string rather than a one-element list: equivalent for IAM, and the form moto 5.2.5's
# PutBucketLogging check recognises as the log-delivery grant. Same in every environment.
LOG_DELIVERY_SERVICE = "logging.s3.amazonaws.com"
ATHENA_SERVICE = "athena.amazonaws.com"  # aws:CalledVia* value of requests Athena makes for a caller


@dataclasses.dataclass(frozen=True)
class BucketPolicyConfig:
    """Inputs of ``BucketPolicy`` (values may be Terraform expressions).

    Attributes:
        bucket: the bucket id (name).
        bucket_arn: the bucket's ARN.
        vpc_endpoint_ids: list expression of the S3 gateway endpoints requests must come through.
        allowed_principal_arns: list expression of every principal ARN that may reach the bucket at all
            (``DenyPrincipalsOutsideTenant``; ``aws:PrincipalArn`` form: role ARNs, not session ARNs).
        endpoint_exempt_principal_arns: list expression of the principals exempt from the endpoint rule
            (the module passes the admin principals, plus the Firehose roles on the lake bucket).
        kms_key_arn: the only key uploads may name; None skips the upload-encryption statements
            (the log bucket, written by the S3 logging service with SSE-S3). @default - None
        log_delivery_source_arns: when set, the bucket receives server access logs: the S3 logging
            service may put objects for these source buckets, and AWS services are exempt from the
            principal and endpoint rules. @default - ()
        account_id: the account whose buckets may deliver logs (with ``log_delivery_source_arns``).
            @default - None
        inventory_source_arns: buckets whose S3 Inventory reports this bucket receives under
            ``inventory_prefix`` (needs ``log_delivery_source_arns``' service exemption and ``account_id``).
            @default - ()
        inventory_prefix: where those reports go. @default - "inventory"
        athena_principal_arns: list expression of the principals whose requests may come through Athena
            (exempt from the endpoint rule when ``aws:CalledViaFirst`` is Athena; everyone else's Athena
            requests are denied). None: no Athena exemption. @default - None
        create_only_prefixes: key prefixes where an object may only be created, never replaced
            (``DenyUnconditionalLandingWrites``). @default - () (none)
        create_only_exempt_principal_arns: ARN patterns of principals exempt from that rule (writers of
            unique keys that send no ``If-None-Match``: the Firehose roles). @default - () (none)
        personal_results_prefix: the readers of personal data's query results (``DenyPersonalResultsOutsideReaders``);
            "" adds no such statement. @default - ""
        personal_results_principal_arns: list expression of the principals that may reach them (the readers, the
            erasure role, the admin principals). @default - None
    """

    bucket: str
    bucket_arn: str
    vpc_endpoint_ids: ListExpr
    allowed_principal_arns: ListExpr
    endpoint_exempt_principal_arns: ListExpr
    kms_key_arn: Optional[str] = None
    log_delivery_source_arns: Sequence[str] = ()
    account_id: Optional[str] = None
    inventory_source_arns: Sequence[str] = ()
    inventory_prefix: str = INVENTORY_PREFIX
    athena_principal_arns: Optional[ListExpr] = None
    create_only_prefixes: Sequence[str] = ()
    create_only_exempt_principal_arns: Sequence[str] = ()
    personal_results_prefix: str = ""
    personal_results_principal_arns: Optional[ListExpr] = None


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
        self.account_ref = f"{address(caller)}.account_id"


def _deny_put(sid: str, objects: str, *conditions: Condition) -> Statement:
    return Statement(sid, ["s3:PutObject"], objects, effect="Deny", principals=[EVERYONE], conditions=list(conditions))


def _present(key: str) -> Condition:
    """The request carries ``key`` (``Null`` ``false``): a negated operator beside it then judges only its value."""
    return Condition("Null", key, ["false"])


def encryption_statements(objects: str, kms_key_arn: str) -> list[Statement]:
    """Statements 2a-2d: uploads that name an encryption name ``aws:kms`` and the tenant key; the others take the
    bucket default. Each tests that its header is present before comparing it (``Null`` ``false``)."""
    sse, key_id = "s3:x-amz-server-side-encryption", "s3:x-amz-server-side-encryption-aws-kms-key-id"
    return [
        _deny_put("DenyNonKmsUploads", objects, _present(sse), Condition("StringNotEquals", sse, ["aws:kms"])),
        _deny_put("DenyWrongKeyUploads", objects, _present(key_id), Condition("StringNotEquals", key_id, [kms_key_arn])),
        _deny_put("DenyAwsManagedKeyUploads", objects, Condition("StringEquals", sse, ["aws:kms"]),
                  Condition("Null", key_id, ["true"])),
        _deny_put("DenyCustomerKeyUploads", objects, _present("s3:x-amz-server-side-encryption-customer-algorithm")),
    ]


def bucket_policy_statements(cfg: BucketPolicyConfig) -> list[Statement]:
    objects = f"{cfg.bucket_arn}/*"
    both = [cfg.bucket_arn, objects]
    statements = [
        Statement("DenyInsecureTransport", ["s3:*"], both, effect="Deny", principals=[EVERYONE],
                  conditions=[Condition("Bool", "aws:SecureTransport", ["false"])]),
    ]
    if cfg.kms_key_arn:
        statements += encryption_statements(objects, cfg.kms_key_arn)
    if cfg.create_only_prefixes:
        # Both keys must hold to deny: no If-None-Match header, on a request that creates the object (the
        # parts of a multipart upload cannot carry the header; AWS's documented enforcement pattern).
        exempt = ([Condition("ArnNotLike", "aws:PrincipalArn", list(cfg.create_only_exempt_principal_arns))]
                  if cfg.create_only_exempt_principal_arns else [])
        statements.append(Statement(
            "DenyUnconditionalLandingWrites", ["s3:PutObject"],
            [f"{cfg.bucket_arn}/{prefix.strip('/')}/*" for prefix in cfg.create_only_prefixes],
            effect="Deny", principals=[EVERYONE],
            conditions=[Condition("Null", "s3:if-none-match", ["true"]),
                        Condition("Bool", "s3:ObjectCreationOperation", ["true"]), *exempt]))
    if cfg.log_delivery_source_arns:
        statements.append(Statement(
            "S3ServerAccessLogsDelivery", ["s3:PutObject"], objects,
            principals=[Principal("Service", LOG_DELIVERY_SERVICE)],
            conditions=[Condition("ArnLike", "aws:SourceArn", list(cfg.log_delivery_source_arns)),
                        Condition("StringEquals", "aws:SourceAccount", [cfg.account_id])]))
    if cfg.inventory_source_arns:
        statements.append(delivery_statement(cfg.inventory_source_arns, str(cfg.account_id), cfg.bucket_arn,
                                             cfg.inventory_prefix))
    # A service principal (the S3 logging service) carries no aws:PrincipalArn: where it delivers, AWS
    # services are exempt from the principal and endpoint rules; elsewhere nothing is.
    services_exempt = [Condition("Bool", "aws:PrincipalIsAWSService", ["false"])] if cfg.log_delivery_source_arns else []
    statements.append(Statement(
        "DenyPrincipalsOutsideTenant", ["s3:*"], both, effect="Deny", principals=[EVERYONE],
        conditions=[Condition("ArnNotLike", "aws:PrincipalArn", cfg.allowed_principal_arns), *services_exempt]))
    # A negated operator matches when the key is absent: a direct request (no aws:CalledViaFirst) stays
    # under the endpoint rule; one Athena makes for its caller does not.
    athena_exempt = ([Condition("StringNotEquals", "aws:CalledViaFirst", [ATHENA_SERVICE])]
                     if cfg.athena_principal_arns is not None else [])
    statements.append(Statement(
        "DenyOutsideTenantVpcEndpoints", ["s3:*"], both, effect="Deny", principals=[EVERYONE],
        conditions=[Condition("StringNotEquals", "aws:SourceVpce", cfg.vpc_endpoint_ids),
                    Condition("ArnNotLike", "aws:PrincipalArn", cfg.endpoint_exempt_principal_arns),
                    *services_exempt, *athena_exempt]))
    if cfg.athena_principal_arns is not None:
        statements.append(Statement(
            "DenyAthenaOutsideConsumers", ["s3:*"], both, effect="Deny", principals=[EVERYONE],
            conditions=[Condition("StringEquals", "aws:CalledViaFirst", [ATHENA_SERVICE]),
                        Condition("ArnNotLike", "aws:PrincipalArn", cfg.athena_principal_arns)]))
    if cfg.personal_results_prefix and cfg.personal_results_principal_arns is not None:
        statements.append(Statement(
            "DenyPersonalResultsOutsideReaders", ["s3:*"], f"{cfg.bucket_arn}/{cfg.personal_results_prefix.strip('/')}/*",
            effect="Deny", principals=[EVERYONE],
            conditions=[Condition("ArnNotLike", "aws:PrincipalArn", cfg.personal_results_principal_arns)]))
    return statements


class BucketPolicy(Construct):
    """The bucket policy: one ``aws_s3_bucket_policy`` whose JSON names every statement literally."""

    def __init__(self, scope: Construct, id_: str, cfg: BucketPolicyConfig, depends_on: list | None = None) -> None:
        super().__init__(scope, id_)
        self.policy = S3BucketPolicy(self, "policy", bucket=cfg.bucket, policy=policy_json(bucket_policy_statements(cfg)),
                                     depends_on=depends_on)
