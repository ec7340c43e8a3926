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
- ``csv``: a record ends at a line break outside a quoted field (``csv_patterns`` below says what a
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

import dataclasses
import json
import re
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

KIND_RECORD, KIND_PROBLEM, KIND_BROKEN_ARRAY = "record", "problem", "broken_array"
# The ``_file_problem`` of a ``broken_array`` row whose file had elements output as records before the break
# was seen (whole elements in an earlier batch of lines, or before a cut-off end): the job must drop those.
ELEMENTS_BEFORE_BREAK = "elements before the break"
BOM = b"\xef\xbb\xbf"
# A quoted CSV field still open after this many bytes is taken as unterminated (it ends at its own line).
MAX_OPEN_QUOTE_BYTES = 64 * 1024 * 1024
# The first lines of a CSV split that end a record the split before started are handed to that split's task
# (``CsvSplit.tail``) up to this size; a record that runs further over a split boundary has its file read whole.
MAX_SPLIT_HEAD_BYTES = 1024 * 1024
_WHITESPACE = b" \t\n\x0b\x0c\r"  # Java's \s, which blank records were judged by
_FORMAT_LABEL = {"csv": "CSV", "json_array": "JSON", "json_lines": "JSON lines"}


@dataclasses.dataclass(frozen=True)
class LineOptions:
    """What the workers need of the contract (a plain, picklable value)."""

    format: str
    delimiter: str = ","
    quote: str = '"'
    escape: str = '"'
    header: bool = True
    null_values: tuple[str, ...] = ("",)
    encoding: str = "utf-8"
    # The contract's landing fields, in schema order: a CSV record's ``_fields`` struct (by the file's
    # header; without a header, they are the record's fields by position).
    field_names: tuple[str, ...] = ()
    stream_pattern: str | None = None      # JSON datasets: files matching it are stream objects (JSON lines)
    # "records": the records themselves (``output_schema``); "counts": how many, one row per file, kind and
    # batch of lines (``COUNTS_SCHEMA``; the counts table's landing row), no record text decoded or split.
    output: str = "records"

    @property
    def python_encoding(self) -> str:
        return "latin-1" if self.encoding == "iso-8859-1" else "utf-8"


@dataclasses.dataclass(frozen=True)
class CsvSplit:
    """How a task reads one split of a CSV file read in several (``plan_csv_file``): the state the file is in at
    the split's first line, as a read of the whole file would have it there."""

    first_record: int                 # records before the split (blank ones and the header counted)
    skip_lines: int = 0               # its first lines end the record the split before started: skipped here
    header: bytes | None = None       # the file's header record (for every split but the first)
    tail: tuple[bytes, ...] = ()      # the next split's first lines, which end this split's last record
    last: bool = False                # the file's last split: its end is the file's end
    made: int = 0                     # the records this split makes (blank ones and the header not counted)


def fields_type(names: tuple[str, ...] | list[str]) -> pa.DataType:
    """``_fields``: one text field per contract landing field, in order (a name once)."""
    return pa.struct([pa.field(name, pa.string()) for name in dict.fromkeys(names)])


# ``LineOptions.output == "counts"``: ``_records`` records of the file (``_kind`` record), or one row that is
# no record (``problem``, ``broken_array``, with ``_records`` 1), per batch the records come in.
COUNTS_SCHEMA = pa.schema([pa.field("_source_file", pa.string()), pa.field("_kind", pa.string()),
                           pa.field("_file_problem", pa.string()), pa.field("_records", pa.int64())])


def output_schema(options: LineOptions) -> pa.Schema:
    """What the workers return (CSV records also carry ``_fields`` and ``_unknown_fields``; with ``output``
    "counts", ``COUNTS_SCHEMA``)."""
    if options.output == "counts":
        return COUNTS_SCHEMA
    fields = [pa.field("_raw", pa.string()), pa.field("_source_file", pa.string()), pa.field("_record_index", pa.int64())]
    if options.format == "csv":
        fields += [pa.field("_header", pa.string()), pa.field("_fields", fields_type(options.field_names)),
                   pa.field("_unknown_fields", pa.list_(pa.string())), pa.field("_is_malformed", pa.bool_())]
    fields += [pa.field("_from_stream", pa.bool_()), pa.field("_kind", pa.string()), pa.field("_file_problem", pa.string())]
    return pa.schema(fields)


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
            for first, stop in _runs(files, starts):
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


def _runs(files: pa.Array, starts: pa.Array) -> list[tuple[int, int]]:
    """(start, stop) of each run of one file split in a batch (a split's lines are contiguous)."""
    n = len(files)
    if n == 0:
        return []
    if files[0] == files[n - 1] and starts[0] == starts[n - 1]:
        return [(0, n)]
    changed = pc.or_(pc.not_equal(files.slice(1), files.slice(0, n - 1)),
                     pc.fill_null(pc.not_equal(starts.slice(1), starts.slice(0, n - 1)), False))
    changes = np.flatnonzero(changed.to_numpy(zero_copy_only=False)) + 1
    bounds = [0, *changes.tolist(), n]
    return list(zip(bounds[:-1], bounds[1:]))


def _file_reader(options: LineOptions, path: str, stream: re.Pattern | None, split_start: int = 0,
                 first_line: int = 0, split: CsvSplit | None = None) -> "_FileReader":
    from_stream = stream is not None and stream.search(path) is not None
    lines_of_json = options.format == "json_lines" or from_stream
    if split_start and not lines_of_json and not (options.format == "csv" and split is not None):
        raise ValueError(f"{path}: a {options.format} file must be read by one task, from its start")
    if options.format == "csv":
        return _CsvFile(options, path, split_start, split)
    if lines_of_json:
        return _JsonLinesFile(options, path, from_stream=from_stream, split_start=split_start, first_line=first_line)
    return _JsonArrayFile(options, path)


# --------------------------------------------------------------------------------------------- output
def _batch(schema: pa.Schema, n: int, path: str, *, raw: pa.Array, index: pa.Array | np.ndarray,
           header: str | None = None, fields: pa.Array | None = None, unknown: pa.Array | None = None,
           malformed: bool | None = None, from_stream: bool = False, kind: str = KIND_RECORD,
           problem: str | None = None) -> pa.RecordBatch:
    """One output batch of ``schema`` (``output_schema``): ``n`` rows of one file (``COUNTS_SCHEMA``: one row
    saying ``n``; ``raw`` and ``fields`` may then be None, they are not read)."""
    if schema is COUNTS_SCHEMA:
        return pa.RecordBatch.from_arrays([pa.array([path]), pa.array([kind]), pa.array([problem], pa.string()),
                                           pa.array([n], pa.int64())], schema=COUNTS_SCHEMA)

    def repeat(value, type_) -> pa.Array:
        return pa.repeat(pa.scalar(value, type_), n) if value is not None else pa.nulls(n, type_)

    columns = {"_raw": raw, "_source_file": repeat(path, pa.string()), "_record_index": pa.array(index, pa.int64()),
               "_header": repeat(header, pa.string()),
               "_fields": fields if fields is not None else pa.nulls(n, schema.field("_fields").type)
               if "_fields" in schema.names else None,
               "_unknown_fields": unknown if unknown is not None else pa.nulls(n, pa.list_(pa.string())),
               "_is_malformed": repeat(malformed, pa.bool_()), "_from_stream": repeat(from_stream, pa.bool_()),
               "_kind": repeat(kind, pa.string()), "_file_problem": repeat(problem, pa.string())}
    return pa.RecordBatch.from_arrays([columns[name] for name in schema.names], schema=schema)


def decode(values: pa.Array, encoding: str) -> pa.Array:
    """Binary -> text; an invalid UTF-8 sequence becomes U+FFFD (as the JVM's decoder does)."""
    if encoding == "latin-1":
        has_high_bytes = pc.match_substring_regex(values, rb"[\x80-\xff]")
        if not pc.any(has_high_bytes).as_py():
            return values.cast(pa.string())
        return pa.array([None if v is None else v.decode("latin-1") for v in values.to_pylist()], pa.string())
    try:
        return values.cast(pa.string())
    except pa.ArrowInvalid:
        return pa.array([None if v is None else v.decode("utf-8", "replace") for v in values.to_pylist()], pa.string())


class _FileReader:
    """One landing file's lines, fed in order; yields output batches."""

    def __init__(self, options: LineOptions, path: str, split_start: int = 0, first_line: int = 0):
        self.options, self.path = options, path
        self.schema = output_schema(options)
        self.at_file_start = split_start == 0   # the file's first bytes are in this split (magic numbers)
        self.lines_seen = first_line            # line number of the next line in the file
        self.dead = False  # a problem was reported: the rest of the file is skipped

    def feed(self, lines: pa.Array) -> Iterator[pa.RecordBatch]:
        if self.dead:
            return
        problem = self._problem(lines)
        if problem:
            self.dead = True
            yield _batch(self.schema, 1, self.path, raw=pa.nulls(1, pa.string()), index=[self.lines_seen], kind=KIND_PROBLEM,
                         problem=problem)
            return
        first = self.at_file_start
        self.at_file_start = False
        self.lines_seen += len(lines)
        if first and self.options.python_encoding == "utf-8":
            lines = _without_bom(lines)
        yield from self._feed(lines, first)

    def finish(self) -> Iterator[pa.RecordBatch]:
        if not self.dead:
            yield from self._finish()

    def _problem(self, lines: pa.Array) -> str | None:
        kind = _FORMAT_LABEL.get(self.options.format, self.options.format)
        if self.at_file_start:
            head = lines[0].as_py() or b""
            if head[:2] == b"\x1f\x8b":
                return "is gzip-compressed, but its name does not end in .gz"
            if head[:4] == b"PAR1":
                return f"is a Parquet file, not {kind}"
        if _has_nul(lines):
            return f"holds NUL bytes: binary data, not {kind} text"
        return None

    def _feed(self, lines: pa.Array, first: bool) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError

    def _finish(self) -> Iterator[pa.RecordBatch]:
        return iter(())


def _without_bom(lines: pa.Array) -> pa.Array:
    """A file's first lines without the UTF-8 byte-order mark its first line may start with (every text
    format; one further down the file, as ``cat a.csv b.csv`` leaves, is text)."""
    head = lines[0].as_py() if len(lines) else None
    if not head or not head.startswith(BOM):
        return lines
    return pa.concat_arrays([pa.array([head[len(BOM):]], lines.type), lines.slice(1)])


def _has_nul(lines: pa.Array) -> bool:
    """Whether any of ``lines`` holds a NUL byte: one scan of the batch's data buffer (a ``memchr``)."""
    if len(lines) == 0:
        return False
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32 if lines.type == pa.binary() else np.int64)
    start, stop = int(offsets[lines.offset]), int(offsets[lines.offset + len(lines)])
    return memoryview(lines.buffers()[2])[start:stop].tobytes().find(b"\x00") >= 0 if stop > start else False


