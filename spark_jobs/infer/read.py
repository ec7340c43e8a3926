"""How ``contract infer`` reads a sample file: its format from the name and content, then every record as a stream
into the statistics and the reservoir (``spark_jobs/infer/stats.py``). CSV (gzip too) through pyarrow's streaming
reader (``ArrowCsv``), or Python's csv module where pyarrow cannot read it as that module does (``PythonCsv``,
one progress line says so); Parquet and JSON through DuckDB and the JSON readers. A damaged or unreadable file is
one line (``InferError``); a long pass prints a progress line at most every ``PROGRESS_EVERY_S`` seconds.
"""
from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import gzip
import io
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any, Iterator

from spark_jobs.contract.parts import LandingSpec
from spark_jobs.infer.stats import (NULL_TOKENS, NUMERIC, SAMPLE_SEED, Field, Reservoir, Sampled, Stats, file_null_tokens,
                                    value_kind)
from spark_jobs.landing.files import GZIP_MAGIC, PARQUET_MAGIC, csv_reader, decompressed_chunks


DELIMITERS = (",", ";", "\t", "|")


BATCH = 4096                # records per batch of the Python readers (JSON, and CSV when pyarrow's reader cannot)


ARROW_BLOCK_BYTES = 1 << 20  # pyarrow's CSV reader: bytes of text per batch


PROGRESS_EVERY_S = 10.0     # a progress line on stderr at most this often during a long pass


PARQUET_TIMESTAMP_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'"  # how bronze writes Parquet timestamps


class InferError(ValueError):
    """The sample cannot be read; one line."""


def detect_format(path: Path, head: bytes) -> str:
    name = path.name.lower().removesuffix(".gz")
    if head == PARQUET_MAGIC or name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".csv", ".tsv", ".txt")):
        return "csv"
    if name.endswith(".jsonl") or name.endswith(".ndjson"):
        return "json_lines"
    if name.endswith(".json"):
        text = _read_text(path, head[:2] == GZIP_MAGIC, 1 << 16)[0]
        return "json_array" if text.lstrip().startswith("[") else "json_lines"
    raise InferError(f"{path}: cannot tell the format from the name; pass --format csv|parquet|json_array|json_lines")


def _read_text(path: Path, is_gzip: bool, limit: int | None = None) -> tuple[str, str]:
    """(text, encoding) of the file's first ``limit`` bytes: UTF-8 when they decode as such, else ISO-8859-1."""
    data = bytearray()
    try:
        for chunk in decompressed_chunks(path, is_gzip):
            data += chunk
            if limit and len(data) >= limit:
                break
    except ValueError as exc:
        raise InferError(f"{path} {exc}") from None
    raw = bytes(data)
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as exc:
        if limit and exc.start > len(raw) - 4:  # a character cut by the limit
            return raw[:exc.start].decode("utf-8"), "utf-8"
        return raw.decode("iso-8859-1"), "iso-8859-1"


def _text_stream(path: Path, is_gzip: bool, encoding: str) -> io.TextIOWrapper:
    """The file as text, decompressed and decoded as it is read (a UTF-8 byte-order mark dropped)."""
    raw = gzip.open(path, "rb") if is_gzip else path.open("rb")
    return io.TextIOWrapper(raw, encoding="utf-8-sig" if encoding == "utf-8" else encoding, newline="")


def _streamed(read: Any, path: Path) -> Iterator[Any]:
    """``read()``'s records, a damaged file as one line (``InferError``)."""
    try:
        yield from read()
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InferError(f"{path} is a damaged gzip file ({exc})") from None
    except (csv.Error, ValueError) as exc:
        if isinstance(exc, UnicodeDecodeError):
            raise
        raise InferError(f"{path}: cannot be read to the end ({(str(exc).splitlines() or [''])[0]})") from None


def sample_csv(path: Path, is_gzip: bool, rows: int, delimiter: str | None) -> Sampled:
    head, encoding = _read_text(path, is_gzip, limit=1 << 16)
    lines = [ln for ln in head.lstrip("\ufeff").splitlines() if ln.strip()][:50]
    if not lines:
        raise InferError(f"{path}: no records to infer from")
    if delimiter is None:
        delimiter = max(DELIMITERS, key=lambda d: (_consistent_count(lines, d), d == ","))
    landing = LandingSpec(format="csv", delimiter=delimiter, encoding=encoding)
    first_records = [r for r in itertools.islice(csv_reader(head, landing), 52) if any(c.strip() for c in r)]
    first = first_records[0]
    header = len(first_records) > 1 and _looks_like_header(first, first_records[1:])
    names = first if header else [f"field_{i + 1}" for i in range(len(first))]
    landing = dataclasses.replace(landing, header=header)
    for reader in CSV_READERS:
        try:
            try:
                return _stream_csv(reader(path, is_gzip, landing, names), rows)
            except (UnicodeDecodeError, NotUtf8):  # UTF-8 at the head only: the whole file is read as ISO-8859-1
                return _stream_csv(reader(path, is_gzip, dataclasses.replace(landing, encoding="iso-8859-1"), names),
                                   rows)
        except NativeUnfit as exc:
            _progress(f"{path.name}: pyarrow's CSV reader cannot read it as Python's csv module does ({exc}); "
                      "reading it with Python's csv module instead (slower)")
    raise AssertionError("unreachable: the Python reader raises no NativeUnfit")  # pragma: no cover


