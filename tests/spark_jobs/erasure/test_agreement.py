"""Erase and verify agree (issue 40), proven on generated records (hypothesis), without Spark.

The erase decides which bronze rows hold a subject with ``scan.batch_hits`` (``records.text_hits`` runs it on
the executors) and redacts with ``Needles.redact``; the verification reads the landing file as text
(``scan.scan_chunks``) and bronze's Parquet with ``batch_hits``. For landing files of generated records,
JSON lines (escapes, ``\\u`` escapes of any letter, a newline before an id, floats written for ints,
nested fields, truncated malformed lines) and CSV (quoted fields, rows with too few or too many fields):

1. the verification finds a subject in the landing file exactly when the erase finds one in a row of it;
2. after the erase's actions (a malformed row or a keyed value removed, any other hit redacted in every
   text column), the verification finds nothing in the rows: an erase ends ``completed``;
3. for well-formed records, a row holds a subject exactly when the generator put one in (an id in any
   form its rule admits), and never for a near miss (another case of an id without a case rule, an id
   inside a longer token, the number under another key or inside another number).

The subjects: ``ann@x.com`` (email, ``case: lower``: any case), ``User-0016`` and ``Jürgen-7`` (handle,
no case rule: as written), ``1042`` (customer_id, a long: keyed).
"""
from __future__ import annotations

import csv
import io
import json

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_jobs.erasure.matching import Needles
from spark_jobs.erasure.scan import Matcher, batch_hits, scan_chunks

NEEDLES = Needles.build(["ann@x.com"], {"customer_id": ["1042"]}, exact=["User-0016", "Jürgen-7"])
MATCHER = Matcher(NEEDLES)
FIELDS = ("email", "handle", "customer_id", "bytes", "note", "meta")

TRUE_PIECES = ["ann@x.com", "ANN@X.COM", "Ann@x.com.", "(ann@x.com)", "User-0016", "/u/User-0016?x=1",
               "\nUser-0016", "Jürgen-7", "customer_id=1042", "customer_id: 01042.0", '"customer_id": 1042',
               "see, ann@x.com"]
NEAR_PIECES = ["joann@x.com", "ann@x.com.au", "user-0016", "USER-0016", "User-00161", "xUser-0016",
               "User-0016-2020", "jürgen-7", "JÜRGEN-7", "customer_id=10420", "bytes=1042", "1042",
               "customer_id 1042", "referrer_customer_id=1042", "customer_id=1042.5", "x\\y", "a\tb", "ü",
               "a,b", '"quoted"']
EMAILS_TRUE, EMAILS_NEAR = ["ann@x.com", "Ann@X.com", "ANN@X.COM"], ["joann@x.com", "ann@x.com.au", "bob@y.org"]
HANDLES_TRUE, HANDLES_NEAR = ["User-0016", "Jürgen-7"], ["user-0016", "USER-0016", "jürgen-7", "User-00160"]
CUSTOMERS_TRUE, CUSTOMERS_NEAR = [1042, 1042.0, "01042", "1042"], [10420, 21042, 1043, "1042.5", None]


@st.composite
def texts(draw) -> tuple[str, bool]:
    """Free text of pieces (some an id in a form its rule admits), each set apart by a space."""
    pieces = draw(st.lists(st.one_of(st.sampled_from(TRUE_PIECES).map(lambda p: (p, True)),
                                     st.sampled_from(NEAR_PIECES).map(lambda p: (p, False))), max_size=4))
    return " ".join(p for p, _ in pieces), any(hit for _, hit in pieces)


@st.composite
def records(draw) -> tuple[dict, dict[str, bool]]:
    """A record and, per field, whether it holds a subject."""
    record: dict = {}
    holds: dict[str, bool] = {}
    for name, true, near in (("email", EMAILS_TRUE, EMAILS_NEAR), ("handle", HANDLES_TRUE, HANDLES_NEAR),
                             ("customer_id", CUSTOMERS_TRUE, CUSTOMERS_NEAR)):
        if draw(st.booleans()):
            holds[name] = draw(st.booleans())
            record[name] = draw(st.sampled_from(true if holds[name] else near))
    record["bytes"] = draw(st.sampled_from([1042, 5, 10420]))
    record["note"], holds["note"] = draw(texts())
    if draw(st.booleans()):
        nested, holds["meta"] = draw(texts())
        record["meta"] = {"text": nested, "n": 1042, "tags": [draw(st.sampled_from(NEAR_PIECES))]}
    return record, holds


def _escape_letters(line: str, every: int) -> str:
    """Some letters inside JSON strings written as ``\\uXXXX`` (still the same JSON)."""
    out, in_string, count, i = [], False, 0, 0
    while i < len(line):
        ch = line[i]
        if in_string and ch == "\\":  # an escape already there: copied whole
            length = 6 if line[i + 1] == "u" else 2
            out.append(line[i:i + length])
            i += length
            continue
        if in_string and ch.isalpha():
            count += 1
            if count % every == 0:
                out.append(f"\\u{ord(ch):04x}")
                i += 1
                continue
        if ch == '"':
            in_string = not in_string
        out.append(ch)
        i += 1
    return "".join(out)


