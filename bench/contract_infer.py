"""``contract infer`` at size: CSV files through ``python -m spark_jobs contract infer``, beside pyarrow's own read
of the same file (``pyarrow.csv.read_csv``) and DuckDB summarising it (``SUMMARIZE``: per column type, min, max,
nulls, distinct estimate), each in a process of its own, in the same run.

Two shapes:

- ``readings``: N and 2N records (default 1M and 2M: the issue's 2M-row CSV) of a year of hourly readings of
  several stations in time order, 19 columns, ``NA`` for 1 % of one column (about 94 bytes a record: 2M records are
  about 190 MB). pyarrow reads it with its defaults (every core, types inferred).
- ``wide-span`` (``--wide-span-rows``, default 10.8M, about 0.93 GB; 0 skips it): the ingest benchmark's wide-span
  file (``bench.ingest_data.write_wide_span_file``, what ``bench.ingest --shape wide-span`` writes): 15 columns,
  ``NA`` nulls in six of them, 32 years of event time (384 month partitions), and a ``remarks`` column whose
  quoted values hold line breaks now and then. pyarrow's defaults refuse that file ("CSV parser got out of sync
  with chunker"): its read sets ``newlines_in_values=True``, as ``contract infer``'s reader does.

``contract infer`` and pyarrow's read run in turns, ``--repeats`` times each (default 3): each figure is the median
(a spike of the shared machine lands on one run, not on one side of the ratio), every run is in the JSON. The
figures are each command's wall time and the peak resident memory of its process tree (sampled every 0.2 s,
``bench.common.run_sampled``), whether the runs made the same draft, and whether ``contract infer`` read the
file with pyarrow's reader or fell back to Python's csv module (its progress line, in the log). Targets:
``contract infer`` at most 8x pyarrow's read of the same file at 2N (issue 56); the doubling ratio (2N against N)
at or under 2.2; memory that does not grow with the file (the sample is ``--sample-rows``, the key check spills to
disk). Results go to ``bench/results/contract_infer.json``.

    python -m bench.contract_infer [--records 1000000] [--sample-rows 10000] [--wide-span-rows 10800000] [--repeats 3]
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.common import run_sampled, target_line, utc_now, write_result
from bench.ingest_data import write_wide_span_file

REPO_ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("station", "observed_at", "month", "day", "hour", "temp", "dewp", "wind_dir", "wind_speed", "gust",
           "pressure", "visibility", "precip", "snow", "cloud", "quality", "source", "delay_minutes", "flag")
TIMEOUT_S = 3600
TARGET_OVER_PYARROW = 8.0     # issue 56: contract infer within 8x pyarrow's read of the same file
FALLBACK_LINE = "reading it with Python's csv module instead"  # spark_jobs/infer/read.py's progress line


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


def _pyarrow_read(path: Path, newlines_in_values: bool) -> list[str]:
    """pyarrow's own read of the whole file into a table (its defaults: every core, types inferred)."""
    script = ("import sys, pyarrow.csv as c; options = c.ParseOptions(newlines_in_values=sys.argv[2] == '1'); "
              "print(c.read_csv(sys.argv[1], parse_options=options).num_rows)")
    return [sys.executable, "-c", script, str(path), "1" if newlines_in_values else "0"]


