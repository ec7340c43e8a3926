"""The usage report for people: a terminal table and a self-contained page (inline CSS and SVG, no JavaScript)."""
from __future__ import annotations

import html
from typing import Any

from spark_jobs.quality.report import human_bytes

CHART_WIDTH, CHART_HEIGHT = 560, 120


def layer_totals(usage: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per layer: bytes (current, noncurrent), objects, runs, run time, EMR vCPU-hours."""
    totals: dict[str, dict[str, Any]] = {}

    def row(layer: str) -> dict[str, Any]:
        return totals.setdefault(layer, {"layer": layer, "current_bytes": 0, "noncurrent_bytes": 0, "objects": 0,
                                         "runs": 0, "failed": 0, "seconds": 0.0, "vcpu_hours": 0.0})
    for item in usage["storage"]["rows"]:
        entry = row(item["layer"])
        entry["current_bytes"] += item["current_bytes"]
        entry["noncurrent_bytes"] += item["noncurrent_bytes"]
        entry["objects"] += item["current_objects"] + item["noncurrent_objects"]
    for item in usage["runs"]["rows"]:
        entry = row(item["layer"])
        entry["runs"] += item["runs"]
        entry["failed"] += item["failed"]
        entry["seconds"] += item["seconds"]
    for item in usage["emr"]["rows"]:
        row(item["layer"])["vcpu_hours"] += item["vcpu_hours"]
    order = ("landing", "bronze", "silver", "gold", "quarantine", "checkpoints", "reports", "maintenance", "erasure")
    return sorted(totals.values(), key=lambda r: (order.index(r["layer"]) if r["layer"] in order else 99, r["layer"]))


def text(usage: dict[str, Any]) -> str:
    """The terminal table: per layer bytes, objects, runs and run time; then the cost lines and the total."""
    storage = usage["storage"]
    head = (f"usage of tenant {usage['tenant']} in {usage['month']} (storage from the {storage['source']}, "
            f"as of {storage['as_of']}; runs from the run manifests; EMR: {usage['emr']['source']})")
    columns = ("layer", "current", "noncurrent", "objects", "runs", "failed", "run time", "EMR vCPU-h")
    rows = [(r["layer"], human_bytes(r["current_bytes"]), human_bytes(r["noncurrent_bytes"]), str(r["objects"]),
             str(r["runs"]), str(r["failed"]), f"{r['seconds']:.1f} s", emr_vcpu_hours(usage, r))
            for r in layer_totals(usage)]
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
    lines = [head, "", "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(columns, widths)))]
    lines += ["  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths))) for row in rows]
    estimate = usage["cost"]
    lines += ["", f"estimated cost for the month ({estimate['region']}, {estimate['currency']}, list prices; an estimate):"]
    for line in estimate["lines"]:
        flag = " (price assumed: us-east-1's)" if line["assumed_price"] else ""
        lines.append(f"  {line['item']:<24} {line['quantity']:>14,.4f} {line['unit']:<15} {line['usd']:>10.4f}{flag}")
    lines.append(f"  {'total':<24} {'':>14} {'':<15} {estimate['total_usd']:>10.4f}")
    lines.append(f"  not included: {estimate['not_included']}")
    hypothetical = estimate.get("hypothetical")
    if hypothetical:
        lines += ["", f"hypothetical, not in the total: {hypothetical['what']}; {hypothetical['lines'][0]['basis']}:"]
        for line in hypothetical["lines"]:
            lines.append(f"  {line['item']:<24} {line['quantity']:>14,.4f} {line['unit']:<15} {line['usd']:>10.4f}")
        lines.append(f"  {'if on EMR on EKS':<24} {'':>14} {'':<15} {hypothetical['usd']:>10.4f}")
    return "\n".join(lines)


def emr_vcpu_hours(usage: dict[str, Any], row: dict[str, Any]) -> str:
    """A layer's EMR vCPU-hours, the quantity the estimate prices: '-' when EMR was not read (``source`` none)."""
    return f"{row['vcpu_hours']:.3f}" if usage["emr"]["source"] != "none" else "-"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2rem;color:#1d2330;max-width:1200px}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #dde;padding-bottom:.2rem}
table{border-collapse:collapse;width:100%;font-size:.9rem}th,td{border:1px solid #dde;padding:.35rem .5rem;text-align:left}
th{background:#f3f4f8}td.num{text-align:right;font-variant-numeric:tabular-nums}.meta{color:#555}
.estimate{border-left:4px solid #b7791f;padding:.4rem .8rem;background:#fffaf0}
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def chart(layer: str, days: list[str], seconds: list[float], stored: list[int]) -> str:
    """Bars: run time per day (s); line: bytes stored (versions stored today, by the day they were written)."""
    pad, slot = 4, (CHART_WIDTH - 8) / max(len(days), 1)
    top_seconds = max(max(seconds or [0]), 1e-9)
    top_bytes = max(max(stored or [0]), 1)
    inner = CHART_HEIGHT - 2 * pad
    parts = [f'<svg class="usage-chart" data-layer="{_e(layer)}" role="img" width="{CHART_WIDTH}" height="{CHART_HEIGHT}" '
             f'viewBox="0 0 {CHART_WIDTH} {CHART_HEIGHT}" xmlns="http://www.w3.org/2000/svg">'
             f'<title>{_e(layer)}: run time per day and bytes stored, {_e(days[0] if days else "")} to '
             f'{_e(days[-1] if days else "")}</title>',
             f'<rect x="0" y="0" width="{CHART_WIDTH}" height="{CHART_HEIGHT}" fill="#fafbfd" stroke="#dde"/>']
    for i, (day, value) in enumerate(zip(days, seconds)):
        if value <= 0:
            continue
        bar = inner * value / top_seconds
        parts.append(f'<rect class="bar" x="{pad + i * slot + 1:.1f}" y="{CHART_HEIGHT - pad - bar:.1f}" '
                     f'width="{max(slot - 2, 1):.1f}" height="{bar:.1f}" fill="#2b6cb0" opacity="0.6">'
                     f'<title>{_e(day)}: {value:.1f} s of runs</title></rect>')
    if stored:
        points = " ".join(f"{pad + (i + 0.5) * slot:.1f},{CHART_HEIGHT - pad - inner * v / top_bytes:.1f}"
                          for i, v in enumerate(stored))
        parts.append(f'<polyline class="stored" points="{points}" fill="none" stroke="#1f8a4c" stroke-width="2">'
                     f'<title>bytes stored: {human_bytes(stored[-1])} at the end of the month</title></polyline>')
    if days:  # the axes: the month's first and last day; the tallest bar's seconds, the line's top in bytes
        label = 'font-size="10" fill="#555"'
        parts.append(f'<text x="{pad + 2}" y="{CHART_HEIGHT - pad - 2}" {label}>{_e(days[0][5:])}</text>'
                     f'<text x="{CHART_WIDTH - pad - 2}" y="{CHART_HEIGHT - pad - 2}" text-anchor="end" {label}>'
                     f'{_e(days[-1][5:])}</text><text x="{pad + 2}" y="{pad + 10}" {label}>{max(seconds or [0]):.1f} s</text>'
                     f'<text x="{CHART_WIDTH - pad - 2}" y="{pad + 10}" text-anchor="end" {label}>'
                     f'{human_bytes(top_bytes if stored else 0)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def page(usage: dict[str, Any]) -> str:
    storage, estimate = usage["storage"], usage["cost"]
    days = usage["daily"]["days"]
    layer_rows = []
    for r in layer_totals(usage):
        layer_rows.append(
            f'<tr data-layer="{_e(r["layer"])}"><td>{_e(r["layer"])}</td><td class="num">{human_bytes(r["current_bytes"])}</td>'
            f'<td class="num">{human_bytes(r["noncurrent_bytes"])}</td><td class="num">{r["objects"]}</td>'
            f'<td class="num">{r["runs"]}</td><td class="num">{r["failed"]}</td><td class="num">{r["seconds"]:.1f}</td>'
            f'<td class="num">{emr_vcpu_hours(usage, r)}</td></tr>')
    charts = []
    layers = sorted(set(usage["daily"]["seconds"]) | set(usage["daily"]["stored_bytes"]),
                    key=lambda name: [r["layer"] for r in layer_totals(usage)].index(name)
                    if name in [r["layer"] for r in layer_totals(usage)] else 99)
    for layer in layers:
        seconds = usage["daily"]["seconds"].get(layer, [0.0] * len(days))
        stored = usage["daily"]["stored_bytes"].get(layer, [])
        charts.append(f'<section class="layer-chart" id="chart-{_e(layer)}"><h3>{_e(layer)}</h3>'
                      f'<p class="meta">{sum(seconds):.1f} s of runs in the month; {human_bytes(stored[-1] if stored else 0)} '
                      f'stored</p>{chart(layer, days, seconds, stored)}</section>')
    detail = "".join(
        f'<tr><td>{_e(r["layer"])}</td><td>{_e(r["dataset"])}</td><td class="num">{human_bytes(r["current_bytes"])}</td>'
        f'<td class="num">{r["current_objects"]}</td><td class="num">{human_bytes(r["noncurrent_bytes"])}</td>'
        f'<td class="num">{r["noncurrent_objects"]}</td><td class="num">{r["delete_markers"]}</td></tr>'
        for r in storage["rows"])
    run_rows = "".join(
        f'<tr><td>{_e(r["layer"])}</td><td>{_e(r["dataset"])}</td><td class="num">{r["runs"]}</td>'
        f'<td class="num">{r["failed"]}</td><td class="num">{r["seconds"]:.1f}</td><td class="num">{r["rows_in"]}</td>'
        f'<td class="num">{r["rows_out"]}</td></tr>' for r in usage["runs"]["rows"])
    cost_rows = "".join(
        f'<tr><td>{_e(line["item"])}</td><td class="num">{line["quantity"]:,.4f} {_e(line["unit"])}</td>'
        f'<td class="num">{line["unit_price"]}</td><td class="num">{line["usd"]:.4f}</td><td>{_e(line["basis"])}'
        f'{" (price assumed: us-east-1&#39;s)" if line["assumed_price"] else ""}</td><td>{_e(line["price_source"])}</td></tr>'
        for line in estimate["lines"])
    hypothetical = estimate.get("hypothetical")
    if hypothetical:
        rows = "".join(
            f'<tr><td>{_e(line["item"])}</td><td class="num">{line["quantity"]:,.4f} {_e(line["unit"])}</td>'
            f'<td class="num">{line["unit_price"]}</td><td class="num">{line["usd"]:.4f}</td></tr>'
            for line in hypothetical["lines"])
        if_on_emr = (f'<p class="meta" id="hypothetical">Hypothetical, <strong>not in the total</strong>: '
                     f'{_e(hypothetical["what"])}, {_e(hypothetical["lines"][0]["basis"])}: '
                     f'<strong id="hypothetical-usd">{hypothetical["usd"]:.4f} {_e(estimate["currency"])}</strong>.</p>'
                     f'<table id="hypothetical-cost"><tr><th>item</th><th>quantity</th><th>unit price</th><th>USD</th></tr>'
                     f'{rows}</table>')
    else:
        if_on_emr = ""
    emr_note = (f'EMR on EKS: {len(usage["emr"]["rows"])} rows from describe_job_run on {_e(usage["emr"].get("virtual_cluster_id"))}'
                if usage["emr"]["rows"] else f'EMR on EKS: no job runs read ({_e(usage["emr"].get("error") or "none in the month")})')
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Usage: {_e(usage["tenant"])} {_e(usage["month"])}</title>
<style>{_CSS}</style></head><body>
<h1>Usage and estimated cost: tenant {_e(usage["tenant"])}, {_e(usage["month"])}</h1>
<p class="meta"><a href="../../index.html" id="link-index">data-quality index</a> &middot; storage from the
<strong id="storage-source">{_e(storage["source"])}</strong> as of {_e(storage["as_of"])} &middot; {emr_note} &middot; generated {_e(usage["generated_at"])}</p>
<h2>Per layer</h2>
<table id="layers"><tr><th>layer</th><th>current</th><th>noncurrent</th><th>objects</th><th>runs</th><th>failed</th><th>run time (s)</th><th>EMR vCPU-hours</th></tr>
{"".join(layer_rows)}</table>
<h2>Over the month</h2>
<p class="meta">per layer: bars, run time per day; line, bytes of the versions stored today by the day they were written
(what was stored then, less what has been deleted since)</p>
{"".join(charts) or "<p>No runs and no objects.</p>"}
<h2>Estimated cost</h2>
<p class="estimate" id="estimate">An estimate, not a bill: list prices of {_e(estimate["region"])} from the price table,
each line on the basis it names. Total <strong id="total">{estimate["total_usd"]:.4f} {_e(estimate["currency"])}</strong>.
Not included: {_e(estimate["not_included"])}.</p>
<table id="cost"><tr><th>item</th><th>quantity</th><th>unit price</th><th>USD</th><th>basis</th><th>price source</th></tr>{cost_rows}</table>
{if_on_emr}
<h2>Storage per layer and dataset</h2>
<table id="storage"><tr><th>layer</th><th>dataset</th><th>current</th><th>objects</th><th>noncurrent</th><th>noncurrent versions</th><th>delete markers</th></tr>{detail}</table>
<h2>Runs per layer and dataset</h2>
<table id="runs"><tr><th>layer</th><th>dataset</th><th>runs</th><th>failed</th><th>run time (s)</th><th>rows in</th><th>rows out</th></tr>{run_rows}</table>
</body></html>
"""
