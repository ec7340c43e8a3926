"""``python -m spark_jobs maintain``: compaction, snapshot expiry and orphan removal on real tables, with the
documented defaults; the data read is the same before and after."""
from __future__ import annotations

import datetime as dt
import os
import time

import pytest
from pyspark.sql import functions as F

from spark_jobs import cli
from spark_jobs.io import iceberg_files, tables
from spark_jobs.io.partitioning import Partitioning
from spark_jobs.lake.config import LakeConfig
from spark_jobs.tables import maintain
from tests.conftest import run_make
from tests.spark_jobs.conftest import ts

DAYS = Partitioning("event_ts", "day")


def test_documented_defaults_and_option_checks():
    options = maintain.MaintainOptions()
    assert (options.snapshot_retention_days, options.retain_last, options.orphan_age_days, options.rewrite_all) == \
        (7, 1, 3, False)
    for bad, message in ((maintain.MaintainOptions(orphan_age_days=0), "at least 1"),
                         (maintain.MaintainOptions(retain_last=0), "at least 1"),
                         (maintain.MaintainOptions(snapshot_retention_days=-1), "0 or more")):
        with pytest.raises(maintain.MaintainError, match=message):
            bad.validate()
    assert maintain.retention_from_outputs({"retention_days": {"snapshots": 30}}) == 30
    assert maintain.retention_from_outputs({"lake_bucket_name": "x"}) is None


