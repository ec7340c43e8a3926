"""The silver job's publish on the Iceberg table: a --date run replaces one day in one commit, and a
publish that validation blocks commits nothing (no new snapshot, the manifest records none)."""
from __future__ import annotations

import json

import pytest
import yaml

from spark_jobs import cli
from spark_jobs.contract.model import CONTRACTS_DIR
from spark_jobs.io import tables
from spark_jobs.lake.config import LakeConfig

pytestmark = pytest.mark.integration


def _manifest(lake_dir, run_id: str) -> dict:
    return json.loads((lake_dir / "reports" / "silver" / "iot" / run_id / "manifest.json").read_text())


def _runs(lake_dir) -> list[str]:
    return [p.name for p in sorted((lake_dir / "reports" / "silver" / "iot").iterdir(), key=lambda run: run.stat().st_mtime_ns)]


def _snapshots(spark, tbl) -> list[int]:
    return [r[0] for r in spark.sql(f"SELECT snapshot_id FROM {tbl.qualified}.snapshots ORDER BY committed_at").collect()]


def test_a_date_run_replaces_one_day_and_a_blocked_publish_commits_nothing(spark, tmp_path, monkeypatch):
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TENANTLAKE_VALIDATION", "off")
    lake_dir = tmp_path / "lake"
    lake_args = ["--lake-uri", str(lake_dir)]
    # Two event days (60 files 4 minutes apart from 2020-11-16 22:00), 5 % bad records (as in quality/test_end_to_end).
    assert cli.main(["datagen", "--dataset", "iot", "--records", "1500", "--batch-size", "25", "--interval", "240",
                     "--bad-rate", "0.05", *lake_args]) == 0
    assert cli.main(["run", "--dataset", "iot", "--layer", "bronze", *lake_args]) == 0
    assert cli.main(["run", "--dataset", "iot", "--layer", "silver", *lake_args]) == 0
    silver = tables.table(spark, LakeConfig(lake_uri=str(lake_dir)), "silver", "iot")
    full = _manifest(lake_dir, _runs(lake_dir)[-1])
    per_day = dict(spark.sql(f"SELECT CAST(event_date AS STRING), count(*) FROM {silver.qualified} GROUP BY 1").collect())
    assert sorted(per_day) == ["2020-11-16", "2020-11-17"] and sum(per_day.values()) == full["rows_out"]

    assert cli.main(["run", "--dataset", "iot", "--layer", "silver", "--date", "2020-11-17", *lake_args]) == 0
    one_day = _manifest(lake_dir, _runs(lake_dir)[-1])["tables"]["silver"]
    assert one_day["parent_id"] == full["tables"]["silver"]["snapshot_id"]
    assert one_day["added_records"] == one_day["deleted_records"] == per_day["2020-11-17"]
    assert one_day["total_records"] == full["rows_out"]
    before = _snapshots(spark, silver)

    # The packaged contract, with temperature_type allowed to fail on at most 0.1 % of rows: blocks.
    contracts = tmp_path / "contracts"
    contracts.mkdir()
    iot = yaml.safe_load((CONTRACTS_DIR / "iot.yaml").read_text())
    iot["expectations"] = {"silver": [{"name": "temperature_type", "mostly": 0.999}]}
    (contracts / "iot.yaml").write_text(yaml.safe_dump(iot))
    monkeypatch.setenv("TENANTLAKE_CONTRACTS_DIR", str(contracts))
    monkeypatch.setenv("TENANTLAKE_VALIDATION", "on")
    # No new bronze batch: an incremental run has nothing to validate; a full one validates every row again.
    assert cli.main(["run", "--dataset", "iot", "--layer", "silver", *lake_args]) == 0
    assert _manifest(lake_dir, _runs(lake_dir)[-1])["rows_in"] == 0
    before = _snapshots(spark, silver)
    assert cli.main(["run", "--dataset", "iot", "--layer", "silver", "--full", *lake_args]) == 4
    blocked = _manifest(lake_dir, _runs(lake_dir)[-1])
    assert blocked["status"] == "failed" and blocked["published"] is False and blocked["tables"] == {}
    assert _snapshots(spark, silver) == before
    assert tables.current_snapshot(spark, silver)["snapshot_id"] == one_day["snapshot_id"]


READINGS = """dataset: readings
landing: {format: json_lines}
key: [station, at]
event_time: at
evolution: additive
schema:
  - {name: station, type: string, required: true}
  - {name: at, type: timestamp, required: true, format: "yyyy-MM-dd HH:mm:ss"}
  - {name: temp, type: double}
  - {name: dewp, type: double%s}
"""


