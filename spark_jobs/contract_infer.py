"""``python -m spark_jobs contract infer --from FILE``: draft a dataset contract from a sample file, to edit.

Reads a whole CSV (gzip too), Parquet or JSON file as a stream, with memory bounded by ``--sample-rows``
(default 10000) and not by the file: every record updates per-field statistics (missing values, numeric
range, whether every value is an integer, a number, a boolean or a time of one pattern), and a reservoir
sample of ``--sample-rows`` records spread over the whole file (not its head) serves what needs the values
themselves. It writes a contract YAML that ``load_contract`` accepts as it is:

- landing: the format; for CSV the delimiter (sniffed among ``, ; TAB |``), the header, the encoding
  (UTF-8, else ISO-8859-1) and the null texts met in the file (``""`` plus any of ``NA``, ``N/A``,
  ``null``, ``NULL``, ``None``, ``NaN``, ``nan``, ``-`` that stands in a column whose other values are
  numbers, dates or booleans);
- schema: per field a column with a snake_case ``name`` (and ``source``: the field's own name when it
  differs), a type that holds for every value of the file (``boolean``, ``int``, ``long``, ``double``,
  ``timestamp``/``date`` with the Spark pattern that parses every value, else ``string``), ``required``
  when no value is missing, and the whole file's range and missing count as a comment;
- event_time: the first timestamp column (names with time/date/ts first); or, for a date column plus
  a time-of-day column, a ``computed`` timestamp joining them; without either a placeholder that
  stops silver with "edit the contract" until it is replaced. ``lateness_minutes`` covers the file's
  time span (a bulk export is not late data);
- key: the smallest column combination (one, two or three columns; ids first, then the event time) that is
  unique and never missing over the WHOLE file, checked in a second pass that spills 64-bit hashes of each
  candidate's values to disk (memory bounded by a bucket of them); the other verified keys as a comment;
  with none, the draft says so and proposes every column (a record is then its own identity);
- gold: always ``period_summary`` (hourly or daily, by the event-time resolution) over the numeric columns
  outside the key (row counts alone when there are none).

Everything inferred is a guess about the dataset (the next file may differ): read the draft, then edit it.
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime as dt
import gzip
import io
import itertools
import json
import math
import random
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

from spark_jobs.contract import DATASET_NAME_RE, LandingSpec
from spark_jobs.landing_files import GZIP_MAGIC, PARQUET_MAGIC, csv_reader, decompressed_chunks, file_digest

DEFAULT_SAMPLE_ROWS = 10_000
SAMPLE_SEED = 42            # the reservoir's random choices: the same file always gives the same draft
KEY_CANDIDATES = 8          # column combinations checked over the whole file (pass 2), smallest first
KEY_COLUMNS_RANKED = 10     # pairs and triples are drawn from the first columns by rank (ids first)
HASH_BUCKETS = 16           # files per candidate the key check spills hashes to (memory: one bucket at a time)
NULL_TOKENS = ("NA", "N/A", "null", "NULL", "None", "NaN", "nan", "-")
DELIMITERS = (",", ";", "\t", "|")
BOOLEANS = ("true", "false")
INT_MAX = 2 ** 31 - 1
# (Python strptime pattern, Spark pattern, has a time of day); REGEXES below: the same, zero-padded, so that
# the text of two values of one pattern sorts as their times do (the whole file's span without parsing it).
TIMESTAMP_PATTERNS: tuple[tuple[str, str, bool], ...] = (
    ("%Y-%m-%dT%H:%M:%SZ", "yyyy-MM-dd'T'HH:mm:ss'Z'", True),
    ("%Y-%m-%dT%H:%M:%S.%fZ", "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'", True),
    ("%Y-%m-%dT%H:%M:%S", "yyyy-MM-dd'T'HH:mm:ss", True),
    ("%Y-%m-%dT%H:%M", "yyyy-MM-dd'T'HH:mm", True),
    ("%Y-%m-%d %H:%M:%S", "yyyy-MM-dd HH:mm:ss", True),
    ("%Y-%m-%d %H:%M:%S.%f", "yyyy-MM-dd HH:mm:ss.SSSSSS", True),
    ("%Y-%m-%d %H:%M", "yyyy-MM-dd HH:mm", True),
    ("%Y/%m/%d %H:%M:%S", "yyyy/MM/dd HH:mm:ss", True),
    ("%Y/%m/%d %H:%M", "yyyy/MM/dd HH:mm", True),
    ("%Y-%m-%d", "yyyy-MM-dd", False),
    ("%Y/%m/%d", "yyyy/MM/dd", False),
    ("%Y%m%d", "yyyyMMdd", False),
)
_D, _T = r"[0-9]{4}-[0-9]{2}-[0-9]{2}", r"[0-9]{2}:[0-9]{2}"
TIMESTAMP_REGEXES = tuple(re.compile(p) for p in (
    rf"{_D}T{_T}:[0-9]{{2}}Z", rf"{_D}T{_T}:[0-9]{{2}}\.[0-9]{{1,9}}Z", rf"{_D}T{_T}:[0-9]{{2}}", rf"{_D}T{_T}",
    rf"{_D} {_T}:[0-9]{{2}}", rf"{_D} {_T}:[0-9]{{2}}\.[0-9]{{1,9}}", rf"{_D} {_T}",
    r"[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}", r"[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9]{2}:[0-9]{2}",
    _D, r"[0-9]{4}/[0-9]{2}/[0-9]{2}", r"[0-9]{8}"))
TIME_OF_DAY_PATTERNS = (("%H:%M:%S", "HH:mm:ss"), ("%H:%M", "HH:mm"))
_INTEGERS = re.compile(r"[-+]?[0-9]+(?:\n[-+]?[0-9]+)*")
# A batch of values joined by line breaks, every one of them of a pattern (one C-level match per batch).
_TIMESTAMP_LINES = tuple(re.compile(f"(?:{r.pattern})(?:\\n(?:{r.pattern}))*") for r in TIMESTAMP_REGEXES)
BATCH = 4096                # records whose values are checked together
PARQUET_TIMESTAMP_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'"  # how bronze writes Parquet timestamps
NUMERIC = ("int", "long", "double")


class InferError(ValueError):
    """The sample cannot be read; one line."""


@dataclasses.dataclass
class Stats:
    """One field over the whole file, updated a batch of values at a time (``add_texts``, ``add_values``): what
    its type, its range, its missing count and its time span are, without keeping its values. Each test runs
    over a whole batch at once (one regular expression over the batch's values joined by line breaks, ``min``
    and ``max`` over it) and stops for good once it fails: the per-value work is Python's C loops."""

    seen: int = 0                 # records that carry the field (null included)
    empty: int = 0                # null or "" among them
    tokens: dict[str, int] = dataclasses.field(default_factory=dict)  # NULL_TOKENS met, by token
    present: int = 0
    ints: bool = True
    numbers: bool = True
    bools: bool = True
    low: float | None = None      # the numeric range (ints stay exact)
    high: float | None = None
    times: list[int] = dataclasses.field(default_factory=lambda: list(range(len(TIMESTAMP_PATTERNS))))
    text_low: str | None = None   # the smallest and largest text while a time pattern still fits every value
    text_high: str | None = None

    def add_values(self, values: list[Any]) -> None:
        """JSON values: null, booleans, numbers and texts (a nested value as its JSON text)."""
        texts = [v for v in values if isinstance(v, str)]
        if len(texts) < len(values):
            self.seen += len(values) - len(texts)
            kinds = [v for v in values if v is not None and not isinstance(v, str)]
            self.empty += len(values) - len(texts) - len(kinds)
            self.present += len(kinds)
            if kinds:
                self.times = []
                self.bools = self.bools and all(isinstance(v, bool) for v in kinds)
                numbers = [v for v in kinds if not isinstance(v, bool)]
                if len(numbers) < len(kinds):
                    self.ints = self.numbers = False
                self.ints = self.ints and all(isinstance(v, int) for v in numbers)
                self._range([v for v in numbers if isinstance(v, int) or math.isfinite(v)])
        if texts:
            self.add_texts(texts)

    def add_texts(self, values: list[str]) -> None:
        self.seen += len(values)
        stripped = [v.strip() for v in values]
        empty = stripped.count("")
        self.empty += empty
        met = {token: stripped.count(token) for token in NULL_TOKENS if token in stripped}
        for token, count in met.items():
            self.tokens[token] = self.tokens.get(token, 0) + count
        present = [v for v in stripped if v and v not in met] if empty or met else stripped
        if not present:
            return
        self.present += len(present)
        joined = "\n".join(present)
        if self.bools:
            self.bools = set(map(str.lower, present)) <= set(BOOLEANS)
        if self.ints and _INTEGERS.fullmatch(joined):
            self._range(list(map(int, present)))
        else:
            self.ints = False
            if self.numbers:
                try:
                    numbers = list(map(float, present))
                except ValueError:
                    self.numbers = False
                else:
                    self._range([x for x in numbers if math.isfinite(x)])
        if self.times:
            self.times = [i for i in self.times if _TIMESTAMP_LINES[i].fullmatch(joined)]
            if self.times:
                low, high = min(present), max(present)
                self.text_low = low if self.text_low is None or low < self.text_low else self.text_low
                self.text_high = high if self.text_high is None or high > self.text_high else self.text_high

    def _range(self, numbers: list) -> None:
        if numbers:
            self._number(min(numbers))
            self._number(max(numbers))

    def _number(self, number: float) -> None:
        self.low = number if self.low is None or number < self.low else self.low
        self.high = number if self.high is None or number > self.high else self.high

    def missing(self, records: int, null_tokens: set[str]) -> int:
        """Records without a value: the field absent, null, "" or one of the file's null texts."""
        return records - self.seen + self.empty + sum(n for token, n in self.tokens.items() if token in null_tokens)

    @property
    def typed(self) -> bool:
        """Every value is a number, a boolean or a time (a null text among them is then a null)."""
        return self.present > 0 and (self.numbers or self.bools or bool(self.times))


