"""tests/conftest.py: a session with a failed test keeps its state dir's logs (the emulator's request log,
terraform's) before the state dir is removed."""
from __future__ import annotations

from tests.conftest import _keep_logs


def test_every_log_is_kept_with_its_path_and_nothing_else(tmp_path):
    state = tmp_path / "state"
    (state / "network" / "vpc-1").mkdir(parents=True)
    (state / "emulator.log").write_text("PUT /bucket\n")
    (state / "network" / "vpc-1" / "apply.log").write_text("apply\n")
    (state / "emulator.json").write_text("{}")
    _keep_logs(state, tmp_path / "kept")
    kept = sorted(str(p.relative_to(tmp_path / "kept")) for p in (tmp_path / "kept").rglob("*") if p.is_file())
    assert kept == ["emulator.log", "network/vpc-1/apply.log"]
    assert (tmp_path / "kept" / "emulator.log").read_text() == "PUT /bucket\n"
