"""bench/pyspark_floor.py (the plain PySpark floor of the wide-span bench) and DuckDB's plain query
(bench/duckdb_reference.py): their pure parts, and that both give the same silver and gold as the DuckDB
reference that mirrors silver's semantics, on a small wide-span CSV (quoted line breaks, NA, rule breakers)."""
from __future__ import annotations

import dataclasses

import pytest
from pyspark.sql import types as T

from bench import duckdb_reference as ref
from bench import pyspark_floor as floor
from bench.ingest_data import CONTRACTS_DIR, WIDE_DATASETS, expected_counts, write_file
from spark_jobs.contract.model import load_contract

DATASET = "stations_wide_csv"
RECORDS = 4_000  # 8 readings of each of 500 stations


@pytest.fixture(scope="module")
def contract():
    with pytest.MonkeyPatch.context() as monkey:
        monkey.setenv("TENANTLAKE_CONTRACTS_DIR", str(CONTRACTS_DIR))
        return load_contract(DATASET)


@pytest.fixture(scope="module")
def spark():
    from spark_jobs.runs.session import build_session

    return build_session("tenantlake-bench-tests", driver_memory="1g", small_inputs=True)


@pytest.fixture(scope="module")
def landing(tmp_path_factory):
    # The wide-span shape over 4 months instead of 384 (8 readings a station, 12 days apart): the same rows and
    # rules, fewer partitions to commit, so the test stays quick.
    path = write_file(tmp_path_factory.mktemp("floor-data") / "stations-wide-span.csv", RECORDS, "csv",
                      step_seconds=12 * 86400, start="1990-01-01 00:00:00")
    return path, expected_counts(path, "csv")


def test_the_schema_and_csv_options_come_from_the_contract(contract):
    schema = floor.floor_schema(contract)
    assert schema.names == list(contract.column_names)
    types = {field.name: field.dataType for field in schema.fields}
    assert (types["station_id"], types["observed_at"], types["temperature"], types["wind_dir"]) == \
        (T.StringType(), T.TimestampType(), T.DoubleType(), T.IntegerType())
    options = floor.csv_options(contract)
    assert (options["nullValue"], options["multiLine"], options["timestampFormat"], options["enforceSchema"]) == \
        ("NA", "true", "yyyy-MM-dd HH:mm:ss", "false")


def test_rule_names_are_silvers(spark, contract):
    names = set(floor.rule_conditions(contract))
    assert {"temperature_required", "temperature_range", "humidity_range", "station_id_regex", "wind_dir_range"} <= names
    assert not any(name.endswith("_type") for name in names)  # a value that does not cast is null here


def test_partition_terms():
    assert floor.partition_term("observed_at", "month", False) == "months(`observed_at`)"
    assert floor.partition_term("observed_at", "day", False) == "days(`observed_at`)"
    assert floor.partition_term("event_date", "day", True) == "`event_date`"


def test_a_contract_the_floor_cannot_read_is_refused_in_one_line(monkeypatch):
    monkeypatch.setenv("TENANTLAKE_CONTRACTS_DIR", str(CONTRACTS_DIR))
    with pytest.raises(floor.FloorError, match="^stations_wide_jsonl: landing format json_lines; the floor job reads CSV$"):
        floor.csv_options(load_contract("stations_wide_jsonl"))


def test_valid_rows_drop_exactly_the_rule_breakers_and_dedupe_keeps_one_per_key(spark, contract):
    rows = [("ws-0001", 10.0, 50.0), ("ws-0001", 10.0, 50.0), ("ws-0002", None, 50.0), ("ws-0003", 10.0, 150.0),
            ("bad", 10.0, 50.0), ("ws-0004", 10.0, None)]
    frame = spark.createDataFrame(rows, "station_id string, temperature double, humidity double") \
        .selectExpr("*", "timestamp'2020-01-01 00:00:00' AS observed_at")
    missing = [name for name in contract.column_names if name not in frame.columns]
    frame = frame.selectExpr("*", *[f"CAST(NULL AS {floor.spark_type(contract.column(name)).simpleString()}) AS `{name}`"
                                    for name in missing])
    kept = floor.deduped(floor.valid_rows(frame, contract), contract)
    assert sorted(row["station_id"] for row in kept.collect()) == ["ws-0001", "ws-0004"]


