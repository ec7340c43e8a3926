"""Infrastructure faults: an apply killed midway, and two applies of one tenant at once.

Everything goes through the user path (``make apply|plan TENANT=<t> TENANTS_DIR=<scratch>`` and the
documented ``python -m infra.terragrunt force-unlock``) against this session's emulator, with two scratch
tenants of the reliability suite (``faultco`` and ``isob``; test_isolation.py reuses them):

1. ``make apply-all`` starts both; once terraform has created some of faultco's resources, faultco's
   terraform process (and its provider plugin) is SIGKILLed, as an OOM kill or a cancelled CI job would.
   isob keeps applying in the background.
2. Re-running faultco's apply fails at once (``-lock-timeout=0s``) with ONE line naming the lock a killed
   run left behind, its ID and the documented recovery; the recovery (force-unlock, re-apply) converges:
   the runner adopts what the killed run created but never recorded in the state.
3. Two applies of faultco at once: the second fails on the lock with the same one-line message; the first
   completes; the lock is released.
4. ``make plan -detailed-exitcode`` shows no changes: the state matches the emulator after all of this.

The steps are session fixtures in tests/reliability/conftest.py, each on the one before it; the tests here
assert on what each step left, so they pass in any order.
"""
from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from infra.local.network import fixture_ids
from tests import shell
from tests.conftest import REPO_ROOT, TEST_STATE_DIR, run_make

pytestmark = pytest.mark.integration

FAULT_TENANT = "faultco"
OTHER_TENANT = "isob"
REGION = "eu-west-1"
STATE_BUCKET = "tenantlake-tfstate-123456789012-eu-west-1"
# Inside the repo (get_repo_root needs the git work tree) and inside the session's state dir, so the
# scratch tenants go away with the session emulator.
SCRATCH_TENANTS = TEST_STATE_DIR / "reliability-tenants"
KILL_AFTER_CREATED = 10  # faultco resources terraform reported created before the kill (of about three dozen)
LOCKED_RE = re.compile(
    r"^error: tenant 'faultco': the state is locked by another run \(lock (?P<id>[0-9a-f-]{36}) on "
    rf"{STATE_BUCKET}/tenants/faultco/terraform\.tfstate, OperationTypeApply by \S+ since [^)]+\); wait for it to "
    r"finish, or if that run was killed: python -m infra\.terragrunt force-unlock --tenant faultco --lock-id "
    r"(?P=id)$")


# ---- the reliability suite's scratch tenants (shared with test_isolation.py) ---------------------
def _tenant_file(tenant_id: str, classes: str, extra: str = "") -> str:
    return (f'include "root" {{\n  path = find_in_parent_folders("root.hcl")\n}}\ninputs = {{\n'
            f'  tenant_id           = "{tenant_id}"\n  region              = "{REGION}"\n'
            f'  data_classification = [{classes}]\n  account_id          = "123456789012"\n'
            f'  vpc_ids             = ["{fixture_ids.fixture_vpc_id(tenant_id)}"]\n{extra}}}\n')


def scratch_tenants() -> Path:
    """faultco (internal) and isob (pii + gdpr, one Kinesis stream, so its Firehose role is covered too),
    both in eu-west-1 in the same account: the closest neighbours two tenants can be."""
    for name, text in ((FAULT_TENANT, _tenant_file(FAULT_TENANT, '"internal"')),
                       (OTHER_TENANT, _tenant_file(OTHER_TENANT, '"pii", "gdpr"', '  streams = ["iot"]\n'))):
        (SCRATCH_TENANTS / name).mkdir(parents=True, exist_ok=True)
        (SCRATCH_TENANTS / name / "terragrunt.hcl").write_text(text)
    shutil.copy2(REPO_ROOT / "tenants" / "root.hcl", SCRATCH_TENANTS / "root.hcl")
    return SCRATCH_TENANTS


def make(target: str, *args: str, timeout: float = 900) -> shell.ShellResult:
    return run_make(target, *args, f"TENANTS_DIR={SCRATCH_TENANTS}", timeout=timeout)


def lake_json(tenant: str) -> dict | None:
    path = TEST_STATE_DIR / "tenants" / tenant / "lake.json"
    return json.loads(path.read_text()) if path.is_file() else None


_BACKGROUND: dict[str, subprocess.Popen] = {}  # the apply-all that keeps applying isob after the kill


def ensure_applied(*tenants: str) -> dict[str, dict]:
    """The scratch tenants' lake.json, applying whichever is not applied yet (after the background run)."""
    scratch_tenants()
    background = _BACKGROUND.pop("apply-all", None)
    if background is not None:
        background.wait(timeout=900)
    for tenant in tenants:
        if lake_json(tenant) is None:
            result = make("apply", f"TENANT={tenant}")
            assert result.returncode == 0, result.tail(also="adopting")
    return {tenant: lake_json(tenant) for tenant in tenants}


def _our_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith("make:")]


# ---- 1. kill terraform midway --------------------------------------------------------------------
def _kill_terraform_apply(tenant: str) -> list[int]:
    """SIGKILL the tenant's running ``terraform apply`` and its provider plugin (found by working dir)."""
    import psutil

    work = str(TEST_STATE_DIR / "tenants" / tenant)
    killed = []
    for proc in psutil.process_iter(["name", "cwd", "cmdline"]):
        try:
            if proc.info["name"] == "terraform" and proc.info["cwd"] == work and "apply" in (proc.info["cmdline"] or []):
                group = [*proc.children(recursive=True), proc]
                for victim in group:
                    victim.send_signal(signal.SIGKILL)
                killed += [victim.pid for victim in group]
        except psutil.Error:
            continue
    return killed


