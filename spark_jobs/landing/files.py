"""Local landing files, checked in plain Python before they are uploaded (``land``) or sampled (``contract infer``).

A check answers one question: is this file the contract's landing format at all? It reads the whole
file once (hashing it on the way) and says why not in one phrase, or nothing. Row-level problems (a
record with the wrong field count, a value of the wrong type) are not its business: the pipeline
quarantines those. What it refuses:

- every format: a damaged gzip stream; NUL bytes in a text format; gzip-compressed Parquet;
- csv: text that is not in the contract's encoding; a Parquet file; a header that lacks a required
  column, repeats a name, or (``allow_extra_fields: false``) names a column the contract does not know;
  without a header, a first record whose field count differs from the contract's;
- json_array: a file that is not one JSON array; json_lines: a JSON array, or a first line that is not
  a JSON object;
- parquet: no ``PAR1`` magic at both ends; a missing required column, or an unknown one; nanosecond
  timestamps (Spark 3.5 cannot read them).

Parquet schemas are read with DuckDB (a project dependency; these checks run where ``land`` runs, not on EMR).
"""
from __future__ import annotations

import codecs
import csv
import dataclasses
import gzip
import hashlib
import io
import json
import re
import zlib
from pathlib import Path
from typing import BinaryIO, Iterator, TextIO

from spark_jobs.contract.model import Contract
from spark_jobs.contract.parts import LandingSpec

GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
CHUNK = 1 << 20
HEADER_SCAN_LIMIT = 1 << 20   # a header (or first record) longer than this is not looked for further
EXTENSIONS = {"json_array": ".json", "json_lines": ".jsonl", "csv": ".csv", "parquet": ".parquet"}


@dataclasses.dataclass(frozen=True)
class FileCheck:
    """The result of checking one local file: ``problem`` is None when it may be landed."""

    path: Path
    size: int
    sha256: str
    gzip: bool
    problem: str | None = None

    def object_name(self, landing_format: str) -> str:
        """The landing object's name: the content's SHA-256, so the same file lands once."""
        return self.sha256 + EXTENSIONS[landing_format] + (".gz" if self.gzip else "")


def _chunks(handle: BinaryIO) -> Iterator[bytes]:
    while True:
        chunk = handle.read(CHUNK)
        if not chunk:
            return
        yield chunk


def file_digest(path: Path) -> tuple[str, int, bytes]:
    """(sha256 hex, size, first 4 bytes) of a file, read once in chunks."""
    digest, size, head = hashlib.sha256(), 0, b""
    with path.open("rb") as handle:
        for chunk in _chunks(handle):
            if not head:
                head = chunk[:4]
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size, head


def decompressed_chunks(path: Path, is_gzip: bool) -> Iterator[bytes]:
    """The file's bytes, gunzipped when it is gzip; raises ``ValueError`` on a damaged gzip stream."""
    if not is_gzip:
        with path.open("rb") as handle:
            yield from _chunks(handle)
        return
    try:
        with gzip.open(path, "rb") as handle:
            yield from _chunks(handle)
    except (OSError, EOFError, zlib.error) as exc:
        raise ValueError(f"is a damaged gzip file ({exc})") from None


def check_file(path: Path, contract: Contract) -> FileCheck:
    """Check one local file against the contract's landing format (see the module docstring)."""
    sha, size, head = file_digest(path)
    is_gzip = head[:2] == GZIP_MAGIC
    result = FileCheck(path=path, size=size, sha256=sha, gzip=is_gzip)
    try:
        if contract.landing.format == "parquet":
            problem = _parquet_problem(path, head, is_gzip, contract)
        else:
            problem = _text_problem(path, head, is_gzip, contract)
    except ValueError as exc:
        problem = str(exc)
    return dataclasses.replace(result, problem=problem)


def _text_problem(path: Path, head: bytes, is_gzip: bool, contract: Contract) -> str | None:
    landing = contract.landing
    kind = {"csv": "CSV", "json_array": "JSON", "json_lines": "JSON lines"}[landing.format]
    text_head = b""
    decoder = codecs.getincrementaldecoder(landing.encoding)(errors="strict")
    line, offset = 1, 0
    pieces: list[str] = []
    kept = 0
    for chunk in decompressed_chunks(path, is_gzip):
        if not text_head:
            text_head = chunk[:4]
            if text_head == PARQUET_MAGIC:
                return f"is a Parquet file, not {kind}"
            if text_head[:2] == GZIP_MAGIC:
                return "is gzip-compressed twice"
        if b"\x00" in chunk:
            return f"holds NUL bytes: binary data, not {kind} text"
        try:
            text = decoder.decode(chunk)
        except UnicodeDecodeError as exc:
            bad_line = line + chunk[: exc.start].count(b"\n")
            return (f"is not {landing.encoding.upper()} text (byte 0x{chunk[exc.start]:02x} at offset "
                    f"{offset + exc.start}, line {bad_line}); save it as UTF-8, or set landing.encoding in the "
                    "contract")
        line += chunk.count(b"\n")
        offset += len(chunk)
        if landing.format == "json_array" or kept < HEADER_SCAN_LIMIT:
            pieces.append(text)
            kept += len(text)
    try:
        pieces.append(decoder.decode(b"", final=True))
    except UnicodeDecodeError:
        return f"is not {landing.encoding.upper()} text (it ends inside a multi-byte character)"
    text = "".join(pieces)
    if landing.format == "csv":
        return _csv_problem(text, contract)
    if landing.format == "json_array":
        try:
            value = json.loads(text) if text.strip() else []
        except ValueError as exc:
            return f"is not one JSON array ({exc})"
        return None if isinstance(value, list) else f"is one JSON {type(value).__name__}, not a JSON array"
    first = next((ln for ln in text.splitlines() if ln.strip()), None)
    if first is None:
        return None
    if first.lstrip().startswith("["):
        return "starts with a JSON array, not one JSON object per line"
    try:
        is_object = isinstance(json.loads(first), dict)
    except ValueError:
        is_object = False
    return None if is_object else "does not start with a line holding one JSON object"


