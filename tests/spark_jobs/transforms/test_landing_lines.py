"""Landing lines -> records, as the Python workers run it (no Spark: the mapInArrow function on Arrow batches).

Every test feeds a file's lines in small Arrow batches, so records that run over a batch boundary are
exercised as well as the vectorised path (lines that are a record on their own) and the scanner.
"""
from __future__ import annotations

import itertools
import json

import pyarrow as pa
import pytest

from spark_jobs.transforms.landing_lines import ELEMENTS_BEFORE_BREAK, lines_to_records
from spark_jobs.transforms.landing_text import (KIND_BROKEN_ARRAY, KIND_PROBLEM, KIND_RECORD, LineOptions,
                                                output_schema)
from tests.spark_jobs.transforms.landing_records import text_lines

CSV = LineOptions(format="csv", null_values=("", "NA"), field_names=("id", "v"))


def _run(options: LineOptions, *files: tuple[str, bytes], batch: int = 3) -> list[dict]:
    """Every output row of the files (name, bytes), fed ``batch`` lines at a time, in record order."""
    rows = [(line, name) for name, body in files for line in text_lines(body)]
    batches = [pa.RecordBatch.from_arrays([pa.array([r[0] for r in rows[i:i + batch]], pa.binary()),
                                           pa.array([r[1] for r in rows[i:i + batch]], pa.string())],
                                          names=["_line", "_source_file"]) for i in range(0, len(rows), batch)]
    out = []
    for produced in lines_to_records(options)(iter(batches)):
        assert produced.schema == output_schema(options)
        out += produced.to_pylist()
    return sorted(out, key=lambda r: (r["_source_file"], r["_kind"], r["_record_index"]))


def _records(rows: list[dict]) -> list[tuple]:
    return [(r["_raw"], r["_record_index"], r["_is_malformed"]) for r in rows if r["_kind"] == KIND_RECORD]


def test_csv_records_over_lines_and_batches_keep_their_positions_and_fields():
    rows = _run(CSV, ("a.csv", b'id,v\n1,"a\nb"\n\n2,x,extra\n3\n4,"x\n\ny, ""z"""\n5,NA\n'), batch=2)
    assert _records(rows) == [('1,"a\nb"', 1, False), ("2,x,extra", 3, True), ("3", 4, True),
                              ('4,"x\n\ny, ""z"""', 5, False), ("5,NA", 6, False)]
    fields = {r["_raw"]: r["_fields"] for r in rows}
    assert fields['4,"x\n\ny, ""z"""'] == {"id": "4", "v": 'x\n\ny, "z"'}
    assert fields["5,NA"] == {"id": "5", "v": None} and fields["2,x,extra"] is None
    assert {r["_header"] for r in rows} == {"id,v"}


def test_every_file_has_its_own_header_and_unknown_fields():
    rows = _run(CSV, ("a.csv", b"v,id,extra\r\nq,9,z\r\n"), ("b.csv", b"\xef\xbb\xbfid\n1\n"))
    assert [(r["_source_file"], r["_fields"], r["_unknown_fields"], r["_is_malformed"]) for r in rows] == [
        ("a.csv", {"id": "9", "v": "q"}, ["extra"], False), ("b.csv", {"id": "1", "v": None}, [], False)]


def test_csv_records_end_at_line_breaks_outside_quotes():
    body = '\ufeffa,b\r\n1,"two\nlines, and ""quotes"""\n\n3,x\r4,y'.encode()
    rows = _run(LineOptions(format="csv", field_names=("a", "b")), ("r.csv", body))
    assert _records(rows) == [('1,"two\nlines, and ""quotes"""', 1, False), ("3,x", 3, False), ("4,y", 4, False)]
    assert rows[0]["_fields"] == {"a": "1", "b": 'two\nlines, and "quotes"'} and rows[0]["_header"] == "a,b"


def test_an_unterminated_quote_runs_to_the_next_quote_or_ends_at_its_line():
    assert _records(_run(CSV, ("u.csv", b'id,v\n1,"oops\n2,ok\n3,"q"\n'))) == [('1,"oops\n2,ok\n3,"q"', 1, True)]
    assert _records(_run(CSV, ("u.csv", b'id,v\n1,"oops\n2,ok\n'))) == [('1,"oops', 1, True), ("2,ok", 2, False)]


