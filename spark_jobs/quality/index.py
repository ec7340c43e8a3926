"""The tenant's data-quality index: every run by layer and dataset, with status and a trend chart.

Built from the run folders' ``summary.json`` files under one ``reports/`` root (the local mirror, or a
folder synced from the lake). Self-contained HTML: inline CSS and inline SVG, no JavaScript.
"""
from __future__ import annotations

import datetime as dt
import html
import json
from pathlib import Path
from typing import Any

from spark_jobs.quality.report import _CSS, _e, human_bytes, status_badge

TREND_RUNS = 10    # runs shown in each trend chart
LISTED_RUNS = 20   # runs listed per layer and dataset
LAYER_ORDER = ("bronze", "silver", "gold")


def load_summaries(reports_root: Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """``{(layer, dataset): [summary, ...]}``, oldest run first."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for path in sorted(reports_root.glob("*/*/*/summary.json")):
        try:
            summary = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        grouped.setdefault((summary["layer"], summary["dataset"]), []).append(summary)
    for runs in grouped.values():
        runs.sort(key=lambda s: s["run_id"])
    return grouped


def load_receipts(reports_root: Path) -> list[dict[str, Any]]:
    """The erasure receipts (``erasure/<request>/receipt.json``), newest first."""
    receipts = []
    for path in sorted(reports_root.glob("erasure/*/receipt.json")):
        try:
            receipts.append(json.loads(path.read_text()))
        except (OSError, json.JSONDecodeError):
            continue
    return sorted(receipts, key=lambda r: r.get("completed_at") or "", reverse=True)


def render_receipts(receipts: list[dict[str, Any]]) -> str:
    """The index's erasure section: one row per request (no subject id is in a receipt: only keyed hashes)."""
    if not receipts:
        return ""
    rows = []
    for receipt in receipts:
        request = html.escape(str(receipt.get("request_id", "")))
        verification = receipt.get("verification") or {}
        badge = status_badge("pass" if receipt.get("status") == "completed" else "fail")
        rows.append(f'<tr data-erasure="{request}"><td><a href="erasure/{request}/receipt.json">{request}</a></td>'
                    f'<td>{badge} {html.escape(str(receipt.get("status", "")))}</td>'
                    f'<td>{html.escape(str(receipt.get("completed_at", "")))}</td>'
                    f'<td>{len(receipt.get("subjects") or [])}</td>'
                    f'<td>{html.escape(", ".join(sorted(receipt.get("datasets") or {})))}</td>'
                    f'<td>{int(receipt.get("object_versions_removed") or 0)}</td>'
                    f'<td>{int(verification.get("versions_scanned") or 0)} scanned, '
                    f'{int(verification.get("versions_with_subject") or 0)} with a subject</td></tr>')
    return ('<section id="erasure"><h2>Erasure requests</h2><table><tr><th>request</th><th>status</th>'
            '<th>completed</th><th>subjects</th><th>datasets</th><th>versions removed</th><th>verification</th></tr>'
            + "".join(rows) + "</table></section>")


def load_maintenance(reports_root: Path) -> list[dict[str, Any]]:
    """The table maintenance reports (``maintenance/<run_id>/report.json``), newest first."""
    reports = []
    for path in sorted(reports_root.glob("maintenance/*/report.json")):
        try:
            reports.append(json.loads(path.read_text()))
        except (OSError, json.JSONDecodeError):
            continue
    return sorted(reports, key=lambda r: r.get("run_id") or "", reverse=True)


def _change(totals: dict[str, Any], key: str, unit: float = 1.0, digits: int = 0) -> str:
    before, after = (float((totals.get(when) or {}).get(key) or 0) / unit for when in ("before", "after"))
    return f"{before:,.{digits}f} &rarr; {after:,.{digits}f}"


def render_maintenance(reports: list[dict[str, Any]]) -> str:
    """The index's table maintenance section: one row per run, its totals before and after."""
    if not reports:
        return ""
    rows = []
    for report in reports[:LISTED_RUNS]:
        run = html.escape(str(report.get("run_id", "")))
        totals = report.get("totals") or {}
        status = str(report.get("status", ""))
        detail = html.escape(str(report.get("error", ""))) if status != "completed" else ""
        rows.append(f'<tr data-maintenance="{run}"><td><a href="maintenance/{run}/report.json">{run}</a></td>'
                    f'<td>{status_badge("pass" if status == "completed" else "fail")} {html.escape(status)} {detail}</td>'
                    f'<td>{len(report.get("tables") or [])}</td>'
                    f'<td>{_change(totals, "data_files")}</td>'
                    f'<td>{_change(totals, "data_bytes", 1e6, 1)}</td>'
                    f'<td>{_change(totals, "retained_data_files")}</td>'
                    f'<td>{_change(totals, "retained_data_bytes", 1e6, 1)}</td>'
                    f'<td>{_change(totals, "snapshots")}</td>'
                    f'<td>{sum(int(t.get("orphan_files_removed") or 0) for t in report.get("tables") or [])}</td>'
                    f'<td>{html.escape(str(report.get("duration_seconds", "")))}</td></tr>')
    return ('<section id="maintenance"><h2>Table maintenance</h2><p class="meta">per run, over every table it '
            'maintained: the current snapshots\' data files and MB, the data files and MB any snapshot keeps in '
            'storage, and the snapshots, before &rarr; after</p><table><tr><th>run</th><th>status</th>'
            '<th>tables</th><th>data files</th><th>data MB</th><th>files kept</th><th>MB kept</th><th>snapshots</th>'
            '<th>orphans removed</th><th>seconds</th></tr>' + "".join(rows) + "</table></section>")


def _rows(summary: dict[str, Any]) -> int:
    value = summary.get("rows_validated")
    return int(value) if isinstance(value, (int, float)) else 0


def trend_svg(runs: list[dict[str, Any]], *, width: int = 360, height: int = 90) -> str:
    """Bars: rows validated per run; line: failure rate (failed / all expectations) on a 0-100 % axis."""
    runs = runs[-TREND_RUNS:]
    if not runs:
        return ""
    pad, slot = 4, min((width - 8) / max(len(runs), 1), 36.0)
    top_rows = max(max(_rows(r) for r in runs), 1)
    colors = {"pass": "#1f8a4c", "warn": "#b7791f", "fail": "#c53030"}
    parts = [f'<svg class="trend" role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
             f'xmlns="http://www.w3.org/2000/svg"><title>rows and failure rate, last {len(runs)} runs</title>',
             f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fafbfd" stroke="#dde"/>']
    points = []
    for i, run in enumerate(runs):
        x = pad + i * slot
        bar = (height - 2 * pad) * _rows(run) / top_rows
        parts.append(f'<rect class="bar" x="{x + 2:.1f}" y="{height - pad - bar:.1f}" width="{max(slot - 4, 1):.1f}" '
                     f'height="{bar:.1f}" fill="{colors.get(run["status"], "#888")}" opacity="0.55">'
                     f'<title>{html.escape(run["run_id"])}: {_rows(run)} rows, {run["status"]}</title></rect>')
        rate = float(run.get("failure_rate") or 0.0)
        points.append(f"{x + slot / 2:.1f},{height - pad - (height - 2 * pad) * rate:.1f}")
    parts.append(f'<polyline class="failure-rate" points="{" ".join(points)}" fill="none" stroke="#c53030" stroke-width="2"/>')
    parts += [f'<circle cx="{p.split(",")[0]}" cy="{p.split(",")[1]}" r="3" fill="#c53030"/>' for p in points]
    parts.append("</svg>")
    return "".join(parts)


def render_index(tenant: str, grouped: dict[tuple[str, str], list[dict[str, Any]]],
                 receipts: list[dict[str, Any]] | None = None, maintenance: list[dict[str, Any]] | None = None,
                 extra: str = "") -> str:
    order = sorted(grouped, key=lambda k: (LAYER_ORDER.index(k[0]) if k[0] in LAYER_ORDER else 9, k[1]))
    sections = []
    for layer, dataset in order:
        runs = grouped[(layer, dataset)]
        latest = runs[-1]
        lines = []
        for run in reversed(runs[-LISTED_RUNS:]):
            href = f'{layer}/{dataset}/{run["run_id"]}/summary.html'
            failed = ", ".join(run.get("failed_expectations") or []) or "-"
            lines.append(
                f'<tr data-run="{html.escape(run["run_id"])}"><td><a href="{html.escape(href)}">{html.escape(run["run_id"])}</a></td>'
                f'<td>{status_badge(run["status"])}</td><td>{_rows(run)}</td>'
                f'<td>{run.get("expectations_failed", 0)} / {run.get("expectations_total", 0)}</td>'
                f'<td>{100 * float(run.get("failure_rate") or 0):.1f} %</td><td>{run.get("quarantine", {}).get("total", 0)}</td>'
                f'<td>{"yes" if run.get("published") else "no"}</td><td>{html.escape(failed)}</td></tr>')
        sections.append(
            f'<section id="{html.escape(layer)}-{html.escape(dataset)}"><h2>{html.escape(layer)} / {html.escape(dataset)} '
            f'{status_badge(latest["status"])}</h2>'
            f'<p class="meta">latest run {html.escape(latest["run_id"])}; trend over the last {min(len(runs), TREND_RUNS)} runs '
            f'(bars: rows validated, coloured by status; line: failure rate 0-100 %)</p>{trend_svg(runs)}'
            '<table><tr><th>run</th><th>status</th><th>rows</th><th>failed expectations</th><th>failure rate</th>'
            '<th>quarantined</th><th>published</th><th>failing</th></tr>' + "".join(lines) + "</table></section>")
    generated = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = ("".join(sections) or "<p>No runs yet.</p>") + render_receipts(receipts or []) + \
        render_maintenance(maintenance or []) + extra
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Data quality: {html.escape(tenant)}</title>'
            f'<style>{_CSS}</style></head><body><h1>Data quality: tenant {html.escape(tenant)}</h1>'
            f'<p class="meta">{sum(len(v) for v in grouped.values())} runs; generated {generated}</p>{body}</body></html>\n')


def render_usage(reports_root: Path) -> str:
    """The data-quality index's "Usage and cost" section: one row per month's page (``usage/<month>/``), newest first."""
    rows = []
    for path in sorted(Path(reports_root).glob("usage/*/usage.json"), reverse=True):
        try:
            usage = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        month = _e(usage.get("month", path.parent.name))
        totals = (usage.get("storage") or {}).get("totals") or {}
        runs = sum(int(r.get("runs") or 0) for r in (usage.get("runs") or {}).get("rows") or [])
        total = (usage.get("cost") or {}).get("total_usd")
        rows.append(f'<tr data-usage="{month}"><td><a href="usage/{month}/usage.html">{month}</a></td>'
                    f'<td>{human_bytes(int(totals.get("current_bytes") or 0))}</td>'
                    f'<td>{human_bytes(int(totals.get("noncurrent_bytes") or 0))}</td><td>{runs}</td>'
                    f'<td>{_e(total)}</td><td>{_e(usage.get("generated_at"))}</td></tr>')
    if not rows:
        return ""
    return ('<section id="usage"><h2>Usage and cost</h2><p class="meta">per month: bytes stored (current, noncurrent), '
            'runs, and the estimated cost in USD (<code>make usage</code>; an estimate, see the page)</p><table><tr>'
            '<th>month</th><th>current</th><th>noncurrent</th><th>runs</th><th>estimated USD</th><th>generated</th></tr>'
            + "".join(rows) + "</table></section>")


def build_index(tenant: str, reports_root: Path) -> Path:
    """Write ``<reports_root>/index.html`` and ``index.json`` (latest status per layer/dataset)."""
    grouped = load_summaries(reports_root)
    reports_root.mkdir(parents=True, exist_ok=True)
    target = reports_root / "index.html"
    receipts = load_receipts(reports_root)
    maintenance = load_maintenance(reports_root)
    target.write_text(render_index(tenant, grouped, receipts, maintenance, extra=render_usage(reports_root)))
    latest = {f"{layer}/{dataset}": {"run_id": runs[-1]["run_id"], "status": runs[-1]["status"]}
              for (layer, dataset), runs in grouped.items()}
    erasure = {r["request_id"]: {"status": r.get("status"), "completed_at": r.get("completed_at")}
               for r in receipts if r.get("request_id")}
    latest_maintenance = ({"run_id": maintenance[0].get("run_id"), "status": maintenance[0].get("status"),
                           "totals": maintenance[0].get("totals")} if maintenance else None)
    (reports_root / "index.json").write_text(json.dumps({"tenant": tenant, "latest": latest, "erasure": erasure,
                                                         "maintenance": latest_maintenance}, indent=1))
    return target
