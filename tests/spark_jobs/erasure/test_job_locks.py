"""spark_jobs/erasure/job.py's locks and the erasure key: create-only, so that two requests never both run
(issue 51: the lock was an overwrite, and the first to finish deleted it under the second).

Real processes race on a folder lake (the lease store's create-only hard link; the S3 store's If-None-Match is
the same ``create``, proven against the emulator in tests/spark_jobs/runs/test_leases.py). No Spark: the locks need
none. The end-to-end refusal of a second request while one runs is in test_exact.py.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spark_jobs.contract.model import parse_contract
from spark_jobs.erasure import ErasureError
from spark_jobs.erasure.job import _resolve_request
from spark_jobs.io import create_only
from spark_jobs.lake.config import LakeConfig
from spark_jobs.runs import leases
from tests.conftest import REPO_ROOT

CONTRACT = parse_contract({
    "dataset": "people", "landing": {"format": "json_lines"}, "key": ["email"], "event_time": "ts",
    "schema": [{"name": "ts", "type": "timestamp"}, {"name": "email", "type": "string"}], "subject_keys": ["email"]})

RACER = """
import sys, time
from pathlib import Path
from spark_jobs.contract.model import parse_contract
from spark_jobs.erasure import ErasureError
from spark_jobs.erasure.job import _take_locks
from spark_jobs.io import create_only
from spark_jobs.lake.config import LakeConfig
from spark_jobs.runs.leases import lock_text
lake, go, request = LakeConfig(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
contract = parse_contract({"dataset": "people", "landing": {"format": "json_lines"}, "key": ["email"],
                           "event_time": "ts", "schema": [{"name": "ts", "type": "timestamp"},
                           {"name": "email", "type": "string"}], "subject_keys": ["email"]})
while not go.exists():
    time.sleep(0.005)
created = create_only.create_text(lake, "checkpoints/_erasure/key", request + "\\n")
try:
    _take_locks(lake, [contract], lock_text(request, "digest-" + request, "2026-11-28T00:00:00Z"), None)
    print("TOOK", created, flush=True)
    time.sleep(2)
except ErasureError as exc:
    print(exc, file=sys.stderr, flush=True)
    sys.exit(2)
"""


def test_of_requests_racing_for_a_dataset_one_takes_the_lock_and_the_others_name_it(tmp_path):
    lake_dir, go = tmp_path / "lake", tmp_path / "go"
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(lake_dir), str(go), f"er-{n}"], cwd=REPO_ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(4)]
    time.sleep(1.5)  # every interpreter started and waiting
    go.touch()
    results = [(p.wait(timeout=60), *p.communicate(timeout=10)) for p in racers]
    assert sorted(code for code, _, _ in results) == [0, 2, 2, 2], results
    holder = json.loads((lake_dir / "checkpoints" / "people" / "erasure.lock").read_text())["request_id"]
    for code, _, err in results:
        if code == 2:
            (line,) = err.strip().splitlines()
            assert line.startswith("dataset people is held by erasure request ") and holder in line, line
    # The erasure key: written once, by one of them, never overwritten by the others.
    assert sum(out.split()[1] == "True" for code, out, _ in results if code == 0) <= 1
    key = (lake_dir / "checkpoints" / "_erasure" / "key").read_text().strip()
    assert key in {f"er-{n}" for n in range(4)}
    assert create_only.create_text(LakeConfig(str(lake_dir)), "checkpoints/_erasure/key", "other\n") is False
    assert (lake_dir / "checkpoints" / "_erasure" / "key").read_text().strip() == key


def _write_lock(lake_dir: Path, holder: dict) -> None:
    path = lake_dir / "checkpoints" / "people" / "erasure.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(holder))


def test_a_running_request_refuses_the_next_and_a_killed_one_is_resumed(tmp_path):
    """A lock of a live process (heartbeat fields, like a lease) refuses a request for the same subjects in one
    line naming it; once that process is gone, the same request resumes it; another request is refused until
    it completes, killed or not."""
    lake_dir = tmp_path / "lake"
    lake = LakeConfig(str(lake_dir))
    other = subprocess.Popen(["sleep", "60"])
    try:
        holder = json.loads(leases.lock_text("er-1", "digest-a", "2026-11-28T00:00:00Z"))
        holder.update(pid=other.pid, pid_started=leases._process_started(other.pid))
        _write_lock(lake_dir, holder)
        with pytest.raises(ErasureError, match=r"^dataset people: erasure request er-1 \(pid \d+ on .*\) for the same "
                                               r"subjects is running; nothing was changed"):
            _resolve_request(lake, [CONTRACT], "digest-a")
        with pytest.raises(ErasureError, match=r"^dataset people is locked by erasure request er-1 .*: finish it first"):
            _resolve_request(lake, [CONTRACT], "digest-b")
    finally:
        other.kill()
        other.wait()
    assert _resolve_request(lake, [CONTRACT], "digest-a") == ("er-1", "2026-11-28T00:00:00Z")
    with pytest.raises(ErasureError, match="finish it first"):
        _resolve_request(lake, [CONTRACT], "digest-b")
    # A lock written before locks had heartbeats is a killed request's: resumed.
    _write_lock(lake_dir, {"request_id": "er-0", "subjects_digest": "digest-a", "since": "2026-01-01T00:00:00Z"})
    assert _resolve_request(lake, [CONTRACT], "digest-a") == ("er-0", "2026-01-01T00:00:00Z")