def test_a_lone_carriage_return_ends_a_record_and_a_header_problem_marks_every_record():
    assert _records(_run(CSV, ("cr.csv", b"id,v\r1,a\r2,b"))) == [("1,a", 1, False), ("2,b", 2, False)]
    assert _records(_run(CSV, ("dup.csv", b"id,id\n1,2\n"))) == [("1,2", 1, True)]


def test_quoted_lines_are_split_alike_by_the_vectorised_path_and_one_at_a_time():
    body = b'"id","v"\n' + b"".join(b'"%d","n, ""%d"""\n' % (i, i) for i in range(40)) + b'"x"\n'
    rows = _run(CSV, ("q.csv", body), batch=25)  # a batch of 25 quoted lines, then one of 16
    assert [r["_fields"]["v"] for r in rows[:40]] == [f'n, "{i}"' for i in range(40)]
    assert rows[40]["_raw"] == '"x"' and rows[40]["_is_malformed"] is True


def test_without_a_header_the_contract_names_the_fields_by_position():
    options = LineOptions(format="csv", header=False, field_names=("a", "b"))
    rows = _run(options, ("h.csv", b"1,x\n2\n"))
    assert [(r["_raw"], r["_fields"]) for r in rows] == [("1,x", {"a": "1", "b": "x"}), ("2", None)]


@pytest.mark.parametrize("body, problem", [
    (b"\x1f\x8b\x08\x00rest\n", "is gzip-compressed, but its name does not end in .gz"),
    (b"PAR1\x00\x00", "is a Parquet file, not CSV"),
    (b"id,v\n1,2\n" * 5 + b"1,\x00\n", "holds NUL bytes: binary data, not CSV text"),
])
def test_a_file_that_is_not_text_is_one_problem_row(body, problem):
    rows = _run(CSV, ("bad.csv", body))
    assert [(r["_kind"], r["_file_problem"]) for r in rows if r["_kind"] != KIND_RECORD] == [(KIND_PROBLEM, problem)]


def test_invalid_utf8_becomes_u_fffd_and_a_malformed_record():
    rows = _run(CSV, ("x.csv", b"id,v\n1,\xff2\n3,ok\n"))
    assert _records(rows) == [("1,\ufffd2", 1, True), ("3,ok", 2, False)]


def test_json_lines_keep_each_non_blank_line_at_its_position():
    rows = _run(LineOptions(format="json_lines"), ("c.jsonl", b'{"a":1}\n\n{"a":\r\n  \n{"a":3}\n'))
    assert [(r["_raw"], r["_record_index"]) for r in rows] == [('{"a":1}', 0), ('{"a":', 2), ('{"a":3}', 4)]


@pytest.mark.parametrize("body, elements", [
    (b'[{"a":1},{"a":2,"b":"x"}]', ['{"a":1}', '{"a":2,"b":"x"}']),
    (b'[\n  {\n    "a": 1,\n    "b": [1,\n 2]\n  },\n  {"c": "}"}, 42, "t", null\n]\n',
     ['{\n    "a": 1,\n    "b": [1,\n 2]\n  }', '{"c": "}"}', "42", '"t"', "null"]),
    (b"[]", []),
    (b" \n\n", []),
])
def test_json_array_elements_are_records_in_order_whatever_the_line_breaks(body, elements):
    rows = _run(LineOptions(format="json_array"), ("f.json", body), batch=2)
    assert [(r["_raw"], r["_record_index"]) for r in rows] == [(e, i) for i, e in enumerate(elements)]


@pytest.mark.parametrize("body", [b'[{"a":1},{"a":', b'[{"a":1}]\n[{"a":2}]', b'[{"a": NaN}]',
                                  b'{"a":1}\n{"a":2}\n', b"[1,]", b"[{'a': 1}]"])
def test_a_file_that_is_not_one_json_array_is_reported_broken(body):
    rows = _run(LineOptions(format="json_array"), ("bad.json", body))
    assert [r["_kind"] for r in rows if r["_kind"] != KIND_RECORD] == [KIND_BROKEN_ARRAY]


