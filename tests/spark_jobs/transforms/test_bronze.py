"""Bronze transformations: exact rows from tiny landing files."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from spark_jobs.contract.model import parse_contract
from spark_jobs.contract.parts import LandingSpec
from spark_jobs.transforms import bronze
from tests.spark_jobs.transforms.landing_records import split_landing_records


RECORD = ("_raw", "_is_malformed", "_source_file", "_record_index")


def _files(spark, *files):
    return spark.createDataFrame(list(files), "value string, _source_file string")


def _split(landing, landing_format, field_count=None):
    return split_landing_records(landing, landing_format, field_count)


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
    # Each element's own JSON text: a string element keeps its quotes.
    assert [(r["_raw"], r["_is_malformed"]) for r in rows] == [('{"a":1}', False), ("42", True), ('"text"', True)]


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


CSV = LandingSpec(format="csv", null_values=("", "NA"))


def test_csv_records_keep_their_raw_text_and_their_file_header(spark):
    landing = _files(spark, ('id,v\n1,"a\nb"\n\n2,x,extra\n3\n', "a.csv"), ("v,id\r\nq,9\r\n", "b.csv"))
    rows = _split(landing, CSV).orderBy("_source_file", "_record_index").collect()
    assert [(r["_raw"], r["_is_malformed"], r["_record_index"], r["_header"]) for r in rows] == [
        ('1,"a\nb"', False, 1, "id,v"),
        ("2,x,extra", True, 3, "id,v"),   # three fields under a two-field header
        ("3", True, 4, "id,v"),
        ("q,9", False, 1, "v,id"),
    ]


def test_csv_header_only_file_and_unusable_header(spark):
    landing = _files(spark, ("id,v\n", "header-only.csv"), ("id,id\n1,2\n", "dup.csv"))
    rows = _split(landing, CSV).select(*RECORD).collect()
    assert [tuple(r) for r in rows] == [("1,2", True, "dup.csv", 1)]


def test_csv_without_header_checks_the_contract_field_count(spark):
    landing = _files(spark, ("1,a\n2\n", "h.csv"))
    rows = _split(landing, LandingSpec(format="csv", header=False), 2).orderBy("_record_index").collect()
    assert [(r["_raw"], r["_is_malformed"], r["_header"]) for r in rows] == [("1,a", False, None), ("2", True, None)]


def test_files_that_are_not_text_carry_a_problem(spark):
    landing = spark.createDataFrame([(bytearray(b"\x1f\x8b\x08\x00rest"), "a.csv"), (bytearray(b"PAR1\x00\x00"), "b.csv"),
                                     (bytearray(b"id,v\n1,\x00\n"), "c.csv"), (bytearray(b"id,v\n1,2\n"), "d.csv")],
                                    "value binary, _source_file string")
    landing = landing.selectExpr("cast(value as string) as value", "_source_file")
    problems = {r["_source_file"]: r["_file_problem"] for r in _split(landing, CSV).collect()}
    assert problems == {"a.csv": "is gzip-compressed, but its name does not end in .gz",
                        "b.csv": "is a Parquet file, not CSV",
                        "c.csv": "holds NUL bytes: binary data, not CSV text",
                        "d.csv": None}


def test_parquet_rows_become_json_objects(spark):
    rows = spark.createDataFrame(
        [(1, float("nan"), dt.datetime(2024, 5, 1, 12, 0, 0, 250000), None, "p.parquet", 0)],
        "id long, v double, ts timestamp, s string, _source_file string, _record_index long")
    record = bronze.parquet_rows_to_records(rows).collect()[0]
    assert json.loads(record["_raw"]) == {"id": 1, "v": "NaN", "ts": "2024-05-01T12:00:00.250000Z"}
    assert (record["_is_malformed"], record["_source_file"], record["_record_index"]) == (False, "p.parquet", 0)


def test_source_value_reads_the_csv_field_by_header_name(spark):
    contract = parse_contract({"dataset": "mini", "landing": {"format": "csv"}, "source_field": "site", "key": ["id"],
                               "event_time": "ts", "schema": [{"name": "id", "type": "string"},
                                                              {"name": "site", "type": "string", "source": "Site"},
                                                              {"name": "ts", "type": "timestamp"}]})
    # Records carry the contract's fields (_fields), parsed once: the split is given them.
    records = _split(_files(spark, ("Site,id,ts\ns-1,1,x\n", "a.csv")), contract.landing, contract.landing_fields)
    stamped = bronze.add_ingest_metadata(records, batch_id=1, ingested_at=dt.datetime(2026, 1, 1), source_field="site",
                                         source=bronze.source_value(contract))
    assert [(r["site"], r["_header"]) for r in stamped.collect()] == [("s-1", "Site,id,ts")]


def test_record_index_is_64_bit(spark, tmp_path):
    """A record past 2**31 in its file (here: the lines before a split, as the JVM counts them) keeps its
    index through bronze's columns and its Parquet; a layer from before (32-bit) refuses it instead of wrapping."""
    lines = spark.createDataFrame([(b'{"a":1}', "big.jsonl", 0), (b'{"a":2}', "big.jsonl", 0)],
                                  "_line binary, _source_file string, _split_start long").coalesce(1)
    records = bronze.records_from_lines(lines, "json_lines", ("a",), offsets={("big.jsonl", 0): 3_000_000_000})
    at = dt.datetime(2026, 1, 1)
    stamped = bronze.add_ingest_metadata(records, batch_id=0, ingested_at=at, source_field=None)
    stamped.drop("_kind", "_file_problem").write.parquet(str(tmp_path / "b"))
    back = spark.read.parquet(str(tmp_path / "b"))
    assert dict(back.dtypes)["_record_index"] == "bigint"
    assert sorted(r[0] for r in back.select("_record_index").collect()) == [3_000_000_000, 3_000_000_001]
    legacy = bronze.add_ingest_metadata(records, batch_id=0, ingested_at=at, source_field=None, record_index="int")
    assert dict(legacy.dtypes)["_record_index"] == "int"
    with pytest.raises(Exception, match="holds more than 2,147,483,647 records"):
        legacy.collect()
