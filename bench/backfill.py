"""Backfill benchmark: a year of daily partitions through ``run-all`` on s3a against the emulator, this
checkout's code against a baseline git ref (default ``main``), in ONE run on the same machine.

    .venv/bin/python -m bench.backfill                                  # 365 days x 70 rows, baseline main
    .venv/bin/python -m bench.backfill --days 30 --baseline-ref ""      # a quick run, this checkout only
    .venv/bin/python -m bench.backfill --baseline-ref "" --month        # this checkout, by day and by month

What one run does:

1. the project's generator writes ``--days`` landing files of ``--rows-per-day`` iot records, one file
   per day from 2024-01-01 (``--interval 86400``, the demo's 2 % bad and 2 % late records, seed 42);
2. a dedicated emulator (moto over HTTPS, started and stopped by PID) gets one bucket and KMS key per
   variant, and the same landing files are uploaded to each;
3. the baseline's code is exported with ``git archive <ref>`` (nothing in the repository changes) and
   each variant runs ``python -m spark_jobs run-all --dataset iot --allow-warn`` from its own source
   tree, in its own process (validation on, as a user runs it), one variant after the other;
4. per variant: the wall time of the whole command, each layer's own time (its manifest's
   ``duration_seconds``) and the publish part of silver and gold (from the layer's progress lines:
   from "deduped + split" / "built ..." to "published"; validation runs in that span for both);
   With ``--month`` a variant ``month`` runs this checkout's code again with the iot contract's
   ``partition_granularity: month`` (a contract copy in ``$TENANTLAKE_CONTRACTS_DIR``): 12 partitions
   instead of 365 for silver, gold and the quarantine;
5. checks: every variant counts the same rows per layer as the first, and silver and gold hold the same content
   (DuckDB over the baseline's Parquet folders and over the tables' current snapshots).

Writes ``bench/results/backfill.json`` (machine, commits, load average before and after each variant,
rows, ratios, checks). Exit 1 when a run or a check fails.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, RESULTS_DIR, target_line, utc_now, write_result

DATASET = "iot"
START = "2024-01-01T00:00:00Z"
REGION = "eu-west-1"
RUN_TIMEOUT_S = 4 * 3600
LAYER_LINE = re.compile(r"^(bronze|silver|gold) iot: rows_in=(\d+) rows_out=(\d+) quarantined=(\d+) duplicates=(\d+) "
                        r"late=(\d+)(?: mode=\w+)? \(([\d.]+)s\)")
PROGRESS_LINE = re.compile(r"^\[(bronze|silver|gold) iot\] (.+?)\s{2,}.*\(([\d.]+)s\)$")
PUBLISH_SPANS = {"silver": ("deduped + split", "published"), "gold": ("built iot_hourly", "published iot_hourly")}


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def export_ref(ref: str, target: Path) -> str:
    """``git archive`` of ``ref`` into ``target``; returns the commit id (read-only on the repository)."""
    commit = subprocess.run(["git", "rev-parse", ref], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
                            check=True).stdout.strip()
    target.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", "--format=tar", commit], cwd=REPO_ROOT, capture_output=True,
                             timeout=300, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True, timeout=300)
    return commit


def generate(work: Path, days: int, rows_per_day: int) -> Path:
    lake = work / "generated"
    cmd = [sys.executable, "-m", "spark_jobs", "datagen", "--dataset", DATASET, "--records", str(days * rows_per_day),
           "--batch-size", str(rows_per_day), "--interval", "86400", "--start", START, "--bad-rate", "0.02",
           "--late-rate", "0.02", "--seed", "42", "--lake-uri", str(lake)]
    done = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"bench.backfill: datagen failed: {done.stderr.strip().splitlines()[-1:]}")
    print(f"[backfill] {done.stdout.strip()}", file=sys.stderr, flush=True)
    return lake / "landing" / DATASET


def provision(work: Path, variants: list[str], landing: Path):
    """A dedicated emulator, a key, and one bucket per variant holding the landing files; returns
    (emulator state dir, state, {variant: lake.json path})."""
    from bench.common import dedicated_emulator

    state_dir = work / "emulator"
    dedicated = dedicated_emulator(state_dir, REGION, "tenantlake backfill bench key")
    state, aws, s3, key_arn = dedicated.state, dedicated.aws, dedicated.s3, dedicated.key_arn
    configs = {}
    for variant in variants:
        bucket = f"tenantlake-backfill-{variant}"
        s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
        for path in sorted(landing.iterdir()):
            s3.put_object(Bucket=bucket, Key=f"landing/{DATASET}/{path.name}", Body=path.read_bytes(),
                          ServerSideEncryption="aws:kms", SSEKMSKeyId=key_arn)
        config = work / f"lake-{variant}.json"
        config.write_text(json.dumps({"tenant_id": f"backfill-{variant}", "region": REGION, "lake_bucket_name": bucket,
                                      "kms_key_arn": key_arn, "s3_endpoint": state.endpoint,
                                      "ca_bundle": state.ca_bundle, "truststore": state.truststore}))
        configs[variant] = config
    return state_dir, state, {**aws, "AWS_DEFAULT_REGION": REGION}, configs


def month_contracts(work: Path) -> Path:
    """A contracts folder holding the iot contract with ``partition_granularity: month``."""
    import yaml

    from spark_jobs.contract.model import CONTRACTS_DIR

    folder = work / "contracts-month"
    folder.mkdir(parents=True, exist_ok=True)
    raw = yaml.safe_load((CONTRACTS_DIR / f"{DATASET}.yaml").read_text())
    raw["partition_granularity"] = "month"
    (folder / f"{DATASET}.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    return folder


def run_variant(variant: str, source: Path, lake_json: Path, env: dict[str, str], log: Path,
                contracts: Path | None = None) -> dict[str, Any]:
    """``run-all`` from ``source`` against the variant's bucket (with ``contracts`` as
    ``$TENANTLAKE_CONTRACTS_DIR`` when given); wall time, layer times, publish spans."""
    cmd = [sys.executable, "-m", "spark_jobs", "run-all", "--lake-config", str(lake_json), "--dataset", DATASET,
           "--allow-warn"]
    run_env = {**env, "PYTHONPATH": str(source), "TENANTLAKE_STATE_DIR": str(lake_json.parent / f"state-{variant}")}
    if contracts is not None:
        run_env["TENANTLAKE_CONTRACTS_DIR"] = str(contracts)
    load_before = _load()
    print(f"[backfill] {variant}: run-all from {source} (load {load_before}) ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=source, env=run_env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    wall = time.perf_counter() - started
    log.write_text(f"$ {' '.join(cmd)}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}")
    if done.returncode != 0:
        raise RuntimeError(f"{variant}: run-all exited {done.returncode}; see {log}")
    layers, stages = parse_run(done.stdout, done.stderr)
    result = {"variant": variant, "wall_s": round(wall, 1), "layers": layers, "stages": stages,
              "load_before": load_before, "load_after": _load()}
    print(f"[backfill] {variant}: {result['wall_s']}s; " + ", ".join(
        f"{k} {v['layer_s']}s" for k, v in layers.items()), file=sys.stderr, flush=True)
    return result


REQUEST_LINE = re.compile(r'"(GET|PUT|POST|HEAD|DELETE) /([^/?\s]+)/?([^\s?]*)(\?\S*)? HTTP')
LAKE_PREFIXES = ("landing", "bronze", "silver", "gold", "quarantine", "checkpoints", "reports", "athena", "artifacts")
TARGET_WALL_S = 90.0  # the target for the whole run-all of a year of daily partitions, on 2 cores


def count_requests(emulator_log: Path, bucket: str) -> dict[str, int]:
    """S3 requests the emulator logged for ``bucket``, by the lake prefix they touched (a listing by the
    prefix it lists; a multi-object delete, whose keys are in its body, as ``delete (batch)``)."""
    counts: dict[str, int] = {}
    for line in emulator_log.read_text(errors="replace").splitlines():
        match = REQUEST_LINE.search(line)
        if not match or match.group(2) != bucket:
            continue
        key, query = match.group(3), match.group(4) or ""
        listed = re.search(r"[?&]prefix=([^&/%]+)", query)
        top = (listed.group(1) if listed else key.split("/", 1)[0]) if (listed or key) else ""
        if "delete" in query and not key:
            top = "delete (batch)"
        elif top not in LAKE_PREFIXES:
            top = "other"
        counts[top] = counts.get(top, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def parse_run(stdout: str, stderr: str) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, float]]]:
    """From run-all's output: per layer its counts, ``layer_s`` and ``publish_s``; and every progress
    stage's elapsed seconds per layer."""
    layers: dict[str, dict[str, Any]] = {}
    for line in stdout.splitlines():
        match = LAYER_LINE.match(line)
        if match:
            layer, *counts, seconds = match.groups()
            layers[layer] = dict(zip(("rows_in", "rows_out", "quarantined", "duplicates", "late"), map(int, counts)))
            layers[layer]["layer_s"] = float(seconds)
    stages: dict[str, dict[str, float]] = {}
    for line in stderr.splitlines():
        match = PROGRESS_LINE.match(line.strip())
        if match:
            stages.setdefault(match.group(1), {})[match.group(2).strip()] = float(match.group(3))
    add_spans(layers, stages)
    return layers, stages


