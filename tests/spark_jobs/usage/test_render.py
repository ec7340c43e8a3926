"""spark_jobs/usage/render.py: the per-layer table and the estimate agree on EMR on EKS: the table's vCPU-hours
are the quantity the estimate prices, and local runs are priced apart, as hypothetical, not in the total."""
from __future__ import annotations

import pytest

from spark_jobs.usage import cost, render


def _usage(emr_rows: list[dict], emr_source: str) -> dict:
    usage = {"tenant": "acme", "month": "2026-11", "generated_at": "2026-11-30T00:00:00Z",
             "storage": {"source": "listing", "as_of": "2026-11-30T00:00:00Z", "inventory_configured": False, "rows": [
                 {"layer": "silver", "dataset": "iot", "bytes_by_class": {"STANDARD": cost.GB}, "versions_written": 10,
                  "current_bytes": cost.GB, "current_objects": 3, "noncurrent_bytes": 0, "noncurrent_objects": 0,
                  "delete_markers": 0}]},
             "runs": {"rows": [{"layer": "silver", "dataset": "iot", "runs": 2, "succeeded": 2, "failed": 0,
                                "seconds": 1800.0, "rows_in": 10, "rows_out": 9}]},
             "emr": {"source": emr_source, "rows": emr_rows},
             "daily": {"days": ["2026-11-01"], "seconds": {"silver": [1800.0]}, "stored_bytes": {"silver": [cost.GB]}}}
    usage["cost"] = cost.estimate(usage, cost.load_prices(), "us-east-1")
    return usage


def _row(text: str, layer: str) -> list[str]:
    return next(line for line in text.splitlines() if line.strip().startswith(layer + " ")).split()


def test_the_table_shows_the_emr_vcpu_hours_the_estimate_prices():
    usage = _usage([{"layer": "pipeline", "dataset": "iot", "job_runs": 1, "hours": 0.5, "vcpu_hours": 2.5,
                     "memory_gb_hours": 7.0}], "describe_job_run")
    priced = {line["item"]: line["quantity"] for line in usage["cost"]["lines"]}
    assert sum(r["vcpu_hours"] for r in render.layer_totals(usage)) == priced["EMR on EKS vCPU"] == 2.5
    text = render.text(usage)
    assert _row(text, "pipeline")[-1] == "2.500" and _row(text, "silver")[-1] == "0.000"
    assert "hypothetical" not in text and "hypothetical" not in render.page(usage)


def test_local_runs_show_no_emr_vcpu_hours_and_their_emr_price_apart_from_the_total():
    usage = _usage([], "none")
    assert not [line for line in usage["cost"]["lines"] if line["item"].startswith("EMR")]
    text = render.text(usage)
    assert _row(text, "silver")[-1] == "-"
    total = float(_row(text, "total")[-1])
    assert total == usage["cost"]["total_usd"] == pytest.approx(
        sum(line["usd"] for line in usage["cost"]["lines"]), abs=1e-4)
    hypothetical = text.split("hypothetical, not in the total: ", 1)[1].splitlines()
    assert hypothetical[0].startswith("2 runs made without EMR on EKS, had they run there; the runs' own time, 1800 s, at")
    assert hypothetical[1].split()[:4] == ["EMR", "on", "EKS", "vCPU"] and hypothetical[1].split()[4] == "2.5000"
    assert float(hypothetical[3].split()[-1]) == usage["cost"]["hypothetical"]["usd"] > 0
    page = render.page(usage)
    assert 'id="hypothetical"' in page and "not in the total" in page
    assert f'<strong id="total">{usage["cost"]["total_usd"]:.4f} USD</strong>' in page
