"""``python -m spark_jobs query``: SQL on the lake's catalog, --as-of, one-line errors (the CLI in-process on
the shared session, against a local lake whose tables are written by the table writer)."""
from __future__ import annotations

import json

import pytest
from pyspark.sql import functions as F

from spark_jobs import cli
from spark_jobs.io import tables
from spark_jobs.io.partitioning import Partitioning
from spark_jobs.lake.config import LakeConfig
from spark_jobs.tables import query
from tests.spark_jobs.conftest import ts


def referenced_tables(sql: str, known: set[str]) -> list[str]:
    """The ``namespace.table`` names of ``known`` that ``sql`` refers to, in order (lower case)."""
    return [name for name, _, _ in query._table_references(sql, known)]

KNOWN = {"silver.iot", "gold.iot_hourly"}


def test_as_of_parses_snapshot_ids_and_utc_times():
    assert query.parse_as_of("8356628235222744261") == query.AsOf(snapshot_id=8356628235222744261)
    assert query.parse_as_of("2026-11-23T10:00:00Z").clause == "TIMESTAMP AS OF '2026-11-23 10:00:00.000000'"
    assert query.parse_as_of("2026-11-23").timestamp == "2026-11-23 00:00:00.000000"
    with pytest.raises(query.QueryError, match="neither a snapshot id nor a UTC time"):
        query.parse_as_of("yesterday")


def test_as_of_goes_after_each_known_table_and_nowhere_else():
    as_of = query.AsOf(timestamp="2026-11-23 10:00:00.000000")
    sql = ("SELECT h.sensor_id, 'gold.iot_hourly' AS label -- gold.iot_hourly\n"
           "FROM gold.iot_hourly h JOIN silver.iot s ON s.sensor_id = h.sensor_id "
           "WHERE h.x IN (SELECT x FROM gold.iot_hourly.files) AND `gold`.`iot_hourly`.x = 1")
    clause = " TIMESTAMP AS OF '2026-11-23 10:00:00.000000'"
    assert query.with_as_of(sql, as_of, KNOWN) == (
        "SELECT h.sensor_id, 'gold.iot_hourly' AS label -- gold.iot_hourly\n"
        f"FROM gold.iot_hourly{clause} h JOIN silver.iot{clause} s ON s.sensor_id = h.sensor_id "
        "WHERE h.x IN (SELECT x FROM gold.iot_hourly.files) AND `gold`.`iot_hourly`.x = 1")
    with pytest.raises(query.QueryError, match="a snapshot id belongs to one table, but the query reads gold.iot_hourly, "
                                               "silver.iot; use a time instead"):
        query.with_as_of(sql, query.AsOf(snapshot_id=1), KNOWN)
    with pytest.raises(query.QueryError, match="the query names none of the tables gold.iot_hourly, silver.iot"):
        query.with_as_of("SELECT 1", as_of, KNOWN)


CLAUSE = " TIMESTAMP AS OF '2026-11-23 10:00:00.000000'"


@pytest.mark.parametrize("sql, expected", [
    # a table name inside a string literal: a raw string ends at its second quote (no escapes in it)
    (r"SELECT r'C:\' AS p, 'gold.iot_hourly' AS q FROM silver.iot",
     rf"SELECT r'C:\' AS p, 'gold.iot_hourly' AS q FROM silver.iot{CLAUSE}"),
    # ... and inside a comment: Spark's bracketed comments nest
    ("/* gold.iot_hourly /* an aside */ silver.iot */ SELECT * FROM gold.iot_hourly",
     f"/* gold.iot_hourly /* an aside */ silver.iot */ SELECT * FROM gold.iot_hourly{CLAUSE}"),
    # a CTE named like a namespace: silver.iot is its column, not the table
    ("WITH silver AS (SELECT sensor_id AS iot FROM gold.iot_hourly) SELECT silver.iot FROM silver",
     f"WITH silver AS (SELECT sensor_id AS iot FROM gold.iot_hourly{CLAUSE}) SELECT silver.iot FROM silver"),
    # aliases: the clause goes between the name and its alias; an alias named like a namespace is no table
    ("SELECT gold.iot_hourly, g.n FROM (SELECT 1 AS iot_hourly) gold, gold.iot_hourly AS g",
     f"SELECT gold.iot_hourly, g.n FROM (SELECT 1 AS iot_hourly) gold, gold.iot_hourly{CLAUSE} AS g"),
    # joins of two tables, one of them quoted and spaced as Spark allows
    ("SELECT s.sensor_id FROM silver.iot s JOIN `gold` . `iot_hourly` h USING (sensor_id)",
     f"SELECT s.sensor_id FROM silver.iot{CLAUSE} s JOIN `gold` . `iot_hourly`{CLAUSE} h USING (sensor_id)"),
])
def test_as_of_finds_the_tables_spark_reads_where_regexes_did_not(sql, expected):
    assert query.with_as_of(sql, query.AsOf(timestamp="2026-11-23 10:00:00.000000"), KNOWN) == expected


