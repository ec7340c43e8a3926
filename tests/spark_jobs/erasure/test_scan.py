"""spark_jobs/erasure/scan.py: a subject's id is found in every form the lake holds, and only there.

Every format the scan reads (JSON text, gzip, CSV with a header, Parquet strings, dictionaries, nested
columns, numeric and decimal columns, bronze's CSV ``_raw``, Iceberg manifests' column bounds), each
with its near miss; an object that does not parse is unreadable, never clean. A truncated string bound is
a hint the data file confirms or not; text windows overlap, so an id across a seam is found.
"""
from __future__ import annotations

import decimal
import gzip
import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs.erasure.matching import KeyRule, Needles
from spark_jobs.erasure.scan import CHUNK_BYTES, Matcher, Matchers, batch_hits, scan_chunks

STRING = Matcher(Needles.build(["user-0042", "ann@x.com"]))
NUMERIC = Matcher(Needles.build([], [KeyRule.of("customer_id", "long", ["1042"]),
                                      KeyRule.of("amount_id", "decimal(10,2)", ["1042.5"])]))


def _parquet(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="snappy")
    return sink.getvalue()


def _scan(data: bytes, matcher: Matcher, chunk: int = 1 << 16, fetch=None) -> tuple[bool, str]:
    return scan_chunks([data[i:i + chunk] for i in range(0, len(data), chunk)] or [b""], matcher, fetch)


@pytest.mark.parametrize("data, matcher, expected", [
    (b'{"user_id": "USER-0042"}\n', STRING, True),
    (b'{"user_id": "user-00420"}\n', STRING, False),
    (gzip.compress(b"user_id,n\nuser-0042,1\n", mtime=0), STRING, True),
    (gzip.compress(b"user_id,n\nuser-0043,1\n", mtime=0), STRING, False),
    (b"<td>joann@x.com</td>", STRING, False),
    (_parquet(pa.table({"user_id": pa.array(["user-0001", "user-0042"] * 50).dictionary_encode()})), STRING, True),
    (_parquet(pa.table({"user_id": pa.array(["user-0001", "user-0043"] * 50).dictionary_encode()})), STRING, False),
    (_parquet(pa.table({"tags": pa.array([[{"k": "a", "v": "x user-0042"}]])})), STRING, True),
    (_parquet(pa.table({"m": pa.array([[("user-0042", 1)]], pa.map_(pa.string(), pa.int64()))})), STRING, True),
    # numbers: the keyed column by value; the same number in another column is not the id
    (_parquet(pa.table({"customer_id": pa.array([7, 1042], pa.int32()), "bytes": [1, 2]})), NUMERIC, True),
    (_parquet(pa.table({"customer_id": pa.array([7, 10420], pa.int64()), "bytes": [1042, 21042]})), NUMERIC, False),
    (_parquet(pa.table({"amount_id": pa.array([decimal.Decimal("1042.50")], pa.decimal128(10, 2))})), NUMERIC, True),
    (_parquet(pa.table({"amount_id": pa.array([decimal.Decimal("1042.55")], pa.decimal128(10, 2))})), NUMERIC, False),
    (_parquet(pa.table({"_raw": ['{"customer_id": 1042, "bytes": 5}']})), NUMERIC, True),
    (_parquet(pa.table({"_raw": ['{"customer_id": 5, "bytes": 1042}']})), NUMERIC, False),
    # bronze of a CSV dataset: the record, and its file's header next to it
    (_parquet(pa.table({"_raw": ['5,1042', '"1042",7'], "_header": ["bytes,customer_id", "customer_id,bytes"]})), NUMERIC, True),
    (_parquet(pa.table({"_raw": ['1042,5'], "_header": ["bytes,customer_id"]})), NUMERIC, False),
    # a CSV text with a header (a landing file, an Athena result)
    (b'"bytes","customer_id"\n"1042","7"\n"5","01042"\n', NUMERIC, True),
    (b'"bytes","customer_id"\n"1042","7"\n', NUMERIC, False),
    # records cut where bronze cuts them: an unterminated quote with no later quote ends at its own line, so the
    # records after it (bronze's well-formed rows) are read; a quoted field may run over lines
    (b'bytes,customer_id\n"oops,7\n5,1042\n', NUMERIC, True),
    (b'bytes,customer_id\n"two\nlines",1042\n', NUMERIC, True),
    (b'bytes,customer_id\n"two\n1042",7\n', NUMERIC, False),
    (b"customer_id=1042 in a log line\n", NUMERIC, True),
    # a header read by the CSV grammar: a quoted name holding the delimiter is one field (issue 51)
    (b'"a,b",customer_id,bytes\n"x,y",7,1042\n', NUMERIC, False),
    (b'"a,b",customer_id,bytes\n"x,y",01042,7\n', NUMERIC, True),
    # every text silver types as the number, and nothing it does not read (issue 51)
    (b'customer_id,n\n" +01042 ",1\n', NUMERIC, True),
    (b'customer_id,n\n1.042e3,1\n', NUMERIC, False),
    (b'customer_id,n\n1_042,1\n', NUMERIC, False),
    (b'amount_id,n\n1042.504,1\n', NUMERIC, True),     # silver rounds to the scale: 1042.50
    (b'amount_id,n\n1042.505,1\n', NUMERIC, False),    # ... 1042.51
])
def test_found_in_its_form_and_not_in_a_near_miss(data, matcher, expected):
    assert _scan(data, matcher) == (expected, "")


