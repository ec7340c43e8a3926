"""bench/export.py: the export it writes spans the history it says, the month variant's contract is the
reviewed one with monthly partitions, and its result renders with its checks. (The benchmark itself, land and
run-all on the emulator, is what `make bench-export` runs; the same commands are tested on an applied tenant
in tests/spark_jobs/landing/test_land_real_data.py.)"""
from __future__ import annotations

import math

from bench import export, report
from bench.common import target_line, write_result
from bench.ingest_data import expected_counts, write_file
from spark_jobs.contract.model import load_contract


def test_the_export_spans_rows_over_stations_hours(tmp_path):
    path = write_file(tmp_path / "stations.csv", 2000, "csv", stations=10, step_seconds=3600)
    counts = expected_counts(path, "csv")
    assert counts["rows"] == 2000
    assert counts["event_dates"] == math.ceil(2000 / 10 / 24)  # 200 hours from midnight: 9 dates
    # The default shape (500 stations a minute) is unchanged: 2,000 rows are 4 minutes of one day.
    assert expected_counts(write_file(tmp_path / "default.csv", 2000, "csv"), "csv")["event_dates"] == 1


def test_month_variant_is_the_reviewed_contract_by_month(tmp_path, monkeypatch):
    contracts = {}
    for variant in export.VARIANTS:
        monkeypatch.setenv("TENANTLAKE_CONTRACTS_DIR", str(export._contracts(tmp_path, variant)))
        contracts[variant] = load_contract(export.DATASET)
    assert contracts["day"].partition_granularity == "day"
    assert contracts["month"].partition_granularity == "month"
    assert contracts["month"].key == contracts["day"].key and contracts["month"].schema == contracts["day"].schema


def test_report_renders_the_rows_targets_and_checks(tmp_path):
    rows = [{"variant": "month", "partitions": "month", "rows": 26115, "mb": 2.3, "infer_s": 3.1, "land_s": 4.2,
             "run_all_s": 75.5, "peak_total_mb": 1500.0, "silver_rows": 26000, "quarantined": 50, "gold_rows": 109}]
    path = write_result("export", {"rows": rows, "targets": [target_line("month: run-all", 75.5, 60.0, higher_is_better=False)],
                                   "checks": [{"check": "month: counts equal", "equal": True}]}, results_dir=tmp_path)
    assert "[A first export](results/export.md)" in report.render(tmp_path)
    text = report.render_result(path)
    assert "# A first export" in text and "| month |" in text and "75.5" in text
    assert "**below target**" in text and "Checks: month: counts equal yes" in text
