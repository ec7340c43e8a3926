"""Landing files, line by line -> bronze records: the per-file part of bronze, streamed.

Runs in Spark's Python workers (``DataFrame.mapInArrow``, ``spark_jobs.transforms.bronze.records_from_lines``)
over the lines Spark's text reader gives for the batch's files (``spark_jobs.io.landing.read_lines``:
``_line``, the bytes between two ``\\n``; ``_source_file``). The reader never splits a file across
tasks, so each task sees every line of its files in order, one file after the other. Nothing here
holds a file: it keeps one Arrow batch of lines (``spark.sql.execution.arrow.maxRecordsPerBatch``,
10,000 by default) and, while a CSV record spans lines, that record's lines. Memory is bounded by the
largest record, not by the file; time is linear in the file. Only ``pyarrow`` and the standard
library are imported: Python workers on EMR have the job's dependency archive (pyarrow is in
``requirements/emr-job.txt``).

Per format (the contract's ``landing``):

- ``json_lines``: each non-blank line is a record (a trailing ``\\r`` is dropped). ``_record_index``
  is the line's position in the file (0-based, blank lines counted). Strictness (one JSON object,
  nothing after it) is judged by the JVM (``bronze.records_from_lines``), once.
- ``csv``: a record ends at a line break outside a quoted field (``landing_csv.csv_patterns`` says what a
  record is: the one home of the CSV grammar, which silver's ``csv_records.py`` and the erasure scan also
  read). A line that is one well-formed record on its own (the common case) is handled vectorised by
  Arrow; only lines that are not (a quoted field running over lines, a malformed record, a lone ``\\r``)
  go through the sequential scanner. ``_record_index``
  is the record's position among the file's records (blank ones and the header counted), as before.
  The header (the file's first non-blank record) is parsed once per file; each record is then checked
  (well-formed, field count, header usable, undecodable bytes) and split into its fields here, so
  ``_fields`` (field name -> text, null texts as null) is filled once, in bronze.
- ``json_array``: the file's one JSON array is tokenised across lines (Python's C JSON scanner,
  strict: no NaN, no single quotes); each element's JSON text is a record, ``_record_index`` its
  position in the array. A file that is not exactly one array gets one ``broken_array`` row: the job
  then keeps that file whole as ONE malformed record, as before (``io/landing.read_whole_files``). Its
  ``_file_problem`` is ``ELEMENTS_BEFORE_BREAK`` when elements of the file were already output as
  records (they must then be dropped), else null.

``LineOptions.output = "counts"`` (the counts table's landing row, ``bronze.record_counts``): the same readers,
but each output batch becomes one row, ``COUNTS_SCHEMA`` (file, kind, problem, how many records); no record
is decoded or split into fields.

Every format: a file whose first bytes are gzip's or Parquet's magic, or that holds a NUL byte, gets
one ``problem`` row (``_file_problem``) and no records: the job fails the batch naming the file.
Text is decoded here (UTF-8, or ISO-8859-1 by the contract): an invalid UTF-8 sequence becomes U+FFFD,
which marks the record malformed.
"""
from __future__ import annotations

import json
import re
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_jobs.transforms.landing_csv import CsvFile, CsvSplit
from spark_jobs.transforms.landing_text import (COUNTS_SCHEMA, KIND_BROKEN_ARRAY, KIND_RECORD, FileReader, LineOptions,
                                               decode, is_blank, record_batch, split_runs, strip_cr)

# The ``_file_problem`` of a ``broken_array`` row whose file had elements output as records before the break
# was seen (whole elements in an earlier batch of lines, or before a cut-off end): the job must drop those.
ELEMENTS_BEFORE_BREAK = "elements before the break"


def lines_to_records(options: LineOptions, report=None, offsets: dict[tuple[str, int], int] | None = None,
                     splits: dict[tuple[str, int], CsvSplit] | None = None):
    """The ``mapInArrow`` function: batches of (``_line``, ``_source_file``, ``_split_start``) -> batches of
    ``output_schema``. ``report`` (a Spark accumulator of sets, optional) also receives ``(path, kind,
    problem)`` for every file that is not records (``problem``, ``broken_array``), so a job that writes
    only the records still learns of them. ``offsets``: for a JSON-lines file read in several splits,
    the lines before each split (``io/landing.split_line_offsets``), so line numbers run on across them.
    ``splits``: for a CSV file read in several splits, how each is read (``plan_csv_file``)."""
    stream = re.compile(options.stream_pattern) if options.stream_pattern else None
    offsets, splits = offsets or {}, splits or {}

    def reported(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            kind = batch.column(batch.schema.get_field_index("_kind"))[0].as_py() if batch.num_rows else KIND_RECORD
            if report is not None and kind != KIND_RECORD:
                problem = batch.column(batch.schema.get_field_index("_file_problem"))[0].as_py()
                report.add({(batch.column(batch.schema.get_field_index("_source_file"))[0].as_py(), kind, problem)})
            yield batch

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        current, current_key = None, None
        for batch in batches:
            if batch.num_rows == 0:
                continue
            lines, files = batch.column(0), batch.column(1)
            starts = batch.column(2) if batch.num_columns > 2 else pa.nulls(batch.num_rows, pa.int64())
            for first, stop in split_runs(files, starts):
                key = (files[first].as_py(), starts[first].as_py() or 0)
                if current is None or current_key != key:
                    if current is not None:
                        yield from reported(current.finish())
                    current = _file_reader(options, key[0], stream, key[1], offsets.get(key, 0), splits.get(key))
                    current_key = key
                yield from reported(current.feed(lines.slice(first, stop - first)))
        if current is not None:
            yield from reported(current.finish())

    return run


def _file_reader(options: LineOptions, path: str, stream: re.Pattern | None, split_start: int = 0,
                 first_line: int = 0, split: CsvSplit | None = None) -> "FileReader":
    from_stream = stream is not None and stream.search(path) is not None
    lines_of_json = options.format == "json_lines" or from_stream
    if split_start and not lines_of_json and not (options.format == "csv" and split is not None):
        raise ValueError(f"{path}: a {options.format} file must be read by one task, from its start")
    if options.format == "csv":
        return CsvFile(options, path, split_start, split)
    if lines_of_json:
        return _JsonLinesFile(options, path, from_stream=from_stream, split_start=split_start, first_line=first_line)
    return _JsonArrayFile(options, path)


# ---------------------------------------------------------------------------------------- JSON lines
class _JsonLinesFile(FileReader):
    def __init__(self, options: LineOptions, path: str, from_stream: bool = False, split_start: int = 0,
                 first_line: int = 0):
        super().__init__(options, path, split_start, first_line)
        self.from_stream = from_stream

    def _feed(self, lines: pa.Array, first: bool) -> Iterator[pa.RecordBatch]:
        base = self.lines_seen - len(lines)
        text = strip_cr(lines)
        keep = pc.invert(is_blank(text))
        records = text.filter(keep)
        if len(records):
            index = np.flatnonzero(keep.to_numpy(zero_copy_only=False)) + base
            counting = self.schema is COUNTS_SCHEMA
            yield record_batch(self.schema, len(records), self.path, index=index, from_stream=self.from_stream,
                         raw=None if counting else decode(records, self.options.python_encoding))


# ---------------------------------------------------------------------------------------- JSON array
class _ArrayBroken(Exception):
    pass


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_SPACE = re.compile(r"[ \t\n\r]*")
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r"[\[\]{}]")