def test_the_floor_and_duckdbs_plain_query_equal_the_reference(spark, contract, landing, tmp_path, monkeypatch):
    monkeypatch.setenv("TENANTLAKE_CONTRACTS_DIR", str(CONTRACTS_DIR))
    path, expected = landing
    warehouse = tmp_path / "floor"
    for key, value in floor.catalog_conf(warehouse).items():
        spark.conf.set(key, value)
    result = floor.run_floor(spark, contract, path)
    assert result["rows_out"] == expected["silver"]
    assert set(result["steps_s"]) == {"silver", "gold"}
    assert result["output_rows"] == {"stations_wide_csv_period_summary": expected["event_dates"]}

    con = ref.connect(2)
    reference = tmp_path / "reference"
    counts = ref.run_silver_from_file(con, contract, path, reference)
    ref.run_gold(con, contract, reference / "silver", reference)
    plain = ref.run_plain_from_file(con, contract, path, reference / "plain")
    assert (counts["rows_out"], plain["rows_out"]) == (expected["silver"], expected["silver"])
    assert plain["output_rows"] == {"period_summary": expected["event_dates"]}
    checks = (ref.compare_plain(con, contract, warehouse, reference, "floor")
              + ref.compare_plain(con, contract, reference / "plain", reference, "duckdb_plain"))
    assert {c["check"] for c in checks} == {f"{label}_{check}" for label in ("floor", "duckdb_plain")
                                           for check in ("silver_rows", "silver_checksum", "gold_period_summary")}
    assert [c for c in checks if not c["equal"]] == []


def test_a_different_silver_fails_the_comparison(spark, contract, landing, tmp_path):
    """The checks can fail: a plain query that forgets the humidity rule keeps rows the reference quarantines."""
    path, expected = landing
    con = ref.connect(2)
    reference = tmp_path / "reference"
    ref.run_silver_from_file(con, contract, path, reference)
    ref.run_gold(con, contract, reference / "silver", reference)
    loose = dataclasses.replace(contract, schema=tuple(
        dataclasses.replace(col, max=None) if col.name == "humidity" else col for col in contract.schema))
    ref.run_plain_from_file(con, loose, path, reference / "plain")
    failed = {c["check"] for c in ref.compare_plain(con, contract, reference / "plain", reference, "plain")
              if not c["equal"]}
    assert failed == {"plain_silver_rows", "plain_silver_checksum", "plain_gold_period_summary"}


@pytest.mark.parametrize("landing_format", ["csv", "json_lines"])
def test_the_ingest_floor_writes_the_fields_duckdbs_ingest_writes(spark, landing_format, tmp_path, monkeypatch):
    """Spark's own reader (bench/pyspark_floor.run_ingest) and DuckDB's ingest write the same rows, field for field
    (quoted line breaks, NA), so the bench's Spark ingest / DuckDB ratio compares the same work."""
    monkeypatch.setenv("TENANTLAKE_CONTRACTS_DIR", str(CONTRACTS_DIR))
    contract = load_contract(WIDE_DATASETS[landing_format])
    path = write_file(tmp_path / f"stations.{'csv' if landing_format == 'csv' else 'jsonl'}", 2_000, landing_format,
                      step_seconds=12 * 86400, start="1990-01-01 00:00:00")
    result = floor.run_ingest(spark, contract, path, tmp_path / "spark-ingest")
    con = ref.connect(2)
    duck = ref.ingest_file(con, contract, path, tmp_path / "duckdb" / "ingest.parquet")
    assert result["rows_out"] == duck["rows_out"] == expected_counts(path, landing_format)["rows"]
    fields = [col.landing_name for col in contract.schema if col.landing_name is not None]
    ours = ", ".join(f'"{name}"' for name in fields)
    theirs = ", ".join(f'"{ref.RAW_PREFIX}{col.name}"' for col in contract.schema if col.landing_name is not None)
    differ = con.execute(f"""SELECT count(*) FROM (
        (SELECT {ours} FROM read_parquet('{tmp_path}/spark-ingest/*.parquet')
         EXCEPT ALL SELECT {theirs} FROM read_parquet('{tmp_path}/duckdb/ingest.parquet'))
        UNION ALL
        (SELECT {theirs} FROM read_parquet('{tmp_path}/duckdb/ingest.parquet')
         EXCEPT ALL SELECT {ours} FROM read_parquet('{tmp_path}/spark-ingest/*.parquet')))""").fetchone()[0]
    assert differ == 0
    files = con.execute(f"SELECT DISTINCT _source_file, _batch_id FROM read_parquet('{tmp_path}/spark-ingest/*.parquet')").fetchall()
    assert len(files) == 1 and files[0][0].endswith(f"/{path.name}") and files[0][1] == 0


def test_the_ingest_floor_refuses_a_format_it_cannot_read_in_one_line(spark, tmp_path):
    iot = load_contract("iot")  # JSON arrays: one record spans lines, no plain reader takes it
    with pytest.raises(floor.FloorError, match="^iot: landing format json_array; the ingest floor reads CSV or JSON lines$"):
        floor.run_ingest(spark, iot, tmp_path / "x.json", tmp_path / "out")
