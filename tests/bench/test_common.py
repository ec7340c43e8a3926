"""bench.common.PeakRss on a real process tree."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from bench.common import PeakRss

# A stand-in JVM: an interpreter started under the name "java" that holds 300 MB, then forks (no exec)
# a child that lives for a while, as the JVM does for an instant each time Hadoop runs a shell command
# (the JVM's fork is named after the forking thread; its command line is the JVM's).
FAKE_JVM = """
import os, sys, time
block = bytearray(300 * 2**20)
for i in range(0, len(block), 4096):
    block[i] = 1
pid = os.fork()
if pid == 0:
    open("/proc/self/comm", "w").write("Executor task l")  # as a JVM thread's fork is named
    open(sys.argv[1], "w").write("forked")
    time.sleep(3)
    os._exit(0)
os.waitpid(pid, 0)
"""


def test_a_forked_jvm_child_is_not_counted_twice(tmp_path):
    java = tmp_path / "java"
    java.symlink_to(sys.executable)
    marker = tmp_path / "forked"
    launcher = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.run(sys.argv[1:])",
                                 str(java), "-c", FAKE_JVM, str(marker)])
    with PeakRss(pid=launcher.pid, interval=0.05) as rss:
        launcher.wait(timeout=60)
        time.sleep(0.1)
    assert marker.read_text() == "forked"  # the fork existed while sampled
    assert 290 <= rss.peak_jvm_mb < 450, rss.peak_jvm_mb  # the 300 MB once, not twice
    assert rss.peak_total_mb < rss.peak_jvm_mb + rss.peak_python_mb + 50


def test_a_dedicated_emulator_has_clients_and_a_key_and_stops_by_its_pid(tmp_path):
    """bench/common.py dedicated_emulator: what every s3a benchmark provisions before its lake."""
    import psutil

    from bench.common import dedicated_emulator
    from infra.local import emulator

    dedicated = dedicated_emulator(tmp_path / "emulator", "eu-west-1", "bench test key")
    try:
        assert dedicated.kms.describe_key(KeyId=dedicated.key_arn)["KeyMetadata"]["Description"] == "bench test key"
        dedicated.s3.create_bucket(Bucket="bench-common", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        assert [b["Name"] for b in dedicated.s3.list_buckets()["Buckets"]] == ["bench-common"]
        assert psutil.pid_exists(dedicated.state.pid)
    finally:
        emulator.stop(tmp_path / "emulator")
    assert not psutil.pid_exists(dedicated.state.pid) or psutil.Process(dedicated.state.pid).status() == psutil.STATUS_ZOMBIE


def test_job_workspace_runs_the_jobs_as_users_run_them(tmp_path, monkeypatch):
    from bench.common import job_workspace

    monkeypatch.setenv("TENANTLAKE_VALIDATION", "off")
    monkeypatch.setenv("TENANTLAKE_DRIVER_MEMORY", "8g")
    work, log, env = job_workspace(str(tmp_path / "w"), "x", tmp_path / "contracts")
    assert work.is_dir() and log == work / "jobs.log" and env["TENANTLAKE_STATE_DIR"] == str(work / "state")
    assert env["TENANTLAKE_CONTRACTS_DIR"] == str(tmp_path / "contracts") and env["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert "TENANTLAKE_VALIDATION" not in env and "TENANTLAKE_DRIVER_MEMORY" not in env  # validation on, default heap
    default = job_workspace("", "x", tmp_path)[0]
    default.rmdir()
    assert default.name == f"tenantlake-bench-x-{os.getpid()}"
