"""Table maintenance benchmark: a year of daily runs committed to an Iceberg table on s3a (the emulator,
Iceberg's Hadoop catalog), then ``maintain``; what it changed, what it cost, and a full scan before and after.

    .venv/bin/python -m bench.maintenance                        # 365 runs x 200 rows -> bench/results/maintenance.json
    .venv/bin/python -m bench.maintenance --runs 30 --no-result  # a quick run, printed only

What one run does, in one process and one Spark session (local[2], the project's session):

1. a dedicated emulator (moto over HTTPS, started and stopped by PID; or ``--lake-config`` names a bucket on
   a running one) gets a KMS key and a bucket;
2. ``--runs`` daily runs to ``silver.iot``, partitioned by ``months(event_ts)`` as a contract with
   ``partition_granularity: month`` has it: each run adds one small file of ``--rows-per-run`` rows of one
   event day (from 2024-01-01 on) to its month, in one append snapshot. One Spark job writes every day's
   file into the table's ``data/`` folder; each day is then committed on its own through Iceberg's API
   (``commit_daily_runs``): the commits a year of daily appends makes, without a Spark job per day;
3. before: the table's stats (``spark_jobs.tables.maintain.table_stats``), a fingerprint of every row (count and
   the wrap-around sum of ``xxhash64`` over all columns) and the wall time of a full scan
   (``--scan-repeats`` runs of ``SELECT count(*), sum(xxhash64(*))``, median), which reads every data file;
4. ``spark_jobs.tables.maintain.run_maintenance`` with ``--snapshot-retention-days 0`` (every run is older than
   the retention, as a year of runs is against a week's), timed, its report written as a run's is;
5. after: the same stats, fingerprint and scan. The fingerprints must be equal (exit 1 otherwise).

Writes ``bench/results/maintenance.json`` (machine, commit, sizes, the figures) unless ``--no-result``;
``--json`` prints the result. ``tests/spark_jobs/tables/test_maintain_daily_runs.py`` runs the same at 200
runs and checks the counts.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DATASET = "iot"
START = dt.date(2024, 1, 1)
REGION = "eu-west-1"
COLUMNS = "event_id string, device_id string, event_ts timestamp, temperature double, event_date date"


def create_table(spark, tbl) -> None:
    spark.sql(f"CREATE TABLE {tbl.qualified} ({COLUMNS}) USING iceberg PARTITIONED BY (months(event_ts)) "
              "TBLPROPERTIES ('format-version' = '2')")


def commit_daily_runs(spark, tbl, runs: int, rows_per_run: int, progress=print) -> dict[str, float]:
    """``runs`` daily runs: every day's rows (from ``START``) written as one small Parquet file each into the
    table's ``data/`` folder by ONE Spark job (a staging table whose ``write.data.path`` is that folder),
    then committed one day at a time, each as its own append snapshot through Iceberg's API: what a daily
    run's append commits, without a Spark job per day. Returns the seconds of both steps."""
    from pyspark.sql import functions as F

    started = time.perf_counter()
    staging = dataclasses.replace(tbl, name=f"{tbl.name}_daily_runs_staging")
    spark.sql(f"CREATE TABLE {staging.qualified} ({COLUMNS}) USING iceberg PARTITIONED BY (months(event_ts)) "
              f"TBLPROPERTIES ('format-version' = '2', 'write.data.path' = '{tbl.location}/data')")
    days = spark.range(runs * rows_per_run).select(
        (F.col("id") / rows_per_run).cast("int").alias("run"), (F.col("id") % rows_per_run).cast("int").alias("i"))
    rows = days.select(
        F.format_string("r%04d-%06d", "run", "i").alias("event_id"),
        F.format_string("device-%02d", F.col("i") % 17).alias("device_id"),
        (F.lit(dt.datetime.combine(START, dt.time())) + F.expr("make_interval(0, 0, 0, run, 0, 0, i * 86399 div "
                                                               f"{rows_per_run})")).alias("event_ts"),
        F.round(F.lit(15.0) + ((F.col("run") * 31 + F.col("i")) % 200) / 10.0, 1).alias("temperature"),
        F.date_add(F.lit(START), F.col("run")).alias("event_date"))
    # One task per day (a range partitioning over ``runs`` distinct dates), so one file per day.
    rows.repartitionByRange(runs, "event_date").writeTo(staging.qualified).option("distribution-mode", "none").append()
    iceberg = spark._jvm.org.apache.iceberg.spark.Spark3Util
    staged = iceberg.loadIcebergTable(spark._jsparkSession, staging.qualified)
    files = sorted(staged.currentSnapshot().addedDataFiles(staged.io()), key=lambda f: str(f.path()))
    written = time.perf_counter() - started
    target = iceberg.loadIcebergTable(spark._jsparkSession, tbl.qualified)
    for run, data_file in enumerate(files, start=1):
        target.newAppend().appendFile(data_file).commit()
        if run % 50 == 0 or run == len(files):
            progress(f"[bench.maintenance] committed {run}/{len(files)} daily runs "
                     f"({time.perf_counter() - started:.0f} s)")
    # The staging table's metadata goes; its files are the table's now (they lie in its data/ folder).
    spark.sql(f"DROP TABLE {staging.qualified}")
    return {"files": len(files), "write_seconds": round(written, 1),
            "commit_seconds": round(time.perf_counter() - started - written, 1)}