def test_as_of_refuses_a_query_it_cannot_place_clauses_in():
    as_of = query.AsOf(timestamp="2026-11-23 10:00:00.000000")
    with pytest.raises(query.QueryError, match=r"^--as-of: the query reads gold.iot_hourly as of a snapshot already"):
        query.with_as_of("SELECT * FROM gold.iot_hourly VERSION AS OF 5", as_of, KNOWN)
    with pytest.raises(query.QueryError, match=r"^--as-of: the query does not parse as Spark SQL \(sqlglot: .*Line 1, "
                                               r"Col: 7\), so the AS OF clauses cannot be placed"):
        query.with_as_of("SELEC 1 FROM silver.iot", as_of, KNOWN)
    assert referenced_tables("SELECT * FROM silver.iot a JOIN Silver.IOT b ON a.x = b.x", KNOWN) == [
        "silver.iot", "silver.iot"]


def test_results_print_as_a_table_or_json():
    result = query.QueryResult(columns=["sensor_id", "n", "at"], rows=[("sensor-001", 12, None), ("s2", 3, ts("2020-11-16 22:00:00"))],
                               truncated=True)
    assert query.format_result(result).splitlines() == [
        "sensor_id    n  at",
        "----------  --  -------------------",
        "sensor-001  12  NULL",
        "s2           3  2020-11-16 22:00:00",
        "(2 rows, more not shown: --max-rows)",
    ]
    assert json.loads(query.format_json(result))[1] == {"sensor_id": "s2", "n": 3, "at": "2020-11-16 22:00:00"}


@pytest.fixture(scope="module")
def lake_with_history(spark, tmp_path_factory):
    """gold.iot_hourly with two snapshots (3 rows, then 2) in a local lake."""
    lake = LakeConfig(lake_uri=str(tmp_path_factory.mktemp("query") / "lake"))
    gold = tables.table(spark, lake, "gold", "iot_hourly")
    identity = Partitioning("event_date", "identity")

    def hourly(*hours):
        return spark.createDataFrame([("sensor-001", ts(h)) for h in hours], "sensor_id string, event_hour timestamp") \
            .withColumn("event_date", F.to_date("event_hour"))

    first = tables.overwrite(hourly("2020-11-16 10:00:00", "2020-11-16 11:00:00", "2020-11-17 10:00:00"), gold,
                             identity, identity.covering(["2020-11-16", "2020-11-17"], True), "run-1")
    second = tables.overwrite(hourly("2020-11-16 10:00:00"), gold, identity, identity.covering(["2020-11-16"], True),
                              "run-2")
    return lake, first, second


@pytest.fixture
def run_cli(spark, capsys):
    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = cli.main(list(args))
        out, err = capsys.readouterr()
        return code, out, err
    return run


def test_query_counts_the_current_snapshot_and_reads_earlier_ones(lake_with_history, run_cli, spark):
    lake, first, second = lake_with_history
    before = spark.conf.get("spark.sql.defaultCatalog")
    code, out, _ = run_cli("query", "--lake-uri", lake.lake_uri, "--json", "SELECT count(*) AS n FROM gold.iot_hourly")
    assert code == 0 and json.loads(out) == [{"n": 2}]
    assert spark.conf.get("spark.sql.defaultCatalog") == before  # the shared session's default is restored
    code, out, _ = run_cli("query", "--lake-uri", lake.lake_uri, "--as-of", str(first["snapshot_id"]), "--json",
                           "SELECT count(*) AS n FROM gold.iot_hourly WHERE event_date = DATE '2020-11-16'")
    assert code == 0 and json.loads(out) == [{"n": 2}]
    code, out, _ = run_cli("query", "--lake-uri", lake.lake_uri, "--as-of", first["committed_at"], "--json",
                           "SELECT count(*) AS n FROM gold.iot_hourly")
    assert code == 0 and json.loads(out) == [{"n": 3}]
    code, out, _ = run_cli("query", "--lake-uri", lake.lake_uri, "--as-of", str(first["snapshot_id"]), "--json",
                           "SELECT count(*) AS n FROM `gold`.`iot_hourly` a JOIN gold.iot_hourly AS b "
                           "ON a.event_hour = b.event_hour -- gold.iot_hourly")
    assert code == 0 and json.loads(out) == [{"n": 3}]  # both sides of the self-join read the first snapshot
    code, out, _ = run_cli("query", "--lake-uri", lake.lake_uri, "--max-rows", "1",
                           "SELECT snapshot_id FROM gold.iot_hourly.snapshots ORDER BY committed_at")
    assert code == 0 and out.splitlines()[2].strip() == str(first["snapshot_id"]) and "more not shown" in out


@pytest.mark.parametrize("args, message", [
    (["SELECT * FROM gold.nope"], "error: [TABLE_OR_VIEW_NOT_FOUND] The table or view `gold`.`nope` cannot be found."),
    (["SELEC 1"], "error: bad SQL: [PARSE_SYNTAX_ERROR] Syntax error at or near 'SELEC'"),
    (["--as-of", "2000-01-01", "SELECT count(*) FROM gold.iot_hourly"],
     "error: Cannot find a snapshot older than 2000-01-01"),
    (["--as-of", "42", "SELECT count(*) FROM gold.iot_hourly"], "error: Cannot find snapshot with ID 42"),
    (["--as-of", "soon", "SELECT 1"], "error: --as-of 'soon' is neither a snapshot id nor a UTC time"),
])
def test_errors_are_one_line(lake_with_history, run_cli, args, message):
    lake, _, _ = lake_with_history
    code, out, err = run_cli("query", "--lake-uri", lake.lake_uri, *args)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and out == "" and len(lines) == 1 and lines[0].startswith(message), err
    if "TABLE_OR_VIEW_NOT_FOUND" in message:
        assert lines[0].endswith("Tables: gold.iot_hourly.")
