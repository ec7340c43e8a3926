"""infra/terragrunt/binary.py: with a `terragrunt` on PATH the runner runs it, per unit, in dependency order,
with the flags Terragrunt documents.  No terragrunt binary can be installed here, so a stand-in script on PATH
records how it is called (what it would do is Terragrunt's, and stays unproven: tenants/README.md)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import TEST_STATE_DIR
from tests.infra.terragrunt.conftest import REPO, TENANTS

pytestmark = pytest.mark.integration


def test_plan_all_runs_terragrunt_per_unit_network_first(scratch_tenants, emulator, tmp_path):
    units = ("_platform/lake-formation-eu-west-1", "_platform/network", "acme", "globex")
    for unit in units:  # the eu-west-1 part of the sample layout
        (scratch_tenants / unit).mkdir(parents=True)
        shutil.copy2(TENANTS / unit / "terragrunt.hcl", scratch_tenants / unit / "terragrunt.hcl")
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    (bin_dir / "terragrunt").write_text('#!/bin/sh\necho "$PWD|$TG_DOWNLOAD_DIR|$*" >> "$TG_CALLS"\n')
    (bin_dir / "terragrunt").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "TG_CALLS": str(log),
           "TENANTLAKE_STATE_DIR": str(TEST_STATE_DIR)}
    env.pop("TENANTLAKE_FORCE_FALLBACK", None)
    result = subprocess.run([sys.executable, "-m", "infra.terragrunt", "plan-all", "--parallelism", "1",
                             "--tenants-dir", str(scratch_tenants)], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    calls = [line.split("|") for line in log.read_text().splitlines()]
    assert [(cwd, args) for cwd, _, args in calls] == [
        (str(scratch_tenants / unit), "plan --non-interactive -lock-timeout=120s")
        for unit in units]
    assert [download for _, download, _ in calls] == [
        str(TEST_STATE_DIR / "tenants" / unit / ".terragrunt-cache") for unit in units]
    assert result.stdout.splitlines()[-1] == (
        "plan _platform/lake-formation-eu-west-1=0, _platform/network=0, acme=0, globex=0")
