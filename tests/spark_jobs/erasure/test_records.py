"""spark_jobs/erasure/records.py and rewrites.py in Spark: the same exact rules as matching.py, ids only in a
broadcast variable. Bronze rows of a JSON dataset are classified (equality by the key's type, malformed
records that name a subject, a subject column silver cannot type, mentions in another's record, behind a
JSON escape too; an id of a key without a case rule in another case is someone else; the id written NFD),
and a silver table (local Iceberg) loses the subjects' rows and has the mention redacted in ONE commit, the
rest untouched."""
from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F

from spark_jobs.contract.model import parse_contract
from spark_jobs.erasure import records, rewrites
from spark_jobs.erasure.subjects import Subject, needles
from spark_jobs.io import tables
from spark_jobs.lake.config import LakeConfig

CONTRACT_SPEC = {
    "dataset": "people", "landing": {"format": "json_lines"}, "key": ["email", "ts"], "event_time": "ts",
    "schema": [{"name": "ts", "type": "timestamp", "required": True},
               {"name": "email", "type": "string", "required": True, "case": "lower"},
               {"name": "customer_id", "type": "long", "required": True},
               {"name": "handle", "type": "string"},
               {"name": "note", "type": "string"}],
    "subject_keys": ["email", "customer_id", "handle"]}
CONTRACT = parse_contract(CONTRACT_SPEC)
SUBJECTS = [Subject("email", "Ann@X.com"), Subject("customer_id", "1042"), Subject("handle", "Ann-42"),
            Subject("email", "jos\u00e9@x.com")]
RAW = [
    '{"ts": "2024-03-01T10:00:00Z", "email": "ANN@x.com", "customer_id": 7, "note": "a"}',          # hers: email
    '{"ts": "2024-03-01T10:01:00Z", "email": "zed@y.org", "customer_id": 1042, "note": "b"}',       # hers: customer
    '{"ts": "2024-03-01T10:02:00Z", "email": "joann@x.com", "customer_id": 10420, "note": "cc ann@x.com"}',  # redact
    '{"ts": "2024-03-01T10:03:00Z", "email": "ann@x.com.au", "customer_id": 21042, "note": "1042"}',
    '{"ts": "2024-03-01T10:04:00Z", "email": "bob@x.com", "customer_id": 5, "note": "customer_id 1042"}',
    '{"ts": "2024-03-01T10:05:00Z", "email": "x@x.com", "customer_id": 1042',                       # malformed: hers
    '{"ts": "2024-03-01T10:06:00Z", "email": "y@x.com", "customer_id": 10420',                      # malformed
    '{"ts": "2024-03-01T10:07:00Z", "email": "z@x.com", "customer_id": 1042.0, "note": "c"}',       # hers: an int as float
    '{"ts": "2024-03-01T10:08:00Z", "email": "q@x.com", "customer_id": 8, "note": "line\\nann@x.com"}',  # redact: escaped
    '{"ts": "2024-03-01T10:09:00Z", "email": "r@x.com", "customer_id": 9, "handle": "ANN-42", "note": "ANN-42"}',  # another
    '{"ts": "2024-03-01T10:10:00Z", "email": "s@x.com", "customer_id": 11, "handle": "Ann-42"}',    # hers: handle
    '{"ts": "2024-03-01T10:11:00Z", "email": "t@x.com", "customer_id": " +01042", "note": "d"}',      # hers: silver types it
    '{"ts": "2024-03-01T10:12:00Z", "email": "ANN@X.CO\\u006d", "customer_id": 12}',                  # hers: escaped
]


def _bronze(spark):
    rows = [(raw, False, "s3a://b/landing/people/f.jsonl", index, dt.datetime(2024, 3, 1, 11), 0)
            for index, raw in enumerate(RAW)]
    return spark.createDataFrame(rows, "_raw string, _is_malformed boolean, _source_file string, _record_index long, "
                                       "_ingested_at timestamp, _batch_id int")


def test_bronze_rows_are_classified_by_the_exact_rules(spark):
    found = needles([CONTRACT], SUBJECTS, bytes(32))
    actions = records.bronze_actions(_bronze(spark), CONTRACT, spark.sparkContext.broadcast(found))
    got = {r["_record_index"]: r[records.ACTION] for r in actions.collect()}
    assert got == {0: "remove", 1: "remove", 2: "redact", 5: "remove", 7: "remove", 8: "redact", 10: "remove",
                   11: "remove", 12: "remove"}
    redacted = {r["_record_index"]: r["_raw"] for r in records.redact(
        _bronze(spark).where(F.col("_record_index").isin(2, 8)), found).collect()}
    assert redacted == {2: RAW[2].replace("cc ann@x.com", "cc [erased]"), 8: RAW[8].replace("ann@x.com", "[erased]")}