def fingerprint(spark, tbl) -> dict[str, int]:
    """Every row, order-free: the count and the wrap-around sum of ``xxhash64`` over all columns."""
    row = spark.sql(f"SELECT count(*) AS n, coalesce(sum(xxhash64(*)), 0) AS h FROM {tbl.qualified}").first()
    return {"rows": int(row["n"]), "hash": int(row["h"])}


def full_scan_seconds(spark, tbl, repeats: int) -> list[float]:
    """Wall times of a scan that reads every data file (no aggregate push-down: Iceberg would answer a bare
    count from its manifests)."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        (spark.read.option("aggregate-push-down-enabled", "false").table(tbl.qualified)
         .selectExpr("count(*)", "sum(xxhash64(*))").collect())
        times.append(round(time.perf_counter() - started, 3))
    return times


def measure(lake, runs: int, rows_per_run: int, scan_repeats: int, progress=print,
            tenant: str = "bench-maintenance") -> dict[str, Any]:
    """The whole benchmark on ``lake`` (an s3a lake whose bucket exists); returns the figures."""
    from spark_jobs.io import tables
    from spark_jobs.runs.session import session_for
    from spark_jobs.runs.session import reads_small_folders, table_folders
    from spark_jobs.tables import maintain

    # Sized as `python -m spark_jobs maintain` sizes its session: from the bytes of the tables it maintains (none
    # yet: the runs are committed in this session; a year of 200-row days stays far below the limit).
    small = reads_small_folders(lake, table_folders([DATASET]))
    spark, created = session_for(lake, "tenantlake-bench-maintenance", small_inputs=small)
    try:
        tbl = tables.table(spark, lake, "silver", DATASET)
        create_table(spark, tbl)
        committed = commit_daily_runs(spark, tbl, runs, rows_per_run, progress)
        before = {**maintain.table_stats(spark, tbl), "fingerprint": fingerprint(spark, tbl),
                  "scan_seconds": full_scan_seconds(spark, tbl, scan_repeats)}
        progress(f"[bench.maintenance] before: {before}")
        options = maintain.MaintainOptions(snapshot_retention_days=0)
        started = time.perf_counter()
        report = maintain.run_maintenance(spark, lake, [DATASET], options, tenant=tenant,
                                          progress=progress)
        maintain_seconds = time.perf_counter() - started
        after = {**maintain.table_stats(spark, tbl), "fingerprint": fingerprint(spark, tbl),
                 "scan_seconds": full_scan_seconds(spark, tbl, scan_repeats)}
        progress(f"[bench.maintenance] after: {after}")
    finally:
        if created:
            spark.stop()
    [table] = report["tables"]
    unchanged = before["fingerprint"] == after["fingerprint"]
    rows = [{"stage": stage, "runs": runs, "rows": stats["fingerprint"]["rows"], "snapshots": stats["snapshots"],
             "data_files": stats["data_files"], "data_mb": round(stats["data_bytes"] / 1e6, 2),
             "retained_data_files": stats["retained_data_files"],
             "retained_mb": round(stats["retained_data_bytes"] / 1e6, 2), "manifests": stats["manifests"],
             "scan_s": _median(stats["scan_seconds"]),
             **({"maintain_s": round(maintain_seconds, 1), "rows_unchanged": "yes" if unchanged else "NO"}
                if stage == "after maintain" else {})}
            for stage, stats in (("before maintain", before), ("after maintain", after))]
    return {
        "rows": rows,
        "notes": [f"silver.iot partitioned by months(event_ts); {runs} daily runs of {rows_per_run} rows, each one "
                  "append snapshot of one small file (the files written by one Spark job, committed one day at a "
                  "time through Iceberg's API); maintain with --snapshot-retention-days 0; a full scan reads every "
                  "data file (count and xxhash64 of every row, aggregate push-down off), "
                  f"{scan_repeats} times before and after; s3a on a dedicated emulator (HTTPS, SSE-KMS)"],
        "runs": runs, "rows_per_run": rows_per_run, "total_rows": runs * rows_per_run, "small_input_session": small,
        **committed,
        "maintain_seconds": round(maintain_seconds, 1), "before": before, "after": after,
        "scan_median_before": _median(before["scan_seconds"]), "scan_median_after": _median(after["scan_seconds"]),
        "procedures": {k: table[k] for k in ("rewritten_data_files", "added_data_files", "rewritten_manifests",
                                              "added_manifests", "expired_data_files", "expired_manifest_lists",
                                              "orphan_files_removed")},
        "report": report["report"], "rows_unchanged": unchanged,
    }


def _median(times: list[float]) -> float | None:
    return statistics.median(times) if times else None


def _dedicated_lake(work: Path):
    """A dedicated emulator with a KMS key and a bucket; returns (state dir, env, LakeConfig)."""
    from bench.common import dedicated_emulator
    from spark_jobs.lake.config import LakeConfig

    state_dir = work / "emulator"
    dedicated = dedicated_emulator(state_dir, REGION, "tenantlake maintenance bench key")
    state, aws, key_arn = dedicated.state, dedicated.aws, dedicated.key_arn
    bucket = "tenantlake-bench-maintenance"
    dedicated.s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    lake = LakeConfig(lake_uri=f"s3a://{bucket}", kms_key_arn=key_arn, region=REGION, s3_endpoint=state.endpoint,
                      truststore=state.truststore, ca_bundle=state.ca_bundle)
    return state_dir, aws, lake


def main(argv: list[str] | None = None) -> int:
    import os

    parser = argparse.ArgumentParser(prog="python -m bench.maintenance", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=365, help="daily runs committed before maintenance (default 365)")
    parser.add_argument("--rows-per-run", type=int, default=200, help="rows each run appends (default 200)")
    parser.add_argument("--scan-repeats", type=int, default=3, help="full scans before and after (default 3; 0: none)")
    parser.add_argument("--lake-config", default="", help="a lake.json naming an s3a bucket on a running emulator "
                                                          "(default: start a dedicated emulator)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--no-result", action="store_true", help="do not write bench/results/maintenance.json")
    args = parser.parse_args(argv)
    from bench.common import utc_now, write_result

    started_at = utc_now()
    state_dir, tenant = None, "bench-maintenance"
    with tempfile.TemporaryDirectory(prefix="tenantlake-bench-maintenance-") as tmp:
        if args.lake_config:
            from spark_jobs.lake.config import lake_from_outputs

            outputs = json.loads(Path(args.lake_config).read_text())
            lake, tenant = lake_from_outputs(outputs, args.lake_config), str(outputs.get("tenant_id") or tenant)
        else:
            state_dir, aws, lake = _dedicated_lake(Path(tmp))
            os.environ.update(aws)
        try:
            figures = measure(lake, args.runs, args.rows_per_run, args.scan_repeats,
                              progress=lambda line: print(line, file=sys.stderr, flush=True), tenant=tenant)
        finally:
            if state_dir is not None:
                from infra.local import emulator

                emulator.stop(state_dir)
    result = {"benchmark": "maintenance", "started_at": started_at, "finished_at": utc_now(), **figures}
    if not args.no_result:
        write_result("maintenance", figures, started_at=started_at)
    if args.json:
        print(json.dumps(result, indent=1, sort_keys=True))
    else:
        print(f"maintenance: {args.runs} runs x {args.rows_per_run} rows; data files {figures['before']['data_files']} "
              f"-> {figures['after']['data_files']}, snapshots {figures['before']['snapshots']} -> "
              f"{figures['after']['snapshots']}, maintain {figures['maintain_seconds']} s, full scan "
              f"{figures['scan_median_before']} -> {figures['scan_median_after']} s, rows unchanged: "
              f"{figures['rows_unchanged']}")
    return 0 if figures["rows_unchanged"] else 1


if __name__ == "__main__":
    sys.exit(main())
