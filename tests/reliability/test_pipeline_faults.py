"""Pipeline faults (issue 9): kill jobs mid-write, lose the emulator, corrupt the checkpoint and manifests.

Every scenario ends by counting event ids in the lake: each id exactly once, none missing. Jobs run
through the real CLI (``python -m spark_jobs``) in their own process group, so SIGKILL reaches the
JVM too; the checkpoint scenario runs the CLI in-process (``cli.main``) on one Spark session, because
its runs fail before any batch starts. Figures for tests/reliability/README.md are printed with the
``FAULTS`` prefix (run with ``-s`` to see them).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import psutil
import pytest

from spark_jobs.datagen import DatagenConfig, generate
from spark_jobs.datagen.sink import write_landing
from spark_jobs.lake import LakeConfig
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.integration

DATASET = "iot"
LEFTOVER_PREFIXES = (".spark-staging-", "_temporary")
RECOVER_HINT = f"python -m spark_jobs recover --layer bronze --dataset {DATASET}"


# ---------------------------------------------------------------- helpers

def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "TENANTLAKE_STATE_DIR": str(tmp_path / "state"), "SPARK_LOCAL_IP": "127.0.0.1",
            "TENANTLAKE_VALIDATION": "off",  # these tests are about delivery; quality has its own suite
            "PYTHONPATH": str(REPO_ROOT), **extra}


def _cli(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spark_jobs", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def _ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, f"exit {result.returncode}:\n{result.stdout}\n{result.stderr[-3000:]}"
    return result


def _start(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen:
    """A job in a process group of its own: killing the group kills its JVM as well."""
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "spark_jobs", *args], cwd=REPO_ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)


def _group_members(pgid: int) -> list[int]:
    members = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) == pgid:
                members.append(proc.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return members


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the job's whole process group (python driver and JVM), and wait until none of it is left."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 20
    while (left := _group_members(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"processes of the killed job survived SIGKILL: {left}"


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(LEFTOVER_PREFIXES)) if folder.is_dir() else []


def _visible_partitions(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if "=" in p.name and not p.name.startswith((".", *LEFTOVER_PREFIXES)))


def _wait_for(condition, proc: subprocess.Popen, timeout: float, what: str, log: Path, between=None):
    """Poll ``condition()`` until truthy; fail if ``proc`` exits or the time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        if proc.poll() is not None:
            pytest.fail(f"job exited ({proc.returncode}) before {what}:\n{log.read_text()[-3000:]}")
        if between:
            between()
        time.sleep(0.01)
    pytest.fail(f"timed out after {timeout}s waiting for {what}:\n{log.read_text()[-3000:]}")


def _event_ids(files: list[tuple[str, bytes]]) -> list[str]:
    return [record["event_id"] for _, body in files for record in json.loads(body)]


def _bronze_event_counts(bronze: Path) -> dict[str, int]:
    """event_id -> rows in bronze, read by DuckDB with the broadest glob (hidden folders included)."""
    rows = duckdb.sql(
        f"SELECT json_extract_string(_raw, '$.event_id') AS id, count(*) FROM read_parquet('{bronze}/**/*.parquet', "
        "hive_partitioning = true) GROUP BY id").fetchall()
    return dict(rows)


def _assert_exactly_once(counts: dict[str, int], expected: list[str]) -> None:
    assert len(expected) == len(set(expected)), "the generator gave duplicate event ids"
    duplicated = {k: v for k, v in counts.items() if v != 1}
    missing = set(expected) - set(counts)
    unexpected = set(counts) - set(expected)
    assert not duplicated, f"{len(duplicated)} event ids are in bronze more than once, e.g. {list(duplicated.items())[:3]}"
    assert not missing, f"{len(missing)} event ids never reached bronze, e.g. {sorted(missing)[:3]}"
    assert not unexpected, f"bronze holds event ids nobody landed: {sorted(unexpected)[:3]}"
    assert sum(counts.values()) == len(expected)


