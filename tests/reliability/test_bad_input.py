"""Bad input into landing (issue 9): every kind of broken record is accounted for, none is lost.

Table-driven: each ``Case`` is one or two small landing files of one bad-input kind, next to 1500 good
generated records per dataset (``iot`` lands JSON arrays, ``clickstream`` JSON lines, ``csvreadings``
CSV files with a header and ``NA`` for null, ``pqreadings`` Parquet files; the last two are the iot
readings under test-only contracts in ``tests/reliability/contracts/``). ONE real
``python -m spark_jobs run-all`` (``spark_jobs.cli.main``, validation on) runs over a local-folder lake
holding every case at once; each case is then checked from the outputs through its own file names:
- the job does not crash (exit code, manifests ``succeeded``, counts invariant holds);
- each of the case's bronze rows is in silver, in quarantine with exactly the expected
  ``_failed_rules``, or counted as a duplicate (rows in = silver + quarantine + duplicates, per case);
- a file that is not records at all (a truncated array, say) is ONE quarantined row whose ``_raw``
  is the whole file: nothing is lost;
- the silver DQ report (summary.json, summary.html) shows the case's quarantine reasons with counts.
A second, isolated run lands only an empty file and a 0-byte file. On a local file system an "empty
file" and a "zero-byte object" are both files: here the empty file holds only whitespace and newlines,
the zero-byte one is truly 0 bytes.

The README table (tests/reliability/README.md, "Bad input") is rendered from the same case table
(``python -m tests.reliability.test_bad_input``), and a test checks that it is current.
"""
from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from spark_jobs import cli
from spark_jobs.datagen import DatagenConfig, generate
from spark_jobs.datagen.sink import write_landing
from spark_jobs.io import tables
from spark_jobs.lake.config import LakeConfig

pytestmark = pytest.mark.integration

GOOD_RECORDS = 1500  # per dataset: the bad rows stay under the silver rules' 1 % (mostly 0.99), as in production
TEN_MB = 10 * 1024 * 1024
NOW = dt.datetime.now(dt.timezone.utc).replace(microsecond=0, tzinfo=None)
RECENT = NOW - dt.timedelta(hours=1)
MISSING = object()
MALFORMED = ("malformed_record",)


