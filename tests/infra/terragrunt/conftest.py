"""Shared fixtures of the runner's unit tests: no terraform and no emulator (applies are in tests/integration/)."""
from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import hcl2
import pytest

from infra import terragrunt as tg
from infra.local.network import fixture_ids

REPO = Path(__file__).resolve().parents[3]
TENANTS = REPO / "tenants"
SAMPLE_TENANTS = {
    "acme": ("eu-west-1", ["gdpr"]),
    "globex": ("eu-west-1", ["internal"]),
    "initech": ("eu-central-1", ["pii", "gdpr"]),
}


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    """The variables the runner exports before evaluating (local env, no emulator needed to parse)."""
    for key in ("TENANTLAKE_ENV", "TENANTLAKE_AWS_ENDPOINT", "TENANTLAKE_STAGE", "TENANTLAKE_MODULE_SOURCE",
                "TENANTLAKE_STATE_REGION"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("TENANTLAKE_STATE_ACCOUNT_ID", tg.LOCAL_ACCOUNT_ID)


def raw_inputs(path: Path) -> dict:
    with open(path) as fh:
        return hcl2.load(fh, serialization_options=hcl2.SerializationOptions(
            strip_string_quotes=True, explicit_blocks=False, with_comments=False))["inputs"]


@pytest.fixture
def scratch_tenants():
    """A tenants dir inside the repo (get_repo_root needs a git work tree), in the ignored .local/."""
    folder = REPO / ".local" / "test-tenants" / uuid.uuid4().hex[:8]
    folder.mkdir(parents=True)
    shutil.copy2(TENANTS / "root.hcl", folder / "root.hcl")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def scratch_layout(scratch_tenants):
    """A copy of the sample layout (platform network, the Lake Formation settings of both regions, acme and globex on
    the network, initech on its own VPC)."""
    for unit in ("_platform/network", "_platform/lake-formation-eu-west-1", "_platform/lake-formation-eu-central-1",
                 "acme", "globex", "initech"):
        (scratch_tenants / unit).mkdir(parents=True)
        shutil.copy2(TENANTS / unit / "terragrunt.hcl", scratch_tenants / unit / "terragrunt.hcl")
    return scratch_tenants


def write_tenant(folder: Path, name: str, body: str) -> None:
    (folder / name).mkdir(parents=True, exist_ok=True)
    (folder / name / "terragrunt.hcl").write_text(body)


def tenant_file(tenant_id: str, region: str, classes: str, extra: str = "") -> str:
    return f'''include "root" {{
  path = find_in_parent_folders("root.hcl")
}}
inputs = {{
  tenant_id           = "{tenant_id}"
  region              = "{region}"
  data_classification = [{classes}]
  account_id          = "123456789012"
  vpc_ids             = ["{fixture_ids.fixture_vpc_id(tenant_id)}"]
  {extra}
}}
'''
