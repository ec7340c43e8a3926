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
    phony = {target for line in (REPO / "Makefile").read_text().splitlines() if line.startswith(".PHONY:")
             for target in line.split(":", 1)[1].split()}
    assert phony <= listed, f"phony targets `make help` leaves out: {sorted(phony - listed)}"
    readme = (REPO / "README.md").read_text()
    unnamed = [t for t in listed if f"`{t}`" not in readme and f"`{t} " not in readme and f"`make {t}`" not in readme]
    assert not unnamed, f"targets of `make help` that the README does not name: {unnamed}"


def test_ci_runs_exactly_the_readme_test_command():
    ci = [line for line in (REPO / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.startswith("#") and not line.startswith(("set ", "cd "))]
    assert ci == ["make test"]
    assert "make test" in (REPO / "README.md").read_text()


def test_no_local_toolchain_or_state_is_tracked():
    """The venvs, .local/ and node_modules are recreated by `make setup`; a tracked copy (even a symlink into
    someone's worktree) breaks setup on a fresh clone ('File exists' when creating the venv)."""
    tracked = subprocess.run(["git", "ls-files", "--", ".venv", ".venv-checkov", ".local", "policies/simulator/node_modules"],
                             cwd=REPO, capture_output=True, text=True, check=True, timeout=60).stdout.split()
    assert tracked == []


def test_setup_replaces_a_dangling_venv_symlink(tmp_path):
    """A .venv left as a dangling symlink (a removed worktree's) is replaced, not an error."""
    recipe = [line for line in (REPO / "Makefile").read_text().splitlines() if "-m venv $(VENV)" in line]
    assert recipe and "test ! -L $(VENV) || rm $(VENV)" in recipe[0]
    venv = tmp_path / ".venv"
    venv.symlink_to(tmp_path / "gone")
    command = recipe[0].strip().lstrip("@").replace("$(PY)", str(venv / "bin" / "python")).replace(
        "$(VENV)", str(venv)).replace("$(PYTHON_BOOTSTRAP)", "python3")
    subprocess.run(["bash", "-euc", command.replace("-m venv", "-m venv --without-pip")], check=True, timeout=120)
    assert not venv.is_symlink() and (venv / "bin" / "python").exists()
