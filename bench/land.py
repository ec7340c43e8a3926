"""``land`` of one big file: into a local-folder lake and into the emulator, as the CLI runs it.

    .venv/bin/python -m bench.land                         # one ~1 GB CSV (11.4M rows), default part size
    .venv/bin/python -m bench.land --rows 1000000 --no-result   # a quick check (~86 MB), printed only
    .venv/bin/python -m bench.land --single-put            # also the one-PUT upload land did before multipart

Issue 42 landed a 1 GB export into the emulator with one ``put_object``: over 7 minutes, and the emulator grew
to 4.9 GB RSS. Here one CSV of ``--rows`` rows (``bench/ingest_data.py``, the ``stations_csv`` contract's shape,
about 86 bytes a row) is landed, each variant a ``python -m spark_jobs land`` process of its own, timed as the
user waits for it, its process tree sampled for peak RSS:

- ``folder``: a local-folder lake (a streamed copy under a temporary name, then a rename);
- ``emulator``: a fresh emulator (moto over HTTPS, a versioned bucket, SSE-KMS with a fresh key), multipart
  upload in parts of ``--part-size-mib`` (the land default); the emulator's own peak RSS is its kernel
  high-water mark (``VmHWM``) and what it still holds after the land (``VmRSS``);
- ``emulator-again``: the same land again (answered "already landed", nothing sent);
- ``emulator-single-put`` (``--single-put``): a fresh emulator, ``--part-size-mib 5120`` (one ``put_object``,
  as land did before).

Each landed object is read back (streamed) and its SHA-256 compared with the file's. Writes
``bench/results/land.json``; exit code 1 when a land failed or a read-back differed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, Stopwatch, dedicated_emulator, run_sampled, utc_now, write_result
from bench.ingest_data import CONTRACTS_DIR, write_file

ROWS = 11_400_000  # about 1 GB of the stations CSV
DATASET = "stations_csv"
REGION = "eu-west-1"
TIMEOUT_S = 1800


def _proc_status(pid: int) -> dict[str, float]:
    """The process's resident memory now and its high-water mark, in MB (Linux ``/proc``)."""
    figures = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            figures[name] = round(int(value.split()[0]) / 1024, 1)
    return figures


def _sha256_of_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(8 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _sha256_of_object(s3: Any, bucket: str, key: str) -> str:
    digest = hashlib.sha256()
    for chunk in s3.get_object(Bucket=bucket, Key=key)["Body"].iter_chunks(8 << 20):
        digest.update(chunk)
    return digest.hexdigest()


def _land(env: dict[str, str], lake_args: list[str], path: Path, log: Path, label: str,
          extra: list[str] = ()) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "spark_jobs", "land", *lake_args, "--dataset", DATASET, *extra, str(path)]
    with Stopwatch() as clock:
        code, out, rss = run_sampled(cmd, env, log, label, TIMEOUT_S)
    row = {"variant": label, "exit": code, "wall_s": round(clock.seconds, 1),
           "land_peak_rss_mb": round(rss.peak_total_mb, 1), "stdout": out.strip().splitlines()[:2]}
    print(f"{label}: exit {code}, {row['wall_s']} s, land peak RSS {row['land_peak_rss_mb']} MB", flush=True)
    return row


