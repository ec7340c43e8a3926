"""The tenant index: runs by layer and dataset, status badges, trend chart, index.json."""
from __future__ import annotations

import json

from spark_jobs.quality import index


def summary(run_id: str, status: str, failed: list[str], rows: int = 100, layer: str = "silver",
            dataset: str = "iot") -> dict:
    return {"layer": layer, "dataset": dataset, "run_id": run_id, "status": status, "rows_validated": rows,
            "failed_expectations": failed, "expectations_failed": len(failed), "expectations_total": 10,
            "failure_rate": len(failed) / 10, "published": status != "fail", "quarantine": {"total": 3}}


def _write(root, s):
    folder = root / s["layer"] / s["dataset"] / s["run_id"]
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps(s))


def test_index_lists_runs_by_layer_with_status_and_trend(tmp_path):
    runs = [summary(f"20261121T{h:02d}0000Z-0000000{h % 10}", st, f, rows)
            for h, st, f, rows in [(1, "pass", [], 100), (2, "warn", ["event_ts_freshness"], 150),
                                   (3, "fail", ["sensor_id_regex", "temperature_range"], 90)]]
    runs += [summary(f"20261121T{h:02d}0000Z-0000000{h}", "pass", [], layer="bronze") for h in range(12)]
    for s in runs:
        _write(tmp_path, s)
    target = index.build_index("acme", tmp_path)
    page = target.read_text()
    assert page.index('id="bronze-iot"') < page.index('id="silver-iot"')  # layers in medallion order
    silver = page[page.index('id="silver-iot"'):]
    assert 'data-status="fail"' in silver.split("</h2>")[0]  # the latest run's status in the heading
    assert silver.count('<rect class="bar"') == 3 and "sensor_id_regex, temperature_range" in silver
    assert 'href="silver/iot/20261121T030000Z-00000003/summary.html"' in silver
    bronze = page[page.index('id="bronze-iot"'):page.index('id="silver-iot"')]
    assert bronze.count('<rect class="bar"') == index.TREND_RUNS  # 12 runs, chart shows the last 10
    assert "<script" not in page and "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    latest = json.loads((tmp_path / "index.json").read_text())["latest"]
    assert latest["silver/iot"] == {"run_id": "20261121T030000Z-00000003", "status": "fail"}


def _maintenance(root, run_id: str, status: str, before: dict, after: dict, error: str = "") -> None:
    folder = root / "maintenance" / run_id
    folder.mkdir(parents=True)
    report = {"run_id": run_id, "status": status, "tables": [{"table": "silver.iot", "orphan_files_removed": 2}],
              "totals": {"before": before, "after": after}, "duration_seconds": 12.5,
              **({"error": error} if error else {})}
    (folder / "report.json").write_text(json.dumps(report))


def test_index_lists_maintenance_runs_with_files_and_bytes_before_and_after(tmp_path):
    stats = {"snapshots": 200, "data_files": 200, "data_bytes": 4_000_000, "retained_data_files": 250,
             "retained_data_bytes": 5_000_000}
    _maintenance(tmp_path, "20261122T030000Z-0000aaaa", "completed", stats,
                 {"snapshots": 1, "data_files": 7, "data_bytes": 1_500_000, "retained_data_files": 7,
                  "retained_data_bytes": 1_500_000})
    _maintenance(tmp_path, "20261123T030000Z-0000bbbb", "failed", stats, stats,
                 error="maintain iot: erasure request er-1 is in progress on this dataset")
    page = index.build_index("acme", tmp_path).read_text()
    section = page[page.index('<section id="maintenance">'):]
    rows = section.split("<tr data-maintenance=")[1:]
    assert [r.split('"')[1] for r in rows] == ["20261123T030000Z-0000bbbb", "20261122T030000Z-0000aaaa"]  # newest first
    done = rows[1]
    assert 'href="maintenance/20261122T030000Z-0000aaaa/report.json"' in done
    assert "<td>200 &rarr; 7</td>" in done and "<td>4.0 &rarr; 1.5</td>" in done  # data files, data MB
    assert "<td>250 &rarr; 7</td>" in done and "<td>5.0 &rarr; 1.5</td>" in done  # kept in storage
    assert "<td>200 &rarr; 1</td>" in done and "<td>2</td>" in done  # snapshots, orphans removed
    assert 'data-status="fail"' in rows[0] and "erasure request er-1 is in progress" in rows[0]
    latest = json.loads((tmp_path / "index.json").read_text())["maintenance"]
    assert latest["run_id"] == "20261123T030000Z-0000bbbb" and latest["status"] == "failed"
