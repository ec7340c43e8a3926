"""Pipeline benchmark: rows/s, wall time and peak RSS per layer, against DuckDB doing the same work.

    .venv/bin/python -m bench.pipeline --sizes 1000000,5000000            # what `make bench` runs
    .venv/bin/python -m bench.pipeline --sizes 50000 --s3a-size 50000     # a quick run (minutes)

For each dataset (``--datasets``, default iot and clickstream) and size, in ONE run:

1. datagen (the project's generator, ``--seed`` 42, the demo's 2% bad and 2% late records) into a
   fresh local lake under ``--work-dir``;
2. each layer job (landing -> bronze, bronze -> silver with quarantine, silver -> gold) in its own
   subprocess with a fresh Spark session, the process tree sampled for peak Python and JVM RSS;
   ``wall_s`` is the job alone (``spark_jobs.jobs.layer.run_layer``), the session start is ``session_s``;
3. variants of the same job: ``no_validation`` (``TENANTLAKE_VALIDATION=off``: no expectations),
   ``naive`` (Spark defaults: 200 shuffle partitions, the v1 file committer, and the JSON schema
   inferred from the records instead of the contract's), ``tuned`` last, so the outputs compared
   are the tuned job's;
4. DuckDB (``bench/duckdb_reference.py``) doing the same silver and gold work on the same bronze
   files; the run checks that silver, quarantine (per rule), duplicates, late rows and every gold
   value are equal, so a faster wrong answer cannot count;
5. the s3a row: the same layers at ``--s3a-size`` against a dedicated emulator (moto over HTTPS,
   SSE-KMS with a bucket key), started and stopped by this run; its counts must equal the local run's.

Writes ``bench/results/pipeline.json`` (machine, commit, load average at start and end, rows, ratios,
targets, checks) and prints the table; a result below its target is printed BELOW TARGET.
Exit code: 0, or 1 when an equality check failed or a job failed (targets never fail the run).
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, PeakRss, interrupt, kill_tree, target_line, utc_now, write_result

DATASETS = ("iot", "clickstream")
BAD_RATE = 0.02    # the demo's (infra/local/demo.py): quarantine and dedupe are exercised
LATE_RATE = 0.02
SEED = 42
BATCH_SIZE = 5000  # records per landing file: a producer rolling a file every 15 s of event time
MAX_FILES_PER_TRIGGER = 1000  # bronze backfill micro-batches (the CLI's default, 200, suits steady arrival)
NAIVE_SHUFFLE_PARTITIONS = 200  # Spark's default
TARGETS = {"silver_over_duckdb": 0.25, "gold_in_run_all_over_duckdb": 0.2, "pipeline_over_duckdb": 0.2,
           "validation_overhead": 0.10, "peak_rss_mb_5m": 3072}
REPEATS = 3  # runs per measured job: the table shows the median, the JSON also min, max and every run
RESULT_PREFIX = "BENCH_RESULT "


# ---------------------------------------------------------------------------- worker (one job, one process)
def parse_records_inferring_schema(bronze, contract, _parse):
    """``silver.parse_records`` as a naive job writes it: the JSON schema is inferred from every
    record (a full extra pass, Spark's default samplingRatio 1.0) instead of taken from the contract.
    Inferred fields are read back as text, so the contract's rules see the same values."""
    from pyspark.sql import DataFrame
    from pyspark.sql import types as T

    spark = bronze.sparkSession
    texts = getattr(bronze.select("_raw")._jdf, "as")(spark._jvm.org.apache.spark.sql.Encoders.STRING())
    inferred = DataFrame(spark.read._jreader.json(texts), spark).schema
    schema = T.StructType([f for f in inferred.fields if f.name != "_corrupt_record"])
    return _parse(bronze, contract, read_schema=schema)


def _spark_worker(spec: dict[str, Any]) -> dict[str, Any]:
    from spark_jobs.jobs.layer import run_layer
    from spark_jobs.lake.config import resolve_lake
    from spark_jobs.runs.session import session_for
    from spark_jobs.runs.session import build_session

    os.environ["TENANTLAKE_VALIDATION"] = "off" if spec["variant"] == "no_validation" else "on"
    lake = resolve_lake(lake_uri=spec.get("lake_uri", ""), lake_config=spec.get("lake_config", ""))
    started = time.perf_counter()
    if spec["variant"] == "naive":
        from spark_jobs.transforms import silver as silver_tx

        silver_tx.parse_records = functools.partial(parse_records_inferring_schema, _parse=silver_tx.parse_records)
        spark = build_session(f"bench-{spec['layer']}-naive", shuffle_partitions=NAIVE_SHUFFLE_PARTITIONS,
                              extra_conf={"spark.hadoop.mapreduce.fileoutputcommitter.algorithm.version": "1"})
    else:
        spark, _ = session_for(lake, f"bench-{spec['layer']}-{spec['variant']}")
    session_s = time.perf_counter() - started
    started = time.perf_counter()
    files = int(spec.get("max_files_per_trigger", MAX_FILES_PER_TRIGGER))
    if spec["layer"] == "run-all":
        return _run_all_worker(spark, lake, spec, files, session_s, started)
    # Each variant and repeat of silver and gold runs on the same lake: full, so each does the whole layer's work
    # (a run with nothing new since the last reads nothing: spark_jobs/README.md, "What a run reads and rewrites").
    manifest = run_layer(spark, lake, spec["dataset"], spec["layer"], max_files_per_trigger=files,
                         full=spec["layer"] != "bronze")
    wall = time.perf_counter() - started
    spark.stop()
    statuses: dict[str, Any] = {name: v.get("status") for name, v in (manifest.get("validation") or {}).items()}
    summary = Path(lake.report_dir(spec["layer"], spec["dataset"], manifest["run_id"])) / "summary.json"
    if not lake.is_object_store and summary.is_file():  # the validation's own time inside the job (GX + summary)
        statuses["validation_seconds"] = json.loads(summary.read_text()).get("validation_seconds")
    return {"wall_s": wall, "session_s": session_s, "rows_in": manifest["rows_in"], "rows_out": manifest["rows_out"],
            "quarantined": manifest.get("quarantined", 0), "duplicates": manifest.get("duplicates", 0),
            "late": manifest.get("late", 0), "output_rows": manifest.get("output_rows", {}),
            "batches": len(manifest.get("batches") or []), "validation": statuses, "run_id": manifest["run_id"]}


def _run_all_worker(spark, lake, spec: dict[str, Any], files: int, session_s: float, started: float) -> dict[str, Any]:
    """bronze -> silver -> gold of one dataset in ONE session, as ``run-all`` runs them (gold told the dates
    silver replaced); the fresh lake holds only the landing files."""
    from spark_jobs.jobs.layer import run_layer

    layers: dict[str, float] = {}
    manifests: dict[str, dict[str, Any]] = {}
    dates = None
    for layer in ("bronze", "silver", "gold"):
        layer_started = time.perf_counter()
        manifests[layer] = run_layer(spark, lake, spec["dataset"], layer, max_files_per_trigger=files,
                                     dates=dates if layer == "gold" else None)
        layers[layer] = round(time.perf_counter() - layer_started, 2)
        if layer == "silver":
            dates = list(manifests[layer].get("event_dates") or [])
    wall = time.perf_counter() - started
    spark.stop()
    return {"wall_s": wall, "session_s": session_s, "rows_in": manifests["bronze"]["rows_in"],
            "rows_out": manifests["gold"]["rows_out"], "layers_s": layers,
            "output_rows": manifests["gold"].get("output_rows", {}),
            "silver_rows": manifests["silver"]["rows_out"], "run_id": manifests["gold"]["run_id"]}


def _duckdb_worker(spec: dict[str, Any]) -> dict[str, Any]:
    from bench import duckdb_reference as ref
    from spark_jobs.contract.model import load_contract

    contract = load_contract(spec["dataset"])
    con = ref.connect()
    lake, out = Path(spec["lake_uri"]), Path(spec["reference_dir"])
    if spec["layer"] == "silver":
        return ref.run_silver(con, contract, lake / "bronze" / spec["dataset"], out)
    return ref.run_gold(con, contract, out / "silver", out)


def worker_main(spec_json: str) -> int:
    spec = json.loads(spec_json)
    result = _duckdb_worker(spec) if spec["variant"] == "duckdb" else _spark_worker(spec)
    print(RESULT_PREFIX + json.dumps(result, default=str), flush=True)
    return 0


# ---------------------------------------------------------------------------- orchestration
@dataclasses.dataclass
class Context:
    work: Path
    env: dict[str, str]
    log: Path
    failures: list[str] = dataclasses.field(default_factory=list)


WORKER_TIMEOUT_S = 7200  # one measured job (the 5M-event cases take minutes); then the worker tree is killed


class JobError(RuntimeError):
    pass


def run_measured(ctx: Context, spec: dict[str, Any], env: dict[str, str] | None = None) -> dict[str, Any]:
    """One worker subprocess; returns its result plus peak RSS of its process tree (Python root, JVM child)."""
    cmd = [sys.executable, "-m", "bench.pipeline", "_worker", json.dumps(spec)]
    label = f"{spec['dataset']} {spec['size']} {spec['storage']} {spec['layer']} {spec['variant']}"
    print(f"[bench] {label} ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    with open(ctx.log, "a") as log:
        log.write(f"\n===== {utc_now()} {label}\n")
        log.flush()
        proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env or ctx.env, stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            with PeakRss(pid=proc.pid) as rss:
                out, _ = proc.communicate(timeout=WORKER_TIMEOUT_S)
        except BaseException:  # interrupted: stop exactly this worker and its JVM, then re-raise
            kill_tree(proc.pid)
            raise
    process_s = time.perf_counter() - started
    lines = [line for line in out.splitlines() if line.startswith(RESULT_PREFIX)]
    if proc.returncode != 0 or not lines:
        raise JobError(f"{label}: worker exited {proc.returncode}; see {ctx.log}")
    result = json.loads(lines[-1][len(RESULT_PREFIX):])
    row = {key: spec[key] for key in ("dataset", "size", "storage", "layer", "variant")}
    row.update({
        "wall_s": round(result["wall_s"], 2), "rows_in": result["rows_in"], "rows_out": result["rows_out"],
        "rows_per_s": round(result["rows_in"] / result["wall_s"]) if result["wall_s"] > 0 else None,
        **rss.as_dict(), "process_s": round(process_s, 1),
    })
    for key in ("session_s", "quarantined", "duplicates", "late", "output_rows", "batches", "validation",
                "quarantine_by_rule", "layers_s", "silver_rows"):
        if key in result:
            row[key] = round(result[key], 2) if isinstance(result[key], float) else result[key]
    print(f"[bench] {label}: {row['wall_s']}s, {row['rows_per_s']} rows/s, peak python {row['peak_python_mb']} MB, "
          f"jvm {row['peak_jvm_mb']} MB", file=sys.stderr, flush=True)
    return row


def run_repeated(ctx: Context, spec: dict[str, Any], repeats: int, env: dict[str, str] | None = None,
                 before_each: Any = None) -> dict[str, Any]:
    """``repeats`` runs of the same job: the row holds the median wall time (rows/s from it), the min, the
    max and every run's time, and the highest peak RSS of any run (each run's in ``peak_total_mb_runs``); the other fields are the last run's
    (its outputs are the ones compared). ``before_each()`` prepares the input of each run."""
    runs = []
    for _ in range(max(1, repeats)):
        if before_each is not None:
            before_each()
        runs.append(run_measured(ctx, spec, env))
    row = dict(runs[-1])
    walls = sorted(r["wall_s"] for r in runs)
    row["wall_s"] = round(statistics.median(walls), 2)
    row.update({"wall_s_min": walls[0], "wall_s_max": walls[-1], "wall_s_runs": [r["wall_s"] for r in runs],
                "runs": len(runs),
                "rows_per_s": round(row["rows_in"] / row["wall_s"]) if row["wall_s"] > 0 else None})
    for key in ("peak_python_mb", "peak_jvm_mb", "peak_total_mb"):
        if key in row:
            row[key] = max(r.get(key, 0) for r in runs)
    if "peak_total_mb" in row:
        row["peak_total_mb_runs"] = [r.get("peak_total_mb", 0) for r in runs]
    if "layers_s" in row:
        row["layers_s"] = {layer: round(statistics.median(r["layers_s"][layer] for r in runs), 2)
                           for layer in row["layers_s"]}
    return row


def generate(ctx: Context, lake: Path, dataset: str, size: int, args: argparse.Namespace) -> float:
    cmd = [sys.executable, "-m", "spark_jobs", "datagen", "--dataset", dataset, "--records", str(size),
           "--batch-size", str(args.batch_size), "--bad-rate", str(args.bad_rate), "--late-rate", str(args.late_rate),
           "--seed", str(args.seed), "--lake-uri", str(lake)]
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO_ROOT, env=ctx.env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise JobError(f"datagen {dataset} {size}: {done.stderr.strip().splitlines()[-1:]}")
    print(f"[bench] {done.stdout.strip()}", file=sys.stderr, flush=True)
    return time.perf_counter() - started


def _same_counts(layer: str, tuned: dict[str, Any], other: dict[str, Any]) -> bool:
    keys = {"bronze": ("rows_in", "rows_out"), "silver": ("rows_in", "rows_out", "quarantined", "duplicates", "late"),
            "gold": ("rows_in", "rows_out", "output_rows")}[layer]
    return all(tuned.get(k) == other.get(k) for k in keys)


def bench_local(ctx: Context, dataset: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    """All local measurements of one dataset and size; returns rows, checks and setup times."""
    from bench import duckdb_reference as ref

    lake = ctx.work / f"local-{dataset}-{size}"
    reference_dir = ctx.work / f"duckdb-{dataset}-{size}"
    shutil.rmtree(lake, ignore_errors=True)
    shutil.rmtree(reference_dir, ignore_errors=True)
    datagen_s = generate(ctx, lake, dataset, size, args)
    base = {"dataset": dataset, "size": size, "storage": "local", "lake_uri": str(lake),
            "reference_dir": str(reference_dir), "max_files_per_trigger": args.max_files_per_trigger}
    variants = ["no_validation", "tuned"]
    if size in args.naive_sizes:
        variants.insert(0, "naive")
    rows: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    repeats = args.repeats

    def fresh_bronze() -> None:  # each bronze run starts from the landing files alone (no checkpoint, no bronze)
        for name in ("bronze", "checkpoints"):
            shutil.rmtree(lake / name, ignore_errors=True)

    rows.append(run_repeated(ctx, {**base, "layer": "bronze", "variant": "tuned"}, repeats, before_each=fresh_bronze))
    tuned: dict[str, dict[str, Any]] = {"bronze": rows[-1]}
    for layer in ("silver", "gold"):
        measured = {v: run_repeated(ctx, {**base, "layer": layer, "variant": v}, repeats if v != "naive" else 1)
                    for v in variants}
        tuned[layer] = measured["tuned"]
        rows += [measured[v] for v in variants]
        for variant, row in measured.items():
            if variant != "tuned":
                checks.append({"dataset": dataset, "size": size, "storage": "local", "check": f"{layer}_{variant}_counts",
                               "ours": {k: row.get(k) for k in ("rows_out", "quarantined", "output_rows")},
                               "tuned": {k: tuned[layer].get(k) for k in ("rows_out", "quarantined", "output_rows")},
                               "equal": _same_counts(layer, tuned[layer], row)})
    reference = {layer: run_repeated(ctx, {**base, "layer": layer, "variant": "duckdb"}, repeats)
                 for layer in ("silver", "gold")}
    rows += list(reference.values())
    run_all_lake = ctx.work / f"run-all-{dataset}-{size}"

    def fresh_run_all() -> None:  # a new lake with the same landing files: what a first run-all sees
        shutil.rmtree(run_all_lake, ignore_errors=True)
        shutil.copytree(lake / "landing", run_all_lake / "landing")

    run_all = run_repeated(ctx, {**base, "lake_uri": str(run_all_lake), "layer": "run-all", "variant": "tuned"},
                           repeats, before_each=fresh_run_all)
    rows.append(run_all)
    checks.append({"dataset": dataset, "size": size, "storage": "local", "check": "run_all_counts_equal_layers",
                   "ours": {"silver_rows": run_all.get("silver_rows"), "output_rows": run_all.get("output_rows")},
                   "tuned": {"silver_rows": tuned["silver"]["rows_out"], "output_rows": tuned["gold"].get("output_rows")},
                   "equal": run_all.get("silver_rows") == tuned["silver"]["rows_out"]
                   and run_all.get("output_rows") == tuned["gold"].get("output_rows")})
    shutil.rmtree(run_all_lake, ignore_errors=True)
    for check in ref.compare_all(dataset, lake, reference_dir, ours_manifest=tuned["silver"],
                                 reference_counts=reference["silver"]):
        checks.append({"dataset": dataset, "size": size, "storage": "local", **check})
    if not args.keep:
        shutil.rmtree(reference_dir, ignore_errors=True)
    return {"rows": rows, "checks": checks, "datagen_s": round(datagen_s, 1), "lake": lake}


# ---------------------------------------------------------------------------- s3a on the emulator
BUCKET = "tenantlake-bench-lake"
REGION = "eu-west-1"


def start_s3a(ctx: Context) -> tuple[Any, dict[str, str], Path]:
    """A dedicated emulator, a bucket and a KMS key; returns (state, env for workers, lake.json)."""
    from bench.common import dedicated_emulator
    from infra.local.s3a_jars import ensure_jars

    state_dir = ctx.work / "emulator"
    dedicated = dedicated_emulator(state_dir, REGION, "tenantlake bench lake key")
    state, aws, s3, key_arn = dedicated.state, dedicated.aws, dedicated.s3, dedicated.key_arn
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    lake_json = ctx.work / "s3a-lake.json"
    lake_json.write_text(json.dumps({
        "tenant_id": "bench", "region": REGION, "lake_bucket_name": BUCKET, "kms_key_arn": key_arn,
        "s3_endpoint": state.endpoint, "ca_bundle": state.ca_bundle, "truststore": state.truststore,
    }))
    env = {**ctx.env, **aws, "AWS_DEFAULT_REGION": REGION,
           "TENANTLAKE_SPARK_JARS": ",".join(str(j) for j in ensure_jars())}
    return state, env, lake_json


def upload_landing(env: dict[str, str], lake_json: Path, local_lake: Path, dataset: str) -> float:
    """Copy the local run's landing files (same generator, seed and size) into the bucket, SSE-KMS."""
    from concurrent.futures import ThreadPoolExecutor

    import boto3

    config = json.loads(lake_json.read_text())
    s3 = boto3.client("s3", region_name=REGION, endpoint_url=config["s3_endpoint"], verify=config["ca_bundle"],
                      aws_access_key_id=env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"])
    files = sorted((local_lake / "landing" / dataset).iterdir())
    started = time.perf_counter()

    def put(path: Path) -> None:
        s3.put_object(Bucket=BUCKET, Key=f"landing/{dataset}/{path.name}", Body=path.read_bytes(),
                      ServerSideEncryption="aws:kms", SSEKMSKeyId=config["kms_key_arn"])

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(put, files))
    return time.perf_counter() - started


def bench_s3a(ctx: Context, env: dict[str, str], lake_json: Path, dataset: str, size: int, local: dict[str, Any],
              args: argparse.Namespace) -> dict[str, Any]:
    upload_s = upload_landing(env, lake_json, local["lake"], dataset)
    base = {"dataset": dataset, "size": size, "storage": "s3a", "lake_config": str(lake_json), "variant": "tuned",
            "max_files_per_trigger": args.max_files_per_trigger}
    rows = [run_measured(ctx, {**base, "layer": layer}, env=env) for layer in ("bronze", "silver", "gold")]
    local_tuned = {r["layer"]: r for r in local["rows"] if r["variant"] == "tuned"}
    checks = [{"dataset": dataset, "size": size, "storage": "s3a", "check": f"{row['layer']}_counts_equal_local",
               "ours": {k: row.get(k) for k in ("rows_in", "rows_out", "quarantined", "output_rows")},
               "local": {k: local_tuned[row["layer"]].get(k) for k in ("rows_in", "rows_out", "quarantined", "output_rows")},
               "equal": _same_counts(row["layer"], local_tuned[row["layer"]], row)} for row in rows]
    return {"rows": rows, "checks": checks, "upload_s": round(upload_s, 1)}


# ---------------------------------------------------------------------------- ratios, targets, table
def _find(rows: list[dict[str, Any]], **match: Any) -> dict[str, Any] | None:
    return next((r for r in rows if all(r.get(k) == v for k, v in match.items())), None)


def compute_ratios(rows: list[dict[str, Any]], checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ratios = []
    for key in sorted({(r["dataset"], r["size"], r["storage"], r["layer"]) for r in rows},
                      key=lambda k: (k[0], k[1], k[2] != "local", LAYER_ORDER.index(k[3]))):
        dataset, size, storage, layer = key
        where = {"dataset": dataset, "size": size, "storage": storage, "layer": layer}
        tuned = _find(rows, **where, variant="tuned")
        if tuned is None:
            continue
        entry: dict[str, Any] = dict(where)
        if layer == "run-all":
            entry.update(_run_all_ratios(rows, tuned, dataset, size, storage))
            own = [c for c in checks if c.get("dataset") == dataset and c.get("size") == size
                   and c.get("storage") == storage and str(c.get("check", "")).startswith("run_all_")]
            if own:
                entry["equal"] = all(c["equal"] for c in own)
            ratios.append(entry)
            continue
        duck = _find(rows, **where, variant="duckdb")
        if duck and duck.get("rows_per_s"):
            entry["ours_over_duckdb"] = round(tuned["rows_per_s"] / duck["rows_per_s"], 3)
        naive = _find(rows, **where, variant="naive")
        if naive and naive.get("rows_per_s"):
            entry["tuned_over_naive"] = round(tuned["rows_per_s"] / naive["rows_per_s"], 3)
        off = _find(rows, **where, variant="no_validation")
        if off and off.get("wall_s"):
            entry["validation_overhead"] = round(tuned["wall_s"] / off["wall_s"] - 1, 3)
        inside = (tuned.get("validation") or {}).get("validation_seconds")
        if inside is not None and tuned.get("wall_s"):
            # The validation's own time inside the tuned job (from its summary.json): no run-to-run noise.
            entry["validation_share_of_job"] = round(inside / tuned["wall_s"], 3)
        relevant = [c for c in checks if c.get("dataset") == dataset and c.get("size") == size
                    and c.get("storage") == storage and str(c.get("check", "")).startswith(
                        ("gold_", "silver_", "quarantine_") if layer != "bronze" else ("bronze_",))]
        if layer == "gold":
            relevant = [c for c in relevant if c["check"].startswith("gold_")]
        elif layer == "silver":
            relevant = [c for c in relevant if not c["check"].startswith("gold_")]
        if relevant:
            entry["equal"] = all(c["equal"] for c in relevant)
        ratios.append(entry)
    return ratios


LAYER_ORDER = ["bronze", "silver", "gold", "run-all"]


def _run_all_ratios(rows: list[dict[str, Any]], run_all: dict[str, Any], dataset: str, size: int,
                    storage: str) -> dict[str, Any]:
    """Throughput ratios of ``run-all`` (same rows, so time ratios) against DuckDB's silver + gold."""
    where = {"dataset": dataset, "size": size, "storage": storage, "variant": "duckdb"}
    silver, gold = _find(rows, **where, layer="silver"), _find(rows, **where, layer="gold")
    layers = run_all.get("layers_s") or {}
    if not (silver and gold and layers.get("silver") and layers.get("gold")):
        return {}
    duck = silver["wall_s"] + gold["wall_s"]
    return {"gold_in_run_all_over_duckdb": round(gold["wall_s"] / layers["gold"], 3),
            "pipeline_over_duckdb": round(duck / (layers["silver"] + layers["gold"]), 3),
            "run_all_over_duckdb": round(duck / run_all["wall_s"], 3)}


def compute_targets(rows: list[dict[str, Any]], ratios: list[dict[str, Any]], largest: int) -> list[dict[str, Any]]:
    targets = []
    for ratio in ratios:
        if ratio["storage"] != "local":
            continue
        tag = f"{ratio['dataset']} {ratio['size']:,} {ratio['layer']}"
        if ratio["layer"] == "run-all":
            for key, label in (("gold_in_run_all_over_duckdb", "gold inside run-all / DuckDB gold"),
                               ("pipeline_over_duckdb", "silver + gold inside run-all / DuckDB silver + gold")):
                if key in ratio:
                    targets.append(target_line(f"{tag}: {label}", ratio[key], TARGETS[key], unit="x"))
            continue
        if ratio["layer"] == "silver" and "ours_over_duckdb" in ratio:
            targets.append(target_line(f"{tag}: ours / DuckDB throughput", ratio["ours_over_duckdb"],
                                       TARGETS[f"{ratio['layer']}_over_duckdb"], unit="x"))
        if "validation_overhead" in ratio:
            targets.append(target_line(f"{tag}: validation overhead (with / without expectations - 1)",
                                       round(100 * ratio["validation_overhead"], 1),
                                       100 * TARGETS["validation_overhead"], higher_is_better=False, unit="%"))
        if "validation_share_of_job" in ratio:
            targets.append(target_line(f"{tag}: validation's own time inside the job",
                                       round(100 * ratio["validation_share_of_job"], 1),
                                       100 * TARGETS["validation_overhead"], higher_is_better=False, unit="%"))
    big = [r for r in rows if r["size"] >= min(largest, 5_000_000) and r["variant"] != "duckdb"]
    if big:
        worst = max(big, key=lambda r: r.get("peak_total_mb", 0))
        targets.append(target_line(
            f"peak RSS (Python + JVM) at {worst['size']:,} events, worst job ({worst['dataset']} {worst['storage']} "
            f"{worst['layer']} {worst['variant']})", round(worst.get("peak_total_mb", 0) / 1024, 2),
            TARGETS["peak_rss_mb_5m"] / 1024, higher_is_better=False, unit=" GB"))
    return targets


def format_table(rows: list[dict[str, Any]], ratios: list[dict[str, Any]], targets: list[dict[str, Any]],
                 checks: list[dict[str, Any]]) -> str:
    header = f"{'dataset':<12} {'events':>9} {'storage':<7} {'layer':<7} {'variant':<14} {'wall s':>8} " \
             f"{'rows in':>9} {'rows out':>9} {'rows/s':>9} {'py MB':>7} {'jvm MB':>7}"
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(f"{r['dataset']:<12} {r['size']:>9} {r['storage']:<7} {r['layer']:<7} {r['variant']:<14} "
                     f"{r['wall_s']:>8.1f} {r['rows_in']:>9} {r['rows_out']:>9} {r['rows_per_s'] or 0:>9} "
                     f"{r['peak_python_mb']:>7.0f} {r['peak_jvm_mb']:>7.0f}")
    lines += ["", f"{'dataset':<12} {'events':>9} {'storage':<7} {'layer':<7} {'ours/DuckDB':>12} {'tuned/naive':>12} "
                  f"{'valid. overhead':>16} {'valid. in job':>14} {'equal':>6}"]
    for q in ratios:
        def fmt(key: str, pct: bool = False) -> str:
            if key not in q:
                return "-"
            return f"{100 * q[key]:+.1f}%" if pct else f"{q[key]:.3f}x"
        lines.append(f"{q['dataset']:<12} {q['size']:>9} {q['storage']:<7} {q['layer']:<7} {fmt('ours_over_duckdb'):>12} "
                     f"{fmt('tuned_over_naive'):>12} {fmt('validation_overhead', True):>16} "
                     f"{fmt('validation_share_of_job', True):>14} "
                     f"{str(q.get('equal', '-')):>6}")
        if q["layer"] == "run-all":
            lines.append(f"{'':<12} {'':>9} {'':<7} run-all: gold in run-all / DuckDB {fmt('gold_in_run_all_over_duckdb')}, "
                         f"silver + gold in run-all / DuckDB {fmt('pipeline_over_duckdb')}, whole run-all (bronze "
                         f"included) / DuckDB silver + gold {fmt('run_all_over_duckdb')}")
    lines += ["", "Targets (a report, not a test):"] + [f"  {t['text']}" for t in targets]
    failed = [c for c in checks if not c["equal"]]
    lines += ["", f"Equality checks: {len(checks) - len(failed)}/{len(checks)} equal"]
    lines += [f"  NOT EQUAL: {c['dataset']} {c['size']} {c['storage']} {c['check']}: ours={c.get('ours')} "
              f"other={c.get('duckdb', c.get('tuned', c.get('local')))} {c.get('detail', '')}" for c in failed]
    return "\n".join(lines)


def _sizes(text: str) -> list[int]:
    sizes = [int(s.replace("_", "")) for s in text.split(",") if s.strip()]
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError("sizes: a comma-separated list of positive event counts, e.g. 1000000,5000000")
    return sizes


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.pipeline", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=_sizes, default=[1_000_000, 5_000_000],
                        help="events per dataset (default: 1000000,5000000)")
    parser.add_argument("--datasets", default=",".join(DATASETS), help="default: iot,clickstream")
    parser.add_argument("--repeats", type=int, default=REPEATS,
                        help=f"runs per measured job; figures are the median (default: {REPEATS}; naive runs once)")
    parser.add_argument("--s3a-size", type=int, default=1_000_000,
                        help="events for the s3a row on the emulator; 0 skips it (default: 1000000)")
    parser.add_argument("--naive-sizes", type=_sizes, default=None,
                        help="sizes that also run the naive baseline (default: the smallest of --sizes)")
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE, help=f"records per landing file (default: {BATCH_SIZE})")
    parser.add_argument("--max-files-per-trigger", type=int, default=MAX_FILES_PER_TRIGGER,
                        help=f"bronze landing files per micro-batch (default: {MAX_FILES_PER_TRIGGER})")
    parser.add_argument("--bad-rate", type=float, default=BAD_RATE, help=f"default: {BAD_RATE} (the demo's)")
    parser.add_argument("--late-rate", type=float, default=LATE_RATE, help=f"default: {LATE_RATE} (the demo's)")
    parser.add_argument("--seed", type=int, default=SEED, help=f"datagen seed (default: {SEED})")
    parser.add_argument("--work-dir", default="", help="scratch lakes (default: a temporary folder, removed at the end)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch lakes")
    parser.add_argument("--rescore", default="", metavar="RESULT_JSON",
                        help="recompute ratios, targets and the table from a result file's rows (no measuring)")
    parser.add_argument("--result", default="pipeline", help="result name: bench/results/<name>.json (default: pipeline)")
    return parser


def rescore(path: Path) -> int:
    result = json.loads(path.read_text())
    rows, checks = result["rows"], result["checks"]
    result["ratios"] = compute_ratios(rows, checks)
    result["targets"] = compute_targets(rows, result["ratios"], max(result["config"]["sizes"]))
    result["notes"] = NOTES + [n for n in result.get("notes", []) if n not in NOTES and not n.startswith(NOTES_PREFIXES)]
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(format_table(rows, result["ratios"], result["targets"], checks))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_worker"]:
        return worker_main(argv[1])
    args = build_parser().parse_args(argv)
    if args.rescore:
        return rescore(Path(args.rescore))
    datasets = [d for d in args.datasets.split(",") if d]
    unknown = sorted(set(datasets) - set(DATASETS))
    if unknown:
        print(f"bench.pipeline: --datasets {','.join(unknown)}: no DuckDB reference; one of {', '.join(DATASETS)}",
              file=sys.stderr)
        return 2
    args.naive_sizes = args.naive_sizes or [min(args.sizes)]
    signal.signal(signal.SIGTERM, interrupt)  # `kill <pid>`: stop the worker and emulator, save what was measured
    started_at, started = utc_now(), time.perf_counter()
    load_start = [round(x, 2) for x in os.getloadavg()]
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="tenantlake-bench-pipeline-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "TENANTLAKE_STATE_DIR": str(work / "state"),
           "PYTHONPATH": str(REPO_ROOT)}
    for key in ("AWS_ENDPOINT_URL", "AWS_CA_BUNDLE", "TENANTLAKE_VALIDATION"):
        env.pop(key, None)
    ctx = Context(work=work, env=env, log=work / "jobs.log")
    print(f"[bench] work dir {work}; job logs in {ctx.log}", file=sys.stderr, flush=True)
    rows: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    setup: dict[str, Any] = {}
    locals_by_key: dict[tuple[str, int], dict[str, Any]] = {}

    def save(complete: bool) -> tuple[Path, dict[str, Any]]:
        """Write the result so far: a run stopped part-way still leaves what it measured (complete: false)."""
        ratios = compute_ratios(rows, checks)
        duration = time.perf_counter() - started
        load_end = [round(x, 2) for x in os.getloadavg()]
        payload = {
            "complete": complete,
            "config": {"sizes": args.sizes, "datasets": datasets, "s3a_size": args.s3a_size,
                       "naive_sizes": args.naive_sizes, "batch_size": args.batch_size,
                       "max_files_per_trigger": args.max_files_per_trigger, "bad_rate": args.bad_rate,
                       "late_rate": args.late_rate, "seed": args.seed, "repeats": args.repeats},
            "duration_s": round(duration, 1),
            "load_average_start": load_start,
            "load_average_end": load_end,
            "setup_s": setup,
            "rows": rows,
            "ratios": ratios,
            "targets": compute_targets(rows, ratios, max(args.sizes)),
            "checks": checks,
            "all_equal": bool(checks) and all(c["equal"] for c in checks),
            "failures": ctx.failures,
            "notes": NOTES + [f"{'whole benchmark' if complete else 'INCOMPLETE run, so far'}: {duration / 60:.1f} min; "
                              f"load average {load_start} at the start, {load_end} at the end (2 cores, shared)"],
        }
        return write_result(args.result, payload, started_at=started_at), payload

    try:
        # Smallest size first, then the s3a row, then the larger sizes: a run cut short keeps the most coverage.
        s3a_sizes = [args.s3a_size] if args.s3a_size else []
        sizes = sorted(set(args.sizes) | set(s3a_sizes))
        for size in sizes:
            for dataset in datasets:
                try:
                    local = bench_local(ctx, dataset, size, args)
                except JobError as exc:  # recorded; the other datasets and sizes still run
                    ctx.failures.append(str(exc))
                    print(f"bench.pipeline: {exc}", file=sys.stderr)
                    continue
                rows += local["rows"]
                checks += local["checks"]
                setup[f"datagen_{dataset}_{size}_s"] = local["datagen_s"]
                locals_by_key[(dataset, size)] = local
                save(complete=False)
                if not args.keep and not args.work_dir and size != args.s3a_size:
                    shutil.rmtree(local["lake"], ignore_errors=True)
            if size == args.s3a_size and all((d, size) in locals_by_key for d in datasets):
                try:
                    _, s3a_env, lake_json = start_s3a(ctx)
                    for dataset in datasets:
                        s3a = bench_s3a(ctx, s3a_env, lake_json, dataset, size, locals_by_key[(dataset, size)], args)
                        rows += s3a["rows"]
                        checks += s3a["checks"]
                        setup[f"s3a_upload_{dataset}_{size}_s"] = s3a["upload_s"]
                        save(complete=False)
                except Exception as exc:  # noqa: BLE001 - the s3a row failing must not cost the other sizes
                    ctx.failures.append(f"s3a: {type(exc).__name__}: {str(exc).strip().splitlines()[:1]}")
                    print(f"bench.pipeline: s3a: {exc}", file=sys.stderr)
                finally:
                    from infra.local import emulator

                    emulator.stop(ctx.work / "emulator")
    except (JobError, KeyboardInterrupt) as exc:
        ctx.failures.append(str(exc) or "interrupted")
        print(f"bench.pipeline: {exc or 'interrupted'}", file=sys.stderr)
    finally:
        if not args.keep and not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    path, payload = save(complete=not ctx.failures)
    print(format_table(rows, payload["ratios"], payload["targets"], checks))
    print(f"\nbench.pipeline: {len(rows)} measurements in {payload['duration_s'] / 60:.1f} min -> "
          f"{path.relative_to(REPO_ROOT)}")
    return 1 if ctx.failures or not payload["all_equal"] else 0


NOTES_PREFIXES = ("wall s =", "tuned =", "DuckDB does", "bronze runs", "run-all =")
NOTES = [
    "wall s = the layer job alone (spark_jobs.jobs.layer.run_layer, or the DuckDB SQL), in its own process; the Spark "
    "session start is recorded per row as session_s. rows/s = rows in / wall s. Peak RSS: the worker's Python "
    "process (DuckDB runs inside it) and its JVM child, sampled every 0.2 s.",
    "tuned = the project's session (local[2], 8 shuffle partitions, v2 committer); naive = Spark defaults "
    "(200 shuffle partitions, v1 committer) and the JSON schema inferred from the records; no_validation = "
    "tuned with TENANTLAKE_VALIDATION=off (no expectations, no report). Validation overhead = tuned wall / "
    "no_validation wall - 1, from the medians of --repeats runs each, in the same benchmark run (the "
    "machine's run-to-run noise can still be larger than the target); validation_share_of_job = the validation's own seconds inside the tuned "
    "job (its summary.json) / the job's wall time, a figure without that noise.",
    "DuckDB does the same silver (parse, contract rules, quarantine, dedupe latest _ingested_at, late flag) and gold "
    "work on the same bronze files (bench/duckdb_reference.py, silver SQL generated from the contract); the run "
    "checks silver/quarantine rows, quarantine per rule, a silver content checksum, duplicates, late rows and "
    "every gold value (floats within 1e-9 relative).",
    "run-all = bronze, silver and gold in one process and session on a fresh lake holding only the landing "
    "files; its ratios compare the layers' times inside it with DuckDB's silver and gold (DuckDB has no bronze).",
    "bronze runs with --max-files-per-trigger 1000 (backfill); the iot generator writes each malformed record "
    "as its own truncated file (about 0.33% of the records), so iot has many more landing files than clickstream.",
]


if __name__ == "__main__":
    sys.exit(main())
