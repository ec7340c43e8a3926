"""Local stand-in for a Firehose delivery stream whose source is a Kinesis stream.

Why: the embedded emulator (moto 5.2.5) creates such a delivery stream but never delivers anything
through it (it does not bridge Kinesis to Firehose; a DirectPut Firehose does deliver). This
stand-in does that one step, driven by the delivery stream's OWN configuration as the emulator
returns it (``describe_delivery_stream``): source stream, bucket, prefix, buffering hints, file
extension and KMS key. Everything around it is the real thing on the emulator: the producer's
``put_records``, the stream's shards, the S3 put with SSE-KMS, and bronze reading ``landing/``.

What it writes, like Firehose with the module's settings: objects under
``<prefix>YYYY/MM/DD/HH/<delivery stream>-1-YYYY-MM-DD-HH-MM-SS-<uuid><extension>`` (UTC time of the
first record), a new object when the buffer reaches the size hint or spans the interval hint, one
record per line (the module's ``AppendDelimiterToRecord``). Unlike plain Firehose, each line is an
envelope carrying the stream metadata bronze keeps: ``{"_data": "<record text>", "_kinesis":
{"approximateArrivalTimestamp": <epoch ms>, "shardId": ..., "sequenceNumber": ..., "partitionKey": ...}}``
(on AWS a Firehose record-transformation Lambda, which receives ``kinesisRecordMetadata``, would
write the same envelope; without it, lines are plain records and bronze's stream columns are null).

The last delivered sequence number per shard is kept in ``checkpoints/<dataset>/firehose-standin.json``,
so running it again delivers only new records.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import uuid
from typing import Any

GET_RECORDS_LIMIT = 1000


@dataclasses.dataclass(frozen=True)
class DeliveryConfig:
    """The parts of a delivery stream's description the stand-in obeys."""

    name: str
    source_stream_arn: str
    bucket: str
    prefix: str
    buffer_seconds: int
    buffer_mib: int
    file_extension: str
    kms_key_arn: str

    @property
    def source_stream_name(self) -> str:
        return self.source_stream_arn.rsplit("/", 1)[-1]


@dataclasses.dataclass
class DeliveryResult:
    records: int = 0
    objects: list[str] = dataclasses.field(default_factory=list)
    shards: dict[str, int] = dataclasses.field(default_factory=dict)


class StandInError(RuntimeError):
    """The delivery stream is not one the stand-in can serve; the message says why."""


def describe(firehose: Any, delivery_stream: str) -> DeliveryConfig:
    description = firehose.describe_delivery_stream(DeliveryStreamName=delivery_stream)["DeliveryStreamDescription"]
    source = (description.get("Source") or {}).get("KinesisStreamSourceDescription") or {}
    if not source.get("KinesisStreamARN"):
        raise StandInError(f"firehose {delivery_stream}: its source is not a Kinesis stream")
    [destination] = description["Destinations"]
    s3 = destination.get("ExtendedS3DestinationDescription") or destination.get("S3DestinationDescription")
    hints = s3.get("BufferingHints") or {}
    kms = (s3.get("EncryptionConfiguration") or {}).get("KMSEncryptionConfig") or {}
    return DeliveryConfig(
        name=description["DeliveryStreamName"], source_stream_arn=source["KinesisStreamARN"],
        bucket=s3["BucketARN"].split(":::", 1)[1], prefix=s3.get("Prefix", ""),
        buffer_seconds=int(hints.get("IntervalInSeconds", 300)), buffer_mib=int(hints.get("SizeInMBs", 5)),
        file_extension=s3.get("FileExtension", ""), kms_key_arn=kms.get("AWSKMSKeyARN", ""))


def envelope(record: dict[str, Any], shard_id: str) -> str:
    arrival = record["ApproximateArrivalTimestamp"]
    arrival_ms = int(arrival.timestamp() * 1000) if isinstance(arrival, dt.datetime) else int(float(arrival) * 1000)
    return json.dumps({
        "_data": record["Data"].decode("utf-8", errors="replace"),
        "_kinesis": {"approximateArrivalTimestamp": arrival_ms, "shardId": shard_id,
                     "sequenceNumber": record["SequenceNumber"], "partitionKey": record["PartitionKey"]},
    }, separators=(",", ":"))


def _object_key(cfg: DeliveryConfig, first_arrival: dt.datetime) -> str:
    t = first_arrival.astimezone(dt.timezone.utc)
    return (f"{cfg.prefix}{t:%Y/%m/%d/%H}/{cfg.name}-1-{t:%Y-%m-%d-%H-%M-%S}-{uuid.uuid4()}{cfg.file_extension}")