def _emulator_variant(work: Path, env: dict[str, str], path: Path, sha: str, log: Path, label: str,
                      extra: list[str], again: bool) -> list[dict[str, Any]]:
    from infra.local import emulator

    state_dir = work / f"emulator-{label}"
    dedicated = dedicated_emulator(state_dir, REGION, f"bench land {label}")
    try:
        bucket = f"tenantlake-bench-land-{label}"
        dedicated.s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
        dedicated.s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        lake_args = ["--lake-uri", f"s3a://{bucket}", "--kms-key-arn", dedicated.key_arn, "--region", REGION,
                     "--s3-endpoint", dedicated.state.endpoint, "--ca-bundle", dedicated.state.ca_bundle]
        run_env = {**env, **dedicated.aws}
        rows = [_land(run_env, lake_args, path, log, label, extra)]
        rows[0].update({f"emulator_{k}": v for k, v in _proc_status(dedicated.state.pid).items()})
        key = f"landing/{DATASET}/{sha}.csv"
        with Stopwatch() as clock:
            rows[0]["read_back_equal"] = _sha256_of_object(dedicated.s3, bucket, key) == sha
        rows[0]["read_back_s"] = round(clock.seconds, 1)
        head = dedicated.s3.head_object(Bucket=bucket, Key=key)
        rows[0]["sse_kms_key"] = head.get("SSEKMSKeyId") == dedicated.key_arn
        rows[0]["in_progress_uploads"] = len(dedicated.s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []))
        print(f"  emulator VmHWM {rows[0].get('emulator_VmHWM')} MB, VmRSS after {rows[0].get('emulator_VmRSS')} MB, "
              f"read back equal: {rows[0]['read_back_equal']} ({rows[0]['read_back_s']} s)", flush=True)
        if again:
            rows.append(_land(run_env, lake_args, path, log, f"{label}-again", extra))
        return rows
    finally:
        emulator.stop(state_dir)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.land", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=ROWS, help=f"rows of the CSV (default {ROWS:,}: about 1 GB)")
    parser.add_argument("--part-size-mib", type=int, default=None, help="land's --part-size-mib (default: land's)")
    parser.add_argument("--single-put", action="store_true", help="also land it as one put_object (slow, GBs of RAM)")
    parser.add_argument("--no-result", action="store_true", help="print only; do not write bench/results/land.json")
    parser.add_argument("--work", default="", help="working folder (default: a temporary one, removed)")
    args = parser.parse_args(argv)
    started = utc_now()
    work = Path(args.work or tempfile.mkdtemp(prefix="tenantlake-bench-land-"))
    work.mkdir(parents=True, exist_ok=True)
    log = work / "land.log"
    try:
        path = work / "export" / "stations.csv"
        if not path.exists():
            write_file(path, args.rows, "csv")
        sha, size = _sha256_of_file(path), path.stat().st_size
        print(f"file: {path} ({size / 1e6:,.1f} MB, {args.rows:,} rows)", flush=True)
        contracts = work / "contracts"
        contracts.mkdir(exist_ok=True)
        shutil.copy(CONTRACTS_DIR / f"{DATASET}.yaml", contracts / f"{DATASET}.yaml")
        env = {**os.environ, "TENANTLAKE_CONTRACTS_DIR": str(contracts), "TENANTLAKE_STATE_DIR": str(work / "state")}
        extra = ["--part-size-mib", str(args.part_size_mib)] if args.part_size_mib else []
        folder_lake = work / "folder-lake"
        rows = [_land(env, ["--lake-uri", str(folder_lake)], path, log, "folder", extra)]
        landed = folder_lake / "landing" / DATASET / f"{sha}.csv"
        rows[0]["read_back_equal"] = landed.exists() and _sha256_of_file(landed) == sha
        shutil.rmtree(folder_lake, ignore_errors=True)
        rows += _emulator_variant(work, env, path, sha, log, "emulator", extra, again=True)
        if args.single_put:
            rows += _emulator_variant(work, env, path, sha, log, "emulator-single-put", ["--part-size-mib", "5120"],
                                      again=False)
        ok = all(r["exit"] == 0 for r in rows) and all(r.get("read_back_equal", True) for r in rows)
        payload = {"rows_in_file": args.rows, "file_bytes": size, "results": rows, "ok": ok,
                   "note": "land's wall time includes its checks of the file (hashing and decoding it once)"}
        print(json.dumps(payload, indent=1))
        if not args.no_result:
            print(f"wrote {write_result('land', payload, started_at=started).relative_to(REPO_ROOT)}")
        return 0 if ok else 1
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
