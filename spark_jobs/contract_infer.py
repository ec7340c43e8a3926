"""``python -m spark_jobs contract infer --from FILE``: draft a dataset contract from a sample file, to edit.

Reads a CSV (gzip too), Parquet or JSON sample (up to ``--sample-rows`` records, default 10000) and writes
a contract YAML that ``load_contract`` accepts as it is:

- landing: the format; for CSV the delimiter (sniffed among ``, ; TAB |``), the header, the encoding
  (UTF-8, else ISO-8859-1) and the null texts met in the sample (``""`` plus any of ``NA``, ``N/A``,
  ``null``, ``NULL``, ``None``, ``NaN``, ``nan``, ``-`` that stands in a column whose other values are
  numbers, dates or booleans);
- schema: per field a column with a snake_case ``name`` (and ``source``: the field's own name when it
  differs), a type (``boolean``, ``int``, ``long``, ``double``, ``timestamp``/``date`` with the Spark
  pattern that parses every sampled value, else ``string``), ``required`` when no sampled value is
  missing, and the observed range as a comment;
- event_time: the first timestamp column (names with time/date/ts first); or, for a date column plus
  a time-of-day column, a ``computed`` timestamp joining them; without either a placeholder that
  stops silver with "edit the contract" until it is replaced. ``lateness_minutes`` covers the sample's
  time span (a bulk export is not late data);
- key: a column unique and never missing in the sample (ids first, then the event time), else a unique
  pair, else every column; the other candidates as a comment;
- gold: ``period_summary`` (hourly or daily, by the event-time resolution) over the numeric columns.

Everything inferred from a sample is a guess about the whole dataset: read the draft, then edit it.
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
from pathlib import Path
from typing import Any

from spark_jobs.contract import DATASET_NAME_RE, LandingSpec
from spark_jobs.landing_files import GZIP_MAGIC, PARQUET_MAGIC, csv_reader, decompressed_chunks, file_digest

DEFAULT_SAMPLE_ROWS = 10_000
NULL_TOKENS = ("NA", "N/A", "null", "NULL", "None", "NaN", "nan", "-")
DELIMITERS = (",", ";", "\t", "|")
BOOLEANS = ("true", "false")
INT_MAX = 2 ** 31 - 1
# (Python strptime pattern, Spark pattern, has a time of day)
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
TIME_OF_DAY_PATTERNS = (("%H:%M:%S", "HH:mm:ss"), ("%H:%M", "HH:mm"))
PARQUET_TIMESTAMP_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'"  # how bronze writes Parquet timestamps
NUMERIC = ("int", "long", "double")


class InferError(ValueError):
    """The sample cannot be read; one line."""


@dataclasses.dataclass
class Field:
    """One landing field of the sample: its name and its values (None = missing) as the pipeline sees them."""

    source: str
    values: list[Any]
    declared: str | None = None   # Parquet: the type the file declares
    col_type: str = "string"
    fmt: str | None = None
    has_time: bool = False
    name: str = ""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="sample", required=True, metavar="FILE", help="a sample landing file")
    parser.add_argument("--dataset", default="", help="dataset name (default: from the file name)")
    parser.add_argument("--format", choices=["csv", "parquet", "json_array", "json_lines"], default=None,
                        help="landing format (default: from the name and content)")
    parser.add_argument("--delimiter", default=None, help="CSV delimiter (default: sniffed); 'tab' for a tab")
    parser.add_argument("--sample-rows", type=int, default=DEFAULT_SAMPLE_ROWS,
                        help=f"records read from the sample (default: {DEFAULT_SAMPLE_ROWS})")
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
    """(text, encoding): UTF-8 when the bytes decode as such, else ISO-8859-1; at most ``limit`` bytes."""
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


def sample_csv(path: Path, is_gzip: bool, rows: int, delimiter: str | None) -> tuple[list[Field], LandingSpec]:
    text, encoding = _read_text(path, is_gzip, limit=64 << 20)
    lines = [ln for ln in text.lstrip("\ufeff").splitlines() if ln.strip()][:50]
    if not lines:
        raise InferError(f"{path}: no records to infer from")
    if delimiter is None:
        delimiter = max(DELIMITERS, key=lambda d: (_consistent_count(lines, d), d == ","))
    landing = LandingSpec(format="csv", delimiter=delimiter, encoding=encoding)
    records = [r for r in itertools.islice(csv_reader(text, landing), rows + 1) if any(c.strip() for c in r)]
    first, rest = records[0], records[1:]
    header = bool(rest) and _looks_like_header(first, rest)
    names = first if header else [f"field_{i + 1}" for i in range(len(first))]
    data = rest if header else records
    width = len(names)
    columns = [[row[i] if i < len(row) else None for row in data if len(row) == width] for i in range(width)]
    tokens = _null_tokens(columns)
    fields = [Field(source=name, values=[None if v is None or v in tokens or v == "" else v for v in values])
              for name, values in zip(names, columns)]
    return fields, dataclasses.replace(landing, header=header, null_values=("", *sorted(tokens)))


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


def _null_tokens(columns: list[list[str | None]]) -> set[str]:
    found = set()
    for values in columns:
        present = {v for v in values if v is not None}
        for token in NULL_TOKENS:
            if token in present:
                others = [v for v in present if v != token and v not in NULL_TOKENS and v != ""]
                if others and all(_is_number(v) or v.lower() in BOOLEANS or _time_pattern([v]) for v in others):
                    found.add(token)
    return found


def _is_number(text: str) -> bool:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return False
    return math.isfinite(value) or text.strip().lower() in ("nan", "inf", "-inf")


def _time_pattern(values: list[str]) -> tuple[str, str, bool] | None:
    for py, spark, has_time in TIMESTAMP_PATTERNS:
        try:
            for v in values:
                dt.datetime.strptime(v.strip(), py)
        except ValueError:
            continue
        return py, spark, has_time
    return None


def sample_parquet(path: Path, rows: int) -> list[Field]:
    import duckdb

    con = duckdb.connect()
    try:
        relation = con.sql(f"SELECT * FROM read_parquet('{_sql_text(str(path))}') LIMIT {int(rows)}")
        names, types = relation.columns, [str(t) for t in relation.types]
        data = relation.fetchall()
    except duckdb.Error as exc:
        raise InferError(f"{path}: not a readable Parquet file ({(str(exc).splitlines() or [''])[0]})") from None
    finally:
        con.close()
    return [Field(source=name, values=[row[i] for row in data], declared=col_type)
            for i, (name, col_type) in enumerate(zip(names, types))]


def _sql_text(text: str) -> str:
    return text.replace("'", "''")


def sample_json(path: Path, is_gzip: bool, rows: int, landing_format: str) -> list[Field]:
    text, _ = _read_text(path, is_gzip)
    try:
        if landing_format == "json_array":
            records = json.loads(text)[:rows]
        else:
            records = [json.loads(ln) for ln in itertools.islice((ln for ln in text.splitlines() if ln.strip()), rows)]
    except (ValueError, TypeError) as exc:
        raise InferError(f"{path}: not {landing_format} ({exc})") from None
    records = [r for r in records if isinstance(r, dict)]
    names = list(dict.fromkeys(k for r in records for k in r))

    def as_text(value: Any) -> Any:
        if value is None or isinstance(value, (bool, int, float)):
            return value
        return value if isinstance(value, str) else json.dumps(value)

    return [Field(source=name, values=[as_text(r.get(name)) for r in records]) for name in names]


def infer_types(fields: list[Field]) -> None:
    for field in fields:
        present = [v for v in field.values if v is not None]
        if field.declared is not None:
            field.col_type, field.fmt, field.has_time = _parquet_type(field.declared, present)
            continue
        if all(isinstance(v, bool) for v in present) and present:
            field.col_type = "boolean"
            continue
        texts = [str(v).strip() for v in present]
        if not texts:
            field.col_type = "string"
        elif all(t.lower() in BOOLEANS for t in texts):
            field.col_type = "boolean"
        elif all(re.fullmatch(r"[-+]?[0-9]+", t) for t in texts):
            field.col_type = "int" if all(abs(int(t)) <= INT_MAX for t in texts) else "long"
        elif all(_is_number(t) for t in texts):
            field.col_type = "double"
        else:
            pattern = _time_pattern(texts)
            if pattern:
                field.col_type = "timestamp" if pattern[2] else "date"
                field.fmt, field.has_time = pattern[1], pattern[2]


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


def _parsed_times(field: Field) -> list[dt.datetime]:
    out = []
    for v in field.values:
        if v is None:
            continue
        if isinstance(v, dt.datetime):
            out.append(v.replace(tzinfo=None))
        elif isinstance(v, dt.date):
            out.append(dt.datetime(v.year, v.month, v.day))
        else:
            py = next(p for p, s, _ in TIMESTAMP_PATTERNS if s == field.fmt)
            out.append(dt.datetime.strptime(str(v).strip(), py))
    return out


@dataclasses.dataclass
class EventTime:
    name: str
    computed: str | None = None
    fmt: str | None = None
    span_minutes: int = 0
    hourly: bool = False


def choose_event_time(fields: list[Field]) -> EventTime | None:
    def rank(field: Field) -> tuple[int, int]:
        return (0 if re.search(r"time|date|ts|_at$|^at$|when", field.name) else 1, fields.index(field))

    timestamps = sorted([f for f in fields if f.col_type == "timestamp"], key=rank)
    if timestamps:
        chosen = timestamps[0]
        times = _parsed_times(chosen)
        return EventTime(chosen.name, span_minutes=_span(times), hourly=chosen.has_time)
    dates = sorted([f for f in fields if f.col_type == "date"], key=rank)
    times_of_day = [f for f in fields if f.col_type == "string" and _time_of_day(f)]
    if dates and times_of_day:
        date, clock = dates[0], times_of_day[0]
        clock_spark = _time_of_day(clock)
        name = "event_time" if "event_time" not in {f.name for f in fields} else "event_time_2"
        pairs = [(d, t) for d, t in zip(date.values, clock.values) if d is not None and t is not None]
        py_date = next(p for p, s, _ in TIMESTAMP_PATTERNS if s == date.fmt)
        py_clock = next(p for p, s in TIME_OF_DAY_PATTERNS if s == clock_spark)
        times = [dt.datetime.strptime(f"{str(d).strip()} {str(t).strip()}", f"{py_date} {py_clock}") for d, t in pairs]
        return EventTime(name, computed=f"concat({date.name}, ' ', {clock.name})", fmt=f"{date.fmt} {clock_spark}",
                         span_minutes=_span(times), hourly=True)
    if dates:
        chosen = dates[0]
        chosen.col_type = "timestamp"  # a date as the event time: a timestamp at midnight
        return EventTime(chosen.name, span_minutes=_span(_parsed_times(chosen)))
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


def _span(times: list[dt.datetime]) -> int:
    return math.ceil((max(times) - min(times)).total_seconds() / 60) if times else 0


def key_candidates(fields: list[Field], event: EventTime | None) -> list[list[str]]:
    rows = len(fields[0].values) if fields else 0
    usable = [f for f in fields if f.col_type in ("string", "int", "long", "timestamp", "date", "boolean")]

    def unique(columns: list[Field]) -> bool:
        tuples = list(zip(*[f.values for f in columns]))
        return all(None not in t for t in tuples) and len(set(tuples)) == rows

    def rank(field: Field) -> tuple[int, int]:
        is_id = bool(re.search(r"(^|_)(id|key|uuid)$", field.name))
        is_event = event is not None and field.name == event.name
        return (0 if is_id else 1 if is_event else 2, fields.index(field))

    singles = [[f.name] for f in sorted(usable, key=rank) if unique([f])]
    if event is not None and event.computed and rows:
        parts = [f for f in fields if f.name in re.findall(r"[a-z_][a-z0-9_]*", event.computed)]
        if len(parts) == 2 and unique(parts):
            singles.append([event.name])
    if singles:
        return singles
    pairs = [[a.name, b.name] for a, b in itertools.combinations(sorted(usable, key=rank)[:10], 2) if unique([a, b])]
    return pairs or [[f.name for f in fields]]


def _yaml(value: Any) -> str:
    """A YAML flow scalar (JSON strings are valid YAML)."""
    return json.dumps(value)


def draft(dataset: str, landing: LandingSpec, fields: list[Field], sample: Path, rows: int) -> str:
    infer_types(fields)
    snake_names(fields)
    event = choose_event_time(fields)
    keys = key_candidates(fields, event)
    lines = [
        f"# Draft contract inferred from {sample.name} ({rows} sampled records) by `python -m spark_jobs contract infer`.",
        "# Every line is a guess from a sample: check the types, `required`, the key and the event time, then",
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
    lines.append(f"key: [{', '.join(keys[0])}]")
    if len(keys) > 1:
        lines.append("# other key candidates (unique in the sample): " + "; ".join(", ".join(k) for k in keys[1:6]))
    if event is None:
        lines += ["# TODO: no date or time column was found: replace `computed` below with a Spark SQL expression",
                  "# giving each record's event time as text in the `format` (e.g. concat('1973-', month, '-', day)).",
                  "event_time: event_time"]
    else:
        lines.append(f"event_time: {event.name}")
        if event.span_minutes > 30:
            lines.append(f"lateness_minutes: {event.span_minutes}   # the sample spans this much event time: "
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
    measures = [f.name for f in fields if f.col_type in NUMERIC and f.name not in keys[0]]
    if measures and event is not None:
        lines += ["gold: [period_summary]", "gold_options:",
                  f"  period_summary: {{period: {'hour' if event.hourly else 'day'}, measures: [{', '.join(measures)}]"
                  f", event_time: {event.name}}}"]
    return "\n".join(lines) + "\n"


def _column_yaml(field: Field, event: EventTime | None) -> str:
    parts = [f"name: {field.name}"]
    if field.source != field.name:
        parts.append(f"source: {_yaml(field.source)}")
    parts.append(f"type: {field.col_type}")
    present = [v for v in field.values if v is not None]
    if present and len(present) == len(field.values) or (event is not None and field.name == event.name):
        parts.append("required: true")
    if field.fmt and field.col_type in ("timestamp", "date"):
        parts.append(f"format: {_yaml(field.fmt)}")
    note = ""
    if field.col_type in NUMERIC and present:
        numbers = [float(v) for v in present if _is_number(str(v))]
        if numbers:
            note = f"   # sample: {_num(min(numbers))} to {_num(max(numbers))}"
    missing = len(field.values) - len(present)
    if missing:
        note += f"{'; ' if note else '   # '}{missing} missing"
    return "{" + ", ".join(parts) + "}" + note


def _num(value: float) -> str:
    return str(int(value)) if value.is_integer() else f"{value:g}"


def infer(sample: Path, dataset: str = "", landing_format: str | None = None, delimiter: str | None = None,
          rows: int = DEFAULT_SAMPLE_ROWS) -> str:
    """The draft contract YAML for a sample file (see the module docstring)."""
    if not sample.is_file():
        raise InferError(f"{sample}: no such file")
    _, size, head = file_digest(sample)
    if size == 0:
        raise InferError(f"{sample}: the file is empty")
    is_gzip = head[:2] == GZIP_MAGIC
    landing_format = landing_format or detect_format(sample, head)
    dataset = dataset or re.sub(r"^[^a-z]+", "", re.sub(r"[^a-z0-9_]+", "_", sample.name.lower().split(".")[0])).strip("_")
    if not re.match(DATASET_NAME_RE, dataset):
        raise InferError(f"dataset name '{dataset}' must match {DATASET_NAME_RE}; pass --dataset NAME")
    if landing_format == "csv":
        fields, landing = sample_csv(sample, is_gzip, rows, delimiter)
    elif landing_format == "parquet":
        fields, landing = sample_parquet(sample, rows), LandingSpec(format="parquet")
    else:
        fields, landing = sample_json(sample, is_gzip, rows, landing_format), LandingSpec(format=landing_format)
    if not fields or not fields[0].values:
        raise InferError(f"{sample}: no records to infer from")
    return draft(dataset, landing, fields, sample, len(fields[0].values))


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
