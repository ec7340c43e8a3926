"""Silver transformations: typing, rule names, dedupe, lateness, output schemas; exact rows."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from spark_jobs.contract.model import parse_contract
from spark_jobs.transforms import silver
from tests.spark_jobs.conftest import ts

CONTRACT = parse_contract({
    "dataset": "mini",
    "landing": {"format": "json_lines"},
    "source_field": "sensor_id",
    "key": ["event_id"],
    "event_time": "event_ts",
    "lateness_minutes": 30,
    "schema": [
        {"name": "event_id", "type": "string", "required": True},
        {"name": "sensor_id", "type": "string", "required": True, "regex": "^sensor-[0-9]{3}$"},
        {"name": "event_ts", "type": "timestamp", "required": True, "format": "yyyy-MM-dd HH:mm:ss"},
        {"name": "temperature", "type": "double", "min": -40, "max": 85},
        {"name": "count", "type": "int"},
        {"name": "status", "type": "string", "case": "lower", "allowed": ["ok", "fault"]},
    ],
    "rules": [{"name": "fault_is_hot", "expr": "status <> 'fault' OR temperature > 50"}],
    "derived": [{"name": "temperature_f", "expr": "temperature * 9 / 5 + 32"}],
})
AT = dt.datetime(2026, 1, 1, 0, 0, 0)


def _bronze(spark, records, ingested_at=AT, batch_id=0, source_file="f.jsonl"):
    rows = []
    for i, record in enumerate(records):
        raw = record if isinstance(record, str) else json.dumps(record)
        rows.append((raw, False, source_file, i, ingested_at, batch_id))
    return spark.createDataFrame(
        rows, "_raw string, _is_malformed boolean, _source_file string, _record_index int, "
              "_ingested_at timestamp, _batch_id long")


GOOD = {"event_id": "e1", "sensor_id": "sensor-001", "event_ts": "2020-11-16 22:59:59",
        "temperature": 21.5, "count": 3, "status": " OK "}


def _failed(spark, records):
    flagged = silver.flag_invalid_rows(silver.parse_records(_bronze(spark, records), CONTRACT), CONTRACT)
    return [r["_failed_rules"] for r in flagged.orderBy("_record_index").collect()]


def test_parse_casts_to_contract_types_and_normalises(spark):
    parsed = silver.parse_records(_bronze(spark, [GOOD]), CONTRACT)
    row = parsed.select(*CONTRACT.column_names).first()
    assert tuple(row) == ("e1", "sensor-001", ts("2020-11-16 22:59:59"), 21.5, 3, "ok")


CASES = [
    ({}, []),
    ({"temperature": "hot"}, ["temperature_type"]),
    ({"count": "2.5"}, ["count_type"]),
    ({"event_ts": "16/11/2020"}, ["event_ts_type"]),
    ({"sensor_id": None}, ["sensor_id_required"]),
    ({"sensor_id": "  "}, ["sensor_id_required"]),
    ({"sensor_id": "SENSOR-1"}, ["sensor_id_regex"]),
    ({"temperature": 150}, ["temperature_range"]),
    ({"status": "broken"}, ["status_allowed"]),
    ({"status": "fault", "temperature": 20}, ["fault_is_hot"]),
    ({"firmware": "1.2"}, ["unknown_fields"]),
    ({"event_id": None, "temperature": -41}, ["event_id_required", "temperature_range"]),
    ({"status": "fault", "temperature": None}, []),  # a rule over a missing optional value is not broken
]


def test_each_broken_rule_is_named(spark):
    records = []
    for change, _ in CASES:
        record = {**GOOD, **change}
        records.append({k: v for k, v in record.items() if v is not None})
    assert _failed(spark, records) == [expected for _, expected in CASES]


def test_malformed_records_fail_only_malformed_record(spark):
    assert _failed(spark, ['{"event_id": "e1", ', "[1, 2]"]) == [["malformed_record"], ["malformed_record"]]


def test_dedupe_keeps_latest_ingest_then_breaks_ties_deterministically(spark):
    early = _bronze(spark, [{**GOOD, "temperature": 1.0}], ingested_at=AT, batch_id=0, source_file="a.jsonl")
    late = _bronze(spark, [{**GOOD, "temperature": 2.0}], ingested_at=AT + dt.timedelta(hours=1), batch_id=1,
                   source_file="a.jsonl")
    tie_a = _bronze(spark, [{**GOOD, "event_id": "e2", "temperature": 3.0}], source_file="a.jsonl")
    tie_b = _bronze(spark, [{**GOOD, "event_id": "e2", "temperature": 4.0}], source_file="b.jsonl")
    bronze = early.unionByName(late).unionByName(tie_a).unionByName(tie_b)
    parsed = silver.valid_rows(silver.flag_invalid_rows(silver.parse_records(bronze, CONTRACT), CONTRACT))
    deduped = silver.dedupe_latest(parsed, CONTRACT)
    assert sorted((r["event_id"], r["temperature"]) for r in deduped.collect()) == [("e1", 2.0), ("e2", 4.0)]


def test_late_rows_trail_their_file_by_more_than_the_lateness(spark):
    records = [{**GOOD, "event_id": "now", "event_ts": "2020-11-16 23:00:00"},
               {**GOOD, "event_id": "29min", "event_ts": "2020-11-16 22:31:00"},
               {**GOOD, "event_id": "31min", "event_ts": "2020-11-16 22:29:00"}]
    parsed = silver.parse_records(_bronze(spark, records), CONTRACT)
    flagged = silver.flag_late_rows(parsed, CONTRACT)
    assert sorted((r["event_id"], r["_is_late"]) for r in flagged.collect()) == [
        ("29min", False), ("31min", True), ("now", False)]


def test_to_silver_enriches_and_states_the_schema(spark):
    parsed = silver.flag_late_rows(silver.parse_records(_bronze(spark, [GOOD]), CONTRACT), CONTRACT)
    out = silver.to_silver(parsed, CONTRACT)
    assert out.columns == [*CONTRACT.column_names, "temperature_f", "event_date", "_is_late",
                           "_ingested_at", "_source_file", "_batch_id", "_record_index"]
    row = out.first()
    assert (row["temperature_f"], row["event_date"], row["_is_late"]) == (70.7, dt.date(2020, 11, 16), False)


def test_to_quarantine_keeps_raw_reasons_and_lineage(spark):
    bad = {**GOOD, "temperature": "hot"}
    flagged = silver.flag_invalid_rows(silver.parse_records(_bronze(spark, [bad, "{oops"]), CONTRACT), CONTRACT)
    out = silver.to_quarantine(silver.invalid_rows(flagged), CONTRACT, run_id="r1").orderBy("_record_index")
    assert out.columns == list(silver.QUARANTINE_COLUMNS)
    assert [tuple(r) for r in out.collect()] == [
        (json.dumps(bad), ["temperature_type"], "f.jsonl", 0, 0, AT, "r1", dt.date(2020, 11, 16)),
        ("{oops", ["malformed_record"], "f.jsonl", 0, 1, AT, "r1", None),
    ]


CSV_CONTRACT = parse_contract({
    "dataset": "csvmini",
    "landing": {"format": "csv", "null_values": ["", "NA"]},
    "key": ["event_id"],
    "event_time": "event_ts",
    "schema": [
        {"name": "event_id", "type": "string", "required": True, "source": "ID"},
        {"name": "event_ts", "type": "timestamp", "required": True, "format": "yyyy-MM-dd HH:mm:ss"},
        {"name": "temperature", "type": "double", "min": -40, "max": 85},
        {"name": "day", "type": "string"},
        {"name": "when", "type": "timestamp", "format": "yyyy-M-d", "computed": "concat('1973-5-', day)"},
    ],
})


def _csv_bronze(spark, *files):
    """Bronze rows as the bronze job writes them for CSV files: (header, [records])."""
    rows = []
    for n, (header, records) in enumerate(files):
        rows += [(raw, False, f"f{n}.csv", i + 1, AT, 0, header) for i, raw in enumerate(records)]
    return spark.createDataFrame(rows, "_raw string, _is_malformed boolean, _source_file string, _record_index int, "
                                       "_ingested_at timestamp, _batch_id long, _header string")


def test_csv_fields_are_read_by_each_file_header(spark):
    bronze = _csv_bronze(spark, ("ID,event_ts,temperature,day", ["e1,2020-11-16 22:59:59,21.5,3"]),
                         ("temperature,day,event_ts,ID", ['NA,4,"2020-11-16 23:00:00",e2']))
    rows = silver.flag_invalid_rows(silver.parse_records(bronze, CSV_CONTRACT), CSV_CONTRACT).orderBy("event_id").collect()
    assert [(r["event_id"], r["event_ts"], r["temperature"], r["when"], r["_failed_rules"]) for r in rows] == [
        ("e1", ts("2020-11-16 22:59:59"), 21.5, ts("1973-05-03 00:00:00"), []),
        ("e2", ts("2020-11-16 23:00:00"), None, ts("1973-05-04 00:00:00"), []),
    ]


def test_csv_header_mismatch_and_bad_records_are_named(spark):
    bronze = _csv_bronze(spark, ("id,event_ts,temp,day", ["e1,2020-11-16 22:59:59,21.5,3"]),
                         ("ID,event_ts,temperature,day", ["e2,2020-11-16 22:59:59,hot,3", "e3,x", 'e4,"2020', "NA,2020-11-16 22:59:59,1,1"]))
    failed = {r["_raw"]: r["_failed_rules"] for r in
              silver.flag_invalid_rows(silver.parse_records(bronze, CSV_CONTRACT), CSV_CONTRACT).collect()}
    assert failed == {
        "e1,2020-11-16 22:59:59,21.5,3": ["event_id_required", "unknown_fields"],
        "e2,2020-11-16 22:59:59,hot,3": ["temperature_type"],
        "e3,x": ["malformed_record"],        # two fields under a four-field header
        'e4,"2020': ["malformed_record"],     # unterminated quote
        "NA,2020-11-16 22:59:59,1,1": ["event_id_required"],
    }


def test_csv_without_header_reads_fields_in_schema_order(spark):
    contract = parse_contract({
        "dataset": "nohead", "landing": {"format": "csv", "header": False}, "key": ["a"], "event_time": "t",
        "schema": [{"name": "a", "type": "string"}, {"name": "t", "type": "timestamp", "format": "yyyy-MM-dd"}]})
    bronze = _csv_bronze(spark, (None, ["x,2024-01-02", "y"]))
    rows = silver.flag_invalid_rows(silver.parse_records(bronze, contract), contract).orderBy("_raw").collect()
    assert [(r["a"], r["t"], r["_failed_rules"]) for r in rows] == [
        ("x", ts("2024-01-02 00:00:00"), []), (None, None, ["malformed_record"])]


def test_a_computed_column_that_does_not_evaluate_names_the_column(spark):
    from spark_jobs.contract.parts import ContractError

    contract = parse_contract({"dataset": "bad", "landing": {"format": "csv"}, "key": ["a"], "event_time": "t",
                               "schema": [{"name": "a", "type": "string"},
                                          {"name": "t", "type": "timestamp", "computed": "concat(nope, a)"}]})
    with pytest.raises(ContractError, match=r"contract 'bad': schema\[1\] \(t\)\.computed: 'concat\(nope, a\)' does not evaluate"):
        silver.parse_records(_csv_bronze(spark, ("a", ["1"])), contract)


def test_silver_reads_the_fields_bronze_parsed_and_parses_raw_only_for_another_parse(spark):
    """Parse once: a row whose _fields_id is the contract's is read from _fields and _unknown_fields (here they
    differ from _raw on purpose, to show which one silver read); a row parsed for another contract (or written
    before bronze kept its fields: no _fields_id) is parsed from _raw, and its malformation judged again."""
    from pyspark.sql import functions as F

    from spark_jobs.transforms import bronze

    fields = {**{k: str(v) for k, v in GOOD.items()}, "temperature": "30.5"}
    current = bronze.fields_id(CONTRACT.landing, CONTRACT.landing_fields)
    rows = [(json.dumps(GOOD), False, "f.jsonl", 0, AT, 0, fields, ["firmware"], current),
            (json.dumps({**GOOD, "event_id": "e2"}), False, "f.jsonl", 1, AT, 0, fields, [], current + 1),
            ('{"event_id": "e3"} trailing', False, "f.jsonl", 2, AT, 0, None, [], None)]
    struct = ", ".join(f"{name}: string" for name in CONTRACT.landing_fields)
    frame = spark.createDataFrame(rows, "_raw string, _is_malformed boolean, _source_file string, _record_index int, "
                                        f"_ingested_at timestamp, _batch_id long, _fields struct<{struct}>, "
                                        "_unknown_fields array<string>, _fields_id int")
    flagged = silver.flag_invalid_rows(silver.parse_records(frame, CONTRACT), CONTRACT).orderBy("_record_index")
    got = [(r["event_id"], r["temperature"], r["_is_malformed"], r["_failed_rules"])
           for r in flagged.select("event_id", "temperature", "_is_malformed", "_failed_rules").collect()]
    assert got == [("e1", 30.5, False, ["unknown_fields"]),   # bronze's parse: its temperature, its unknown field
                   ("e2", 21.5, False, []),                   # another parse: _raw read again
                   (None, None, True, ["malformed_record"])]  # no parse in bronze: judged again from _raw
    assert flagged.where(F.col("_is_malformed")).count() == 1