def test_a_removed_column_under_additive_keeps_every_old_rows_value(spark, tmp_path, monkeypatch):
    """``removed: true`` under ``evolution: additive``: the table keeps the column, and every row its value, through
    an incremental run, a full one and a ``--date`` one (each record's value from the table's row of the same
    record); records that come in after the removal read null."""
    from spark_jobs.jobs.layer import run_layer

    contracts, lake_dir = tmp_path / "contracts", tmp_path / "lake"
    contracts.mkdir()
    monkeypatch.setenv("TENANTLAKE_CONTRACTS_DIR", str(contracts))
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TENANTLAKE_VALIDATION", "off")
    lake = LakeConfig(lake_uri=str(lake_dir))
    landing = lake_dir / "landing" / "readings"
    landing.mkdir(parents=True)

    def land(name: str, day: int, dewp: bool) -> None:
        lines = [json.dumps({"station": s, "at": f"2024-05-0{day} 1{s[-1]}:00:00", "temp": 20.0 + day,
                             **({"dewp": 10.0 + day} if dewp else {})}) for s in ("ws-1", "ws-2")]
        (landing / name).write_text("\n".join(lines) + "\n")

    def silver_dewp() -> list[tuple]:
        tbl = tables.table(spark, lake, "silver", "readings")
        return sorted((str(r["event_date"]), r["station"], r["dewp"]) for r in tables.read(spark, tbl).collect())

    (contracts / "readings.yaml").write_text(READINGS % "")
    land("a.jsonl", 1, True)
    for layer in ("bronze", "silver"):
        run_layer(spark, lake, "readings", layer, progress=lambda line: None)
    (contracts / "readings.yaml").write_text(READINGS % ", removed: true")
    land("b.jsonl", 2, False)
    kept = [("2024-05-01", "ws-1", 11.0), ("2024-05-01", "ws-2", 11.0), ("2024-05-02", "ws-1", None),
            ("2024-05-02", "ws-2", None)]
    for layer in ("bronze", "silver"):
        run_layer(spark, lake, "readings", layer, progress=lambda line: None)
    assert silver_dewp() == kept
    assert run_layer(spark, lake, "readings", "silver", full=True, progress=lambda line: None)["mode"] == "full"
    assert silver_dewp() == kept
    run_layer(spark, lake, "readings", "silver", date="2024-05-01", progress=lambda line: None)
    assert silver_dewp() == kept


def test_the_reparse_check_reads_bronze_footers_and_runs_a_job_only_when_they_do_not_prove_the_answer(spark, tmp_path):
    """Silver parses ``_raw`` again only when a well-formed bronze row holds another contract's parse. When every
    row group's footer statistics prove that its rows carry this contract's ``_fields_id`` (no null, one value) or
    are all malformed (a broken JSON array's row: no id), the answer is "no" without a Spark job; any other footer
    leaves it to the job, which finds such a row or not."""
    from spark_jobs.contract.model import load_contract
    from spark_jobs.jobs.counters import spark_jobs_started
    from spark_jobs.jobs.silver import needs_reparse
    from spark_jobs.transforms import bronze as bronze_tx

    contract = load_contract("iot")
    current = bronze_tx.fields_id(contract.landing, contract.landing_fields)
    schema = bronze_tx.bronze_schema(contract, "long")

    def bronze_of(name, files):  # per file, its rows: (_is_malformed, _fields_id); the other columns as defaults
        folder = tmp_path / name
        for rows in files:
            frame = [[{"_raw": "{}", "_is_malformed": malformed, "_source_file": "f.jsonl", "_record_index": index,
                       "_fields_id": fields_id, "_batch_id": 0}.get(field.name) for field in schema.fields]
                     for index, (malformed, fields_id) in enumerate(rows)]
            spark.createDataFrame(frame, schema).coalesce(1).write.mode("append").parquet(str(folder))
        return spark.read.schema(schema).parquet(str(folder))

    def checked(frame):
        before = spark_jobs_started(spark)
        answer = needs_reparse(spark, frame, contract)
        return answer, spark_jobs_started(spark) - before

    # Every row stamped with this contract's parse (a malformed one too), and a file of one broken array's row
    # (malformed, no id): proven from the footers, no job.
    assert checked(bronze_of("current", [[(False, current), (True, current)], [(True, None)]])) == (False, 0)
    # Another parse in one file: the job runs and finds it.
    answer, jobs = checked(bronze_of("other", [[(False, current)], [(False, current + 1)]]))
    assert answer is True and jobs >= 1
    # A null id beside well-formed rows in one file: the footers prove nothing, the job says no.
    answer, jobs = checked(bronze_of("mixed", [[(False, current), (True, None)]]))
    assert answer is False and jobs >= 1
    # A null id on a well-formed row (bronze written before it parsed once): the job finds it.
    assert checked(bronze_of("older", [[(False, None)]]))[0] is True
