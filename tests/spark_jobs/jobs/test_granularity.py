"""``partition_granularity: month``: silver, gold and the quarantine in month partitions; a one-day run
keeps the month's other days; changing the granularity back moves every layer without losing a row."""
from __future__ import annotations

import json

import pytest
import yaml

from spark_jobs import cli
from spark_jobs.contract.model import CONTRACTS_DIR
from spark_jobs.io import tables
from spark_jobs.lake.config import LakeConfig

pytestmark = pytest.mark.integration


def _contract(folder, granularity: str) -> None:
    iot = yaml.safe_load((CONTRACTS_DIR / "iot.yaml").read_text())
    iot["partition_granularity"] = granularity
    (folder / "iot.yaml").write_text(yaml.safe_dump(iot))


def _last_manifest(lake_dir, layer: str) -> dict:
    runs = sorted((lake_dir / "reports" / layer / "iot").iterdir(), key=lambda run: run.stat().st_mtime_ns)
    return json.loads((runs[-1] / "manifest.json").read_text())


def _state(spark, lake: LakeConfig, lake_dir) -> dict:
    """Every layer's content (silver and gold rows, quarantined rows) and how each is partitioned."""
    silver, gold = (tables.table(spark, lake, "silver", "iot"), tables.table(spark, lake, "gold", "iot_hourly"))
    quarantine = spark.read.parquet(str(lake_dir / "quarantine" / "iot"))
    return {
        # Without _is_late: a --date run judges lateness among that date's rows only (a file's newest record
        # may fall on another date), at either granularity.
        "silver": sorted(tuple(r) for r in tables.read(spark, silver).drop("_is_late").collect()),
        "gold": sorted(tuple(r) for r in tables.read(spark, gold).collect()),
        "quarantine": sorted((r["_source_file"], r["_record_index"], str(r["event_date"]))
                             for r in quarantine.collect()),
        "specs": (tables.spec_terms(spark, silver), tables.spec_terms(spark, gold)),
        "quarantine_folders": sorted(p.name for p in (lake_dir / "quarantine" / "iot").iterdir()
                                     if not p.name.startswith(("_", "."))),
    }


def test_month_partitions_keep_other_days_and_a_changed_granularity_loses_nothing(spark, tmp_path, monkeypatch):
    contracts = tmp_path / "contracts"
    contracts.mkdir()
    _contract(contracts, "month")
    monkeypatch.setenv("TENANTLAKE_CONTRACTS_DIR", str(contracts))
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TENANTLAKE_VALIDATION", "off")
    lake_dir = tmp_path / "lake"
    lake = LakeConfig(lake_uri=str(lake_dir))
    args = ["--lake-uri", str(lake_dir), "--dataset", "iot"]
    # Four files a day apart across a month end (2024 is a leap year): 02-28, 02-29, 03-01, 03-02.
    assert cli.main(["datagen", "--dataset", "iot", "--records", "400", "--batch-size", "100", "--interval", "86400",
                     "--start", "2024-02-28T00:00:00Z", "--bad-rate", "0.05", "--lake-uri", str(lake_dir)]) == 0
    assert cli.main(["run-all", *args]) == 0
    built = _state(spark, lake, lake_dir)
    assert built["specs"] == (["months(event_ts)"], ["months(event_date)"])
    null = "__HIVE_DEFAULT_PARTITION__"  # malformed records have no event time
    assert built["quarantine_folders"] == ["event_month=2024-02", "event_month=2024-03", f"event_month={null}"]
    silver_run = _last_manifest(lake_dir, "silver")
    assert silver_run["event_dates"] == ["2024-02-28", "2024-02-29", "2024-03-01", "2024-03-02"]
    assert len(built["silver"]) == silver_run["rows_out"] and len(built["quarantine"]) == silver_run["quarantined"] > 0

    # One day again: March is one partition, so its other day's rows are written again with it.
    assert cli.main(["run", "--layer", "silver", "--date", "2024-03-01", *args]) == 0
    assert cli.main(["run", "--layer", "gold", "--date", "2024-03-01", *args]) == 0
    again = _state(spark, lake, lake_dir)
    assert again == built
    silver_day = _last_manifest(lake_dir, "silver")
    assert silver_day["event_dates"] == ["2024-03-01"]
    assert 0 < silver_day["tables"]["silver"]["kept_records"] < silver_run["rows_out"]
    assert silver_day["tables"]["silver"]["added_records"] == silver_day["rows_out"] + silver_day["tables"]["silver"]["kept_records"]

    # Back to days: a one-day run refuses the quarantine in the month layout, before writing anything.
    _contract(contracts, "day")
    assert cli.main(["run", "--layer", "silver", "--date", "2024-03-01", *args]) == 2
    assert _state(spark, lake, lake_dir) == built
    # A full run evolves both tables' partitioning and moves the quarantine; every row is where it was.
    assert cli.main(["run-all", *args]) == 0
    moved = _state(spark, lake, lake_dir)
    assert moved["specs"] == (["days(event_ts)"], ["event_date"])
    assert moved["quarantine_folders"] == sorted({f"event_date={null if q[2] == 'None' else q[2]}"
                                                  for q in built["quarantine"]})
    assert {k: moved[k] for k in ("silver", "gold", "quarantine")} == {k: built[k] for k in ("silver", "gold", "quarantine")}
