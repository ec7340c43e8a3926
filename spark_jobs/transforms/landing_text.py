"""What every landing file reader in bronze's Python workers shares (``landing_lines.py`` is the entry): the
workers' options (``LineOptions``), the output and counts schemas, the kinds of output row, how a batch of output
rows is made (``record_batch``), decoding (UTF-8 or ISO-8859-1), and the per-file reader base (``FileReader``) with
its checks of a file's first bytes (BOM, gzip or Parquet magic, NUL) and blank lines.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


KIND_RECORD, KIND_PROBLEM, KIND_BROKEN_ARRAY = "record", "problem", "broken_array"


BOM = b"\xef\xbb\xbf"


WHITESPACE = b" \t\n\x0b\x0c\r"  # Java's \s, which blank records were judged by


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


def split_runs(files: pa.Array, starts: pa.Array) -> list[tuple[int, int]]:
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


# --------------------------------------------------------------------------------------------- output
def record_batch(schema: pa.Schema, n: int, path: str, *, raw: pa.Array, index: pa.Array | np.ndarray,
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


class FileReader:
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
            yield record_batch(self.schema, 1, self.path, raw=pa.nulls(1, pa.string()), index=[self.lines_seen], kind=KIND_PROBLEM,
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


def strip_cr(lines: pa.Array) -> pa.Array:
    if not pc.any(pc.ends_with(lines, b"\r")).as_py():  # a scan for the common case, no copy
        return lines
    return pc.replace_substring_regex(lines, rb"\r$", b"")


def is_blank(lines: pa.Array) -> pa.Array:
    return pc.match_substring_regex(lines, rb"^[ \t\n\x0b\x0c\r]*$")
