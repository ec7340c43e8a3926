"""Who owns which session setting: tenantlake for the sessions it starts, the launcher under spark-submit.

The spark-submit test runs the deploy entrypoint the way EMR does (``spark-submit <conf> entrypoint.py
run ...``) with a driver address that is not loopback and 3 shuffle partitions, and reads back from
inside the job what its session runs with: the job's own "session:" line (values read from the
running session) and Spark's event log (the application's environment as Spark recorded it). The
driver still binds to 127.0.0.1 (``spark.driver.bindAddress``): tests bind to loopback only.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from spark_jobs.runs.session import (DEFAULT_DRIVER_MEMORY, DRIVER_MEMORY_ENV, JIT_ENV, JVM_ARCHIVE_ENV, LOCAL_DRIVER_HOST,
                                LISTING_TASKS, LOCAL_SHUFFLE_PARTITIONS, QUICK_JIT_OPTIONS, S3aSettings, driver_heap, local_conf)

REPO = Path(__file__).resolve().parents[3]
VENV_BIN = Path(sys.executable).parent
ENTRYPOINT = REPO / "infra" / "deploy" / "entrypoint.py"
RECORDS = 50


def non_loopback_address() -> str:
    """This machine's IPv4 address on its default route (a UDP connect sends no packet)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("203.0.113.1", 9))  # TEST-NET-3: only picks the route's source address
        address = probe.getsockname()[0]
    except OSError as exc:
        pytest.fail(f"this machine has no route off loopback to take a driver address from: {exc}")
    finally:
        probe.close()
    assert not address.startswith("127."), address
    return address


def test_a_session_tenantlake_starts_is_local_and_tuned(spark):
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.master") == "local[2]"
    assert conf.get("spark.driver.host") == conf.get("spark.driver.bindAddress") == LOCAL_DRIVER_HOST
    assert spark.conf.get("spark.sql.shuffle.partitions") == str(LOCAL_SHUFFLE_PARTITIONS)
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"


def test_listing_many_files_runs_a_few_tasks_not_one_per_file(spark, tmp_path):
    """Reading 100 named files makes Spark list them in a job (past 32 paths); its tasks are
    LISTING_TASKS, not one per file (each about 3 ms of scheduling: seconds per bronze batch)."""
    paths = []
    for i in range(100):
        path = tmp_path / f"f{i}.txt"
        path.write_text(f"{i}\n")
        paths.append(str(path))
    sc = spark.sparkContext
    sc.setJobGroup("listing-test", "list 100 files")
    try:
        assert spark.read.text(paths).count() == 100
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    tracker = sc.statusTracker()
    tasks = [tracker.getStageInfo(stage).numTasks for job in tracker.getJobIdsForGroup("listing-test")
             for stage in tracker.getJobInfo(job).stageIds]
    assert LISTING_TASKS in tasks and max(tasks) <= max(LISTING_TASKS, 2), tasks


def test_local_conf_carries_the_trust_store_and_jars_only_when_given(monkeypatch):
    monkeypatch.delenv(JVM_ARCHIVE_ENV, raising=False)  # `make test` sets it (its own test is below)
    s3a = S3aSettings(endpoint="https://127.0.0.1:1", region="eu-west-1", kms_key_arn="k", truststore="/t.p12")
    conf = local_conf("1g", 8, jars=["/a.jar", "/b.jar"], s3a=s3a)
    assert conf["spark.jars"] == "/a.jar,/b.jar"
    assert "-Djavax.net.ssl.trustStore=/t.p12" in conf["spark.driver.extraJavaOptions"]
    bare = local_conf("1g", 8)
    assert "spark.jars" not in bare and "spark.driver.extraJavaOptions" not in bare


def test_executors_run_the_drivers_interpreter(spark):
    """A local session's Python workers run this interpreter (its packages: pyarrow, boto3), unless
    PYSPARK_PYTHON says otherwise: one of them imports pyarrow."""
    import sys

    assert spark.sparkContext.pythonExec == sys.executable

    def versions(_):
        import pyarrow

        yield pyarrow.__version__

    assert spark.sparkContext.parallelize([0], 1).mapPartitions(versions).collect()


def test_the_driver_heap_comes_from_the_caller_then_the_environment_then_the_default(monkeypatch):
    monkeypatch.delenv(DRIVER_MEMORY_ENV, raising=False)
    assert driver_heap() == DEFAULT_DRIVER_MEMORY == "2g"
    monkeypatch.setenv(DRIVER_MEMORY_ENV, "3072m")
    assert driver_heap() == "3072m"
    assert driver_heap("1g") == "1g"
    assert local_conf(driver_heap(), 8)["spark.driver.memory"] == "3072m"


