"""Run several ``python -m spark_jobs`` commands in ONE process, so they share one Spark JVM.

``python -m tests.spark_jobs.cli_steps STEPS.json`` reads a list of steps, each ``{"argv": [...], "env": {...}}``,
opens the lake's Spark session once (``session.session_for``, as the first command would, with the s3a
jars), then runs each step through ``spark_jobs.cli.main`` exactly as the command line does (a command finds
the running session and leaves it open) with the step's environment variables set (``None`` unsets one), and
prints a JSON list: per step its exit code, stdout and stderr. A step ``{"mark": NAME}`` records the UTC time
(to the second, with a second of nothing before and after it), which later arguments name as ``{mark:NAME}``
(``query --as-of``). A step ``{"put": FILE, "key": KEY}`` writes a local text file into the lake at ``KEY``
through the job's file system (SSE-KMS on s3a), as a producer that bypasses ``land``'s checks would. A scenario of many commands then costs one JVM
start instead of one per command (tests/README.md, "The time budget").
"""
from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import os
import sys
import time


def main(path: str) -> int:
    from spark_jobs import cli
    from spark_jobs.lake.config import resolve_lake
    from spark_jobs.runs.session import session_for

    spec = json.loads(open(path).read())
    lake = resolve_lake(tenant=spec.get("tenant", ""), lake_uri=spec.get("lake_uri", ""))
    spark, _ = session_for(lake, "tenantlake-cli-steps", small_inputs=True)
    results, marks = [], {}
    try:
        for step in spec["steps"]:
            if "put" in step:
                from spark_jobs.io import storage

                storage.write_text(spark, lake.path(step["key"]), open(step["put"]).read())
                results.append({"put": step["key"]})
                continue
            if "mark" in step:
                time.sleep(1.1)
                marks[step["mark"]] = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
                time.sleep(1.1)
                results.append({"mark": step["mark"], "time": marks[step["mark"]]})
                continue
            for name, value in (step.get("env") or {}).items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    argv = [_marked(arg, marks) for arg in step["argv"]]
                    code = cli.main(argv)
                except SystemExit as exc:  # argparse
                    code = exc.code if isinstance(exc.code, int) else 2
            results.append({"argv": step["argv"], "exit": code, "stdout": out.getvalue(), "stderr": err.getvalue()})
    finally:
        spark.stop()
    print(json.dumps(results))
    return 0


def _marked(arg: str, marks: dict[str, str]) -> str:
    for name, value in marks.items():
        arg = arg.replace(f"{{mark:{name}}}", value)
    return arg


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