@pytest.mark.parametrize("body, batch, written_before", [
    (b'[{"a":', 10_000, False),                    # cut off in the first element: nothing was output
    (b'[{"a":1},{"a":', 10_000, True),             # the line's whole elements are output before the end
    (b'[\n{"a":1},\n{"a":2},\n{"a":', 2, True),   # elements output in an earlier batch of lines
    (b'[\n{"a":1},\n{"a":2},\n{"a":', 10_000, True),  # ... or in the batch the file ends in
    (b'[\n{"a":1},\nx\n', 10_000, False),         # broken in the batch: its elements are not output
])
def test_a_broken_array_says_whether_elements_were_output_before_the_break(body, batch, written_before):
    rows = _run(LineOptions(format="json_array"), ("bad.json", body), batch=batch)
    broken = [r for r in rows if r["_kind"] == KIND_BROKEN_ARRAY]
    assert [r["_file_problem"] for r in broken] == [ELEMENTS_BEFORE_BREAK if written_before else None]
    assert bool([r for r in rows if r["_kind"] == KIND_RECORD]) is written_before


def test_stream_objects_in_a_json_array_dataset_are_json_lines():
    options = LineOptions(format="json_array", stream_pattern=r"/[0-9]{4}/[0-9]{2}/[0-9]{2}/[0-9]{2}/[^/]+$")
    rows = _run(options, ("s3a://l/landing/iot/2026/11/22/00/x.jsonl", b'{"a":1}\n{"a":2}\n'))
    assert [(r["_raw"], r["_from_stream"]) for r in rows] == [('{"a":1}', True), ('{"a":2}', True)]


def test_a_json_lines_file_read_in_splits_numbers_its_lines_across_them():
    """Two tasks each read a split of one file (any order); the lines before each split (counted by the JVM)
    make the line numbers the file's own."""
    def split(start: int, lines: list[bytes]) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays([pa.array(lines, pa.binary()), pa.array(["big.jsonl"] * len(lines)),
                                           pa.array([start] * len(lines), pa.int64())],
                                          names=["_line", "_source_file", "_split_start"])

    run = lines_to_records(LineOptions(format="json_lines"), offsets={("big.jsonl", 0): 0, ("big.jsonl", 64): 3})
    second = [r for b in run(iter([split(64, [b'{"a":3}', b"", b'{"a":5}'])])) for r in b.to_pylist()]
    first = [r for b in run(iter([split(0, [b'{"a":0}', b'{"a":1}', b'{"a":2}'])])) for r in b.to_pylist()]
    assert [(r["_raw"], r["_record_index"]) for r in first + second] == [
        ('{"a":0}', 0), ('{"a":1}', 1), ('{"a":2}', 2), ('{"a":3}', 3), ('{"a":5}', 5)]
    with pytest.raises(ValueError, match="must be read by one task"):
        list(lines_to_records(CSV)(iter([split(64, [b"1,2"])])))


def test_a_pretty_printed_json_array_streams_element_by_element():
    """Jackson's pretty printer writes ``[ {`` ... ``}, {`` ... ``} ]``: a line that closes one element and opens
    the next. Each element is a record as soon as its last line is read (memory bounded by an element), not
    the whole array at its end."""
    elements = [{"id": i, "nested": {"list": [1, {"s": "}, {"}]}} for i in range(50)]
    body = ("[ " + ", ".join(json.dumps(e, indent=2) for e in elements) + " ]\n").encode()
    lines = text_lines(body)
    fed = []

    def batches():
        for i in range(0, len(lines), 3):
            fed.append(i + 3)
            yield pa.RecordBatch.from_arrays([pa.array(lines[i:i + 3], pa.binary()), pa.array(["p.json"] * len(lines[i:i + 3]))],
                                             names=["_line", "_source_file"])

    out, fed_when_first = [], None
    for produced in lines_to_records(LineOptions(format="json_array"))(batches()):
        fed_when_first = fed_when_first or fed[-1]
        out += produced.to_pylist()
    assert [(json.loads(r["_raw"]), r["_record_index"], r["_kind"]) for r in out] == [
        (e, i, KIND_RECORD) for i, e in enumerate(elements)]
    assert fed_when_first < 20 < len(lines)  # the first element came out after its own lines, not after the file


