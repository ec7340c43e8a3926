"""Small-input benchmark: where each layer's time goes on 2,000 records, on s3a against the emulator.

    .venv/bin/python -m bench.small                                   # what `make bench-small` runs
    .venv/bin/python -m bench.small --repeats 1 --datasets iot        # a quick check (a few minutes)

A tenant with dozens of small daily datasets pays a layer's fixed cost every day, whatever the rows.
This benchmark measures that cost the way ``make demo`` pays it:

1. a dedicated emulator (moto over HTTPS, started and stopped by PID), a versioned bucket and a KMS key,
   as a tenant's lake has them (SSE-KMS on every write);
2. ``datagen`` of ``--records`` records per dataset (``--datasets``, default the demo's three), with the
   demo's 2% bad and 2% late records;
3. ``run-all`` in a process of its own, as ``python -m spark_jobs run-all`` runs it: one Spark session,
   bronze -> silver -> gold per dataset (gold told the dates silver replaced), then the counts table.
   Round 0 is the first run (bronze ingests every landing file); the ``--repeats`` rounds after it are
   re-runs on the same lake (bronze finds nothing new, silver and gold recompute everything), what a
   warm ``make demo`` or a daily schedule without new files does;
4. per layer, the time from the run's manifest (``spark_jobs.jobs.layer.run_layer`` returns it with every
   stage), broken down into steps (``STEPS``) with the Spark jobs and S3 requests of each step (every stage
   records both: ``spark_jobs/jobs/counters.py``);
5. checks: every round's silver rows, quarantined rows, duplicates and late rows equal what datagen
   says it generated, and every re-run's counts equal the first run's.

Writes ``bench/results/small.json`` and prints the table; ``bench/report.py`` renders it as bench/results/small.md.
Exit code: 0, or 1 when a check or a job failed (a missed target never fails the run).
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, interrupt, target_line, utc_now, write_result

DATASETS = ("iot", "clickstream", "inventory")  # the demo's (infra/local/demo.py)
RECORDS = 2000
BAD_RATE = 0.02
LATE_RATE = 0.02
REPEATS = 3  # re-runs after the first run; the table shows their median, min and max
TARGET_LAYER_S = 8.0  # silver and gold, each, beyond the session's start (issue: "Small inputs too")
BUCKET = "tenantlake-bench-small"
REGION = "eu-west-1"
RESULT_PREFIX = "BENCH_RESULT "
WORKER_TIMEOUT_S = 1800
LAYERS = ("bronze", "silver", "gold")

# Where a stage's time goes: (step, stage names or prefixes). A stage's seconds are its elapsed time since
# the previous stage of the same run (spark_jobs.jobs.runtime.JobRun.stage).
STEPS = (
    ("lease", ("lease taken", "lease released")),
    ("listing", ("start", "removed leftovers", "inputs listed", "silver located", "no new landing files",
                 "landing reconciled")),
    ("read + transform", ("read + parsed", "deduped + split", "silver read", "built ")),
    ("bronze batches", ("batch ",)),
    ("validation (GX)", ("validated", "validated ")),
    ("Iceberg commit", ("committed silver", "published ", "evolved ")),
    ("quarantine write", ("quarantine written",)),
    ("read-back", ("published",)),
    ("manifest + report", ("done",)),
)
STEP_NAMES = tuple(name for name, _ in STEPS) + ("other",)


def step_of(stage: str) -> str:
    """The step a stage's time belongs to (``STEPS``): exact names first, then prefixes."""
    for name, stages in STEPS:
        if stage in stages:
            return name
    for name, stages in STEPS:
        if any(prefix.endswith(" ") and stage.startswith(prefix) for prefix in stages):
            return name
    return "other"