def _report(scenario: str, **figures) -> None:
    print(f"FAULTS {scenario}: " + ", ".join(f"{k}={v}" for k, v in figures.items()))


# ---------------------------------------------------------------- 1. SIGKILL bronze mid-batch, twice

def test_bronze_killed_mid_batch_while_files_keep_arriving_ingests_every_event_once(tmp_path):
    lake_dir = tmp_path / "lake"
    lake = LakeConfig(lake_uri=str(lake_dir))
    data = generate(DatagenConfig(dataset=DATASET, records=3000, batch_size=20, sources=6, seed=7))
    files = list(data.files)
    bronze, commits = lake_dir / "bronze" / DATASET, lake_dir / "checkpoints" / DATASET / "bronze" / "commits"
    env, log = _env(tmp_path), tmp_path / "bronze.log"
    stream = ["run", "--lake-uri", str(lake_dir), "--dataset", DATASET, "--layer", "bronze", "--continuous",
              "--trigger-seconds", "1", "--max-files-per-trigger", "10"]
    landed = 0

    def land(count: int) -> None:
        nonlocal landed
        write_landing(lake, DATASET, files[landed:landed + count])
        landed = min(len(files), landed + count)

    last_feed = [0.0]

    def feed() -> None:  # a producer that keeps writing while the job runs: 2 files every 0.3 s
        if landed < len(files) and time.monotonic() - last_feed[0] > 0.3:
            land(2)
            last_feed[0] = time.monotonic()

    def committed() -> int:
        return len([p for p in commits.iterdir() if p.name.isdigit()]) if commits.is_dir() else 0

    land(40)
    kills = []
    for round_no in (1, 2):
        job = _start(env, log, *stream)
        try:
            before = committed()
            # Mid-batch: a batch of this run has been committed, and the next one is writing its partition.
            _wait_for(lambda: committed() > before and _leftovers(bronze), job, 240,
                      f"a bronze batch writing (round {round_no})", log, between=feed)
            kills.append({"committed_batches": committed(), "staging": _leftovers(bronze)})
        finally:
            _kill_group(job)
        assert _leftovers(bronze), "the kill did not land during the write"
        land(15)  # files keep arriving while bronze is down
    land(len(files))  # the rest of the stream
    drain = _ok(_cli(env, "run", "--lake-uri", str(lake_dir), "--dataset", DATASET, "--layer", "bronze",
                     "--max-files-per-trigger", "50"))
    assert "removed leftovers" in drain.stderr
    assert _leftovers(bronze) == []

    counts = _bronze_event_counts(bronze)
    _assert_exactly_once(counts, _event_ids(files))
    _report("bronze SIGKILL", kills=len(kills), events=sum(counts.values()), files=len(files),
            batches=len(_visible_partitions(bronze)), lost=0, duplicated=0)


# ---------------------------------------------------------------- 2. SIGKILL silver and gold during their write

def _layer_rows(folder: Path, drop: tuple[str, ...] = ("_run_id",)) -> list[tuple]:
    """Rows of a partitioned parquet folder as a reader that skips hidden folders sees them."""
    rel = duckdb.sql(f"SELECT * FROM read_parquet('{folder}/*=*/*.parquet', hive_partitioning = true)")
    columns = [c for c in rel.columns if c not in drop]
    return sorted(duckdb.sql(f"SELECT {', '.join(columns)} FROM rel").fetchall(), key=repr)


def _latest_manifest(lake_dir: Path, layer: str) -> dict:
    runs = sorted((lake_dir / "reports" / layer / DATASET).iterdir())
    return json.loads((runs[-1] / "manifest.json").read_text())


