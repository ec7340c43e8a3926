"""Where the suite's time goes: wall seconds per test module, printed at the end of every run.

pytest's `--durations` names the slowest single phases (a session fixture's set-up lands on whichever test
asked for it first); this adds the sum per module (set-up + call + tear-down of its tests) and writes the
whole table to `.local/test-times.json`, so tests/README.md's figures come from a run, not a guess.
The hooks are imported by tests/conftest.py.
"""
from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
TIMES_FILE = REPO_ROOT / ".local" / "test-times.json"
SHOWN = 30  # modules printed in the terminal summary; the file has every module

_seconds: dict[str, float] = defaultdict(float)
_tests: dict[str, int] = defaultdict(int)
_spans: dict[str, list[float]] = {}   # module -> [first start, last stop] (epoch seconds, the reports' own)
_workers: dict[str, str] = {}         # module -> the pytest-xdist worker that ran it (gw0, gw1, ...)
_started = time.monotonic()
_started_epoch = time.time()


def module_of(nodeid: str) -> str:
    """`tests/a/test_b.py::TestC::test_d[x]` -> `tests/a/test_b.py`."""
    return nodeid.split("::", 1)[0]


def module_table(seconds: dict[str, float], tests: dict[str, int], spans: dict[str, list[float]] | None = None,
                 workers: dict[str, str] | None = None, started: float = 0.0) -> list[dict]:
    """Modules by time spent, slowest first, with each one's share of the total; with ``spans``, when each
    module started and ended (seconds after ``started``), and with ``workers``, the worker that ran it."""
    total = sum(seconds.values()) or 1.0
    rows = []
    for m, s in seconds.items():
        row = {"module": m, "tests": tests.get(m, 0), "seconds": round(s, 1), "share": round(s / total, 4)}
        if spans and m in spans:
            row.update(start_s=round(spans[m][0] - started, 1), end_s=round(spans[m][1] - started, 1))
        if workers and m in workers:
            row["worker"] = workers[m]
        rows.append(row)
    return sorted(rows, key=lambda r: (-r["seconds"], r["module"]))


def worker_table(rows: list[dict]) -> list[dict]:
    """Per pytest-xdist worker: its modules, the seconds they took added up, and when its last one ended
    (the run's wall time is the latest of these, plus collection and start-up)."""
    per: dict[str, dict] = {}
    for row in rows:
        if "worker" in row:
            w = per.setdefault(row["worker"], {"worker": row["worker"], "modules": 0, "busy_s": 0.0, "last_end_s": 0.0})
            w["modules"] += 1
            w["busy_s"] = round(w["busy_s"] + row["seconds"], 1)
            w["last_end_s"] = max(w["last_end_s"], row.get("end_s", 0.0))
    return [per[w] for w in sorted(per)]


def pytest_runtest_logreport(report) -> None:
    module = module_of(report.nodeid)
    _seconds[module] += report.duration
    start, stop = getattr(report, "start", None), getattr(report, "stop", None)
    if start is not None and stop is not None:
        span = _spans.setdefault(module, [start, stop])
        span[0], span[1] = min(span[0], start), max(span[1], stop)
    worker = getattr(getattr(report, "node", None), "gateway", None)  # on the xdist controller: the worker's
    if worker is not None:
        _workers[module] = worker.id
    if report.when == "call" or (report.when == "setup" and report.skipped):
        _tests[module_of(report.nodeid)] += 1


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not _seconds or hasattr(config, "workerinput"):  # an xdist worker: the controller sums every worker's reports
        return
    rows = module_table(_seconds, _tests, _spans, _workers, _started_epoch)
    workers = worker_table(rows)
    wall = time.monotonic() - _started
    terminalreporter.write_sep("=", f"time per module (top {min(SHOWN, len(rows))} of {len(rows)})")
    for row in rows[:SHOWN]:
        terminalreporter.write_line(f"{row['seconds']:8.1f} s {row['share'] * 100:5.1f} % "
                                    f"{row['tests']:4d} tests  {row['module']}"
                                    + (f"  ({row['worker']}, {row['start_s']:.0f}-{row['end_s']:.0f} s)"
                                       if "worker" in row and "start_s" in row else ""))
    for w in workers:
        terminalreporter.write_line(f"worker {w['worker']}: {w['modules']} modules, {w['busy_s']:.0f} s of tests, "
                                    f"last one ended {w['last_end_s']:.0f} s after the start")
    try:
        TIMES_FILE.parent.mkdir(parents=True, exist_ok=True)
        TIMES_FILE.write_text(json.dumps({"wall_s": round(wall, 1), "pid": os.getpid(), "workers": workers, "modules": rows},
                                         indent=1))
    except OSError:  # a read-only checkout still gets the table on the terminal
        pass
