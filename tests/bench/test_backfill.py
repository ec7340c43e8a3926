"""The backfill benchmark's baseline is exported from git without touching the repository. (Its parser of
run-all's output is tested on a real run-all in tests/spark_jobs/test_pipeline_e2e.py.)"""
from __future__ import annotations

import subprocess

from bench import backfill
from tests.conftest import REPO_ROOT


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60).stdout


def test_the_baseline_is_a_git_archive_of_the_ref(tmp_path):
    status = _git("status", "--porcelain")
    commit = backfill.export_ref("HEAD", tmp_path / "src")
    assert commit == _git("rev-parse", "HEAD").strip()
    assert (tmp_path / "src" / "spark_jobs" / "cli" / "__init__.py").read_text() == _git("show", "HEAD:spark_jobs/cli/__init__.py")
    assert _git("status", "--porcelain") == status