def measure(path: Path, shape: str, records: int, sample_rows: int, newlines_in_values: bool, log: Path,
            repeats: int = 1) -> dict:
    """One file through ``contract infer`` and pyarrow's read, in turns, ``repeats`` times (each figure the
    median: a spike of the shared machine lands on one run, not on one side), then DuckDB's SUMMARIZE once."""
    infers, reads = [], []
    for _ in range(repeats):
        logged = log.stat().st_size if log.exists() else 0
        infers.append(_timed([sys.executable, "-m", "spark_jobs", "contract", "infer", "--from", str(path),
                              "--dataset", shape.replace("-", "_"), "--sample-rows", str(sample_rows)], log))
        infers[-1]["fell_back"] = FALLBACK_LINE in log.read_text()[logged:]
        reads.append(_timed(_pyarrow_read(path, newlines_in_values), log))
        if int(reads[-1]["stdout"].strip()) != records:
            raise SystemExit(f"pyarrow read {reads[-1]['stdout'].strip()} records of {path.name}, not {records:,}")
    duck = _timed(_duckdb_summary(path), log)
    infer_s, read_s = (statistics.median(run["wall_s"] for run in runs) for runs in (infers, reads))
    key = next((ln for ln in infers[0]["stdout"].splitlines() if ln.startswith("key:")), "")
    read = next((ln for ln in infers[0]["stdout"].splitlines() if ln.startswith("# Draft contract")), "")
    row = {"shape": shape, "records": records, "mb": round(path.stat().st_size / 1e6, 1),
           "reader": "Python csv (fallback)" if any(run["fell_back"] for run in infers) else "pyarrow",
           "infer_s": infer_s, "infer_peak_mb": max(run["peak_rss_mb"] for run in infers), "pyarrow_read_s": read_s,
           "pyarrow_peak_mb": max(run["peak_rss_mb"] for run in reads),
           "ratio_to_pyarrow": round(infer_s / max(read_s, 0.01), 2),
           "duckdb_summarize_s": duck["wall_s"], "ratio_to_duckdb": round(infer_s / max(duck["wall_s"], 0.01), 1),
           "key": key, "read_all": f"{records:,} records read" in read,
           "infer_runs_s": [run["wall_s"] for run in infers], "pyarrow_runs_s": [run["wall_s"] for run in reads],
           "same_draft": len({run["stdout"] for run in infers}) == 1,
           "pyarrow_options": "newlines_in_values=True" if newlines_in_values else "defaults"}
    print(f"[bench.contract_infer] {shape} {records:,} records ({row['mb']} MB): infer {infer_s} s "
          f"(runs {row['infer_runs_s']}, peak {row['infer_peak_mb']} MB, {row['reader']}), pyarrow read {read_s} s "
          f"(runs {row['pyarrow_runs_s']}; ours {row['ratio_to_pyarrow']}x), DuckDB SUMMARIZE {duck['wall_s']} s; {key}",
          file=sys.stderr)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="N: the smaller readings file (default: 1000000)")
    parser.add_argument("--sample-rows", type=int, default=10_000)
    parser.add_argument("--wide-span-rows", type=int, default=10_800_000,
                        help="records of the wide-span file (default: 10800000, about 0.93 GB); 0: none")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of contract infer and of pyarrow's read per file, in turns (default: 3; medians)")
    parser.add_argument("--no-result", action="store_true", help="print only; do not write the result file")
    args = parser.parse_args(argv)
    rows = []
    started = utc_now()
    with tempfile.TemporaryDirectory(prefix="bench-infer-") as folder:
        log = Path(folder) / "commands.log"
        for records in (args.records, 2 * args.records):
            path = write_file(Path(folder) / f"readings_{records}.csv", records)
            rows.append(measure(path, "readings", records, args.sample_rows, False, log, args.repeats))
            path.unlink()
        if args.wide_span_rows:
            path = write_wide_span_file(Path(folder) / "stations-wide-span.csv", args.wide_span_rows, "csv")
            rows.append(measure(path, "wide-span", args.wide_span_rows, args.sample_rows, True, log, args.repeats))
    doubling = round(rows[1]["infer_s"] / rows[0]["infer_s"], 2)
    memory = round(rows[1]["infer_peak_mb"] / rows[0]["infer_peak_mb"], 2)
    targets = [target_line(f"contract infer over pyarrow's read, {rows[1]['records']:,}-record CSV",
                           rows[1]["ratio_to_pyarrow"], TARGET_OVER_PYARROW, higher_is_better=False),
               target_line("contract infer doubling ratio (2N over N)", doubling, 2.2, higher_is_better=False),
               target_line("peak RSS at 2N over N (memory bounded by --sample-rows, not the file)", memory, 1.1,
                           higher_is_better=False)]
    if args.wide_span_rows:
        targets.append(target_line(f"contract infer over pyarrow's read, wide-span {args.wide_span_rows:,} records",
                                   rows[2]["ratio_to_pyarrow"], TARGET_OVER_PYARROW, higher_is_better=False))
    for target in targets:
        print(f"[bench.contract_infer] {target['text']}", file=sys.stderr)
    load = [round(x, 2) for x in os.getloadavg()]
    notes = [f"readings: a year of hourly readings of several stations in time order, 19 columns, NA for 1 % of one "
             f"column; wide-span: bench.ingest_data.write_wide_span_file (15 columns, NA nulls, quoted line breaks, "
             f"32 years); --sample-rows {args.sample_rows}",
             f"each command a process of its own on the same file: contract infer and pyarrow's read_csv of the "
             f"whole file (its defaults; newlines_in_values=True for the wide-span file, which the defaults refuse) "
             f"in turns, {args.repeats} times each (the medians; every run in infer_runs_s, pyarrow_runs_s), then "
             f"DuckDB's SUMMARIZE once (types, min, max, nulls, distinct estimates); wall time and peak RSS of each "
             f"process tree (sampled every 0.2 s; the highest of the runs)",
             f"load average at the end {load} (2 cores; other jobs ran beside it: compare the ratios, not the seconds)"]
    result = {"rows": rows, "targets": targets, "notes": notes}
    print(json.dumps(result, indent=1))
    if not args.no_result:
        write_result("contract_infer", result, started_at=started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
