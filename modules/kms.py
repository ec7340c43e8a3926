"""The tenant's KMS key: rotation on, an explicit key policy, and the alias ``alias/<tenant>-lake``.

Key policy statements (modules/README.md "Policies"):

1. ``AccountRootAdministersKey``: the account root may do everything (without it nobody could manage
   the key, and IAM policies of the account could not grant its use).
2. ``TenantWritersUseKey``: the job-execution, ingest-writer and erasure roles may use the key for data
   (``KEY_USE_ACTIONS``), never administer it.
3. ``TenantReadersDecrypt``: the consumer role may only decrypt (``KEY_READ_ACTIONS``): readers get no
   data keys.
4. ``CloudWatchLogsEncryptsTenantLogGroup``: the Logs service, for the tenant's log group only.
   ``S3InventoryEncryptsReports``: S3 may generate data keys for the lake's inventory reports, and only
   for the lake bucket's (``modules/inventory.py``).
5. ``DenyKeyUseOutsideTenant``: data-key actions (``KEY_DATA_ACTIONS``) by any principal whose
   ``aws:PrincipalArn`` is not on the allow-list (the tenant's roles, its Firehose roles, the admin
   principals) are denied, AWS service principals (the Logs service) excepted. Statement 1 lets any
   identity policy of the account grant the key; this stops a mis-scoped ``kms:*`` in another tenant's
   role from using it.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

from cdktf_cdktf_provider_aws.kms_alias import KmsAlias
from cdktf_cdktf_provider_aws.kms_key import KmsKey
from constructs import Construct

from modules.inventory import key_statement as inventory_key_statement
from modules.policy_document import Condition, ListExpr, Principal, Statement, policy_json

# What a tenant role may do with the key: data-key use only, never administration.
KEY_USE_ACTIONS: tuple[str, ...] = (
    "kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:GenerateDataKeyWithoutPlaintext",
    "kms:ReEncryptFrom", "kms:ReEncryptTo", "kms:DescribeKey",
)
# What the read-only consumer may do with the key.
KEY_READ_ACTIONS: tuple[str, ...] = ("kms:Decrypt", "kms:DescribeKey")
# The Logs service encrypts and decrypts the tenant's log group with the key: the same data-key actions.
LOGS_SERVICE_ACTIONS = KEY_USE_ACTIONS
# Cryptographic operations on data, denied to every principal outside the allow-list.
KEY_DATA_ACTIONS: tuple[str, ...] = (
    "kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*",
)


@dataclasses.dataclass(frozen=True)
class TenantKeyConfig:
    """Inputs of ``TenantKey`` (values may be Terraform expressions).

    Attributes:
        alias: the alias name, ``alias/<tenant>-lake``.
        partition, region, account_id: where the key lives; the account root administers it.
        writer_role_arns: the tenant's roles that write (job execution, ingest writer, erasure): data-key use.
        reader_role_arns: the tenant's read-only roles (consumer): decrypt only.
        allowed_principal_arns: list expression of every principal that may use the key for data at
            all (``DenyKeyUseOutsideTenant``): the tenant's roles, its Firehose roles, the admins.
        log_group_name: the CloudWatch log group the Logs service may encrypt with the key.
        tags: tags of the key.
        inventory_source_arns: buckets whose S3 Inventory reports are encrypted with the key (S3 may
            generate data keys for them). @default - ()
        service_statements: more statements for AWS services, placed before ``DenyKeyUseOutsideTenant`` (the
            orchestration's: EventBridge and CloudWatch for the alerts topic, the Logs service for the state
            machine's log group; ``infra/orchestration.py``). @default - ()
        deletion_window_in_days: waiting period before a scheduled deletion. @default - 30 days
        enable_key_rotation: yearly automatic rotation. @default - True
    """

    alias: str
    partition: str
    region: str
    account_id: str
    writer_role_arns: Sequence[str]
    reader_role_arns: Sequence[str]
    allowed_principal_arns: ListExpr
    log_group_name: str
    tags: Mapping[str, str]
    inventory_source_arns: Sequence[str] = ()
    service_statements: Sequence[Statement] = ()
    deletion_window_in_days: int = 30
    enable_key_rotation: bool = True


def key_policy_statements(cfg: TenantKeyConfig) -> list[Statement]:
    root = f"arn:{cfg.partition}:iam::{cfg.account_id}:root"
    log_group_arn = f"arn:{cfg.partition}:logs:{cfg.region}:{cfg.account_id}:log-group:{cfg.log_group_name}"
    statements = [
        # Without this statement nobody (not even IAM admins) could manage the key.
        Statement("AccountRootAdministersKey", ["kms:*"], "*", principals=[Principal("AWS", root)]),
        Statement("TenantWritersUseKey", list(KEY_USE_ACTIONS), "*",
                  principals=[Principal("AWS", list(cfg.writer_role_arns))]),
        Statement("TenantReadersDecrypt", list(KEY_READ_ACTIONS), "*",
                  principals=[Principal("AWS", list(cfg.reader_role_arns))]),
        logs_statement("CloudWatchLogsEncryptsTenantLogGroup", cfg.region, log_group_arn),
    ]
    if cfg.inventory_source_arns:
        statements.append(inventory_key_statement(cfg.inventory_source_arns, cfg.account_id))
    return statements + list(cfg.service_statements) + [
        # {"AWS": "*"}: everyone, as in the bucket policies (modules/bucket_policy.py EVERYONE).
        Statement("DenyKeyUseOutsideTenant", list(KEY_DATA_ACTIONS), "*", effect="Deny",
                  principals=[Principal("AWS", "*")],
                  conditions=[Condition("ArnNotLike", "aws:PrincipalArn", cfg.allowed_principal_arns),
                              Condition("Bool", "aws:PrincipalIsAWSService", ["false"])]),
    ]


def logs_statement(sid: str, region: str, log_group_arn: str) -> Statement:
    """The Logs service may use the key for one log group (its encryption context), and for nothing else."""
    return Statement(sid, list(LOGS_SERVICE_ACTIONS), "*", principals=[Principal("Service", f"logs.{region}.amazonaws.com")],
                     conditions=[Condition("ArnEquals", "kms:EncryptionContext:aws:logs:arn", log_group_arn)])


class TenantKey(Construct):
    """A customer-managed KMS key with rotation and an explicit key policy, plus its alias."""

    def __init__(self, scope: Construct, id_: str, cfg: TenantKeyConfig) -> None:
        super().__init__(scope, id_)
        self.key = KmsKey(
            self, "key",
            description=f"tenantlake: data key of {cfg.alias}",
            enable_key_rotation=cfg.enable_key_rotation,
            deletion_window_in_days=cfg.deletion_window_in_days,
            policy=policy_json(key_policy_statements(cfg)),
            tags=cfg.tags,
        )
        self.alias = KmsAlias(self, "alias", name=cfg.alias, target_key_id=self.key.key_id)
        self.arn = self.key.arn