@pytest.mark.parametrize("value", ["lots", "2 gb", "0g", "-1g", "2.5g"])
def test_a_driver_heap_the_jvm_would_refuse_is_refused_before_it_starts(monkeypatch, value):
    monkeypatch.setenv(DRIVER_MEMORY_ENV, value)
    with pytest.raises(ValueError, match=DRIVER_MEMORY_ENV):
        driver_heap()
    with pytest.raises(ValueError, match="driver_memory"):
        driver_heap(value)


def _environment_properties(event_dir: Path) -> dict[str, str]:
    """The application's Spark properties as recorded in its event log."""
    (log,) = [p for p in event_dir.iterdir() if p.is_file()]
    for line in log.read_text().splitlines():
        event = json.loads(line)
        if event.get("Event") == "SparkListenerEnvironmentUpdate":
            return dict(event["Spark Properties"])
    raise AssertionError(f"no environment update in {log}")


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_under_spark_submit_the_launchers_conf_wins(tmp_path):
    address = non_loopback_address()
    lake = tmp_path / "lake"
    datagen = subprocess.run([sys.executable, "-m", "spark_jobs", "datagen", "--dataset", "iot", "--records",
                              str(RECORDS), "--lake-uri", str(lake)], cwd=REPO, capture_output=True, text=True,
                             timeout=120)
    assert datagen.returncode == 0, datagen.stderr
    events = tmp_path / "events"
    events.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYSPARK_GATEWAY_PORT")}
    env.update(PATH=f"{VENV_BIN}:{env.get('PATH', '')}", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, PYTHONPATH=str(REPO))
    command = [str(VENV_BIN / "spark-submit"), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
               "--conf", "spark.sql.shuffle.partitions=3", "--conf", f"spark.driver.host={address}",
               "--conf", "spark.driver.bindAddress=127.0.0.1", "--driver-memory", "1g",
               "--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir={events.as_uri()}",
               str(ENTRYPOINT), "run", "--dataset", "iot", "--layer", "bronze", "--lake-uri", str(lake)]
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=280)
    assert result.returncode == 0, "\n".join(
        line for line in (result.stdout + result.stderr).splitlines() if " INFO " not in line)[-3000:]

    # The job's own report of its session, read back from the running session (spark-submit hands the
    # Python driver's stderr to its own stdout).
    (session_line,) = [line for line in result.stdout.splitlines() if line.startswith("session: ")]
    reported = dict(item.split("=", 1) for item in session_line.split(": ", 2)[2].split(" ") if "=" in item)
    assert reported["spark.driver.host"] == address
    assert reported["spark.driver.bindAddress"] == "127.0.0.1"
    assert reported["spark.sql.shuffle.partitions"] == "3"
    assert reported["spark.master"] == "local[2]"
    # Spark's own record of the application's conf says the same.
    properties = _environment_properties(events)
    assert properties["spark.driver.host"] == address
    assert properties["spark.sql.shuffle.partitions"] == "3"
    assert properties["spark.sql.session.timeZone"] == "UTC"  # the jobs' own settings still apply
    manifests = list((lake / "reports" / "bronze" / "iot").glob("*/manifest.json"))
    assert len(manifests) == 1 and json.loads(manifests[0].read_text())["rows_out"] == RECORDS


def test_the_cli_refuses_a_bad_driver_heap_in_one_line_before_spark_starts(tmp_path):
    env = {**os.environ, DRIVER_MEMORY_ENV: "lots", "TENANTLAKE_STATE_DIR": str(tmp_path / "state"),
           "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "spark_jobs", "run", "--layer", "gold", "--dataset", "iot",
                           "--lake-uri", str(tmp_path / "lake")], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"error: {DRIVER_MEMORY_ENV}='lots': give the driver heap as a number with k, m, g or t, e.g. 2g or 3072m"]