@dataclasses.dataclass
class Field:
    """One landing field: its name, the values of the reservoir sample (None = missing) as the pipeline sees
    them, and its statistics over the whole file."""

    source: str
    values: list[Any]
    declared: str | None = None   # Parquet: the type the file declares
    col_type: str = "string"
    fmt: str | None = None
    has_time: bool = False
    name: str = ""
    stats: Stats | None = None
    missing: int = 0              # over the whole file
    low: Any = None               # the whole file's range (numbers, times)
    high: Any = None


@dataclasses.dataclass
class Sampled:
    """What one streamed pass over the file gives: the fields (sample and statistics), the records read and
    how to read them again (``records()``, for the key check's pass)."""

    fields: list[Field]
    landing: LandingSpec
    records: int
    skipped: int                   # CSV records of another field count than the header's
    reread: Any                    # () -> iterator of records, each a list aligned with ``fields``


class Reservoir:
    """A uniform sample of ``size`` records of a stream of unknown length (Vitter's algorithm R), with a fixed
    seed: the same file always gives the same sample, and the sample spans the whole file."""

    def __init__(self, size: int, seed: int = SAMPLE_SEED):
        self.size, self.items, self.count = size, [], 0
        self._random = random.Random(seed)

    def add(self, item: Any) -> None:
        if len(self.items) < self.size:
            self.items.append(item)
        else:
            slot = self._random.randint(0, self.count)
            if slot < self.size:
                self.items[slot] = item
        self.count += 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="sample", required=True, metavar="FILE", help="a landing file (read whole)")
    parser.add_argument("--dataset", default="", help="dataset name (default: from the file name)")
    parser.add_argument("--format", choices=["csv", "parquet", "json_array", "json_lines"], default=None,
                        help="landing format (default: from the name and content)")
    parser.add_argument("--delimiter", default=None, help="CSV delimiter (default: sniffed); 'tab' for a tab")
    parser.add_argument("--sample-rows", type=int, default=DEFAULT_SAMPLE_ROWS,
                        help=f"records sampled across the whole file, which is read in full (default: "
                             f"{DEFAULT_SAMPLE_ROWS})")
    parser.add_argument("--output", "-o", default="", help="write the draft here (default: print it); never overwrites")


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
    try:
        return _stream_csv(path, is_gzip, rows, landing, header, names)
    except UnicodeDecodeError:  # UTF-8 at the head only: the whole file is read as ISO-8859-1
        return _stream_csv(path, is_gzip, rows, dataclasses.replace(landing, encoding="iso-8859-1"), header, names)