class NativeUnfit(Exception):
    """pyarrow's CSV reader cannot read this file as Python's csv module does: the Python reader reads it."""


class ArrowCsv:
    """A CSV file's records through pyarrow's streaming CSV reader (parsing and decoding in C++, a block of
    ``ARROW_BLOCK_BYTES`` at a time), as batches of Arrow string columns, the same records and values as
    ``PythonCsv`` gives: blank lines dropped, records of another field count than the header skipped and counted,
    quoted line breaks kept, a UTF-8 byte-order mark dropped, gzip decompressed by Arrow. Where it cannot give
    the same (Arrow names the header's fields otherwise, a skipped row that Python's csv module reads at the right
    width, any other Arrow error), it raises ``NativeUnfit`` and the Python reader reads the file."""

    def __init__(self, path: Path, is_gzip: bool, landing: LandingSpec, names: list[str]):
        self.path, self.is_gzip, self.landing, self.names = path, is_gzip, landing, names
        self.skipped = 0

    def batches(self, columns: list[int] | None = None) -> Iterator[list[Any]]:
        """Each batch's columns (``columns``: these positions only), a list of Arrow string arrays."""
        try:
            yield from self._batches(columns)
        except NativeUnfit:
            raise
        except Exception as exc:  # any Arrow error: a row it cannot split, the text's encoding, a damaged gzip
            if self.landing.encoding == "utf-8" and "utf8" in str(exc).lower():
                raise NotUtf8() from None
            raise NativeUnfit((str(exc).splitlines() or [type(exc).__name__])[0]) from None

    def _batches(self, columns: list[int] | None) -> Iterator[list[Any]]:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pa_csv

        width, landing = len(self.names), self.landing
        self.skipped = 0

        unfit: list[str] = []

        def odd_row(row: Any) -> str:
            """A row of another field count: skipped and counted as Python's reader does (a blank one is no
            record); one that Python's csv module reads at the header's width stops Arrow (an exception raised
            here would not reach the caller: Arrow reports the row as its error instead)."""
            record = next(csv_reader(row.text, landing), [])
            if len(record) == width:
                unfit.append(f"it splits a record into {row.actual_columns} fields, expecting {row.expected_columns}; "
                             f"Python's csv module reads the header's {width}")
                return "error"
            if len(record) > 1 or (record and record[0].strip()):
                self.skipped += 1
            return "skip"

        wanted = [self.names[i] for i in columns] if columns is not None else None
        read = pa_csv.ReadOptions(block_size=ARROW_BLOCK_BYTES, encoding=landing.encoding,
                                  column_names=None if landing.header else self.names)
        parse = pa_csv.ParseOptions(delimiter=landing.delimiter, quote_char=landing.quote,
                                    double_quote=landing.escape == landing.quote,
                                    escape_char=False if landing.escape == landing.quote else landing.escape,
                                    newlines_in_values=True, invalid_row_handler=odd_row)
        convert = pa_csv.ConvertOptions(column_types={name: pa.string() for name in self.names},
                                        strings_can_be_null=False, quoted_strings_can_be_null=False,
                                        include_columns=wanted)
        source = pa.input_stream(str(self.path), compression="gzip" if self.is_gzip else None)
        try:
            with pa_csv.open_csv(source, read_options=read, parse_options=parse, convert_options=convert) as reader:
                if landing.header and reader.schema.names != (wanted or self.names):
                    raise NativeUnfit("it reads the header's fields otherwise")
                for batch in reader:
                    arrays = batch.columns
                    if width == 1:  # a one-field file: a blank line is a record to Arrow, none to Python
                        arrays = [a.filter(pc.not_equal(pc.utf8_trim_whitespace(a), "")) for a in arrays]
                    if len(arrays[0]):
                        yield arrays
        except pa.ArrowInvalid:
            if unfit:
                raise NativeUnfit(unfit[0]) from None
            raise


