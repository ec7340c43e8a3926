"""The tenant's KMS key: rotation on, an explicit key policy, and the alias ``alias/<tenant>-lake``."""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

from cdktf_cdktf_provider_aws.kms_alias import KmsAlias
from cdktf_cdktf_provider_aws.kms_key import KmsKey
from constructs import Construct

from modules.policy_document import Condition, Principal, Statement, policy_json

# What a tenant role may do with the key: data-key use only, never administration.
KEY_USE_ACTIONS: tuple[str, ...] = (
    "kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:GenerateDataKeyWithoutPlaintext",
    "kms:ReEncryptFrom", "kms:ReEncryptTo", "kms:DescribeKey",
)
# The Logs service encrypts and decrypts the tenant's log group with the key: the same data-key actions.
LOGS_SERVICE_ACTIONS = KEY_USE_ACTIONS


@dataclasses.dataclass(frozen=True)
class TenantKeyConfig:
    """Inputs of ``TenantKey`` (values may be Terraform expressions).

    Attributes:
        alias: the alias name, ``alias/<tenant>-lake``.
        partition, region, account_id: where the key lives; the account root administers it.
        user_role_arns: the tenant's roles, allowed to use (not administer) the key.
        log_group_name: the CloudWatch log group the Logs service may encrypt with the key.
        tags: tags of the key.
        deletion_window_in_days: waiting period before a scheduled deletion. @default - 30 days
        enable_key_rotation: yearly automatic rotation. @default - True
    """

    alias: str
    partition: str
    region: str
    account_id: str
    user_role_arns: Sequence[str]
    log_group_name: str
    tags: Mapping[str, str]
    deletion_window_in_days: int = 30
    enable_key_rotation: bool = True


def key_policy_statements(cfg: TenantKeyConfig) -> list[Statement]:
    root = f"arn:{cfg.partition}:iam::{cfg.account_id}:root"
    log_group_arn = f"arn:{cfg.partition}:logs:{cfg.region}:{cfg.account_id}:log-group:{cfg.log_group_name}"
    return [
        # Without this statement nobody (not even IAM admins) could manage the key.
        Statement("AccountRootAdministersKey", ["kms:*"], "*", principals=[Principal("AWS", root)]),
        Statement("TenantRolesUseKey", list(KEY_USE_ACTIONS), "*",
                  principals=[Principal("AWS", list(cfg.user_role_arns))]),
        Statement("CloudWatchLogsEncryptsTenantLogGroup", list(LOGS_SERVICE_ACTIONS), "*",
                  principals=[Principal("Service", f"logs.{cfg.region}.amazonaws.com")],
                  conditions=[Condition("ArnEquals", "kms:EncryptionContext:aws:logs:arn", log_group_arn)]),
    ]


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
