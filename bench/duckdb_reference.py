"""DuckDB reference for the pipeline benchmark: the silver and gold work of a dataset in SQL.

The silver SQL is generated from the dataset contract (``spark_jobs/contracts/<dataset>.yaml``) with
the same semantics as ``spark_jobs/transforms/silver.py``, so a rule changes in one place:

- every schema field is read from ``_raw`` as text, then typed (blank text is missing; a value that
  does not cast is null and fails ``<col>_type``); strings are trimmed and case-normalised;
- ``_failed_rules`` lists the broken rules (``<col>_required|_type|_range|_allowed|_regex``,
  ``unknown_fields``, each explicit rule); a malformed record fails only ``malformed_record``;
- valid rows are deduped on the contract key: the latest ``_ingested_at`` wins, ties broken by
  ``_batch_id``, ``_source_file``, ``_record_index`` (all descending);
- ``_is_late``: the event time trails the newest event time of its landing file by more than
  ``lateness_minutes``.

The gold SQL mirrors each ``spark_jobs/transforms/gold/<name>.py``; its parameters (normal ranges,
session gap) come from the contract's ``gold_options``. ``compare_*`` check that our Spark outputs and
the reference agree (row counts, quarantine per rule, a silver content checksum, gold values with a
float tolerance), so a faster wrong answer cannot count.
"""
from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path
from typing import Any

import duckdb

from spark_jobs.contract.model import Contract, load_contract
from spark_jobs.contract.parts import ColumnSpec, MALFORMED_RULE, UNKNOWN_FIELDS_RULE
from spark_jobs.lake.config import gold_table_name
from spark_jobs.transforms.silver import LINEAGE_COLUMNS, RAW_PREFIX
from spark_jobs.transforms.typed_text import INTEGER_TEXT  # silver's own pattern

FLOAT_TOLERANCE = 1e-9  # relative; gold averages are sums in a different order, so not bit-equal
_DUCK_TYPES = {"int": "INTEGER", "long": "BIGINT", "double": "DOUBLE"}


class ReferenceError(RuntimeError):
    """The reference cannot express something in a contract (a new type, a gold without SQL)."""


def connect(threads: int | None = None) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")  # Spark's session time zone (spark_jobs/runs/session.py)
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    return con


# ---------------------------------------------------------------------------- SQL from the contract
def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def _num(value: float) -> str:
    return repr(float(value))


def strftime_pattern(java_pattern: str) -> str:
    """A Spark (java.time) datetime pattern as a DuckDB strptime format: the subset contracts use."""
    tokens = {"yyyy": "%Y", "MM": "%m", "dd": "%d", "HH": "%H", "mm": "%M", "ss": "%S", "SSS": "%g"}
    out, i = [], 0
    while i < len(java_pattern):
        if java_pattern[i] == "'":
            end = java_pattern.index("'", i + 1)
            out.append(java_pattern[i + 1:end].replace("%", "%%") or "'")
            i = end + 1
            continue
        for token, fmt in tokens.items():
            if java_pattern.startswith(token, i):
                out.append(fmt)
                i += len(token)
                break
        else:
            if java_pattern[i].isalpha():
                raise ReferenceError(f"datetime pattern '{java_pattern}': letter '{java_pattern[i]}' has no DuckDB equivalent here")
            out.append(java_pattern[i].replace("%", "%%"))
            i += 1
    return "".join(out)


def _raw(col: ColumnSpec) -> str:
    return _ident(f"{RAW_PREFIX}{col.name}")


def typed_sql(col: ColumnSpec) -> str:
    """The contract-typed value of ``col`` from its raw text, null when it does not cast."""
    raw = _raw(col)
    if col.type == "string":
        text = {"lower": f"lower(trim({raw}))", "upper": f"upper(trim({raw}))"}.get(col.case or "", f"trim({raw})")
        return f"CASE WHEN trim({raw}) <> '' THEN {text} END"
    if col.type in ("int", "long"):
        return f"CASE WHEN regexp_matches({raw}, {_lit(INTEGER_TEXT)}) THEN TRY_CAST(trim({raw}) AS {_DUCK_TYPES[col.type]}) END"
    if col.type == "double":
        return f"TRY_CAST(trim({raw}) AS DOUBLE)"
    if col.type == "boolean":
        return f"CASE WHEN lower(trim({raw})) IN ('true', 'false') THEN lower(trim({raw})) = 'true' END"
    if col.type == "timestamp":
        return f"try_strptime(trim({raw}), {_lit(strftime_pattern(col.format or ''))})"
    if col.type == "date":
        return f"CAST(try_strptime(trim({raw}), {_lit(strftime_pattern(col.format or 'yyyy-MM-dd'))}) AS DATE)"
    raise ReferenceError(f"column {col.name}: type {col.type} has no DuckDB reference")