def _iso(ts: dt.datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ")


def _spaced(ts: dt.datetime) -> str:
    return ts.strftime("%Y-%m-%d %H:%M:%S")


def _record(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    record = {**base, **changes}
    return {k: v for k, v in record.items() if v is not MISSING}


def iot(event_id: Any, **changes: Any) -> dict[str, Any]:
    """A valid iot record with ``changes`` (``MISSING`` drops a field); ``event_id=MISSING`` drops the key."""
    return _record({"event_id": event_id, "sensor_id": "sensor-901", "event_ts": _iso(RECENT), "temperature": 21.5,
                    "humidity": 40.0, "battery": 80.0, "status": "ok"}, **changes)


def click(path: str, **changes: Any) -> dict[str, Any]:
    return _record({"timestamp": _spaced(RECENT), "event": "page_view", "user_id": "user-9001", "site_id": "site-99",
                    "url": f"https://shop.example/{path}", "on_site_seconds": 12, "viewed_percent": 50}, **changes)


def array(*records: dict[str, Any]) -> bytes:
    return json.dumps(list(records)).encode()


def lines(*records: dict[str, Any]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


READING_COLUMNS = ("event_id", "sensor_id", "event_ts", "temperature", "humidity", "battery", "status")


def row(event_id: Any, **changes: Any) -> str:
    """An iot reading as one CSV record in READING_COLUMNS order (``MISSING`` -> an empty field)."""
    record = iot(event_id, **changes)
    return ",".join("" if record.get(c) is None else str(record[c]) for c in READING_COLUMNS)


def csv_file(*records: str, header: tuple[str, ...] = READING_COLUMNS, newline: str = "\n") -> bytes:
    return (newline.join([",".join(header), *records]) + newline).encode()


PARQUET_TYPES = {"event_id": "VARCHAR", "sensor_id": "VARCHAR", "event_ts": "TIMESTAMP", "temperature": "DOUBLE",
                 "humidity": "DOUBLE", "battery": "DOUBLE", "status": "VARCHAR"}


def parquet(*records: dict[str, Any], types: dict[str, str] | None = None) -> bytes:
    """A Parquet file of ``records`` written by DuckDB, columns typed by ``types`` (PARQUET_TYPES by default;
    a column missing from ``types`` is not written)."""
    import tempfile

    import duckdb

    types = PARQUET_TYPES if types is None else types
    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder) / "records.jsonl", Path(folder) / "out.parquet"
        source.write_text("".join(json.dumps({k: r.get(k) for k in types}) + "\n" for r in records))
        columns = ", ".join(f"'{k}': 'VARCHAR'" for k in types)
        casts = ", ".join(f"strptime({k}, '%Y-%m-%dT%H:%M:%SZ') AS {k}" if t == "TIMESTAMP" else f"CAST({k} AS {t}) AS {k}"
                          for k, t in types.items())
        where = "" if records else " WHERE false"
        duckdb.sql(f"COPY (SELECT {casts} FROM read_json('{source}', format = 'newline_delimited', columns = {{{columns}}})"
                   f"{where}) TO '{target}' (FORMAT parquet)")
        return target.read_bytes()


@dataclasses.dataclass(frozen=True)
class Case:
    """One bad-input kind. ``files``: (name, bytes) under landing/<dataset>/, names start with the case id.

    ``sent``: records the producer meant to send; ``rows``: bronze rows the platform makes of them;
    ``quarantine``: {failed rules (sorted tuple): rows}; ``whole_file``: the quarantined row's ``_raw`` is
    the entire file (input that is not records at all)."""

    id: str
    dataset: str
    input: str
    files: tuple[tuple[str, bytes], ...]
    sent: int
    rows: int
    silver: int = 0
    quarantine: dict[tuple[str, ...], int] = dataclasses.field(default_factory=dict)
    duplicates: int = 0
    late: int = 0
    whole_file: bool = False


def _cases() -> list[Case]:
    truncated = array(iot("trunc-0"), iot("trunc-1"))[:-40]
    return [
        # ---- iot: landing format json_array ----
        Case("iot-malformed-truncated", "iot", "malformed JSON: array cut off mid-record", (
            ("iot-malformed-truncated.json", truncated),), sent=2, rows=1, quarantine={MALFORMED: 1}, whole_file=True),
        Case("iot-malformed-elements", "iot", "malformed JSON: array elements that are not objects (null, 42, \"x\", [..])",
             (("iot-malformed-elements.json", b'[{"event_id":"elem-0","sensor_id":"sensor-901","event_ts":"'
               + _iso(RECENT).encode() + b'","temperature":20,"status":"ok"}, null, 42, "x", [{"event_id":"elem-4"}]]'),),
             sent=5, rows=5, silver=1, quarantine={MALFORMED: 4}),
        Case("iot-malformed-syntax", "iot", "malformed JSON: single quotes / NaN (not RFC 8259)", (
            ("iot-malformed-syntax-quotes.json", b"[{'event_id': 'quote-0'}]"),
            ("iot-malformed-syntax-nan.json", b'[{"event_id": "nan-0", "temperature": NaN}]')),
             sent=2, rows=2, quarantine={MALFORMED: 2}, whole_file=True),
        Case("iot-lines-not-array", "iot", "JSON lines where an array was expected", (
            ("iot-lines-not-array.json", lines(iot("lna-0"), iot("lna-1"), iot("lna-2"))),),
             sent=3, rows=1, quarantine={MALFORMED: 1}, whole_file=True),
        Case("iot-two-arrays", "iot", "two JSON arrays in one file (appending producer)", (
            ("iot-two-arrays.json", array(iot("two-0")) + b"\n" + array(iot("two-1"))),),
             sent=2, rows=1, quarantine={MALFORMED: 1}, whole_file=True),
        Case("iot-wrong-types", "iot", "wrong types (text for a number, number for a timestamp, object, bool)", (
            ("iot-wrong-types.json", array(iot("type-0", temperature="hot"), iot("type-1", event_ts=1605564000),
                                           iot("type-2", humidity={"v": 1}), iot("type-3", battery=True))),),
             sent=4, rows=4, quarantine={("temperature_type",): 1, ("event_ts_type",): 1, ("humidity_type",): 1,
                                         ("battery_type",): 1}),
        Case("iot-missing-required", "iot", "missing required fields", (
            ("iot-missing-required.json", array(iot("miss-0", temperature=MISSING), iot("miss-1", sensor_id=MISSING),
                                                iot("miss-2", event_ts=MISSING, status=MISSING))),),
             sent=3, rows=3, quarantine={("temperature_required",): 1, ("sensor_id_required",): 1,
                                         ("event_ts_required", "status_required"): 1}),
        Case("iot-null-key", "iot", "null / empty / absent key (event_id)", (
            ("iot-null-key.json", array(iot(None), iot(""), iot(MISSING))),),
             sent=3, rows=3, quarantine={("event_id_required",): 3}),
        Case("iot-extra-fields", "iot", "unknown extra fields (schema drift)", (
            ("iot-extra-fields.json", array(iot("drift-0", firmware="1.2.3"), iot("drift-1", location={"x": 1}))),),
             sent=2, rows=2, quarantine={("unknown_fields",): 2}),
        Case("iot-duplicates", "iot", "duplicates across files (and within one)", (
            ("iot-duplicates-a.json", array(iot("dup-0"), iot("dup-1"), iot("dup-1"))),
            ("iot-duplicates-b.json", array(iot("dup-0"), iot("dup-2")))),
             sent=5, rows=5, silver=3, duplicates=2),
        Case("iot-out-of-range", "iot", "out-of-range values", (
            ("iot-out-of-range.json", array(iot("range-0", temperature=500), iot("range-1", battery=-1),
                                            iot("range-2", humidity=100.5))),),
             sent=3, rows=3, quarantine={("temperature_range",): 1, ("battery_range",): 1, ("humidity_range",): 1}),
        Case("iot-future-ts", "iot", "timestamp in the future (+30 days)", (
            ("iot-future-ts.json", array(iot("future-0", event_ts=_iso(NOW + dt.timedelta(days=30))))),),
             sent=1, rows=1, quarantine={("event_ts_not_in_future",): 1}),
        Case("iot-ancient-ts", "iot", "timestamp from an unset clock (1970-01-01)", (
            ("iot-ancient-ts.json", array(iot("ancient-0", event_ts="1970-01-01T00:00:00Z"))),),
             sent=1, rows=1, quarantine={("event_ts_not_before_2000",): 1}),
        Case("iot-very-late", "iot", "very late record (400 days old) next to a current one", (
            ("iot-very-late.json", array(iot("late-0", event_ts=_iso(NOW - dt.timedelta(days=400))), iot("late-1"))),),
             sent=2, rows=2, silver=2, late=1),
        Case("iot-10mb-string", "iot", "a 10 MB string field", (
            ("iot-10mb-string.json", array(iot("big-0", status="x" * TEN_MB))),),
             sent=1, rows=1, quarantine={("status_allowed",): 1}),
        Case("iot-invalid-utf8", "iot", "invalid UTF-8 bytes in a field", (
            ("iot-invalid-utf8.json", array(iot("utf8-0")).replace(b"utf8-0", b"utf8-\xff\xfe0")),),
             sent=1, rows=1, quarantine={MALFORMED: 1}),
        Case("iot-empty-file", "iot", "empty file (whitespace and newlines only)", (
            ("iot-empty-file.json", b" \n\n\t\n"),), sent=0, rows=0),
        Case("iot-zero-byte", "iot", "zero-byte object (0 bytes)", (("iot-zero-byte.json", b""),), sent=0, rows=0),
        # ---- clickstream: landing format json_lines ----
        Case("click-malformed-lines", "clickstream", "malformed JSON lines (cut off, trailing text, two objects)", (
            ("click-malformed-lines.jsonl", lines(click("ml-0"))
             + b'{"timestamp": "2026-01-01 00:00:00", "event": "cli\n'
             + json.dumps(click("ml-2")).encode() + b" trailing\n"
             + json.dumps(click("ml-3")).encode() + json.dumps(click("ml-4")).encode() + b"\n"),),
             sent=5, rows=4, silver=1, quarantine={MALFORMED: 3}),
        Case("click-array-not-lines", "clickstream", "a JSON array where lines were expected", (
            ("click-array-not-lines.jsonl", array(click("anl-0"), click("anl-1"), click("anl-2"))),),
             sent=3, rows=1, quarantine={MALFORMED: 1}, whole_file=True),
        Case("click-wrong-types", "clickstream", "wrong types (text / fraction for an int, bad timestamp)", (
            ("click-wrong-types.jsonl", lines(click("wt-0", on_site_seconds="abc"), click("wt-1", viewed_percent=12.5),
                                              click("wt-2", timestamp="2026-02-30 10:00:00"))),),
             sent=3, rows=3, quarantine={("on_site_seconds_type",): 1, ("viewed_percent_type",): 1,
                                         ("timestamp_type",): 1}),
        Case("click-missing-and-null-key", "clickstream", "missing required field, null key parts", (
            ("click-missing-and-null-key.jsonl", lines(click("mk-0", url=MISSING), click("mk-1", user_id=None),
                                                       click("mk-2", site_id=None, event=None))),),
             sent=3, rows=3, quarantine={("url_required",): 1, ("user_id_required",): 1,
                                         ("event_required", "site_id_required"): 1}),
        Case("click-extra-fields", "clickstream", "unknown extra fields (schema drift)", (
            ("click-extra-fields.jsonl", lines(click("ef-0", referrer="https://a.example"))),),
             sent=1, rows=1, quarantine={("unknown_fields",): 1}),
        Case("click-duplicates", "clickstream", "duplicates across files", (
            ("click-duplicates-a.jsonl", lines(click("dup-0"), click("dup-1"))),
            ("click-duplicates-b.jsonl", lines(click("dup-0")))),
             sent=3, rows=3, silver=2, duplicates=1),
        Case("click-out-of-range", "clickstream", "out-of-range values", (
            ("click-out-of-range.jsonl", lines(click("or-0", viewed_percent=150), click("or-1", on_site_seconds=-5))),),
             sent=2, rows=2, quarantine={("viewed_percent_range",): 1, ("on_site_seconds_range",): 1}),
        Case("click-future-and-ancient", "clickstream", "timestamps in the future (+2 days) and in 1999", (
            ("click-future-and-ancient.jsonl", lines(click("fa-0", timestamp=_spaced(NOW + dt.timedelta(days=2))),
                                                     click("fa-1", timestamp="1999-12-31 23:59:59"))),),
             sent=2, rows=2, quarantine={("timestamp_not_in_future",): 1, ("timestamp_not_before_2000",): 1}),
        Case("click-10mb-string", "clickstream", "a 10 MB string field (url)", (
            ("click-10mb-string.jsonl", lines(click("big-0" + "x" * TEN_MB))),),
             sent=1, rows=1, quarantine={("url_max_length",): 1}),
        Case("click-invalid-utf8", "clickstream", "invalid UTF-8 bytes in a line", (
            ("click-invalid-utf8.jsonl", lines(click("iu-0"), click("iu-1")).replace(b"iu-1", b"iu-\xc3\x281")),),
             sent=2, rows=2, silver=1, quarantine={MALFORMED: 1}),
        Case("click-empty-file", "clickstream", "empty file (blank lines only)", (
            ("click-empty-file.jsonl", b"\n   \n\r\n"),), sent=0, rows=0),
        Case("click-zero-byte", "clickstream", "zero-byte object (0 bytes)", (("click-zero-byte.jsonl", b""),),
             sent=0, rows=0),
        # ---- csvreadings: landing format csv (header, NA = null) ----
        Case("csv-wrong-field-count", "csvreadings", "CSV records with too few and too many fields", (
            ("csv-wrong-field-count.csv", csv_file(row("fc-0"), row("fc-1").rsplit(",", 1)[0], row("fc-2") + ",extra")),),
             sent=3, rows=3, silver=1, quarantine={MALFORMED: 2}),
        Case("csv-unterminated-quote", "csvreadings", "an unterminated quote (no later quote in the file)", (
            ("csv-unterminated-quote.csv", csv_file(row("uq-0"), row("uq-1").replace("uq-1", '"uq-1'))),),
             sent=2, rows=2, silver=1, quarantine={MALFORMED: 1}),
        Case("csv-quoted-newline", "csvreadings", "a quoted field holding a line break and a delimiter (one record, two lines)", (
            ("csv-quoted-newline.csv", csv_file(row("qn-0").replace("qn-0", '"qn-0\nsecond line, same field"'))),),
             sent=1, rows=1, silver=1),
        Case("csv-invalid-utf8", "csvreadings", "invalid UTF-8 bytes in a CSV record", (
            ("csv-invalid-utf8.csv", csv_file(row("cu-0"), row("cu-1")).replace(b"cu-1", b"cu-\xff1")),),
             sent=2, rows=2, silver=1, quarantine={MALFORMED: 1}),
        Case("csv-gzip", "csvreadings", "a gzip-compressed CSV file (.csv.gz)", (
            ("csv-gzip.csv.gz", gzip.compress(csv_file(row("gz-0"), row("gz-1")))),),
             sent=2, rows=2, silver=2),
        Case("csv-null-tokens", "csvreadings", "null texts: NA and empty in optional fields, NA / empty in required ones", (
            ("csv-null-tokens.csv", csv_file(row("nt-0", humidity="NA", battery=None), row("nt-1", temperature="NA"),
                                             row("nt-2", status=None))),),
             sent=3, rows=3, silver=1, quarantine={("temperature_required",): 1, ("status_required",): 1}),
        Case("csv-header-mismatch", "csvreadings", "a header naming a column differently (temp for temperature)", (
            ("csv-header-mismatch.csv", csv_file(row("hm-0"), row("hm-1"),
                                                 header=tuple("temp" if c == "temperature" else c for c in READING_COLUMNS))),),
             sent=2, rows=2, quarantine={("temperature_required", "unknown_fields"): 2}),
        Case("csv-header-reordered", "csvreadings", "columns in another order (each file's header is its own)", (
            ("csv-header-reordered.csv", csv_file(*[",".join(reversed(row(f"ro-{i}").split(","))) for i in range(2)],
                                                  header=tuple(reversed(READING_COLUMNS)))),),
             sent=2, rows=2, silver=2),
        Case("csv-duplicate-header", "csvreadings", "a header that repeats a column name", (
            ("csv-duplicate-header.csv", csv_file(row("dh-0"), row("dh-1"), header=(*READING_COLUMNS[:-1], "event_id"))),),
             sent=2, rows=2, quarantine={MALFORMED: 2}),
        Case("csv-wrong-types", "csvreadings", "wrong types (text for a number, a date that is no timestamp)", (
            ("csv-wrong-types.csv", csv_file(row("wt-0", temperature="hot"), row("wt-1", event_ts="yesterday"))),),
             sent=2, rows=2, quarantine={("temperature_type",): 1, ("event_ts_type",): 1}),
        Case("csv-crlf-bom", "csvreadings", "Windows line ends and a byte-order mark", (
            ("csv-crlf-bom.csv", b"\xef\xbb\xbf" + csv_file(row("cb-0"), row("cb-1"), newline="\r\n")),),
             sent=2, rows=2, silver=2),
        Case("csv-header-only", "csvreadings", "a header and no records", (("csv-header-only.csv", csv_file()),),
             sent=0, rows=0),
        # ---- pqreadings: landing format parquet ----
        Case("pq-missing-column", "pqreadings", "Parquet file without a required column (status)", (
            ("pq-missing-column.parquet", parquet(iot("pm-0"), iot("pm-1"),
                                                  types={k: v for k, v in PARQUET_TYPES.items() if k != "status"})),),
             sent=2, rows=2, quarantine={("status_required",): 2}),
        Case("pq-wrong-column-type", "pqreadings", "Parquet column of another type (temperature as text)", (
            ("pq-wrong-column-type.parquet", parquet(iot("pt-0", temperature="hot"), iot("pt-1", temperature="21.5"),
                                                     types={**PARQUET_TYPES, "temperature": "VARCHAR"})),),
             sent=2, rows=2, silver=1, quarantine={("temperature_type",): 1}),
        Case("pq-extra-column", "pqreadings", "Parquet column the contract does not know", (
            ("pq-extra-column.parquet", parquet(iot("px-0", firmware="1.2"), types={**PARQUET_TYPES, "firmware": "VARCHAR"})),),
             sent=1, rows=1, quarantine={("unknown_fields",): 1}),
        Case("pq-null-required", "pqreadings", "null in a required Parquet column", (
            ("pq-null-required.parquet", parquet(iot("pn-0", sensor_id=None))),),
             sent=1, rows=1, quarantine={("sensor_id_required",): 1}),
        Case("pq-nan-infinity", "pqreadings", "NaN and infinity in a double column", (
            ("pq-nan-infinity.parquet", parquet(iot("pi-0", temperature="NaN"), iot("pi-1", temperature="Infinity"))),),
             sent=2, rows=2, quarantine={("temperature_range",): 2}),
        Case("pq-duplicates", "pqreadings", "duplicates across Parquet files", (
            ("pq-duplicates-a.parquet", parquet(iot("pd-0"), iot("pd-1"))), ("pq-duplicates-b.parquet", parquet(iot("pd-0")))),
             sent=3, rows=3, silver=2, duplicates=1),
        Case("pq-zero-rows", "pqreadings", "Parquet file with a schema and no rows", (
            ("pq-zero-rows.parquet", parquet()),), sent=0, rows=0),
    ]


CASES = _cases()
DATASETS = ("iot", "clickstream", "csvreadings", "pqreadings")
CONTRACTS = Path(__file__).parent / "contracts"


def _case_of(source_file: str) -> str:
    name = source_file.rsplit("/", 1)[-1]
    return next((c.id for c in CASES if any(name == f for f, _ in c.files)), "good")


@pytest.fixture(scope="module")
def spark():
    from spark_jobs.runs.session import build_session

    return build_session("tenantlake-reliability-tests", driver_memory="1g", small_inputs=True)


def _as_format(dataset: str, files: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """Generated iot files (JSON arrays) as the dataset's landing format."""
    if dataset == "csvreadings":
        return [(name.replace(".json", ".csv"), csv_file(*[",".join("" if r.get(c) is None else str(r[c]) for c in READING_COLUMNS)
                                                          for r in json.loads(body)])) for name, body in files]
    if dataset == "pqreadings":
        return [(name.replace(".json", ".parquet"), parquet(*json.loads(body))) for name, body in files]
    return files


def _reports(lake_root: Path, layer: str, dataset: str) -> list[Path]:
    return sorted((lake_root / "reports" / layer / dataset).glob("*/"), key=lambda run: run.stat().st_mtime_ns)


def _run_all(lake: LakeConfig, datasets: tuple[str, ...]) -> int:
    argv = ["run-all", "--lake-uri", lake.lake_uri]
    for dataset in datasets:
        argv += ["--dataset", dataset]
    return cli.main(argv)


@pytest.fixture(scope="module")
def run(spark, tmp_path_factory):
    """Land the good records and every case, run bronze -> silver -> gold once, read the outputs."""
    work = tmp_path_factory.mktemp("bad-input")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TENANTLAKE_STATE_DIR", str(work / "state"))
        env.delenv("TENANTLAKE_VALIDATION", raising=False)
        lake = LakeConfig(lake_uri=str(work / "lake"))
        good = {}
        env.setenv("TENANTLAKE_CONTRACTS_DIR", str(CONTRACTS))
        for dataset in DATASETS:
            generated = "iot" if dataset in ("csvreadings", "pqreadings") else dataset
            data = generate(DatagenConfig(dataset=generated, records=GOOD_RECORDS, batch_size=100, seed=9,
                                          start=_iso(NOW - dt.timedelta(hours=6))))
            write_landing(lake, dataset, _as_format(dataset, data.files))
            good[dataset] = data.raw_records
        for case in CASES:
            write_landing(lake, case.dataset, list(case.files))
        exit_code = _run_all(lake, DATASETS)
    root = work / "lake"
    out: dict[str, Any] = {"exit_code": exit_code, "root": root, "good": good}
    for dataset in DATASETS:
        quarantine = spark.read.parquet(str(root / "quarantine" / dataset))
        silver = tables.read(spark, tables.table(spark, lake, "silver", dataset))
        bronze = spark.read.parquet(str(root / "bronze" / dataset))
        out[dataset] = {
            "bronze": collections.Counter(_case_of(r[0]) for r in bronze.select("_source_file").collect()),
            "silver": collections.Counter(_case_of(r[0]) for r in silver.select("_source_file").collect()),
            "late": collections.Counter(_case_of(r[0]) for r in silver.where("_is_late").select("_source_file").collect()),
            "quarantine": [(_case_of(r["_source_file"]), tuple(sorted(r["_failed_rules"])), r["_raw"], r["_source_file"])
                           for r in quarantine.select("_source_file", "_failed_rules", "_raw").collect()],
            "manifests": {layer: [json.loads((d / "manifest.json").read_text()) for d in _reports(root, layer, dataset)]
                          for layer in ("bronze", "silver", "gold")},
            "summary_dir": _reports(root, "silver", dataset)[-1],
        }
    return out


def test_the_run_survives_every_bad_input(run):
    # 0 = every layer passed its data-quality suite; 5 would be a warn (documented), anything else a failure.
    assert run["exit_code"] == 0
    for dataset in DATASETS:
        for layer, manifests in run[dataset]["manifests"].items():
            assert len(manifests) == 1, (dataset, layer)
            manifest = manifests[0]
            assert manifest["status"] == "succeeded" and manifest["published"] is True, (dataset, layer, manifest["error"])
            assert manifest["invariant_holds"] is True
            assert manifest["rows_in"] == manifest["rows_out"] + manifest["quarantined"] + manifest["duplicates"]


@pytest.mark.parametrize("dataset", DATASETS)
def test_bronze_counts_every_landing_record(run, dataset):
    cases = [c for c in CASES if c.dataset == dataset]
    expected_rows = run["good"][dataset] + sum(c.rows for c in cases)
    bronze = run[dataset]["manifests"]["bronze"][0]
    assert bronze["rows_in"] == bronze["rows_out"] == expected_rows == sum(run[dataset]["bronze"].values())
    silver = run[dataset]["manifests"]["silver"][0]
    assert silver["rows_in"] == expected_rows
    assert silver["quarantined"] == sum(n for c in cases for n in c.quarantine.values())
    assert silver["duplicates"] == sum(c.duplicates for c in cases)  # datagen with bad_rate 0 sends no duplicates
    assert silver["late"] == sum(c.late for c in cases)
    assert silver["malformed"] == sum(c.quarantine.get(MALFORMED, 0) for c in cases)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_each_record_is_accounted_for(run, case):
    outputs = run[case.dataset]
    quarantined = [q for q in outputs["quarantine"] if q[0] == case.id]
    bronze_rows = outputs["bronze"][case.id]
    silver_rows = outputs["silver"][case.id]
    duplicates = bronze_rows - silver_rows - len(quarantined)
    assert bronze_rows == case.rows
    assert silver_rows == case.silver
    assert dict(collections.Counter(q[1] for q in quarantined)) == case.quarantine
    assert duplicates == case.duplicates
    assert outputs["late"][case.id] == case.late
    if case.whole_file:  # not records at all: kept whole, byte for byte, so nothing inside is lost
        files = dict(case.files)
        for _, _, raw, source in quarantined:
            assert raw.encode() == files[source.rsplit("/", 1)[-1]]


@pytest.mark.parametrize("case", [c for c in CASES if c.quarantine], ids=[c.id for c in CASES if c.quarantine])
def test_the_dq_report_shows_the_quarantine_reason(run, case):
    folder = run[case.dataset]["summary_dir"]
    summary = json.loads((folder / "summary.json").read_text())
    page = (folder / "summary.html").read_text()
    by_rule = collections.Counter(rule for q in run[case.dataset]["quarantine"] for rule in q[1])
    assert summary["quarantine"]["total"] == len(run[case.dataset]["quarantine"])
    for rules in case.quarantine:
        for rule in rules:
            assert summary["quarantine"]["by_rule"][rule] == by_rule[rule]
            assert f'<tr id="q-{rule}"><td>{rule}</td><td>{by_rule[rule]}</td>' in page


@pytest.mark.parametrize("dataset", DATASETS)
def test_the_dq_reports_show_the_run_counts(run, dataset):
    """Duplicates, late and malformed rows are not quarantine reasons: the reports carry them as counts."""
    cases = [c for c in CASES if c.dataset == dataset]
    silver = json.loads((run[dataset]["summary_dir"] / "summary.json").read_text())
    assert silver["status"] == "pass" and silver["published"] is True
    assert silver["counts"]["duplicates"] == sum(c.duplicates for c in cases)
    assert silver["counts"]["late"] == sum(c.late for c in cases)
    assert silver["counts"]["malformed"] == sum(c.quarantine.get(MALFORMED, 0) for c in cases)
    bronze_dir = _reports(run["root"], "bronze", dataset)[-1]
    bronze = json.loads((bronze_dir / "summary.json").read_text())
    assert bronze["counts"]["malformed"] == silver["counts"]["malformed"]
    assert "<th>duplicates</th><td>" in (run[dataset]["summary_dir"] / "summary.html").read_text()


def test_reports_do_not_embed_the_10mb_field(run):
    for dataset in DATASETS:
        for layer in ("bronze", "silver"):
            for folder in _reports(run["root"], layer, dataset):
                for name in ("summary.json", "summary.html", "validation.json", "manifest.json"):
                    assert (folder / name).stat().st_size < 1_000_000, folder / name


def test_invalid_utf8_is_quarantined_readably(run):
    """The bad bytes arrive as U+FFFD (the record is not ingested altered), and the quarantine Parquet is
    valid UTF-8: DuckDB, stricter than Spark, reads it."""
    import duckdb

    for dataset in [d for d in DATASETS if any(c.dataset == d and c.id.endswith("invalid-utf8") for c in CASES)]:
        raws = [q[2] for q in run[dataset]["quarantine"] if q[0].endswith("invalid-utf8")]
        assert raws and all("\ufffd" in raw for raw in raws)
        for layer, rows in (("quarantine", len(run[dataset]["quarantine"])), ("bronze", sum(run[dataset]["bronze"].values()))):
            folder = run["root"] / layer / dataset
            assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{folder}/**/*.parquet')").fetchall()[0][0] == rows


def test_only_empty_files_in_landing(spark, tmp_path, monkeypatch):
    """A landing of only an empty file and a 0-byte file: bronze commits an empty batch and warns (exit 5);
    the next run does not replay it and ingests what lands next."""
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    lake = LakeConfig(lake_uri=str(tmp_path / "lake"))
    bronze = ["run", "--lake-uri", lake.lake_uri, "--dataset", "iot", "--layer", "bronze"]
    write_landing(lake, "iot", [("empty.json", b"\n \n"), ("zero.json", b"")])
    assert cli.main(bronze) == 5
    first = json.loads((_reports(tmp_path / "lake", "bronze", "iot")[-1] / "manifest.json").read_text())
    assert first["status"] == "succeeded" and first["invariant_holds"] is True
    assert (first["rows_in"], first["rows_out"], [b["batch_id"] for b in first["batches"]]) == (0, 0, [0])
    assert first["validation"]["bronze"]["status"] == "warn" and "row_count" in first["validation"]["bronze"]["reason"]

    write_landing(lake, "iot", [("good.json", array(iot("after-empty-0"), iot("after-empty-1")))])
    assert cli.main(bronze) == 0
    second = json.loads((_reports(tmp_path / "lake", "bronze", "iot")[-1] / "manifest.json").read_text())
    assert [(b["batch_id"], b["rows"]) for b in second["batches"]] == [(1, 2)]


def _outcome(case: Case) -> str:
    parts = []
    if case.silver:
        parts.append(f"{case.silver} silver" + (f" ({case.late} flagged `_is_late`)" if case.late else ""))
    for rules, rows in case.quarantine.items():
        parts.append(f"{rows} quarantine `{' + '.join(rules)}`")
    if case.duplicates:
        parts.append(f"{case.duplicates} counted duplicate")
    outcome = ", ".join(parts) or "no record, nothing written, no error"
    if case.whole_file:
        outcome += " (the whole file in `_raw`, byte for byte)"
    sent = f"{case.sent} record{'s' if case.sent != 1 else ''} sent"
    rows = "" if case.rows == case.sent else f" = {case.rows} bronze row{'s' if case.rows != 1 else ''}"
    return f"{sent}{rows} → {outcome}"


# Scenarios with a run of their own (not in CASES): README row text, asserted by the named test.
ISOLATED = [
    "| iot | only an empty file and a 0-byte file in landing (own run) | `test_only_empty_files_in_landing` | passed: "
    "bronze commits an empty batch and warns (`row_count`, exit 5); the next run ingests the next file |",
    "| csv, parquet | a file that is not the declared format at all: a Parquet file named `.csv`, a `.csv.gz` that is not "
    "gzip, a CSV named `.parquet` (own runs) | `tests/spark_jobs/jobs/test_bronze.py::"
    "test_a_file_not_of_the_declared_format_fails_bronze_naming_it` | passed: bronze fails with one line naming the "
    "file and writes nothing of the batch; once the file is moved out of landing, the replayed batch ingests the rest |",
    "| csv, parquet | the same kinds of file given to `land` (and Latin-1 text, a header without a required column, "
    "a `;`-delimited file, nanosecond Parquet timestamps) | `tests/spark_jobs/landing/test_land.py` | passed: refused before "
    "any upload, one line per bad file, nothing landed |",
]


def readme_rows() -> list[str]:
    """The README rows: every case with its outcome, which ``test_each_record_is_accounted_for`` asserts."""
    return [f"| {c.dataset} | {c.input} | `{c.id}` | passed: {_outcome(c)} |" for c in CASES] + ISOLATED


def test_readme_lists_every_case_with_its_outcome():
    readme = (Path(__file__).parent / "README.md").read_text()
    section = readme.split("\n## Bad input\n", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("| ") and "`" in line]
    assert table == readme_rows()
    assert f"bad inputs tried: {len(CASES) + len(ISOLATED)}" in section
    assert "records lost: 0" in section


if __name__ == "__main__":  # python -m tests.reliability.test_bad_input: the README rows
    print("\n".join(readme_rows()))
    print(f"bad inputs tried: {len(CASES) + len(ISOLATED)}; records sent: {sum(c.sent for c in CASES)}")