def add_spans(layers: dict[str, dict[str, Any]], stages: dict[str, dict[str, float]]) -> None:
    """``publish_s`` per layer; for a silver that commits a table (progress line "committed silver"), also
    ``table_commit_s`` (validation, table write and commit) and ``after_commit_s`` (the quarantine's
    Parquet write and the read-back)."""
    for layer, (begin, end) in PUBLISH_SPANS.items():
        marks = stages.get(layer, {})
        if layer in layers and begin in marks and end in marks:
            layers[layer]["publish_s"] = round(marks[end] - marks[begin], 1)
    silver = stages.get("silver", {})
    if "silver" in layers and {"deduped + split", "committed silver", "published"} <= set(silver):
        layers["silver"]["table_commit_s"] = round(silver["committed silver"] - silver["deduped + split"], 1)
        layers["silver"]["after_commit_s"] = round(silver["published"] - silver["committed silver"], 1)


def _download(env: dict[str, str], lake_json: Path, prefix: str, dest: Path) -> Path:
    import boto3

    config = json.loads(lake_json.read_text())
    s3 = boto3.client("s3", region_name=REGION, endpoint_url=config["s3_endpoint"], verify=config["ca_bundle"],
                      aws_access_key_id=env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"])
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=config["lake_bucket_name"], Prefix=prefix):
        for obj in page.get("Contents", []):
            target = dest / obj["Key"]
            target.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(config["lake_bucket_name"], obj["Key"], str(target))
    return dest