@st.composite
def json_lines(draw) -> tuple[list[str], list[bool | None]]:
    """Landing lines and, per line, whether it holds a subject (None: malformed, not judged)."""
    lines, expected = [], []
    for record, holds in draw(st.lists(records(), min_size=1, max_size=6)):
        line = json.dumps(record, ensure_ascii=draw(st.booleans()))
        every = draw(st.sampled_from([0, 1, 3, 7]))
        if every:
            line = _escape_letters(line, every)
        if draw(st.integers(0, 5)) == 0:  # malformed: cut short
            line = line[:draw(st.integers(1, max(1, len(line) - 1)))]
            expected.append(None)
        else:
            expected.append(any(holds.values()))
        lines.append(line)
    return lines, expected


def _text(value) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _bronze_json(lines: list[str]) -> pa.RecordBatch:
    """Bronze's rows for JSON lines, as bronze parses them once: ``_raw``, ``_is_malformed``, ``_fields`` (each
    landing field's text, a nested value as its JSON text), ``_unknown_fields``."""
    raw, malformed, fields, unknown = [], [], [], []
    for line in lines:
        try:
            parsed = json.loads(line)
        except ValueError:
            parsed = None
        ok = isinstance(parsed, dict)
        raw.append(line)
        malformed.append(not ok)
        fields.append({name: _text(parsed.get(name)) for name in FIELDS} if ok else None)
        unknown.append(sorted(set(parsed) - set(FIELDS)) if ok else [])
    return pa.record_batch({"_raw": raw, "_is_malformed": malformed,
                            "_fields": pa.array(fields, pa.struct([(n, pa.string()) for n in FIELDS])),
                            "_unknown_fields": pa.array(unknown, pa.list_(pa.string()))})


def _after_erase(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The erase's actions on bronze rows: a malformed row or a keyed value hit removed, any other hit
    redacted in every text (records.redact)."""
    text, value = batch_hits(batch, MATCHER)
    rows = batch.to_pylist()
    kept = []
    for row, text_hit, value_hit in zip(rows, text, value):
        if value_hit or (text_hit and row["_is_malformed"]):
            continue
        if text_hit:
            row = {name: _redacted(cell) for name, cell in row.items()}
        kept.append(row)
    return pa.RecordBatch.from_pylist(kept, schema=batch.schema)


def _redacted(cell):
    if isinstance(cell, str):
        return NEEDLES.redact(cell)[0]
    if isinstance(cell, dict):
        return {k: _redacted(v) for k, v in cell.items()}
    if isinstance(cell, list):
        return [_redacted(v) for v in cell]
    return cell


def _landing_hit(lines: list[str]) -> bool:
    data = ("\n".join(lines) + "\n").encode("utf-8")
    return scan_chunks([data[i:i + 7] for i in range(0, len(data), 7)], MATCHER) == (True, "")


def _assert_agree(landing: list[str], batch: pa.RecordBatch, expected: list[bool | None]) -> None:
    """The module's three properties for one landing file and its bronze rows."""
    text, value = batch_hits(batch, MATCHER)
    found = (text | value).tolist()
    assert _landing_hit(landing) == any(found)                                              # 1
    assert not any(h for t, v in zip(*batch_hits(_after_erase(batch), MATCHER)) for h in (t, v))  # 2
    assert [f for f, e in zip(found, expected) if e is not None] == [e for e in expected if e is not None]  # 3


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_lines())
def test_json_lines_erase_and_verify_agree(case):
    lines, expected = case
    _assert_agree(lines, _bronze_json(lines), expected)


CSV_HEADER = ["note", "email", "customer_id", "handle"]  # a quoted note may hold the delimiter


@st.composite
def csv_files(draw) -> tuple[list[str], list[bool | None]]:
    """A CSV landing file (header first) and, per record, whether it holds a subject (None: malformed)."""
    rows, expected = [], []
    for record, holds in draw(st.lists(records(), min_size=1, max_size=6)):
        values = ["" if record.get(n) is None else str(record.get(n)) for n in CSV_HEADER]
        values[0] = values[0].replace("\n", " ")
        shape = draw(st.integers(0, 6))
        if shape == 0:
            values = values[:2]  # too few fields
        elif shape == 1:
            values = values + ["extra"]
        sink = io.StringIO()
        csv.writer(sink, lineterminator="").writerow(values)
        rows.append(sink.getvalue())
        expected.append(any(holds.get(n, False) for n in CSV_HEADER) if shape > 1 else None)
    return rows, expected


def _bronze_csv(lines: list[str]) -> pa.RecordBatch:
    header = ",".join(CSV_HEADER)
    fields, malformed = [], []
    for line in lines:
        (values,) = list(csv.reader([line]))
        ok = len(values) == len(CSV_HEADER)
        malformed.append(not ok)
        fields.append(dict(zip(CSV_HEADER, values)) if ok else None)
    return pa.record_batch({"_raw": lines, "_is_malformed": malformed, "_header": [header] * len(lines),
                            "_fields": pa.array(fields, pa.struct([(n, pa.string()) for n in CSV_HEADER]))})


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(csv_files())
def test_csv_erase_and_verify_agree(case):
    lines, expected = case
    _assert_agree([",".join(CSV_HEADER), *lines], _bronze_csv(lines), expected)
