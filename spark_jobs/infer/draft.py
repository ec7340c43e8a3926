"""``python -m spark_jobs contract infer --from FILE``: draft a dataset contract from a sample file, to edit.

Reads a whole CSV (gzip too), Parquet or JSON file as a stream, with memory bounded by ``--sample-rows``
(default 10000) and not by the file: every record updates per-field statistics (missing values, numeric
range, whether every value is an integer, a number, a boolean or a time of one pattern), and a reservoir
sample of ``--sample-rows`` records spread over the whole file (not its head) serves what needs the values
themselves. A CSV goes through pyarrow's streaming reader (``read.ArrowCsv``) and the statistics are Arrow compute
calls over each batch's whole columns; a file it cannot read as Python's csv module does goes through that
module instead (``read.PythonCsv``, one progress line says so), into the same statistics
(``stats.Stats``, ``stats.Reservoir``). It writes a contract YAML
that ``load_contract`` accepts as it is:

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
  candidate's values to disk (DuckDB's ``hash`` for CSV; memory bounded by a bucket of them); the other
  verified keys as a comment;
  with none, the draft says so and proposes every column (a record is then its own identity);
- gold: always ``period_summary`` (hourly or daily, by the event-time resolution) over the numeric columns
  outside the key (row counts alone when there are none).

Everything inferred is a guess about the dataset (the next file may differ): read the draft, then edit it.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import itertools
import json
import math
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

from spark_jobs.contract.parts import DATASET_NAME_RE
from spark_jobs.infer.read import (InferError, NativeUnfit, PassProgress, detect_format, duckdb_connection, parquet_type,
                                   record_batches, sample_csv, sample_json, sample_parquet, sql_name, sql_text)
from spark_jobs.infer.stats import NUMERIC, TIMESTAMP_PATTERNS, Field, Sampled, time_pattern
from spark_jobs.landing.files import GZIP_MAGIC

DEFAULT_SAMPLE_ROWS = 10_000
KEY_CANDIDATES = 8          # column combinations checked over the whole file (pass 2), smallest first
KEY_COLUMNS_RANKED = 10     # pairs and triples are drawn from the first columns by rank (ids first)
HASH_BUCKETS = 16           # files per candidate the key check spills hashes to (memory: one bucket at a time)
KEYS_NOTED = 3              # a draft without a key notes how often its first candidates repeat
INT_MAX = 2 ** 31 - 1
TIME_OF_DAY_PATTERNS = (("%H:%M:%S", "HH:mm:ss"), ("%H:%M", "HH:mm"))


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


def infer_types(sampled: Sampled) -> None:
    """Each field's type: one that holds for EVERY value of the file (its statistics), the time pattern
    checked by parsing the sample's values; the whole file's missing count and range."""
    tokens = set(sampled.landing.null_values)
    for field in sampled.fields:
        present = [v for v in field.values if v is not None]
        if field.declared is not None:
            field.col_type, field.fmt, field.has_time = parquet_type(field.declared, present)
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
            pattern = time_pattern([str(v) for v in present], stat.times) if stat.times else None
            if pattern:
                field.col_type = "timestamp" if pattern[2] else "date"
                field.fmt, field.has_time = pattern[1], pattern[2]
        if field.col_type in NUMERIC:
            field.low, field.high = stat.low, stat.high
        elif field.col_type in ("timestamp", "date"):
            py = next(p for p, s, _ in TIMESTAMP_PATTERNS if s == field.fmt)
            field.low, field.high = (dt.datetime.strptime(stat.text_low, py), dt.datetime.strptime(stat.text_high, py))


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
        """A batch of ``count`` records' keys, Python values (JSON)."""
        import numpy as np

        self.add_hashes(np.fromiter(map(hash, keys), dtype=np.int64, count=count))

    def add_hashes(self, hashes: Any) -> None:
        """A batch of records' key hashes (numpy int64), each to its bucket's file."""
        import numpy as np

        buckets = (hashes & (HASH_BUCKETS - 1)).astype(np.uint8)
        grouped = hashes[np.argsort(buckets, kind="stable")]  # a radix sort of small numbers
        start = 0
        for index, end in enumerate(np.cumsum(np.bincount(buckets, minlength=HASH_BUCKETS)).tolist()):
            if end > start:
                with self.paths[index].open("ab") as handle:
                    grouped[start:end].tofile(handle)
            start = end

    def repeats(self, whole: bool = True) -> int:
        """How many records repeat an earlier record's key; ``whole=False``: stop at the first bucket that holds a
        repeat (a lower bound, enough to say the key is not unique)."""
        import numpy as np

        repeated = 0
        for path in self.paths:
            hashes = np.sort(np.fromfile(path, dtype=np.int64))
            repeated += int(np.count_nonzero(hashes[1:] == hashes[:-1]))
            if repeated and not whole:
                break
        return repeated