def csv_reader(text: str | TextIO, landing: LandingSpec) -> Iterator[list[str]]:
    """Python's csv reader with the contract's dialect (as close to the pipeline's parser as csv allows), over a
    text or a text stream (opened with ``newline=""``; a stream read as ``utf-8-sig`` drops a byte-order mark)."""
    doubled = landing.escape == landing.quote
    source = io.StringIO(text.lstrip("\ufeff"), newline="") if isinstance(text, str) else text
    return csv.reader(source, delimiter=landing.delimiter,
                      quotechar=landing.quote, doublequote=doubled,
                      escapechar=None if doubled else landing.escape, strict=False)


def first_record(text: str, landing: LandingSpec) -> list[str] | None:
    """The first non-blank record of a CSV text, or None."""
    try:
        return next((row for row in csv_reader(text, landing) if any(cell.strip() for cell in row)), None)
    except csv.Error:
        return None


def _csv_problem(text: str, contract: Contract) -> str | None:
    landing = contract.landing
    record = first_record(text, landing)
    if record is None:
        return None  # an empty file: nothing to land, nothing wrong
    if not landing.header:
        expected = len(contract.landing_fields)
        if len(record) != expected:
            return (f"has {len(record)} fields in its first record, the contract {expected} "
                    f"({_delimiter_hint(record, landing)}header: false)")
        return None
    names = record
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        return f"has a header that repeats {', '.join(repr(n) for n in repeated)}"
    return _columns_problem("header", names, contract, hint=_delimiter_hint(names, landing))


def _delimiter_hint(record: list[str], landing: LandingSpec) -> str:
    if len(record) == 1:
        for other in (";", "\t", "|", ","):
            if other != landing.delimiter and other in record[0]:
                return f"it looks {other!r}-delimited, the contract says {landing.delimiter!r}; "
    return ""


def _columns_problem(what: str, names: list[str], contract: Contract, hint: str = "") -> str | None:
    required = [c.landing_name for c in contract.schema if c.required and c.landing_name is not None]
    missing = [n for n in required if n not in names]
    shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
    if missing:
        return f"has no column {', '.join(missing)} in its {what} ({hint}{what}: {shown})"
    unknown = [n for n in names if n not in contract.landing_fields and n not in contract.ignored_fields]
    if unknown and not contract.allow_extra_fields:
        return (f"has {what} column(s) the contract does not know: {', '.join(unknown)} (allow_extra_fields is "
                f"false; add them to the schema, name the contract column's `source`, or list them under "
                f"ignored_fields)")
    return None


def parquet_columns(path: Path) -> list[tuple[str, str, str]]:
    """(name, DuckDB type, Parquet logical type) of a Parquet file's top-level columns."""
    import duckdb

    con = duckdb.connect()
    try:
        described = con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(path)]).fetchall()
        logical = dict(con.execute("SELECT name, coalesce(logical_type, '') FROM parquet_schema(?)", [str(path)]).fetchall())
    finally:
        con.close()
    return [(name, str(col_type), str(logical.get(name, ""))) for name, col_type, *_ in described]


def _parquet_problem(path: Path, head: bytes, is_gzip: bool, contract: Contract) -> str | None:
    if is_gzip:
        return "is gzip-compressed; land the Parquet file itself (Parquet compresses inside the file)"
    with path.open("rb") as handle:
        handle.seek(max(0, path.stat().st_size - 4))
        tail = handle.read(4)
    if head != PARQUET_MAGIC or tail != PARQUET_MAGIC:
        return "is not a Parquet file (no PAR1 magic bytes at its start and end)"
    try:
        columns = parquet_columns(path)
    except Exception as exc:  # noqa: BLE001 - DuckDB's own message, first line
        return f"is not a readable Parquet file ({(str(exc).splitlines() or [''])[0][:200]})"
    # DuckDB spells the unit TimeUnit(MILLIS=<null>, MICROS=<null>, NANOS=NanoSeconds()): the set one has a value.
    nanos = [name for name, _, logical in columns if re.search(r"NANOS=(?!<null>)", logical)]
    if nanos:
        return (f"has nanosecond timestamps ({', '.join(nanos)}), which Spark 3.5 cannot read; write them in "
                "microseconds (pyarrow/pandas: coerce_timestamps='us')")
    return _columns_problem("schema", [name for name, _, _ in columns], contract)
