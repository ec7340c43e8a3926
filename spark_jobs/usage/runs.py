"""Runs and run time per layer and dataset in a month, from what every run already writes to the lake.

- layer jobs: ``reports/<layer>/<dataset>/<run_id>/manifest.json`` (``status``, ``duration_seconds``,
  ``rows_in``, ``rows_out``; written on success and on failure by the run envelope);
- table maintenance: ``reports/maintenance/<run_id>/report.json`` (layer ``maintenance``, dataset ``-``:
  one run maintains several datasets);
- erasure: ``reports/erasure/<request>/receipt.json`` (layer ``erasure``, its time from ``requested_at`` to
  ``completed_at``; a request resumed after a kill counts once, with its whole span).

A run belongs to the month its run id (``YYYYMMDDTHHMMSSZ-…``) or, for a receipt, its ``completed_at`` falls in.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any, Callable, Iterable

LAYER_REPORTS = ("bronze", "silver", "gold")


@dataclasses.dataclass
class RunRow:
    layer: str
    dataset: str
    runs: int = 0
    succeeded: int = 0
    failed: int = 0
    seconds: float = 0.0
    rows_in: int = 0
    rows_out: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "seconds": round(self.seconds, 1)}


@dataclasses.dataclass(frozen=True)
class Run:
    layer: str
    dataset: str
    run_id: str
    day: str
    status: str
    seconds: float
    rows_in: int = 0
    rows_out: int = 0


def run_day(run_id: str) -> str:
    """``2026-11-21`` from ``20261121T100000Z-0000aaaa``; "" when it is not a run id."""
    try:
        return dt.datetime.strptime(run_id[:16], "%Y%m%dT%H%M%SZ").strftime("%Y-%m-%d")
    except ValueError:
        return ""


def _seconds(start: str, end: str) -> float:
    try:
        moments = [dt.datetime.fromisoformat(v.replace("Z", "+00:00")) for v in (start, end)]
    except (AttributeError, ValueError):
        return 0.0
    return max((moments[1] - moments[0]).total_seconds(), 0.0)


def collect_runs(keys: Iterable[str], read_json: Callable[[str], dict[str, Any]], month: str) -> list[Run]:
    """The runs of ``month`` (``YYYY-MM``) among the report ``keys`` of a lake; ``read_json(key)`` reads one."""
    month_prefix = month.replace("-", "")
    runs = []
    for key in keys:
        parts = key.split("/")
        if len(parts) == 5 and parts[0] == "reports" and parts[1] in LAYER_REPORTS and parts[4] == "manifest.json":
            if not parts[3].startswith(month_prefix):
                continue
            manifest = read_json(key)
            runs.append(Run(parts[1], parts[2], parts[3], run_day(parts[3]), str(manifest.get("status", "")),
                            float(manifest.get("duration_seconds") or 0.0), int(manifest.get("rows_in") or 0),
                            int(manifest.get("rows_out") or 0)))
        elif len(parts) == 4 and parts[:2] == ["reports", "maintenance"] and parts[3] == "report.json":
            if not parts[2].startswith(month_prefix):
                continue
            report = read_json(key)
            status = "succeeded" if report.get("status") == "completed" else "failed"
            runs.append(Run("maintenance", "-", parts[2], run_day(parts[2]), status,
                            float(report.get("duration_seconds") or 0.0)))
        elif len(parts) == 4 and parts[:2] == ["reports", "erasure"] and parts[3] == "receipt.json":
            receipt = read_json(key)
            completed = str(receipt.get("completed_at") or "")
            if not completed.startswith(month):
                continue
            status = "succeeded" if receipt.get("status") == "completed" else "failed"
            runs.append(Run("erasure", "-", parts[2], completed[:10], status,
                            _seconds(str(receipt.get("requested_at") or ""), completed)))
    return sorted(runs, key=lambda r: (r.layer, r.dataset, r.run_id))


def summarise(runs: Iterable[Run]) -> list[RunRow]:
    rows: dict[tuple[str, str], RunRow] = {}
    for run in runs:
        row = rows.setdefault((run.layer, run.dataset), RunRow(run.layer, run.dataset))
        row.runs += 1
        row.succeeded += run.status == "succeeded"
        row.failed += run.status != "succeeded"
        row.seconds += run.seconds
        row.rows_in += run.rows_in
        row.rows_out += run.rows_out
    return [rows[k] for k in sorted(rows)]


def seconds_by_day(runs: Iterable[Run], days: list[str]) -> dict[str, list[float]]:
    """Per layer, the run time of each day of the month (seconds)."""
    series: dict[str, dict[str, float]] = {}
    for run in runs:
        series.setdefault(run.layer, {}).setdefault(run.day, 0.0)
        series[run.layer][run.day] += run.seconds
    return {layer: [round(per_day.get(day, 0.0), 1) for day in days] for layer, per_day in series.items()}


def report_keys(list_keys: Callable[[str], Iterable[str]]) -> list[str]:
    """Every key under ``reports/`` that ``collect_runs`` reads."""
    wanted = ("/manifest.json", "/report.json", "/receipt.json")
    return [key for key in list_keys("reports/") if key.endswith(wanted)]


def read_json_or_empty(read_text: Callable[[str], str]) -> Callable[[str], dict[str, Any]]:
    def read(key: str) -> dict[str, Any]:
        try:
            value = json.loads(read_text(key))
        except (OSError, ValueError):
            return {}
        return value if isinstance(value, dict) else {}
    return read
