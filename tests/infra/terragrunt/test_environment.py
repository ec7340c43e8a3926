"""infra/terragrunt/environment.py: the environment switch and the state dir."""
from __future__ import annotations

import pytest

from infra import terragrunt as tg


def test_unknown_environment_is_refused(monkeypatch):
    monkeypatch.setenv("TENANTLAKE_ENV", "staging")
    with pytest.raises(tg.TerragruntError, match="TENANTLAKE_ENV='staging' is not one of local, aws"):
        tg.env_name()


def test_working_dir_follows_the_state_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path))
    assert tg.work_dir("acme") == tmp_path.resolve() / "tenants" / "acme"
