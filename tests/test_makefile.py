"""The Makefile's contract: every documented target exists, and CI runs the README's test command."""
from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REQUIRED_TARGETS = ["setup", "test", "demo", "synth", "plan", "apply", "destroy", "plan-all", "apply-all", "destroy-all", "deploy-jobs",
                    "dq-report", "bench", "bench-pipeline", "bench-infra", "emulator-up", "emulator-down", "clean"]


def test_help_lists_every_target():
    out = subprocess.run(["make", "-s", "help"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    listed = {line.split()[0] for line in out.splitlines() if line.startswith("  ")}
    assert set(REQUIRED_TARGETS) <= listed, set(REQUIRED_TARGETS) - listed


def test_ci_runs_exactly_the_readme_test_command():
    ci = [line for line in (REPO / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.startswith("#") and not line.startswith(("set ", "cd "))]
    assert ci == ["make test"]
    assert "make test" in (REPO / "README.md").read_text()