class NotUtf8(Exception):
    """The text is not UTF-8 past the head: it is read again as ISO-8859-1."""


class PythonCsv:
    """A CSV file's records through Python's csv module (``landing_files.csv_reader``), in batches of ``BATCH``
    records made Arrow string columns: the reader for what pyarrow's cannot read alike."""

    def __init__(self, path: Path, is_gzip: bool, landing: LandingSpec, names: list[str]):
        self.path, self.is_gzip, self.landing, self.names = path, is_gzip, landing, names
        self.skipped = 0

    def _records(self) -> Iterator[list[str]]:
        with _text_stream(self.path, self.is_gzip, self.landing.encoding) as text:
            body = (r for r in csv_reader(text, self.landing) if len(r) > 1 or (r and r[0].strip()))
            if self.landing.header:
                next(body, None)
            yield from body

    def batches(self, columns: list[int] | None = None) -> Iterator[list[Any]]:
        import pyarrow as pa

        width, self.skipped = len(self.names), 0
        for batch in record_batches(_streamed(self._records, self.path)):
            kept = [record for record in batch if len(record) == width]
            self.skipped += len(batch) - len(kept)
            if kept:
                values = list(zip(*kept))
                yield [pa.array(values[i], pa.string()) for i in (range(width) if columns is None else columns)]


def _stream_csv(source: ArrowCsv | PythonCsv, rows: int) -> Sampled:
    """One pass over the file: each field's statistics, a batch at a time, and the reservoir sample."""
    import pyarrow as pa

    names = source.names
    stats = [Stats() for _ in names]
    reservoir = Reservoir(rows)
    progress = PassProgress(f"{source.path.name}: {{:,}} records read")
    for columns in source.batches():
        for stat, column in zip(stats, columns):
            stat.add_column(column)
        chosen = reservoir.offer(len(columns[0]))
        if chosen:
            picks = pa.array(list(chosen.values()), pa.int64())
            reservoir.store(chosen, zip(*(column.take(picks).to_pylist() for column in columns)))
        progress.tick(reservoir.count)
    tokens = file_null_tokens(stats)
    sample_columns = zip(*reservoir.items) if reservoir.items else [[]] * len(names)
    fields = [Field(source=name, values=[None if v == "" or v.strip() in tokens else v for v in column], stats=stat)
              for name, stat, column in zip(names, stats, sample_columns)]
    landing = dataclasses.replace(source.landing, null_values=("", *sorted(tokens)))
    return Sampled(fields, landing, reservoir.count, source.skipped, reread=None, columns=source.batches)


CSV_READERS = (ArrowCsv, PythonCsv)  # the first that reads the file alike; Python's csv module reads any


def record_batches(records: Iterator[Any]) -> Iterator[list[Any]]:
    while batch := list(itertools.islice(records, BATCH)):
        yield batch


def _consistent_count(lines: list[str], delimiter: str) -> int:
    counts = {ln.count(delimiter) for ln in lines}
    return next(iter(counts)) if len(counts) == 1 else 0


def _looks_like_header(first: list[str], rest: list[list[str]]) -> bool:
    """A header names fields: none of its cells parses like the typed values below it."""
    for i, cell in enumerate(first):
        below = [row[i] for row in rest[:50] if i < len(row) and row[i] not in ("", *NULL_TOKENS)]
        if below and value_kind(cell) != "string" and value_kind(cell) == value_kind(below[0]):
            return False
    return len(set(first)) == len(first)


def sample_parquet(path: Path, rows: int) -> Sampled:
    """Parquet through DuckDB, which streams it: the declared types, each column's missing count and range over
    the whole file in one aggregation, and a reservoir sample of ``rows`` rows spread over it."""
    import duckdb

    source = f"read_parquet('{sql_text(str(path))}')"
    con = duckdb_connection()
    try:
        described = con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
        names, types = [row[0] for row in described], [str(row[1]) for row in described]
        aggregates = ["count(*)"]
        for name, kind in zip(names, types):
            column = sql_name(name)
            aggregates.append(f"count(*) - count({column})")
            ranged = parquet_type(kind, [])[0] in (*NUMERIC, "timestamp", "date")
            aggregates += [f"min({column})", f"max({column})"] if ranged else ["NULL", "NULL"]
        totals = con.execute(f"SELECT {', '.join(aggregates)} FROM {source}").fetchone()
        data = con.execute(f"SELECT * FROM {source} USING SAMPLE reservoir({int(rows)} ROWS) REPEATABLE ({SAMPLE_SEED})"
                       ).fetchall()
    except duckdb.Error as exc:
        raise InferError(f"{path}: not a readable Parquet file ({(str(exc).splitlines() or [''])[0]})") from None
    finally:
        con.close()
    fields = [Field(source=name, values=[row[i] for row in data], declared=kind, missing=int(totals[1 + 3 * i]),
                    low=totals[2 + 3 * i], high=totals[3 + 3 * i])
              for i, (name, kind) in enumerate(zip(names, types))]

    def reread() -> Iterator[list[Any]]:
        raise InferError("internal: Parquet keys are checked by DuckDB")  # pragma: no cover

    return Sampled(fields, LandingSpec(format="parquet"), int(totals[0]), 0, reread)