def test_a_session_for_small_inputs_compiles_with_the_quick_jit_unless_told_otherwise(monkeypatch):
    monkeypatch.delenv(JIT_ENV, raising=False)
    monkeypatch.delenv(JVM_ARCHIVE_ENV, raising=False)
    s3a = S3aSettings(endpoint="https://127.0.0.1:1", region="eu-west-1", kms_key_arn="k", truststore="/t.p12")
    small = local_conf("1g", 8, s3a=s3a, small_inputs=True)["spark.driver.extraJavaOptions"]
    assert "-Djavax.net.ssl.trustStore=/t.p12" in small and small.endswith(QUICK_JIT_OPTIONS)
    assert QUICK_JIT_OPTIONS not in local_conf("1g", 8, s3a=s3a)["spark.driver.extraJavaOptions"]
    monkeypatch.setenv(JIT_ENV, "full")
    assert "spark.driver.extraJavaOptions" not in local_conf("1g", 8, small_inputs=True)
    monkeypatch.setenv(JIT_ENV, "quick")
    assert local_conf("1g", 8)["spark.driver.extraJavaOptions"] == QUICK_JIT_OPTIONS
    monkeypatch.setenv(JIT_ENV, "fast")
    with pytest.raises(ValueError, match=f"{JIT_ENV}='fast': give quick, full"):
        local_conf("1g", 8)


def test_the_cli_sizes_its_session_from_the_bytes_its_layers_read(tmp_path, monkeypatch, capsys):
    """What `run`/`run-all` ask before the JVM starts: the bytes under each layer's input, with a listing that
    stops once past the limit; a session that exists already, or an explicit TENANTLAKE_JIT, is not sized."""
    from pyspark.sql import SparkSession

    from spark_jobs.io.lake_bytes import stored_bytes
    from spark_jobs.lake.config import LakeConfig
    from spark_jobs.runs import session as sizing
    from spark_jobs.runs.session import SMALL_INPUT_BYTES

    monkeypatch.delenv(JIT_ENV, raising=False)
    lake = LakeConfig(lake_uri=str(tmp_path / "lake"))
    for folder, size in (("landing/iot", 1000), ("bronze/iot/_batch_id=0", 3000), ("silver/iot/data", 5000)):
        (tmp_path / "lake" / folder).mkdir(parents=True)
        (tmp_path / "lake" / folder / "part").write_bytes(b"x" * size)
    assert stored_bytes(lake, ["landing/iot", "bronze/iot"], 10_000) == 4000
    assert stored_bytes(lake, ["landing/iot", "bronze/iot", "silver/iot"], 3500) == 4000  # stopped past the limit
    assert stored_bytes(LakeConfig(lake_uri="s3a://bucket", s3_endpoint="https://127.0.0.1:9"), ["x"], 1) is None
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    assert sizing.reads_small_inputs(lake, [("iot", "silver"), ("iot", "gold")])
    assert capsys.readouterr().err.splitlines() == [
        f"session: 8 KB of input: a session for small inputs ({JIT_ENV}=full to change)"]  # bronze + silver
    monkeypatch.setattr("spark_jobs.runs.session.SMALL_INPUT_BYTES", 7000)
    assert not sizing.reads_small_inputs(lake, [("iot", "bronze"), ("iot", "silver"), ("iot", "gold")])  # 9,000 bytes
    assert sizing.reads_small_inputs(lake, [("iot", "bronze"), ("iot", "silver")])
    assert not sizing.reads_small_inputs(lake, [("iot", "bronze")], continuous=True)
    monkeypatch.setenv(JIT_ENV, "full")
    assert not sizing.reads_small_inputs(lake, [("iot", "bronze")])
    assert SMALL_INPUT_BYTES == 16 * 2**20


def test_the_other_commands_name_the_folders_they_read():
    """erase reads the whole lake (every version), counts every folder of its datasets, maintain their
    tables, query silver and gold: the folders each sizes its session from."""
    from spark_jobs.runs import session as sizing

    assert sizing.dataset_folders(["iot"]) == ["landing/iot", "bronze/iot", "silver/iot", "quarantine/iot",
                                               "gold/iot_hourly"]
    assert sizing.table_folders(["iot", "clickstream"]) == [
        "silver/iot", "gold/iot_hourly", "silver/clickstream", "gold/clickstream_site_hourly",
        "gold/clickstream_user_sessions"]


