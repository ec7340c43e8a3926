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
from spark_jobs.io import iceberg_files, tables
from spark_jobs.lake.config import LakeConfig
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


def _cli(env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spark_jobs", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def _ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, f"exit {result.returncode}:\n{result.stdout}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def spark():
    """One Spark session in the test process for the runs that are not killed (no JVM start per run).
    Built like every other test package's session, so it is shared with them, and never stopped here."""
    from spark_jobs.runs.session import build_session

    return build_session("tenantlake-reliability", driver_memory="1g", small_inputs=True)


@pytest.fixture
def in_process(spark, tmp_path, monkeypatch, capsys):
    """``run(*args) -> (exit_code, stderr)``: the CLI's ``main`` on the shared session."""
    from spark_jobs.cli import main

    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TENANTLAKE_VALIDATION", "off")

    def run(*args: str) -> tuple[int, str]:
        capsys.readouterr()
        code = main(list(args))
        return code, capsys.readouterr().err

    run.spark = spark
    return run


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


def _staged_writes(lake_dir: Path) -> set[tuple[str, int]]:
    """Bronze batches being written right now: bronze writes a batch's records to its staging folder
    (``checkpoints/<ds>/bronze-staging/_batch_id=<n>/``, Spark's ``_temporary`` inside while tasks write)
    before it moves them into bronze. Each as (folder, inode of its ``_temporary``): a new write has a new one."""
    found = set()
    for folder in (lake_dir / "checkpoints" / DATASET / "bronze-staging").glob("_batch_id=*"):
        try:
            found.add((folder.name, (folder / "_temporary").stat().st_ino))
        except OSError:  # not writing (yet, or any more)
            pass
    return found


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

def test_bronze_killed_mid_batch_while_files_keep_arriving_ingests_every_event_once(tmp_path, in_process):
    lake_dir = tmp_path / "lake"
    lake = LakeConfig(lake_uri=str(lake_dir))
    data = generate(DatagenConfig(dataset=DATASET, records=3000, batch_size=40, sources=6, seed=7))
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

    def feed() -> None:  # a producer that keeps writing while the job runs: 1 file every 0.5 s
        if landed < len(files) and time.monotonic() - last_feed[0] > 0.5:
            land(1)
            last_feed[0] = time.monotonic()

    def committed() -> int:
        return len([p for p in commits.iterdir() if p.name.isdigit()]) if commits.is_dir() else 0

    land(20)
    kills = []
    for round_no in (1, 2):
        job = _start(env, log, *stream)
        try:
            # Round 1: a batch has been committed and the next one is writing its partition. Round 2:
            # the restart's first batch (the replay of the batch killed in round 1) is writing.
            needed, earlier = (1 if round_no == 1 else committed()), _staged_writes(lake_dir)
            _wait_for(lambda: committed() >= needed and _staged_writes(lake_dir) - earlier, job, 240,
                      f"a bronze batch writing (round {round_no})", log, between=feed)
            kills.append({"committed_batches": committed(), "staging": sorted(_staged_writes(lake_dir))})
        finally:
            _kill_group(job)
        assert _staged_writes(lake_dir) - earlier, "the kill did not land during the write"
        land(8)  # files keep arriving while bronze is down
    land(len(files))  # the rest of the stream
    code, drained = in_process("run", "--lake-uri", str(lake_dir), "--dataset", DATASET, "--layer", "bronze",
                               "--max-files-per-trigger", "40")
    assert code == 0, drained
    assert "removed leftovers" in drained
    assert _leftovers(bronze) == [] and not (lake_dir / "checkpoints" / DATASET / "bronze-staging").exists()

    counts = _bronze_event_counts(bronze)
    _assert_exactly_once(counts, _event_ids(files))
    _report("bronze SIGKILL", kills=len(kills), events=sum(counts.values()), files=len(files),
            batches=len(_visible_partitions(bronze)), lost=0, duplicated=0)


# ---------------------------------------------------------------- 2. SIGKILL silver and gold during their write

def _layer_rows(folder: Path, drop: tuple[str, ...] = ("_run_id",)) -> list[tuple]:
    """Rows of a partitioned parquet folder (quarantine) as a reader that skips hidden folders sees them."""
    rel = duckdb.sql(f"SELECT * FROM read_parquet('{folder}/*=*/*.parquet', hive_partitioning = true)")
    columns = [c for c in rel.columns if c not in drop]
    return sorted(duckdb.sql(f"SELECT {', '.join(columns)} FROM rel").fetchall(), key=repr)


def _table_state(folder: Path) -> tuple[int, list[tuple]]:
    """(current snapshot id, its rows) of an Iceberg table, read with DuckDB from the snapshot's files."""
    snapshot = iceberg_files.table_metadata(folder)["current-snapshot-id"]
    return snapshot, sorted(duckdb.sql(f"SELECT * FROM {iceberg_files.duckdb_source(folder)}").fetchall(), key=repr)


def _data_files_on_disk(table: Path) -> set[Path]:
    return set((table / "data").rglob("*.parquet")) if (table / "data").is_dir() else set()


def _latest_manifest(lake_dir: Path, layer: str) -> dict:
    runs = sorted((lake_dir / "reports" / layer / DATASET).iterdir(), key=lambda run: run.stat().st_mtime_ns)
    return json.loads((runs[-1] / "manifest.json").read_text())


def _kill_during_write(env, log, lake_dir: Path, layer: str, table: Path) -> list[str]:
    """Run one layer with ``--full`` (a run without it finds nothing new to write) and SIGKILL it as soon as it
    writes a new data file into ``table`` (its Iceberg write, before the commit); retried if the commit came
    first. Returns the files the killed write left."""
    for _ in range(3):
        before_files, (before_snapshot, _) = _data_files_on_disk(table), _table_state(table)
        job = _start(env, log, "run", "--lake-uri", str(lake_dir), "--dataset", DATASET, "--layer", layer, "--full")
        try:
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline and job.poll() is None and not _data_files_on_disk(table) - before_files:
                time.sleep(0.005)
        finally:
            _kill_group(job)
        if _table_state(table)[0] == before_snapshot and _data_files_on_disk(table) - before_files:
            return sorted(p.name for p in _data_files_on_disk(table) - before_files)
    pytest.fail(f"{layer}: never caught the write before its commit:\n{log.read_text()[-2000:]}")


def test_silver_and_gold_killed_during_their_write_leave_the_previous_snapshot_and_no_partial_rows(
        tmp_path, in_process):
    lake_dir = tmp_path / "lake"
    data = generate(DatagenConfig(dataset=DATASET, records=4000, batch_size=80, sources=6, bad_rate=0.05, seed=3,
                                  interval_seconds=240))
    write_landing(LakeConfig(lake_uri=str(lake_dir)), DATASET, data.files)
    env, log = _env(tmp_path), tmp_path / "jobs.log"
    run_all = ["run-all", "--lake-uri", str(lake_dir), "--dataset", DATASET]
    code, err = in_process(*run_all)
    assert code == 0, err
    silver, quarantine, gold = lake_dir / "silver" / DATASET, lake_dir / "quarantine" / DATASET, lake_dir / "gold" / "iot_hourly"
    clean = {"silver": _table_state(silver), "gold": _table_state(gold)}
    clean_quarantine = (_visible_partitions(quarantine), _layer_rows(quarantine))
    clean_manifests = {layer: _latest_manifest(lake_dir, layer) for layer in ("silver", "gold")}

    killed = {"silver": _kill_during_write(env, log, lake_dir, "silver", silver),
              "gold": _kill_during_write(env, log, lake_dir, "gold", gold)}
    # Killed before its commit: the current snapshot is the clean run's, and so is every row a reader of
    # the table sees; the killed write's files are on disk, referenced by no snapshot.
    for name, folder in {"silver": silver, "gold": gold}.items():
        assert _table_state(folder) == clean[name], f"{name} changed by a killed write"
        assert set(killed[name]) <= {p.name for p in _data_files_on_disk(folder)}
        assert not set(killed[name]) & {f.path.name for f in iceberg_files.data_files(folder)}
    assert (_visible_partitions(quarantine), _layer_rows(quarantine)) == clean_quarantine
    # Spark reads the same: the previous snapshot, whole.
    silver_table = tables.table(in_process.spark, LakeConfig(lake_uri=str(lake_dir)), "silver", DATASET)
    assert tables.read(in_process.spark, silver_table).count() == len(clean["silver"][1])
    # A run manifest is a report: a corrupt one must not change what a re-run does.
    for layer in ("bronze", "silver", "gold"):
        runs = sorted((lake_dir / "reports" / layer / DATASET).iterdir(), key=lambda run: run.stat().st_mtime_ns)
        (runs[-1] / "manifest.json").write_text('{"status": "succeeded", "rows_out": ')

    code, rerun = in_process(*run_all, "--full")  # the killed runs were full: so is their re-run
    assert code == 0, rerun
    for name, folder in {"silver": silver, "gold": gold}.items():
        snapshot, rows = _table_state(folder)
        assert snapshot != clean[name][0] and rows == clean[name][1], f"{name} differs from the clean run"
    assert (_visible_partitions(quarantine), _layer_rows(quarantine)) == clean_quarantine
    bronze_run = _latest_manifest(lake_dir, "bronze")
    assert bronze_run["status"] == "succeeded" and bronze_run["rows_in"] == 0  # nothing ingested twice
    for layer in ("silver", "gold"):
        manifest = _latest_manifest(lake_dir, layer)
        assert manifest["status"] == "succeeded" and manifest["invariant_holds"] is True
        assert manifest["rows_in"] == manifest["rows_out"] + manifest["quarantined"] + manifest["duplicates"]
        for key in ("rows_in", "rows_out", "quarantined", "duplicates"):
            assert manifest[key] == clean_manifests[layer][key], f"{layer} {key} differs from the clean run"

    # The killed writes' files are orphans: `maintain` deletes them once older than --orphan-age-days.
    old = time.time() - 4 * 86400
    for name, folder in {"silver": silver, "gold": gold}.items():
        for path in _data_files_on_disk(folder):
            if path.name in killed[name]:
                os.utime(path, (old, old))
    code, maintained = in_process("maintain", "--lake-uri", str(lake_dir), "--dataset", DATASET, "--json")
    assert code == 0, maintained
    for name, folder in {"silver": silver, "gold": gold}.items():
        assert not set(killed[name]) & {p.name for p in _data_files_on_disk(folder)}
        assert _table_state(folder)[1] == clean[name][1]
    silver_run = _latest_manifest(lake_dir, "silver")
    assert silver_run["rows_in"] == data.raw_records
    _report("silver/gold SIGKILL", killed={k: len(v) for k, v in killed.items()}, records=data.raw_records,
            silver_rows=silver_run["rows_out"], quarantined=silver_run["quarantined"],
            duplicates=silver_run["duplicates"], silver_days=len({f.path.parent.name for f in iceberg_files.data_files(silver)}),
            gold_rows=len(clean["gold"][1]), corrupt_manifests=3)


# ---------------------------------------------------------------- 3. corrupt checkpoint and file-source manifest

GARBAGE = "\x00\x17 not a checkpoint entry }{"
# (file under checkpoints/iot/bronze/, keep Hadoop's .crc beside it). A local lake keeps a checksum per
# file, so a bad byte shows up as a checksum error; on S3 there is none and the content itself is parsed.
CORRUPTIONS = [("commits/2", True), ("offsets/2", False), ("metadata", False), ("sources/0/2", False),
               ("offsets/1", False)]


def _corrupt(checkpoint: Path, relative: str, keep_crc: bool) -> Path:
    target = checkpoint / relative
    target.write_text(GARBAGE)
    if not keep_crc:
        (target.parent / f".{target.name}.crc").unlink(missing_ok=True)
    return target


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def test_corrupt_checkpoint_fails_with_the_recovery_command_and_recovery_loses_and_duplicates_nothing(
        tmp_path, in_process):
    lake_dir = tmp_path / "lake"
    lake = LakeConfig(lake_uri=str(lake_dir))
    files = generate(DatagenConfig(dataset=DATASET, records=1200, batch_size=30, sources=4, seed=11)).files
    bronze, checkpoint = lake_dir / "bronze" / DATASET, lake_dir / "checkpoints" / DATASET / "bronze"
    bronze_run = ["run", "--lake-uri", str(lake_dir), "--dataset", DATASET, "--layer", "bronze",
                  "--max-files-per-trigger", "10"]
    write_landing(lake, DATASET, files[:30])
    code, err = in_process(*bronze_run)
    assert code == 0, err
    assert _visible_partitions(bronze) == ["_batch_id=0", "_batch_id=1", "_batch_id=2"]
    before = _bronze_event_counts(bronze)
    pristine = tmp_path / "pristine-checkpoint"
    shutil.copytree(checkpoint, pristine)
    write_landing(lake, DATASET, files[30:35])  # new files wait: a corrupt run must not ingest them either

    messages = []
    for relative, keep_crc in CORRUPTIONS:
        shutil.rmtree(checkpoint)
        shutil.copytree(pristine, checkpoint)
        broken = _corrupt(checkpoint, relative, keep_crc)
        code, err = in_process(*bronze_run)
        errors = _error_lines(err)
        assert code == 1, err
        assert len(errors) == 1 and "Traceback" not in err, err
        messages.append(errors[0])
        assert f"checkpoint file {broken.as_uri().replace('file:///', 'file:/')}" in errors[0] \
            or f"checkpoint file {broken}" in errors[0], errors[0]
        assert f"`{RECOVER_HINT} --lake-uri {lake_dir}`" in errors[0], errors[0]
        assert _bronze_event_counts(bronze) == before, f"{relative}: a run on a corrupt checkpoint changed bronze"
        assert _visible_partitions(bronze) == ["_batch_id=0", "_batch_id=1", "_batch_id=2"]

    # The worst case to recover from: batch 2 was cut off before its sink wrote (offset logged, no commit,
    # no partition), and then its offset entry got corrupted. Its files must be read again, once.
    shutil.rmtree(checkpoint)
    shutil.copytree(pristine, checkpoint)
    shutil.rmtree(bronze / "_batch_id=2")
    (checkpoint / "commits" / "2").unlink()
    (checkpoint / "commits" / ".2.crc").unlink()
    _corrupt(checkpoint, "offsets/2", keep_crc=False)
    code, err = in_process(*bronze_run)
    assert code == 1 and "offsets/2" in err
    write_landing(lake, DATASET, files[35:])
    code, err = in_process("recover", "--layer", "bronze", "--dataset", DATASET, "--lake-uri", str(lake_dir))
    assert code == 0, err
    moved = sorted(p.name for p in checkpoint.parent.iterdir() if p.name.startswith("bronze.broken-"))
    assert len(moved) == 1
    code, err = in_process(*bronze_run)
    assert code == 0, err
    partitions = _visible_partitions(bronze)
    assert partitions[:2] == ["_batch_id=0", "_batch_id=1"] and "_batch_id=2" not in partitions
    assert all(int(p.split("=")[1]) >= 10 for p in partitions[2:])  # new batches never reuse an old partition
    counts = _bronze_event_counts(bronze)
    _assert_exactly_once(counts, _event_ids(files))
    # Run again: a recovered checkpoint is a normal one.
    code, err = in_process(*bronze_run)
    assert code == 0 and "no new landing files" in err, err
    _report("corrupt checkpoint", corruptions=len(CORRUPTIONS), recovered=1, events=sum(counts.values()),
            files=len(files), lost=0, duplicated=0, messages=messages)


# ---------------------------------------------------------------- 4. the emulator restarts between two layers

TENANT, REGION, BUCKET = "faults", "eu-west-1", "tenantlake-faults-lake"


def _provision(state, state_dir: Path) -> None:
    """What `make apply` gives the pipeline: a bucket, a key, and the tenant's lake.json."""
    import boto3

    def client(service):
        return boto3.client(service, region_name=REGION, endpoint_url=state.endpoint, verify=state.ca_bundle,
                            aws_access_key_id="testing", aws_secret_access_key="testing")  # pragma: allowlist secret

    key_arn = client("kms").create_key(Description="faults lake key")["KeyMetadata"]["Arn"]
    client("s3").create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    lake_json = state_dir / "tenants" / TENANT / "lake.json"
    lake_json.parent.mkdir(parents=True, exist_ok=True)
    lake_json.write_text(json.dumps({"tenant_id": TENANT, "region": REGION, "lake_bucket_name": BUCKET,
                                     "kms_key_arn": key_arn, "s3_endpoint": state.endpoint,
                                     "ca_bundle": state.ca_bundle, "truststore": state.truststore}))


def _s3_bronze_event_counts(state, work: Path) -> dict[str, int]:
    import boto3

    s3 = boto3.client("s3", region_name=REGION, endpoint_url=state.endpoint, verify=state.ca_bundle,
                      aws_access_key_id="testing", aws_secret_access_key="testing")  # pragma: allowlist secret
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=f"bronze/{DATASET}/"):
        for obj in page.get("Contents", []):
            target = work / obj["Key"]
            target.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(BUCKET, obj["Key"], str(target))
    return _bronze_event_counts(work / "bronze" / DATASET)