def _stream_csv(path: Path, is_gzip: bool, rows: int, landing: LandingSpec, header: bool, names: list[str]) -> Sampled:
    width = len(names)

    def records() -> Iterator[list[str]]:
        with _text_stream(path, is_gzip, landing.encoding) as text:
            body = (r for r in csv_reader(text, landing) if len(r) > 1 or (r and r[0].strip()))
            if header:
                next(body, None)
            yield from body

    stats = [Stats() for _ in names]
    reservoir = Reservoir(rows)
    count = skipped = 0
    for batch in _batches(_streamed(records, path)):
        kept = [record for record in batch if len(record) == width]
        skipped += len(batch) - len(kept)
        count += len(kept)
        for stat, column in zip(stats, zip(*kept)):
            stat.add_texts(list(column))
        for record in kept:
            reservoir.add(record)
    tokens = _null_tokens(stats)
    fields = [Field(source=name, values=[None if v == "" or v.strip() in tokens else v for v in column], stats=stat)
              for name, stat, column in zip(names, stats, zip(*reservoir.items) if reservoir.items else [[]] * width)]
    landing = dataclasses.replace(landing, header=header, null_values=("", *sorted(tokens)))

    def reread() -> Iterator[list[str]]:
        return (r for r in _streamed(records, path) if len(r) == width)

    return Sampled(fields, landing, count, skipped, reread)