def breakdown(manifest: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per step: seconds, Spark jobs and S3 requests, summed over the run's stages (in order)."""
    steps: dict[str, dict[str, float]] = {}
    previous = 0.0
    for stage in manifest.get("stages") or []:
        elapsed = float(stage.get("elapsed_seconds") or 0.0)
        step = steps.setdefault(step_of(stage["stage"]), {"seconds": 0.0, "spark_jobs": 0, "s3_requests": 0})
        step["seconds"] = round(step["seconds"] + max(elapsed - previous, 0.0), 2)
        step["spark_jobs"] += int(stage.get("spark_jobs") or 0)
        step["s3_requests"] += int(stage.get("s3_requests") or 0)
        previous = max(previous, elapsed)
    return steps


# ---------------------------------------------------------------------------- worker (one run-all, one process)
def _worker(spec: dict[str, Any]) -> dict[str, Any]:
    """``run-all`` as the CLI runs it, timed: the session start, each layer (its manifest), the counts table."""
    from spark_jobs.jobs.layer import run_layer
    from spark_jobs.jobs.report import layer_counts
    from spark_jobs.lake.config import resolve_lake
    from spark_jobs.runs.session import session_for

    lake = resolve_lake(lake_config=spec["lake_config"])
    cpu = CpuSeconds(spec.get("emulator_pid"))
    started = time.perf_counter()
    try:  # sized as `python -m spark_jobs run-all` sizes its session (the listing is part of the session start)
        from spark_jobs.runs.session import reads_small_inputs
    except ImportError:  # a checkout from before sessions were sized there (a baseline): a default session
        small = None
        spark, _ = session_for(lake, "bench-small")
    else:
        small = reads_small_inputs(lake, [(dataset, layer) for dataset in spec["datasets"] for layer in LAYERS])
        spark, _ = session_for(lake, "bench-small", small_inputs=small)
    session_s, session_cpu = time.perf_counter() - started, cpu.step()
    layers = []
    # Every round does the same work: silver and gold recompute every row (--full), as before issue 53, when a
    # re-run recomputed them from the whole input; a baseline checkout without ``full`` does so anyway.
    full = {"full": True} if "full" in inspect.signature(run_layer).parameters else {}
    for dataset in spec["datasets"]:
        dates = None
        for layer in LAYERS:
            layer_started = time.perf_counter()
            manifest = run_layer(spark, lake, dataset, layer, dates=dates, **(full if layer != "bronze" else {}))
            wall = time.perf_counter() - layer_started
            if layer == "silver":
                dates = list(manifest.get("event_dates") or [])
            layers.append({"dataset": dataset, "layer": layer, "wall_s": round(wall, 2), **cpu.step(),
                           **{key: manifest.get(key) for key in ("rows_in", "rows_out", "quarantined", "duplicates",
                                                                  "late", "output_rows", "stages")}})
    counts_started = time.perf_counter()
    counts = layer_counts(spark, lake, spec["datasets"])
    counts_s, counts_cpu = time.perf_counter() - counts_started, cpu.step()
    spark.stop()
    return {"session_s": round(session_s, 2), "session_cpu": session_cpu, "small_inputs": small, "layers": layers,
            "counts_s": round(counts_s, 2), "counts_cpu": counts_cpu,
            "counts": [{k: row[k] for k in ("dataset", "layer", "rows")} for row in counts],
            "run_all_s": round(time.perf_counter() - started, 2)}


class CpuSeconds:
    """CPU seconds used since the previous ``step()`` by this process with its children (the driver's JVM)
    and by the emulator: figures a loaded machine inflates far less than wall time."""

    def __init__(self, emulator_pid: int | None):
        import psutil

        self._me = psutil.Process()
        self._emulator = psutil.Process(emulator_pid) if emulator_pid else None
        self._last = self._read()

    def _read(self) -> tuple[float, float]:
        import psutil

        own = 0.0
        for process in [self._me] + self._me.children(recursive=True):
            try:
                times = process.cpu_times()
                own += times.user + times.system
            except psutil.Error:
                continue
        emulator = 0.0
        if self._emulator is not None:
            try:
                times = self._emulator.cpu_times()
                emulator = times.user + times.system
            except psutil.Error:
                pass
        return own, emulator

    def step(self) -> dict[str, float]:
        now = self._read()
        spent = {"cpu_s": round(now[0] - self._last[0], 2), "emulator_cpu_s": round(now[1] - self._last[1], 2)}
        self._last = now
        return spent


def worker_main(spec_json: str) -> int:
    print(RESULT_PREFIX + json.dumps(_worker(json.loads(spec_json)), default=str), flush=True)
    return 0


# ---------------------------------------------------------------------------- orchestration
def start_lake(work: Path) -> tuple[dict[str, str], Path]:
    """A dedicated emulator, a versioned bucket and a KMS key (a tenant lake's settings that change the
    request count: versioning, SSE-KMS); returns (env for the CLI and the worker, lake.json)."""
    from bench.common import dedicated_emulator
    from infra.local.s3a_jars import ensure_jars

    dedicated = dedicated_emulator(work / "emulator", REGION, "tenantlake bench-small lake key")
    state, aws, s3, key_arn = dedicated.state, dedicated.aws, dedicated.s3, dedicated.key_arn
    aws["TENANTLAKE_BENCH_EMULATOR_PID"] = str(state.pid)
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    lake_json = work / "lake.json"
    lake_json.write_text(json.dumps({
        "tenant_id": "bench-small", "region": REGION, "lake_bucket_name": BUCKET, "kms_key_arn": key_arn,
        "s3_endpoint": state.endpoint, "ca_bundle": state.ca_bundle, "truststore": state.truststore,
    }))
    env = {**os.environ, **aws, "AWS_DEFAULT_REGION": REGION, "SPARK_LOCAL_IP": "127.0.0.1",
           "TENANTLAKE_STATE_DIR": str(work / "state"), "PYTHONPATH": str(REPO_ROOT),
           "TENANTLAKE_SPARK_JARS": ",".join(str(j) for j in ensure_jars())}
    env.pop("TENANTLAKE_VALIDATION", None)
    return env, lake_json


TRUTH_LINE = re.compile(r"\((\d+) valid, (\d+) bad.*?; (\d+) duplicates; (\d+) late\)")


def generate(env: dict[str, str], lake_json: Path, dataset: str, records: int) -> dict[str, int]:
    """datagen into the lake; returns what it says it generated (valid, bad, duplicates, late)."""
    cmd = [sys.executable, "-m", "spark_jobs", "datagen", "--lake-config", str(lake_json), "--dataset", dataset,
           "--records", str(records), "--bad-rate", str(BAD_RATE), "--late-rate", str(LATE_RATE)]
    done = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1800)
    match = TRUTH_LINE.search(done.stdout)
    if done.returncode != 0 or not match:
        raise RuntimeError(f"datagen {dataset}: exit {done.returncode}: {(done.stderr or done.stdout).strip()[-300:]}")
    print(f"[bench.small] {done.stdout.strip()}", file=sys.stderr, flush=True)
    return dict(zip(("valid", "bad", "duplicates", "late"), map(int, match.groups())))


