"""Driver JVM options for a local session: CPU seconds of the session's start and of bronze, silver and gold
on a small input, with each set of options, in turns.

    .venv/bin/python -m bench.jvm_options                                  # 2,000 records, 2 rounds
    .venv/bin/python -m bench.jvm_options --records 100000 --rounds 1      # a larger input

Each run is a fresh process: ``datagen`` of ``--records`` iot records (2% bad, 2% late) into a fresh lake
folder, a local session (``spark_jobs.runs.session.build_session``, 1g heap, ``TENANTLAKE_JIT=full`` so only the
options under test reach the driver's ``spark.driver.extraJavaOptions``), then bronze, silver and gold through
``run_layer`` with validation on. Per step it records the wall time and the CPU seconds of the driver JVM
(``/proc/<pid>/stat``) plus the Python process. The options run in turns (round 1: every option, then
round 2 ...), so a change of load falls on all of them alike; on a shared machine compare CPU seconds.

Writes ``bench/results/jvm-options.json`` and prints one line per run.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from bench.common import REPO_ROOT, utc_now, write_result

OPTIONS = ("", "-XX:TieredStopAtLevel=1")
RESULT_PREFIX = "JVM_OPTIONS_RESULT "
LAYERS = ("bronze", "silver", "gold")


def _worker(options: str, records: int) -> dict:
    os.environ["TENANTLAKE_JIT"] = "full"  # only the options under test
    work = tempfile.mkdtemp(prefix="bench-jvm-")
    os.environ["TENANTLAKE_STATE_DIR"] = os.path.join(work, "state")
    from spark_jobs import cli
    from spark_jobs.jobs.layer import run_layer
    from spark_jobs.lake.config import LakeConfig
    from spark_jobs.runs.session import build_session

    lake = LakeConfig(lake_uri=os.path.join(work, "lake"))
    assert cli.main(["datagen", "--dataset", "iot", "--records", str(records), "--bad-rate", "0.02",
                     "--late-rate", "0.02", "--lake-uri", lake.lake_uri]) == 0
    started, python_cpu = time.perf_counter(), time.process_time()
    spark = build_session("bench-jvm-options", driver_memory="1g",
                          extra_conf={"spark.driver.extraJavaOptions": options} if options else None)
    jvm_pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    ticks = os.sysconf("SC_CLK_TCK")

    def cpu() -> float:
        fields = open(f"/proc/{jvm_pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks + time.process_time() - python_cpu

    steps = {"session": {"wall_s": round(time.perf_counter() - started, 2), "cpu_s": round(cpu(), 2)}}
    for layer in LAYERS:
        wall, used = time.perf_counter(), cpu()
        run_layer(spark, lake, "iot", layer, progress=lambda _: None)
        steps[layer] = {"wall_s": round(time.perf_counter() - wall, 2), "cpu_s": round(cpu() - used, 2)}
    arguments = [str(a) for a in spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
                 .getInputArguments()]
    result = {"options": options, "records": records, "steps": steps,
              "total": {"wall_s": round(time.perf_counter() - started, 2), "cpu_s": round(cpu(), 2)},
              "jvm_arguments": [a for a in arguments if a.startswith("-XX")], "load_after": os.getloadavg()[0]}
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.jvm_options", description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--options", action="append",
                        help='a set of driver JVM options, as --options="-XX:..." (repeat it; --options= for none); '
                             "default: none, and -XX:TieredStopAtLevel=1")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        print(RESULT_PREFIX + json.dumps(_worker(args.worker, args.records)), flush=True)
        return 0
    started_at, runs = utc_now(), []
    for round_no in range(1, args.rounds + 1):
        for options in args.options or OPTIONS:
            done = subprocess.run([sys.executable, "-m", "bench.jvm_options", "--records", str(args.records),
                                   f"--worker={options}"], cwd=REPO_ROOT, capture_output=True, text=True,
                                  timeout=3600, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
            line = next((x for x in done.stdout.splitlines() if x.startswith(RESULT_PREFIX)), None)
            if line is None:
                print(done.stderr[-3000:], file=sys.stderr)
                return 1
            run = {"round": round_no, **json.loads(line[len(RESULT_PREFIX):])}
            runs.append(run)
            print(f"round {round_no} {options or '(default)'}: CPU s " + ", ".join(
                f"{step} {v['cpu_s']}" for step, v in run["steps"].items()) + f", total {run['total']['cpu_s']} "
                f"(wall {run['total']['wall_s']} s, load {run['load_after']:.1f})", flush=True)
    path = write_result("jvm-options", {"config": {"records": args.records, "rounds": args.rounds}, "runs": runs},
                        started_at=started_at)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