def _batches(records: Iterator[Any]) -> Iterator[list[Any]]:
    while batch := list(itertools.islice(records, BATCH)):
        yield batch


def _consistent_count(lines: list[str], delimiter: str) -> int:
    counts = {ln.count(delimiter) for ln in lines}
    return next(iter(counts)) if len(counts) == 1 else 0


def _looks_like_header(first: list[str], rest: list[list[str]]) -> bool:
    """A header names fields: none of its cells parses like the typed values below it."""
    for i, cell in enumerate(first):
        below = [row[i] for row in rest[:50] if i < len(row) and row[i] not in ("", *NULL_TOKENS)]
        if below and _kind(cell) != "string" and _kind(cell) == _kind(below[0]):
            return False
    return len(set(first)) == len(first)


def _kind(text: str) -> str:
    if _is_number(text):
        return "number"
    return "time" if _time_pattern([text]) else "string"


def _null_tokens(stats: list[Stats]) -> set[str]:
    """The null texts of the file: each of ``NULL_TOKENS`` met in a field whose other values are all numbers,
    booleans or times."""
    return {token for stat in stats if stat.typed for token in stat.tokens}


def _is_number(text: str) -> bool:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return False
    return math.isfinite(value) or text.strip().lower() in ("nan", "inf", "-inf")


def _time_pattern(values: list[str], candidates: list[int] | None = None) -> tuple[str, str, bool] | None:
    for index, (py, spark, has_time) in enumerate(TIMESTAMP_PATTERNS):
        if candidates is not None and index not in candidates:
            continue
        try:
            for v in values:
                dt.datetime.strptime(v.strip(), py)
        except ValueError:
            continue
        return py, spark, has_time
    return None


def sample_parquet(path: Path, rows: int) -> Sampled:
    """Parquet through DuckDB, which streams it: the declared types, each column's missing count and range over
    the whole file in one aggregation, and a reservoir sample of ``rows`` rows spread over it."""
    import duckdb

    source = f"read_parquet('{_sql_text(str(path))}')"
    con = duckdb.connect()
    try:
        described = con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
        names, types = [row[0] for row in described], [str(row[1]) for row in described]
        aggregates = ["count(*)"]
        for name, kind in zip(names, types):
            column = _sql_name(name)
            aggregates.append(f"count(*) - count({column})")
            ranged = _parquet_type(kind, [])[0] in (*NUMERIC, "timestamp", "date")
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


def _sql_text(text: str) -> str:
    return text.replace("'", "''")


def _sql_name(name: str) -> str:
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
        for batch in _batches(_streamed(records, path)):
            count += len(batch)
            for name in dict.fromkeys(name for record in batch for name in record):
                stats.setdefault(name, Stats()).add_values([as_text(r[name]) for r in batch if name in r])
            for record in batch:
                reservoir.add(record)
    except UnicodeDecodeError as exc:
        raise InferError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    names = list(stats)
    fields = [Field(source=name, values=[as_text(r.get(name)) for r in reservoir.items], stats=stats[name])
              for name in names]

    def reread() -> Iterator[list[Any]]:
        return ([as_text(r.get(name)) for name in names] for r in _streamed(records, path))

    return Sampled(fields, LandingSpec(format=landing_format), count, 0, reread)