def run_round(env: dict[str, str], lake_json: Path, datasets: list[str], log: Path) -> dict[str, Any]:
    spec = {"lake_config": str(lake_json), "datasets": datasets,
            "emulator_pid": int(env.get("TENANTLAKE_BENCH_EMULATOR_PID") or 0) or None}
    load_before = [round(x, 2) for x in os.getloadavg()]
    started = time.perf_counter()
    with open(log, "a") as stderr:
        stderr.write(f"\n===== {utc_now()} run-all {','.join(datasets)}\n")
        stderr.flush()
        done = subprocess.run([sys.executable, "-m", "bench.small", "_worker", json.dumps(spec)], cwd=REPO_ROOT,
                              env=env, stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=WORKER_TIMEOUT_S)
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"run-all worker exited {done.returncode}; see {log}")
    result = json.loads(lines[-1][len(RESULT_PREFIX):])
    result.update({"process_s": round(time.perf_counter() - started, 1), "load_before": load_before,
                   "load_after": [round(x, 2) for x in os.getloadavg()]})
    return result


def layer_rows(rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (run kind, dataset, layer): ``first`` (round 0) and ``rerun`` (the median of the others),
    each step's seconds, and the layer's Spark jobs and S3 requests."""
    rows = []
    kinds = [("first", rounds[:1]), ("rerun", rounds[1:])]
    for kind, measured in kinds:
        if not measured:
            continue
        for index, first_layer in enumerate(measured[0]["layers"]):
            runs = [r["layers"][index] for r in measured]
            walls = sorted(run["wall_s"] for run in runs)
            median_run = min(runs, key=lambda run: abs(run["wall_s"] - statistics.median(walls)))
            steps = breakdown(median_run)
            row = {"run": kind, "dataset": first_layer["dataset"], "layer": first_layer["layer"],
                   "wall_s": round(statistics.median(walls), 2), "wall_s_min": walls[0], "wall_s_max": walls[-1],
                   "runs": len(runs), "rows_in": median_run["rows_in"], "rows_out": median_run["rows_out"],
                   "cpu_s": round(statistics.median(run.get("cpu_s", 0.0) for run in runs), 2),
                   "emulator_cpu_s": round(statistics.median(run.get("emulator_cpu_s", 0.0) for run in runs), 2),
                   "spark_jobs": sum(int(s["spark_jobs"]) for s in steps.values()),
                   "s3_requests": sum(int(s["s3_requests"]) for s in steps.values()), "steps": steps}
            row.update({f"step_{name}": steps[name]["seconds"] for name in STEP_NAMES if name in steps})
            rows.append(row)
    return rows


def run_rows(rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per round: the session start, the layers, the counts table and the whole run-all, with the load."""
    return [{"round": i, "run": "first" if i == 0 else "rerun", "session_s": r["session_s"],
             "session_cpu_s": (r.get("session_cpu") or {}).get("cpu_s"),
             "counts_cpu_s": (r.get("counts_cpu") or {}).get("cpu_s"),
             "layers_s": round(sum(layer["wall_s"] for layer in r["layers"]), 2), "counts_s": r["counts_s"],
             "small_inputs": r.get("small_inputs"), "run_all_s": r["run_all_s"], "process_s": r["process_s"],
             "load": f"{r['load_before'][0]} -> {r['load_after'][0]}"} for i, r in enumerate(rounds)]


def checks_of(rounds: list[dict[str, Any]], truth: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    checks = []
    for i, r in enumerate(rounds):
        for layer in r["layers"]:
            if layer["layer"] != "silver":
                continue
            expected = truth[layer["dataset"]]
            ours = {"rows_out": layer["rows_out"], "quarantined": layer["quarantined"],
                    "duplicates": layer["duplicates"], "late": layer["late"]}
            wanted = {"rows_out": expected["valid"], "quarantined": expected["bad"],
                      "duplicates": expected["duplicates"], "late": expected["late"]}
            checks.append({"check": f"round {i} silver {layer['dataset']} equals datagen's truth", "ours": ours,
                           "truth": wanted, "equal": ours == wanted})
        if i:
            def published(layers: list[dict[str, Any]]) -> list[tuple]:
                return [(a["dataset"], a["layer"], a["rows_out"], a.get("output_rows")) for a in layers
                        if a["layer"] != "bronze"]

            same = published(r["layers"]) == published(rounds[0]["layers"])
            checks.append({"check": f"round {i} silver and gold rows equal the first run's", "equal": same})
            checks.append({"check": f"round {i} counts table equals the first run's", "equal": r["counts"] == rounds[0]["counts"]})
    return checks


def targets_of(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [target_line(f"{row['run']} {row['dataset']} {row['layer']} (session start excluded)", row["wall_s"],
                        TARGET_LAYER_S, higher_is_better=False, unit=" s")
            for row in rows if row["layer"] in ("silver", "gold")]


def format_table(rows: list[dict[str, Any]], runs: list[dict[str, Any]], targets: list[dict[str, Any]],
                 checks: list[dict[str, Any]]) -> str:
    shown = [name for name in STEP_NAMES if any(f"step_{name}" in row for row in rows)]
    header = f"{'run':<6} {'dataset':<12} {'layer':<7} {'wall s':>7} " + " ".join(f"{name[:14]:>14}" for name in shown) \
        + f" {'jobs':>5} {'S3 req':>6} {'CPU s':>6} {'emu CPU':>7}"
    lines = [header, "-" * len(header)]
    for row in rows:
        cells = " ".join(f"{row.get(f'step_{name}', 0.0):>14.2f}" for name in shown)
        lines.append(f"{row['run']:<6} {row['dataset']:<12} {row['layer']:<7} {row['wall_s']:>7.2f} {cells} "
                     f"{row['spark_jobs']:>5} {row['s3_requests']:>6} {row['cpu_s']:>6.1f} {row['emulator_cpu_s']:>7.1f}")
    lines += ["", f"{'round':>5} {'run':<6} {'session s':>9} {'layers s':>9} {'counts s':>9} {'run-all s':>9}  load"]
    lines += [f"{r['round']:>5} {r['run']:<6} {r['session_s']:>9.2f} {r['layers_s']:>9.2f} {r['counts_s']:>9.2f} "
              f"{r['run_all_s']:>9.2f}  {r['load']}" for r in runs]
    lines += ["", "Targets (a report, not a test):"] + [f"  {t['text']}" for t in targets]
    failed = [c for c in checks if not c["equal"]]
    lines += ["", f"Checks: {len(checks) - len(failed)}/{len(checks)} equal"]
    lines += [f"  NOT EQUAL: {c['check']}: {c.get('ours')} vs {c.get('truth')}" for c in failed]
    return "\n".join(lines)


NOTES = [
    "wall s = the layer inside run-all (spark_jobs.jobs.layer.run_layer, the lease included), the session start "
    "excluded (it is per run-all, in the runs table); first = round 0 (bronze ingests every landing file), "
    "rerun = the median of the re-runs on the same lake (bronze finds nothing new; silver and gold recompute).",
    "Steps come from the stages each run records in its manifest (elapsed seconds, Spark jobs and S3 requests "
    "since the previous stage; bench/small.py STEPS names which stage is which step). The step columns are "
    "those of the run whose wall time is the median. S3 requests are the s3a client's own counts (HEAD, GET, "
    "LIST, PUT, COPY, DELETE) for the lake's bucket.",
    "CPU s = CPU seconds of the run-all process and its JVM during the layer; emu CPU = the emulator's (every "
    "S3 request is Python work there). On a shared machine these move far less than wall time: compare them "
    "when the load average differs between runs.",
    "A dedicated emulator (moto over HTTPS) with a versioned bucket and SSE-KMS, as a tenant's lake; datagen with "
    "the demo's 2% bad and 2% late records; every round is a fresh process (one Spark session), as "
    "`python -m spark_jobs run-all` is.",
]


def _parse_datasets(text: str) -> list[str]:
    datasets = [d for d in text.split(",") if d]
    unknown = sorted(set(datasets) - set(DATASETS))
    if not datasets or unknown:
        raise argparse.ArgumentTypeError(f"datasets: a comma-separated subset of {', '.join(DATASETS)}")
    return datasets


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.small", description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=_parse_datasets, default=list(DATASETS),
                        help=f"default: {','.join(DATASETS)} (the demo's)")
    parser.add_argument("--records", type=int, default=RECORDS, help=f"records per dataset (default: {RECORDS})")
    parser.add_argument("--repeats", type=int, default=REPEATS,
                        help=f"re-runs after the first run; the table shows their median (default: {REPEATS})")
    parser.add_argument("--work-dir", default="", help="scratch folder (default: a temporary one, removed at the end)")
    parser.add_argument("--result", default="small", help="result name: bench/results/<name>.json (default: small)")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_worker"]:
        return worker_main(argv[1])
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, interrupt)  # `kill <pid>`: stop the emulator, keep what was measured
    from infra.local import emulator

    started_at, started = utc_now(), time.perf_counter()
    load_start = [round(x, 2) for x in os.getloadavg()]
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="tenantlake-bench-small-"))
    work.mkdir(parents=True, exist_ok=True)
    log = work / "run-all.log"
    print(f"[bench.small] work dir {work}; run-all output in {log}", file=sys.stderr, flush=True)
    rounds: list[dict[str, Any]] = []
    truth: dict[str, dict[str, int]] = {}
    failures: list[str] = []
    try:
        env, lake_json = start_lake(work)
        for dataset in args.datasets:
            truth[dataset] = generate(env, lake_json, dataset, args.records)
        for index in range(1 + max(args.repeats, 0)):
            print(f"[bench.small] round {index} ({'first run' if index == 0 else 're-run'}) ...",
                  file=sys.stderr, flush=True)
            rounds.append(run_round(env, lake_json, args.datasets, log))
            layers = " ".join(f"{layer['layer']} {layer['dataset']} {layer['wall_s']}s" for layer in rounds[-1]["layers"])
            print(f"[bench.small] round {index}: session {rounds[-1]['session_s']}s, {layers}", file=sys.stderr, flush=True)
    except (RuntimeError, KeyboardInterrupt, subprocess.TimeoutExpired) as exc:
        failures.append(str(exc) or "interrupted")
        print(f"bench.small: {exc or 'interrupted'}", file=sys.stderr)
    finally:
        emulator.stop(work / "emulator")
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    rows, runs = layer_rows(rounds), run_rows(rounds)
    checks, targets = checks_of(rounds, truth) if rounds else [], targets_of(rows)
    load_end = [round(x, 2) for x in os.getloadavg()]
    duration = time.perf_counter() - started
    payload = {"complete": not failures and len(rounds) == 1 + max(args.repeats, 0),
               "config": {"datasets": args.datasets, "records": args.records, "repeats": args.repeats,
                          "bad_rate": BAD_RATE, "late_rate": LATE_RATE},
               "duration_s": round(duration, 1), "load_average_start": load_start, "load_average_end": load_end,
               "rows": rows, "runs": runs, "targets": targets, "checks": checks, "truth": truth,
               "all_equal": bool(checks) and all(c["equal"] for c in checks), "failures": failures,
               "notes": NOTES + [f"whole benchmark: {duration / 60:.1f} min; load average {load_start} at the start, "
                                 f"{load_end} at the end (2 cores, shared)"]}
    path = write_result(args.result, payload, started_at=started_at)
    print(format_table(rows, runs, targets, checks))
    print(f"\nbench.small: {len(rounds)} run-all rounds in {duration / 60:.1f} min -> {path.relative_to(REPO_ROOT)}")
    return 1 if failures or not payload["all_equal"] else 0


if __name__ == "__main__":
    sys.exit(main())