def test_emulator_restart_between_layers_fails_in_one_line_then_a_rerun_succeeds(tmp_path):
    from infra.local import emulator as emu
    from infra.local.s3a_jars import ensure_jars

    emu_dir, state_dir = tmp_path / "emulator", tmp_path / "state"
    state, _ = emu.start(emu_dir)  # a dedicated emulator: this test stops it, never the session's
    try:
        env = _env(tmp_path, **emu.env_vars(state), TENANTLAKE_SPARK_JARS=",".join(str(j) for j in ensure_jars()))
        datagen = ["datagen", "--tenant", TENANT, "--dataset", DATASET, "--records", "600", "--batch-size", "60",
                   "--seed", "5"]
        expected = _event_ids(generate(DatagenConfig(dataset=DATASET, records=600, batch_size=60, seed=5)).files)
        _provision(state, state_dir)
        _ok(_cli(env, *datagen))
        _ok(_cli(env, "run", "--tenant", TENANT, "--dataset", DATASET, "--layer", "bronze"))

        emu.stop(emu_dir)  # down between bronze and silver
        down = [_cli(env, "run", "--tenant", TENANT, "--dataset", DATASET, "--layer", "silver"),
                _cli(env, "run-all", "--tenant", TENANT, "--dataset", DATASET),
                _cli(env, "recover", "--tenant", TENANT, "--dataset", DATASET, "--layer", "bronze")]
        message = (f"error: cannot reach S3 endpoint {state.endpoint}: connection refused - is the emulator "
                   "running? `make emulator-up`")
        for result in down:
            assert result.returncode == 1, result.stderr
            assert result.stderr.strip().splitlines() == [message], result.stderr

        back, _ = emu.start(emu_dir, port=state.port)  # same endpoint; moto keeps its data in memory only
        assert back.endpoint == state.endpoint
        lost = _cli(env, "run", "--tenant", TENANT, "--dataset", DATASET, "--layer", "silver")
        assert lost.returncode == 1 and len(_error_lines(lost.stderr)) == 1, lost.stderr
        assert "the lake bucket does not exist" in lost.stderr and f"make apply TENANT={TENANT}" in lost.stderr
        _provision(back, state_dir)  # as `make apply` would, then the producers land their files again
        _ok(_cli(env, *datagen))
        _ok(_cli(env, "run-all", "--tenant", TENANT, "--dataset", DATASET))
        counts = _s3_bronze_event_counts(back, tmp_path / "download")
        _assert_exactly_once(counts, expected)
        _report("emulator restart", failed_runs_while_down=len(down), message=message.split(":", 1)[1].strip(),
                after_restart=_error_lines(lost.stderr)[0], events=sum(counts.values()), lost=0, duplicated=0)
    finally:
        emu.stop(emu_dir)