def infer_types(sampled: Sampled) -> None:
    """Each field's type: one that holds for EVERY value of the file (its statistics), the time pattern
    checked by parsing the sample's values; the whole file's missing count and range."""
    tokens = set(sampled.landing.null_values)
    for field in sampled.fields:
        present = [v for v in field.values if v is not None]
        if field.declared is not None:
            field.col_type, field.fmt, field.has_time = _parquet_type(field.declared, present)
            continue
        stat = field.stats
        field.missing = stat.missing(sampled.records, tokens)
        if not stat.present:
            field.col_type = "string"
        elif stat.bools:
            field.col_type = "boolean"
        elif stat.ints:
            field.col_type = "int" if max(abs(stat.low), abs(stat.high)) <= INT_MAX else "long"
        elif stat.numbers:
            field.col_type = "double"
        else:
            pattern = _time_pattern([str(v) for v in present], stat.times) if stat.times else None
            if pattern:
                field.col_type = "timestamp" if pattern[2] else "date"
                field.fmt, field.has_time = pattern[1], pattern[2]
        if field.col_type in NUMERIC:
            field.low, field.high = stat.low, stat.high
        elif field.col_type in ("timestamp", "date"):
            py = next(p for p, s, _ in TIMESTAMP_PATTERNS if s == field.fmt)
            field.low, field.high = (dt.datetime.strptime(stat.text_low, py), dt.datetime.strptime(stat.text_high, py))


def _parquet_type(declared: str, present: list[Any]) -> tuple[str, str | None, bool]:
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


def snake_names(fields: list[Field]) -> None:
    used: set[str] = set()
    for field in fields:
        base = re.sub(r"[^0-9a-zA-Z]+", "_", field.source).strip("_").lower() or "field"
        base = base if re.match(r"^[a-z_]", base) else f"f_{base}"
        name, n = base, 2
        while name in used:
            name, n = f"{base}_{n}", n + 1
        used.add(name)
        field.name = name


def _as_datetime(value: Any) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    return None


@dataclasses.dataclass
class EventTime:
    name: str
    computed: str | None = None
    fmt: str | None = None
    span_minutes: int = 0
    hourly: bool = False
    parts: tuple[str, ...] = ()   # a computed event time: the date and time-of-day fields it joins


def choose_event_time(fields: list[Field]) -> EventTime | None:
    def rank(field: Field) -> tuple[int, int]:
        return (0 if re.search(r"time|date|ts|_at$|^at$|when", field.name) else 1, fields.index(field))

    timestamps = sorted([f for f in fields if f.col_type == "timestamp"], key=rank)
    if timestamps:
        chosen = timestamps[0]
        return EventTime(chosen.name, span_minutes=_span([_as_datetime(chosen.low), _as_datetime(chosen.high)]),
                         hourly=chosen.has_time)
    dates = sorted([f for f in fields if f.col_type == "date"], key=rank)
    times_of_day = [f for f in fields if f.col_type == "string" and _time_of_day(f)]
    if dates and times_of_day:
        date, clock = dates[0], times_of_day[0]
        clock_spark = _time_of_day(clock)
        name = "event_time" if "event_time" not in {f.name for f in fields} else "event_time_2"
        pairs = [(d, t) for d, t in zip(date.values, clock.values) if d is not None and t is not None]
        py_date = next(p for p, s, _ in TIMESTAMP_PATTERNS if s == date.fmt)
        py_clock = next(p for p, s in TIME_OF_DAY_PATTERNS if s == clock_spark)
        # The span from the sample (spread over the whole file), widened to the dates' own span over the file.
        times = [dt.datetime.strptime(f"{str(d).strip()} {str(t).strip()}", f"{py_date} {py_clock}") for d, t in pairs]
        times += [_as_datetime(date.low), _as_datetime(date.high)]
        return EventTime(name, computed=f"concat({date.name}, ' ', {clock.name})", fmt=f"{date.fmt} {clock_spark}",
                         span_minutes=_span(times), hourly=True, parts=(date.name, clock.name))
    if dates:
        chosen = dates[0]
        chosen.col_type = "timestamp"  # a date as the event time: a timestamp at midnight
        return EventTime(chosen.name, span_minutes=_span([_as_datetime(chosen.low), _as_datetime(chosen.high)]))
    return None