def column_failures_sql(col: ColumnSpec) -> list[tuple[str, str]]:
    """(rule name, failed condition) per column, as ``spark_jobs.transforms.silver._column_failures``."""
    raw, typed = _raw(col), _ident(col.name)
    is_missing = f"({raw} IS NULL OR trim({raw}) = '')"
    failures = []
    if col.required:
        failures.append((f"{col.name}_required", is_missing))
    if col.type != "string":
        failures.append((f"{col.name}_type", f"(NOT {is_missing} AND {typed} IS NULL)"))
    if col.min is not None or col.max is not None:
        below = f"{typed} < {_num(col.min)}" if col.min is not None else "false"
        above = f"{typed} > {_num(col.max)}" if col.max is not None else "false"
        failures.append((f"{col.name}_range", f"({typed} IS NOT NULL AND ({below} OR {above}))"))
    if col.allowed is not None:
        allowed = ", ".join(_lit(v) for v in col.allowed)
        failures.append((f"{col.name}_allowed", f"({typed} IS NOT NULL AND {typed} NOT IN ({allowed}))"))
    if col.regex is not None:
        failures.append((f"{col.name}_regex", f"({typed} IS NOT NULL AND NOT regexp_matches({typed}, {_lit(col.regex)}))"))
    return failures


def spark_sql_to_duckdb(expr: str) -> str:
    """A contract rule (Spark SQL) as DuckDB SQL: the subset contracts use differs only in quoting names."""
    return re.sub(r"`([^`]*)`", lambda m: _ident(m.group(1)), expr)


def failure_conditions(contract: Contract) -> list[tuple[str, str]]:
    failures: list[tuple[str, str]] = []
    for col in contract.schema:
        failures += column_failures_sql(col)
    if not contract.allow_extra_fields:
        failures.append((UNKNOWN_FIELDS_RULE, "(len(_unknown_fields) > 0)"))
    for rule in contract.rules:  # Spark SQL booleans; with `quoted` names as "quoted" they are DuckDB SQL too
        failures.append((rule.name, f"(NOT coalesce(({spark_sql_to_duckdb(rule.expr)}), true))"))
    return failures


def flagged_sql(contract: Contract, bronze: str) -> str:
    """SELECT over the bronze relation ``bronze``: lineage, raw texts, typed columns, ``_failed_rules``."""
    known = "[" + ", ".join(_lit(n) for n in contract.column_names) + "]"
    # _json: the record when it parses (else null), so no JSON function ever sees unparseable text.
    # Well-formed as in spark_jobs.transforms.bronze.is_json_object: one strict JSON object, starting
    # with "{", and no U+FFFD (an invalid UTF-8 byte decoded).
    is_object = ("coalesce(json_type(_json) = 'OBJECT' AND regexp_matches(_raw, '^\\s*\\{') "
                 "AND NOT contains(_raw, '\ufffd'), false)")
    raw_fields = ",\n        ".join(
        f"CASE WHEN _is_object THEN json_extract_string(_json, {_lit('$.' + _ident(n))}) END AS {_ident(RAW_PREFIX + n)}"
        for n in contract.column_names
    )
    typed = ",\n        ".join(f"{typed_sql(col)} AS {_ident(col.name)}" for col in contract.schema)
    checks = ",\n            ".join(
        f"CASE WHEN coalesce({cond}, false) THEN {_lit(name)} END" for name, cond in failure_conditions(contract)
    )
    lineage = ", ".join(LINEAGE_COLUMNS)
    return f"""
WITH checked AS (
    SELECT _raw, {lineage}, _json, coalesce(_is_malformed, false) OR NOT {is_object} AS _is_malformed,
        {is_object} AS _is_object
    FROM (SELECT *, CASE WHEN json_valid(_raw) THEN _raw END AS _json FROM {bronze})
), texts AS (
    SELECT _raw, {lineage}, _is_malformed,
        CASE WHEN _is_object THEN list_filter(json_keys(_json), lambda k: NOT list_contains({known}, k))
             ELSE []::VARCHAR[] END AS _unknown_fields,
        {raw_fields}
    FROM checked
), typed AS (
    SELECT *,
        {typed}
    FROM texts
)
SELECT *,
    CASE WHEN _is_malformed THEN [{_lit(MALFORMED_RULE)}]
         ELSE list_filter([
            {checks}
         ], lambda r: r IS NOT NULL) END AS _failed_rules
FROM typed
"""