def _checkpoint_key(dataset: str) -> str:
    return f"checkpoints/{dataset}/firehose-standin.json"


def _read_checkpoint(s3: Any, bucket: str, dataset: str) -> dict[str, str]:
    try:
        return json.loads(s3.get_object(Bucket=bucket, Key=_checkpoint_key(dataset))["Body"].read())
    except s3.exceptions.NoSuchKey:
        return {}


def deliver(firehose: Any, kinesis: Any, s3: Any, delivery_stream: str, dataset: str) -> DeliveryResult:
    """Read every new record of the source stream's shards and write Firehose-style objects."""
    cfg = describe(firehose, delivery_stream)
    extra = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": cfg.kms_key_arn} if cfg.kms_key_arn else {}
    checkpoint = _read_checkpoint(s3, cfg.bucket, dataset)
    result = DeliveryResult()
    max_bytes = cfg.buffer_mib * 1024 * 1024
    shards = kinesis.list_shards(StreamName=cfg.source_stream_name)["Shards"]
    for shard in sorted(shards, key=lambda s: s["ShardId"]):
        shard_id = shard["ShardId"]
        after = checkpoint.get(shard_id)
        iterator = kinesis.get_shard_iterator(
            StreamName=cfg.source_stream_name, ShardId=shard_id,
            **({"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "StartingSequenceNumber": after} if after
               else {"ShardIteratorType": "TRIM_HORIZON"}))["ShardIterator"]
        buffer: list[str] = []
        buffer_bytes, first_arrival = 0, None

        def flush() -> None:
            nonlocal buffer, buffer_bytes, first_arrival
            if buffer:
                key = _object_key(cfg, first_arrival)
                s3.put_object(Bucket=cfg.bucket, Key=key, Body=("\n".join(buffer) + "\n").encode(), **extra)
                result.objects.append(key)
            buffer, buffer_bytes, first_arrival = [], 0, None

        while iterator:
            response = kinesis.get_records(ShardIterator=iterator, Limit=GET_RECORDS_LIMIT)
            for record in response["Records"]:
                arrival = record["ApproximateArrivalTimestamp"]
                line = envelope(record, shard_id)
                spans_interval = first_arrival is not None and \
                    (arrival - first_arrival).total_seconds() >= cfg.buffer_seconds
                if buffer and (spans_interval or buffer_bytes + len(line) + 1 > max_bytes):
                    flush()
                if first_arrival is None:
                    first_arrival = arrival
                buffer.append(line)
                buffer_bytes += len(line) + 1
                checkpoint[shard_id] = record["SequenceNumber"]
                result.records += 1
                result.shards[shard_id] = result.shards.get(shard_id, 0) + 1
            if not response["Records"] and response.get("MillisBehindLatest", 0) == 0:
                break
            iterator = response.get("NextShardIterator")
        flush()
    s3.put_object(Bucket=cfg.bucket, Key=_checkpoint_key(dataset), Body=json.dumps(checkpoint).encode(), **extra)
    return result


def main(argv: list[str] | None = None) -> int:
    """``python -m spark_jobs.producers.firehose_standin --tenant T --dataset D``: deliver once (emulator only)."""
    import argparse
    import sys

    from spark_jobs.io.s3 import aws_client
    from spark_jobs.lake.config import LakeConfigError, read_lake_outputs

    parser = argparse.ArgumentParser(prog="python -m spark_jobs.producers.firehose_standin",
                                     description="Deliver a Kinesis-sourced Firehose once (local stand-in; see README).")
    parser.add_argument("--tenant", default="")
    parser.add_argument("--lake-config", default="")
    parser.add_argument("--dataset", required=True)
    args = parser.parse_args(argv)
    try:
        outputs, path = read_lake_outputs(tenant=args.tenant, lake_config=args.lake_config)
    except LakeConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    name = (outputs.get("firehose_delivery_stream_names") or {}).get(args.dataset)
    if not name:
        print(f"error: no delivery stream for '{args.dataset}' in {path}", file=sys.stderr)
        return 2
    where = dict(region=outputs.get("region") or "", endpoint=outputs.get("s3_endpoint") or "",
                 ca_bundle=outputs.get("ca_bundle") or "")
    result = deliver(aws_client("firehose", **where), aws_client("kinesis", **where), aws_client("s3", **where),
                     name, args.dataset)
    print(f"firehose stand-in {name}: {result.records} records -> {len(result.objects)} objects")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
