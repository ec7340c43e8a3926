"""Stream objects in landing/: JSON lines under Firehose's time prefix, envelopes unwrapped, metadata kept."""
from __future__ import annotations

import datetime as dt
import json

from spark_jobs.transforms import stream_records
from tests.spark_jobs.transforms.landing_records import split_landing_records

STREAM_OBJECT = "s3a://lake/landing/iot/2026/11/22/00/acme-lake-iot-to-landing-1-2026-11-22-00-49-42-x.jsonl"


def _envelope(record_text: str, seq: str, arrival_ms: int = 1795308582995) -> str:
    return json.dumps({"_data": record_text, "_kinesis": {"approximateArrivalTimestamp": arrival_ms,
                                                          "shardId": "shardId-000000000000",
                                                          "sequenceNumber": seq, "partitionKey": "sensor-001"}})


def _files(spark, *files):
    return spark.createDataFrame(list(files), "value string, _source_file string")


def test_stream_objects_are_json_lines_whatever_the_contract_format(spark):
    body = "\n".join([_envelope('{"sensor_id":"sensor-001"}', "1"), _envelope('[{"sensor_id":"sen', "2"),
                      '{"sensor_id":"sensor-002"}']) + "\n"
    landing = _files(spark, ('[{"sensor_id":"sensor-003"}]', "s3a://lake/landing/iot/part-0-000000.json"),
                     (body, STREAM_OBJECT))
    split = split_landing_records(landing, "json_array", streams=True)
    assert split.where("_file_problem IS NOT NULL").count() == 0
    columns = ["_raw", "_is_malformed", "_source_file", "_record_index", *[c for c, _ in stream_records.STREAM_COLUMNS]]
    rows = split.select(*columns).orderBy("_source_file", "_record_index").collect()
    arrival = dt.datetime(2026, 11, 22, 0, 49, 42, 995000)
    assert [tuple(r) for r in rows] == [
        ('{"sensor_id":"sensor-001"}', False, STREAM_OBJECT, 0, arrival, "shardId-000000000000", "1"),
        ('[{"sensor_id":"sen', True, STREAM_OBJECT, 1, arrival, "shardId-000000000000", "2"),
        # a plain line (Firehose without the metadata envelope): kept, no stream metadata
        ('{"sensor_id":"sensor-002"}', False, STREAM_OBJECT, 2, None, None, None),
        ('{"sensor_id":"sensor-003"}', False, "s3a://lake/landing/iot/part-0-000000.json", 0, None, None, None),
    ]
    assert [c for c, _ in stream_records.STREAM_COLUMNS] == rows[0].__fields__[-3:]


def test_only_the_firehose_time_prefix_marks_a_stream_object(spark):
    landing = _files(spark, ('{"a":1}\n', "s3a://lake/landing/clickstream/site-01-000000.jsonl"),
                     (_envelope('{"a":2}', "7") + "\n", "/tmp/lake/landing/clickstream/2020/11/16/22/x.jsonl"))
    rows = split_landing_records(landing, "json_lines", streams=True).orderBy("_source_file").collect()
    assert [(r["_raw"], r["_stream_sequence_number"]) for r in rows] == [('{"a":2}', "7"), ('{"a":1}', None)]


def test_a_csv_dataset_has_no_stream_objects(spark):
    """Streams deliver JSON: in a CSV dataset a file under a YYYY/MM/DD/HH/ folder is a CSV file like any other."""
    landing = _files(spark, ("a,b\n1,2\n", "/tmp/lake/landing/weather/2020/11/16/22/x.csv"))
    rows = split_landing_records(landing, "csv", streams=True).collect()
    assert [(r["_raw"], r["_header"], r["_is_malformed"]) for r in rows] == [("1,2", "a,b", False)]
    assert not [c for c in rows[0].__fields__ if c.startswith("_stream_")]