class _JsonArrayFile(FileReader):
    """The file's one JSON array, element by element, across lines. An element that does not end on the
    line it starts on is kept (its lines, each with its ``\\n``) until its brackets balance, then decoded."""

    def __init__(self, options: LineOptions, path: str):
        super().__init__(options, path)
        self.state = "start"        # start -> first (after '[') -> separator <-> element ... -> end
        self.parts: list[str] = []  # the pending element's text, when it runs over lines
        self.depth = 0              # its bracket depth so far (strings left out)
        self.elements = 0
        self.emitted = 0            # elements already yielded as records (before this batch of lines)
        self.broken = False

    def _feed(self, lines: pa.Array, first: bool) -> Iterator[pa.RecordBatch]:
        if self.broken:
            return
        raws: list[str] = []
        start_index = self.elements
        encoding = self.options.python_encoding
        try:
            for line in lines.to_pylist():
                text = line.decode(encoding, "replace") + "\n"
                if self.parts:
                    self.parts.append(text)
                    if not _closes(text, self.depth):
                        self.depth += _depth(text)
                        continue
                    text, self.parts = "".join(self.parts), []
                self._consume(text, raws)
        except _ArrayBroken:
            self.broken = True
            yield self._broken_row()
            return
        if raws:
            yield record_batch(self.schema, len(raws), self.path, raw=pa.array(raws, pa.string()),
                         index=np.arange(start_index, start_index + len(raws)))
            self.emitted = self.elements

    def _consume(self, text: str, raws: list[str]) -> None:
        pos = 0
        while True:
            pos = _SPACE.match(text, pos).end()
            if pos >= len(text):
                return
            char = text[pos]
            if self.state == "start":
                if char != "[":
                    raise _ArrayBroken
                self.state, pos = "first", pos + 1
            elif self.state == "separator":
                if char == ",":
                    self.state, pos = "element", pos + 1
                elif char == "]":
                    self.state, pos = "end", pos + 1
                else:
                    raise _ArrayBroken
            elif self.state == "end":
                raise _ArrayBroken
            elif self.state == "first" and char == "]":
                self.state, pos = "end", pos + 1
            else:  # an element starts here
                try:
                    _, end = _DECODER.raw_decode(text, pos)
                except ValueError as exc:
                    # Cut off by the end of the line inside an object or array: wait for more lines.
                    if char in "[{" and getattr(exc, "pos", 0) >= len(text):
                        self.parts, self.depth = [text[pos:]], _depth(text[pos:])
                        return
                    raise _ArrayBroken from None
                raws.append(text[pos:end])
                self.elements += 1
                self.state, pos = "separator", end

    def _finish(self) -> Iterator[pa.RecordBatch]:
        if not self.broken and (self.parts or self.state not in ("start", "end")):
            self.broken = True
            yield self._broken_row()

    def _broken_row(self) -> pa.RecordBatch:
        return record_batch(self.schema, 1, self.path, raw=pa.nulls(1, pa.string()), index=[0], kind=KIND_BROKEN_ARRAY,
                      problem=ELEMENTS_BEFORE_BREAK if self.emitted else None)


def _depth(text: str) -> int:
    """Opening minus closing brackets of ``text``, outside JSON strings (which never span lines)."""
    bare = _STRINGS.sub("", text) if '"' in text else text
    return bare.count("{") + bare.count("[") - bare.count("}") - bare.count("]")


def _closes(text: str, depth: int) -> bool:
    """Whether an element open at bracket ``depth`` ends within the line ``text``: the running depth
    reaches 0 somewhere in it. A line such as Jackson's ``}, {`` closes one element and opens the next
    (its net depth is 0), so a line's net depth alone would keep the whole array as one pending element."""
    bare = _STRINGS.sub("", text) if '"' in text else text
    if bare.count("}") + bare.count("]") < depth:
        return False
    for bracket in _BRACKETS.findall(bare):
        depth += 1 if bracket in "{[" else -1
        if depth <= 0:
            return True
    return False


