"""Erasure benchmark: ONE request of ``--subjects`` users (a subject file) against a lake of ``--events``
clickstream events, on s3a against a dedicated emulator.

    .venv/bin/python -m bench.erasure                                  # 5M events, 1,000 subjects (make bench-erasure)
    .venv/bin/python -m bench.erasure --events 50000 --subjects 50     # a quick check (minutes)

What one run does:

1. the project's generator writes ``--events`` clickstream records for 9,999 users (``--users``; the
   contract's ids have 4 digits), 1 % bad records, seed 42, in landing files of ``--batch-size`` records;
2. a dedicated emulator (moto over HTTPS, started and stopped by PID) gets a versioned bucket and a KMS
   key; the landing files are uploaded and ``run-all --dataset clickstream`` builds bronze, silver, the
   quarantine and gold (validation off: this measures the erasure, not the expectations);
3. ``erase --subject-file`` with ``--subjects`` users drawn with seed 7 (one request, one run), timed as a
   whole, its peak RSS sampled (the driver's Python, the JVM, and the whole process tree: locally the
   executors and their Python workers live there too);
4. from the receipt: status, rows removed per layer, the versions and bytes the sweep and the
   verification read, versions and MB per second; checks: ``completed``, and silver has no row of a
   subject and every other user's rows (a query before and after).

Writes ``bench/results/erasure.json`` (machine, commit, load average before and after, figures, checks).
Exit 1 when a run or a check fails.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, PeakRss, kill_tree, target_line, utc_now, write_result

DATASET = "clickstream"
REGION = "eu-west-1"
BUCKET = "tenantlake-erasure-bench"
RUN_TIMEOUT_S = 6 * 3600
TARGET_DRIVER_MB = 2048  # the target: a 2 GB driver pod


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _say(text: str) -> None:
    print(f"[erasure] {text}", file=sys.stderr, flush=True)


def _run(cmd: list[str], env: dict[str, str], log: Path, timeout: float = RUN_TIMEOUT_S) -> tuple[subprocess.CompletedProcess, float, PeakRss]:
    started = time.perf_counter()
    with subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            with PeakRss(pid=proc.pid) as rss:
                stdout, stderr = proc.communicate(timeout=timeout)
        except BaseException:  # a timeout (or ^C): the worker and its JVM go, not only the wait
            kill_tree(proc.pid)
            raise
    wall = time.perf_counter() - started
    log.write_text(f"$ {' '.join(cmd)}\n--- stdout\n{stdout}\n--- stderr\n{stderr}")
    done = subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
    if done.returncode not in (0, 5):
        raise RuntimeError(f"{cmd[3]} exited {done.returncode}; see {log}")
    return done, wall, rss


def provision(work: Path, landing: Path):
    """A dedicated emulator, a key and a versioned bucket holding the landing files."""
    from bench.common import dedicated_emulator

    state_dir = work / "emulator"
    dedicated = dedicated_emulator(state_dir, REGION, "tenantlake erasure bench key")
    state, aws, s3, key_arn = dedicated.state, dedicated.aws, dedicated.s3, dedicated.key_arn
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    for path in sorted(landing.iterdir()):
        s3.put_object(Bucket=BUCKET, Key=f"landing/{DATASET}/{path.name}", Body=path.read_bytes(),
                      ServerSideEncryption="aws:kms", SSEKMSKeyId=key_arn)
    config = work / "lake.json"
    config.write_text(json.dumps({"tenant_id": "erasure-bench", "region": REGION, "lake_bucket_name": BUCKET,
                                  "kms_key_arn": key_arn, "s3_endpoint": state.endpoint, "ca_bundle": state.ca_bundle,
                                  "truststore": state.truststore, "data_classification": ["gdpr"]}))
    return state_dir, {**aws, "AWS_DEFAULT_REGION": REGION}, config


def _per_user(env: dict[str, str], config: Path, log: Path) -> dict[str, int]:
    cmd = [sys.executable, "-m", "spark_jobs", "query", "--lake-config", str(config), "--json", "--max-rows", "100000",
           f"SELECT user_id AS u, count(*) AS n FROM silver.{DATASET} GROUP BY user_id"]
    done, _, _ = _run(cmd, env, log)
    return {row["u"]: int(row["n"]) for row in json.loads(done.stdout)}


def run(events: int, subjects: int, users: int, batch_size: int, work: Path,
        erase_driver_memory: str = "") -> dict[str, Any]:
    landing_root = work / "generated"
    cmd = [sys.executable, "-m", "spark_jobs", "datagen", "--dataset", DATASET, "--records", str(events),
           "--users", str(users), "--batch-size", str(batch_size), "--bad-rate", "0.01", "--seed", "42",
           "--lake-uri", str(landing_root)]
    subprocess.run(cmd, cwd=REPO_ROOT, check=True, capture_output=True, timeout=RUN_TIMEOUT_S)
    state_dir, aws, config = provision(work, landing_root / "landing" / DATASET)
    env = {**os.environ, **aws, "TENANTLAKE_STATE_DIR": str(work / "state"), "TENANTLAKE_VALIDATION": "off"}
    try:
        _say(f"run-all over {events:,} events ...")
        _, run_all_s, _ = _run([sys.executable, "-m", "spark_jobs", "run-all", "--lake-config", str(config),
                                "--dataset", DATASET, "--allow-warn"], env, work / "run-all.log")
        before = _per_user(env, config, work / "query-before.log")
        chosen = sorted(random.Random(7).sample(sorted(before), min(subjects, len(before))))
        subject_file = work / "subjects.txt"
        subject_file.write_text("".join(f"user_id={user}\n" for user in chosen))
        load_before = _load()
        _say(f"erase: {len(chosen)} subjects in one request (load {load_before}) ...")
        # --erase-driver-memory: the erase run's local heap only (run-all keeps the default it needs at 5M).
        erase_env = {**env, "TENANTLAKE_DRIVER_MEMORY": erase_driver_memory} if erase_driver_memory else env
        done, erase_s, rss = _run([sys.executable, "-m", "spark_jobs", "erase", "--lake-config", str(config),
                                   "--subject-file", str(subject_file), "--dataset", DATASET, "--json"],
                                  erase_env, work / "erase.log")
        receipt = json.loads(done.stdout)
        after = _per_user(env, config, work / "query-after.log")
    finally:
        from infra.local import emulator

        emulator.stop(state_dir)
    touched = receipt["datasets"][DATASET]
    verification = receipt["verification"]
    expected_after = {u: n for u, n in before.items() if u not in set(chosen)}
    return {
        "events": events, "subjects": len(chosen), "users": len(before), "run_all_s": round(run_all_s, 1),
        "erase_s": round(erase_s, 1), "status": receipt["status"],
        "erase_driver_memory": erase_driver_memory or "default",
        "silver_rows_deleted": touched["silver"]["rows_deleted"], "bronze_rows_removed": touched["bronze"]["rows_removed"],
        "quarantine_rows_removed": touched["quarantine"]["rows_removed"],
        "gold_dates_recomputed": len(touched["gold"]["event_dates_recomputed"]),
        "versions_verified": verification["versions_scanned"], "gb_verified": round(verification["bytes_scanned"] / 1e9, 3),
        "versions_read": verification["versions_read"], "gb_read": round(verification["bytes_read"] / 1e9, 3),
        "read_s": verification["seconds"], "versions_per_s": verification["versions_per_second"],
        "mb_per_s": verification["megabytes_per_second"], "versions_skipped": verification["skipped"]["versions"],
        "object_versions_removed": receipt["object_versions_removed"], **rss.as_dict(),
        "load_before": load_before, "load_after": _load(),
        "checks": [{"check": "receipt completed", "equal": receipt["status"] == "completed"},
                   {"check": "silver rows: every other user's kept, no subject's", "equal": after == expected_after},
                   {"check": "silver rows deleted = the subjects' rows before",
                    "equal": touched["silver"]["rows_deleted"] == sum(before[u] for u in chosen)}],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.erasure", description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5_000_000, help="clickstream events (default: 5,000,000)")
    parser.add_argument("--subjects", type=int, default=1000, help="users erased in the one request (default: 1,000)")
    parser.add_argument("--users", type=int, default=9999, help="distinct users in the data (default: 9,999)")
    parser.add_argument("--batch-size", type=int, default=20_000, help="events per landing file (default: 20,000)")
    parser.add_argument("--work-dir", default="", help="keep the work here (default: a temporary folder, removed)")
    parser.add_argument("--no-write", action="store_true", help="print the figures; do not write bench/results/erasure.json")
    parser.add_argument("--erase-driver-memory", default="",
                        help="the erase run's local driver heap (TENANTLAKE_DRIVER_MEMORY, e.g. 1g; default: the "
                             "project's): locally that heap holds the executors too")
    parser.add_argument("--result", default="erasure",
                        help="result name: bench/results/<name>.json (default: erasure; a second size, e.g. erasure-2.5M)")
    args = parser.parse_args(argv)
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="tenantlake-erasure-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    started = utc_now()
    try:
        row = run(args.events, args.subjects, args.users, args.batch_size, work, args.erase_driver_memory)
    except (RuntimeError, subprocess.SubprocessError) as exc:
        print(f"bench.erasure: {exc}", file=sys.stderr)
        return 1
    finally:
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    checks = row.pop("checks")
    targets = [target_line("peak RSS of the erase run (driver Python + JVM; locally the JVM runs the executors too)",
                           row["peak_python_mb"] + row["peak_jvm_mb"], TARGET_DRIVER_MB, higher_is_better=False, unit=" MB")]
    for line in [t["text"] for t in targets] + [f"check {c['check']}: {'yes' if c['equal'] else 'NO'}" for c in checks]:
        print(line, file=sys.stderr)
    print(json.dumps(row, indent=1))
    if not args.no_write:
        path = write_result(args.result, {"rows": [row], "checks": checks, "targets": targets,
                                        "notes": [f"{row['subjects']} subjects in one request against {row['events']:,} "
                                                  f"events of {row['users']:,} users; peak total (the whole process "
                                                  f"tree, Python workers included) {row['peak_total_mb']:.0f} MB"]},
                            started_at=started)
        _say(f"wrote {path}")
    return 0 if row["status"] == "completed" and all(c["equal"] for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