def test_every_layer_checks_the_endpoint_first_so_run_all_stops_at_the_layer_after_an_outage(in_process):
    """run-all runs each layer on one session: the check is per layer, before anything touches the lake
    (a manifest write included, which s3a would retry for minutes)."""
    from infra.local.emulator import free_port
    from spark_jobs.jobs.layer import run_layer
    from spark_jobs.lake.failures import EndpointUnreachable

    endpoint = f"https://127.0.0.1:{free_port()}"  # nothing listens there
    lake = LakeConfig(lake_uri="s3a://tenantlake-gone", kms_key_arn="arn:aws:kms:eu-west-1:123456789012:key/gone",
                      s3_endpoint=endpoint)
    started = time.monotonic()
    for layer in ("bronze", "silver", "gold"):
        with pytest.raises(EndpointUnreachable, match=f"^cannot reach S3 endpoint {endpoint}: connection refused"):
            run_layer(in_process.spark, lake, DATASET, layer, progress=lambda _: None)
    assert time.monotonic() - started < 5


# ---------------------------------------------------------------- 5. the driver JVM dies mid-run
@pytest.mark.timeout(600)
@pytest.mark.parametrize("after_start", [0.0, 3.0], ids=["at-start", "3s-in"])
def test_a_driver_jvm_that_dies_mid_run_is_named_and_not_blamed_on_the_endpoint(tmp_path, after_start):
    # An OutOfMemoryError in a task can stop the driver JVM; py4j then reports connection refused, which
    # the CLI used to print as "cannot reach S3 endpoint (AWS default)" even for a local lake. What Python
    # sees depends on when the JVM dies: py4j's network error right after start, and later a Py4JError
    # caused by a plain ConnectionRefusedError (a call in flight, or a JVM class looked up afterwards).
    env, lake = _env(tmp_path), tmp_path / "lake"
    _ok(_cli(env, "datagen", "--dataset", DATASET, "--records", "5000", "--lake-uri", str(lake)))
    _ok(_cli(env, "run", "--layer", "bronze", "--dataset", DATASET, "--lake-uri", str(lake)))
    log = tmp_path / "silver.log"
    proc = _start(env, log, "run", "--layer", "silver", "--dataset", DATASET, "--lake-uri", str(lake))
    try:
        _wait_for(lambda: f"[silver {DATASET}] start" in log.read_text(), proc, 180, "silver to start", log)
        time.sleep(after_start)
        (jvm,) = [c for c in psutil.Process(proc.pid).children(recursive=True) if "java" in c.name()]
        jvm.kill()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            _kill_group(proc)
    text = log.read_text()
    assert proc.returncode == 1, text[-3000:]
    assert "error: the Spark driver stopped during the run" in text and "TENANTLAKE_DRIVER_MEMORY=<size>" in text
    assert "cannot reach S3 endpoint" not in text
