"""spark_jobs/usage/runs.py: runs, failures and run time per layer and dataset, from real manifests,
maintenance reports and erasure receipts in a folder lake."""
from __future__ import annotations

import json

from spark_jobs.lake.config import LakeConfig
from spark_jobs.runs.manifest import RunManifest
from spark_jobs.usage import LakeStore, month_days, runs


def _manifest(root, layer, dataset, run_id, status, seconds, rows):
    manifest = RunManifest(run_id=run_id, dataset=dataset, layer=layer, lake_uri=str(root), started_at="x",
                           code_version="v", status=status, duration_seconds=seconds, rows_in=rows, rows_out=rows)
    path = root / "reports" / layer / dataset / run_id / "manifest.json"
    path.parent.mkdir(parents=True)
    path.write_text(manifest.to_json())


def test_runs_of_the_month_per_layer_and_dataset(tmp_path):
    root = tmp_path / "lake"
    _manifest(root, "bronze", "iot", "20261121T100000Z-0000aaaa", "succeeded", 4.5, 100)
    _manifest(root, "bronze", "iot", "20261122T100000Z-0000bbbb", "failed", 1.0, 0)
    _manifest(root, "silver", "iot", "20261121T100100Z-0000cccc", "succeeded", 9.25, 90)
    _manifest(root, "silver", "iot", "20261031T235959Z-0000dddd", "succeeded", 99.0, 90)  # October: left out
    (root / "reports/maintenance/20261123T030000Z-0000eeee").mkdir(parents=True)
    (root / "reports/maintenance/20261123T030000Z-0000eeee/report.json").write_text(
        json.dumps({"status": "completed", "duration_seconds": 30.0}))
    (root / "reports/erasure/er-1").mkdir(parents=True)
    (root / "reports/erasure/er-1/receipt.json").write_text(json.dumps(
        {"status": "completed", "requested_at": "2026-11-24T10:00:00Z", "completed_at": "2026-11-24T10:02:00Z"}))
    store = LakeStore(LakeConfig(lake_uri=str(root)))
    found = runs.collect_runs(runs.report_keys(store.keys), runs.read_json_or_empty(store.read_text), "2026-11")
    rows = {(r.layer, r.dataset): r.to_dict() for r in runs.summarise(found)}
    assert rows[("bronze", "iot")] == {"layer": "bronze", "dataset": "iot", "runs": 2, "succeeded": 1, "failed": 1,
                                       "seconds": 5.5, "rows_in": 100, "rows_out": 100}
    assert rows[("silver", "iot")]["runs"] == 1 and rows[("silver", "iot")]["seconds"] == 9.2
    assert rows[("maintenance", "-")]["seconds"] == 30.0 and rows[("erasure", "-")]["seconds"] == 120.0
    daily = runs.seconds_by_day(found, month_days("2026-11"))
    assert daily["bronze"][20] == 4.5 and daily["bronze"][21] == 1.0 and sum(daily["erasure"]) == 120.0
