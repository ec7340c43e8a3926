"""infra/terragrunt/freshness.py: a unit this emulator applied counts as up to date until its module, its
inputs, its state object or the emulator change."""
from __future__ import annotations

import dataclasses

import pytest

from infra import terragrunt as tg
from infra.terragrunt import freshness
from infra.terragrunt.environment import ensure_state_bucket, work_dir
from tests.conftest import TEST_STATE_DIR
from tests.infra.terragrunt.conftest import tenant_file, write_tenant

pytestmark = pytest.mark.integration


def test_up_to_date_until_inputs_or_state_change(scratch_tenants, emulator, aws_env, boto_session, monkeypatch):
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(TEST_STATE_DIR))  # the session emulator's state dir
    write_tenant(scratch_tenants, "freshco", tenant_file("freshco", "eu-west-1", '"internal"'))
    run = tg.load_tenant("freshco", scratch_tenants)
    env = {**aws_env, "TENANTLAKE_AWS_ENDPOINT": emulator.endpoint}
    ensure_state_bucket(run.backend_config, env)
    s3 = boto_session("s3", "eu-west-1")
    bucket, key = run.backend_config["bucket"], run.state_key
    s3.put_object(Bucket=bucket, Key=key, Body=b'{"version": 4}')
    work_dir(run.name).mkdir(parents=True, exist_ok=True)
    try:
        assert not freshness.is_up_to_date(run, env)  # never applied here
        freshness.record_applied(run, env)
        assert freshness.is_up_to_date(run, env)
        changed = dataclasses.replace(run, inputs={**run.inputs, "tags": {"owner": "someone-else"}})
        assert not freshness.is_up_to_date(changed, env)
        s3.put_object(Bucket=bucket, Key=key, Body=b'{"version": 4, "serial": 2}')  # another run rewrote the state
        assert not freshness.is_up_to_date(run, env)
        freshness.record_applied(run, env)
        freshness.forget(run)
        assert not freshness.is_up_to_date(run, env)
    finally:
        s3.delete_object(Bucket=bucket, Key=key)
        freshness.forget(run)