def silver_select_sql(contract: Contract, valid: str) -> str:
    """Dedupe (latest wins), late flag and the silver columns, over the relation of valid rows."""
    if contract.derived:
        raise ReferenceError(f"{contract.dataset}: derived columns (Spark SQL) have no DuckDB reference yet")
    key = ", ".join(_ident(k) for k in contract.key)
    event = _ident(contract.event_time)
    columns = ", ".join(_ident(n) for n in contract.column_names)
    lineage = ", ".join(LINEAGE_COLUMNS)
    return f"""
WITH deduped AS (
    SELECT * FROM {valid}
    QUALIFY row_number() OVER (PARTITION BY {key}
        ORDER BY _ingested_at DESC, _batch_id DESC, _source_file DESC, _record_index DESC) = 1
)
SELECT {columns}, CAST({event} AS DATE) AS event_date,
    {event} < max({event}) OVER (PARTITION BY _source_file) - INTERVAL {int(contract.lateness_minutes)} MINUTE AS _is_late,
    {lineage}
FROM deduped
"""


# ---------------------------------------------------------------------------- gold SQL per transformation
def _outside_sql(metric: str, bounds: list[float] | None) -> str:
    if not bounds:
        return "0"
    low, high = bounds
    return f"CASE WHEN {metric} IS NOT NULL AND ({metric} < {_num(low)} OR {metric} > {_num(high)}) THEN 1 ELSE 0 END"


def _gold_iot_hourly(silver: str, options: dict[str, Any]) -> str:
    ranges = options.get("normal_ranges", {})
    return f"""
SELECT CAST(date_trunc('hour', event_ts) AS DATE) AS event_date, date_trunc('hour', event_ts) AS event_hour, sensor_id,
    count(*) AS reading_count,
    min(temperature) AS temperature_min, avg(temperature) AS temperature_avg, max(temperature) AS temperature_max,
    min(humidity) AS humidity_min, avg(humidity) AS humidity_avg, max(humidity) AS humidity_max,
    min(battery) AS battery_min,
    sum({_outside_sql('temperature', ranges.get('temperature'))})::BIGINT AS temperature_out_of_range,
    sum({_outside_sql('humidity', ranges.get('humidity'))})::BIGINT AS humidity_out_of_range
FROM {silver}
GROUP BY sensor_id, date_trunc('hour', event_ts)
"""


def _gold_clickstream_site_hourly(silver: str, options: dict[str, Any]) -> str:
    return f"""
SELECT CAST(date_trunc('hour', "timestamp") AS DATE) AS event_date, date_trunc('hour', "timestamp") AS event_hour, site_id,
    sum(CASE WHEN event = 'page_view' THEN 1 ELSE 0 END)::BIGINT AS page_views,
    count(DISTINCT user_id) AS users,
    count(*) AS event_count
FROM {silver}
GROUP BY site_id, date_trunc('hour', "timestamp")
"""


def _gold_clickstream_user_sessions(silver: str, options: dict[str, Any]) -> str:
    from spark_jobs.transforms.gold.clickstream_user_sessions import DEFAULT_SESSION_GAP_MINUTES

    gap_seconds = 60 * int(options.get("session_gap_minutes", DEFAULT_SESSION_GAP_MINUTES))
    # One ordering for both windows (tied timestamps never start a session, so the tiebreak only keeps
    # lag and the running sum consistent; Spark evaluates both over one sort).
    order = 'ORDER BY "timestamp", site_id, event, url'
    return f"""
WITH gaps AS (
    SELECT user_id, site_id, event, "timestamp", url,
        epoch("timestamp") - epoch(lag("timestamp") OVER (PARTITION BY user_id {order})) AS gap
    FROM {silver}
), numbered AS (
    SELECT *, sum(CASE WHEN gap IS NULL OR gap > {gap_seconds} THEN 1 ELSE 0 END)
        OVER (PARTITION BY user_id {order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS session_number
    FROM gaps
), sessions AS (
    SELECT user_id, session_number, min("timestamp") AS session_start, max("timestamp") AS session_end,
        count(*) AS event_count, sum(CASE WHEN event = 'page_view' THEN 1 ELSE 0 END)::BIGINT AS page_views,
        count(DISTINCT site_id) AS sites
    FROM numbered GROUP BY user_id, session_number
)
SELECT CAST(session_start AS DATE) AS event_date, user_id,
    user_id || '-' || strftime(session_start, '%Y%m%dT%H%M%S') AS session_id,
    session_start, session_end, (epoch(session_end) - epoch(session_start))::BIGINT AS duration_seconds,
    event_count, page_views, sites
FROM sessions
"""


