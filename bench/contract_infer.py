"""``contract infer`` at size: one CSV file of N and 2N records through ``python -m spark_jobs contract infer``,
beside DuckDB summarising the same file (``SUMMARIZE``: per column type, min, max, nulls, distinct estimate)
in the same run.

The file has the issue's shape: a year of hourly readings of several stations in time order, 19 columns, ``NA``
for some missing values (about 100 bytes a record: 300,000 records are about 30 MB). Each command runs in a
process of its own; the figures are its wall time and peak resident memory (``getrusage`` of the child). The
doubling ratio (2N against N) must stay at or under 2.2 for time, and memory must not grow with the file (the
sample is ``--sample-rows``, the key check spills to disk). Results go to ``bench/results/contract_infer.json``.

    python -m bench.contract_infer [--records 300000] [--sample-rows 10000]
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from bench.common import run_sampled, target_line, utc_now, write_result

REPO_ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("station", "observed_at", "month", "day", "hour", "temp", "dewp", "wind_dir", "wind_speed", "gust",
           "pressure", "visibility", "precip", "snow", "cloud", "quality", "source", "delay_minutes", "flag")
TIMEOUT_S = 3600


def write_file(path: Path, records: int, seed: int = 7) -> Path:
    rng = random.Random(seed)
    stations = [f"ws-{i:04d}" for i in range(max(1, records // 8760 + 1))]
    start = dt.datetime(2023, 1, 1)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for i in range(records):
            at = start + dt.timedelta(hours=i // len(stations))
            writer.writerow([stations[i % len(stations)], at.strftime("%Y-%m-%d %H:%M:%S"), at.month, at.day, at.hour,
                             round(rng.uniform(-10, 35), 1), "NA" if rng.random() < 0.01 else round(rng.uniform(-15, 20), 1),
                             rng.randint(0, 359), round(rng.uniform(0, 30), 1), round(rng.uniform(0, 50), 1),
                             round(rng.uniform(960, 1040), 1), rng.randint(0, 10), round(rng.random(), 2), 0,
                             rng.randint(0, 8), rng.choice("AB"), "metar", rng.randint(0, 600),
                             rng.choice(("true", "false"))])
    return path


def _timed(argv: list[str], log: Path) -> dict:
    """Wall seconds and peak resident memory (MB, sampled: ``bench.common.run_sampled``) of one child process."""
    started = time.monotonic()
    code, stdout, rss = run_sampled(argv, {**os.environ, "PYTHONPATH": str(REPO_ROOT)}, log, " ".join(argv[1:6]),
                                    TIMEOUT_S)
    if code != 0:
        raise SystemExit(f"{' '.join(argv[:5])} failed ({code}): see {log}")
    return {"wall_s": round(time.monotonic() - started, 2), "peak_rss_mb": rss.as_dict()["peak_total_mb"],
            "stdout": stdout}


def _duckdb_summary(path: Path) -> list[str]:
    script = ("import duckdb, sys; con = duckdb.connect(); "
              "print(len(con.execute(\"SUMMARIZE SELECT * FROM read_csv(?, nullstr='NA')\", [sys.argv[1]]).fetchall()))")
    return [sys.executable, "-c", script, str(path)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=300_000, help="N: the smaller file (default: 300000)")
    parser.add_argument("--sample-rows", type=int, default=10_000)
    parser.add_argument("--no-result", action="store_true", help="print only; do not write the result file")
    args = parser.parse_args(argv)
    rows = []
    started = utc_now()
    with tempfile.TemporaryDirectory(prefix="bench-infer-") as folder:
        for records in (args.records, 2 * args.records):
            path = write_file(Path(folder) / f"readings_{records}.csv", records)
            log = Path(folder) / "commands.log"
            ours = _timed([sys.executable, "-m", "spark_jobs", "contract", "infer", "--from", str(path), "--dataset",
                           "readings", "--sample-rows", str(args.sample_rows)], log)
            duck = _timed(_duckdb_summary(path), log)
            key = next((ln for ln in ours["stdout"].splitlines() if ln.startswith("key:")), "")
            rows.append({"records": records, "mb": round(path.stat().st_size / 1e6, 1), "infer_s": ours["wall_s"],
                         "infer_peak_mb": ours["peak_rss_mb"], "duckdb_summarize_s": duck["wall_s"], "key": key,
                         "ratio_to_duckdb": round(ours["wall_s"] / max(duck["wall_s"], 0.01), 1)})
            print(f"[bench.contract_infer] {records:,} records ({rows[-1]['mb']} MB): infer {ours['wall_s']} s "
                  f"(peak {ours['peak_rss_mb']} MB), DuckDB SUMMARIZE {duck['wall_s']} s; {key}", file=sys.stderr)
    doubling = round(rows[1]["infer_s"] / rows[0]["infer_s"], 2)
    memory = round(rows[1]["infer_peak_mb"] / rows[0]["infer_peak_mb"], 2)
    targets = [target_line("contract infer doubling ratio (2N over N)", doubling, 2.2, higher_is_better=False),
               target_line("peak RSS at 2N over N (memory bounded by --sample-rows, not the file)", memory, 1.1,
                           higher_is_better=False)]
    for target in targets:
        print(f"[bench.contract_infer] {target['text']}", file=sys.stderr)
    load = [round(x, 2) for x in os.getloadavg()]
    notes = [f"one CSV of the issue's shape: a year of hourly readings of several stations in time order, 19 columns, "
             f"NA for 1 % of one column; --sample-rows {args.sample_rows}",
             "each command a process of its own; wall time and peak RSS of its process tree (sampled every 0.2 s); "
             "DuckDB: SUMMARIZE of the same file (types, min, max, nulls, distinct estimates), in the same run",
             f"load average at the end {load} (2 cores; other jobs ran beside it: compare the ratios, not the seconds)"]
    result = {"rows": rows, "targets": targets, "notes": notes}
    print(json.dumps(result, indent=1))
    if not args.no_result:
        write_result("contract_infer", result, started_at=started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
