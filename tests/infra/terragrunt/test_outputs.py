"""infra/terragrunt/outputs.py: outputs of a tenant that is not applied here fail in one line."""
from __future__ import annotations

import pytest

from infra import terragrunt as tg


def test_outputs_of_an_unapplied_tenant_raise_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path))
    with pytest.raises(tg.TenantNotAppliedError, match="tenant 'acme' is not applied here") as err:
        tg.outputs("acme")
    assert "\n" not in str(err.value)


def test_outputs_without_a_running_emulator_raise_instead_of_starting_an_empty_one(monkeypatch, tmp_path):
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("TENANTLAKE_FORCE_FALLBACK", "1")
    (tmp_path / "tenants" / "acme" / ".terraform").mkdir(parents=True)
    with pytest.raises(tg.TenantNotAppliedError, match="no emulator runs for"):
        tg.outputs("acme")
    assert not (tmp_path / "emulator.json").exists()
