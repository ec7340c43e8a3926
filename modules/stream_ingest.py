"""Streaming ingestion per streamed dataset: Kinesis data stream -> Firehose -> ``landing/<dataset>/``.

One set per entry of the ``streams`` variable (``for_each``; an empty list creates nothing):

| resource | name | settings |
|---|---|---|
| Kinesis data stream | ``<tenant>-lake-<dataset>`` | encrypted with the tenant key (``KMS``), provisioned, ``shard_count`` shard(s), ``retention_hours`` |
| Firehose delivery stream | ``<tenant>-lake-<dataset>-to-landing`` | source: that stream; destination: the lake under ``landing/<dataset>/`` (Firehose adds ``YYYY/MM/DD/HH/``), SSE-KMS with the tenant key, buffering ``buffer_seconds`` / ``buffer_mib``, newline after each record, ``.jsonl`` objects; failed records under ``quarantine/firehose/<dataset>/<error type>/`` |
| IAM role + inline policy | ``<tenant>-lake-<dataset>-firehose`` | trusted by ``firehose.amazonaws.com`` of the tenant account only; reads only its own stream, writes only its own landing and error prefixes, uses the tenant key only through S3 (for the lake) and Kinesis (for its stream) |
| inline policy on the ingest-writer role | ``stream-<dataset>`` | producers may put records into (and describe) that stream only |
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

from cdktf import TerraformIterator, Token
from cdktf_cdktf_provider_aws.iam_role import IamRole
from cdktf_cdktf_provider_aws.iam_role_policy import IamRolePolicy
from cdktf_cdktf_provider_aws.kinesis_firehose_delivery_stream import (
    KinesisFirehoseDeliveryStream,
    KinesisFirehoseDeliveryStreamExtendedS3Configuration,
    KinesisFirehoseDeliveryStreamExtendedS3ConfigurationProcessingConfiguration,
    KinesisFirehoseDeliveryStreamExtendedS3ConfigurationProcessingConfigurationProcessors,
    KinesisFirehoseDeliveryStreamKinesisSourceConfiguration,
)
from cdktf_cdktf_provider_aws.kinesis_stream import KinesisStream, KinesisStreamStreamModeDetails
from constructs import Construct

import tenant_model as model
from modules.policy_document import Condition, Principal, Statement, policy_document
from modules.refs import address

# What Firehose needs to read a Kinesis source (and nothing else on it).
KINESIS_READ_ACTIONS: tuple[str, ...] = ("kinesis:DescribeStream", "kinesis:DescribeStreamSummary",
                                         "kinesis:GetShardIterator", "kinesis:GetRecords", "kinesis:ListShards")
# What a producer needs to write to a stream.
KINESIS_PUT_ACTIONS: tuple[str, ...] = ("kinesis:PutRecord", "kinesis:PutRecords", "kinesis:DescribeStreamSummary",
                                        "kinesis:ListShards")
FIREHOSE_S3_ACTIONS: tuple[str, ...] = ("s3:PutObject", "s3:AbortMultipartUpload")
FIREHOSE_BUCKET_ACTIONS: tuple[str, ...] = ("s3:GetBucketLocation", "s3:ListBucketMultipartUploads")
LANDING_PREFIX = "landing/{dataset}/"
ERROR_PREFIX = "quarantine/firehose/{dataset}/!{{firehose:error-output-type}}/"
FILE_EXTENSION = ".jsonl"


@dataclasses.dataclass(frozen=True)
class StreamIngestConfig:
    """Inputs of ``StreamIngest`` (values may be Terraform expressions).

    Attributes:
        streams: the streamed datasets, a list token (``var.streams``).
        tenant_id, partition, region, account_id: the tenant and where it lives.
        bucket_arn: the lake bucket.
        key_arn: the tenant key (stream encryption and SSE-KMS of delivered objects).
        ingest_writer_role: the ingest-writer role's name; producers assume it.
        tags: tags of streams, delivery streams and roles.
        shard_count: shards per stream (1 MiB/s or 1000 records/s in each). @default - 1
        retention_hours: how long a stream keeps records (Firehose catch-up window). @default - 24
        buffer_seconds: Firehose writes an object after this many seconds... @default - 60
            (``tenant_model.STREAM_BUFFER_SECONDS``)
        buffer_mib: ...or this many MiB, whichever comes first. @default - 1 (``tenant_model.STREAM_BUFFER_MIB``)
    """

    streams: list
    tenant_id: str
    partition: str
    region: str
    account_id: str
    bucket_arn: str
    key_arn: str
    ingest_writer_role: str
    tags: Mapping[str, str]
    shard_count: int = 1
    retention_hours: int = 24
    buffer_seconds: int = model.STREAM_BUFFER_SECONDS
    buffer_mib: int = model.STREAM_BUFFER_MIB


def _name(kind: str, cfg: StreamIngestConfig) -> str:
    return model.stream_name(kind, "${each.value}", tenant_id=cfg.tenant_id)


def firehose_role_arns(streams_ref: str, tenant_id_ref: str, partition_ref: str, account_id_ref: str) -> str:
    """The delivery roles' ARNs as a Terraform list expression (no ``${}``), rendered from the role-name
    template for every dataset of ``streams_ref``: usable where the roles may not be referenced (the key
    policy and bucket policies, which the roles' own permissions depend on through the key)."""
    name = model.stream_name("firehose_role", "${s}", tenant_id=f"${{{tenant_id_ref}}}")
    return f'[for s in {streams_ref} : "arn:${{{partition_ref}}}:iam::${{{account_id_ref}}}:role/{name}"]'


def firehose_trust(cfg: StreamIngestConfig) -> list[Statement]:
    return [Statement("FirehoseOfTenantAccount", ["sts:AssumeRole"], [],
                      principals=[Principal("Service", ["firehose.amazonaws.com"])],
                      conditions=[Condition("StringEquals", "aws:SourceAccount", [cfg.account_id])])]


def firehose_permissions(cfg: StreamIngestConfig, stream_arn: str) -> list[Statement]:
    """The delivery role of one dataset (``${each.value}``): its stream in, its prefixes out."""
    landing = LANDING_PREFIX.format(dataset="${each.value}")
    errors = f"quarantine/firehose/${{each.value}}/"
    objects = [f"{cfg.bucket_arn}/{landing}*", f"{cfg.bucket_arn}/{errors}*"]
    # The lake has S3 Bucket Keys on: S3 then asks KMS with the BUCKET's ARN as aws:s3:arn encryption
    # context, not the object's (AWS "Configuring an S3 Bucket Key"); the object ARNs cover a put that
    # turns the bucket key off. The S3 statement above is what scopes the prefixes.
    encryption_contexts = [cfg.bucket_arn, *objects]
    return [
        Statement("ReadOwnStream", list(KINESIS_READ_ACTIONS), [stream_arn]),
        Statement("LocateBucket", list(FIREHOSE_BUCKET_ACTIONS), [cfg.bucket_arn]),
        Statement("ListOwnPrefixes", ["s3:ListBucket"], [cfg.bucket_arn],
                  conditions=[Condition("StringLike", "s3:prefix", [landing, f"{landing}*", errors, f"{errors}*"])]),
        Statement("WriteOwnPrefixes", list(FIREHOSE_S3_ACTIONS), objects),
        Statement("EncryptOwnObjectsWithTenantKey", ["kms:GenerateDataKey", "kms:Decrypt"], [cfg.key_arn],
                  conditions=[Condition("StringEquals", "kms:ViaService", [f"s3.{cfg.region}.amazonaws.com"]),
                              Condition("StringLike", "kms:EncryptionContext:aws:s3:arn", encryption_contexts)]),
        Statement("DecryptOwnStream", ["kms:Decrypt"], [cfg.key_arn],
                  conditions=[Condition("StringEquals", "kms:ViaService", [f"kinesis.{cfg.region}.amazonaws.com"]),
                              Condition("StringEquals", "kms:EncryptionContext:aws:kinesis:arn", [stream_arn])]),
    ]


def producer_permissions(cfg: StreamIngestConfig, stream_arn: str) -> list[Statement]:
    """Added to the ingest-writer role per stream: put records into that stream only."""
    return [
        Statement("PutOwnStream", list(KINESIS_PUT_ACTIONS), [stream_arn]),
        Statement("EncryptOwnStreamWithTenantKey", ["kms:GenerateDataKey"], [cfg.key_arn],
                  conditions=[Condition("StringEquals", "kms:ViaService", [f"kinesis.{cfg.region}.amazonaws.com"]),
                              Condition("StringEquals", "kms:EncryptionContext:aws:kinesis:arn", [stream_arn])]),
    ]


class StreamIngest(Construct):
    """Per streamed dataset: stream, delivery stream, delivery role, producer grant (all ``for_each``).

    ``stream_names`` / ``delivery_stream_names``: maps dataset -> name, as Terraform expressions.
    """

    def __init__(self, scope: Construct, id_: str, cfg: StreamIngestConfig) -> None:
        super().__init__(scope, id_)
        datasets = TerraformIterator.from_list(cfg.streams)
        self.stream = KinesisStream(
            self, "stream", for_each=datasets, name=_name("kinesis_stream", cfg),
            shard_count=cfg.shard_count, retention_period=cfg.retention_hours,
            stream_mode_details=KinesisStreamStreamModeDetails(stream_mode="PROVISIONED"),
            encryption_type="KMS", kms_key_id=cfg.key_arn, tags=cfg.tags)
        stream_arn = f"${{{address(self.stream)}[each.key].arn}}"

        trust = policy_document(self, "firehose_trust", firehose_trust(cfg))
        self.role = IamRole(
            self, "firehose_role", for_each=datasets, name=_name("firehose_role", cfg),
            assume_role_policy=trust.json, description="tenantlake Firehose delivery role of one stream",
            tags=cfg.tags)
        role_arn = f"${{{address(self.role)}[each.key].arn}}"
        permissions = policy_document(self, "firehose_permissions", firehose_permissions(cfg, stream_arn),
                                      for_each=datasets)
        delivery_policy = IamRolePolicy(
            self, "firehose_policy", for_each=datasets, name="deliver-to-landing",
            role=f"${{{address(self.role)}[each.key].id}}",
            policy=f"${{{address(permissions)}[each.key].json}}")

        producer = policy_document(self, "producer_permissions", producer_permissions(cfg, stream_arn),
                                   for_each=datasets)
        IamRolePolicy(self, "producer_policy", for_each=datasets, name="stream-${each.value}",
                      role=cfg.ingest_writer_role, policy=f"${{{address(producer)}[each.key].json}}")

        self.delivery = KinesisFirehoseDeliveryStream(
            self, "delivery", for_each=datasets, name=_name("delivery_stream", cfg), destination="extended_s3",
            kinesis_source_configuration=KinesisFirehoseDeliveryStreamKinesisSourceConfiguration(
                kinesis_stream_arn=stream_arn, role_arn=role_arn),
            extended_s3_configuration=KinesisFirehoseDeliveryStreamExtendedS3Configuration(
                role_arn=role_arn, bucket_arn=cfg.bucket_arn,
                prefix=LANDING_PREFIX.format(dataset="${each.value}"),
                error_output_prefix=ERROR_PREFIX.format(dataset="${each.value}"),
                buffering_interval=cfg.buffer_seconds, buffering_size=cfg.buffer_mib,
                kms_key_arn=cfg.key_arn, compression_format="UNCOMPRESSED", file_extension=FILE_EXTENSION,
                # One JSON record per line: bronze reads a delivered object as JSON lines.
                processing_configuration=KinesisFirehoseDeliveryStreamExtendedS3ConfigurationProcessingConfiguration(
                    enabled=True, processors=[
                        KinesisFirehoseDeliveryStreamExtendedS3ConfigurationProcessingConfigurationProcessors(
                            type="AppendDelimiterToRecord")]),
            ),
            tags=cfg.tags, depends_on=[delivery_policy])
        self.stream_names = f"${{tomap({{ for k, s in {address(self.stream)} : k => s.name }})}}"
        self.delivery_stream_names = f"${{tomap({{ for k, d in {address(self.delivery)} : k => d.name }})}}"
