"""End to end on a local lake: datagen with injected bad records -> bronze -> silver, through the CLI.

The contract is the packaged iot contract with one override (``temperature_type`` may fail on at most
0.1 % of rows), so the injected wrong-type temperatures block silver. The report JSON must name exactly
the failing expectations, with the counts the generator's ground truth predicts.
"""
from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.integration


def test_bad_data_blocks_silver_and_the_report_shows_exact_failures(spark, tmp_path, monkeypatch):
    from spark_jobs import cli
    from spark_jobs.contract.model import CONTRACTS_DIR

    contracts = tmp_path / "contracts"
    contracts.mkdir()
    iot = yaml.safe_load((CONTRACTS_DIR / "iot.yaml").read_text())
    iot["expectations"] = {"silver": [{"name": "temperature_type", "mostly": 0.999},
                                      {"name": "event_ts_freshness", "severity": "warn"}]}
    (contracts / "iot.yaml").write_text(yaml.safe_dump(iot))
    monkeypatch.setenv("TENANTLAKE_CONTRACTS_DIR", str(contracts))
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TENANTLAKE_TENANT", "acme")
    lake, truth_file = tmp_path / "lake", tmp_path / "truth.json"

    assert cli.main(["datagen", "--dataset", "iot", "--records", "1500", "--bad-rate", "0.05",
                     "--truth-file", str(truth_file), "--lake-uri", str(lake)]) == 0
    truth = json.loads(truth_file.read_text())
    expected_by_rule = collections.Counter(bad["reason"] for bad in truth["bad"])
    assert expected_by_rule["temperature_type"] >= 2  # enough to break 0.1 %

    bronze_code = cli.main(["run", "--dataset", "iot", "--layer", "bronze", "--lake-uri", str(lake)])
    assert cli.main(["run", "--dataset", "iot", "--layer", "silver", "--lake-uri", str(lake)]) == 4

    silver_runs = sorted((lake / "reports" / "silver" / "iot").iterdir(), key=lambda run: run.stat().st_mtime_ns)
    summary = json.loads((silver_runs[-1] / "summary.json").read_text())
    assert summary["status"] == "fail" and summary["exit_code"] == 4 and summary["published"] is False
    assert [name for name in summary["failed_expectations"] if name != "event_ts_freshness"] == ["temperature_type"]
    by_name = {e["name"]: e for e in summary["expectations"]}
    temperature_type = by_name["temperature_type"]
    candidates = truth["raw_records"] - truth["duplicates"] - expected_by_rule["malformed_record"]
    assert temperature_type["unexpected_count"] == expected_by_rule["temperature_type"]
    assert temperature_type["quarantined_rows"] == expected_by_rule["temperature_type"]
    assert temperature_type["element_count"] == candidates
    assert temperature_type["severity"] == "error" and temperature_type["effective_mostly"] == 0.999
    assert summary["quarantine"]["by_rule"] == dict(expected_by_rule)
    assert "temperature_type" in summary["reason"] and not (lake / "silver" / "iot").exists()
    # Other rule-linked expectations saw their quarantined rows but stayed within mostly=0.99.
    assert by_name["temperature_range"]["success"] and by_name["temperature_range"]["quarantined_rows"] == \
        expected_by_rule["temperature_range"]
    assert (Path(tmp_path / "state" / "dq" / "acme" / "reports" / "index.html")).is_file()
    bronze = json.loads(next((lake / "reports" / "bronze" / "iot").glob("*/summary.json")).read_text())
    assert bronze_code == {"pass": 0, "warn": 5}[bronze["status"]] == bronze["exit_code"]
    malformed = [e for e in bronze["expectations"] if e["name"].endswith("malformed_rate")]
    assert sum(e["unexpected_count"] for e in malformed) == expected_by_rule["malformed_record"]


def test_warn_only_run_exits_5_and_0_with_allow_warn(spark, tmp_path, monkeypatch):
    from spark_jobs import cli

    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    lake = str(tmp_path / "lake")
    assert cli.main(["datagen", "--dataset", "iot", "--records", "300", "--lake-uri", lake]) == 0
    assert cli.main(["run", "--dataset", "iot", "--layer", "bronze", "--lake-uri", lake]) == 0
    # datagen's events start 2020-11-16: silver's freshness expectation (warn) fails, nothing else does.
    assert cli.main(["run", "--dataset", "iot", "--layer", "silver", "--lake-uri", lake]) == 5
    summary = json.loads(next((Path(lake) / "reports" / "silver" / "iot").glob("*/summary.json")).read_text())
    assert (summary["status"], summary["published"], summary["failed_expectations"]) == (
        "warn", True, ["event_ts_freshness"])
    assert cli.main(["run", "--dataset", "iot", "--layer", "silver", "--lake-uri", lake, "--allow-warn"]) == 0
    assert (tmp_path / "state" / "dq" / "local" / "reports" / "index.html").is_file()
