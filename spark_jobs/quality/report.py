"""Per-run data-quality report: ``reports/<layer>/<dataset>/<run_id>/`` in the lake, mirrored locally.

Files in a run folder (next to the job's ``manifest.json``):
- ``validation.json``: the Great Expectations validation result, as GX wrote it;
- ``summary.json``: our one machine-readable summary per run (status, exit code, each expectation with
  observed value / threshold / result, quarantine counts per rule, previous run);
- ``summary.html``: the same for people, self-contained (inline CSS, no JavaScript, no downloads);
- ``data_docs/``: the GX Data Docs site of this run (HTML only).
The tenant index (``reports/index.html``) is rebuilt from the mirror by ``index.py``.
"""
from __future__ import annotations

import datetime as dt
import html
import json
import os
from pathlib import Path
from typing import Any

from spark_jobs.quality import storage

SUMMARY_VERSION = 1


def state_dir() -> Path:
    """``$TENANTLAKE_STATE_DIR``, else ``<repo>/.local`` in a checkout, else ``./.local``: on EMR the
    package is a zip on ``--py-files`` (no folder to write under), and the working directory is the
    driver's scratch space."""
    checkout = Path(__file__).resolve().parents[2]
    default = checkout / ".local" if checkout.is_dir() else Path.cwd() / ".local"
    return Path(os.environ.get("TENANTLAKE_STATE_DIR") or default)


def mirror_root(tenant: str) -> Path:
    """Local mirror of a tenant's ``reports/`` prefix: ``$TENANTLAKE_STATE_DIR/dq/<tenant>/reports``."""
    return state_dir() / "dq" / tenant / "reports"


def run_folder(layer: str, dataset: str, run_id: str) -> str:
    return f"reports/{layer}/{dataset}/{run_id}"


def previous_run_id(spark: Any, lake_uri: str | None, mirror: Path, layer: str, dataset: str, run_id: str) -> str | None:
    """The latest run of the same layer and dataset before ``run_id`` (run ids sort by time)."""
    candidates: set[str] = set(storage.list_dirs(spark, str(mirror / layer / dataset)))
    if lake_uri:
        try:
            candidates |= set(storage.list_dirs(spark, storage.join(lake_uri, "reports", layer, dataset)))
        except Exception:  # noqa: BLE001 - the lake listing is a nicety; the mirror still answers
            pass
    earlier = sorted(c for c in candidates if c < run_id)
    return earlier[-1] if earlier else None