def _gold_period_summary(silver: str, options: dict[str, Any]) -> str:
    """``spark_jobs/transforms/gold/period_summary.py`` (``period: day`` or ``hour``, no ``group_by``)."""
    if options.get("group_by"):
        raise ReferenceError("gold period_summary: group_by has no DuckDB reference yet")
    period = options.get("period", "day")
    if period == "day":
        start = "CAST(event_date AS TIMESTAMP)"
    else:
        event = options.get("event_time")
        if not event:
            raise ReferenceError("gold period_summary by hour: name its event_time in gold_options for the reference")
        start = f"date_trunc('hour', {_ident(event)})"
    measures = list(options.get("measures") or [])
    stats = ",\n    ".join(f"count({_ident(m)}) AS {_ident(m + '_count')}, min({_ident(m)}) AS {_ident(m + '_min')}, "
                          f"avg({_ident(m)}) AS {_ident(m + '_avg')}, max({_ident(m)}) AS {_ident(m + '_max')}"
                          for m in measures)
    return f"""
SELECT event_date, {start} AS period_start, count(*) AS row_count,
    {stats}
FROM {silver}
GROUP BY event_date, {start}
"""


@dataclasses.dataclass(frozen=True)
class GoldReference:
    """A gold transformation in SQL, and how to compare its output: key columns and value columns."""

    sql: Any
    keys: tuple[str, ...]
    values: tuple[str, ...]


GOLD: dict[str, GoldReference] = {
    "iot_hourly": GoldReference(
        _gold_iot_hourly, ("sensor_id", "event_hour"),
        ("event_date", "reading_count", "temperature_min", "temperature_avg", "temperature_max", "humidity_min",
         "humidity_avg", "humidity_max", "battery_min", "temperature_out_of_range", "humidity_out_of_range")),
    "clickstream_site_hourly": GoldReference(
        _gold_clickstream_site_hourly, ("site_id", "event_hour"), ("event_date", "page_views", "users", "event_count")),
    "clickstream_user_sessions": GoldReference(
        _gold_clickstream_user_sessions, ("session_id",),
        ("event_date", "user_id", "session_start", "session_end", "duration_seconds", "event_count", "page_views",
         "sites")),
}


def gold_reference(name: str, options: dict[str, Any] | None = None) -> GoldReference:
    if name == "period_summary":  # its value columns follow the contract's measures
        measures = list((options or {}).get("measures") or [])
        return GoldReference(_gold_period_summary, ("period_start",),
                             ("event_date", "row_count", *[f"{m}_{stat}" for m in measures
                                                             for stat in ("count", "min", "avg", "max")]))
    if name not in GOLD:
        raise ReferenceError(f"gold transformation '{name}' has no DuckDB reference in bench/duckdb_reference.py")
    return GOLD[name]


# ---------------------------------------------------------------------------- running the layers
def _parquet(path: str | Path) -> str:
    return f"read_parquet({_lit(str(path) + '/**/*.parquet')}, hive_partitioning = true)"


def _relation(path: str | Path) -> str:
    """Our output at ``path``: an Iceberg table (silver, gold) as the files of its current snapshot (a glob
    would also read files only older snapshots reference), or a partitioned Parquet folder (quarantine,
    the reference's own outputs)."""
    if (Path(path) / "metadata").is_dir():
        from spark_jobs.io.iceberg_files import duckdb_source

        return duckdb_source(Path(path))
    return _parquet(path)


