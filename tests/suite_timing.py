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
_started = time.monotonic()


def module_of(nodeid: str) -> str:
    """`tests/a/test_b.py::TestC::test_d[x]` -> `tests/a/test_b.py`."""
    return nodeid.split("::", 1)[0]


def module_table(seconds: dict[str, float], tests: dict[str, int]) -> list[dict]:
    """Modules by time spent, slowest first, with each one's share of the total."""
    total = sum(seconds.values()) or 1.0
    rows = [{"module": m, "tests": tests.get(m, 0), "seconds": round(s, 1), "share": round(s / total, 4)}
            for m, s in seconds.items()]
    return sorted(rows, key=lambda r: (-r["seconds"], r["module"]))


def pytest_runtest_logreport(report) -> None:
    _seconds[module_of(report.nodeid)] += report.duration
    if report.when == "call" or (report.when == "setup" and report.skipped):
        _tests[module_of(report.nodeid)] += 1


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not _seconds or hasattr(config, "workerinput"):  # an xdist worker: the controller sums every worker's reports
        return
    rows = module_table(_seconds, _tests)
    wall = time.monotonic() - _started
    terminalreporter.write_sep("=", f"time per module (top {min(SHOWN, len(rows))} of {len(rows)})")
    for row in rows[:SHOWN]:
        terminalreporter.write_line(f"{row['seconds']:8.1f} s {row['share'] * 100:5.1f} % "
                                    f"{row['tests']:4d} tests  {row['module']}")
    try:
        TIMES_FILE.parent.mkdir(parents=True, exist_ok=True)
        TIMES_FILE.write_text(json.dumps({"wall_s": round(wall, 1), "pid": os.getpid(), "modules": rows}, indent=1))
    except OSError:  # a read-only checkout still gets the table on the terminal
        pass