def test_silver_loses_the_subjects_and_the_mention_in_one_commit(spark, tmp_path):
    tbl = tables.table(spark, LakeConfig(lake_uri=str(tmp_path)), "silver", "people")
    silver = (spark.createDataFrame([(*row, None) for row in SILVER],
                                    "ts timestamp, email string, customer_id long, note string, handle string")
              .withColumn("event_date", F.to_date("ts")))
    silver.writeTo(tbl.qualified).using("iceberg").partitionedBy(F.days("ts")).tableProperty(
        "write.spark.accept-any-schema", "true").create()  # as the lake's tables are
    before = tables.current_snapshot(spark, tbl)["snapshot_id"]
    found = needles([CONTRACT], SUBJECTS, bytes(32))
    result = rewrites.rewrite_silver(spark, tbl, CONTRACT, spark.sparkContext.broadcast(found), run_id="erase-test")
    assert (result["rows_deleted"], result["rows_redacted"], result["event_dates"]) == (3, 1, ["2024-03-01"])
    snapshot = tables.current_snapshot(spark, tbl)
    assert snapshot["parent_id"] == before and result["snapshot_id"] == snapshot["snapshot_id"]  # one commit
    assert snapshot["run_id"] == "erase-test"
    rows = sorted((r["email"], r["customer_id"], r["note"]) for r in tables.read(spark, tbl).collect())
    assert rows == [("ann@x.com.au", 21042, "1042"), ("bob@x.com", 5, "customer_id 1042"),
                    ("joann@x.com", 10420, "cc [erased]")]


SILVER = [(dt.datetime(2024, 3, 1, 10, m), email, customer, note) for m, email, customer, note in (
    (0, "ann@x.com", 7, "a"), (1, "zed@y.org", 1042, "b"), (2, "joann@x.com", 10420, "cc ann@x.com"),
    (3, "ann@x.com.au", 21042, "1042"), (4, "bob@x.com", 5, "customer_id 1042"),
    (5, "jose\u0301@x.com", 77, "NFD: the subject josé@x.com as silver stored it"))]


def test_a_decimal_subject_key_is_typed_and_matched_by_value(spark):
    """``decimal(P,S)`` (the contract type of an account number): parsed by silver, compared by value."""
    import decimal

    from spark_jobs.transforms.silver import parse_records

    contract = parse_contract({
        "dataset": "accounts", "landing": {"format": "json_lines"}, "key": ["account"], "event_time": "ts",
        "schema": [{"name": "ts", "type": "timestamp"}, {"name": "account", "type": "decimal(10,2)"}],
        "subject_keys": ["account"]})
    raw = ['{"ts": "2024-03-01T10:00:00Z", "account": 1042.5}', '{"ts": "2024-03-01T10:00:00Z", "account": "01042.50"}',
           '{"ts": "2024-03-01T10:00:00Z", "account": 10425}', '{"ts": "2024-03-01T10:00:00Z", "account": "12x"}']
    bronze = spark.createDataFrame([(r, False, "f", i, dt.datetime(2024, 3, 1), 0) for i, r in enumerate(raw)],
                                   "_raw string, _is_malformed boolean, _source_file string, _record_index long, "
                                   "_ingested_at timestamp, _batch_id int")
    parsed = {r["_record_index"]: r["account"] for r in parse_records(bronze, contract).collect()}
    assert parsed == {0: decimal.Decimal("1042.50"), 1: decimal.Decimal("1042.50"), 2: decimal.Decimal("10425.00"), 3: None}
    subjects = [Subject("account", "1042.5")]
    found = needles([contract], subjects, bytes(32))
    actions = records.bronze_actions(bronze, contract, spark.sparkContext.broadcast(found))
    assert sorted(r["_record_index"] for r in actions.collect()) == [0, 1]


def test_redaction_reaches_bronze_parsed_fields_and_lists_of_text(spark):
    """Bronze keeps each record parsed once (``_fields``, a struct of strings; ``_unknown_fields``, a list):
    redacting ``_raw`` alone would leave the id in the copy silver reads."""
    found = needles([CONTRACT], SUBJECTS, bytes(32))
    row = ('{"note": "cc ann@x.com"}', ("joann@x.com", "cc ann@x.com"), ["ann@x.com", "other"])
    df = spark.createDataFrame([row, (None, None, None)],
                               "_raw string, _fields struct<email:string,note:string>, _unknown_fields array<string>")
    redacted, empty = records.redact(df, found).collect()
    assert "ann@x.com" not in redacted["_raw"] and redacted["_fields"]["email"] == "joann@x.com"
    assert redacted["_fields"]["note"] == redacted["_raw"].split('"')[3] != "cc ann@x.com"
    assert redacted["_unknown_fields"][1] == "other" and "ann@x.com" not in redacted["_unknown_fields"][0]
    assert empty["_raw"] is None and empty["_fields"] is None and empty["_unknown_fields"] is None


def test_a_source_field_column_of_bronze_is_read_as_the_contract_types_it(spark):
    """Bronze keeps the per-source field (``site``) as a column, and the contract has a column of that name: the
    erase reads the row with the typed one (it failed on the two columns of one name)."""
    contract = parse_contract({**CONTRACT_SPEC, "source_field": "site",
                               "schema": [*CONTRACT_SPEC["schema"], {"name": "site", "type": "string"}]})
    bronze = _bronze(spark).withColumn("site", F.lit("s-1"))
    found = needles([contract], SUBJECTS, bytes(32))
    actions = records.bronze_actions(bronze, contract, spark.sparkContext.broadcast(found))
    assert sorted(r["_record_index"] for r in actions.where(F.col(records.ACTION) == "remove").collect()) == \
        [0, 1, 5, 7, 10, 11, 12]