def _time_of_day(field: Field) -> str | None:
    texts = [str(v).strip() for v in field.values if v is not None]
    for py, spark in TIME_OF_DAY_PATTERNS:
        try:
            for t in texts:
                dt.datetime.strptime(t, py)
        except ValueError:
            continue
        return spark if texts else None
    return None


def _span(times: list[dt.datetime | None]) -> int:
    known = [t for t in times if t is not None]
    return math.ceil((max(known) - min(known)).total_seconds() / 60) if known else 0


# ------------------------------------------------------------------------------------------ the key
def key_candidates(fields: list[Field], event: EventTime | None, limit: int = KEY_CANDIDATES) -> list[list[Field]]:
    """Column combinations worth checking over the whole file, smallest first: each never missing in the file
    and unique in the sample; single columns (ids first, then the event time), then pairs and triples of the
    first ``KEY_COLUMNS_RANKED`` columns by that rank."""
    rows = len(fields[0].values) if fields else 0
    usable = [f for f in fields if f.col_type in ("string", "int", "long", "timestamp", "date", "boolean")
              and f.missing == 0]

    def unique_in_sample(columns: tuple[Field, ...]) -> bool:
        tuples = list(zip(*[f.values for f in columns]))
        return all(None not in t for t in tuples) and len(set(tuples)) == rows

    def rank(field: Field) -> tuple[int, int]:
        is_id = bool(re.search(r"(^|_)(id|key|uuid)$", field.name))
        in_event = event is not None and (field.name == event.name or field.name in event.parts)
        return (0 if is_id else 1 if in_event else 2, fields.index(field))

    ranked = sorted(usable, key=rank)
    found: list[list[Field]] = []
    for size in (1, 2, 3):
        pool = ranked if size == 1 else ranked[:KEY_COLUMNS_RANKED]
        for combination in itertools.combinations(pool, size):
            if unique_in_sample(combination):
                found.append(list(combination))
                if len(found) >= limit:
                    return found
    return found


class UniqueCheck:
    """Whether a column combination is unique over a stream of records, in bounded memory: the 64-bit hash of
    each record's values goes to one of ``HASH_BUCKETS`` files on disk (by its low bits), then each file is read
    back alone, sorted and its neighbours compared (numpy). A repeated hash is a repeated key (two different
    keys with one 64-bit hash, about n^2/2^65 likely, would count as a repeat: the check errs towards "not
    unique"). Memory: one bucket, about an eighth of a 64-bit number per record of the file."""

    def __init__(self, folder: Path, name: str):
        self.paths = [folder / f"{name}-{i}" for i in range(HASH_BUCKETS)]
        for path in self.paths:
            path.write_bytes(b"")

    def add(self, keys: Iterator[tuple], count: int) -> None:
        """A batch of ``count`` records' keys."""
        import numpy as np

        hashes = np.fromiter(map(hash, keys), dtype=np.int64, count=count)
        buckets = hashes & (HASH_BUCKETS - 1)
        for index in range(HASH_BUCKETS):
            chosen = hashes[buckets == index]
            if chosen.size:
                with self.paths[index].open("ab") as handle:
                    chosen.tofile(handle)

    def repeats(self) -> int:
        """How many records repeat an earlier record's key."""
        import numpy as np

        repeated = 0
        for path in self.paths:
            hashes = np.sort(np.fromfile(path, dtype=np.int64))
            repeated += int(np.count_nonzero(hashes[1:] == hashes[:-1]))
        return repeated


def verified_keys(sampled: Sampled, candidates: list[list[Field]], path: Path) -> dict[tuple[str, ...], int]:
    """Per candidate (field names), how many records of the WHOLE file repeat an earlier one's key: one more
    pass over the file, a batch of records at a time (DuckDB for Parquet)."""
    if not candidates:
        return {}
    if sampled.landing.format == "parquet":
        return _parquet_repeats(path, candidates)
    index = {f.source: i for i, f in enumerate(sampled.fields)}
    with tempfile.TemporaryDirectory(prefix="tenantlake-infer-") as folder:
        checks = [(tuple(index[f.source] for f in c), UniqueCheck(Path(folder), str(n))) for n, c in enumerate(candidates)]
        for batch in _batches(sampled.reread()):
            columns = list(zip(*batch))
            for positions, check in checks:
                check.add(zip(*[columns[p] for p in positions]), len(batch))
        return {tuple(f.name for f in c): check.repeats() for c, (_, check) in zip(candidates, checks)}