@pytest.mark.parametrize("options, body, raws", [
    (LineOptions(format="json_lines"), b'\xef\xbb\xbf{"a":1}\n{"a":2}\n', ['{"a":1}', '{"a":2}']),
    (LineOptions(format="json_array"), b'\xef\xbb\xbf[{"a":1},\n{"a":2}]\n', ['{"a":1}', '{"a":2}']),
    (LineOptions(format="json_array"), b'\xef\xbb\xbf[ {\n  "a" : 1\n} ]', ['{\n  "a" : 1\n}']),
])
def test_a_byte_order_mark_at_the_start_of_a_json_file_is_dropped(options, body, raws):
    rows = _run(options, ("bom.json", body))
    assert [(r["_raw"], r["_kind"]) for r in rows] == [(raw, KIND_RECORD) for raw in raws]


def _split_batches(path: str, lines: list[bytes], start: int, size: int):
    for i in range(0, len(lines), size):
        chunk = lines[i:i + size]
        yield pa.RecordBatch.from_arrays([pa.array(chunk, pa.binary()), pa.array([path] * len(chunk)),
                                          pa.array([start] * len(chunk), pa.int64())],
                                         names=["_line", "_source_file", "_split_start"])


def _read_in_splits(options: LineOptions, body: bytes, cuts: list[int], batch: int):
    """The records of ``body`` read as tasks read a file split at lines ``cuts``: the plan's pass over each split,
    then each split on its own (in reverse order); None when the plan reads the file whole."""
    from spark_jobs.transforms.landing_csv import csv_split_summaries, plan_csv_file

    lines = text_lines(body)
    bounds = [0, *cuts, len(lines)]
    splits = [(bounds[i] * 100, lines[bounds[i]:bounds[i + 1]]) for i in range(len(bounds) - 1)]
    summaries = [row for start, part in splits
                 for produced in csv_split_summaries(options)(_split_batches("s.csv", part, start, batch))
                 for row in produced.to_pylist()]
    plan = plan_csv_file(summaries, options.header)
    if plan is None:
        return None
    run = lines_to_records(options, splits={("s.csv", start): split for start, split in plan.items()})
    rows = [row for start, part in reversed(splits) for produced in run(_split_batches("s.csv", part, start, batch))
            for row in produced.to_pylist()]
    # The plan's own count of the records (what the counts table takes for a file read in splits) is theirs.
    assert sum(split.made for split in plan.values()) == sum(row["_kind"] == KIND_RECORD for row in rows), (cuts, batch)
    return sorted(rows, key=lambda r: (r["_kind"], r["_record_index"]))


@pytest.mark.parametrize("body", [
    b'id,v\n1,"a\nb"\n\n2,x,extra\n3\n4,"x\n\ny, ""z"""\n5,NA\n',
    b'\xef\xbb\xbfid,v\n1,"a\nb\nc\nd"\n2,"p ""q"""\n3,"r\ns"\n4,t\n5,u\n',
    b'id,v\r\n1,a\r\n2,"b\r\nc"\r\n3,d\r\n',
    b'id,v\n1,5\'10"\n2,"x"\n3,"y\nz"\n4,w\n',
    b'id,v\n1,"oops\n2,ok\n3,"q"\n4,z\n',
])
def test_a_csv_file_read_in_splits_gives_the_records_of_one_read(body):
    """Cut at every line (into two and three splits, fed in batches of 1 and 2 lines): each split read on its
    own, from where the plan says its records start (a quoted field running over a cut is ended by the split
    before), gives the records of a read of the whole file, ``_record_index`` included; a cut the plan cannot
    place (an unterminated quote, a quoted field over a whole split) reads the file whole."""
    whole = _run(CSV, ("s.csv", body))
    n, placed = len(text_lines(body)), 0
    for count in (1, 2):
        for cuts in itertools.combinations(range(1, n), count):
            for batch in (1, 2):
                rows = _read_in_splits(CSV, body, list(cuts), batch)
                if rows is not None:
                    placed += 1
                    assert rows == sorted(whole, key=lambda r: (r["_kind"], r["_record_index"])), (cuts, batch)
    assert placed > 0


