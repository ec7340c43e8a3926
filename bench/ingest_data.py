"""Synthetic station observations for the ingest benchmark and tests: ONE landing file of N records,
as CSV (a header, 15 columns, ``NA`` for null, like an R or pandas export) or as JSON lines, plain or
gzip, written by DuckDB from ``range(N)`` so a file of 10M rows (about 1 GB of CSV) takes seconds.

Every value is a pure function of the row number (hashes, no random state), so a size's file is the
same bytes on every run and the same rows in both formats. The contracts of the two datasets are in
``bench/contracts/`` (``stations_csv``, ``stations_jsonl``): key ``[station_id, observed_at]`` (unique
by construction), event time ``observed_at``, and row rules that a few rows break on purpose:

- ``humidity`` above 100 on 1 row in 997 (``humidity_range``);
- ``temperature`` missing (``NA``) on 1 row in 1009 (``temperature_required``);
- ``remarks`` holds a delimiter, a quote or a line break now and then, so the CSV writer quotes it.

``expected_counts`` gives what silver must hold (rows, quarantined per rule) by DuckDB over the same
file, for the tests and the benchmark's equality checks.

**Wide span** (``wide_span_step``, the ingest benchmark's ``wide-span`` row): the same columns with the
event times spread over ``WIDE_SPAN_YEARS`` (32) years from 1990, whatever the size, so one file spans
about 384 month partitions of the ``stations_wide_*`` contracts (``partition_granularity: month``).
"""
from __future__ import annotations

from pathlib import Path

import duckdb

STATIONS = 500
COLUMNS = ("station_id", "observed_at", "temperature", "dew_point", "humidity", "pressure", "wind_speed",
           "wind_dir", "gust", "visibility", "precipitation", "snow_depth", "cloud_cover", "solar_radiation",
           "remarks")
CONTRACTS_DIR = Path(__file__).resolve().parent / "contracts"
DATASETS = {"csv": "stations_csv", "json_lines": "stations_jsonl"}
WIDE_DATASETS = {"csv": "stations_wide_csv", "json_lines": "stations_wide_jsonl"}
DEFAULT_START = "2024-01-01 00:00:00"
WIDE_SPAN_START = "1990-01-01 00:00:00"
WIDE_SPAN_YEARS = 32