def _kill_during_write(env, log, lake_dir: Path, layer: str, outputs: list[Path]) -> list[str]:
    """Run one layer and SIGKILL it as soon as its staging folder appears; retried if the write was too quick."""
    for _ in range(3):
        job = _start(env, log, "run", "--lake-uri", str(lake_dir), "--dataset", DATASET, "--layer", layer)
        try:
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline and job.poll() is None:
                staging = [name for folder in outputs for name in _leftovers(folder)]
                if staging:
                    break
                time.sleep(0.005)
        finally:
            _kill_group(job)
        left = [f"{folder.name}/{name}" for folder in outputs for name in _leftovers(folder)]
        if left:
            return left
    pytest.fail(f"{layer}: never caught the write in progress:\n{log.read_text()[-2000:]}")


def test_silver_and_gold_killed_during_their_write_leave_no_partial_or_duplicate_partitions(tmp_path):
    lake_dir = tmp_path / "lake"
    data = generate(DatagenConfig(dataset=DATASET, records=4000, batch_size=40, sources=6, bad_rate=0.05, seed=3,
                                  interval_seconds=120))
    write_landing(LakeConfig(lake_uri=str(lake_dir)), DATASET, data.files)
    env, log = _env(tmp_path), tmp_path / "jobs.log"
    run_all = ["run-all", "--lake-uri", str(lake_dir), "--dataset", DATASET]
    _ok(_cli(env, *run_all))
    silver, quarantine = lake_dir / "silver" / DATASET, lake_dir / "quarantine" / DATASET
    gold = lake_dir / "gold" / DATASET / "iot_hourly"
    clean = {name: (_visible_partitions(folder), _layer_rows(folder))
             for name, folder in {"silver": silver, "quarantine": quarantine, "gold": gold}.items()}
    clean_manifests = {layer: _latest_manifest(lake_dir, layer) for layer in ("silver", "gold")}

    killed = {"silver": _kill_during_write(env, log, lake_dir, "silver", [silver, quarantine]),
              "gold": _kill_during_write(env, log, lake_dir, "gold", [gold])}
    # Killed before its commit: the published partitions are the clean run's, untouched.
    for name, folder in {"silver": silver, "quarantine": quarantine, "gold": gold}.items():
        assert (_visible_partitions(folder), _layer_rows(folder)) == clean[name], f"{name} changed by a killed write"
    # A run manifest is a report: a corrupt one must not change what a re-run does.
    for layer in ("bronze", "silver", "gold"):
        runs = sorted((lake_dir / "reports" / layer / DATASET).iterdir())
        (runs[-1] / "manifest.json").write_text('{"status": "succeeded", "rows_out": ')

    rerun = _ok(_cli(env, *run_all))
    assert "removed leftovers" in rerun.stderr
    for name, folder in {"silver": silver, "quarantine": quarantine, "gold": gold}.items():
        assert _leftovers(folder) == [], f"{name}: staging left visible to glob readers"
        assert (_visible_partitions(folder), _layer_rows(folder)) == clean[name], f"{name} differs from the clean run"
    bronze_run = _latest_manifest(lake_dir, "bronze")
    assert bronze_run["status"] == "succeeded" and bronze_run["rows_in"] == 0  # nothing ingested twice
    for layer in ("silver", "gold"):
        manifest = _latest_manifest(lake_dir, layer)
        assert manifest["status"] == "succeeded" and manifest["invariant_holds"] is True
        assert manifest["rows_in"] == manifest["rows_out"] + manifest["quarantined"] + manifest["duplicates"]
        for key in ("rows_in", "rows_out", "quarantined", "duplicates"):
            assert manifest[key] == clean_manifests[layer][key], f"{layer} {key} differs from the clean run"
    silver_run = _latest_manifest(lake_dir, "silver")
    assert silver_run["rows_in"] == data.raw_records
    _report("silver/gold SIGKILL", killed=killed, records=data.raw_records, silver_rows=silver_run["rows_out"],
            quarantined=silver_run["quarantined"], duplicates=silver_run["duplicates"],
            silver_partitions=len(clean["silver"][0]), gold_rows=len(clean["gold"][1]), corrupt_manifests=3)
