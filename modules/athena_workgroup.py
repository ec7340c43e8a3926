"""An Athena workgroup of the tenant: where one kind of querying principal runs SQL on the gold tables.

The module makes two (``tenant_model.ATHENA_RESULT_PREFIXES``): ``<tenant>-lake`` for the consumer, its results
under ``s3://<lake>/athena/consumer/``, and ``<tenant>-lake-personal`` for the readers of personal data, under
``athena/personal/``: a reader's results may hold personal columns, and the consumer may not read them (its
identity policy names ``athena/consumer/`` only, and the lake's ``DenyPersonalResultsOutsideReaders`` denies
``athena/personal/`` to everyone but the readers, the erasure role and the admins). Results are SSE-KMS with the
tenant key, and each workgroup enforces its configuration (a query cannot send its results elsewhere or
unencrypted). A per-query scan limit stops a runaway query. Athena reads the tables and writes results with the
caller's own credentials (forward access sessions): the caller's identity policy grants the workgroup, the gold
database and the results prefix, and the lake's bucket policy lets requests that Athena makes for those principals
through without a VPC endpoint (``modules/bucket_policy.py``). The emulator stores the workgroups and records
the queries started in them (with the output location the workgroup enforces); no query runs here.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

from cdktf_cdktf_provider_aws.athena_workgroup import (
    AthenaWorkgroup,
    AthenaWorkgroupConfiguration,
    AthenaWorkgroupConfigurationResultConfiguration,
    AthenaWorkgroupConfigurationResultConfigurationEncryptionConfiguration,
)
from cdktf import Token
from constructs import Construct

import tenant_model as model

TEN_GIB = 10 * 1024 ** 3


@dataclasses.dataclass(frozen=True)
class AthenaWorkgroupConfig:
    """Inputs of ``TenantWorkgroup`` (values may be Terraform expressions).

    Attributes:
        name: the workgroup, ``<tenant>-lake`` (``-personal`` for the readers of personal data).
        lake_bucket: the lake bucket's name (results under ``results_prefix``).
        kms_key_arn: the tenant key, for the results.
        tags: tags of the workgroup.
        force_destroy: delete the workgroup with its saved queries on destroy (a bool expression; the
            module passes true only for the local environment). @default - False
        bytes_scanned_cutoff_per_query: a query that scans more is cancelled. @default - 10 GiB
        results_prefix: where the workgroup's query results go in the lake. @default - ``athena/consumer``
            (``tenant_model.ATHENA_RESULT_PREFIXES["consumer"]``)
        description: the workgroup's description. @default - "tenantlake: SQL on the tenant's gold tables"
    """

    name: str
    lake_bucket: str
    kms_key_arn: str
    tags: Mapping[str, str]
    force_destroy: object = False
    bytes_scanned_cutoff_per_query: int = TEN_GIB
    results_prefix: str = model.ATHENA_RESULT_PREFIXES["consumer"]
    description: str = "tenantlake: SQL on the tenant's gold tables"


class TenantWorkgroup(Construct):
    """One ``aws_athena_workgroup``; ``name``, ``arn`` and ``output_location``."""

    def __init__(self, scope: Construct, id_: str, cfg: AthenaWorkgroupConfig) -> None:
        super().__init__(scope, id_)
        self.output_location = f"s3://{cfg.lake_bucket}/{cfg.results_prefix}/"
        self.workgroup = AthenaWorkgroup(
            self, "workgroup", name=cfg.name, description=cfg.description,
            force_destroy=cfg.force_destroy if isinstance(cfg.force_destroy, bool) else Token.as_any(cfg.force_destroy),
            tags=cfg.tags,
            configuration=AthenaWorkgroupConfiguration(
                enforce_workgroup_configuration=True, publish_cloudwatch_metrics_enabled=True,
                bytes_scanned_cutoff_per_query=cfg.bytes_scanned_cutoff_per_query,
                result_configuration=AthenaWorkgroupConfigurationResultConfiguration(
                    output_location=self.output_location,
                    encryption_configuration=AthenaWorkgroupConfigurationResultConfigurationEncryptionConfiguration(
                        encryption_option="SSE_KMS", kms_key_arn=cfg.kms_key_arn))))
        self.name = self.workgroup.name
        self.arn = self.workgroup.arn
