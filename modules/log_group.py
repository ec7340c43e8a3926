"""The tenant's CloudWatch log group (EMR job logs), encrypted with the tenant key, with retention."""
from __future__ import annotations

import dataclasses
from typing import Mapping

from cdktf_cdktf_provider_aws.cloudwatch_log_group import CloudwatchLogGroup
from constructs import Construct


@dataclasses.dataclass(frozen=True)
class LogGroupConfig:
    """Inputs of ``TenantLogGroup`` (values may be Terraform expressions).

    Attributes:
        name: the log group, ``/tenantlake/<tenant>/emr``.
        kms_key_arn: the tenant key.
        retention_in_days: days CloudWatch keeps events (the module passes retention_days["logs"],
            default 90).
        tags: tags of the log group.
    """

    name: str
    kms_key_arn: str
    retention_in_days: float
    tags: Mapping[str, str]


class TenantLogGroup(Construct):
    def __init__(self, scope: Construct, id_: str, cfg: LogGroupConfig) -> None:
        super().__init__(scope, id_)
        self.log_group = CloudwatchLogGroup(self, "log_group", name=cfg.name, kms_key_id=cfg.kms_key_arn,
                                            retention_in_days=cfg.retention_in_days, tags=cfg.tags)
        self.name = self.log_group.name
        self.arn = self.log_group.arn
