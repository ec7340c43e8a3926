"""``python -m spark_jobs query``: SQL against a tenant's Iceberg tables on local Spark.

    python -m spark_jobs query --tenant acme "SELECT count(*) FROM gold.iot_hourly"
    python -m spark_jobs query --tenant acme --json "SELECT * FROM silver.iot LIMIT 5"
    python -m spark_jobs query --tenant acme --as-of 2026-11-23T10:00:00Z "SELECT count(*) FROM silver.iot"

The lake's catalog is the session's default, so tables are ``silver.<dataset>`` and ``gold.<gold_name>``
(metadata tables too: ``silver.iot.snapshots``, ``gold.iot_hourly.files``). When the lake config names the
tenant's Glue databases (``glue_database_names``), the names consumers use in Athena work too:
``acme_gold.iot_hourly`` is ``gold.iot_hourly`` (``spark_jobs.lake.catalog.consumer_conf``). ``--as-of`` reads every
silver/gold table the query names as of a snapshot id (one table only: ids are per table) or a UTC
timestamp (the snapshot current at that time), by adding ``VERSION AS OF`` / ``TIMESTAMP AS OF`` after
each table name (found by parsing the query as Spark SQL with sqlglot: never inside a string or a comment,
with or without backticks). At most ``--max-rows`` rows are printed (default 100; the output says when there
were more).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
from typing import Any

from spark_jobs.lake import catalog
from spark_jobs.lake.catalog import CatalogSettings, LAYERS_WITH_TABLES
from spark_jobs.lake.config import lake_from_args
from spark_jobs.runs.session import command_session

DEFAULT_MAX_ROWS = 100
_TIMESTAMP_FORMATS = ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S.%fZ",
                      "%Y-%m-%d")


class QueryError(ValueError):
    """Bad SQL, an unknown table or a bad ``--as-of``; the message is one line."""


@dataclasses.dataclass(frozen=True)
class AsOf:
    """A point in a table's history: ``snapshot_id`` or ``timestamp`` (UTC, ``YYYY-MM-DD HH:MM:SS[.ffffff]``)."""

    snapshot_id: int | None = None
    timestamp: str | None = None

    @property
    def clause(self) -> str:
        return f"VERSION AS OF {self.snapshot_id}" if self.snapshot_id is not None else f"TIMESTAMP AS OF '{self.timestamp}'"


def parse_as_of(text: str) -> AsOf:
    """A snapshot id (digits) or a UTC time (``2026-11-23T10:00:00Z``, ``2026-11-23 10:00:00``, ``2026-11-23``)."""
    text = text.strip()
    if text.isdigit():
        return AsOf(snapshot_id=int(text))
    for fmt in _TIMESTAMP_FORMATS:
        try:
            moment = dt.datetime.strptime(text, fmt)
        except ValueError:
            continue
        return AsOf(timestamp=moment.strftime("%Y-%m-%d %H:%M:%S.%f"))
    raise QueryError(f"--as-of '{text}' is neither a snapshot id nor a UTC time like 2026-11-23T10:00:00Z")


