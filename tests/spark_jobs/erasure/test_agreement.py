"""Erase and verify agree, on generated records, through the REAL decision and the REAL verification (issues
40 and 51).

For each shape below, a seeded generator writes a landing file of a few hundred records: the subject's
records in every form silver types as the subject's id, a control subject's records, near misses of both,
malformed records, and other people's records that mention the subject. Then, in Spark:

- the erase's own decision (``records.bronze_actions`` on the bronze rows, parsed as silver parses them) must
  remove exactly the subject's records and redact exactly the other records that mention the subject;
- after those actions (``records.redact`` for the redactions), the verification's own readers
  (``scan.batch_hits`` on the rows, as in a bronze Parquet file; ``scan.scan_chunks`` on the landing file
  written again, in the dataset's encoding, each picked by the object's key as the sweep picks them:
  ``scan.Matchers``) find nothing of the subject;
- the same readers, asked for the control subject, find every one of its records, and nothing else.

Shapes: a string key of digits (``01545`` is another account than ``1545``, and so are ``1545.0`` and
``1_545``); a long key read from the landing field ``id`` (``source``), renamed from ``cust``, written with a
sign, spaces, leading zeros and as ``1545.0``, beside another dataset whose own ``id`` names nobody; a CSV
dataset with a quoted header holding a comma and a key with ``case: lower``, its ids NFC and NFD; the same
in ISO-8859-1 with ``;``.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import random

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from spark_jobs.contract.model import parse_contract
from spark_jobs.erasure import records
from spark_jobs.erasure.scan import Matchers, batch_hits, scan_chunks
from spark_jobs.erasure.subjects import Subject, needles

RECORDS = 300


@dataclasses.dataclass
class Generated:
    """One record as the generator wrote it: its landing text, whose id it is (``owner``), and the subjects
    whose id appears in it at all (``holds``)."""

    text: str
    owner: str | None
    holds: set[str]
    unusable: bool = False  # malformed, or its key's value is one silver cannot type (quarantined)


@dataclasses.dataclass
class Shape:
    contract: dict
    subject: Subject
    control: Subject
    owners: dict[str, list]      # owner -> the key's values written for it ("S", "C", None: someone else)
    mentions: dict[str, list]    # "S"/"C" -> texts naming that subject in a free-text field
    encoding: str = "utf-8"
    header: str | None = None    # CSV: the header line as written
    untyped: tuple = ()          # values of the key silver cannot type (the record is quarantined)


def _ts(index: int) -> str:
    return (dt.datetime(2024, 3, 1) + dt.timedelta(minutes=index)).strftime("%Y-%m-%dT%H:%M:%SZ")


SHAPES = {
    "string_digits": Shape(
        {"dataset": "accounts", "landing": {"format": "json_lines"}, "key": ["account_no", "ts"], "event_time": "ts",
         "schema": [{"name": "ts", "type": "timestamp"}, {"name": "account_no", "type": "string"},
                    {"name": "n", "type": "long"}, {"name": "note", "type": "string"}],
         "subject_keys": ["account_no"]},
        Subject("account_no", "1545"), Subject("account_no", "01545"),
        {"S": ["1545", " 1545 ", 1545], "C": ["01545", " 01545"], None: ["1545.0", "1_545", "15450", "2000", 1546, "1545x"]},
        {"S": ["account_no=1545", 'ref "account_no": "1545"'], "C": ["account_no: 01545"]}),
    "long_source_renamed": Shape(
        {"dataset": "customers", "landing": {"format": "json_lines"}, "key": ["customer_id", "ts"], "event_time": "ts",
         "schema": [{"name": "ts", "type": "timestamp"},
                    {"name": "customer_id", "type": "long", "source": "id", "renamed_from": "cust"},
                    {"name": "n", "type": "long"}, {"name": "note", "type": "string"}],
         "subject_keys": ["customer_id"]},
        Subject("customer_id", "1545"), Subject("customer_id", "2000"),
        {"S": [1545, "+1545", " 1545", "01545", 1545.0, "1545 "], "C": [2000, "02000", " +2000"],
         None: [15450, 1545.5, -1545, "1_545", "1.545e3", 21545, 2001]},
        {"S": ["see id=1545", "customer_id: 01545"], "C": ["id=2000."]}, untyped=(1545.5, "1_545", "1.545e3")),
    "csv_nfd_quoted_header": Shape(
        {"dataset": "handles", "landing": {"format": "csv"}, "key": ["handle", "ts"], "event_time": "ts",
         "schema": [{"name": "ts", "type": "timestamp"}, {"name": "ref", "type": "string", "source": "ref, internal"},
                    {"name": "handle", "type": "string", "case": "lower"}, {"name": "note", "type": "string"}],
         "subject_keys": ["handle"]},
        Subject("handle", "José-7"), Subject("handle", "anna-5"),
        {"S": ["José-7", "JOSE\u0301-7", "jose\u0301-7", " josé-7"], "C": ["Anna-5", "ANNA-5"],
         None: ["jose-7", "josé-77", "josé-7-2020", "xjosé-7", "jose\u0301-7\u0308", "anna-55", "annä-5"]},
        {"S": ["cc José-7.", "mail jose\u0301-7"], "C": ["(anna-5)"]},
        header='ts,"ref, internal",handle,note'),
    "csv_latin1_semicolon": Shape(
        {"dataset": "names", "landing": {"format": "csv", "delimiter": ";", "encoding": "iso-8859-1"},
         "key": ["handle", "ts"], "event_time": "ts",
         "schema": [{"name": "ts", "type": "timestamp"}, {"name": "handle", "type": "string", "case": "lower"},
                    {"name": "note", "type": "string"}],
         "subject_keys": ["handle"]},
        Subject("handle", "jürgen-7"), Subject("handle", "zoë-3"),
        {"S": ["Jürgen-7", "JÜRGEN-7", "jürgen-7"], "C": ["Zoë-3", "zoë-3"], None: ["jurgen-7", "jürgen-70", "zoe-3"]},
        {"S": ["für jürgen-7"], "C": ["zoë-3!"]},
        encoding="iso-8859-1", header="ts;handle;note"),
}


def _generate(shape: Shape, seed: int) -> list[Generated]:
    rnd = random.Random(seed)
    out: list[Generated] = []
    column = shape.contract["schema"][1 if shape.contract["dataset"] != "handles" else 2]
    field = column.get("source", column["name"])
    for index in range(RECORDS):
        owner = rnd.choice(["S", "C", None, None])
        value = rnd.choice(shape.owners[owner])
        mention = rnd.choice([None, None, "S", "C"])
        note = rnd.choice(shape.mentions[mention]) if mention else rnd.choice(["ok", "ticket 1545", "n=1545", ""])
        holds = {o for o in (owner, mention) if o}
        if shape.header is None:
            record = {"ts": _ts(index), field: value, "n": rnd.choice([1545, 2000, 7]), "note": note}
            text = json.dumps(record, ensure_ascii=rnd.random() < 0.5)
            malformed = rnd.random() < 0.1
            if malformed:
                text = text[:-1] + ', "x": "cut'  # an unterminated JSON line: bronze marks it malformed
            out.append(Generated(text, owner if not malformed else None, holds, malformed or value in shape.untyped))
        else:
            delimiter = shape.contract["landing"].get("delimiter", ",")
            values = [_ts(index), *(["r,1"] if shape.contract["dataset"] == "handles" else []), value, note]
            malformed = rnd.random() < 0.1
            if malformed:
                values = values + ["extra"]  # a field too many: bronze marks it malformed
            quoted = [f'"{v}"' if delimiter in str(v) or rnd.random() < 0.3 else str(v) for v in values]
            out.append(Generated(delimiter.join(quoted), owner if not malformed else None, holds, malformed))
    return out


def _bronze(spark, shape: Shape, generated: list[Generated]):
    """The bronze rows of the landing file, as bronze writes them (the record's text and lineage; silver's parse
    of ``_raw`` makes the fields)."""
    source = f"s3a://lake/landing/{shape.contract['dataset']}/part-0001"
    rows = [(g.text, False, source, index, dt.datetime(2024, 3, 2), 1, shape.header)
            for index, g in enumerate(generated)]
    return spark.createDataFrame(rows, "_raw string, _is_malformed boolean, _source_file string, _record_index long, "
                                       "_ingested_at timestamp, _batch_id long, _header string")


def _landing_bytes(shape: Shape, texts: list[str]) -> bytes:
    lines = ([shape.header] if shape.header else []) + texts
    return ("\n".join(lines) + "\n").encode(shape.encoding)


def _found(matchers: Matchers, key: str, rows: list[dict], schema: pa.Schema) -> list[bool]:
    text, value = batch_hits(pa.RecordBatch.from_pylist(rows, schema=schema), matchers.for_key(key))
    return (text | value).tolist()


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_erase_removes_exactly_the_subjects_records_and_the_verification_then_finds_none(spark, name):
    shape, seed = SHAPES[name], 51
    contract = parse_contract(shape.contract)
    dataset = contract.dataset
    generated = _generate(shape, seed)
    subject_needles = needles([contract], [shape.subject], bytes(32))
    control_needles = needles([contract], [shape.control], bytes(32))
    landing_key, bronze_key = f"landing/{dataset}/part-0001", f"bronze/{dataset}/_batch_id=1/part-0.parquet"
    before = _landing_bytes(shape, [g.text for g in generated])
    assert scan_chunks([before], Matchers(subject_needles).for_key(landing_key)) == (True, "")

    bronze = _bronze(spark, shape, generated)
    actions = {r["_record_index"]: r[records.ACTION] for r in records.bronze_actions(
        bronze, contract, spark.sparkContext.broadcast(subject_needles.scoped(dataset))).collect()}
    # the subject's records go; so does an unusable record that names the subject (it may be the subject's)
    expected = {i: ("remove" if g.owner == "S" or g.unusable else "redact")
                for i, g in enumerate(generated) if "S" in g.holds}
    wrong = {i: (actions.get(i), expected.get(i), generated[i].text) for i in set(actions) | set(expected)
             if actions.get(i) != expected.get(i)}
    assert wrong == {}, f"{name}: the erase's decision differs from the generator's truth"

    kept = bronze.join(spark.createDataFrame([(i, a) for i, a in actions.items()] or [(-1, "none")],
                                             "_record_index long, _erase_action string"), "_record_index", "left")
    redacted = records.redact(kept.where(F.col(records.ACTION) == "redact").drop(records.ACTION),
                              subject_needles.scoped(dataset))
    after = kept.where(F.col(records.ACTION).isNull()).drop(records.ACTION).unionByName(redacted)
    rows = sorted((r.asDict() for r in after.collect()), key=lambda r: r["_record_index"])
    schema = pa.schema([("_raw", pa.string()), ("_is_malformed", pa.bool_()), ("_source_file", pa.string()),
                        ("_record_index", pa.int64()), ("_ingested_at", pa.timestamp("us")), ("_batch_id", pa.int64()),
                        ("_header", pa.string())])
    assert not any(_found(Matchers(subject_needles), bronze_key, rows, schema)), f"{name}: the verification still finds the subject"
    assert scan_chunks([_landing_bytes(shape, [r["_raw"] for r in rows])],
                       Matchers(subject_needles).for_key(landing_key)) == (False, "")

    control = _found(Matchers(control_needles), bronze_key, rows, schema)
    holds_control = ["C" in generated[r["_record_index"]].holds for r in rows]
    assert control == holds_control, f"{name}: the scan does not find exactly the control subject's records"
    # every one of them is still there, but a malformed record that also names the subject (it may be the subject's)
    assert sum(holds_control) == sum("C" in g.holds for i, g in enumerate(generated) if expected.get(i) != "remove")


def test_a_source_name_is_a_key_name_in_its_own_dataset_only_and_renamed_columns_count():
    """``customers`` reads ``customer_id`` from the landing field ``id``; ``events`` has an ``id`` of its own:
    its objects are not read with ``customers``' names. A Parquet file written before the rename holds the
    column as ``cust``."""
    customers = parse_contract(SHAPES["long_source_renamed"].contract)
    events = parse_contract({"dataset": "events", "landing": {"format": "json_lines"}, "key": ["id"], "event_time": "ts",
                             "schema": [{"name": "ts", "type": "timestamp"}, {"name": "id", "type": "long"}],
                             "subject_keys": []})
    matchers = Matchers(needles([customers, events], [Subject("customer_id", "1545")], bytes(32)))
    line = b'{"ts": "2024-03-01T00:00:00Z", "id": 1545}\n'
    assert scan_chunks([line], matchers.for_key("landing/customers/a.jsonl")) == (True, "")
    assert scan_chunks([line], matchers.for_key("landing/events/a.jsonl")) == (False, "")
    old = pa.record_batch({"cust": pa.array([1545, 2000], pa.int64()), "n": pa.array([1545, 1545], pa.int64())})
    assert batch_hits(old, matchers.for_key("silver/customers/data/x.parquet"))[1].tolist() == [True, False]