def manifest_counts(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest's counts: top-level numbers plus any nested ``counts`` mapping, flattened."""
    counts: dict[str, Any] = {}
    for key, value in manifest.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            counts[key] = value
        elif isinstance(value, dict) and key in ("counts", "rows"):
            counts.update({f"{k}": v for k, v in value.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
    return counts


def build_summary(*, tenant: str, layer: str, dataset: str, run_id: str, validation: Any, manifest: dict[str, Any],
                  previous: str | None, exit_code: int, published: bool) -> dict[str, Any]:
    results = validation.results
    failed = [r for r in results if not r["success"]]
    row_counts = [r["observed_value"] for r in results if r["name"].split("/")[-1] == "row_count"
                  and isinstance(r["observed_value"], int)]
    rows = sum(row_counts) if row_counts else None  # several outputs (batches, gold tables): their total
    quarantine = validation.quarantine or {"total": 0, "by_rule": {}, "samples": {}}
    for result in results:
        result["quarantined_rows"] = quarantine["by_rule"].get(result["rule"], 0) if result.get("rule") else 0
    return {
        "version": SUMMARY_VERSION,
        "tenant": tenant,
        "layer": layer,
        "dataset": dataset,
        "suite": validation.suite_name,
        "run_id": run_id,
        "generated_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "status": validation.status,
        "exit_code": exit_code,
        "blocking": validation.blocking,
        "published": published,
        "reason": validation.reason,
        "rows_validated": rows if isinstance(rows, int) else None,
        "validated_with_quarantine": validation.validated_with_quarantine,
        "expectations_total": len(results),
        "expectations_failed": len(failed),
        "failure_rate": round(len(failed) / len(results), 4) if results else 0.0,
        "failed_expectations": [r["name"] for r in failed],
        "counts": manifest_counts(manifest),
        "expectations": results,
        "quarantine": quarantine,
        "quarantine_location": validation.quarantine_location,
        "previous_run_id": previous,
        "landing": manifest.get("landing") or None,  # bronze: landing versions against what bronze read
        "validation_seconds": round(validation.seconds, 3),
        "links": {
            "summary_html": "summary.html",
            "validation_json": "validation.json",
            "manifest_json": "manifest.json",
            "data_docs": _docs_link(validation),
            "previous_run": f"../{previous}/summary.html" if previous else None,
            "index": "../../../index.html",
        },
    }


def _docs_parts(validation: Any) -> list[tuple[str, Any]]:
    """(sub-folder under data_docs/, validation) for each part that has rendered docs."""
    parts = validation.parts or [validation]
    if len(parts) == 1:
        return [("", parts[0])] if parts[0].docs_dir else []
    return [(part.label or f"part-{i}", part) for i, part in enumerate(parts) if part.docs_dir]


def _docs_link(validation: Any) -> str | None:
    """The Data Docs page of the first failing part (else the first part)."""
    parts = _docs_parts(validation)
    if not parts:
        return None
    folder, part = next(((f, p) for f, p in parts if p.status != "pass"), parts[0])
    return "/".join(x for x in ("data_docs", folder, part.docs_page) if x)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2rem;color:#1d2330;max-width:1200px}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #dde;padding-bottom:.2rem}
table{border-collapse:collapse;width:100%;font-size:.9rem}th,td{border:1px solid #dde;padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f4f8}.status{display:inline-block;padding:.15rem .6rem;border-radius:.3rem;font-weight:700;color:#fff}
.status-pass{background:#1f8a4c}.status-warn{background:#b7791f}.status-fail{background:#c53030}
tr.failed td{background:#fff5f5}tr.warned td{background:#fffaf0}code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85rem}
pre{white-space:pre-wrap;word-break:break-all;background:#f7f7fa;padding:.4rem;margin:.2rem 0}.meta{color:#555}
nav a{margin-right:1rem}.reason{border-left:4px solid #c53030;padding:.4rem .8rem;background:#fff5f5}
.reason.warn{border-color:#b7791f;background:#fffaf0}
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def human_bytes(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(size) < 1024 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TB"


def status_badge(status: str) -> str:
    return f'<span class="status status-{_e(status)}" data-status="{_e(status)}">{_e(status.upper())}</span>'


def render_summary_html(summary: dict[str, Any]) -> str:
    links = summary["links"]
    nav = [f'<a href="{_e(links["index"])}" id="link-index">tenant index</a>']
    if links.get("previous_run"):
        nav.append(f'<a href="{_e(links["previous_run"])}" id="link-previous">previous run ({_e(summary["previous_run_id"])})</a>')
    else:
        nav.append('<span class="meta">no previous run</span>')
    if links.get("data_docs"):
        nav.append(f'<a href="{_e(links["data_docs"])}" id="link-data-docs">GX Data Docs</a>')
    nav.append(f'<a href="{_e(links["validation_json"])}">validation.json</a>')
    nav.append('<a href="summary.json">summary.json</a>')
    nav.append(f'<a href="{_e(links["manifest_json"])}">manifest.json</a>')
    reason = ""
    if summary["reason"]:
        css = "reason" if summary["status"] == "fail" else "reason warn"
        verdict = "Not published." if not summary["published"] else "Published."
        reason = f'<p class="{css}" id="reason"><strong>{verdict}</strong> {_e(summary["reason"])}</p>'
    counts = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in summary["counts"].items())
    rows = []
    for r in summary["expectations"]:
        css = "" if r["success"] else ("failed" if r["severity"] == "error" else "warned")
        result = "pass" if r["success"] else "FAIL"
        quarantine_cell = "-"
        if r.get("rule") and r.get("quarantined_rows"):
            quarantine_cell = f'<a href="#q-{_e(r["rule"])}">{_e(r["quarantined_rows"])} rows ({_e(r["rule"])})</a>'
        elif r.get("rule"):
            quarantine_cell = f'0 rows ({_e(r["rule"])})'
        unexpected = "" if r.get("unexpected_count") is None else f'{r["unexpected_count"]} ({(r.get("unexpected_percent") or 0):.2f} %)'
        observed = r.get("exception") or r.get("observed_value")
        rows.append(
            f'<tr class="{css}" data-expectation="{_e(r["name"])}"><td>{_e(r["name"])}</td><td><code>{_e(r["expectation"])}</code></td>'
            f'<td>{_e(r["severity"])}</td><td>{_e(r["threshold"])}</td><td>{_e(observed)}</td><td>{_e(unexpected)}</td>'
            f'<td class="result">{result}</td><td>{quarantine_cell}</td></tr>')
    quarantine = summary["quarantine"]
    q_parts = [f'<p>{_e(quarantine["total"])} rows quarantined in this run. '
               f'Location: <code>{_e(summary.get("quarantine_location") or "-")}</code> '
               f'(filter <code>_run_id = \'{_e(summary["run_id"])}\' AND array_contains(_failed_rules, &lt;rule&gt;)</code>).</p>']
    if quarantine["by_rule"]:
        q_parts.append("<table><tr><th>rule</th><th>rows</th><th>sample rows</th></tr>")
        for rule, count in quarantine["by_rule"].items():  # every reason: at most one per contract rule
            samples = "".join(f"<pre>{_e(json.dumps(s, ensure_ascii=False))}</pre>" for s in quarantine["samples"].get(rule, []))
            q_parts.append(f'<tr id="q-{_e(rule)}"><td>{_e(rule)}</td><td>{_e(count)}</td><td>{samples}</td></tr>')
        q_parts.append("</table>")
    title = f'{summary["layer"]} / {summary["dataset"]} / {summary["run_id"]}'
    landing = _landing_section(summary.get("landing"))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>DQ {_e(summary["status"].upper())}: {_e(title)}</title>
<style>{_CSS}</style></head><body>
<h1>Data quality: {_e(title)} {status_badge(summary["status"])}</h1>
<p class="meta">tenant <strong>{_e(summary["tenant"])}</strong> &middot; suite <code>{_e(summary["suite"])}</code> &middot;
published: <strong id="published">{"yes" if summary["published"] else "no"}</strong> &middot; exit code {_e(summary["exit_code"])} &middot;
{_e(summary["expectations_failed"])} of {_e(summary["expectations_total"])} expectations failed &middot; validation took {_e(summary["validation_seconds"])} s &middot; generated {_e(summary["generated_at"])}</p>
<nav>{" ".join(nav)}</nav>
{reason}
<h2>Run manifest counts</h2>
<table>{counts or '<tr><td>no counts in the manifest</td></tr>'}</table>
<h2>Expectations</h2>
<table id="expectations"><tr><th>name</th><th>expectation</th><th>severity</th><th>threshold</th><th>observed</th><th>unexpected</th><th>result</th><th>quarantined rows</th></tr>
{"".join(rows)}</table>
<h2>Quarantine reasons</h2>
{"".join(q_parts)}
{landing}</body></html>
"""


def _landing_section(landing: dict[str, Any] | None) -> str:
    """Bronze runs: the landing object versions against what bronze read, each version never ingested named
    (``spark_jobs/jobs/landing_versions.py``)."""
    if not landing:
        return ""
    counts = "".join(f"<tr><th>{_e(label)}</th><td>{_e(landing.get(key))}</td></tr>" for key, label in (
        ("versions", "object versions in landing"), ("ingested", "ingested (read by bronze, or the same bytes as a "
                                                                  "version it read)"),
        ("same_content", "of which identical rewrites"), ("pending", "pending (not read by bronze yet)"),
        ("not_ingested", "never ingested")))
    missed = landing.get("not_ingested_versions") or []
    rows = "".join(f'<tr class="failed"><td><code>{_e(v["key"])}</code></td><td>{_e(v["version_id"] or "-")}</td>'
                   f'<td>{_e(v["last_modified"])}</td><td>{_e(v["size"])}</td><td>{_e(v["reason"])}</td></tr>'
                   for v in missed)
    listed = ""
    if missed:
        more = int(landing.get("not_ingested") or 0) - len(missed)
        listed = ("<p class=\"reason warn\" id=\"landing-not-ingested\">Bronze reads each landing name once: these "
                  "versions will never be ingested. Land their bytes under new names (<code>python -m spark_jobs "
                  "land</code> names objects by their content).</p><table><tr><th>key</th><th>version</th>"
                  f"<th>written</th><th>bytes</th><th>why</th></tr>{rows}</table>"
                  + (f"<p>and {more} more (<code>python -m spark_jobs counts --json</code>)</p>" if more > 0 else ""))
    compared = "" if landing.get("content_compared", True) else (
        "<p class=\"meta\">Identical rewrites are not told apart here (no ETags to compare: a folder lake, or no "
        "right to list versions): a rewrite after bronze read its name counts as never ingested.</p>")
    return f'<h2>Landing</h2>\n<table id="landing">{counts}</table>\n{compared}{listed}\n'



def write_run_report(spark: Any, *, lake_uri: str | None, tenant: str, summary: dict[str, Any],
                     validation: Any, manifest: dict[str, Any], report_dir: str | None = None) -> tuple[str, Path]:
    """Write the run folder to the mirror, then copy it to the lake. Returns (lake folder or "", mirror folder)."""
    folder = run_folder(summary["layer"], summary["dataset"], summary["run_id"])
    mirror = mirror_root(tenant).parent / folder
    mirror.mkdir(parents=True, exist_ok=True)
    (mirror / "validation.json").write_text(json.dumps(validation.gx_result, indent=1, default=str))
    (mirror / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    (mirror / "summary.html").write_text(render_summary_html(summary))
    (mirror / "manifest.json").write_text(json.dumps(manifest, indent=1, default=str))
    for sub_folder, part in _docs_parts(validation):
        storage.copy_tree(spark, part.docs_dir, str(mirror / "data_docs" / sub_folder), suffixes=(".html",))
    lake_folder = ""
    if lake_uri:
        lake_folder = report_dir or storage.join(lake_uri, folder)
        # manifest.json belongs to the job (it writes its own); everything else is ours.
        storage.copy_tree(spark, mirror, lake_folder, suffixes=(".html", "validation.json", "summary.json"))
    return lake_folder, mirror