def _parquet_repeats(path: Path, candidates: list[list[Field]]) -> dict[tuple[str, ...], int]:
    import duckdb

    source = f"read_parquet('{_sql_text(str(path))}')"
    con = duckdb.connect()
    try:
        out = {}
        for candidate in candidates:
            columns = ", ".join(_sql_name(f.source) for f in candidate)
            out[tuple(f.name for f in candidate)] = int(con.execute(
                f"SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM {source} GROUP BY {columns})").fetchone()[0])
        return out
    finally:
        con.close()


def choose_key(sampled: Sampled, event: EventTime | None, path: Path) -> tuple[list[str], list[list[str]], str]:
    """(the key, the other verified keys, a note when there is no key): the smallest candidate unique over the
    whole file; a computed event time's two fields are proposed as that event time."""
    candidates = key_candidates(sampled.fields, event)
    repeats = verified_keys(sampled, candidates, path)
    unique: list[tuple[str, ...]] = []
    for names, n in repeats.items():  # smallest first; a superset of a unique key is no other key
        if n == 0 and not any(set(smaller) <= set(names) for smaller in unique):
            unique.append(names)
    unique = [(event.name,) if event is not None and event.parts and k == event.parts else k for k in unique]
    if unique:
        return list(unique[0]), [list(k) for k in unique[1:]], ""
    checked = ", ".join("[" + ", ".join(names) + f"] repeats {n:,}" for names, n in list(repeats.items())[:3])
    note = (f"no column, pair or triple of columns is unique and never missing over the file's {sampled.records:,} "
            f"records{' (' + checked + ')' if checked else ''}: the key below is every column (a record is its own "
            "identity; exact repeats are dropped): edit it")
    return [f.name for f in sampled.fields], [], note


def _yaml(value: Any) -> str:
    """A YAML flow scalar (JSON strings are valid YAML)."""
    return json.dumps(value)


def draft(dataset: str, sampled: Sampled, sample: Path) -> str:
    infer_types(sampled)
    fields, landing = sampled.fields, sampled.landing
    snake_names(fields)
    event = choose_event_time(fields)
    key, other_keys, no_key = choose_key(sampled, event, sample)
    shown = min(len(fields[0].values), sampled.records) if fields else 0
    lines = [
        f"# Draft contract inferred from {sample.name} by `python -m spark_jobs contract infer`: {sampled.records:,} "
        f"records read, types and ranges over all of them, {shown:,} sampled across the file.",
        "# Every line is a guess about the dataset: check the types, `required`, the key and the event time, then",
        f"# save it as $TENANTLAKE_CONTRACTS_DIR/{dataset}.yaml (or spark_jobs/contracts/{dataset}.yaml to ship it to EMR).",
        f"dataset: {dataset}",
        f"description: {_yaml(f'Inferred from {sample.name}; describe the data here.')}",
        "landing:",
        f"  format: {landing.format}",
    ]
    if landing.format == "csv":
        lines += [f"  header: {str(landing.header).lower()}", f"  delimiter: {_yaml(landing.delimiter)}",
                  f"  null_values: [{', '.join(_yaml(v) for v in landing.null_values)}]"]
        if landing.encoding != "utf-8":
            lines.append(f"  encoding: {landing.encoding}")
    if sampled.skipped:
        lines.append(f"# {sampled.skipped:,} records have another field count than the header: silver will quarantine them")
    if no_key:
        lines.append(f"# TODO: {no_key}")
    lines.append(f"key: [{', '.join(key)}]")
    if other_keys:
        lines.append("# other keys unique over the whole file: " + "; ".join(", ".join(k) for k in other_keys[:5]))
    if event is None:
        lines += ["# TODO: no date or time column was found: replace `computed` below with a Spark SQL expression",
                  "# giving each record's event time as text in the `format` (e.g. concat('1973-', month, '-', day)).",
                  "event_time: event_time"]
    else:
        lines.append(f"event_time: {event.name}")
        if event.span_minutes > 30:
            lines.append(f"lateness_minutes: {event.span_minutes}   # the file spans this much event time: "
                         "a record is late only when it trails its file's newest by more")
    lines += ["# Personal data (required for a tenant classified pii or gdpr): the columns that identify a person,",
              "# which `erase --subject <column>=<value>` matches on; [] declares that the data holds none.",
              "# subject_keys: []"]
    lines.append("schema:")
    for field in fields:
        lines.append("  - " + _column_yaml(field, event))
    if event is None:
        lines.append("  - {name: event_time, type: timestamp, required: true, format: \"yyyy-MM-dd\", "
                     "computed: \"raise_error('edit the contract: event_time has no expression yet')\"}")
    elif event.computed:
        lines.append(f"  - {{name: {event.name}, type: timestamp, required: true, format: {_yaml(event.fmt)}, "
                     f"computed: {_yaml(event.computed)}}}")
    measures = [f.name for f in fields if f.col_type in NUMERIC and f.name not in key]
    hourly = event is not None and event.hourly
    options = f"period: {'hour' if hourly else 'day'}, measures: [{', '.join(measures)}]"
    if hourly:
        options += f", event_time: {event.name}"
    lines += ["# Gold: counts (and count/min/avg/max of each measure) per period (spark_jobs/README.md, period_summary).",
              "gold: [period_summary]", "gold_options:", f"  period_summary: {{{options}}}"]
    return "\n".join(lines) + "\n"


