"""Usage benchmark: reading an S3 Inventory report of N object versions and tallying them per layer and
dataset (``spark_jobs.usage.objects``), at N and 2N: seconds, versions per second, peak Python memory, and the
doubling ratio (2N must cost at most 2.2x N).

The report is written in the format S3 documents (a manifest.json naming Parquet files of 1M rows at most, the
columns the tenant module's inventory delivers) to a local folder; ``get_object`` reads it from there (the S3
request itself is not what is measured: one GET per data file). Keys are spread over the layers and datasets of
a lake like the demo's.

    python -m bench.usage --sizes 1000000,2000000
"""
from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import resource
import tempfile
import time
from pathlib import Path

FILE_ROWS = 1_000_000
PREFIXES = ("landing/iot/", "bronze/iot/_batch_id=3/", "silver/iot/data/event_ts_day=2026-11-20/", "gold/iot_hourly/data/",
            "quarantine/clickstream/event_date=2026-11-20/", "checkpoints/inventory/bronze/offsets/", "reports/silver/iot/r/")


class FolderObjects:
    """``get_object`` over a local folder: the report as S3 would serve it."""

    def __init__(self, root: Path):
        self.root = root

    def get_object(self, Bucket: str, Key: str) -> dict:  # noqa: N803 - boto3's names
        return {"Body": io.BytesIO((self.root / Bucket / Key).read_bytes())}


NOW = dt.datetime(2026, 11, 26, tzinfo=dt.timezone.utc)


def write_report(root: Path, versions: int) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    now = NOW
    keys = []
    for start in range(0, versions, FILE_ROWS):
        n = min(FILE_ROWS, versions - start)
        ids = range(start, start + n)
        table = pa.table({
            "bucket": pa.array(["acme-eu-west-1-lake"] * n),
            "key": pa.array([f"{PREFIXES[i % len(PREFIXES)]}part-{i:09d}.parquet" for i in ids]),
            "version_id": pa.array([f"v{i}" for i in ids]),
            "is_latest": pa.array([i % 4 != 0 for i in ids]),
            "is_delete_marker": pa.array([i % 50 == 0 for i in ids]),
            "size": pa.array([1000 + i % 5000 for i in ids], pa.int64()),
            "last_modified_date": pa.array([now.replace(tzinfo=None) - dt.timedelta(minutes=i % 40000) for i in ids],
                                           pa.timestamp("ms")),
            "storage_class": pa.array(["STANDARD"] * n),
        })
        key = f"inventory/acme-eu-west-1-lake/lake-daily/data/part-{start // FILE_ROWS}.parquet"
        (root / "logs" / key).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, root / "logs" / key)
        keys.append(key)
    return keys


def measure(versions: int) -> dict:
    """Write the report in a child process (its memory is not this one's), then read and tally it here."""
    import subprocess
    import sys

    from spark_jobs.usage import month_days
    from spark_jobs.usage.objects import InventoryReport, Tally, report_versions

    with tempfile.TemporaryDirectory() as folder:
        written = subprocess.run([sys.executable, "-m", "bench.usage", "--write", folder, "--sizes", str(versions)],
                                 capture_output=True, text=True, timeout=3600, check=True)
        report = InventoryReport("lake-daily", "logs", "x/manifest.json", NOW, tuple(json.loads(written.stdout)),
                                 "Parquet")
        started = time.perf_counter()
        tally = Tally({"iot_hourly": "iot"}, "2026-11", month_days("2026-11"))
        for version in report_versions(FolderObjects(Path(folder)), report):
            tally.add(version)
        seconds = time.perf_counter() - started
    assert tally.versions == versions
    return {"versions": versions, "seconds": round(seconds, 2), "versions_per_s": round(versions / seconds),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.usage", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000000,2000000", help="object versions per report (default 1M,2M)")
    parser.add_argument("--write", default="", help=argparse.SUPPRESS)  # the child that writes one report
    args = parser.parse_args(argv)
    if args.write:
        print(json.dumps(write_report(Path(args.write), int(args.sizes))))
        return 0
    rows = [measure(int(size)) for size in args.sizes.split(",")]
    for row in rows:  # peak_rss_mb: this process's peak after reading every size so far (ru_maxrss)
        print(json.dumps(row))
    if len(rows) > 1:
        ratio = (rows[-1]["seconds"] / rows[-2]["seconds"]) / (rows[-1]["versions"] / rows[-2]["versions"]) * 2
        print(f"doubling ratio (time at 2N / time at N, scaled to a doubling): {ratio:.2f} (target <= 2.2)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
