"""Bronze transformations: exact rows from tiny landing files."""
from __future__ import annotations

import datetime as dt

from spark_jobs.transforms import bronze


RECORD = ("_raw", "_is_malformed", "_source_file", "_record_index")


def _files(spark, *files):
    return spark.createDataFrame(list(files), "value string, _source_file string")


def _split(landing, landing_format, field_count=None):
    return bronze.split_landing_records(landing, landing_format, field_count)


def test_json_array_file_becomes_one_row_per_element_in_order(spark):
    landing = _files(spark, ('[{"a":1},{"a":2,"b":"x"}]', "f1.json"))
    rows = _split(landing, "json_array").select(*RECORD).orderBy("_record_index").collect()
    assert [tuple(r) for r in rows] == [
        ('{"a":1}', False, "f1.json", 0),
        ('{"a":2,"b":"x"}', False, "f1.json", 1),
    ]


def test_truncated_json_array_file_is_kept_whole_and_flagged(spark):
    landing = _files(spark, ('[{"a":1},{"a":', "bad.json"), ("[]", "empty.json"))
    rows = _split(landing, "json_array").select(*RECORD).collect()
    assert [tuple(r) for r in rows] == [('[{"a":1},{"a":', True, "bad.json", 0)]


def test_array_element_that_is_not_an_object_is_flagged(spark):
    landing = _files(spark, ('[{"a":1},42,"text"]', "f.json"))
    rows = _split(landing, "json_array").select(*RECORD).orderBy("_record_index").collect()
    assert [(r["_raw"], r["_is_malformed"]) for r in rows] == [('{"a":1}', False), ("42", True), ("text", True)]


def test_json_lines_skip_blank_lines_and_flag_broken_ones(spark):
    landing = _files(spark, ('{"a":1}\n\n{"a":\r\n  \n{"a":3}\n', "c.jsonl"))
    rows = _split(landing, "json_lines").select(*RECORD).orderBy("_record_index").collect()
    assert [tuple(r) for r in rows] == [
        ('{"a":1}', False, "c.jsonl", 0),
        ('{"a":', True, "c.jsonl", 2),
        ('{"a":3}', False, "c.jsonl", 4),
    ]


def test_ingest_metadata_states_the_bronze_schema(spark):
    records = spark.createDataFrame(
        [('{"sensor_id":"sensor-001"}', False, "f.json", 0), ("{broken", True, "f.json", 1)],
        "_raw string, _is_malformed boolean, _source_file string, _record_index int",
    )
    at = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    stamped = bronze.add_ingest_metadata(records, batch_id=7, ingested_at=at, source_field="sensor_id")
    assert stamped.columns == ["sensor_id", *bronze.BRONZE_COLUMNS]
    assert [tuple(r) for r in stamped.collect()] == [
        ("sensor-001", '{"sensor_id":"sensor-001"}', False, "f.json", 0, dt.datetime(2026, 1, 2, 3, 4, 5), 7),
        (None, "{broken", True, "f.json", 1, dt.datetime(2026, 1, 2, 3, 4, 5), 7),
    ]
