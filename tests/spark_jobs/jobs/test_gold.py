"""The gold job inside run-all: it reads only the event dates silver changed since gold's watermark, and the
tables it leaves equal what a full gold run (``--full``) builds."""
from __future__ import annotations

import json
import shutil

import pytest

from spark_jobs import cli
from spark_jobs.io import tables
from spark_jobs.lake.config import LakeConfig

pytestmark = pytest.mark.integration


def _last_manifest(lake_dir, layer: str) -> dict:
    runs = sorted((lake_dir / "reports" / layer / "iot").iterdir(), key=lambda run: run.stat().st_mtime_ns)
    return json.loads((runs[-1] / "manifest.json").read_text())


def _gold_rows(spark, lake: LakeConfig) -> list[tuple]:
    gold = tables.table(spark, lake, "gold", "iot_hourly")
    return sorted(tuple(r) for r in tables.read(spark, gold).collect())


def test_run_all_gold_reads_only_the_dates_silver_changed(spark, tmp_path, monkeypatch):
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TENANTLAKE_VALIDATION", "off")
    lake_dir = tmp_path / "lake"
    lake = LakeConfig(lake_uri=str(lake_dir))
    args = ["--lake-uri", str(lake_dir), "--dataset", "iot"]
    datagen = ["datagen", "--dataset", "iot", "--records", "200", "--batch-size", "50", "--interval", "3600",
               "--lake-uri", str(lake_dir)]
    assert cli.main([*datagen, "--start", "2024-03-01T00:00:00Z"]) == 0
    assert cli.main(["run-all", *args]) == 0
    first_gold = _last_manifest(lake_dir, "gold")
    assert first_gold["event_dates"] == ["2024-03-01"]

    # The first day's bronze is gone (as bronze's lifecycle rule would expire it); a second day lands.
    shutil.rmtree(lake_dir / "bronze" / "iot" / "_batch_id=0")
    day2 = tmp_path / "day2"
    assert cli.main([*datagen[:-1], str(day2), "--start", "2024-03-02T00:00:00Z", "--seed", "7"]) == 0
    for landed in (day2 / "landing" / "iot").iterdir():  # datagen names files by index: rename them apart
        shutil.copy(landed, lake_dir / "landing" / "iot" / f"day2-{landed.name}")
    assert cli.main(["run-all", *args]) == 0
    silver, gold = _last_manifest(lake_dir, "silver"), _last_manifest(lake_dir, "gold")
    assert silver["event_dates"] == ["2024-03-02"]
    assert gold["event_dates"] == ["2024-03-02"]
    assert gold["rows_in"] == silver["rows_out"] < silver["rows_out"] + first_gold["rows_in"]
    incremental = _gold_rows(spark, lake)
    gold_table = tables.table(spark, lake, "gold", "iot_hourly")
    dates = {str(r[0]) for r in tables.read(spark, gold_table).select("event_date").distinct().collect()}
    assert dates == {"2024-03-01", "2024-03-02"}  # the first day's gold was kept, not rebuilt from nothing

    # Nothing changed in silver since: a gold run reads nothing. A full one (--full) reads every silver date and
    # builds exactly the same table.
    assert cli.main(["run", "--layer", "gold", *args]) == 0
    assert _last_manifest(lake_dir, "gold")["rows_in"] == 0
    assert cli.main(["run", "--layer", "gold", "--full", *args]) == 0
    full = _last_manifest(lake_dir, "gold")
    assert full["mode"] == "full"
    assert full["rows_in"] == first_gold["rows_in"] + gold["rows_in"]
    assert full["event_dates"] == ["2024-03-01", "2024-03-02"]
    assert _gold_rows(spark, lake) == incremental
