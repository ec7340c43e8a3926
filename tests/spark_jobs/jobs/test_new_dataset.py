"""The README's "Adding a dataset" example, taken verbatim from README.md, runs through every layer
without any change to the engine."""
import json
import re

import pytest

from spark_jobs.datagen.sink import write_landing
from spark_jobs.io import tables
from spark_jobs.jobs.layer import run_layer
from spark_jobs.lake.config import LakeConfig
from tests.conftest import REPO_ROOT


def _readme_example():
    readme = (REPO_ROOT / "spark_jobs" / "README.md").read_text()
    section = readme.split("### Adding a dataset in code", 1)[1].split("\n### ", 1)[0]
    contract = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    gold = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    return contract, gold


@pytest.fixture
def weather(tmp_path, monkeypatch):
    contract, gold = _readme_example()
    contracts = tmp_path / "contracts"
    contracts.mkdir()
    (contracts / "weather.yaml").write_text(contract)
    gold_dir = tmp_path / "gold_modules"
    gold_dir.mkdir()
    (gold_dir / "weather_daily.py").write_text(gold)
    import spark_jobs.transforms.gold as gold_package

    # Stands in for dropping the file into spark_jobs/transforms/gold/ (tests never edit the package).
    monkeypatch.setattr(gold_package, "__path__", [*gold_package.__path__, str(gold_dir)])
    monkeypatch.setenv("TENANTLAKE_CONTRACTS_DIR", str(contracts))
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TENANTLAKE_VALIDATION", "off")
    return LakeConfig(lake_uri=str(tmp_path / "lake"))


def test_readme_dataset_runs_end_to_end(spark, weather):
    lines = [
        {"station_id": "ws-0001", "observed_at": "2020-11-16T10:00:00Z", "rain_mm": 1.5},
        {"station_id": "ws-0001", "observed_at": "2020-11-16T11:00:00Z", "rain_mm": 0.5},
        {"station_id": "ws-0001", "observed_at": "2020-11-16T11:00:00Z", "rain_mm": 0.5},  # duplicate
        {"station_id": "ws-0002", "observed_at": "2020-11-16T10:00:00Z", "rain_mm": 2.25},  # rain_is_rounded
        {"station_id": "station-9", "observed_at": "2020-11-16T10:00:00Z", "rain_mm": 1.0},  # station_id_regex
    ]
    body = ("\n".join(json.dumps(line) for line in lines) + "\n").encode()
    write_landing(weather, "weather", [("ws-batch-0001.jsonl", body)])
    quiet = lambda _: None  # noqa: E731
    assert run_layer(spark, weather, "weather", "bronze", progress=quiet)["rows_out"] == 5
    silver = run_layer(spark, weather, "weather", "silver", progress=quiet)
    assert (silver["rows_out"], silver["quarantined"], silver["duplicates"]) == (2, 2, 1)
    gold = run_layer(spark, weather, "weather", "gold", progress=quiet)
    assert gold["rows_out"] == 2
    rows = tables.read(spark, tables.table(spark, weather, "gold", "weather_daily")).select(
        "station_id", "observations", "rain_mm")
    assert [tuple(r) for r in rows.collect()] == [("ws-0001", 2, 2.0)]
    reasons = sorted(r[0] for r in spark.read.parquet(weather.quarantine("weather")).select("_failed_rules").collect())
    assert reasons == [["rain_is_rounded"], ["station_id_regex"]]