def test_killed_apply_leaves_a_lock_and_the_rerun_names_it_in_one_line(killed_apply, locked_rerun):
    result, lock = locked_rerun["rerun"], locked_rerun["lock"]
    assert result.returncode != 0
    ours = _our_lines(result.stderr)
    assert len(ours) == 1 and LOCKED_RE.match(ours[0]), result.stderr
    assert LOCKED_RE.match(ours[0]).group("id") == lock["ID"]
    print(f"killed faultco's terraform after {killed_apply['created_before_kill']} creations "
          f"({killed_apply['seconds_before_kill']} s into apply-all)")


def test_documented_recovery_converges(recovered, boto_session):
    """force-unlock with the printed ID, re-apply: the runner adopts the resources the killed run created
    but never recorded (they would otherwise fail with 'already exists'), and the apply completes."""
    lock_id, unlock, reapply = recovered["lock_id"], recovered["unlock"], recovered["reapply"]
    assert unlock.returncode == 0, unlock.tail()
    assert f"tenant '{FAULT_TENANT}': state lock {lock_id} released" in unlock.stdout
    assert reapply.returncode == 0, reapply.tail(also="adopting")
    adopted = re.search(r"adopting (\d+) resource\(s\)", reapply.stdout)
    print(f"re-apply adopted {int(adopted.group(1)) if adopted else 0} orphaned resource(s)")
    lake = lake_json(FAULT_TENANT)
    assert lake and lake["lake_bucket_name"] == f"{FAULT_TENANT}-{REGION}-lake"
    # Every named resource exists once and is the one in the state.
    iam = boto_session("iam", REGION)
    roles = sorted(r["RoleName"] for r in iam.list_roles()["Roles"] if r["RoleName"].startswith(f"{FAULT_TENANT}-"))
    assert roles == sorted([f"{FAULT_TENANT}-emr-job-execution", f"{FAULT_TENANT}-lake-consumer",
                            f"{FAULT_TENANT}-lake-ingest-writer", f"{FAULT_TENANT}-emr-erasure",
                            f"{FAULT_TENANT}-lakeformation-access"])
    emr = boto_session("emr-containers", REGION)
    clusters = [c["id"] for c in emr.list_virtual_clusters(states=["RUNNING"])["virtualClusters"]
                if c["name"] == f"{FAULT_TENANT}-lake"]
    assert clusters == [lake["emr_virtual_cluster_id"]]
    kms = boto_session("kms", REGION)
    (alias,) = [a for a in kms.list_aliases()["Aliases"] if a["AliasName"] == f"alias/{FAULT_TENANT}-lake"]
    assert lake["kms_key_arn"].endswith(alias["TargetKeyId"])
    # What the runner cannot adopt (no unique name) stays behind untracked: count it for the README.
    keys = [k["KeyArn"] for k in kms.list_keys()["Keys"]
            if {"TagKey": "tenant", "TagValue": FAULT_TENANT} in kms.list_resource_tags(KeyId=k["KeyArn"])["Tags"]]
    endpoints = boto_session("ec2", REGION).describe_vpc_endpoints(
        Filters=[{"Name": "tag:tenant", "Values": [FAULT_TENANT]}])["VpcEndpoints"]
    tracked = {*lake["gateway_endpoint_ids"].values(), *lake["interface_endpoint_ids"].values()}
    stray_keys = [k for k in keys if k != lake["kms_key_arn"]]
    stray_endpoints = [e["VpcEndpointId"] for e in endpoints if e["VpcEndpointId"] not in tracked]
    print(f"left behind untracked after the kill: kms_keys={len(stray_keys)} vpc_endpoints={len(stray_endpoints)}")
    # Endpoints have a unique place in the module (one S3 gateway per VPC, one private-DNS interface endpoint
    # per VPC and service): the runner adopts them before the apply, so a second S3 gateway endpoint never
    # lands on the route tables (AWS would refuse it; tenants/README.md, "Layout checks").
    assert stray_endpoints == []
    # ... and the runner names exactly those, in one line, for the operator to check and delete.
    warned = [line for line in reapply.stdout.splitlines() if "left behind by the interrupted apply" in line]
    if stray_keys or stray_endpoints:
        (line,) = warned
        named = line.split("(no unique name to adopt): ", 1)[1].split("; check and delete", 1)[0].split(", ")
        assert sorted(named) == sorted([*stray_endpoints, *stray_keys])
    else:
        assert warned == []


def test_two_applies_at_once_the_second_fails_on_the_lock_in_one_line(concurrent_applies):
    lock, second = concurrent_applies["lock"], concurrent_applies["second"]
    assert lock is not None, "the first apply never took the lock"
    assert second.returncode != 0
    ours = _our_lines(second.stderr)
    assert len(ours) == 1 and LOCKED_RE.match(ours[0]), second.stderr
    assert LOCKED_RE.match(ours[0]).group("id") == lock["ID"]
    assert concurrent_applies["first_returncode"] == 0, (
        f"first apply exited {concurrent_applies['first_returncode']}:\n"
        + "\n".join(concurrent_applies["first_output"].splitlines()[-25:]))
    assert concurrent_applies["released"]


def test_next_plan_shows_no_changes(concurrent_applies, boto_session):
    """After the kill, the recovery and the concurrent applies, the state still matches the emulator."""
    state = json.loads(boto_session("s3", REGION).get_object(
        Bucket=STATE_BUCKET, Key=f"tenants/{FAULT_TENANT}/terraform.tfstate")["Body"].read())
    assert len([r for r in state["resources"] if r["mode"] == "managed"]) >= 30
    result = make("plan", f"TENANT={FAULT_TENANT}", "TF_ARGS=-detailed-exitcode")
    assert result.returncode == 0, result.tail()  # 0 = no changes
    assert "No changes." in result.stdout
