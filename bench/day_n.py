"""Day N: a lake that has grown, then one day's data. What does the next ``run-all`` cost?

    .venv/bin/python -m bench.day_n --sizes 1000000,2000000      # what make bench-day-n runs
    .venv/bin/python -m bench.day_n --sizes 10000000,20000000    # the issue's size (about 1 GB of CSV a lake)

For each lake size N (rows of the ingest benchmark's wide-span CSV: 32 years, about 384 month partitions of
``stations_wide_csv``, ``bench/ingest_data.py``) the benchmark builds the lake with one ``run-all``, then:

1. **new month**: lands 1,000 new rows in one new partition (500 stations, two readings each, March 2022, after
   the span) and runs ``run-all``;
2. **late rows**: lands 1,000 late rows spread over 100 old partitions (10 stations, a reading a month from
   2000) and runs ``run-all``.

Each ``run-all`` is ``python -m spark_jobs run-all`` in a process of its own (its session start included, as a
scheduled job runs it), with validation on. Each scenario runs ``--repeats`` times (default 2), each time with
data of its own (the next new month; other late rows), and its row is the median run (of two, the faster;
``runs`` holds every one): this shared 2-core machine swings by a third between runs. The references are the same 1,000 rows into an empty lake (one
``run-all`` on a lake holding only that file). Each row records the run's wall time, the rows each layer read
(bronze's landing records; silver's new bronze records and the silver rows it read back from the partitions
they touch; gold's silver rows) from the run manifests, and the peak RSS.

Targets (issue 53): a new-data run takes at most 2x the same rows into an empty lake; doubling the lake changes
that run by at most 1.2x. A target missed is reported with the rows the run read, which say why.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import job_workspace, run_sampled, target_line, utc_now, write_result
from bench.ingest_data import CONTRACTS_DIR, WIDE_DATASETS, write_file, write_wide_span_file

DATASET = WIDE_DATASETS["csv"]
DEFAULT_SIZES = (1_000_000, 2_000_000)
NEW_ROWS = 1_000
RUN_TIMEOUT_S = 3600
TARGET_OVER_EMPTY = 2.0
TARGET_DOUBLING = 1.2
SCENARIOS = ("new month", "late rows")


def day_files(folder: Path, repeat: int = 0) -> dict[str, Path]:
    """The two days of data of one repeat: 1,000 rows in one new month (March 2022, April for the next repeat,
    ...), and 1,000 late rows over 100 old months (an odd second of its own per repeat keeps every key new)."""
    folder.mkdir(parents=True, exist_ok=True)
    month = f"2022-{3 + repeat:02d}-01 00:00:00"
    return {"new month": write_file(folder / f"new-month-{repeat}.csv", NEW_ROWS, "csv", stations=500,
                                    step_seconds=60, start=month),
            # 10 stations, 100 readings each 31 days apart (longer than any month: each in a month of its own):
            # 100 old partitions.
            "late rows": write_file(folder / f"late-rows-{repeat}.csv", NEW_ROWS, "csv", stations=10,
                                    step_seconds=31 * 86_400, start=f"2000-01-01 00:00:{7 + repeat:02d}")}


def land(lake: Path, source: Path, name: str) -> None:
    """A landing file, as ``land`` would put it into a folder lake (a copy under a name of its own)."""
    target = lake / "landing" / DATASET / name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def _latest_manifest(lake: Path, layer: str) -> dict[str, Any]:
    runs = sorted((lake / "reports" / layer / DATASET).iterdir())
    return json.loads((runs[-1] / "manifest.json").read_text())


def run_all(lake: Path, env: dict[str, str], log: Path, label: str) -> dict[str, Any]:
    """One ``python -m spark_jobs run-all`` of the dataset: its wall time, peak RSS and what each layer read."""
    cmd = [sys.executable, "-m", "spark_jobs", "run-all", "--lake-uri", str(lake), "--dataset", DATASET, "--allow-warn"]
    print(f"[bench] {label} ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    code, out, rss = run_sampled(cmd, env, log, label, RUN_TIMEOUT_S)
    wall = round(time.perf_counter() - started, 1)
    if code != 0:
        raise RuntimeError(f"{label}: run-all exited {code}; see {log}")
    bronze, silver, gold = (_latest_manifest(lake, layer) for layer in ("bronze", "silver", "gold"))
    increment = silver.get("increment") or {}
    row = {"wall_s": wall, "bronze_rows_in": bronze["rows_in"], "silver_rows_in": silver["rows_in"],
           "silver_new_rows": increment.get("bronze_rows", silver["rows_in"]),
           "silver_rows_reread": increment.get("silver_rows_reread", 0),
           "silver_partitions": increment.get("partitions_rewritten"), "gold_rows_in": gold["rows_in"],
           "silver_mode": silver.get("mode"), "gold_mode": gold.get("mode"),
           "bronze_s": bronze["duration_seconds"], "silver_s": silver["duration_seconds"],
           "gold_s": gold["duration_seconds"], "counts_and_start_s": None, **rss.as_dict()}
    row["counts_and_start_s"] = round(wall - row["bronze_s"] - row["silver_s"] - row["gold_s"], 1)
    counted = re.search(rf"{DATASET}\s+silver\s+(\d+)", out)
    row["silver_total_rows"] = int(counted.group(1)) if counted else None
    print(f"[bench] {label}: {wall}s (bronze {row['bronze_s']}s, silver {row['silver_s']}s read {row['silver_rows_in']:,}, "
          f"gold {row['gold_s']}s read {row['gold_rows_in']:,})", file=sys.stderr, flush=True)
    return row


def ratios_and_targets(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per lake size and scenario: the run over the same rows into an empty lake; per scenario: the run on the
    largest lake over the run on the smallest (x2 per doubling)."""
    empty = {r["scenario"]: r["wall_s"] for r in rows if r["lake_rows"] == 0}
    sizes = sorted({r["lake_rows"] for r in rows if r["lake_rows"]})
    ratios, targets = [], []
    for scenario in SCENARIOS:
        by_size = {r["lake_rows"]: r for r in rows if r["scenario"] == scenario and r["lake_rows"]}
        for size in sizes:
            if size in by_size and scenario in empty:
                ratio = round(by_size[size]["wall_s"] / empty[scenario], 3)
                ratios.append({"lake_rows": size, "scenario": scenario, "over_empty_lake": ratio})
                targets.append(target_line(f"{scenario}, lake of {size:,} rows: run-all / the same rows into an empty "
                                           "lake", ratio, TARGET_OVER_EMPTY, higher_is_better=False, unit="x"))
        if len(sizes) >= 2 and sizes[0] in by_size and sizes[-1] in by_size:
            doublings = max(1.0, math.log2(sizes[-1] / sizes[0]))
            growth = (by_size[sizes[-1]]["wall_s"] / by_size[sizes[0]]["wall_s"]) ** (1 / doublings)
            ratios.append({"lake_rows": sizes[-1], "scenario": scenario, "per_doubling": round(growth, 3)})
            targets.append(target_line(f"{scenario}: run-all on a lake twice as large ({sizes[0]:,} -> {sizes[-1]:,} "
                                       "rows)", round(growth, 3), TARGET_DOUBLING, higher_is_better=False, unit="x"))
    return ratios, targets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.day_n", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES),
                        help=f"lake sizes in rows (default {','.join(str(s) for s in DEFAULT_SIZES)})")
    parser.add_argument("--work-dir", default="", help="where the lakes go (default: /tmp/tenantlake-bench-day-n-<pid>)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each scenario, each with data of its own "
                        "(a new month, other late rows); the row is the median (default 2)")
    parser.add_argument("--result", default="day_n", help="result name (bench/results/<name>.json)")
    args = parser.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",") if s})
    work, log, env = job_workspace(args.work_dir, "day-n", CONTRACTS_DIR)  # validation on, the default heap
    started_at = utc_now()
    load_start = [round(x, 2) for x in os.getloadavg()]
    print(f"[bench] work dir {work}; job output in {log}", file=sys.stderr, flush=True)
    days = [day_files(work / "days", repeat) for repeat in range(args.repeats)]
    rows: list[dict[str, Any]] = []

    def save(complete: bool) -> Path:
        ratios, targets = ratios_and_targets(rows)
        return write_result(args.result, {"complete": complete, "sizes": sizes, "repeats": args.repeats,
                                          "load_average_start": load_start,
                                          "load_average_end": [round(x, 2) for x in os.getloadavg()],
                                          "rows": rows, "runs": runs, "ratios": ratios, "targets": targets},
                            started_at=started_at)

    runs: list[dict[str, Any]] = []  # every run-all; ``rows`` holds each scenario's median run

    def measured(lake_rows: int, scenario: str, results: list[dict[str, Any]]) -> None:
        runs.extend({"lake_rows": lake_rows, "scenario": scenario, "repeat": i, **r} for i, r in enumerate(results))
        median = sorted(results, key=lambda r: r["wall_s"])[(len(results) - 1) // 2]
        rows.append({"lake_rows": lake_rows, "scenario": scenario, **median,
                     "wall_s_min": min(r["wall_s"] for r in results), "wall_s_max": max(r["wall_s"] for r in results),
                     "runs": len(results)})
        save(False)

    for scenario in SCENARIOS:  # the references: the same rows into an empty lake, a fresh lake each repeat
        results = []
        for repeat, files in enumerate(days):
            lake = work / f"empty-{scenario.replace(' ', '-')}-{repeat}"
            shutil.rmtree(lake, ignore_errors=True)
            land(lake, files[scenario], files[scenario].name)
            results.append(run_all(lake, env, log, f"empty lake + {scenario} ({repeat + 1}/{len(days)})"))
        measured(0, scenario, results)
    for size in sizes:
        lake = work / f"lake-{size}"
        shutil.rmtree(lake, ignore_errors=True)
        grown = write_wide_span_file(work / "files" / f"wide-{size}.csv", size, "csv")
        land(lake, grown, grown.name)
        measured(size, "build", [run_all(lake, env, log, f"lake of {size:,}: build")])
        by_scenario: dict[str, list[dict[str, Any]]] = {scenario: [] for scenario in SCENARIOS}
        for repeat, files in enumerate(days):
            for scenario in SCENARIOS:
                land(lake, files[scenario], files[scenario].name)
                by_scenario[scenario].append(run_all(lake, env, log, f"lake of {size:,} + {scenario} "
                                                                     f"({repeat + 1}/{len(days)})"))
        for scenario in SCENARIOS:
            measured(size, scenario, by_scenario[scenario])
    path = save(True)
    for target in json.loads(path.read_text())["targets"]:
        print(target["text"], file=sys.stderr)
    print(f"[bench] wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