def fingerprint(root: Path) -> dict[str, Any]:
    """Order-independent fingerprints of a downloaded lake's silver and gold iot_hourly (DuckDB: the
    baseline's Parquet folders, or the tables' current snapshots)."""
    from bench import duckdb_reference as ref
    from spark_jobs.contract.model import load_contract

    con = ref.connect()
    gold = next(p for p in (root / "gold" / "iot_hourly", root / "gold" / DATASET / "iot_hourly") if p.is_dir())
    hourly = con.execute(f"SELECT count(*), sum(reading_count), sum(hash(sensor_id, CAST(event_hour AS TIMESTAMP), "
                         f"reading_count, temperature_min, temperature_max, battery_min) % 1000000007) "
                         f"FROM {ref._relation(gold)}").fetchone()
    return {"silver_checksum": ref.silver_checksum(con, load_contract(DATASET), root / "silver" / DATASET),
            "gold_iot_hourly": [int(v) for v in hourly]}


def compare_fingerprints(fingerprints: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every variant's fingerprints against the first one's."""
    first = next(iter(fingerprints))
    return [{"check": f"{name}_{variant}_equals_{first}", variant: fingerprints[variant][name],
             first: fingerprints[first][name], "equal": fingerprints[variant][name] == fingerprints[first][name]}
            for variant in list(fingerprints)[1:] for name in ("silver_checksum", "gold_iot_hourly")]


def content_checks(env: dict[str, str], configs: dict[str, Path], work: Path) -> list[dict[str, Any]]:
    """Silver and gold of every variant against the first one: same rows (DuckDB, not Spark)."""
    return compare_fingerprints({variant: fingerprint(_download(env, lake_json, "", work / f"download-{variant}"))
                                 for variant, lake_json in configs.items()})


def count_checks(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every later variant counts the same rows per layer as the first."""
    checks = []
    for run in runs[1:]:
        for layer in ("bronze", "silver", "gold"):
            same = {k: v for k, v in run["layers"].get(layer, {}).items() if not k.endswith("_s")} == \
                {k: v for k, v in runs[0]["layers"].get(layer, {}).items() if not k.endswith("_s")}
            checks.append({"check": f"{layer}_counts_{run['variant']}_equals_{runs[0]['variant']}", "equal": same})
    return checks


def _label(variant: str, commits: dict[str, dict[str, str]]) -> str:
    code = commits.get(variant, {}).get("commit", "")[:12] or "this working tree"
    layout = {"baseline": "Parquet folders", "month": "Iceberg tables, month partitions"}.get(variant, "Iceberg tables")
    return f"{variant} ({code}: {layout})"


def summarize(rounds: list[dict[str, Any]], days: int, rows_per_day: int) -> dict[str, Any]:
    """The table rows and the ratios (Iceberg / baseline) of every round, and the notes. Each round
    names the commits it measured (a baseline ref such as main may move between rounds)."""
    rows, ratios = [], []
    for number, round_ in enumerate(rounds, start=1):
        for run in round_["runs"]:
            label = _label(run["variant"], round_.get("commits", {}))
            rows.append({"round": number, "variant": label, "layer": "run-all (whole command)",
                         "wall_s": run["wall_s"],
                         "load": f"{run['load_before']} -> {run['load_after'] or 'not recorded'}"})
            for layer, figures in run["layers"].items():
                rows.append({"round": number, "variant": label, "layer": layer, "wall_s": figures["layer_s"],
                             "publish_s": figures.get("publish_s"), "table_commit_s": figures.get("table_commit_s"),
                             "after_commit_s": figures.get("after_commit_s"), "rows_in": figures["rows_in"],
                             "rows_out": figures["rows_out"]})
        by_variant = {run["variant"]: run for run in round_["runs"]}
        if {"baseline", "iceberg"} <= set(by_variant):
            base, ours = by_variant["baseline"], by_variant["iceberg"]
            ratios.append({"round": number, "order": round_["order"], "layer": "run-all: Iceberg / baseline",
                           "ours_over_baseline": round(ours["wall_s"] / base["wall_s"], 3)})
            for layer in ("bronze", "silver", "gold"):
                if layer in base["layers"] and layer in ours["layers"]:
                    ratio = {"round": number, "order": round_["order"],
                             "layer": f"{layer}: Iceberg / baseline" + (" (same code in both: the load control)"
                                                                        if layer == "bronze" else ""),
                             "ours_over_baseline": round(ours["layers"][layer]["layer_s"]
                                                         / base["layers"][layer]["layer_s"], 3)}
                    if base["layers"][layer].get("publish_s") and ours["layers"][layer].get("publish_s") is not None:
                        ratio["publish_ours_over_baseline"] = round(
                            ours["layers"][layer]["publish_s"] / base["layers"][layer]["publish_s"], 3)
                    ratios.append(ratio)
        if {"iceberg", "month"} <= set(by_variant):
            day, month = by_variant["iceberg"], by_variant["month"]
            ratios.append({"round": number, "order": round_["order"], "layer": "run-all: month / day partitions",
                           "ours_over_baseline": round(month["wall_s"] / day["wall_s"], 3)})
            for layer in ("silver", "gold"):
                if layer in day["layers"] and layer in month["layers"]:
                    ratios.append({"round": number, "order": round_["order"], "layer": f"{layer}: month / day partitions",
                                   "ours_over_baseline": round(month["layers"][layer]["layer_s"]
                                                               / day["layers"][layer]["layer_s"], 3)})
    requests, targets = [], []
    for number, round_ in enumerate(rounds, start=1):
        for run in round_["runs"]:
            label = _label(run["variant"], round_.get("commits", {}))
            for prefix, count in (run.get("s3_requests") or {}).items():
                requests.append({"round": number, "variant": label, "prefix": prefix, "requests": count,
                                 "per_partition": round(count / days, 1)})
            if run["variant"] in ("iceberg", "month"):
                targets.append(target_line(f"round {number}: run-all over {days} days of data ({label})",
                                           run["wall_s"], TARGET_WALL_S, higher_is_better=False, unit=" s"))
    notes = [f"{days} daily partitions x {rows_per_day} iot records (one landing file per day from "
             f"{START[:10]}, 2 % bad, 2 % late, seed 42), run-all --allow-warn with validation on, s3a against a "
             "dedicated emulator (HTTPS, SSE-KMS), one bucket per variant, the variants one after the other, "
             "in the order the round says; a day's file spans the whole day, so silver flags most records "
             "_is_late (more than 30 minutes older than the newest record of their file): same for both variants",
             "wall s of a layer = its manifest's duration_seconds; publish s = from 'deduped + split' (silver) or "
             "'built iot_hourly' (gold) to 'published': validation and the writes (for the tables also the commit "
             "and the read-back); silver's publish includes the quarantine, which stays partitioned Parquet "
             "(spark_jobs/README.md, Quarantine): table commit s = validation + the silver table's write and "
             "commit, after commit s = the quarantine's Parquet write + the read-back",
             "bronze runs the same code in both variants, so its ratio shows how much the machine's load "
             "differed between the two runs of a round (1.0 = same conditions)",
             "the machine is shared (2 cores): the load average before -> after each variant is in the table",
             "month (where a round has it): this checkout's code again, with the iot contract's "
             "partition_granularity: month (spark_jobs/README.md, Partition granularity): silver, gold and the "
             "quarantine in 12 month partitions instead of 365 daily ones; the same landing files, the same rows",
             *[f"round {n} ({r.get('started_at')} - {r.get('finished_at')}): {r['recorded']}"
               for n, r in enumerate(rounds, start=1) if r.get("recorded")]]
    if requests:
        notes.append("S3 requests: every request the emulator logged for the variant's bucket during its run, by the "
                     "lake prefix it touched (a listing counts for the prefix it lists; a multi-object delete as "
                     "'delete (batch)'), and per daily partition (requests / days)")
    return {"rows": rows, "ratios": ratios, "notes": notes, "requests": requests, "targets": targets}


def _commits(commits: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {k: (v if isinstance(v, dict) else {"commit": v}) for k, v in (commits or {}).items()}


def _rounds(result: dict[str, Any]) -> list[dict[str, Any]]:
    """A result's rounds (a result written before rounds existed holds one, baseline first)."""
    rounds = result.get("rounds") or [{
        "order": "baseline-first", "started_at": result.get("started_at"), "finished_at": result.get("finished_at"),
        "runs": result.get("runs", []), "checks": result.get("checks", [])}]
    for round_ in rounds:
        round_["commits"] = _commits(round_.get("commits") or result.get("commits"))
    return rounds


def _rewrite(path: Path, result: dict[str, Any], rounds: list[dict[str, Any]]) -> None:
    params = result.get("parameters") or {}
    for stale in ("runs", "checks", "commits"):
        result.pop(stale, None)
    result.update(rounds=rounds, checks=[c for r in rounds for c in r["checks"]],
                  finished_at=rounds[-1].get("finished_at") or result.get("finished_at"),
                  **summarize(rounds, params.get("days", 365), params.get("rows_per_day", 70)))
    path.write_text(json.dumps(result, indent=2) + "\n")


def rescore(path: Path) -> None:
    """Recompute spans, rows, ratios and notes of a result from its recorded runs (nothing is measured;
    machine, commits and timestamps stay as recorded)."""
    result = json.loads(path.read_text())
    rounds = _rounds(result)
    for round_ in rounds:
        for run in round_["runs"]:
            add_spans(run["layers"], run["stages"])
    _rewrite(path, result, rounds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.backfill", description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=365, help="daily partitions (default: 365)")
    parser.add_argument("--rows-per-day", type=int, default=70, help="records per day (default: 70)")
    parser.add_argument("--baseline-ref", default="main", help="git ref of the baseline code ('' for none; default: main)")
    parser.add_argument("--ours-ref", default="", help="git ref of the code to compare (default: this working tree); "
                        "a ref keeps the measured code fixed while the tree changes")
    parser.add_argument("--work-dir", default="", help="scratch folder (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--results-dir", default=str(RESULTS_DIR), help="where backfill.json goes (default: bench/results)")
    parser.add_argument("--order", choices=["baseline-first", "ours-first"], default="baseline-first",
                        help="which variant runs first (default: baseline-first)")
    parser.add_argument("--month", action="store_true",
                        help="also run this checkout with the contract's partition_granularity: month")
    parser.add_argument("--append-to", default="", help="add this run as another round to an existing result file")
    parser.add_argument("--rescore", default="", help="recompute a result file's table from its recorded runs, no run")
    args = parser.parse_args(argv)
    if args.rescore:
        rescore(Path(args.rescore))
        return 0

    from infra.local import emulator
    from infra.local.iceberg_jar import ensure_jar
    from infra.local.s3a_jars import ensure_jars

    started_at = utc_now()
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="tenantlake-backfill-"))
    work.mkdir(parents=True, exist_ok=True)
    sources = {"iceberg": REPO_ROOT}
    commits: dict[str, dict[str, str]] = {}  # {"commit": sha}: the secrets scan's digest-line exclusion
    if args.ours_ref:
        commits["iceberg"] = {"commit": export_ref(args.ours_ref, work / "ours-src")}
        sources = {"iceberg": work / "ours-src"}
    if args.baseline_ref:
        commits["baseline"] = {"commit": export_ref(args.baseline_ref, work / "baseline-src")}
        sources = {"baseline": work / "baseline-src", **sources}
        if args.order == "ours-first":
            sources = dict(reversed(list(sources.items())))
    contracts: dict[str, Path] = {}
    if args.month:
        sources["month"] = sources["iceberg"]
        if "iceberg" in commits:
            commits["month"] = commits["iceberg"]
        contracts["month"] = month_contracts(work)
    landing = generate(work, args.days, args.rows_per_day)
    state_dir, _, aws, configs = provision(work, list(sources), landing)
    env = {**os.environ, **aws, "SPARK_LOCAL_IP": "127.0.0.1",
           "TENANTLAKE_SPARK_JARS": ",".join(str(j) for j in ensure_jars()),
           "TENANTLAKE_ICEBERG_JAR": str(ensure_jar())}  # an exported tree has no .local/jars of its own
    env.pop("TENANTLAKE_VALIDATION", None)
    runs, checks, failures = [], [], []
    try:
        for variant, source in sources.items():
            try:
                runs.append(run_variant(variant, source, configs[variant], env, work / f"{variant}.log",
                                        contracts.get(variant)))
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                failures.append(str(exc))
        if not failures and len(runs) > 1:
            checks = content_checks(aws, configs, work)
    finally:
        emulator.stop(state_dir)
    log_file = state_dir / "emulator.log"
    for run in runs:  # each variant has its own bucket, so its requests are the lines naming that bucket
        bucket = json.loads(configs[run["variant"]].read_text())["lake_bucket_name"]
        requests = count_requests(log_file, bucket) if log_file.is_file() else {}
        run["s3_requests"] = requests
        run["s3_requests_per_partition"] = {prefix: round(n / args.days, 1) for prefix, n in requests.items()}
    checks += count_checks(runs)
    this_round = {"order": args.order if len(runs) > 1 else "one variant", "started_at": started_at,
                  "finished_at": utc_now(), "commits": commits, "runs": runs, "checks": checks}
    if args.append_to:
        path = Path(args.append_to)
        result = json.loads(path.read_text())
        _rewrite(path, result, [*_rounds(result), this_round])
        summary = json.loads(path.read_text())
    else:
        summary = summarize([this_round], args.days, args.rows_per_day)
        write_result("backfill", {"complete": not failures, "parameters": vars(args), **summary,
                                  "rounds": [this_round], "checks": checks, "failures": failures},
                     started_at=started_at, results_dir=Path(args.results_dir))
    print(json.dumps({"rows": summary["rows"], "ratios": summary["ratios"], "checks": checks, "failures": failures},
                     indent=1))
    if not args.keep and not args.work_dir:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures or not all(c["equal"] for c in checks) else 0


if __name__ == "__main__":
    sys.exit(main())