def test_an_unterminated_quote_near_a_split_reads_the_file_whole():
    assert _read_in_splits(CSV, b'id,v\n1,ok\n2,"oops\n3,ok\n4,ok\n', [3], 2) is None
    assert _read_in_splits(CSV, b'id,v\n1,ok\n2,"b\nc"\n3,ok\n', [3], 2) is not None


@pytest.mark.parametrize("batch", [1, 2, 50])
def test_counts_output_counts_the_records_the_records_output_makes(batch):
    """``output="counts"`` (the counts table's landing row) runs the same readers: per file and kind, as many as
    the records output makes, over lines that are a record alone, the scanner, headers, blanks and breaks."""
    import dataclasses

    from spark_jobs.transforms.landing_text import COUNTS_SCHEMA

    cases = [
        (CSV, [("a.csv", b'id,v\n1,"a\nb"\n\n2,x,extra\n3\n4,"x\n\ny, ""z"""\n5,NA\n'), ("b.csv", b"\xef\xbb\xbfid\n1\n"),
               ("c.csv", b'id,v\n1,"never closed\n2,x\n')]),
        (LineOptions(format="csv", header=False, field_names=("id", "v")), [("h.csv", b"1,2\n\n3,4\n")]),
        (LineOptions(format="json_lines"), [("l.jsonl", b'{"a":1}\n\n  \n{"a":2}\r\nnot json\n'), ("z.jsonl", b"\x1f\x8bgz")]),
        (LineOptions(format="json_array"), [("ok.json", b'[ {\n"a": 1\n}, {\n"a": 2\n} ]\n'), ("cut.json", b'[{"a":1},\n{"a":'),
                                            ("two.json", b'[{"a":1}]\n[{"a":2}]\n')]),
    ]
    for options, files in cases:
        made: dict[tuple[str, str], int] = {}
        for row in _run(options, *files, batch=batch):
            made[(row["_source_file"], row["_kind"])] = made.get((row["_source_file"], row["_kind"]), 0) + 1
        lines = [(line, name) for name, body in files for line in text_lines(body)]
        batches = [pa.RecordBatch.from_arrays([pa.array([r[0] for r in lines[i:i + batch]], pa.binary()),
                                               pa.array([r[1] for r in lines[i:i + batch]], pa.string())],
                                              names=["_line", "_source_file"]) for i in range(0, len(lines), batch)]
        counted: dict[tuple[str, str], int] = {}
        for produced in lines_to_records(dataclasses.replace(options, output="counts"))(iter(batches)):
            assert produced.schema == COUNTS_SCHEMA and produced.num_rows == 1
            row = produced.to_pylist()[0]
            counted[(row["_source_file"], row["_kind"])] = counted.get((row["_source_file"], row["_kind"]), 0) + row["_records"]
        assert counted == made and made, options.format


def test_a_quoted_field_of_10k_lines_is_cut_in_linear_work(monkeypatch):
    """A CSV field holding pretty-printed JSON (every line with an escaped quote ``""``) over 10,000 lines: bronze's
    reader and the erasure's reading cut it as one record, and the search for closing quotes reads each byte of the
    field about once (issue 56: it joined and searched the whole pending text again at every line: 79 s here)."""
    from spark_jobs.erasure.scan import _csv_grammar, _csv_records, _lines
    from spark_jobs.transforms.landing_csv import CsvGrammar

    inner = "\n".join(f'  ""k{i}"": ""v""' for i in range(10_000))
    body = f'id,v\n1,"{{\n{inner}\n}}"\n2,x\n'
    searched = []
    closing_quote = CsvGrammar.closing_quote

    def counted(self, buf, start):
        found = closing_quote(self, buf, start)
        searched.append((len(buf) if found == -1 else found) - start)
        return found

    monkeypatch.setattr(CsvGrammar, "closing_quote", counted)
    rows = _records(_run(CSV, ("f.csv", body.encode()), batch=500))
    assert [(raw[:6], index) for raw, index, _ in rows] == [('1,"{\n ', 1), ("2,x", 2)]
    assert rows[0][0] == f'1,"{{\n{inner}\n}}"' and sum(searched) < 2 * len(body)
    searched.clear()
    records = list(_csv_records(_lines([body]), _csv_grammar(",")))
    assert [r[:4] for r in records] == [b"id,v", b'1,"{', b"2,x"] and sum(searched) < 2 * len(body)
