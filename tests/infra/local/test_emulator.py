"""The emulator manager: start, reuse, stale PID, stop, port in use. Each test uses its own state dir."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import boto3
import pytest

from infra.local import emulator as emu

pytestmark = pytest.mark.integration


@pytest.fixture
def state_dir(tmp_path):
    yield tmp_path
    emu.stop(tmp_path)


def test_start_records_endpoint_and_pid_and_serves_aws(state_dir):
    state, reused = emu.start(state_dir)
    assert not reused
    recorded = json.loads((state_dir / "emulator.json").read_text())
    assert recorded["pid"] == state.pid and recorded["port"] == state.port
    assert state.endpoint == f"https://127.0.0.1:{state.port}"
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=state.endpoint, verify=state.ca_bundle,
                      aws_access_key_id="x", aws_secret_access_key="x")
    s3.create_bucket(Bucket="smoke")
    assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == ["smoke"]


def test_server_binds_loopback_only(state_dir):
    state, _ = emu.start(state_dir)
    cmd = emu._cmdline(state.pid)
    assert cmd[cmd.index("-H") + 1] == "127.0.0.1"


def test_second_start_reuses_running_server(state_dir):
    first, _ = emu.start(state_dir)
    second, reused = emu.start(state_dir)
    assert reused and second == first


def test_stale_pid_is_detected_and_replaced(state_dir):
    first, _ = emu.start(state_dir)
    os.kill(first.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while emu._pid_alive(first.pid) and time.monotonic() < deadline:
        try:
            os.waitpid(first.pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.05)
    assert emu.status(state_dir).startswith("stale state")
    second, reused = emu.start(state_dir)
    assert not reused and second.pid != first.pid
    assert emu.is_healthy(second.endpoint, second.ca_bundle)


def test_server_certificate_is_verified_against_our_ca_only(state_dir):
    state, _ = emu.start(state_dir)
    assert emu.is_healthy(state.endpoint, state.ca_bundle)
    # The system trust store does not know our private CA: TLS verification is real, not disabled.
    import certifi
    assert not emu.is_healthy(state.endpoint, certifi.where())


def test_stale_state_pointing_at_foreign_pid_is_not_killed(state_dir):
    # A recycled PID: the state names a live process that is not our moto server.
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (state_dir / "emulator.json").write_text(emu.EmulatorState(
            pid=bystander.pid, port=1, endpoint="https://127.0.0.1:1", log_file="", started_at=0,
            ca_bundle="", truststore="").to_json())
        assert "stale state removed" in emu.stop(state_dir)
        assert bystander.poll() is None, "stop() must never signal a PID that is not our server"
        assert not (state_dir / "emulator.json").exists()
    finally:
        bystander.kill()
        bystander.wait()


def test_stop_kills_exactly_the_recorded_pid(state_dir):
    state, _ = emu.start(state_dir)
    msg = emu.stop(state_dir)
    assert f"pid {state.pid}" in msg
    assert not emu._pid_alive(state.pid)
    assert not (state_dir / "emulator.json").exists()
    assert emu.stop(state_dir) == "no emulator recorded"


def test_port_already_in_use_gives_clear_error(state_dir):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        busy = squatter.getsockname()[1]
        with pytest.raises(emu.EmulatorError, match=f"port {busy} on 127.0.0.1 is already in use"):
            emu.start(state_dir, port=busy)
        assert not (state_dir / "emulator.json").exists()
        # Without a fixed port the manager picks another, free one.
        state, _ = emu.start(state_dir)
        assert state.port != busy


def test_cli_up_status_down(state_dir):
    py = [sys.executable, "-m", "infra.local.emulator"]
    up = subprocess.run(py + ["up", "--state-dir", str(state_dir)], capture_output=True, text=True, check=True)
    assert "started at https://127.0.0.1:" in up.stdout
    again = subprocess.run(py + ["up", "--state-dir", str(state_dir)], capture_output=True, text=True, check=True)
    assert "reusing" in again.stdout
    status = subprocess.run(py + ["status", "--state-dir", str(state_dir)], capture_output=True, text=True, check=True)
    assert status.stdout.startswith("running at")
    down = subprocess.run(py + ["down", "--state-dir", str(state_dir)], capture_output=True, text=True, check=True)
    assert "stopped emulator" in down.stdout


def test_conditional_deny_bucket_policy_is_stored_but_not_evaluated(state_dir):
    """Moto would deny every object request under a conditional Deny (it evaluates without request
    context); the emulator's shim stores and returns the policy but does not evaluate it."""
    state, _ = emu.start(state_dir)
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=state.endpoint, verify=state.ca_bundle,
                      aws_access_key_id="x", aws_secret_access_key="x")
    s3.create_bucket(Bucket="policy-check")
    policy = json.dumps({"Version": "2012-10-17", "Statement": [{
        "Sid": "DenyInsecureTransport", "Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:*",
        "Resource": ["arn:aws:s3:::policy-check", "arn:aws:s3:::policy-check/*"],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]})
    s3.put_bucket_policy(Bucket="policy-check", Policy=policy)
    s3.put_object(Bucket="policy-check", Key="bronze/x.json", Body=b"{}")
    assert s3.get_object(Bucket="policy-check", Key="bronze/x.json")["Body"].read() == b"{}"
    assert json.loads(s3.get_bucket_policy(Bucket="policy-check")["Policy"]) == json.loads(policy)


def test_versioned_bucket_with_delete_markers_empties_and_deletes(state_dir):
    """Plain moto answered 500 here (delete markers lack dispose), which hung terraform's destroy."""
    state, _ = emu.start(state_dir)
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=state.endpoint, verify=state.ca_bundle,
                      aws_access_key_id="x", aws_secret_access_key="x")
    s3.create_bucket(Bucket="versioned-check")
    s3.put_bucket_versioning(Bucket="versioned-check", VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(Bucket="versioned-check", Key="a", Body=b"1")
    s3.delete_object(Bucket="versioned-check", Key="a")  # leaves a delete marker
    assert len(s3.list_object_versions(Bucket="versioned-check")["DeleteMarkers"]) == 1
    # What terraform's destroy does: versioning goes to Suspended first, then objects are deleted.
    s3.put_bucket_versioning(Bucket="versioned-check", VersioningConfiguration={"Status": "Suspended"})
    s3.delete_object(Bucket="versioned-check", Key="a")
    listing = s3.list_object_versions(Bucket="versioned-check")
    doomed = [{"Key": v["Key"], "VersionId": v["VersionId"]}
              for v in listing.get("Versions", []) + listing.get("DeleteMarkers", [])]
    if doomed:
        assert not s3.delete_objects(Bucket="versioned-check", Delete={"Objects": doomed}).get("Errors")
    s3.delete_bucket(Bucket="versioned-check")
    assert "versioned-check" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]