def _copy(con: duckdb.DuckDBPyConnection, relation: str, partition_by: str | None, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    options = "FORMAT PARQUET, OVERWRITE_OR_IGNORE true" + (f", PARTITION_BY ({partition_by})" if partition_by else "")
    con.execute(f"COPY ({relation}) TO {_lit(str(out))} ({options})")


def run_silver(con: duckdb.DuckDBPyConnection, contract: Contract, bronze_dir: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """bronze parquet -> ``out_dir/silver`` and ``out_dir/quarantine`` (parquet by event_date); returns counts."""
    out = Path(out_dir)
    started = time.perf_counter()
    con.execute(f"CREATE OR REPLACE TEMP TABLE flagged AS {flagged_sql(contract, _parquet(bronze_dir))}")
    return _finish_silver(con, contract, out, started)


def _partitioned(contract: Contract, relation: str) -> tuple[str, str]:
    """(``relation`` with the column it is partitioned by, that column): ``event_date``, or at the contract's
    ``partition_granularity: month`` also ``event_month`` (``YYYY-MM``), as our silver, gold and quarantine are."""
    if contract.partition_granularity != "month":
        return relation, "event_date"
    return f"SELECT *, strftime(event_date, '%Y-%m') AS event_month FROM ({relation})", "event_month"


def _finish_silver(con: duckdb.DuckDBPyConnection, contract: Contract, out: Path, started: float) -> dict[str, Any]:
    """From the ``flagged`` table: silver (valid rows deduped, late flag) and quarantine, written; counts."""
    con.execute("CREATE OR REPLACE TEMP VIEW valid AS SELECT * FROM flagged WHERE len(_failed_rules) = 0")
    con.execute(f"CREATE OR REPLACE TEMP TABLE silver AS {silver_select_sql(contract, 'valid')}")
    _copy(con, *_partitioned(contract, "SELECT * FROM silver"), out / "silver")
    event = _ident(contract.event_time)
    quarantine = (f"SELECT _raw, _failed_rules, _source_file, _batch_id, _record_index, _ingested_at, "
                  f"CAST({event} AS DATE) AS event_date FROM flagged WHERE len(_failed_rules) > 0")
    _copy(con, *_partitioned(contract, quarantine), out / "quarantine")
    wall = time.perf_counter() - started
    counts = con.execute("""
        SELECT (SELECT count(*) FROM flagged), (SELECT count(*) FROM valid), (SELECT count(*) FROM silver),
               (SELECT count(*) FROM flagged WHERE len(_failed_rules) > 0), (SELECT count(*) FROM silver WHERE _is_late)
    """).fetchone()
    rows_in, valid, rows_out, quarantined, late = (int(v) for v in counts)
    by_rule = dict(con.execute(
        "SELECT r, count(*) FROM (SELECT unnest(_failed_rules) AS r FROM flagged) GROUP BY r ORDER BY r").fetchall())
    for table in ("silver", "flagged"):
        con.execute(f"DROP TABLE IF EXISTS {table}")
    return {"wall_s": wall, "rows_in": rows_in, "rows_out": rows_out, "quarantined": quarantined,
            "duplicates": valid - rows_out, "late": late, "quarantine_by_rule": by_rule}


def landing_file_sql(contract: Contract, path: str | Path) -> str:
    """One landing file (CSV with the contract's dialect, or JSON lines) as a relation of every landing
    field's text (``__raw__<column>``), plus the lineage silver's dedupe and late flag need. DuckDB reads
    it as it is (a ``.gz`` decompressed): this is DuckDB doing bronze's reading and silver's parsing."""
    landing = contract.landing
    plain = [col for col in contract.schema if col.landing_name is not None]
    if contract.derived or any(col.computed for col in contract.schema):
        raise ReferenceError(f"{contract.dataset}: computed or derived columns have no file reference yet")
    if landing.format == "csv":
        nulls = "[" + ", ".join(_lit(v) for v in landing.null_values) + "]"
        source = (f"read_csv({_lit(str(path))}, header = {str(landing.header).lower()}, all_varchar = true, "
                  f"delim = {_lit(landing.delimiter)}, quote = {_lit(landing.quote)}, escape = {_lit(landing.escape)}, "
                  f"nullstr = {nulls}, strict_mode = true"
                  + ("" if landing.header else ", columns = {" + ", ".join(f"{_lit(c.landing_name)}: 'VARCHAR'" for c in plain) + "}")
                  + ")")
    elif landing.format == "json_lines":
        columns = ", ".join(f"{_lit(c.landing_name)}: 'VARCHAR'" for c in plain)
        source = f"read_json({_lit(str(path))}, format = 'newline_delimited', columns = {{{columns}}})"
    else:
        raise ReferenceError(f"{contract.dataset}: landing format {landing.format} has no file reference")
    texts = ", ".join(f"{_ident(c.landing_name)} AS {_ident(RAW_PREFIX + c.name)}" for c in plain)
    return (f"SELECT NULL::VARCHAR AS _raw, current_timestamp::TIMESTAMP AS _ingested_at, {_lit(str(path))} AS _source_file, "
            f"0::BIGINT AS _batch_id, 0::INTEGER AS _record_index, false AS _is_malformed, []::VARCHAR[] AS _unknown_fields, "
            f"{texts} FROM {source}")


def flagged_from_file_sql(contract: Contract, path: str | Path) -> str:
    """As ``flagged_sql``, from a landing file (``landing_file_sql``): typed columns and ``_failed_rules``."""
    typed = ",\n        ".join(f"{typed_sql(col)} AS {_ident(col.name)}" for col in contract.schema)
    checks = ",\n            ".join(
        f"CASE WHEN coalesce({cond}, false) THEN {_lit(name)} END" for name, cond in failure_conditions(contract))
    return f"""
WITH typed AS (
    SELECT *,
        {typed}
    FROM ({landing_file_sql(contract, path)})
)
SELECT *, list_filter([
            {checks}
         ], lambda r: r IS NOT NULL) AS _failed_rules
FROM typed
"""


def ingest_file(con: duckdb.DuckDBPyConnection, contract: Contract, path: str | Path, out: str | Path) -> dict[str, Any]:
    """The landing file read and written as Parquet, every field as text: what bronze does, in DuckDB."""
    started = time.perf_counter()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    con.execute(f"COPY ({landing_file_sql(contract, path)}) TO {_lit(str(out))} (FORMAT PARQUET)")
    wall = time.perf_counter() - started
    rows = int(con.execute(f"SELECT count(*) FROM read_parquet({_lit(str(out))})").fetchone()[0])
    return {"wall_s": wall, "rows_in": rows, "rows_out": rows}


def run_silver_from_file(con: duckdb.DuckDBPyConnection, contract: Contract, path: str | Path,
                         out_dir: str | Path) -> dict[str, Any]:
    """A landing file -> ``out_dir/silver`` and ``out_dir/quarantine``, as ``run_silver`` (typed, rules,
    dedupe, late flag): silver's work plus the file's reading, so a ratio against it is conservative."""
    out = Path(out_dir)
    started = time.perf_counter()
    con.execute(f"CREATE OR REPLACE TEMP TABLE flagged AS {flagged_from_file_sql(contract, path)}")
    return _finish_silver(con, contract, out, started)


def plain_rules_sql(contract: Contract) -> str:
    """The contract's column rules over typed columns, as a plain query's WHERE says them (a null passes
    every rule but ``required``, as in silver): ``required`` on the typed value, the others the negation of
    ``column_failures_sql``'s (whose ``required`` and ``_type`` read the text the plain query does not keep)."""
    conditions = []
    for col in contract.schema:
        if col.required:
            conditions.append(f"{_ident(col.name)} IS NOT NULL")
        conditions += [f"NOT {failed}" for rule, failed in column_failures_sql(col)
                       if rule not in (f"{col.name}_required", f"{col.name}_type")]
    return " AND ".join(conditions) or "true"


def plain_silver_sql(contract: Contract, path: str | Path) -> str:
    """DuckDB's plain query (what a DuckDB user writes for the same file, issue 56): ``read_csv`` with the
    contract's types, the rows that pass its column rules, one row per key. Unlike ``flagged_from_file_sql``
    it keeps no text, lists no failed rules and writes no quarantine; a value that does not cast fails the read."""
    landing = contract.landing
    if landing.format != "csv" or contract.derived or any(col.computed for col in contract.schema):
        raise ReferenceError(f"{contract.dataset}: the plain query reads a CSV of plain columns")
    types = {"string": "VARCHAR", "boolean": "BOOLEAN", "timestamp": "TIMESTAMP", "date": "DATE", **_DUCK_TYPES}
    columns = ", ".join(f"{_lit(col.landing_name)}: {_lit(types.get(col.type, col.type.upper()))}" for col in contract.schema)
    formats = {col.type: col.format for col in contract.schema if col.type in ("timestamp", "date") and col.format}
    nulls = "[" + ", ".join(_lit(v) for v in landing.null_values) + "]"
    source = (f"read_csv({_lit(str(path))}, header = {str(landing.header).lower()}, columns = {{{columns}}}, "
              f"delim = {_lit(landing.delimiter)}, quote = {_lit(landing.quote)}, escape = {_lit(landing.escape)}, "
              f"nullstr = {nulls}"
              + "".join(f", {kind}format = {_lit(strftime_pattern(fmt))}" for kind, fmt in formats.items()) + ")")
    key = ", ".join(_ident(k) for k in contract.key)
    named = ", ".join(f"{_ident(col.landing_name)} AS {_ident(col.name)}" for col in contract.schema)
    return (f"SELECT *, CAST({_ident(contract.event_time)} AS DATE) AS event_date FROM (SELECT {named} FROM {source}) "
            f"WHERE {plain_rules_sql(contract)} QUALIFY row_number() OVER (PARTITION BY {key}) = 1")


def run_plain_from_file(con: duckdb.DuckDBPyConnection, contract: Contract, path: str | Path,
                        out_dir: str | Path) -> dict[str, Any]:
    """The plain query (``plain_silver_sql``) -> ``out_dir/silver/<dataset>``, then each gold from it ->
    ``out_dir/gold/<gold table>`` (Parquet, partitioned as ours): the work of the PySpark floor
    (``bench/pyspark_floor.py``) in DuckDB. Returns the rows and gold rows; ``steps_s`` per step."""
    out = Path(out_dir)
    started = time.perf_counter()
    con.execute(f"CREATE OR REPLACE TEMP TABLE plain_silver AS {plain_silver_sql(contract, path)}")
    _copy(con, *_partitioned(contract, "SELECT * FROM plain_silver"), out / "silver" / contract.dataset)
    silver_s = time.perf_counter() - started
    output_rows = {}
    for name in contract.gold:
        options = dict(contract.gold_options.get(name, {}))
        target = out / "gold" / gold_table_name(contract.dataset, name)
        _copy(con, *_partitioned(contract, gold_reference(name, options).sql("plain_silver", options)), target)
        output_rows[name] = int(con.execute(f"SELECT count(*) FROM {_parquet(target)}").fetchone()[0])
    wall = time.perf_counter() - started
    rows_out = int(con.execute("SELECT count(*) FROM plain_silver").fetchone()[0])
    con.execute("DROP TABLE IF EXISTS plain_silver")
    return {"wall_s": wall, "rows_out": rows_out, "output_rows": output_rows,
            "steps_s": {"silver": round(silver_s, 2), "gold": round(wall - silver_s, 2)}}


def run_gold(con: duckdb.DuckDBPyConnection, contract: Contract, silver_dir: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """silver parquet -> ``out_dir/gold/<name>`` for every gold of the contract; returns rows per gold."""
    started = time.perf_counter()
    con.execute(f"CREATE OR REPLACE TEMP TABLE silver_in AS SELECT * FROM {_parquet(silver_dir)}")
    rows_in = int(con.execute("SELECT count(*) FROM silver_in").fetchone()[0])
    output_rows = {}
    for name in contract.gold:
        options = dict(contract.gold_options.get(name, {}))
        reference = gold_reference(name, options)
        _copy(con, *_partitioned(contract, reference.sql("silver_in", options)), Path(out_dir) / "gold" / name)
        output_rows[name] = int(con.execute(f"SELECT count(*) FROM {_parquet(Path(out_dir) / 'gold' / name)}").fetchone()[0])
    wall = time.perf_counter() - started
    con.execute("DROP TABLE IF EXISTS silver_in")
    return {"wall_s": wall, "rows_in": rows_in, "rows_out": rows_in, "output_rows": output_rows}


# ---------------------------------------------------------------------------- equality checks
def _check(name: str, ours: Any, reference: Any, equal: bool | None = None, detail: str = "") -> dict[str, Any]:
    return {"check": name, "ours": ours, "duckdb": reference, "equal": bool(ours == reference if equal is None else equal),
            **({"detail": detail} if detail else {})}


def silver_checksum(con: duckdb.DuckDBPyConnection, contract: Contract, silver_dir: str | Path,
                    late: bool = True) -> list[Any]:
    """Order-independent fingerprint of the silver content (contract columns, event_date, and ``_is_late``
    unless ``late`` is false: a silver without the flag, the floor's or the plain query's)."""
    cols = []
    for col in contract.schema:
        cast = {"timestamp": "TIMESTAMP", "date": "DATE"}.get(col.type)
        cols.append(f"CAST({_ident(col.name)} AS {cast})" if cast else _ident(col.name))
    fingerprint = f"hash({', '.join(cols)}, CAST(event_date AS DATE){', _is_late' if late else ''})"
    row = con.execute(f"SELECT count(*), sum({fingerprint} % 1000000007), bit_xor({fingerprint}) "
                      f"FROM {_relation(silver_dir)}").fetchone()
    return [int(v) if v is not None else None for v in row]


def compare_silver(con: duckdb.DuckDBPyConnection, contract: Contract, ours_lake: str | Path, reference_dir: str | Path,
                   ours_manifest: dict[str, Any] | None = None,
                   reference_counts: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Our silver/quarantine (``<lake>/silver|quarantine/<dataset>``) against the reference's."""
    lake, ref = Path(ours_lake), Path(reference_dir)
    dataset = contract.dataset
    checks = []
    for layer in ("silver", "quarantine"):
        ours_n = con.execute(f"SELECT count(*) FROM {_relation(lake / layer / dataset)}").fetchone()[0]
        ref_n = con.execute(f"SELECT count(*) FROM {_parquet(ref / layer)}").fetchone()[0]
        checks.append(_check(f"{layer}_rows", int(ours_n), int(ref_n)))
    by_rule_sql = "SELECT r, count(*) FROM (SELECT unnest(_failed_rules) AS r FROM {}) GROUP BY r ORDER BY r"
    ours_rules = dict(con.execute(by_rule_sql.format(_parquet(lake / "quarantine" / dataset))).fetchall())
    ref_rules = dict(con.execute(by_rule_sql.format(_parquet(ref / "quarantine"))).fetchall())
    checks.append(_check("quarantine_by_rule", ours_rules, ref_rules))
    checks.append(_check("silver_checksum", silver_checksum(con, contract, lake / "silver" / dataset),
                         silver_checksum(con, contract, ref / "silver")))
    if ours_manifest is not None and reference_counts is not None:
        for field in ("duplicates", "late"):
            checks.append(_check(f"silver_{field}", int(ours_manifest.get(field, -1)), int(reference_counts[field])))
    return checks


def compare_plain(con: duckdb.DuckDBPyConnection, contract: Contract, ours_lake: str | Path,
                  reference_dir: str | Path, label: str) -> list[dict[str, Any]]:
    """A plain job's silver (``<ours_lake>/silver/<dataset>``, no late flag) and gold (``<ours_lake>/gold/...``)
    against the reference's: silver rows, the content checksum without ``_is_late``, and every gold value.
    Check names start with ``label`` (e.g. ``floor``)."""
    ours, ref = Path(ours_lake) / "silver" / contract.dataset, Path(reference_dir) / "silver"
    ours_n = int(con.execute(f"SELECT count(*) FROM {_relation(ours)}").fetchone()[0])
    ref_n = int(con.execute(f"SELECT count(*) FROM {_parquet(ref)}").fetchone()[0])
    checks = [_check(f"{label}_silver_rows", ours_n, ref_n),
              _check(f"{label}_silver_checksum", silver_checksum(con, contract, ours, late=False),
                     silver_checksum(con, contract, ref, late=False))]
    for check in compare_gold(con, contract, ours_lake, reference_dir):
        checks.append({**check, "check": f"{label}_{check['check']}"})
    return checks


def compare_gold(con: duckdb.DuckDBPyConnection, contract: Contract, ours_lake: str | Path, reference_dir: str | Path,
                 tolerance: float = FLOAT_TOLERANCE) -> list[dict[str, Any]]:
    """Every gold of the contract: same keys on both sides, and every value equal (floats within tolerance)."""
    checks = []
    for name in contract.gold:
        reference = gold_reference(name, dict(contract.gold_options.get(name, {})))
        table = gold_table_name(contract.dataset, name)
        ours_rel = _relation(Path(ours_lake) / "gold" / table)
        ref_rel = _parquet(Path(reference_dir) / "gold" / name)
        cols = (*reference.keys, *reference.values)
        select = ", ".join(f"CAST({_ident(c)} AS TIMESTAMP) AS {_ident(c)}" if re.search(r"(hour|start|end)$", c)
                           else _ident(c) for c in cols)
        on = " AND ".join(f"o.{_ident(k)} = r.{_ident(k)}" for k in reference.keys)
        types = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE SELECT {select} FROM {ref_rel})").fetchall())
        differs = []
        for value in reference.values:
            o, r = f"o.{_ident(value)}", f"r.{_ident(value)}"
            if types[value] in ("DOUBLE", "FLOAT"):
                same = f"abs({o} - {r}) <= {tolerance} * greatest(1.0, abs({r}))"
            else:
                same = f"{o} = {r}"
            differs.append(f"NOT coalesce(({o} IS NULL AND {r} IS NULL) OR {same}, false)")
        missing = " OR ".join(f"{side}.{_ident(reference.keys[0])} IS NULL" for side in ("o", "r"))
        row = con.execute(f"""
            WITH o AS (SELECT {select} FROM {ours_rel}), r AS (SELECT {select} FROM {ref_rel})
            SELECT (SELECT count(*) FROM o), (SELECT count(*) FROM r),
                   count(*) FILTER (WHERE {missing} OR {' OR '.join(differs)})
            FROM o FULL OUTER JOIN r ON {on}
        """).fetchone()
        ours_n, ref_n, mismatched = (int(v) for v in row)
        checks.append(_check(f"gold_{name}", {"rows": ours_n}, {"rows": ref_n}, equal=(ours_n == ref_n and mismatched == 0),
                             detail=f"{mismatched} rows differ (missing on one side or a value outside tolerance {tolerance})"
                             if mismatched else ""))
    return checks


def compare_all(contract: Contract | str, ours_lake: str | Path, reference_dir: str | Path,
                ours_manifest: dict[str, Any] | None = None,
                reference_counts: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    contract = load_contract(contract) if isinstance(contract, str) else contract
    con = connect()
    try:
        return (compare_silver(con, contract, ours_lake, reference_dir, ours_manifest, reference_counts)
                + compare_gold(con, contract, ours_lake, reference_dir))
    finally:
        con.close()