def _column_yaml(field: Field, event: EventTime | None) -> str:
    parts = [f"name: {field.name}"]
    if field.source != field.name:
        parts.append(f"source: {_yaml(field.source)}")
    parts.append(f"type: {field.col_type}")
    if field.missing == 0 or (event is not None and field.name == event.name):
        parts.append("required: true")
    if field.fmt and field.col_type in ("timestamp", "date"):
        parts.append(f"format: {_yaml(field.fmt)}")
    note = ""
    if field.col_type in NUMERIC and field.low is not None:
        note = f"   # file: {_num(float(field.low))} to {_num(float(field.high))}"
    elif field.col_type in ("timestamp", "date") and field.low is not None:
        low, high = (_as_datetime(v) for v in (field.low, field.high))
        shown = (lambda t: t.date().isoformat()) if field.col_type == "date" else (lambda t: t.isoformat(sep=" "))
        note = f"   # file: {shown(low)} to {shown(high)}"
    if field.missing:
        note += f"{'; ' if note else '   # '}{field.missing:,} missing"
    return "{" + ", ".join(parts) + "}" + note


def _num(value: float) -> str:
    return str(int(value)) if value.is_integer() else f"{value:g}"


def infer(sample: Path, dataset: str = "", landing_format: str | None = None, delimiter: str | None = None,
          rows: int = DEFAULT_SAMPLE_ROWS) -> str:
    """The draft contract YAML for a sample file (see the module docstring)."""
    if not sample.is_file():
        raise InferError(f"{sample}: no such file")
    if rows < 1:
        raise InferError(f"--sample-rows must be at least 1, got {rows}")
    _, size, head = file_digest(sample)
    if size == 0:
        raise InferError(f"{sample}: the file is empty")
    is_gzip = head[:2] == GZIP_MAGIC
    landing_format = landing_format or detect_format(sample, head)
    dataset = dataset or re.sub(r"^[^a-z]+", "", re.sub(r"[^a-z0-9_]+", "_", sample.name.lower().split(".")[0])).strip("_")
    if not re.match(DATASET_NAME_RE, dataset):
        raise InferError(f"dataset name '{dataset}' must match {DATASET_NAME_RE}; pass --dataset NAME")
    if landing_format == "csv":
        sampled = sample_csv(sample, is_gzip, rows, delimiter)
    elif landing_format == "parquet":
        sampled = sample_parquet(sample, rows)
    else:
        sampled = sample_json(sample, is_gzip, rows, landing_format)
    if not sampled.fields or not sampled.records:
        raise InferError(f"{sample}: no records to infer from")
    return draft(dataset, sampled, sample)


def run(args: argparse.Namespace) -> int:
    delimiter = "\t" if args.delimiter in ("tab", "\\t") else args.delimiter
    try:
        text = infer(Path(args.sample), args.dataset, args.format, delimiter, args.sample_rows)
    except InferError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.output:
        print(text, end="")
        return 0
    target = Path(args.output)
    if target.exists():
        print(f"error: {target} exists; the draft is never written over a file (pick another --output)", file=sys.stderr)
        return 2
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    print(f"contract infer: draft written to {target}; edit it, then land files with "
          f"`python -m spark_jobs land --dataset <name> ...`", file=sys.stderr)
    return 0
