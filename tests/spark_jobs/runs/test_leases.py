"""spark_jobs/runs/leases.py: one live run per layer of a dataset; create-only lease writes, heartbeats, stale takeover.

The folder store is tested with real processes racing (no Spark: leases need none); the S3 store against the
session emulator, which enforces If-None-Match and If-Match as S3 does. The pipeline's own use of leases
(two concurrent run-alls on s3a) is in test_pipeline_e2e.py, maintenance against a live run in
test_maintain.py.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spark_jobs.lake.config import LakeConfig
from spark_jobs.runs import leases
from tests.conftest import REPO_ROOT

HOLDER = """
import sys, time
from pathlib import Path
from spark_jobs.lake.config import LakeConfig
from spark_jobs.runs.leases import LeaseRefused, held_leases
lake, go, hold = LakeConfig(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
while not go.exists():
    time.sleep(0.005)
try:
    with held_leases(lake, [("iot", "bronze"), ("iot", "silver"), ("iot", "gold")], label="run-all",
                     command="run-all") as run_id:
        print("TOOK", run_id, flush=True)
        time.sleep(hold)
except LeaseRefused as exc:
    print(exc, file=sys.stderr, flush=True)
    sys.exit(1)
"""


def _holder(lake_dir: Path, go: Path, hold: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", HOLDER, str(lake_dir), str(go), str(hold)], cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _lease(lake_dir: Path, layer: str = "bronze") -> dict:
    return json.loads((lake_dir / "checkpoints" / "iot" / "runs" / f"{layer}.lease").read_text())


def test_of_runs_racing_for_a_dataset_exactly_one_takes_it_and_the_others_name_it(tmp_path):
    lake_dir, go = tmp_path / "lake", tmp_path / "go"
    racers = [_holder(lake_dir, go, 3) for _ in range(5)]
    time.sleep(1.5)  # every interpreter started and waiting
    go.touch()
    results = [(p.wait(timeout=60), *p.communicate(timeout=10)) for p in racers]
    winners = [out.split()[1] for code, out, _ in results if code == 0]
    assert len(winners) == 1, results
    refusals = [err.strip() for code, _, err in results if code == 1]
    assert len(refusals) == 4
    for message in refusals:
        assert len(message.splitlines()) == 1
        assert message.startswith("run-all iot: the bronze layer of iot is held by run " + winners[0])
        assert "(run-all, pid " in message and f"on {socket.gethostname()}) since 20" in message
        assert "nothing was done" in message and str(lake_dir / "checkpoints/iot/runs/bronze.lease") in message
    # The winner released all three; a refused racer left nothing behind (it took none, or gave back bronze).
    assert sorted(p.name for p in (lake_dir / "checkpoints" / "iot" / "runs").glob("*.lease")) == []


def test_a_killed_holder_is_taken_over_from_its_host_with_a_message(tmp_path):
    lake_dir, go = tmp_path / "lake", tmp_path / "go"
    go.touch()
    holder = _holder(lake_dir, go, 120)
    assert holder.stdout.readline().startswith("TOOK")
    killed = _lease(lake_dir)
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    said = []
    with leases.held_leases(LakeConfig(str(lake_dir)), [("iot", "bronze")], label="bronze", progress=said.append) as run_id:
        assert _lease(lake_dir)["run_id"] == run_id != killed["run_id"]
    assert said == [f"[bronze iot] took over the bronze lease of run {killed['run_id']} (run-all, pid {killed['pid']} "
                    f"on {killed['host']}) since {killed['since']}: its process (pid {killed['pid']}) on this host is gone"]
    holder.stdout.close()
    holder.stderr.close()


def _foreign_lease(path: Path, silent_seconds: float, heartbeats: bool = True) -> None:
    """A lease of a run on another host, last rewritten ``silent_seconds`` ago."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lease = {"run_id": "20260101T000000Z-0badf00d", "layer": "silver", "command": "run", "host": "emr-driver-7",
             "pid": 7, "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - silent_seconds))}
    if heartbeats:
        lease["heartbeat_seconds"] = leases.LEASE_HEARTBEAT_SECONDS
    path.write_text(json.dumps(lease))
    moment = time.time() - silent_seconds
    os.utime(path, (moment, moment))


def test_a_lease_from_another_host_counts_until_its_heartbeats_stop(tmp_path):
    lake = LakeConfig(str(tmp_path / "lake"))
    path = tmp_path / "lake" / "checkpoints" / "iot" / "runs" / "silver.lease"
    _foreign_lease(path, leases.LEASE_STALE_SECONDS - 60)
    with pytest.raises(leases.LeaseRefused, match=r"^silver iot: the silver layer of iot is held by run "
                                                  r"20260101T000000Z-0badf00d \(run, pid 7 on emr-driver-7\)"):
        with leases.held_lease(None, lake, "iot", "silver"):
            pass
    assert [lease["run_id"] for _, lease in leases.live_leases(None, lake, "iot")] == ["20260101T000000Z-0badf00d"]
    _foreign_lease(path, leases.LEASE_STALE_SECONDS + 60)
    assert leases.live_leases(None, lake, "iot") == []
    said = []
    with leases.held_leases(lake, [("iot", "silver")], label="silver", progress=said.append):
        pass
    assert said and said[0].endswith(f": no heartbeat for {(leases.LEASE_STALE_SECONDS + 60) // 60} min")
    # A lease without heartbeats (another tool's, as the erasure tests write) counts for LEASE_STALE_HOURS.
    _foreign_lease(path, 3600, heartbeats=False)
    assert [uri for uri, _ in leases.live_leases(None, lake, "iot")] == [lake.path("checkpoints/iot/runs/silver.lease")]


def test_the_holder_renews_its_lease_and_removes_only_its_own(tmp_path, monkeypatch):
    monkeypatch.setattr(leases, "LEASE_HEARTBEAT_SECONDS", 0.2)
    lake = LakeConfig(str(tmp_path / "lake"))
    path = tmp_path / "lake" / "checkpoints" / "iot" / "runs" / "gold.lease"
    said = []
    with leases.held_leases(lake, [("iot", "gold")], label="gold", progress=said.append):
        first = (path.stat().st_mtime_ns, path.read_text())
        time.sleep(1.5)
        assert path.stat().st_mtime_ns > first[0]  # rewritten by the heartbeat
        assert json.loads(path.read_text())["since"] == json.loads(first[1])["since"]
    assert not path.exists() and said == []

    # Taken over while this run was silent: the former holder leaves the new holder's lease alone.
    with leases.held_leases(lake, [("iot", "gold")], label="gold", progress=said.append):
        path.write_text(json.dumps({"run_id": "someone-else", "heartbeat_seconds": 60, "host": "h", "pid": 1}))
    assert json.loads(path.read_text())["run_id"] == "someone-else"
    assert said == ["warning: gold: could not remove the run's lease (checkpoints/iot/runs/gold.lease was taken over "
                    f"by another run); a lease counts until {leases.LEASE_STALE_SECONDS // 60} min after its last heartbeat"]


def test_staleness_is_measured_on_the_stores_clock_not_this_machines():
    """``modified`` and ``now`` both come from the store (S3's LastModified and the Date of its answer): a
    lease is judged by how long the store saw no heartbeat, whatever this machine's clock says."""
    lease = {"run_id": "r", "heartbeat_seconds": 60, "host": "emr-driver-7", "pid": 7}
    written = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.timezone.utc)  # this machine's clock is years ahead
    assert leases.stale_reason(lease, written, now=written + dt.timedelta(seconds=30)) is None
    silent = written + dt.timedelta(seconds=leases.LEASE_STALE_SECONDS)
    assert leases.stale_reason(lease, written, now=silent) == f"no heartbeat for {leases.LEASE_STALE_SECONDS // 60} min"


