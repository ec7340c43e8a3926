"""The reliability suite's infrastructure-fault scenario, once per session (tests/reliability/test_infra_faults.py
describes it): each step is a session fixture on the step before it, so the steps run in order whatever order
the tests run in (``make test-shuffled``), and test_isolation.py, which reuses the two scratch tenants, asks
for the end of the scenario first instead of applying them itself (a tenant applied before the kill could
not be killed midway)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from tests import shell
from tests.conftest import REPO_ROOT, TEST_STATE_DIR
from tests.reliability.test_infra_faults import (_BACKGROUND, FAULT_TENANT, KILL_AFTER_CREATED, REGION, SCRATCH_TENANTS,
                                                  STATE_BUCKET, _kill_terraform_apply, make, scratch_tenants)


@pytest.fixture(scope="session")
def killed_apply(emulator, lake_formation_settings):
    """Start apply-all of both scratch tenants (after the account's Lake Formation settings in their region); SIGKILL
    faultco's terraform after KILL_AFTER_CREATED creations."""
    lake_formation_settings(REGION)
    folder = scratch_tenants()
    env = {**os.environ, "TENANTLAKE_STATE_DIR": str(TEST_STATE_DIR)}
    proc = subprocess.Popen(["make", "-s", "apply-all", "PARALLELISM=2", f"TENANTS_DIR={folder}"], cwd=REPO_ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []

    def drain() -> None:  # keeps reading the pipe while isob goes on after the kill
        for line in proc.stdout:
            lines.append(line)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    started, killed, created = time.monotonic(), [], 0
    while proc.poll() is None and time.monotonic() - started < 600:
        created = sum(1 for line in list(lines) if line.startswith(f"[{FAULT_TENANT}] ") and "Creation complete" in line)
        if created >= KILL_AFTER_CREATED:
            killed = _kill_terraform_apply(FAULT_TENANT)
            if killed:
                break
        time.sleep(0.05)
    assert killed, "faultco's terraform apply was never seen running:\n" + "".join(lines[-30:])
    _BACKGROUND["apply-all"] = proc  # isob goes on; ensure_applied() waits for it
    yield {"created_before_kill": created, "seconds_before_kill": round(time.monotonic() - started, 1),
           "killed_pids": killed, "lines": lines}
    if proc.poll() is None:
        proc.wait(timeout=900)


def _s3(aws_env):
    import boto3

    return boto3.client("s3", region_name=REGION, endpoint_url=aws_env["AWS_ENDPOINT_URL"],
                        verify=aws_env["AWS_CA_BUNDLE"], aws_access_key_id=aws_env["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=aws_env["AWS_SECRET_ACCESS_KEY"])


@pytest.fixture(scope="session")
def locked_rerun(killed_apply, aws_env):
    """The lock the killed run left, and a re-run of faultco's apply that must not wait for it."""
    s3 = _s3(aws_env)
    lock = json.loads(s3.get_object(Bucket=STATE_BUCKET, Key=f"tenants/{FAULT_TENANT}/terraform.tfstate.tflock")
                      ["Body"].read())
    return {"lock": lock, "rerun": make("apply", f"TENANT={FAULT_TENANT}", "TF_ARGS=-lock-timeout=0s")}


@pytest.fixture(scope="session")
def recovered(locked_rerun):
    """The documented recovery: force-unlock with the printed ID, then apply again."""
    lock_id = locked_rerun["lock"]["ID"]
    unlock = shell.run([sys.executable, "-m", "infra.terragrunt", "force-unlock", "--tenant", FAULT_TENANT,
                        "--tenants-dir", str(SCRATCH_TENANTS), "--lock-id", lock_id], timeout=300,
                       env={"TENANTLAKE_STATE_DIR": str(TEST_STATE_DIR)})
    return {"lock_id": lock_id, "unlock": unlock,
            "reapply": make("apply", f"TENANT={FAULT_TENANT}") if unlock.returncode == 0 else None}


@pytest.fixture(scope="session")
def concurrent_applies(recovered, aws_env):
    """Two applies of faultco at once (after the recovery): the second starts once the first holds the lock."""
    assert recovered["reapply"] is not None and recovered["reapply"].returncode == 0, "needs the recovered tenant"
    s3 = _s3(aws_env)
    lock_key = f"tenants/{FAULT_TENANT}/terraform.tfstate.tflock"
    env = {**os.environ, "TENANTLAKE_STATE_DIR": str(TEST_STATE_DIR)}
    first = subprocess.Popen(["make", "-s", "apply", f"TENANT={FAULT_TENANT}", f"TENANTS_DIR={SCRATCH_TENANTS}"],
                             cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock, second = None, None
    try:
        deadline = time.monotonic() + 300
        while lock is None and first.poll() is None and time.monotonic() < deadline:
            try:
                lock = json.loads(s3.get_object(Bucket=STATE_BUCKET, Key=lock_key)["Body"].read())
            except s3.exceptions.NoSuchKey:
                time.sleep(0.3)
        if lock is not None:
            second = make("apply", f"TENANT={FAULT_TENANT}", "TF_ARGS=-lock-timeout=0s")
    finally:
        out, err = first.communicate(timeout=900)
    try:
        s3.get_object(Bucket=STATE_BUCKET, Key=lock_key)
        released = False
    except s3.exceptions.NoSuchKey:
        released = True
    return {"lock": lock, "second": second, "first_returncode": first.returncode, "first_output": out + err,
            "released": released}