def duckdb_connection() -> Any:
    """A DuckDB connection that draws no progress bar on the terminal (stderr carries our progress lines)."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    return con


def sql_text(text: str) -> str:
    return text.replace("'", "''")


def sql_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _json_records(path: Path, is_gzip: bool, landing_format: str) -> Iterator[Any]:
    """The file's records, streamed: a JSON-lines file line by line; a JSON array element by element (its text
    held up to the end of the element being read, never the whole array)."""
    with _text_stream(path, is_gzip, "utf-8") as text:
        if landing_format == "json_lines":
            for line in text:
                if line.strip():
                    yield json.loads(line)
            return
        decoder, buffer, started = json.JSONDecoder(), "", False
        for chunk in iter(lambda: text.read(1 << 20), ""):
            buffer += chunk
            position = 0
            while True:
                while position < len(buffer) and buffer[position] in " \t\r\n,":
                    position += 1
                if not started:
                    if position >= len(buffer):
                        break
                    if buffer[position] != "[":
                        raise ValueError("the file is not one JSON array")
                    started, position = True, position + 1
                    continue
                if position < len(buffer) and buffer[position] == "]":
                    return
                try:
                    value, position = decoder.raw_decode(buffer, position)
                except ValueError:
                    break  # an element cut by the chunk: read on
                yield value
            buffer = buffer[position:]
        if buffer.strip():
            raise ValueError("the JSON array does not end")


def sample_json(path: Path, is_gzip: bool, rows: int, landing_format: str) -> Sampled:
    def as_text(value: Any) -> Any:
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        return json.dumps(value)

    def records() -> Iterator[dict]:
        for record in _json_records(path, is_gzip, landing_format):
            if isinstance(record, dict):
                yield record

    stats: dict[str, Stats] = {}
    reservoir = Reservoir(rows)
    count = 0
    try:
        for batch in record_batches(_streamed(records, path)):
            count += len(batch)
            for name in dict.fromkeys(name for record in batch for name in record):
                stats.setdefault(name, Stats()).add_values([as_text(r[name]) for r in batch if name in r])
            chosen = reservoir.offer(len(batch))
            reservoir.store(chosen, (batch[i] for i in chosen.values()))
    except UnicodeDecodeError as exc:
        raise InferError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    names = list(stats)
    fields = [Field(source=name, values=[as_text(r.get(name)) for r in reservoir.items], stats=stats[name])
              for name in names]

    def reread() -> Iterator[list[Any]]:
        return ([as_text(r.get(name)) for name in names] for r in _streamed(records, path))

    return Sampled(fields, LandingSpec(format=landing_format), count, 0, reread)


def parquet_type(declared: str, present: list[Any]) -> tuple[str, str | None, bool]:
    kind = declared.upper()
    if kind.startswith("TIMESTAMP"):
        has_time = any(isinstance(v, dt.datetime) and (v.hour, v.minute, v.second) != (0, 0, 0) for v in present)
        return "timestamp", PARQUET_TIMESTAMP_FORMAT, has_time or not present
    if kind == "DATE":
        return "date", "yyyy-MM-dd", False
    if kind == "BOOLEAN":
        return "boolean", None, False
    if kind in ("TINYINT", "SMALLINT", "INTEGER", "UTINYINT", "USMALLINT"):
        return "int", None, False
    if kind in ("BIGINT", "UINTEGER", "UBIGINT", "HUGEINT"):
        return "long", None, False
    if kind in ("DOUBLE", "FLOAT", "REAL") or kind.startswith("DECIMAL"):
        return "double", None, False
    return "string", None, False


class PassProgress:
    """A line on stderr at most every ``PROGRESS_EVERY_S`` seconds of a long pass (none for a short one)."""

    def __init__(self, what: str):
        self.what, self.started = what, time.monotonic()
        self.last = self.started

    def tick(self, count: int) -> None:
        now = time.monotonic()
        if now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            _progress(f"{self.what.format(count)} ({now - self.started:.0f} s)")


def _progress(line: str) -> None:
    print(f"[contract infer] {line}", file=sys.stderr, flush=True)