def test_a_dead_pid_counts_only_where_a_pid_means_the_same_process(tmp_path):
    """Containers with host networking share a host name but not their pids: a lease of another pid namespace
    (or another boot) on this host name waits for its heartbeats; of this one, a gone process is taken over."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=30)
    lake = LakeConfig(str(tmp_path / "lake"))
    path = tmp_path / "lake" / "checkpoints" / "iot" / "runs" / "bronze.lease"
    path.parent.mkdir(parents=True)
    mine = leases.host_identity()
    assert mine["boot_id"] and mine["pid_namespace"]  # Linux: both known
    other = {"run_id": "20260101T000000Z-c0ffee00", "layer": "bronze", "command": "run-all", "pid": gone.pid,
             "since": "2026-01-01T00:00:00Z", "heartbeat_seconds": leases.LEASE_HEARTBEAT_SECONDS}
    for differs in ({"pid_namespace": "pid:[1]"}, {"boot_id": "another-boot"}):
        path.write_text(json.dumps({**other, **mine, **differs}))
        with pytest.raises(leases.LeaseRefused, match="held by run 20260101T000000Z-c0ffee00"):
            with leases.held_leases(lake, [("iot", "bronze")], label="bronze"):
                pass
    path.write_text(json.dumps({**other, **mine}))
    said = []
    with leases.held_leases(lake, [("iot", "bronze")], label="bronze", progress=said.append):
        pass
    assert said[0].endswith(f"its process (pid {gone.pid}) on this host is gone")


def test_a_run_whose_lease_was_taken_away_stops_at_its_fence(tmp_path):
    """``fence`` renews the lease with a conditional write right before a commit: while the lease is the run's
    it passes (and restarts the lease's stale clock); taken over, the run stops there in one line."""
    lake = LakeConfig(str(tmp_path / "lake"))
    path = tmp_path / "lake" / "checkpoints" / "iot" / "runs" / "silver.lease"
    leases.fence(lake, "iot", "silver", "silver.iot")  # no lease held by this process: nothing to check
    with leases.held_leases(lake, [("iot", "silver")], label="run-all", progress=lambda line: None):
        before = path.stat().st_mtime_ns
        time.sleep(0.05)
        leases.fence(lake, "iot", "silver", "silver.iot")
        assert path.stat().st_mtime_ns > before  # renewed
        path.write_text(json.dumps({"run_id": "20260101T000000Z-5eco0d00", "layer": "silver", "command": "run",
                                    "host": "emr-driver-2", "pid": 12, "since": "2026-01-01T00:00:00Z",
                                    "heartbeat_seconds": 60}))
        with pytest.raises(leases.LeaseLost) as lost:
            leases.fence(lake, "iot", "silver", "silver.iot")
    message = str(lost.value)
    assert len(message.splitlines()) == 1 and lost.value.exit_code == 1
    assert message.startswith("run-all iot: this run no longer holds the silver lease of iot (another run took it "
                              "over; it is now held by run 20260101T000000Z-5eco0d00 (run, pid 12 on emr-driver-2)")
    assert "it stopped before committing silver.iot, which is as it was" in message
    assert json.loads(path.read_text())["run_id"] == "20260101T000000Z-5eco0d00"  # the new holder's lease stays


def test_an_erasure_request_refuses_the_run_and_it_keeps_no_lease(tmp_path):
    lake = LakeConfig(str(tmp_path / "lake"))
    lock = tmp_path / "lake" / "checkpoints" / "iot" / "erasure.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps({"request_id": "er-20260101T000000Z-12345678"}))
    with pytest.raises(leases.LeaseRefused, match="run-all iot: erasure request er-20260101T000000Z-12345678 is in "
                                                  "progress on this dataset"):
        with leases.held_leases(lake, [("iot", layer) for layer in leases.LEASE_LAYERS], label="run-all"):
            pass
    assert list((tmp_path / "lake" / "checkpoints" / "iot" / "runs").glob("*.lease")) == []
    with leases.held_leases(lake, [("iot", "bronze")], label="bronze", erasure_request="er-20260101T000000Z-12345678"):
        pass  # the request's own runs


@pytest.fixture(scope="module")
def s3_lake(emulator, aws_env):
    """A versioned bucket and a key on the session emulator, as a tenant's lake."""
    import boto3

    keys = {k: aws_env[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    s3 = boto3.client("s3", region_name="eu-west-1", endpoint_url=aws_env["AWS_ENDPOINT_URL"],
                      verify=aws_env["AWS_CA_BUNDLE"], **{k.lower(): v for k, v in keys.items()})
    kms = boto3.client("kms", region_name="eu-west-1", endpoint_url=aws_env["AWS_ENDPOINT_URL"],
                       verify=aws_env["AWS_CA_BUNDLE"], **{k.lower(): v for k, v in keys.items()})
    bucket = "tenantlake-leases-lake"
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    key_arn = kms.create_key(Description="tenantlake leases test key")["KeyMetadata"]["Arn"]
    with pytest.MonkeyPatch.context() as patch:
        for name, value in aws_env.items():
            patch.setenv(name, value)
        yield s3, LakeConfig(f"s3a://{bucket}", kms_key_arn=key_arn, s3_endpoint=emulator.endpoint,
                             ca_bundle=emulator.ca_bundle)


def test_on_s3_a_lease_is_a_conditional_sse_kms_object(s3_lake, monkeypatch):
    s3, lake = s3_lake
    key = "checkpoints/iot/runs/bronze.lease"
    with leases.held_leases(lake, [("iot", "bronze")], label="bronze", command="run") as run_id:
        head = s3.head_object(Bucket=lake.bucket, Key=key)
        assert head["ServerSideEncryption"] == "aws:kms" and lake.kms_key_arn.split("/")[-1] in head["SSEKMSKeyId"]
        with pytest.raises(leases.LeaseRefused, match=f"^run-all iot: the bronze layer of iot is held by run {run_id}"):
            with leases.held_leases(lake, [("iot", "bronze")], label="run-all"):
                pass
        store = leases.lease_store(lake)
        stored = store.read(key)
        # S3's own clock, from its answer's Date header: staleness compares it with LastModified.
        assert stored.now is not None and abs((stored.now - stored.modified).total_seconds()) < 60
        assert store.create(key, "{}") is None  # If-None-Match: * on an existing name
        assert store.replace(key, stored.text, '"0000"') is None  # If-Match on another ETag
        assert store.delete(key, '"0000"') is False
    assert s3.list_objects_v2(Bucket=lake.bucket, Prefix=key).get("KeyCount", 0) == 0  # released

    # A stale lease from another host: of two runs that take it over with its ETag, only one can.
    monkeypatch.setattr(leases, "LEASE_STALE_SECONDS", 0)
    s3.put_object(Bucket=lake.bucket, Key=key, Body=json.dumps({"run_id": "gone", "heartbeat_seconds": 60,
                                                                 "host": "emr-driver-1", "pid": 9}).encode())
    store = leases.lease_store(lake)
    stale = store.read(key)
    assert store.replace(key, '{"run_id": "first"}', stale.tag) is not None
    assert store.replace(key, '{"run_id": "second"}', stale.tag) is None
    s3.put_object(Bucket=lake.bucket, Key=key, Body=json.dumps({"run_id": "gone", "heartbeat_seconds": 60,
                                                                 "host": "emr-driver-1", "pid": 9}).encode())
    said = []
    with leases.held_leases(lake, [("iot", "bronze")], label="bronze", progress=said.append):
        pass
    assert len(said) == 1 and said[0].startswith("[bronze iot] took over the bronze lease of run gone (pid 9 on emr-driver-1)")
    assert s3.list_objects_v2(Bucket=lake.bucket, Prefix=key).get("KeyCount", 0) == 0