def _table_references(sql: str, known: set[str]) -> list[tuple[str, int, Any]]:
    """``(name, end, version)`` of every reference to a table of ``known`` in ``sql``, in order: ``name`` is
    ``namespace.table`` in lower case, ``end`` the offset just past the reference's last character in ``sql``,
    ``version`` the ``VERSION``/``TIMESTAMP AS OF`` it carries already (or None).

    sqlglot parses ``sql`` as Spark SQL, so string literals, comments (nested ones too), quoted names, column
    references and CTE names are what Spark takes them for; only two-part table names count (a metadata table
    such as ``gold.iot_hourly.files`` is a table of its own)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        statements = sqlglot.parse(sql, read="spark")
    except SqlglotError as exc:
        detail = _first_line(exc).rstrip(".")
        raise QueryError(f"--as-of: the query does not parse as Spark SQL (sqlglot: {detail}), so the AS OF clauses "
                         "cannot be placed; without --as-of, write TIMESTAMP AS OF '...' after each table name") from None
    found = []
    for statement in statements:
        for table in (statement.find_all(exp.Table) if statement is not None else ()):
            name = f"{table.db}.{table.name}".lower()
            if table.catalog or not table.db or name not in known:
                continue
            found.append((name, table.this.meta["end"] + 1, table.args.get("version")))
    return sorted(found, key=lambda item: item[1])


def with_as_of(sql: str, as_of: AsOf, known: set[str]) -> str:
    """``sql`` with ``as_of``'s clause after every reference to a table of ``known``: the query's own text
    with the clauses inserted (not regenerated), so what Spark runs is what the user wrote plus them."""
    references = _table_references(sql, known)
    names = sorted({name for name, _, _ in references})
    if not names:
        raise QueryError(f"--as-of: the query names none of the tables {', '.join(sorted(known)) or '(none yet)'}")
    if as_of.snapshot_id is not None and len(names) > 1:
        raise QueryError(f"--as-of {as_of.snapshot_id}: a snapshot id belongs to one table, but the query reads "
                         f"{', '.join(names)}; use a time instead")
    pinned = next((name for name, _, version in references if version is not None), None)
    if pinned:
        raise QueryError(f"--as-of: the query reads {pinned} as of a snapshot already (VERSION or TIMESTAMP AS OF); "
                         "use --as-of or the clause, not both")
    out, position = [], 0
    for _, end, _ in references:
        out += [sql[position:end], f" {as_of.clause}"]
        position = end
    return "".join(out + [sql[position:]])


@dataclasses.dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple]
    truncated: bool  # more rows than were fetched

    def as_dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row)) for row in self.rows]


def known_tables(spark, settings: CatalogSettings, consumer: dict[str, str] | None = None) -> set[str]:
    """``namespace.table`` of every table in the lake's silver and gold namespaces, and with ``consumer``
    (layer -> Glue database) the same tables under the consumers' names."""
    names = set()
    for layer in LAYERS_WITH_TABLES:
        namespace = settings.namespace(layer)
        try:
            rows = spark.sql(f"SHOW TABLES IN {settings.name}.{namespace}").collect()
        except Exception:  # noqa: BLE001 - a namespace with no table yet does not exist in a Hadoop catalog
            continue
        names |= {f"{namespace}.{row['tableName']}".lower() for row in rows}
        if consumer and layer in consumer:
            names |= {f"{consumer[layer]}.{row['tableName']}".lower() for row in rows}
    return names


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def run_query(spark, settings: CatalogSettings, sql: str, as_of: AsOf | None = None,
              max_rows: int = DEFAULT_MAX_ROWS, consumer: dict[str, str] | None = None) -> QueryResult:
    """Run ``sql`` with the lake's catalog as the session default; raises ``QueryError`` (one line) for
    bad SQL, unknown tables and times before a table's first snapshot. ``consumer`` (layer -> Glue
    database, ``catalog.register_consumer_names``) lists the consumers' names among the known tables."""
    from pyspark.errors import AnalysisException, IllegalArgumentException, ParseException

    known = known_tables(spark, settings, consumer)
    if as_of is not None:
        sql = with_as_of(sql, as_of, known)
    previous = spark.conf.get("spark.sql.defaultCatalog")
    spark.conf.set("spark.sql.defaultCatalog", settings.name)
    try:
        df = spark.sql(sql)
        fetched = df.limit(max_rows + 1).collect()
        columns = list(df.columns)
    except ParseException as exc:
        raise QueryError(f"bad SQL: {_first_line(exc)}") from None
    except AnalysisException as exc:
        message = _first_line(exc)
        if "TABLE_OR_VIEW_NOT_FOUND" in message:
            message += f" Tables: {', '.join(sorted(known)) or '(none yet: run the pipeline first)'}."
        raise QueryError(message) from None
    except IllegalArgumentException as exc:  # e.g. "Cannot find a snapshot older than ..."
        raise QueryError(_first_line(exc)) from None
    except Exception as exc:  # noqa: BLE001 - e.g. an unknown snapshot id surfaces as a JVM ValidationException
        name = type(exc).__name__
        java = getattr(exc, "java_exception", None)
        if java is not None:
            name = str(java.getClass().getSimpleName())
        if name in ("ValidationException", "NoSuchTableException", "IllegalArgumentException"):
            raise QueryError(_first_line(java.getMessage() if java is not None else exc)) from None
        raise
    finally:  # a shared session (tests, a notebook) keeps its own default catalog
        spark.conf.set("spark.sql.defaultCatalog", previous)
    return QueryResult(columns=columns, rows=[tuple(row) for row in fetched[:max_rows]],
                       truncated=len(fetched) > max_rows)


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    return str(value)


def format_result(result: QueryResult) -> str:
    """A plain text table: numbers right-aligned, everything else left-aligned."""
    cells = [[_cell(v) for v in row] for row in result.rows]
    numeric = [all(isinstance(row[i], (int, float)) and not isinstance(row[i], bool) for row in result.rows
                   if row[i] is not None) for i in range(len(result.columns))]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(result.columns)]

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if numeric[i] else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths))).rstrip()

    lines = [line(list(result.columns)), "  ".join("-" * w for w in widths)]
    lines += [line(row) for row in cells]
    noun = "row" if len(result.rows) == 1 else "rows"
    lines.append(f"({len(result.rows)} {noun}{', more not shown: --max-rows' if result.truncated else ''})")
    return "\n".join(lines)


def format_json(result: QueryResult) -> str:
    return json.dumps(result.as_dicts(), indent=2, default=_cell)


def run(args: argparse.Namespace) -> int:
    """The command, with the options ``spark_jobs.cli`` parsed: the rows as a table or JSON (errors raise:
    ``QueryError``, ``CatalogError``)."""
    lake = lake_from_args(args)
    as_of = parse_as_of(args.as_of) if args.as_of else None
    with command_session(lake, "tenantlake-query", args.jars, reads=["silver", "gold"]) as spark:
        result = run_query(spark, catalog.register(spark, lake), args.sql, as_of=as_of, max_rows=args.max_rows,
                           consumer=catalog.register_consumer_names(spark, lake))
    print(format_json(result) if args.json else format_result(result))
    return 0
