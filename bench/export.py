"""A new user's first export: ONE CSV file through ``contract infer``, ``land`` and ``run-all``, as the CLI runs them.

    .venv/bin/python -m bench.export                       # what `make bench-export` runs (26,115 rows)
    .venv/bin/python -m bench.export --rows 2000 --no-result   # a quick check, printed only

Issue 32 started from a real public CSV export: 26,115 rows, 2.3 MB, one file, 15 columns with ``NA`` for
missing values, whose ``run-all`` never got past bronze. The file is not reachable from here (no network),
so this benchmark writes one of the same shape with ``bench/ingest_data.py``: 15 columns, ``NA`` for null,
quoted multi-line fields and a few rule breakers, ``--rows`` rows (default 26,115, about 2.3 MB) of
``--stations`` stations (default 10) reporting every hour, so the export spans ``rows / stations`` hours
(109 days at the defaults): a history, as an export is, not one day.

On a dedicated emulator (moto over HTTPS, a versioned bucket per variant, SSE-KMS with a fresh key):

1. ``contract infer --from <file>`` (timed; the draft's key and event time are recorded). The runs use the
   reviewed contract ``bench/contracts/stations_csv.yaml``, as a user edits the draft before landing;
2. per variant, ``land`` the file, then ``run-all --allow-warn`` (the README's "Adding a dataset" steps),
   each a process of its own, timed as the user waits for it (the session start included), the process
   tree sampled for peak RSS:
   - ``day``: the contract as it is (one partition per event date: 109 partitions);
   - ``month``: the same contract with ``partition_granularity: month``, the README's advice for a dataset
     of a few MB a day or less;
3. ``counts --json`` after each run: bronze holds every record of the file, silver and the quarantine hold
   what DuckDB's reading of the same file says (``bench.ingest_data.expected_counts``).

Target (issue 32, a report, not a test): ``run-all`` of the one file in about a minute on 2 cores
(``TARGET_RUN_ALL_S``). Writes ``bench/results/export.json``; exit code 1 when a step failed or a check
did not hold.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, interrupt, run_sampled, target_line, utc_now, write_result
from bench.ingest_data import CONTRACTS_DIR, expected_counts, write_file

ROWS = 26_115  # the export issue 32 measured
STATIONS = 10
STEP_SECONDS = 3600
DATASET = "stations_csv"
REGION = "eu-west-1"
TARGET_RUN_ALL_S = 60.0
STEP_TIMEOUT_S = 1800
VARIANTS = ("day", "month")


def _lake(dedicated: Any, work: Path, variant: str) -> Path:
    bucket = f"tenantlake-bench-export-{variant}"
    dedicated.s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    dedicated.s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    state = dedicated.state
    lake_json = work / f"lake-{variant}.json"
    lake_json.write_text(json.dumps({
        "tenant_id": f"bench-export-{variant}", "region": REGION, "lake_bucket_name": bucket,
        "kms_key_arn": dedicated.key_arn, "s3_endpoint": state.endpoint, "ca_bundle": state.ca_bundle,
        "truststore": state.truststore}))
    return lake_json


def _contracts(work: Path, variant: str) -> Path:
    """The reviewed contract; the ``month`` variant with ``partition_granularity: month`` added."""
    folder = work / f"contracts-{variant}"
    folder.mkdir(parents=True, exist_ok=True)
    text = (CONTRACTS_DIR / f"{DATASET}.yaml").read_text()
    if variant == "month":
        text += "partition_granularity: month\n"
    (folder / f"{DATASET}.yaml").write_text(text)
    return folder


def _step(label: str, args: list[str], env: dict[str, str], log: Path) -> dict[str, Any]:
    """One ``python -m spark_jobs`` command in a process of its own: wall time, exit code, peak RSS, stdout."""
    print(f"[bench.export] {label} ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    returncode, out, rss = run_sampled([sys.executable, "-m", "spark_jobs", *args], env, log,
                                       f"{label}: {' '.join(args)}", STEP_TIMEOUT_S)
    with open(log, "a") as err:
        err.write(out)
    wall = round(time.perf_counter() - started, 2)
    print(f"[bench.export] {label}: exit {returncode} in {wall} s", file=sys.stderr, flush=True)
    if returncode != 0:
        raise RuntimeError(f"{label} exited {returncode}; see {log}")
    return {"wall_s": wall, "stdout": out, **rss.as_dict()}


def run(rows: int, stations: int, work: Path, variants: list[str]) -> dict[str, Any]:
    import yaml

    from bench.common import dedicated_emulator
    from infra.local.s3a_jars import ensure_jars

    log = work / "steps.log"
    export = write_file(work / "exports" / "stations.csv", rows, "csv", stations=stations, step_seconds=STEP_SECONDS)
    truth = expected_counts(export, "csv")
    file_facts = {"rows": rows, "bytes": export.stat().st_size, "stations": stations,
                  "event_dates": truth["event_dates"]}
    print(f"[bench.export] {export}: {rows:,} rows, {file_facts['bytes'] / 1e6:.2f} MB, "
          f"{truth['event_dates']} event dates; work dir {work}, command output in {log}", file=sys.stderr, flush=True)
    dedicated = dedicated_emulator(work / "emulator", REGION, "tenantlake bench-export lake key")
    env = {**os.environ, **dedicated.aws, "AWS_DEFAULT_REGION": REGION, "SPARK_LOCAL_IP": "127.0.0.1",
           "TENANTLAKE_STATE_DIR": str(work / "state"), "PYTHONPATH": str(REPO_ROOT),
           "TENANTLAKE_SPARK_JARS": ",".join(str(j) for j in ensure_jars())}
    env.pop("TENANTLAKE_VALIDATION", None)
    draft = work / "draft.yaml"
    infer = _step("contract infer", ["contract", "infer", "--from", str(export), "--dataset", DATASET,
                                     "-o", str(draft)], env, log)
    drafted = yaml.safe_load(draft.read_text())
    result_rows, checks = [], []
    for variant in variants:
        lake_json = _lake(dedicated, work, variant)
        variant_env = {**env, "TENANTLAKE_CONTRACTS_DIR": str(_contracts(work, variant))}
        lake = ["--lake-config", str(lake_json)]
        land = _step(f"{variant}: land", ["land", *lake, "--dataset", DATASET, str(export)], variant_env, log)
        run_all = _step(f"{variant}: run-all", ["run-all", *lake, "--dataset", DATASET, "--allow-warn"],
                        variant_env, log)
        counted = _step(f"{variant}: counts", ["counts", *lake, "--dataset", DATASET, "--json"], variant_env, log)
        layers = {row["layer"]: row["rows"] for row in json.loads(counted["stdout"])}
        ours = {"bronze": layers.get("bronze"), "silver": layers.get("silver"), "quarantine": layers.get("quarantine")}
        wanted = {"bronze": truth["rows"], "silver": truth["silver"], "quarantine": sum(truth["quarantine"].values())}
        checks.append({"check": f"{variant}: bronze, silver and quarantine rows equal DuckDB's reading of the file",
                       "ours": ours, "truth": wanted, "equal": ours == wanted})
        result_rows.append({"variant": variant, "partitions": "month" if variant == "month" else "day",
                            "rows": rows, "mb": round(file_facts["bytes"] / 1e6, 2), "infer_s": infer["wall_s"],
                            "land_s": land["wall_s"], "run_all_s": run_all["wall_s"],
                            "peak_total_mb": run_all["peak_total_mb"], "peak_jvm_mb": run_all["peak_jvm_mb"],
                            "silver_rows": ours["silver"], "quarantined": ours["quarantine"],
                            "gold_rows": next((row["rows"] for row in json.loads(counted["stdout"])
                                               if str(row["layer"]).startswith("gold")), None),
                            "steps": [line for line in run_all["stdout"].splitlines() if line.strip()][-12:]})
    return {"file": file_facts, "draft": {"key": drafted.get("key"), "event_time": drafted.get("event_time"),
                                          "columns": len(drafted.get("schema") or [])},
            "rows": result_rows, "checks": checks}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.export", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=ROWS, help=f"rows in the one CSV file (default: {ROWS:,})")
    parser.add_argument("--stations", type=int, default=STATIONS,
                        help=f"stations reporting hourly (default: {STATIONS}); the span is rows / stations hours")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="day, month or both (default: both)")
    parser.add_argument("--work-dir", default="", help="keep the work here (default: a temporary folder, removed)")
    parser.add_argument("--no-result", action="store_true", help="print only; do not write bench/results/export.json")
    args = parser.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    if not variants or set(variants) - set(VARIANTS):
        parser.error(f"--variants: a comma-separated subset of {', '.join(VARIANTS)}")
    signal.signal(signal.SIGTERM, interrupt)  # `kill <pid>`: stop the emulator
    from infra.local import emulator

    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="tenantlake-bench-export-"))
    work.mkdir(parents=True, exist_ok=True)
    started_at, load_start = utc_now(), [round(x, 2) for x in os.getloadavg()]
    try:
        result = run(args.rows, args.stations, work, variants)
    except (RuntimeError, KeyboardInterrupt, subprocess.SubprocessError) as exc:
        print(f"bench.export: {exc or 'interrupted'}", file=sys.stderr)
        return 1
    finally:
        emulator.stop(work / "emulator")
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    load_end = [round(x, 2) for x in os.getloadavg()]
    targets = [target_line(f"{row['variant']} partitions: run-all of the one file (session start included)",
                           row["run_all_s"], TARGET_RUN_ALL_S, higher_is_better=False, unit=" s")
               for row in result["rows"]]
    for row in result["rows"]:
        print(f"{row['variant']:>5}: infer {row['infer_s']} s, land {row['land_s']} s, run-all {row['run_all_s']} s, "
              f"peak {row['peak_total_mb']:.0f} MB; silver {row['silver_rows']:,}, quarantined {row['quarantined']}")
    for line in [t["text"] for t in targets] + [f"check {c['check']}: {'yes' if c['equal'] else 'NO'}"
                                                for c in result["checks"]]:
        print(line)
    if not args.no_result:
        facts = result["file"]
        path = write_result("export", {
            "rows": [{k: v for k, v in row.items() if k != "steps"} for row in result["rows"]],
            "run_all_output": {row["variant"]: row["steps"] for row in result["rows"]},
            "file": facts, "draft": result["draft"], "checks": result["checks"], "targets": targets,
            "load_average_start": load_start, "load_average_end": load_end,
            "notes": [f"one CSV file of {facts['rows']:,} rows ({facts['bytes'] / 1e6:.2f} MB, 15 columns, NA for null) "
                      f"from bench/ingest_data.py: {facts['stations']} stations hourly, {facts['event_dates']} event dates; "
                      f"the draft from `contract infer`: key {result['draft']['key']}, event time "
                      f"{result['draft']['event_time']}; the runs use bench/contracts/stations_csv.yaml",
                      "each step is `python -m spark_jobs <command>` in a process of its own, timed as the user waits "
                      "(the Spark session's start included); run-all with --allow-warn as the README's 'Adding a "
                      "dataset' runs it; a dedicated emulator (HTTPS, versioned bucket, SSE-KMS)",
                      f"load average {load_start} at the start, {load_end} at the end (2 cores)"]},
            started_at=started_at)
        print(f"bench.export: wrote {path.relative_to(REPO_ROOT)}")
    return 0 if all(c["equal"] for c in result["checks"]) else 1


if __name__ == "__main__":
    sys.exit(main())