def wide_span_step(records: int, stations: int = STATIONS, years: int = WIDE_SPAN_YEARS) -> int:
    """The seconds between two readings of a station that spread ``records`` over ``years`` years."""
    per_station = max(1, -(-int(records) // int(stations)))
    return max(1, int(years * 365.25 * 86400) // per_station)


def _h(salt: int) -> str:
    """A deterministic pseudo-random integer in [0, 2^31) per row (DuckDB's hash of the row number)."""
    return f"(hash(i * 7919 + {salt}) % 2147483647)"


def rows_sql(records: int, stations: int = STATIONS, step_seconds: int = 60, start: str = DEFAULT_START) -> str:
    """The N records as a DuckDB query, in row order (i = 0 .. N-1): ``stations`` stations, each reporting
    every ``step_seconds`` from ``start`` (the defaults: 500 stations a minute from 2024-01-01, 10M rows
    span 14 days)."""
    def num(salt: int, low: float, span: float, null_every: int | None = None, digits: int = 1) -> str:
        value = f"round({low} + ({_h(salt)} % 100000) / 100000.0 * {span}, {digits})"
        return f"CASE WHEN {_h(salt + 1)} % {null_every} = 0 THEN NULL ELSE {value} END" if null_every else value

    remarks = (f"CASE {_h(90)} % 50 WHEN 0 THEN 'gusty, then calm' WHEN 1 THEN 'sensor \"B\" swapped' "
               f"WHEN 2 THEN 'line one' || chr(10) || 'line two' WHEN 3 THEN NULL ELSE 'ok' END")
    return f"""
        SELECT
            'ws-' || lpad(CAST(i % {int(stations)} AS VARCHAR), 4, '0') AS station_id,
            strftime(TIMESTAMP '{start}' + to_seconds(CAST((i // {int(stations)}) * {int(step_seconds)} AS BIGINT)),
                     '%Y-%m-%d %H:%M:%S') AS observed_at,
            CASE WHEN i % 1009 = 5 THEN NULL ELSE {num(10, -20, 60)} END AS temperature,
            {num(20, -30, 50)} AS dew_point,
            CASE WHEN i % 997 = 3 THEN 150.0 ELSE {num(30, 5, 95, 40, 0)} END AS humidity,
            {num(40, 960, 80)} AS pressure,
            {num(50, 0, 30)} AS wind_speed,
            CAST({_h(60)} % 360 AS INTEGER) AS wind_dir,
            {num(70, 0, 40, 3)} AS gust,
            {num(80, 0.1, 20)} AS visibility,
            {num(100, 0, 12, 5, 2)} AS precipitation,
            {num(110, 0, 80, 2)} AS snow_depth,
            CAST({_h(120)} % 9 AS INTEGER) AS cloud_cover,
            {num(130, 0, 1000, 4, 0)} AS solar_radiation,
            {remarks} AS remarks
        FROM range({int(records)}) t(i)
        ORDER BY i
    """


def write_file(path: Path, records: int, landing_format: str, gzip: bool = False, threads: int = 2,
               stations: int = STATIONS, step_seconds: int = 60, start: str = DEFAULT_START) -> Path:
    """Write N records to ``path`` (``.csv``/``.jsonl``, ``.gz`` added when ``gzip``); returns the path.
    ``stations``, ``step_seconds`` and ``start`` set the span of event time (``rows_sql``)."""
    if landing_format not in DATASETS:
        raise ValueError(f"landing format {landing_format!r}: one of {', '.join(DATASETS)}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute(f"SET threads = {int(threads)}")
    con.execute("SET preserve_insertion_order = true")
    compression = "gzip" if gzip else "none"
    if landing_format == "csv":
        options = f"FORMAT csv, HEADER true, NULLSTR 'NA', COMPRESSION {compression}"
    else:
        options = f"FORMAT json, COMPRESSION {compression}"
    con.execute(f"COPY ({rows_sql(records, stations, step_seconds, start)}) TO '{path}' ({options})")
    con.close()
    return path


def write_wide_span_file(path: Path, records: int, landing_format: str, gzip: bool = False,
                         stations: int = STATIONS) -> Path:
    """``write_file`` with the event times spread over ``WIDE_SPAN_YEARS`` years from 1990 (``wide_span_step``)."""
    return write_file(path, records, landing_format, gzip=gzip, stations=stations,
                      step_seconds=wide_span_step(records, stations), start=WIDE_SPAN_START)


def file_name(records: int, landing_format: str, gzip: bool = False, shape: str = "") -> str:
    return f"stations{'-' + shape if shape else ''}-{records}.{'csv' if landing_format == 'csv' else 'jsonl'}{'.gz' if gzip else ''}"


def expected_counts(path: Path, landing_format: str) -> dict[str, int]:
    """Rows in the file, and what silver must make of them (the contract's rules, by DuckDB): silver
    rows, and quarantined rows per failed rule (a row here breaks at most one rule)."""
    con = duckdb.connect()
    if landing_format == "csv":
        source = f"read_csv('{path}', header = true, nullstr = 'NA', all_varchar = true, strict_mode = true)"
    else:
        source = f"read_json('{path}', format = 'newline_delimited', columns = {{{', '.join(f'{c!r}: VARCHAR' for c in COLUMNS)}}})"
    row = con.execute(f"""
        SELECT count(*),
               count(*) FILTER (WHERE temperature IS NULL),
               count(*) FILTER (WHERE temperature IS NOT NULL AND CAST(humidity AS DOUBLE) > 100),
               count(DISTINCT CAST(observed_at AS DATE))
        FROM {source}""").fetchone()
    con.close()
    rows, no_temperature, humidity_range, dates = (int(v) for v in row)
    return {"rows": rows, "silver": rows - no_temperature - humidity_range,
            "quarantine": {"temperature_required": no_temperature, "humidity_range": humidity_range},
            "event_dates": dates}
