"""Validation overhead: the same silver job with and without Great Expectations, in one process and run.

    .venv/bin/python bench/validation_overhead.py --records 5000000   # the issue's target size
    .venv/bin/python bench/validation_overhead.py --records 200000    # quick

Generates IoT landing data (``spark_jobs datagen``) into a temporary local lake, runs bronze once, then
runs the silver job once to warm up, then ``--repeats`` times each with ``TENANTLAKE_VALIDATION=off`` and
``on`` in ABBA order (off,on,on,off,...) so drifting machine load favours neither, and prints the median
wall times, the overhead ratio and the validation's own time inside the job. Target: <= 10 %.
The "on" time includes suite building, the GX run, the quarantine summary and writing the report.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000, help="landing records (default: 200000)")
    parser.add_argument("--repeats", type=int, default=4, help="silver runs per mode (default: 4)")
    parser.add_argument("--bad-rate", type=float, default=0.005, help="injected bad records (default: 0.005)")
    args = parser.parse_args()

    from spark_jobs import cli
    from spark_jobs.runs.session import build_session

    work = Path(tempfile.mkdtemp(prefix="tenantlake-bench-dq-"))
    os.environ["TENANTLAKE_STATE_DIR"] = str(work / "state")
    lake = str(work / "lake")
    spark = build_session("tenantlake-bench-validation")
    quiet = ["--lake-uri", lake]
    started = time.perf_counter()
    assert cli.main(["datagen", "--dataset", "iot", "--records", str(args.records), "--batch-size", "5000",
                     "--bad-rate", str(args.bad_rate), *quiet]) == 0
    assert cli.main(["run", "--dataset", "iot", "--layer", "bronze", *quiet]) in (0, 5)
    print(f"setup (datagen + bronze): {time.perf_counter() - started:.1f}s", file=sys.stderr)
    os.environ["TENANTLAKE_VALIDATION"] = "off"  # warm-up run (JIT, page cache), not counted
    cli.main(["run", "--dataset", "iot", "--layer", "silver", *quiet])
    timings: dict[str, list[float]] = {"off": [], "on": []}
    for repeat in range(args.repeats):
        # off,on then on,off: a machine that speeds up or slows down over time favours neither mode
        for mode in (("off", "on") if repeat % 2 == 0 else ("on", "off")):
            os.environ["TENANTLAKE_VALIDATION"] = mode
            started = time.perf_counter()
            code = cli.main(["run", "--dataset", "iot", "--layer", "silver", *quiet])
            timings[mode].append(time.perf_counter() - started)
            print(f"silver validation={mode}: {timings[mode][-1]:.1f}s (exit {code})", file=sys.stderr)
    import json

    # The validation's own wall time inside each "on" run (suite, GX run, quarantine summary), from its report.
    summaries = sorted((work / "lake" / "reports" / "silver" / "iot").glob("*/summary.json"))
    inside = [json.loads(p.read_text())["validation_seconds"] for p in summaries]
    off, on = statistics.median(timings["off"]), statistics.median(timings["on"])
    pairs = [f"{100 * (b - a) / a:+.1f}%" for a, b in zip(timings["off"], timings["on"])]
    print(f"records={args.records} silver_without_validation={off:.1f}s silver_with_validation={on:.1f}s "
          f"overhead={100 * (on - off) / off:.1f}% (per pair: {', '.join(pairs)}) "
          f"validation_inside_job={statistics.median(inside):.1f}s "
          f"({100 * statistics.median(inside) / on:.1f}% of the job with validation)")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