def verified_keys(sampled: Sampled, candidates: list[list[Field]], path: Path) -> dict[tuple[str, ...], int | None]:
    """Per candidate (field names), how many records of the WHOLE file repeat an earlier one's key: one more
    pass over the file, a batch of records at a time (DuckDB for Parquet; for CSV, DuckDB hashes each batch's
    columns, read again by the same reader as the first pass: only the candidates' columns are made Arrow
    arrays). Past the first ``KEYS_NOTED`` candidates a count may stop at its first repeat, and a superset of a
    unique candidate is not counted (None)."""
    if not candidates:
        return {}
    if sampled.landing.format == "parquet":
        return _parquet_repeats(path, candidates)
    index = {f.source: i for i, f in enumerate(sampled.fields)}
    keys = [tuple(index[f.source] for f in c) for c in candidates]
    progress = PassProgress(f"{path.name}: key check, {{:,}} records hashed ({len(candidates)} column combinations)")
    with tempfile.TemporaryDirectory(prefix="tenantlake-infer-") as folder:
        checks = [UniqueCheck(Path(folder), str(n)) for n in range(len(candidates))]
        if sampled.columns is not None:
            for count, hashes in _hashed_columns(sampled.columns, keys, path):
                for check, column in zip(checks, hashes):
                    check.add_hashes(column)
                progress.tick(count)
        else:
            count = 0
            for batch in record_batches(sampled.reread()):
                columns = list(zip(*batch))
                for positions, check in zip(keys, checks):
                    check.add(zip(*[columns[p] for p in positions]), len(batch))
                count += len(batch)
                progress.tick(count)
        counts: dict[tuple[str, ...], int | None] = {}
        for n, (candidate, check) in enumerate(zip(candidates, checks)):
            names = tuple(f.name for f in candidate)
            unique = [k for k, repeats in counts.items() if repeats == 0]
            # A superset of a unique key is no key of its own (choose_key): not counted. The note of a draft
            # without a key gives the first KEYS_NOTED counts: the others stop at the first repeat.
            superset = any(set(k) <= set(names) for k in unique)
            counts[names] = None if superset else check.repeats(whole=n < KEYS_NOTED)
        return counts


def _hashed_columns(columns: Any, keys: list[tuple[int, ...]], path: Path) -> Iterator[tuple[int, list[Any]]]:
    """(records so far, per key one numpy int64 array of each record's 64-bit hash of its values) per batch:
    DuckDB's ``hash`` over the Arrow columns as the reader gives them, streamed."""
    import duckdb
    import numpy as np
    import pyarrow as pa

    positions = sorted({p for key in keys for p in key})
    schema = pa.schema([(f"c{p}", pa.string()) for p in positions])
    reader = pa.RecordBatchReader.from_batches(
        schema, (pa.RecordBatch.from_arrays(arrays, schema=schema) for arrays in columns(positions)))
    hashes = ", ".join(f"hash({', '.join(f'c{p}' for p in key)})" for key in keys)
    con = duckdb_connection()
    count = 0
    try:
        con.register("records", reader)
        for batch in con.sql(f"SELECT {hashes} FROM records").to_arrow_reader(1 << 17):
            count += batch.num_rows
            yield count, [column.to_numpy().view(np.int64) for column in batch.columns]
    except (duckdb.Error, NativeUnfit) as exc:  # the file changed since the first pass
        raise InferError(f"{path}: cannot be read to the end ({(str(exc).splitlines() or [''])[0]})") from None
    finally:
        con.close()


def _parquet_repeats(path: Path, candidates: list[list[Field]]) -> dict[tuple[str, ...], int]:
    import duckdb

    source = f"read_parquet('{sql_text(str(path))}')"
    con = duckdb_connection()
    try:
        out = {}
        for candidate in candidates:
            columns = ", ".join(sql_name(f.source) for f in candidate)
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
    checked = ", ".join("[" + ", ".join(names) + f"] repeats {n:,}" for names, n in list(repeats.items())[:KEYS_NOTED])
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
    size = sample.stat().st_size
    with sample.open("rb") as handle:
        head = handle.read(4)
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