def test_the_listing_counts_every_version_of_the_whole_lake(emulator, aws_env, boto_session, monkeypatch):
    """On a versioned bucket, ``versions`` adds the noncurrent versions an erase reads too; ``""`` is the
    whole lake, under a root folder or not."""
    from pyspark.sql import SparkSession

    from spark_jobs.io.lake_bytes import stored_bytes
    from spark_jobs.lake.config import LakeConfig
    from spark_jobs.runs import session as sizing

    for name, value in aws_env.items():  # the credentials the CLI's listing takes from the environment
        monkeypatch.setenv(name, value)
    s3 = boto_session("s3")
    s3.create_bucket(Bucket="tenantlake-test-lake-bytes", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    s3.put_bucket_versioning(Bucket="tenantlake-test-lake-bytes", VersioningConfiguration={"Status": "Enabled"})
    for key, size in (("lake/silver/iot/a", 100), ("lake/silver/iot/a", 300), ("lake/landing/iot/b", 50),
                      ("other/c", 7)):
        s3.put_object(Bucket="tenantlake-test-lake-bytes", Key=key, Body=b"x" * size)
    lake = LakeConfig(lake_uri="s3a://tenantlake-test-lake-bytes/lake", s3_endpoint=emulator.endpoint,
                      ca_bundle=emulator.ca_bundle, region="eu-west-1")
    assert stored_bytes(lake, [""], 10_000) == 350
    assert stored_bytes(lake, [""], 10_000, versions=True) == 450
    assert stored_bytes(lake, ["silver"], 10_000, versions=True) == 400
    whole = LakeConfig(lake_uri="s3a://tenantlake-test-lake-bytes", s3_endpoint=emulator.endpoint,
                       ca_bundle=emulator.ca_bundle, region="eu-west-1")
    assert stored_bytes(whole, [""], 10_000, versions=True) == 457
    monkeypatch.delenv(JIT_ENV, raising=False)
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))  # as a CLI process starts
    monkeypatch.setattr("spark_jobs.runs.session.SMALL_INPUT_BYTES", 420)
    assert sizing.reads_small_folders(lake, [""]) and not sizing.reads_small_folders(lake, [""], versions=True)


def test_the_quick_jit_and_the_class_archive_reach_the_driver_jvm(tmp_path):
    """A session for small inputs runs C1 only, and maps the class-data-sharing archive: Spark's classes come
    from it (the JVM's class-load log names the archive as their source), not from the jars."""
    from infra.local.jvm_archive import ensure_archive

    archive = ensure_archive()  # built by `make setup`; a run without it builds it here, once
    load_log = tmp_path / "class-load.log"
    script = ("from spark_jobs.runs.session import build_session\n"
              "spark = build_session('jit-test', driver_memory='512m', small_inputs=True)\n"
              "args = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()\n"
              "print('JVM', ' '.join(str(a) for a in args))\n"
              "spark.stop()\n")
    env = {k: v for k, v in os.environ.items() if k not in (JIT_ENV, "PYSPARK_GATEWAY_PORT")}
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=240,
                          env={**env, "PYTHONPATH": str(REPO), JVM_ARCHIVE_ENV: str(archive),
                               "SPARK_SUBMIT_OPTS": f"-Xlog:class+load=info:file={load_log}"})
    line = next(line for line in done.stdout.splitlines() if line.startswith("JVM "))
    assert set(QUICK_JIT_OPTIONS.split()) <= set(line.split()), done.stderr[-2000:]
    assert "-XX:ReservedCodeCacheSize=240m" in line.split()  # C1 alone would reserve 48 MB, too few for a run-all
    assert f"-XX:SharedArchiveFile={archive}" in line.split()
    loads = load_log.read_text()
    assert "org.apache.spark.SparkContext source: shared objects file (top)" in loads, loads[-2000:]
    assert "[cds" not in done.stdout + done.stderr  # the JVM's own lines about the archive are off


def test_a_class_archive_that_is_not_a_file_is_refused_before_the_jvm_starts(tmp_path, monkeypatch):
    from spark_jobs.lake.failures import JobFailed
    from spark_jobs.runs.session import check_local_settings

    monkeypatch.setenv(JVM_ARCHIVE_ENV, str(tmp_path / "missing.jsa"))
    with pytest.raises(JobFailed, match="TENANTLAKE_JVM_ARCHIVE=.*missing.jsa' is not a file"):
        check_local_settings()
    monkeypatch.delenv(JVM_ARCHIVE_ENV)
    assert "SharedArchiveFile" not in local_conf("1g", 8).get("spark.driver.extraJavaOptions", "")
    (tmp_path / "a.jsa").write_bytes(b"not an archive")  # a file the JVM cannot map: it starts without it
    monkeypatch.setenv(JVM_ARCHIVE_ENV, str(tmp_path / "a.jsa"))
    assert f"-XX:SharedArchiveFile={tmp_path / 'a.jsa'}" in local_conf("1g", 8)["spark.driver.extraJavaOptions"]