def _strip_cr(lines: pa.Array) -> pa.Array:
    if not pc.any(pc.ends_with(lines, b"\r")).as_py():  # a scan for the common case, no copy
        return lines
    return pc.replace_substring_regex(lines, rb"\r$", b"")


def _is_blank(lines: pa.Array) -> pa.Array:
    return pc.match_substring_regex(lines, rb"^[ \t\n\x0b\x0c\r]*$")


# ---------------------------------------------------------------------------------------- JSON lines
class _JsonLinesFile(_FileReader):
    def __init__(self, options: LineOptions, path: str, from_stream: bool = False, split_start: int = 0,
                 first_line: int = 0):
        super().__init__(options, path, split_start, first_line)
        self.from_stream = from_stream

    def _feed(self, lines: pa.Array, first: bool) -> Iterator[pa.RecordBatch]:
        base = self.lines_seen - len(lines)
        text = _strip_cr(lines)
        keep = pc.invert(_is_blank(text))
        records = text.filter(keep)
        if len(records):
            index = np.flatnonzero(keep.to_numpy(zero_copy_only=False)) + base
            counting = self.schema is COUNTS_SCHEMA
            yield _batch(self.schema, len(records), self.path, index=index, from_stream=self.from_stream,
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


class _JsonArrayFile(_FileReader):
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
            yield _batch(self.schema, len(raws), self.path, raw=pa.array(raws, pa.string()),
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
        return _batch(self.schema, 1, self.path, raw=pa.nulls(1, pa.string()), index=[0], kind=KIND_BROKEN_ARRAY,
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


# ----------------------------------------------------------------------------------------------- CSV
@dataclasses.dataclass(frozen=True)
class CsvPatterns:
    """The CSV grammar of one dialect as regular-expression text (``csv_patterns``)."""

    delimiter: str  # the delimiter, as a pattern
    quoted: str     # a quoted field: the quote, its text (escaped quotes, escaped characters), the closing quote
    unquoted: str   # a field that does not start with the quote: may be empty, holds no line break
    field: str      # quoted | unquoted
    record: str     # a well-formed record, field (delimiter field)*, with no anchors (each engine adds its own)
    token: str      # each field of a well-formed record followed by the delimiter (group 1): find all in record + delimiter


def csv_patterns(delimiter: str, quote: str, escape: str, char: Callable[[str], str] = re.escape,
                 many: str = "*") -> CsvPatterns:
    """THE CSV grammar (the one home of it; the contract's ``landing`` gives the dialect: delimiter, quote, and
    escape, the quote itself, i.e. a doubled quote as in RFC 4180, or a backslash):

    - a **record** ends at a line break (``\\n``, ``\\r\\n`` or ``\\r``) outside a quoted field; a quoted
      field may hold line breaks, delimiters and escaped quotes. A quote is special only at the start of a
      field (``5'10"`` is a plain value, as in Python's csv and Spark's reader);
    - a record is **well-formed** when it is exactly ``field (delimiter field)*``, every field either
      unquoted (no line break) or one quoted span with nothing after its closing quote. Anything else
      (an unterminated quote, ``"ab"c``) is malformed; the caller also flags a wrong field count;
    - an **unterminated quote** runs, like in every CSV reader, to the next quote character of the file;
      the text up to there becomes ONE malformed record (kept whole, so nothing is lost). With no later
      quote in the file it ends at its own line (``CsvGrammar.take_record``).

    Written once for every engine that reads it: ``char`` spells a character as a pattern (``re.escape`` for
    Python's ``re`` and RE2, as bytes once encoded as Latin-1; ``\\x{..}`` for Java), ``many`` is the
    repetition (``*+``, possessive, for Java: linear work, no stack overflow on a 10 MB field)."""
    d, q, e = char(delimiter), char(quote), char(escape)
    if escape == quote:
        quoted = f"{q}[^{q}]{many}(?:{q}{q}[^{q}]{many}){many}{q}"
    else:
        quoted = f"{q}[^{q}{e}]{many}(?:{e}[\\s\\S][^{q}{e}]{many}){many}{q}"
    unquoted = f"(?:[^{d}{q}\\r\\n][^{d}\\r\\n]{many})?"
    field = f"(?:{quoted}|{unquoted})"
    return CsvPatterns(delimiter=d, quoted=quoted, unquoted=unquoted, field=field,
                       record=f"{field}(?:{d}{field}){many}", token=f"({quoted}|[^{d}\\r\\n]{many}){d}")


class CsvGrammar:
    """The grammar of ``csv_patterns`` for one dialect, as byte patterns: RE2 (Arrow, vectorised) for 'this
    line is one well-formed record', Python's ``re`` for the rest, and the sequential record scanner
    (``take_record``). Silver's re-parse of old bronze rows reads the same patterns in the JVM
    (``transforms/csv_records.py``)."""

    def __init__(self, options: LineOptions):
        d, q, e = (c.encode("latin-1") for c in (options.delimiter, options.quote, options.escape))
        self.d, self.q, self.e = d, q, e
        grammar = csv_patterns(options.delimiter, options.quote, options.escape)

        def as_bytes(pattern: str) -> bytes:
            return pattern.encode("latin-1")

        self.well_formed_re2 = as_bytes(f"^{grammar.record}$")
        self.well_formed = re.compile(as_bytes(grammar.record + "\\Z"))
        self.token = re.compile(as_bytes(grammar.token))
        qd, dd = as_bytes(re.escape(options.quote)), as_bytes(grammar.delimiter)
        self.quote_or_escape = re.compile(b"[" + qd + (b"" if e == q else as_bytes(re.escape(options.escape))) + b"]")
        self.field_end = re.compile(b"[" + dd + rb"\r\n]")
        self.double_quote = q + q
        self.null_texts = [v.encode(options.python_encoding) for v in options.null_values]
        self._field_re2 = as_bytes(grammar.field)
        self._by_count: dict[int, bytes | None] = {}

    def split_quoted(self, records: pa.Array, count: int) -> tuple[pa.Array, np.ndarray] | None:
        """Field texts of the ``records`` (well-formed lines) that have exactly ``count`` fields, unquoted and
        unescaped, split by ONE RE2 match per record with a group per field (vectorised): (list array of
        those rows' fields, mask of those rows); None when RE2 refuses the pattern (thousands of fields)."""
        if count not in self._by_count:
            groups = (self.d).join(b"(?P<f%d>" % i + self._field_re2 + b")" for i in range(count))
            self._by_count[count] = b"^" + groups + b"$"
        pattern = self._by_count[count]
        if pattern is None:
            return None
        try:
            matched = pc.extract_regex(records, pattern)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            self._by_count[count] = None
            return None
        ok = matched.is_valid().to_numpy(zero_copy_only=False)
        rows = int(ok.sum())
        matched = matched.filter(pa.array(ok))
        columns = []
        for i in range(count):
            text = matched.field(i)
            quoted = pc.starts_with(text, self.q)
            inner = pc.binary_slice(text, 1, -1)
            if self.e == self.q:
                inner = pc.replace_substring(inner, self.double_quote, self.q)
            else:
                inner = pc.replace_substring_regex(inner, re.escape(self.e) + rb"([\s\S])", rb"\1")
            columns.append(pc.if_else(quoted, inner, text))
        flat = pa.concat_arrays(columns).take(pa.array((np.arange(count)[None, :] * rows + np.arange(rows)[:, None]).ravel()))
        offsets = pa.array(np.arange(0, (rows + 1) * count, count, dtype=np.int32))
        return pa.ListArray.from_arrays(offsets, flat), ok

    def closing_quote(self, buf: bytes, start: int) -> int:
        """Index of the quote closing a field opened just before ``start``; -1 when the text ends first."""
        q, e = self.q, self.e
        i = start
        while True:
            if e == q:
                k = buf.find(q, i)
                if k == -1:
                    return -1
                if buf[k + 1:k + 2] == q:  # an escaped quote
                    i = k + 2
                    continue
                return k
            m = self.quote_or_escape.search(buf, i)
            if m is None:
                return -1
            if m.group() == e:
                i = m.start() + 2
                continue
            return m.start()

    def take_record(self, buf: bytes | bytearray, pos: int, at_end: bool,
                    resume: tuple[int, int] | None = None) -> tuple[int | None, int] | tuple[None, tuple[int, int]]:
        """(end of the record's text, start of the next record) for the record at ``pos``; ``(None, resume)``
        when a quoted field is still open at the end of ``buf`` and more text may close it. ``resume`` (the
        opening quote's index, where the search for its closing quote stopped), passed back with the same
        record and more text after it, makes the search go on from there: cutting a record is linear in its
        text however many lines a quoted field runs over."""
        n = len(buf)
        i = pos
        while True:
            if resume is not None or buf[i:i + 1] == self.q:
                opened, start = resume if resume is not None else (i, i + 1)
                resume = None
                close = self.closing_quote(buf, start)
                if close == -1:
                    if not at_end:
                        return None, (opened, n)
                    # No closing quote in the rest of the file: a plain (malformed) field to its line end.
                    i = opened
                else:
                    i = close + 1
            m = self.field_end.search(buf, i)
            i = m.start() if m else n
            if i < n and buf[i:i + 1] == self.d:
                i += 1
                continue
            break
        if i >= n:
            return i, n
        if buf[i:i + 2] == b"\r\n":
            return i, i + 2
        return i, i + 1

    def values(self, record: bytes) -> list[bytes]:
        """The field texts of a well-formed record, unquoted and unescaped (null texts not applied)."""
        out = []
        for token in self.token.findall(record + self.d):
            if token[:1] == self.q and len(token) >= 2:
                inner = token[1:-1]
                if self.e == self.q:
                    inner = inner.replace(self.double_quote, self.q)
                else:
                    inner = re.sub(re.escape(self.e) + rb"([\s\S])", rb"\1", inner)
                out.append(inner)
            else:
                out.append(token)
        return out


class PendingRecords:
    """The text of CSV records not yet cut (lines as they come, each with its line break), as one growing buffer,
    and where the search for the closing quote of a field still open at its end stopped: cutting is linear in the
    text however many lines a quoted field runs over (it was quadratic: the whole pending text joined and
    searched again at each line with a quote). Bronze's reader and the erasure's CSV reading both use it."""

    def __init__(self, text: bytes = b""):
        self.buf = bytearray(text)
        self.resume: tuple[int, int] | None = None

    def __bool__(self) -> bool:
        return bool(self.buf)

    def __len__(self) -> int:
        return len(self.buf)

    def add(self, text: bytes) -> None:
        self.buf += text

    def take(self, grammar: "CsvGrammar", at_end: bool, max_open: int = MAX_OPEN_QUOTE_BYTES) -> list[bytes]:
        """Cut every complete record off the front; an open quoted field longer than ``max_open`` bytes, or one
        still open ``at_end``, ends at its own line (``CsvGrammar.take_record``)."""
        buf, out, pos = self.buf, [], 0
        while pos < len(buf):
            resume = self.resume if pos == 0 else None
            end, following = grammar.take_record(buf, pos, at_end or len(buf) - pos > max_open, resume)
            if end is None:
                self.resume = (following[0] - pos, following[1] - pos)
                del buf[:pos]
                return out
            out.append(bytes(buf[pos:end]))
            pos, self.resume = following, None
        self.buf, self.resume = bytearray(), None
        return out


class _CsvFile(_FileReader):
    """One CSV file's lines (or one split's, ``split``). ``count_only``: records are counted, not made (the
    split plan's first pass); ``open_at_start``: the split is read as if it began inside a quoted field."""

    def __init__(self, options: LineOptions, path: str, split_start: int = 0, split: CsvSplit | None = None,
                 count_only: bool = False, open_at_start: bool = False):
        super().__init__(options, path, split_start)
        self.grammar = CsvGrammar(options)
        self.split, self.count_only = split, count_only
        self.skip = split.skip_lines if split is not None else 0
        self.header_raw: bytes | None = None
        # With open_at_start: the lines until that field ends (None while it has not), their text and bytes.
        self.head_lines: int | None = None if open_at_start else 0
        self.head_consumed, self.head_text, self.head_bytes = 0, [], 0
        self.records = 0              # records seen, blank ones and the header included: the next _record_index
        self.made = 0                 # count_only: the records made (blank ones and the header not counted)
        self.header_text: str | None = None
        self.header_seen = not options.header
        self.struct_names = list(dict.fromkeys(options.field_names))
        self.struct_type = fields_type(options.field_names)
        # Per file, from its header: the field count, whether the header is usable, where each contract
        # field is in a record (-1: not in this file), and the header's names the contract does not know.
        self.expected: int | None = None
        self.header_ok = True
        self.positions: list[int] = []
        self.unknown: list[str] = []
        if not options.header:
            self._use_names(list(options.field_names), usable=True)
        # Sequential mode: the lines a record is running over (each with the "\n" that ended it).
        self.parts = PendingRecords()
        self.open_quote = False       # parts end inside a quoted field: only a line with a quote may close it
        if open_at_start:  # a quote opens the field these lines continue (not a record of this split)
            self.parts, self.open_quote = PendingRecords(self.grammar.q), True
        if split is not None and split_start > 0:
            self.records = split.first_record
            if split.header is not None:
                self._set_header(split.header)

    # -- feeding: every line that is a record on its own at once (vectorised), the scanner for the others
    def _feed(self, lines: pa.Array, first: bool) -> Iterator[pa.RecordBatch]:
        if self.skip:  # the lines that end the record the split before this one started (it made that record)
            skipped = min(self.skip, len(lines))
            lines, self.skip = lines.slice(skipped), self.skip - skipped
        n = len(lines)
        scanned: list[tuple[bytes, int]] = []   # records from the scanner: (raw, record index)
        start = 0
        if self.parts:  # a record is running over lines from the previous batch: the scanner goes on
            start, out = self._scan(lines, 0, at_end=False)
            if self.head_lines is None:  # the field open at the split's start: its lines are the head
                self._track_head(lines.slice(0, start))
                if not self.parts:
                    self.head_lines, out = self.head_consumed, out[1:]
            scanned += self._number(out)
        m = n - start
        text = _strip_cr(lines.slice(start)) if start else _strip_cr(lines)
        alone = self._alone(text)
        base = self.records
        consumed = np.zeros(m, dtype=bool)
        shift_at = np.zeros(m + 1, dtype=np.int64)  # change of (record index - line position) from a line on
        shift, done = 0, 0
        for j in np.flatnonzero(~alone).tolist() if m else []:
            if j < done:
                continue  # part of a record the scanner already took
            self.records = base + j + shift
            k, out = self._scan(lines, start + j, at_end=False)
            k -= start
            consumed[j:k] = True
            scanned += self._number(out)
            # lines j..k-1 made len(out) records (the one still open, if any, is numbered when it ends)
            shift_at[k] += len(out) - (k - j)
            shift += len(out) - (k - j)
            done = k
        self.records = base + m + shift
        index = base + np.arange(m, dtype=np.int64) + np.cumsum(shift_at)[:m]
        keep = ~consumed & ~_is_blank(text).to_numpy(zero_copy_only=False)
        if not self.header_seen:
            first_line = int(np.argmax(keep)) if keep.any() else None
            first_scanned = min(range(len(scanned)), key=lambda x: scanned[x][1]) if scanned else None
            if first_line is not None and (first_scanned is None or index[first_line] < scanned[first_scanned][1]):
                self._set_header(text[first_line].as_py())
                keep[first_line] = False
            elif first_scanned is not None:
                self._set_header(scanned.pop(first_scanned)[0])
        if keep.any():
            yield from self._line_records(text.filter(pa.array(keep)), index[keep])
        if scanned:
            yield from self._scanned_records(scanned)

    def _alone(self, text: pa.Array) -> np.ndarray:
        """Which lines are a well-formed record on their own. A line without the quote and without a carriage
        return always is (a field of such a line cannot be malformed); RE2 judges the others."""
        special = pc.or_(pc.match_substring(text, self.grammar.q), pc.match_substring(text, b"\r"))
        special_np = special.to_numpy(zero_copy_only=False)
        alone = ~special_np
        if special_np.any():
            judged = pc.match_substring_regex(text.filter(special), self.grammar.well_formed_re2)
            alone[special_np] = judged.to_numpy(zero_copy_only=False)
        return alone

    def _finish(self) -> Iterator[pa.RecordBatch]:
        if self.parts and self.split is not None and not self.split.last:
            # This split's last record runs on into the next split, whose first lines end it.
            yield from self._feed(pa.array(list(self.split.tail), pa.binary()), False)
            if self.parts:
                raise ValueError(f"{self.path}: the next split's first lines do not end this split's last record")
            return
        if self.parts and not self.count_only:
            scanned = self._number(self._drain(at_end=True))
            if scanned and not self.header_seen:
                self._set_header(scanned.pop(0)[0])
            yield from self._scanned_records(scanned)

    def _track_head(self, lines: pa.Array) -> None:
        self.head_consumed += len(lines)
        if self.head_text is not None:
            self.head_text += lines.to_pylist()
            self.head_bytes = sum(len(line) + 1 for line in self.head_text)
            if self.head_bytes > MAX_SPLIT_HEAD_BYTES:
                self.head_text = None  # too long to hand to the split before: that file is read whole

    @property
    def parts_bytes(self) -> int:
        """The bytes of the record still open (0: none)."""
        return len(self.parts)

    def _scan(self, lines: pa.Array, start: int, at_end: bool) -> tuple[int, list[bytes]]:
        """Lines from ``start`` into the scanner until no text is left over (the next line starts a
        record): (index of the first line not consumed, the records taken, blank ones included)."""
        out: list[bytes] = []
        i, n, q = start, len(lines), self.grammar.q
        while i < n:
            line = lines[i].as_py()
            i += 1
            self.parts.add(line + b"\n")
            if self.open_quote and q not in line and self.parts_bytes <= MAX_OPEN_QUOTE_BYTES:
                continue  # this line cannot close the open field
            out += self._drain(at_end)
            if not self.parts:
                break
        return i, out

    def _drain(self, at_end: bool) -> list[bytes]:
        """Take every complete record off the front of the scanner's text."""
        out = self.parts.take(self.grammar, at_end)
        self.open_quote = bool(self.parts)
        return out

    # -- records
    def _set_header(self, raw: bytes) -> None:
        grammar = self.grammar
        self.header_seen, self.header_raw = True, raw
        self.header_text = decode(pa.array([raw], pa.binary()), self.options.python_encoding)[0].as_py()
        well_formed = grammar.well_formed.match(raw) is not None
        tokens = grammar.values(raw) if well_formed else grammar.token.findall(raw + grammar.d)
        names = decode(pa.array(tokens, pa.binary()), self.options.python_encoding).to_pylist()
        self._use_names(names, usable=well_formed and len(set(names)) == len(names))

    def _use_names(self, names: list[str], usable: bool) -> None:
        self.expected = len(names) or None
        self.header_ok = usable
        at = {name: i for i, name in reversed(list(enumerate(names)))}
        self.positions = [at.get(name, -1) for name in self.struct_names]
        known = set(self.struct_names)
        self.unknown = [name for name in names if name not in known]

    def _number(self, raws: list[bytes]) -> list[tuple[bytes, int]]:
        """The scanner's records (blank ones included) numbered in order; blank ones dropped."""
        numbered = []
        for raw in raws:
            if raw.strip(_WHITESPACE):
                numbered.append((raw, self.records))
            self.records += 1
        return numbered

    def _line_records(self, records: pa.Array, index: np.ndarray) -> Iterator[pa.RecordBatch]:
        """Lines that are each one well-formed record: split by Arrow, with a plain split where they hold no
        quote and one RE2 match per record where they do (every line of an export that quotes its text)."""
        if not self.header_seen or self.count_only:
            self.made += len(records) if self.header_seen else 0
            return
        if self.schema is COUNTS_SCHEMA:  # counted: no field split
            yield _batch(self.schema, len(records), self.path, raw=None, index=index)
            return
        quoted = pc.match_substring(records, self.grammar.q).to_numpy(zero_copy_only=False)
        plain = ~quoted
        if plain.all():
            yield from self._emit(records, index, pc.split_pattern(records, self.grammar.d), np.ones(len(records), bool))
            return
        if plain.any():
            mask = pa.array(plain)
            some = records.filter(mask)
            yield from self._emit(some, index[plain], pc.split_pattern(some, self.grammar.d), np.ones(len(some), bool))
        some, some_index = records.filter(pa.array(quoted)), index[quoted]
        split = self.grammar.split_quoted(some, self.expected) if self.expected and len(some) > 16 else None
        if split is not None:
            values, matched = split
            yield from self._emit(some.filter(pa.array(matched)), some_index[matched], values, np.ones(len(values), bool))
            some, some_index = some.filter(pa.array(~matched)), some_index[~matched]
        if len(some):  # few, or another field count than the header's (malformed): one at a time
            values = pa.array([self.grammar.values(r) for r in some.to_pylist()], pa.list_(pa.binary()))
            yield from self._emit(some, some_index, values, np.ones(len(some), bool))

    def _scanned_records(self, records: list[tuple[bytes, int]]) -> Iterator[pa.RecordBatch]:
        """Records from the scanner, one at a time: well-formed or not, and their field texts."""
        if self.count_only:
            self.made += len(records)
            return
        if self.schema is COUNTS_SCHEMA:
            if records:
                yield _batch(self.schema, len(records), self.path, raw=None, index=[position for _, position in records])
            return
        raws, index, values, well_formed = [], [], [], []
        for raw, position in records:
            ok = self.grammar.well_formed.match(raw) is not None
            raws.append(raw)
            index.append(position)
            values.append(self.grammar.values(raw) if ok else [])
            well_formed.append(ok)
        if raws:
            yield from self._emit(pa.array(raws, pa.binary()), np.array(index, dtype=np.int64),
                                  pa.array(values, pa.list_(pa.binary())), np.array(well_formed, dtype=bool))

    def _emit(self, records: pa.Array, index: np.ndarray, values: pa.Array, well_formed: np.ndarray) -> Iterator[pa.RecordBatch]:
        """Records with their field texts (``values``, meaningful where ``well_formed``): the malformed flag
        and, for the others, ``_fields`` (the contract's fields, by the file's header) and ``_unknown_fields``."""
        raw = decode(records, self.options.python_encoding)
        clean = ~pc.match_substring(raw, "\ufffd").to_numpy(zero_copy_only=False)
        counts = pc.list_value_length(values).to_numpy(zero_copy_only=False)
        good = well_formed & clean & self.header_ok
        if self.expected is not None:
            good &= counts == self.expected
        bad = ~good
        if bad.any():
            yield _batch(self.schema, int(bad.sum()), self.path, raw=raw.filter(pa.array(bad)), index=index[bad],
                         header=self.header_text, malformed=True)
        if not good.any():
            return
        mask = pa.array(good)
        rows = int(good.sum())
        good_values = values.filter(mask)
        flat = good_values.flatten()
        if self.grammar.null_texts:
            is_null = None
            for text in self.grammar.null_texts:  # a few equality scans beat a hash lookup per value
                equal = pc.equal(flat, pa.scalar(text, pa.binary()))
                is_null = equal if is_null is None else pc.or_(is_null, equal)
            flat = pc.if_else(is_null, pa.scalar(None, pa.binary()), flat)
        flat = decode(flat, self.options.python_encoding)
        starts = pc.list_value_length(good_values).to_numpy(zero_copy_only=False)
        starts = np.concatenate([[0], np.cumsum(starts)[:-1]]).astype(np.int64)
        counts_good = counts[good]
        children = []
        for position in self.positions:
            if position < 0:
                children.append(pa.nulls(rows, pa.string()))
                continue
            present = counts_good > position  # a header-less record may be short (no field count to check)
            taken = flat.take(pa.array(np.where(present, starts + position, 0)))
            children.append(taken if present.all() else pc.if_else(pa.array(present), taken, pa.scalar(None, pa.string())))
        fields = pa.StructArray.from_arrays(children, fields=list(self.struct_type)) if children else \
            pa.repeat(pa.scalar({}, self.struct_type), rows)
        if self.unknown:
            width = len(self.unknown)
            unknown = pa.ListArray.from_arrays(pa.array(np.arange(0, (rows + 1) * width, width, dtype=np.int32)),
                                               pa.array(self.unknown * rows, pa.string()))
        else:
            unknown = pa.ListArray.from_arrays(pa.array(np.zeros(rows + 1, dtype=np.int32)), pa.array([], pa.string()))
        yield _batch(self.schema, rows, self.path, raw=raw.filter(mask), index=index[good], header=self.header_text,
                     fields=fields, unknown=unknown, malformed=False)


# ------------------------------------------------------------------------------------- CSV in splits
# A large CSV file is read by several tasks, each from a split of its lines, when a first pass has found the
# state the file is in at each split's first line: a record starts there, or a quoted field runs on from the
# split before (``csv_split_summaries``, composed by ``plan_csv_file``). Each task then reads as a read of the
# whole file would at that point, so the records and their ``_record_index`` are the same.
SUMMARY_SCHEMA = pa.schema([
    pa.field("_source_file", pa.string()), pa.field("_split_start", pa.int64()), pa.field("problem", pa.bool_()),
    pa.field("header", pa.binary()),
    pa.field("o_records", pa.int64()), pa.field("o_open", pa.bool_()), pa.field("o_pending", pa.int64()),
    pa.field("q_head_lines", pa.int64()), pa.field("q_head", pa.list_(pa.binary())),
    pa.field("q_records", pa.int64()), pa.field("q_open", pa.bool_()), pa.field("q_pending", pa.int64()),
    pa.field("o_made", pa.int64()), pa.field("q_made", pa.int64()),
])


class _SplitSummary:
    """One split of a CSV file read twice in one pass, records counted, not made: as if a record starts at
    its first line (``o``), and as if a quoted field runs on into it (``q``). The two reads agree once both
    are between records at the end of a batch of lines; from there only ``o`` reads on."""

    def __init__(self, options: LineOptions, path: str, start: int):
        self.path, self.start = path, start
        self.o = _CsvFile(options, path, start, count_only=True)
        self.q = _CsvFile(options, path, start, count_only=True, open_at_start=True)
        if start:  # the header is the first split's: a middle split has none of its own
            self.o.header_seen = self.q.header_seen = True
        self.joined: tuple[int, int, int, int] | None = None   # (o.records, q.records, o.made, q.made) when they met

    def feed(self, lines: pa.Array) -> None:
        for _ in self.o.feed(lines):
            pass
        if self.joined is None:
            for _ in self.q.feed(lines):
                pass
            if self.q.head_lines is not None and not self.o.parts and not self.q.parts:
                self.joined = (self.o.records, self.q.records, self.o.made, self.q.made)

    def summary(self) -> pa.RecordBatch:
        o, q = self.o, self.q
        o_open = bool(o.parts)
        if self.joined is not None:
            o_at, q_at, o_made, q_made = self.joined  # from there on, the two reads count the same records
            q_records, q_open, q_pending = q_at + o.records - o_at, o_open, o.parts_bytes
            q_made += o.made - o_made
        else:
            q_records, q_open, q_pending, q_made = q.records, bool(q.parts), q.parts_bytes, q.made
        row = {"_source_file": self.path, "_split_start": self.start, "problem": o.dead or q.dead,
               "header": o.header_raw if not self.start else None,
               "o_records": o.records + int(o_open), "o_open": o_open, "o_pending": o.parts_bytes,
               "q_head_lines": -1 if q.head_lines is None else q.head_lines,
               "q_head": q.head_text if q.head_lines is not None else None,
               "q_records": q_records + int(q_open), "q_open": q_open, "q_pending": q_pending,
               # a record still open at the split's end is made by this split (its next lines end it)
               "o_made": o.made + int(o_open), "q_made": q_made + int(q_open)}
        return pa.RecordBatch.from_pylist([row], schema=SUMMARY_SCHEMA)


def csv_split_summaries(options: LineOptions):
    """The ``mapInArrow`` function of the split plan's pass: batches of (``_line``, ``_source_file``,
    ``_split_start``), every line of each split in order -> one ``SUMMARY_SCHEMA`` row per split."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        current = None
        for batch in batches:
            if batch.num_rows == 0:
                continue
            lines, files, starts = batch.column(0), batch.column(1), batch.column(2)
            for first, stop in _runs(files, starts):
                key = (files[first].as_py(), starts[first].as_py() or 0)
                if current is None or (current.path, current.start) != key:
                    if current is not None:
                        yield current.summary()
                    current = _SplitSummary(options, *key)
                current.feed(lines.slice(first, stop - first))
        if current is not None:
            yield current.summary()

    return run


def plan_csv_file(summaries: list[dict], header_expected: bool = True) -> dict[int, CsvSplit] | None:
    """How to read each split of one CSV file (``{split start: CsvSplit}``) from its splits' summaries, in any
    order; None when the file must be read whole: a split holds no text but binary (its problem is reported
    by that read), a quoted field runs over a split boundary and does not end within the next split (or
    within ``MAX_SPLIT_HEAD_BYTES`` of it, or ``MAX_OPEN_QUOTE_BYTES`` in all), or one is still open at the
    file's end (an unterminated quote: a read of the whole file looks back for where it ends). With
    ``header_expected``, the first split must hold the header."""
    ordered = sorted(summaries, key=lambda row: row["_split_start"])
    header = ordered[0]["header"] if ordered else None
    if header_expected and header is None and len(ordered) > 1:
        return None  # the first split holds no record: the header is further down
    plan: dict[int, CsvSplit] = {}
    records, open_field, pending, previous = 0, False, 0, None
    for position, row in enumerate(ordered):
        if row["problem"]:
            return None
        last = position == len(ordered) - 1
        skip = 0
        if open_field:
            head = row["q_head"]
            if row["q_head_lines"] < 0 or head is None or pending + sum(len(line) + 1 for line in head) > MAX_OPEN_QUOTE_BYTES:
                return None
            plan[previous] = dataclasses.replace(plan[previous], tail=tuple(head))
            skip, started, open_field, pending = row["q_head_lines"], row["q_records"], row["q_open"], row["q_pending"]
            made = row["q_made"]
        else:
            started, open_field, pending, made = row["o_records"], row["o_open"], row["o_pending"], row["o_made"]
        start = row["_split_start"]
        plan[start] = CsvSplit(first_record=records, skip_lines=skip, header=header if start else None, last=last,
                               made=made)
        records += started
        previous = start
        if open_field and (last or pending > MAX_OPEN_QUOTE_BYTES):
            return None
    return plan
