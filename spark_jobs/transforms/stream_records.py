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

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_jobs.contract import LandingSpec
from spark_jobs.transforms import bronze as bronze_tx

STREAM_COLUMNS: tuple[tuple[str, str], ...] = (
    ("_stream_arrival_ts", "timestamp"), ("_stream_shard_id", "string"), ("_stream_sequence_number", "string"),
)
# Firehose's default time prefix (YYYY/MM/DD/HH/) right above the object.
STREAM_OBJECT_PATTERN = r"/[0-9]{4}/[0-9]{2}/[0-9]{2}/[0-9]{2}/[^/]+$"
STREAM_FORMAT = "json_lines"


def is_stream_object(source_file: Column) -> Column:
    return source_file.rlike(STREAM_OBJECT_PATTERN)


def unwrap_envelopes(records: DataFrame) -> DataFrame:
    """(_raw, _is_malformed, _source_file, _record_index) of stream lines -> the record inside each
    envelope as ``_raw`` (re-checked for malformation), plus the stream columns (``_file_problem``
    passes through when present)."""
    sequence = F.get_json_object(F.col("_raw"), "$._kinesis.sequenceNumber")
    data = F.get_json_object(F.col("_raw"), "$._data")
    is_envelope = sequence.isNotNull() & data.isNotNull()
    raw = F.when(is_envelope, data).otherwise(F.col("_raw"))
    arrival_ms = F.get_json_object(F.col("_raw"), "$._kinesis.approximateArrivalTimestamp").cast("double")
    return records.select(
        raw.alias("_raw"),
        (~bronze_tx.is_json_object(raw)).alias("_is_malformed"),
        "_source_file",
        "_record_index",
        F.when(is_envelope, (arrival_ms / 1000).cast("timestamp")).alias("_stream_arrival_ts"),
        F.when(is_envelope, F.get_json_object(F.col("_raw"), "$._kinesis.shardId")).alias("_stream_shard_id"),
        F.when(is_envelope, sequence).alias("_stream_sequence_number"),
        *[c for c in records.columns if c == "_file_problem"],
    )


def split_landing_records(landing_files: DataFrame, landing: LandingSpec | str, field_count: int | None = None) -> DataFrame:
    """Like ``bronze.split_landing_records``, for a mix of producer files (the contract's format) and
    stream objects (JSON lines, envelopes unwrapped); adds the stream columns (null for files).
    Streams deliver JSON only: in a CSV dataset every file is read as CSV wherever it lies, and no
    stream columns are added."""
    landing = bronze_tx.landing_spec(landing)
    files = landing_files.select("value", "_source_file")
    if landing.format not in ("json_array", "json_lines"):
        return bronze_tx.split_landing_records(files, landing, field_count)
    from_stream = is_stream_object(F.col("_source_file"))
    dropped = bronze_tx.split_landing_records(files.where(~from_stream), landing)
    dropped = dropped.select(*dropped.columns, *[F.lit(None).cast(t).alias(c) for c, t in STREAM_COLUMNS])
    streamed = unwrap_envelopes(bronze_tx.split_landing_records(files.where(from_stream), STREAM_FORMAT))
    return dropped.unionByName(streamed)