def test_text_is_cut_between_tokens_only():
    filler = b'{"user_id": "user-0001"},' * (CHUNK_BYTES // 25)
    data = filler + b'{"user_id": "user-0042"}' + filler  # the id lands near a chunk seam
    assert _scan(data, STRING, chunk=1 << 20) == (True, "")
    assert _scan(filler + b'{"user_id": "user-00420"}' + filler, STRING, chunk=1 << 20) == (False, "")


def test_windows_overlap_so_an_id_across_a_seam_is_found():
    """A long line with none of the usual cut characters (no newline, comma, brace): the windows still end
    between tokens and overlap, so the id is found wherever the seam falls (issue 40: it was cut in two)."""
    for start in range(CHUNK_BYTES - 4096 - 10, CHUNK_BYTES - 4096 + 2, 3):
        data = b"/x" * (start // 2) + b"/" * (start % 2) + b"/user-0042/" + b"x/" * (CHUNK_BYTES // 2)
        assert _scan(data, STRING, chunk=1 << 20) == (True, ""), start
    near_miss = b"/x" * (CHUNK_BYTES // 2 - 2050) + b"/user-00420/" + b"x/" * (CHUNK_BYTES // 2)
    assert _scan(near_miss, STRING, chunk=1 << 20) == (False, "")
    # a run of letters longer than a window: no part of it is read as a token of its own
    assert _scan(b"x" * (CHUNK_BYTES + 17) + b"user-0042 ok", STRING, chunk=1 << 20) == (False, "")


def test_rows_of_a_batch_are_told_apart_at_any_depth():
    """``batch_hits`` (what the erase matches bronze, quarantine and silver rows with): per row, a text hit
    at any depth and a keyed column by value."""
    batch = pa.record_batch({
        "_raw": ['{"a": "x\\nuser-0042"}', "user-00420", None, "ok"],
        "tags": pa.array([[], None, ["a", "USER-0042"], ["zz", "user-0042"]]),
        "meta": pa.array([{"k": "user-00421"}, {"k": None}, None, {"k": "x"}]),
        "customer_id": pa.array([1, 2, 1042, 1042], pa.int64()),
    })
    matcher = Matcher(Needles.build([], [KeyRule.of("customer_id", "long", ["1042"])], exact=["user-0042"]))
    text, value = batch_hits(batch, matcher)
    assert text.tolist() == [True, False, False, True]  # USER-0042: a key without a case rule
    assert value.tolist() == [False, False, True, True]


def test_an_object_that_does_not_parse_is_unreadable_and_still_searched():
    hit, reason = _scan(b"PAR1 not parquet user-0042 PAR1", STRING)
    assert hit and reason.startswith("Parquet: ")
    hit, reason = _scan(b"Obj\x01garbage", STRING)
    assert not hit and reason.startswith("Avro: ")


def test_iceberg_manifest_bounds_hold_numeric_ids_and_hint_at_truncated_ones(spark, tmp_path):
    """A real Iceberg table (local Hadoop catalog): its manifests keep each data file's column lower and
    upper bounds; the subject that is a file's min or max is found there, by value. A string id longer
    than the 16 characters Iceberg keeps is only hinted at by its prefix: the data file tells (issue 40: a
    prefix shared by another id was taken for a hit that no erasure could clear)."""
    from pathlib import Path

    from spark_jobs.lake.catalog import register
    from spark_jobs.lake.config import LakeConfig

    table = register(spark, LakeConfig(lake_uri=str(tmp_path))).qualified("silver", "scan_bounds")
    spark.sql(f"CREATE TABLE {table} (customer_id bigint, email string, bytes bigint) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (1042, 'annabelle.smith@example.com', 5), (5000, 'bob@example.com', 1043)")
    manifests = [p for p in (tmp_path / "silver" / "scan_bounds" / "metadata").iterdir()
                 if p.suffix == ".avro" and not p.name.startswith("snap-")]
    data = manifests[0].read_bytes()
    fetched = []

    def fetch(uri):
        fetched.append(uri)
        path = Path(uri.removeprefix("file:"))
        return [path.read_bytes()] if path.is_file() else None

    for needles, expected in [
        (Needles.build([], [KeyRule.of("customer_id", "long", ["1042"])]), True),      # the lower bound
        (Needles.build([], [KeyRule.of("customer_id", "long", ["5000"])]), True),      # the upper bound
        (Needles.build([], [KeyRule.of("customer_id", "long", ["1043"])]), False),     # another column's bound
        (Needles.build([], [KeyRule.of("customer_id", "long", ["3000"])]), False),     # between the bounds: not in the manifest
        (Needles.build(["annabelle.smith@example.com"]), True),  # truncated to 16 characters; the file holds it
        (Needles.build(["annabelle.smith@example.org"]), False),  # the same 16 characters: the file says no
        (Needles.build(exact=["Annabelle.smith@example.com"]), False),  # another case, no case rule
        (Needles.build(["carol@example.com"]), False),
    ]:
        assert _scan(data, Matcher(needles), fetch=fetch) == (expected, ""), needles
    assert len(fetched) == 2  # only the two hints read the data file
    # Where the data file cannot be read, the hint is named, never taken as clean or as a hit.
    hit, reason = _scan(data, Matcher(Needles.build(["annabelle.smith@example.org"])))
    assert not hit and "truncated bound" in reason


def _owned_needles() -> Needles:
    """Two datasets: ``orders`` reads its subject key ``customer_id`` from the landing field ``id``; ``logs`` has an
    ``id`` of its own that names nobody; ``names`` writes ISO-8859-1 CSV."""
    from spark_jobs.erasure.matching import Owner

    return Needles.build(["jürgen-7"], [KeyRule.of({"customer_id", "id"}, "long", ["1042"], dataset="orders")],
                         owners=[Owner("orders", ("landing/orders/", "bronze/orders/"), "landing/orders/"),
                                 Owner("logs", ("landing/logs/",), "landing/logs/"),
                                 Owner("names", ("landing/names/",), "landing/names/", "iso-8859-1", ";", '"', '"')])


def test_key_names_are_per_dataset():
    """A subject key's landing name (``source: id``) is a key name in its own dataset's objects only; an object
    of no dataset (an Athena result) is read with every dataset's names (issue 51)."""
    matchers, data = Matchers(_owned_needles()), b'{"id": 1042, "n": 1}\n'
    assert _scan(data, matchers.for_key("landing/orders/a.json")) == (True, "")
    assert _scan(data, matchers.for_key("landing/logs/a.json")) == (False, "")
    assert _scan(data, matchers.for_key("athena/q1.json")) == (True, "")
    orders = pa.record_batch({"id": pa.array([1042, 7], pa.int64()), "_raw": ["a", "b"]})
    assert batch_hits(orders, matchers.for_key("bronze/orders/x.parquet"))[1].tolist() == [True, False]
    assert batch_hits(orders, matchers.for_key("landing/logs/x.parquet"))[1].tolist() == [False, False]


def test_a_landing_file_is_read_in_its_contracts_encoding():
    """``names`` lands ISO-8859-1 CSV: its bytes are decoded as that, so a non-ASCII id in it is found (issue 51:
    it was decoded as UTF-8, and ``ü`` became U+FFFD)."""
    matchers, data = Matchers(_owned_needles()), "name;n\nJürgen-7;1\n".encode("iso-8859-1")
    assert _scan(data, matchers.for_key("landing/names/a.csv")) == (True, "")
    assert _scan(data, matchers.for_key("landing/orders/a.csv")) == (False, "")  # read as UTF-8: not the id
    assert _scan("jürgen-7".encode("iso-8859-1"), matchers.for_key("reports/x.txt")) == (False, "")
