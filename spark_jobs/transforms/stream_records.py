"""Landing objects delivered by a stream (Firehose): JSON lines, with the stream metadata when present.

Firehose writes under ``landing/<dataset>/YYYY/MM/DD/HH/`` (its UTC time prefix), one record per line
(the module's ``AppendDelimiterToRecord``), whatever the dataset's file-sink format is; that time
prefix is how bronze tells a delivered object from a file a producer dropped. A line may be an
envelope carrying the Kinesis metadata (what the local stand-in writes, and what a Firehose
record-transformation Lambda would write on AWS)::

    {"_data": "<the record's text>", "_kinesis": {"approximateArrivalTimestamp": <epoch ms>,
     "shardId": "shardId-000000000000", "sequenceNumber": "4959...", "partitionKey": "sensor-001"}}

Bronze then keeps ``_data`` as ``_raw`` and the metadata as ``_stream_arrival_ts``,
``_stream_shard_id`` and ``_stream_sequence_number``; for every other record these are null.
"""
from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

STREAM_COLUMNS: tuple[tuple[str, str], ...] = (
    ("_stream_arrival_ts", "timestamp"), ("_stream_shard_id", "string"), ("_stream_sequence_number", "string"),
)
# Firehose's default time prefix (YYYY/MM/DD/HH/) right above the object.
STREAM_OBJECT_PATTERN = r"/[0-9]{4}/[0-9]{2}/[0-9]{2}/[0-9]{2}/[^/]+$"


def envelope_columns(raw: Column, from_stream: Column) -> list[Column]:
    """For a line of a stream object (``from_stream``): the record inside its envelope as ``_record_raw``
    (the line itself when it is no envelope), plus the stream columns (null for files and plain lines)."""
    sequence = F.get_json_object(raw, "$._kinesis.sequenceNumber")
    data = F.get_json_object(raw, "$._data")
    is_envelope = from_stream & sequence.isNotNull() & data.isNotNull()
    arrival_ms = F.get_json_object(raw, "$._kinesis.approximateArrivalTimestamp").cast("double")
    return [
        F.when(is_envelope, data).otherwise(raw).alias("_record_raw"),
        F.when(is_envelope, (arrival_ms / 1000).cast("timestamp")).alias("_stream_arrival_ts"),
        F.when(is_envelope, F.get_json_object(raw, "$._kinesis.shardId")).alias("_stream_shard_id"),
        F.when(is_envelope, sequence).alias("_stream_sequence_number"),
    ]