def test_maintain_compacts_expires_and_removes_orphans_without_changing_the_data(spark, tmp_path, capsys):
    lake = LakeConfig(lake_uri=str(tmp_path / "lake"))
    silver = tables.table(spark, lake, "silver", "iot")
    def rows(ids):
        return spark.createDataFrame([(f"e{i}", ts("2020-11-16 10:00:00")) for i in ids],
                                     "event_id string, event_ts timestamp").withColumn("event_date", F.to_date("event_ts"))

    tables.overwrite(rows(range(6)), silver, DAYS, DAYS.covering(["2020-11-16"], False), "r1")
    # A second snapshot of three small files in the same partition (what compaction is for).
    rows(range(6, 9)).repartition(3).writeTo(silver.qualified).option("distribution-mode", "none").append()
    files_before = iceberg_files.data_files(silver.location)
    orphan = tmp_path / "lake" / "silver" / "iot" / "data" / "event_ts_day=2020-11-16" / "killed-write.parquet"
    orphan.write_bytes(b"left by a killed write")
    recent = tmp_path / "lake" / "silver" / "iot" / "data" / "event_ts_day=2020-11-16" / "in-flight.parquet"
    recent.write_bytes(b"a write still running")
    five_days_ago = time.time() - 5 * 86400
    os.utime(orphan, (five_days_ago, five_days_ago))

    code = cli.main(["maintain", "--lake-uri", lake.lake_uri, "--dataset", "iot", "--snapshot-retention-days", "0",
                     "--rewrite-all", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    import json

    [result] = json.loads(out)  # gold.iot_hourly does not exist yet: skipped
    assert result["table"] == "silver.iot" and (result["snapshots_before"], result["snapshots_after"]) == (2, 1)
    assert result["rewritten_data_files"] == len(files_before) == 4 and result["added_data_files"] == 1
    assert result["orphan_files_removed"] == 1 and result["orphan_files"][0].endswith("killed-write.parquet")
    assert "[maintain] silver.iot: snapshots 2 -> 1" in err
    assert not orphan.exists() and recent.exists()  # younger than --orphan-age-days (3): may be a running write
    assert len(iceberg_files.data_files(silver.location)) == 1
    assert sorted(r[0] for r in tables.read(spark, silver).select("event_id").collect()) == [f"e{i}" for i in range(9)]
    left = sorted(p.name for p in (tmp_path / "lake" / "silver" / "iot" / "data").rglob("*.parquet"))
    assert left == sorted([iceberg_files.data_files(silver.location)[0].path.name, "in-flight.parquet"])


def test_retention_keeps_recent_snapshots_for_time_travel(spark, tmp_path):
    lake = LakeConfig(lake_uri=str(tmp_path / "lake"))
    silver = tables.table(spark, lake, "silver", "iot")
    rows = spark.createDataFrame([("e1", ts("2020-11-16 10:00:00"))], "event_id string, event_ts timestamp")
    for run in ("r1", "r2"):
        tables.overwrite(rows, silver, DAYS, DAYS.covering(["2020-11-16"], False), run)
    [result] = maintain.maintain(spark, lake, ["iot"], maintain.MaintainOptions(), progress=lambda _: None,
                                 now=dt.datetime.now(dt.timezone.utc).replace(tzinfo=None))
    # Nothing to compact; the two overwrites left two manifests, rewritten into one (a third snapshot); the
    # default retention (7 days) keeps all three.
    assert (result["snapshots_before"], result["snapshots_after"], result["rewritten_data_files"]) == (2, 3, 0)
    assert (result["before"]["manifests"], result["after"]["manifests"], result["rewritten_manifests"]) == (2, 1, 2)


def test_make_maintain_needs_a_tenant():
    result = run_make("maintain")
    assert result.returncode == 2
    assert "make maintain: TENANT is required, e.g. make maintain TENANT=acme" in result.stderr


def test_maintain_holds_a_lease_and_refuses_a_dataset_an_erasure_request_holds(spark, tmp_path):
    """maintain takes the lease pipeline runs take: while it runs, an erase request sees a live ``maintain``
    lease; a dataset locked by an erase request is refused before its tables are touched."""
    import json

    from spark_jobs.io import storage
    from spark_jobs.runs import leases

    lake = LakeConfig(lake_uri=str(tmp_path / "lake"))
    silver = tables.table(spark, lake, "silver", "iot")
    rows = spark.createDataFrame([("e1", ts("2020-11-16 10:00:00"))], "event_id string, event_ts timestamp")
    tables.overwrite(rows, silver, DAYS, DAYS.covering(["2020-11-16"], False), "r1")

    seen_during: list = []
    original = maintain.maintain_table

    def observing(spark_, tbl, options, now):
        seen_during.extend((uri.rsplit("/", 1)[-1], lease["layer"]) for uri, lease in leases.live_leases(spark_, lake, "iot"))
        return original(spark_, tbl, options, now)

    maintain.maintain_table = observing
    try:
        maintain.maintain(spark, lake, ["iot"], maintain.MaintainOptions(), progress=lambda _: None)
    finally:
        maintain.maintain_table = original
    assert seen_during == [("gold.lease", "maintain"), ("silver.lease", "maintain")]  # the layers it rewrites
    assert leases.live_leases(spark, lake, "iot") == []  # released when done

    storage.write_text(spark, leases.lock_uri(lake, "iot"), json.dumps({"request_id": "er-1234"}))
    snapshots = spark.sql(f"SELECT count(*) FROM {silver.qualified}.snapshots").first()[0]
    with pytest.raises(leases.LeaseRefused, match="maintain iot: erasure request er-1234 is in progress"):
        maintain.maintain(spark, lake, ["iot"], maintain.MaintainOptions(rewrite_all=True), progress=lambda _: None)
    assert spark.sql(f"SELECT count(*) FROM {silver.qualified}.snapshots").first()[0] == snapshots
    assert leases.live_leases(spark, lake, "iot") == []


HOLDER = """
import sys, time
from spark_jobs.lake.config import LakeConfig
from spark_jobs.runs.leases import held_leases
with held_leases(LakeConfig(sys.argv[1]), [("iot", "silver")], label="silver", command="run") as run_id:
    print(run_id, flush=True)
    time.sleep(600)
"""


def test_maintain_stops_at_once_naming_a_live_run_and_takes_over_a_killed_ones_lease(spark, tmp_path, capsys):
    """Issue 40, item 8: maintenance takes the pipeline's silver and gold leases, so it never compacts a table
    a live run is committing to; the scheduled maintenance runs this same command."""
    import json
    import signal
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    lake = LakeConfig(lake_uri=str(tmp_path / "lake"))
    silver = tables.table(spark, lake, "silver", "iot")
    rows = spark.createDataFrame([("e1", ts("2020-11-16 10:00:00"))], "event_id string, event_ts timestamp")
    for run in ("r1", "r2"):
        tables.overwrite(rows, silver, DAYS, DAYS.covering(["2020-11-16"], False), run)
    live = subprocess.Popen([sys.executable, "-c", HOLDER, lake.lake_uri], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                            text=True)
    try:
        run_id = live.stdout.readline().strip()
        snapshots = spark.sql(f"SELECT count(*) FROM {silver.qualified}.snapshots").first()[0]
        code = cli.main(["maintain", "--lake-uri", lake.lake_uri, "--dataset", "iot", "--rewrite-all"])
        err = capsys.readouterr().err
        assert code == 1
        [line] = [line for line in err.splitlines() if line.startswith("error: ")]
        assert line.startswith(f"error: maintain iot: the silver layer of iot is held by run {run_id} (run, pid "
                               f"{live.pid} on ")
        assert "nothing was done" in line
        assert spark.sql(f"SELECT count(*) FROM {silver.qualified}.snapshots").first()[0] == snapshots
        reports = sorted((tmp_path / "lake" / "reports" / "maintenance").glob("*/report.json"))
        assert json.loads(reports[-1].read_text())["status"] == "failed"
    finally:
        live.send_signal(signal.SIGKILL)
        live.wait(timeout=30)
        live.stdout.close()
    code = cli.main(["maintain", "--lake-uri", lake.lake_uri, "--dataset", "iot", "--rewrite-all"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert f"[maintain iot] took over the silver lease of run {run_id} (run, pid {live.pid} on " in err
    assert f"its process (pid {live.pid}) on this host is gone" in err
    assert "[maintain] silver.iot: snapshots 2 -> " in err
