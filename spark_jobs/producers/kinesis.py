"""Produce generated records to a Kinesis data stream (``put_records``, partition key = the source).

Each landing record of ``spark_jobs.datagen`` becomes one Kinesis record whose data is the record's
exact text (what the file sink would have written), so bronze sees the same ``_raw`` either way. The
partition key is the contract's ``source_field`` (sensor, site, org): one source's records stay
ordered within one shard. A truncated upload that cannot be split into records (a malformed
``json_array`` file) is sent as one record, as bronze would count it. Batches respect the
``PutRecords`` limits (500 records, 5 MiB) and failed entries are retried with backoff.
"""
from __future__ import annotations

import dataclasses
import json
import time
from typing import Any, Iterable

from spark_jobs.io.s3 import aws_client

MAX_BATCH_RECORDS = 500
MAX_BATCH_BYTES = 5 * 1024 * 1024
MAX_ATTEMPTS = 5
UNKNOWN_SOURCE = "unknown"


class ProducerError(RuntimeError):
    """Records could not be put after retries; the message says how many and why."""


@dataclasses.dataclass(frozen=True)
class StreamRecord:
    data: bytes
    partition_key: str


@dataclasses.dataclass
class ProduceResult:
    stream: str
    records: int = 0
    batches: int = 0
    retried: int = 0
    shards: dict[str, int] = dataclasses.field(default_factory=dict)  # shard id -> records


def records_from_files(files: Iterable[tuple[str, bytes]], landing_format: str, source_field: str) -> list[StreamRecord]:
    """Split landing files (datagen's output) into one stream record per landing record."""
    out: list[StreamRecord] = []
    for name, body in files:
        text = body.decode("utf-8")
        if landing_format == "json_lines":
            texts = [line for line in text.splitlines() if line.strip()]
        else:
            try:
                elements = json.loads(text)
            except ValueError:
                elements = None
            texts = [json.dumps(e, separators=(",", ":")) for e in elements] if isinstance(elements, list) else [text]
        for record_text in texts:
            out.append(StreamRecord(record_text.encode("utf-8"), _partition_key(record_text, source_field, name)))
    return out


def _partition_key(record_text: str, source_field: str, file_name: str) -> str:
    try:
        value = json.loads(record_text).get(source_field)
    except (ValueError, AttributeError):
        value = None
    return str(value) if value not in (None, "") else f"{UNKNOWN_SOURCE}:{file_name}"


def _batches(records: list[StreamRecord]) -> Iterable[list[StreamRecord]]:
    batch: list[StreamRecord] = []
    size = 0
    for record in records:
        record_size = len(record.data) + len(record.partition_key.encode())
        if batch and (len(batch) == MAX_BATCH_RECORDS or size + record_size > MAX_BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(record)
        size += record_size
    if batch:
        yield batch


def put_records(client: Any, stream_name: str, records: list[StreamRecord], sleep=time.sleep) -> ProduceResult:
    """Put every record, in order per batch; retries only the entries Kinesis rejected."""
    result = ProduceResult(stream=stream_name)
    for batch in _batches(records):
        pending = batch
        for attempt in range(MAX_ATTEMPTS):
            response = client.put_records(StreamName=stream_name, Records=[
                {"Data": r.data, "PartitionKey": r.partition_key} for r in pending])
            result.batches += 1
            failed = []
            for record, entry in zip(pending, response["Records"]):
                if entry.get("ErrorCode"):
                    failed.append((record, entry))
                else:
                    result.records += 1
                    result.shards[entry["ShardId"]] = result.shards.get(entry["ShardId"], 0) + 1
            if not failed:
                break
            result.retried += len(failed)
            pending = [record for record, _ in failed]
            sleep(min(2.0, 0.1 * 2 ** attempt))
        else:
            first = failed[0][1]
            raise ProducerError(f"kinesis {stream_name}: {len(pending)} records still rejected after "
                                f"{MAX_ATTEMPTS} attempts ({first.get('ErrorCode')}: {first.get('ErrorMessage')})")
    return result


def stream_for(dataset: str, tenant: str = "", lake_config: str = "") -> tuple[str, dict]:
    """The dataset's Kinesis stream name from the tenant's lake.json (output ``kinesis_stream_names``),
    and the lake.json itself; a one-line ``ProducerError`` when the tenant does not stream it."""
    from spark_jobs.lake.config import read_lake_outputs

    outputs, path = read_lake_outputs(tenant=tenant, lake_config=lake_config)
    streams = outputs.get("kinesis_stream_names") or {}
    if dataset not in streams:
        who = outputs.get("tenant_id", tenant or path)
        raise ProducerError(f"tenant '{who}' has no stream for '{dataset}' (streams: {', '.join(sorted(streams)) or 'none'}); "
                            f"add it to `streams` in its terragrunt.hcl and apply")
    return streams[dataset], outputs


def kinesis_client(outputs: dict, ca_bundle: str = ""):
    """A Kinesis client for the lake's region (the emulator's endpoint locally); credentials from the env."""
    return aws_client("kinesis", region=outputs.get("region") or "", endpoint=outputs.get("s3_endpoint") or "",
                      ca_bundle=ca_bundle or outputs.get("ca_bundle") or "")