def test_eventbridge_notification_switch_is_returned(state_dir):
    """Plain moto stored it but never returned it: every re-plan wanted to turn EventBridge on again."""
    state, _ = emu.start(state_dir)
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=state.endpoint, verify=state.ca_bundle,
                      aws_access_key_id="x", aws_secret_access_key="x")
    s3.create_bucket(Bucket="eventbridge-check")

    def configuration() -> dict:
        response = s3.get_bucket_notification_configuration(Bucket="eventbridge-check")
        response.pop("ResponseMetadata")
        return response

    assert configuration() == {}
    s3.put_bucket_notification_configuration(Bucket="eventbridge-check",
                                             NotificationConfiguration={"EventBridgeConfiguration": {}})
    assert configuration() == {"EventBridgeConfiguration": {}}
    s3.put_bucket_notification_configuration(Bucket="eventbridge-check", NotificationConfiguration={})
    assert configuration() == {}


def test_a_deleted_virtual_cluster_frees_its_namespace(state_dir):
    """Plain moto kept counting a TERMINATED virtual cluster: a tenant destroyed and applied again failed."""
    state, _ = emu.start(state_dir)
    emr = boto3.client("emr-containers", region_name="eu-west-1", endpoint_url=state.endpoint,
                       verify=state.ca_bundle, aws_access_key_id="x", aws_secret_access_key="x")
    provider = {"type": "EKS", "id": "tenantlake", "info": {"eksInfo": {"namespace": "emr-acme"}}}
    first = emr.create_virtual_cluster(name="acme-lake", containerProvider=provider)["id"]
    with pytest.raises(emr.exceptions.ValidationException, match="already exists in the given namespace"):
        emr.create_virtual_cluster(name="acme-lake", containerProvider=provider)
    emr.delete_virtual_cluster(id=first)
    second = emr.create_virtual_cluster(name="acme-lake", containerProvider=provider)["id"]
    assert second != first
    assert emr.describe_virtual_cluster(id=first)["virtualCluster"]["state"] == "TERMINATED"
    assert emr.describe_virtual_cluster(id=second)["virtualCluster"]["state"] == "RUNNING"
