"""Fixtures the integration modules share: acme (applied once per session by ``applied_tenant``), its
configuration, the platform network's outputs, and globex applied alongside on the same VPC.

``globex`` is session-scoped: tests/integration/test_apply_acme.py checks its apply, and
tests/integration/test_destroy_all.py (last in the run) destroys it with the rest. One definition here, so
the apply runs once per session (per pytest-xdist worker that runs them, ``make test``).
"""
from __future__ import annotations

import json
import subprocess

import pytest

from infra import terragrunt as tg
from tests.conftest import REPO_ROOT, TEST_STATE_DIR, run_make

TENANT = "acme"
REGION = "eu-west-1"
STATE_BUCKET = "tenantlake-tfstate-123456789012-eu-west-1"
NETWORK = "_platform/network"
NETWORK_STATE_KEY = f"tenants/{NETWORK}/terraform.tfstate"


def _config():
    import os

    os.environ.setdefault("TENANTLAKE_STATE_ACCOUNT_ID", tg.LOCAL_ACCOUNT_ID)  # what the runner exports
    return tg.load_tenant(TENANT).config


@pytest.fixture(scope="module")
def cfg():
    return _config()


@pytest.fixture(scope="module")
def lake(applied_tenant):
    return applied_tenant(TENANT)


@pytest.fixture
def s3(boto_session):
    return boto_session("s3", REGION)


@pytest.fixture
def network(lake, s3):
    """The platform network's outputs, read from its state (make apply TENANT=acme applied it first)."""
    state = json.loads(s3.get_object(Bucket=STATE_BUCKET, Key=NETWORK_STATE_KEY)["Body"].read())
    return {name: item["value"] for name, item in state["outputs"].items()}


@pytest.fixture(scope="session")
def globex(applied_tenant, aws_env):
    """globex applied alongside acme on the same VPC, acme re-planned while globex's terraform applies; what
    the state bucket and acme's bucket held before and right after. The tests that need globex applied ask
    for it, so they pass in any order (make test-shuffled); session-scoped, since the destroy at the end of
    the run looks at it too."""
    import os

    import boto3

    lake = applied_tenant(TENANT)

    s3 = boto3.client("s3", region_name=REGION, endpoint_url=aws_env["AWS_ENDPOINT_URL"], verify=aws_env["AWS_CA_BUNDLE"],
                      aws_access_key_id=aws_env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=aws_env["AWS_SECRET_ACCESS_KEY"])

    def snapshot() -> dict:
        return {"acme_state": s3.head_object(Bucket=STATE_BUCKET, Key=f"tenants/{TENANT}/terraform.tfstate"),
                "network_state": s3.head_object(Bucket=STATE_BUCKET, Key=NETWORK_STATE_KEY),
                "acme_policy": s3.get_bucket_policy(Bucket=lake["lake_bucket_name"])["Policy"]}

    before = snapshot()
    env = {"TENANTLAKE_STATE_DIR": str(TEST_STATE_DIR)}
    proc = subprocess.Popen(["make", "-s", "apply", "TENANT=globex"], cwd=REPO_ROOT, env={**os.environ, **env},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # Overlap acme's plan with globex's terraform apply (watching the file system touches no emulator state).
        _wait_for(TEST_STATE_DIR / "tenants" / "globex" / "main.tf.json", proc)
        replan = run_make("plan", f"TENANT={TENANT}", "TF_ARGS=-detailed-exitcode")
    finally:
        out, _ = proc.communicate(timeout=900)
    lake_json = TEST_STATE_DIR / "tenants" / "globex" / "lake.json"
    return {"before": before, "after": snapshot(), "replan": replan, "out": out, "returncode": proc.returncode,
            "lake": json.loads(lake_json.read_text()) if lake_json.is_file() else None}


def _wait_for(path, proc, timeout_s=300.0):
    import time

    deadline = time.monotonic() + timeout_s
    while not path.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    if not path.exists() and proc.poll() is None:  # an exited process is judged by its exit code later
        pytest.fail(f"{path} did not appear within {timeout_s:.0f} s while {' '.join(proc.args)} ran")
