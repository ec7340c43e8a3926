"""The DuckDB reference of the pipeline benchmark gives the same silver, quarantine and gold as our Spark
jobs (small generated data, local lake), and its equality checks fail when the outputs differ."""
from __future__ import annotations

import shutil

import duckdb
import pytest

from bench import duckdb_reference as ref
from spark_jobs import cli
from spark_jobs.contract.model import load_contract
from spark_jobs.jobs.layer import run_layer
from spark_jobs.lake.config import resolve_lake

RECORDS = {"iot": 3000, "clickstream": 3000}


@pytest.fixture(scope="module")
def spark():
    from spark_jobs.runs.session import build_session

    return build_session("tenantlake-bench-tests", driver_memory="1g", small_inputs=True)


@pytest.fixture(scope="module")
def pipeline(spark, tmp_path_factory):
    """Generate -> bronze -> silver -> gold with our jobs, then the DuckDB reference on the same bronze."""
    work = tmp_path_factory.mktemp("bench-ref")
    lake = work / "lake"
    monkey = pytest.MonkeyPatch()
    monkey.setenv("TENANTLAKE_STATE_DIR", str(work / "state"))
    monkey.setenv("TENANTLAKE_VALIDATION", "off")  # equality of outputs; expectations are tested elsewhere
    out = {}
    try:
        for dataset, records in RECORDS.items():
            assert cli.main(["datagen", "--dataset", dataset, "--records", str(records), "--batch-size", "250",
                             "--bad-rate", "0.02", "--late-rate", "0.02", "--seed", "7", "--lake-uri", str(lake)]) == 0
            manifests = {}
            for layer in ("bronze", "silver", "gold"):
                manifests[layer] = run_layer(spark, resolve_lake(lake_uri=str(lake)), dataset, layer,
                                                 progress=lambda line: None)
            contract = load_contract(dataset)
            con = ref.connect()
            reference = work / f"duckdb-{dataset}"
            counts = ref.run_silver(con, contract, lake / "bronze" / dataset, reference)
            gold = ref.run_gold(con, contract, reference / "silver", reference)
            con.close()
            out[dataset] = {"manifests": manifests, "counts": counts, "gold": gold, "reference": reference}
    finally:
        monkey.undo()
    out["lake"] = lake
    return out


@pytest.mark.parametrize("dataset", list(RECORDS))
def test_reference_equals_our_jobs(pipeline, dataset):
    run = pipeline[dataset]
    silver = run["manifests"]["silver"]
    assert run["counts"]["rows_in"] == silver["rows_in"] == RECORDS[dataset]
    assert (run["counts"]["rows_out"], run["counts"]["quarantined"], run["counts"]["duplicates"], run["counts"]["late"]) \
        == (silver["rows_out"], silver["quarantined"], silver["duplicates"], silver["late"])
    assert silver["quarantined"] > 0 and silver["duplicates"] > 0 and silver["late"] > 0  # the rules are exercised
    assert run["gold"]["output_rows"] == run["manifests"]["gold"]["output_rows"]
    checks = ref.compare_all(dataset, pipeline["lake"], run["reference"], silver, run["counts"])
    assert {c["check"] for c in checks} >= {"silver_rows", "quarantine_rows", "quarantine_by_rule", "silver_checksum",
                                           *[f"gold_{g}" for g in load_contract(dataset).gold]}
    assert [c for c in checks if not c["equal"]] == []
    by_rule = next(c for c in checks if c["check"] == "quarantine_by_rule")["ours"]
    assert {"malformed_record", "unknown_fields"} <= set(by_rule)


def _rewrite(folder, sql: str) -> None:
    """Replace a parquet folder by ``sql`` over its own rows (``t``)."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_parquet('{folder}/**/*.parquet', hive_partitioning = true)")
    shutil.rmtree(folder)
    con.execute(f"COPY ({sql}) TO '{folder}' (FORMAT PARQUET, PARTITION_BY (event_date))")
    con.close()


def test_checks_fail_when_outputs_differ(pipeline, tmp_path):
    run = pipeline["iot"]
    broken = tmp_path / "duckdb-iot"
    shutil.copytree(run["reference"], broken)
    # Within tolerance: a float that differs in the 12th digit is still equal.
    _rewrite(broken / "gold" / "iot_hourly", "SELECT * REPLACE (temperature_avg * (1 + 1e-12) AS temperature_avg) FROM t")
    assert all(c["equal"] for c in ref.compare_gold(ref.connect(), load_contract("iot"), pipeline["lake"], broken))
    # Beyond tolerance in one gold row, one silver row dropped, one quarantined row with another rule.
    first_row = "(SELECT *, row_number() OVER (ORDER BY {}) AS rn FROM t)"
    _rewrite(broken / "gold" / "iot_hourly",
             "SELECT * EXCLUDE (rn) REPLACE (CASE WHEN rn = 1 THEN temperature_avg + 0.01 ELSE temperature_avg END "
             f"AS temperature_avg) FROM {first_row.format('sensor_id, event_hour')}")
    _rewrite(broken / "silver", "SELECT * FROM t WHERE event_id <> (SELECT min(event_id) FROM t)")
    _rewrite(broken / "quarantine",
             "SELECT * EXCLUDE (rn) REPLACE (CASE WHEN rn = 1 THEN ['battery_range'] ELSE _failed_rules END "
             f"AS _failed_rules) FROM {first_row.format('_source_file, _record_index')}")
    failed = {c["check"]: c for c in ref.compare_all("iot", pipeline["lake"], broken) if not c["equal"]}
    assert set(failed) == {"silver_rows", "silver_checksum", "quarantine_by_rule", "gold_iot_hourly"}
    assert failed["silver_rows"]["ours"] == failed["silver_rows"]["duckdb"] + 1
    assert "1 rows differ" in failed["gold_iot_hourly"]["detail"]
