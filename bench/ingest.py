"""Ingest benchmark: ONE large landing file through bronze and silver, against DuckDB reading the same file.

    .venv/bin/python -m bench.ingest                                       # what `make bench-ingest` runs
    .venv/bin/python -m bench.ingest --sizes 20000,40000 --results-dir /tmp   # a quick check (minutes)

For each landing format (``--formats``: ``csv`` and ``json_lines``), compression (``--compressions``:
``plain`` and ``gzip``) and size (``--sizes``, records in the one file), in ONE run:

1. the file, from ``bench/ingest_data.py`` (15 columns of station observations, ``NA`` for null, a few
   quoted multi-line fields and rule breakers; DuckDB writes it, so 10M rows take seconds), in a fresh
   local lake's ``landing/<dataset>/`` (the contracts are ``bench/contracts/stations_*.yaml``);
2. bronze, then silver, each in its own subprocess with a fresh Spark session and the project's defaults
   (``local[2]``, 2g driver heap, validation on), the process tree sampled for peak RSS (the Python
   driver, its JVM and the JVM's Python workers); ``wall_s`` is the job alone, ``session_s`` the session
   start; ``--repeats`` runs each (bronze from the landing file alone each time), the median is shown;
3. DuckDB (2 threads, ``bench/duckdb_reference.py``) on the same file: ``duckdb_ingest`` reads it and
   writes every field as text to Parquet (bronze's work), ``duckdb_silver`` reads it, types and checks
   every field by the contract, dedupes, flags late rows and writes silver and quarantine (silver's
   work plus the reading); the run checks that bronze holds as many rows as DuckDB read, and that
   silver, quarantine (per rule) and the silver content equal DuckDB's.

Ratios (throughput; the same rows, so time ratios): bronze / ``duckdb_ingest``, silver /
``duckdb_silver``; the doubling ratio time(2n) / time(n) of each job for every size whose double is
also measured. The ingest floor (issue 56, part 2): ``spark_ingest`` is DuckDB's ingest done by Spark's own
reader (``bench/pyspark_floor.run_ingest``: every field as text to Parquet, no raw text, checks or count) in a
session built as ours, its rows checked against DuckDB's; ratios add Spark ingest / DuckDB ingest (the most a
Spark bronze could reach) and bronze / Spark ingest. Targets (a report, not a test): doubling ratio <= 2.2, bronze >= 0.2x, silver >=
0.25x, peak RSS under 3 GB at the largest size (10M rows: about 1 GB of CSV).

Writes ``bench/results/ingest.json`` (machine, commit, load average at the start and the end, rows,
ratios, targets, checks; rewritten after each file, ``"complete": false`` until the end) and prints the
table. Exit code 1 when a job failed or an equality check did not hold; a missed target never fails.

``--shape wide-span`` (``make bench-ingest-wide``, result ``ingest-wide-span``): the same columns with the
event times spread over 32 years (``bench.ingest_data.wide_span_step``; about 384 months) and the
``stations_wide_*`` contracts (``partition_granularity: month``), plain CSV and JSON lines of 5M and 10M
rows by default. Each file also goes through gold and ``run-all`` (bronze, silver, gold and the counts
table in ONE process on a fresh lake, as ``python -m spark_jobs run-all`` runs them), and DuckDB also
computes the gold from its silver (``duckdb_gold``; silver, quarantine and gold partitioned by month as
ours). Ratios add gold / DuckDB gold and run-all / (DuckDB silver + gold): the same work from the landing
file to gold. Targets: bronze >= 0.25x, silver >= 0.25x, run-all within 6x DuckDB's time, peak RSS under
3 GiB (``peak_total_mb`` is MiB: 3,072 MiB = 3,221,225,472 bytes), doubling ratio <= 2.2.

The floor (issue 56, CSV files only): after run-all, ``pyspark_floor`` runs the hand-written PySpark job of
``bench/pyspark_floor.py`` on the same file in a fresh process with our session settings, and
``duckdb_plain`` DuckDB's plain query (``duckdb_reference.run_plain_from_file``); both are checked against
DuckDB's mirror of silver and its gold (silver rows, the content checksum without the late flag, every gold
value). Ratios add run-all / floor (time; target <= 1.5x), floor / DuckDB plain, and run-all's seconds
beyond the floor's per step (``_floor_split``). ``--no-layer-jobs`` skips the job per layer and DuckDB's
ingest: run-all, the floor and DuckDB only, with run-all's own silver and gold checked.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR, job_workspace, run_sampled, target_line, utc_now, write_result
from bench.ingest_data import CONTRACTS_DIR, DATASETS, WIDE_DATASETS, file_name, write_file, write_wide_span_file

SIZES = (100_000, 200_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000)
FORMATS = ("csv", "json_lines")
COMPRESSIONS = ("plain", "gzip")
TARGETS = {"doubling_ratio": 2.2, "bronze_over_duckdb": 0.2, "silver_over_duckdb": 0.25, "peak_rss_mb": 3072}
# The wide-span row (issue 42): one file spanning 32 years of month partitions, through to gold and run-all.
WIDE_SPAN = "wide-span"
SHAPES = ("narrow", WIDE_SPAN)
WIDE_SPAN_SIZES = (5_000_000, 10_000_000)
WIDE_SPAN_TARGETS = {**TARGETS, "bronze_over_duckdb": 0.25, "run_all_over_duckdb": round(1 / 6, 3)}
SPARK_LAYERS = ("bronze", "silver", "silver_reparse", "gold", "run_all", "pyspark_floor", "spark_ingest")
DUCKDB_LAYERS = ("duckdb_ingest", "duckdb_silver", "duckdb_gold", "duckdb_plain")
# The plain PySpark floor (issue 56, part 3): run-all within 1.5x the hand-written job's time on the same file.
WIDE_SPAN_TARGETS["run_all_times_floor"] = 1.5
RESULT_PREFIX = "BENCH_RESULT "
WORKER_TIMEOUT_S = 7200
DUCKDB_THREADS = 2


# ---------------------------------------------------------------------------- worker (one job, one process)
def _spark_worker(spec: dict[str, Any]) -> dict[str, Any]:
    from spark_jobs.jobs.layer import run_layer
    from spark_jobs.lake.config import resolve_lake
    from spark_jobs.runs.session import session_for

    lake = resolve_lake(lake_uri=spec["lake_uri"])
    layer = spec["layer"]
    if layer == "silver_reparse":
        # Silver as it was before bronze parsed once: every row's _fields_id is taken for another contract's,
        # so silver parses _raw (a map per JSON record and the strictness check; CSV by regex).
        from spark_jobs.transforms import bronze as bronze_tx

        bronze_tx.fields_id = lambda landing, field_names: -1
        layer = "silver"
    started = time.perf_counter()
    if layer in ("pyspark_floor", "spark_ingest"):
        return _floor_worker(spec, started)
    spark, _ = session_for(lake, f"bench-ingest-{spec['layer']}")
    session_s = time.perf_counter() - started
    started = time.perf_counter()
    if layer == "run_all":
        return _run_all_worker(spark, lake, spec, session_s, started)
    # Repeats of silver and gold run on the same lake: full, so each does the whole layer's work.
    manifest = run_layer(spark, lake, spec["dataset"], layer, progress=lambda line: print(line, file=sys.stderr),
                         full=layer != "bronze")
    wall = time.perf_counter() - started
    spark.stop()
    return {"wall_s": wall, "session_s": session_s, "rows_in": manifest["rows_in"], "rows_out": manifest["rows_out"],
            "quarantined": manifest.get("quarantined", 0), "malformed": manifest.get("malformed", 0),
            "duplicates": manifest.get("duplicates", 0), "late": manifest.get("late", 0),
            "status": manifest.get("status"), "run_id": manifest["run_id"], "output_rows": manifest.get("output_rows") or {},
            "stages": {stage["stage"]: stage.get("elapsed_seconds") for stage in manifest.get("stages") or [] if "stage" in stage}}


def _floor_worker(spec: dict[str, Any], started: float) -> dict[str, Any]:
    """The plain PySpark floor (``bench/pyspark_floor.py``) on the landing file, in a session built as ours,
    its tables in a Hadoop catalog at ``spec['lake_uri']``."""
    from bench import pyspark_floor as floor
    from spark_jobs.contract.model import load_contract
    from spark_jobs.runs.session import build_session

    spark = build_session(f"bench-ingest-{spec['layer'].replace('_', '-')}", extra_conf=floor.catalog_conf(spec["lake_uri"]))
    session_s = time.perf_counter() - started
    contract = load_contract(spec["dataset"])
    if spec["layer"] == "spark_ingest":  # Spark's own reader, every field as text, to Parquet: DuckDB's ingest
        result = floor.run_ingest(spark, contract, spec["file"], Path(spec["lake_uri"]) / "ingest")
        spark.stop()
        return {"session_s": session_s, "rows_in": result["rows_out"], **result}
    started = time.perf_counter()
    result = floor.run_floor(spark, contract, spec["file"], progress=lambda line: print(line, file=sys.stderr))
    wall = time.perf_counter() - started
    spark.stop()
    return {"wall_s": wall, "session_s": session_s, "rows_in": spec["size"], **result}


def _run_all_worker(spark, lake, spec: dict[str, Any], session_s: float, started: float) -> dict[str, Any]:
    """bronze -> silver -> gold, then the counts table, in ONE session on a lake holding only the landing
    file: what ``python -m spark_jobs run-all --dataset D`` does after its session starts."""
    from spark_jobs.jobs.layer import run_layer
    from spark_jobs.jobs.report import format_counts_table, layer_counts

    layers: dict[str, float] = {}
    manifests: dict[str, dict[str, Any]] = {}
    dates = None
    for layer in ("bronze", "silver", "gold"):
        layer_started = time.perf_counter()
        manifests[layer] = run_layer(spark, lake, spec["dataset"], layer, dates=dates if layer == "gold" else None,
                                     progress=lambda line: print(line, file=sys.stderr))
        layers[layer] = round(time.perf_counter() - layer_started, 2)
        if layer == "silver":
            dates = list(manifests[layer].get("event_dates") or [])
    counts_started = time.perf_counter()
    print(format_counts_table(layer_counts(spark, lake, [spec["dataset"]])), file=sys.stderr)
    layers["counts"] = round(time.perf_counter() - counts_started, 2)
    wall = time.perf_counter() - started
    spark.stop()
    return {"wall_s": wall, "session_s": session_s, "rows_in": manifests["bronze"]["rows_in"],
            "rows_out": manifests["silver"]["rows_out"], "quarantined": manifests["silver"].get("quarantined", 0),
            "layers_s": layers, "output_rows": manifests["gold"].get("output_rows", {}),
            "status": manifests["gold"].get("status"),
            # each layer's progress lines, seconds since the layer's start: where run-all's time goes per step
            "layer_stages": {layer: {stage["stage"]: stage.get("elapsed_seconds") for stage in manifest.get("stages") or []
                                     if "stage" in stage} for layer, manifest in manifests.items()}}


def _duckdb_worker(spec: dict[str, Any]) -> dict[str, Any]:
    from bench import duckdb_reference as ref
    from spark_jobs.contract.model import load_contract

    contract = load_contract(spec["dataset"])
    con = ref.connect(DUCKDB_THREADS)
    out = Path(spec["reference_dir"])
    if spec["layer"] == "duckdb_ingest":
        return ref.ingest_file(con, contract, spec["file"], out / "ingest.parquet")
    if spec["layer"] == "duckdb_gold":  # from DuckDB's own silver, as our gold reads our silver
        return ref.run_gold(con, contract, out / "silver", out)
    if spec["layer"] == "duckdb_plain":  # the plain query a DuckDB user writes, beside the mirror of silver
        return {"rows_in": spec["size"], **ref.run_plain_from_file(con, contract, spec["file"], out / "plain")}
    return ref.run_silver_from_file(con, contract, spec["file"], out)


def worker_main(spec_json: str) -> int:
    spec = json.loads(spec_json)
    result = _spark_worker(spec) if spec["layer"] in SPARK_LAYERS else _duckdb_worker(spec)
    print(RESULT_PREFIX + json.dumps(result, default=str), flush=True)
    return 0


# ---------------------------------------------------------------------------- orchestration
class JobError(RuntimeError):
    pass


def run_measured(spec: dict[str, Any], env: dict[str, str], log: Path) -> dict[str, Any]:
    """One worker subprocess: its result plus the peak RSS of its process tree."""
    cmd = [sys.executable, "-m", "bench.ingest", "_worker", json.dumps(spec)]
    label = f"{spec['format']} {spec['compression']} {spec['size']:,} {spec['layer']}"
    print(f"[bench] {label} ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    returncode, out, rss = run_sampled(cmd, env, log, label, WORKER_TIMEOUT_S)
    lines = [line for line in out.splitlines() if line.startswith(RESULT_PREFIX)]
    if returncode != 0 or not lines:
        raise JobError(f"{label}: worker exited {returncode}; see {log}")
    result = json.loads(lines[-1][len(RESULT_PREFIX):])
    row = {key: spec[key] for key in ("format", "compression", "size", "layer")}
    row.update({key: (round(value, 2) if isinstance(value, float) else value) for key, value in result.items()
                if key not in ("run_id",)})
    row.update({"rows_per_s": round(result["rows_in"] / result["wall_s"]) if result["wall_s"] > 0 else None,
                **rss.as_dict(), "process_s": round(time.perf_counter() - started, 1)})
    print(f"[bench] {label}: {row['wall_s']}s, {row['rows_per_s']} rows/s, peak {row['peak_total_mb']} MB",
          file=sys.stderr, flush=True)
    return row


def run_repeated(spec: dict[str, Any], env: dict[str, str], log: Path, repeats: int, before_each=None) -> dict[str, Any]:
    runs = []
    for _ in range(max(1, repeats)):
        if before_each is not None:
            before_each()
        runs.append(run_measured(spec, env, log))
    row = dict(runs[-1])
    walls = sorted(r["wall_s"] for r in runs)
    row.update({"wall_s": round(statistics.median(walls), 2), "wall_s_min": walls[0], "wall_s_max": walls[-1],
                "wall_s_runs": [r["wall_s"] for r in runs], "runs": len(runs)})
    row["rows_per_s"] = round(row["rows_in"] / row["wall_s"]) if row["wall_s"] > 0 else None
    for key in ("peak_python_mb", "peak_jvm_mb", "peak_total_mb"):
        row[key] = max(r[key] for r in runs)
    return row


def landing_file(data_dir: Path, size: int, landing_format: str, compression: str, shape: str = "narrow") -> Path:
    """The size's file, written once per work dir (the same bytes on every run: ingest_data is deterministic)."""
    wide = shape == WIDE_SPAN
    path = data_dir / file_name(size, landing_format, compression == "gzip", shape=WIDE_SPAN if wide else "")
    if not path.exists():
        started = time.perf_counter()
        partial = path.with_name(f"partial-{path.name}")
        (write_wide_span_file if wide else write_file)(partial, size, landing_format, gzip=compression == "gzip")
        partial.rename(path)
        print(f"[bench] wrote {path} ({path.stat().st_size / 1e6:,.1f} MB) in {time.perf_counter() - started:.1f}s",
              file=sys.stderr, flush=True)
    return path


def bench_file(work: Path, env: dict[str, str], log: Path, landing_format: str, compression: str, size: int,
               repeats: int, keep: bool, reparse: bool = False, shape: str = "narrow",
               layer_jobs: bool = True) -> dict[str, Any]:
    """Bronze, silver and DuckDB on one file (wide-span: also gold and run-all); returns rows and checks.
    ``layer_jobs`` false (wide-span only): no job per layer and no DuckDB ingest; run-all's own silver and
    gold are checked against DuckDB's instead."""
    from bench import duckdb_reference as ref

    wide = shape == WIDE_SPAN
    dataset = (WIDE_DATASETS if wide else DATASETS)[landing_format]
    path = landing_file(work / "data", size, landing_format, compression, shape)
    lake = work / f"lake-{landing_format}-{compression}-{size}"
    reference_dir = work / f"duckdb-{landing_format}-{compression}-{size}"
    base = {"format": landing_format, "compression": compression, "size": size, "dataset": dataset,
            "lake_uri": str(lake), "file": str(path), "reference_dir": str(reference_dir)}

    def fresh_lake() -> None:  # bronze starts from the landing file alone: no checkpoint, no bronze
        shutil.rmtree(lake, ignore_errors=True)
        (lake / "landing" / dataset).mkdir(parents=True)
        os.link(path, lake / "landing" / dataset / path.name)

    rows = [run_repeated({**base, "layer": "bronze"}, env, log, repeats, before_each=fresh_lake)] if layer_jobs else []
    if reparse and layer_jobs:  # the same silver, parsing _raw as before bronze parsed once (run first: the outputs compared are silver's)
        rows.append(run_repeated({**base, "layer": "silver_reparse"}, env, log, repeats))
    if layer_jobs:
        rows.append(run_repeated({**base, "layer": "silver"}, env, log, repeats))
    if wide and layer_jobs:
        rows.append(run_repeated({**base, "layer": "gold"}, env, log, repeats))
    shutil.rmtree(reference_dir, ignore_errors=True)
    if layer_jobs:
        rows.append(run_repeated({**base, "layer": "duckdb_ingest"}, env, log, repeats))
        ingest_lake = work / f"spark-ingest-{landing_format}-{compression}-{size}"
        rows.append(run_repeated({**base, "lake_uri": str(ingest_lake), "layer": "spark_ingest"}, env, log, repeats))
        shutil.rmtree(ingest_lake, ignore_errors=True)
    rows.append(run_repeated({**base, "layer": "duckdb_silver"}, env, log, repeats))
    if wide:
        rows.append(run_repeated({**base, "layer": "duckdb_gold"}, env, log, repeats))
        run_all_lake = work / f"run-all-{landing_format}-{compression}-{size}"

        def fresh_run_all_lake() -> None:  # what a first run-all sees: the landing file alone
            shutil.rmtree(run_all_lake, ignore_errors=True)
            (run_all_lake / "landing" / dataset).mkdir(parents=True)
            os.link(path, run_all_lake / "landing" / dataset / path.name)

        rows.append(run_repeated({**base, "lake_uri": str(run_all_lake), "layer": "run_all"}, env, log, repeats,
                                 before_each=fresh_run_all_lake))
        if layer_jobs:
            shutil.rmtree(run_all_lake, ignore_errors=True)
        else:  # run-all's own outputs are the ones checked
            shutil.rmtree(lake, ignore_errors=True)
            run_all_lake.rename(lake)
        if landing_format == "csv":  # the floor and the plain query read a CSV export
            floor_lake = work / f"floor-{landing_format}-{compression}-{size}"
            rows.append(run_repeated({**base, "lake_uri": str(floor_lake), "layer": "pyspark_floor"}, env, log, repeats,
                                     before_each=lambda: shutil.rmtree(floor_lake, ignore_errors=True)))
            rows.append(run_repeated({**base, "layer": "duckdb_plain"}, env, log, repeats,
                                     before_each=lambda: shutil.rmtree(reference_dir / "plain", ignore_errors=True)))
    bronze, silver, duck_ingest, duck_silver, spark_ingest = (_find(rows, layer=layer) for layer in
                                                              ("bronze", "silver", "duckdb_ingest", "duckdb_silver",
                                                               "spark_ingest"))
    tag = {"format": landing_format, "compression": compression, "size": size}
    checks = []
    if layer_jobs:
        checks.append({**tag, "check": "bronze_rows", "ours": bronze["rows_out"], "duckdb": duck_ingest["rows_out"],
                       "equal": bronze["rows_out"] == duck_ingest["rows_out"] and bronze.get("malformed") == 0})
        checks.append({**tag, "check": "spark_ingest_rows", "ours": spark_ingest["rows_out"],
                       "duckdb": duck_ingest["rows_out"], "equal": spark_ingest["rows_out"] == duck_ingest["rows_out"]})
    from spark_jobs.contract.model import load_contract

    os.environ["TENANTLAKE_CONTRACTS_DIR"] = str(CONTRACTS_DIR)
    con = ref.connect(DUCKDB_THREADS)
    try:
        for check in ref.compare_silver(con, load_contract(dataset), lake, reference_dir, silver, duck_silver):
            checks.append({**tag, **check})
        if wide:
            for check in ref.compare_gold(con, load_contract(dataset), lake, reference_dir):
                checks.append({**tag, **check})
            run_all = _find(rows, layer="run_all")
            if _find(rows, layer="pyspark_floor"):
                for label, folder in (("floor", work / f"floor-{landing_format}-{compression}-{size}"),
                                      ("duckdb_plain", reference_dir / "plain")):
                    for check in ref.compare_plain(con, load_contract(dataset), folder, reference_dir, label):
                        checks.append({**tag, **check})
            if layer_jobs:
                checks.append({**tag, "check": "run_all_counts_equal_layers",
                               "ours": {"silver_rows": run_all["rows_out"], "output_rows": run_all.get("output_rows")},
                               "duckdb": {"silver_rows": duck_silver["rows_out"],
                                          "output_rows": _find(rows, layer="gold").get("output_rows")},
                               "equal": run_all["rows_out"] == duck_silver["rows_out"]
                               and run_all.get("output_rows") == _find(rows, layer="gold").get("output_rows")})
    finally:
        con.close()
    if not keep:
        shutil.rmtree(lake, ignore_errors=True)
        shutil.rmtree(reference_dir, ignore_errors=True)
        shutil.rmtree(work / f"floor-{landing_format}-{compression}-{size}", ignore_errors=True)
    return {"rows": rows, "checks": checks}


# ---------------------------------------------------------------------------- ratios, targets, table
def _find(rows: list[dict[str, Any]], **match: Any) -> dict[str, Any] | None:
    return next((r for r in rows if all(r.get(k) == v for k, v in match.items())), None)


def compute_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per file: bronze / DuckDB ingest, silver / DuckDB silver, bronze + silver / DuckDB silver, and each
    job's doubling ratio time(2n) / time(n) where 2n was measured too."""
    ratios = []
    keys = sorted({(r["format"], r["compression"], r["size"]) for r in rows})
    for landing_format, compression, size in keys:
        where = {"format": landing_format, "compression": compression, "size": size}
        entry: dict[str, Any] = dict(where)
        layers = ("bronze", "silver", "gold", "run_all", "duckdb_ingest", "duckdb_silver", "duckdb_gold",
                  "pyspark_floor", "duckdb_plain", "spark_ingest")
        found = {layer: _find(rows, **where, layer=layer) for layer in layers}
        if found["gold"] and found["duckdb_gold"]:
            entry["gold_over_duckdb"] = round(found["duckdb_gold"]["wall_s"] / found["gold"]["wall_s"], 3)
        if found["run_all"] and found["duckdb_silver"] and found["duckdb_gold"]:
            # DuckDB's time for the same work: the landing file read, typed, checked, deduped and written
            # (silver and quarantine), then the gold built from that silver.
            duck = found["duckdb_silver"]["wall_s"] + found["duckdb_gold"]["wall_s"]
            entry["run_all_over_duckdb"] = round(duck / found["run_all"]["wall_s"], 3)
            entry["run_all_times_duckdb"] = round(found["run_all"]["wall_s"] / duck, 2)
        if found["run_all"] and found["pyspark_floor"]:  # time ratios: how many times the floor's time
            entry["run_all_times_floor"] = round(found["run_all"]["wall_s"] / found["pyspark_floor"]["wall_s"], 2)
            entry.update(_floor_split(found["run_all"], found["pyspark_floor"]))
        if found["pyspark_floor"] and found["duckdb_plain"]:
            entry["floor_times_duckdb_plain"] = round(found["pyspark_floor"]["wall_s"] / found["duckdb_plain"]["wall_s"], 2)
        if found["run_all"] and found["duckdb_plain"]:
            entry["run_all_times_duckdb_plain"] = round(found["run_all"]["wall_s"] / found["duckdb_plain"]["wall_s"], 2)
        if found["duckdb_silver"] and found["duckdb_gold"] and found["duckdb_plain"]:
            entry["duckdb_mirror_times_plain"] = round((found["duckdb_silver"]["wall_s"] + found["duckdb_gold"]["wall_s"])
                                                       / found["duckdb_plain"]["wall_s"], 2)
        if found["bronze"] and found["duckdb_ingest"]:
            entry["bronze_over_duckdb"] = round(found["duckdb_ingest"]["wall_s"] / found["bronze"]["wall_s"], 3)
        if found["spark_ingest"] and found["duckdb_ingest"]:  # the best a Spark bronze could do here
            entry["spark_ingest_over_duckdb"] = round(found["duckdb_ingest"]["wall_s"] / found["spark_ingest"]["wall_s"], 3)
        if found["bronze"] and found["spark_ingest"]:
            entry["bronze_over_spark_ingest"] = round(found["spark_ingest"]["wall_s"] / found["bronze"]["wall_s"], 3)
        if found["silver"] and found["duckdb_silver"]:
            entry["silver_over_duckdb"] = round(found["duckdb_silver"]["wall_s"] / found["silver"]["wall_s"], 3)
        reparse = _find(rows, **where, layer="silver_reparse")
        if reparse and found["silver"]:
            entry["silver_parse_once_speedup"] = round(reparse["wall_s"] / found["silver"]["wall_s"], 3)
        if found["bronze"] and found["silver"] and found["duckdb_silver"]:
            entry["ingest_over_duckdb"] = round(found["duckdb_silver"]["wall_s"]
                                                / (found["bronze"]["wall_s"] + found["silver"]["wall_s"]), 3)
        for layer in layers:
            doubled = _find(rows, format=landing_format, compression=compression, size=2 * size, layer=layer)
            if found[layer] and doubled and found[layer]["wall_s"] > 0:
                entry[f"{layer}_doubling"] = round(doubled["wall_s"] / found[layer]["wall_s"], 3)
        ratios.append(entry)
    return ratios


def _floor_split(run_all: dict[str, Any], floor: dict[str, Any]) -> dict[str, Any]:
    """Where run-all's time beyond the floor's goes, per step (seconds): bronze (the landing records copied,
    a step the floor has not), silver and gold each beyond the floor's own step, the counts table (the floor
    has none), and the rest (between the layers: run-all's own bookkeeping)."""
    layers, steps = run_all.get("layers_s") or {}, floor.get("steps_s") or {}
    split = {"extra_bronze_s": layers.get("bronze"), "extra_counts_s": layers.get("counts")}
    for layer in ("silver", "gold"):
        if layer in layers and layer in steps:
            split[f"extra_{layer}_s"] = round(layers[layer] - steps[layer], 2)
    known = sum(layers.get(layer, 0.0) for layer in ("bronze", "silver", "gold", "counts"))
    split["extra_other_s"] = round(run_all["wall_s"] - known - (floor["wall_s"] - sum(steps.values())), 2)
    return {key: value for key, value in split.items() if value is not None}


def compute_targets(rows: list[dict[str, Any]], ratios: list[dict[str, Any]],
                    targets_defined: dict[str, float] | None = None) -> list[dict[str, Any]]:
    goals = targets_defined or TARGETS
    targets = []
    for ratio in ratios:
        tag = f"{ratio['format']} {ratio['compression']} {ratio['size']:,}"
        for layer in ("bronze", "silver", "gold", "run_all"):
            if f"{layer}_doubling" in ratio:
                targets.append(target_line(f"{tag} -> {2 * ratio['size']:,}: {layer} doubling ratio",
                                           ratio[f"{layer}_doubling"], goals["doubling_ratio"], higher_is_better=False,
                                           unit="x"))
            if layer == "run_all" and "run_all_times_floor" in ratio and "run_all_times_floor" in goals:
                targets.append(target_line(f"{tag}: run-all time / the plain PySpark floor's", ratio["run_all_times_floor"],
                                           goals["run_all_times_floor"], higher_is_better=False, unit="x"))
            if f"{layer}_over_duckdb" in ratio and f"{layer}_over_duckdb" in goals:
                label = ("run-all / DuckDB (silver + gold from the file)" if layer == "run_all"
                         else f"{layer} / DuckDB throughput")
                targets.append(target_line(f"{tag}: {label}", ratio[f"{layer}_over_duckdb"],
                                           goals[f"{layer}_over_duckdb"], unit="x"))
    ours = [r for r in rows if r["layer"] in ("bronze", "silver", "gold", "run_all")]
    if ours:
        largest = max(r["size"] for r in ours)
        worst = max((r for r in ours if r["size"] == largest), key=lambda r: r.get("peak_total_mb", 0))
        # peak_total_mb is MiB (2^20 bytes): the target is 3 GiB = 3,221,225,472 bytes.
        targets.append(target_line(
            f"peak RSS at {largest:,} rows, worst job ({worst['format']} {worst['compression']} {worst['layer']})",
            round(worst["peak_total_mb"] / 1024, 3), goals["peak_rss_mb"] / 1024, higher_is_better=False, unit=" GiB"))
    return targets


def format_table(rows: list[dict[str, Any]], ratios: list[dict[str, Any]], targets: list[dict[str, Any]],
                 checks: list[dict[str, Any]]) -> str:
    header = (f"{'format':<10} {'gz':<5} {'rows':>10} {'job':<13} {'wall s':>8} {'session s':>9} {'rows/s':>9} "
              f"{'peak MB':>8}")
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(f"{r['format']:<10} {r['compression']:<5} {r['size']:>10,} {r['layer']:<13} {r['wall_s']:>8.1f} "
                     f"{r.get('session_s', 0):>9.1f} {r['rows_per_s'] or 0:>9,} {r['peak_total_mb']:>8.0f}")
    lines += ["", f"{'format':<10} {'gz':<5} {'rows':>10} {'bronze/DuckDB':>14} {'silver/DuckDB':>14} "
                  f"{'x2 bronze':>10} {'x2 silver':>10} {'x2 DuckDB':>10} {'parse once':>10} {'gold/DuckDB':>12} "
                  f"{'run-all/DuckDB':>15} {'x2 run-all':>10} {'run-all/floor':>14} {'floor/DuckDB plain':>19}"]

    def fmt(q: dict[str, Any], key: str) -> str:
        return f"{q[key]:.3f}x" if key in q else "-"

    for q in ratios:
        lines.append(f"{q['format']:<10} {q['compression']:<5} {q['size']:>10,} {fmt(q, 'bronze_over_duckdb'):>14} "
                     f"{fmt(q, 'silver_over_duckdb'):>14} {fmt(q, 'bronze_doubling'):>10} {fmt(q, 'silver_doubling'):>10} "
                     f"{fmt(q, 'duckdb_ingest_doubling'):>10} {fmt(q, 'silver_parse_once_speedup'):>10} "
                     f"{fmt(q, 'gold_over_duckdb'):>12} {fmt(q, 'run_all_over_duckdb'):>15} {fmt(q, 'run_all_doubling'):>10} "
                     f"{fmt(q, 'run_all_times_floor'):>14} {fmt(q, 'floor_times_duckdb_plain'):>19}")
    ingest = [q for q in ratios if "spark_ingest_over_duckdb" in q]
    if ingest:  # the ingest floor: Spark's own reader writing every field as text (bench/pyspark_floor.run_ingest)
        lines += ["", f"{'format':<10} {'gz':<5} {'rows':>10} {'Spark ingest/DuckDB':>20} {'bronze/Spark ingest':>20}"]
        lines += [f"{q['format']:<10} {q['compression']:<5} {q['size']:>10,} {fmt(q, 'spark_ingest_over_duckdb'):>20} "
                  f"{fmt(q, 'bronze_over_spark_ingest'):>20}" for q in ingest]
    lines += ["", "Targets (a report, not a test):"] + [f"  {t['text']}" for t in targets]
    failed = [c for c in checks if not c["equal"]]
    lines += ["", f"Equality checks: {len(checks) - len(failed)}/{len(checks)} equal"]
    lines += [f"  NOT EQUAL: {c['format']} {c['compression']} {c['size']} {c['check']}: ours={c.get('ours')} "
              f"duckdb={c.get('duckdb')}" for c in failed]
    return "\n".join(lines)


def _csv_ints(text: str) -> list[int]:
    return [int(float(part)) for part in text.split(",") if part.strip()]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_worker"]:
        return worker_main(argv[1])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=SHAPES, default="narrow",
                        help="narrow: 14 days by day; wide-span: 32 years by month, through gold and run-all")
    parser.add_argument("--sizes", default="", help="records in the one file, comma-separated "
                        f"(default {','.join(str(s) for s in SIZES)}; wide-span {','.join(str(s) for s in WIDE_SPAN_SIZES)})")
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--compressions", default="", help=f"default {','.join(COMPRESSIONS)}; wide-span plain")
    parser.add_argument("--repeats", type=int, default=1, help="runs per job (the median is shown)")
    parser.add_argument("--reparse-sizes", default="1000000",
                        help="sizes at which silver also runs parsing _raw as before bronze parsed once (comma-separated)")
    parser.add_argument("--no-layer-jobs", action="store_true",
                        help="wide-span: run-all, the PySpark floor and DuckDB only (no job per layer); run-all's "
                        "own silver and gold are checked")
    parser.add_argument("--work-dir", default="", help="where files and lakes go (default: a new folder under /tmp)")
    parser.add_argument("--keep", action="store_true", help="keep the lakes and DuckDB outputs")
    parser.add_argument("--result", default="", help="result name: <results dir>/<name>.json (default ingest, "
                        "or ingest-wide-span)")
    parser.add_argument("--results-dir", default=str(RESULTS_DIR), help="where the result goes (a quick check: elsewhere)")
    args = parser.parse_args(argv)
    wide = args.shape == WIDE_SPAN
    sizes = sorted(set(_csv_ints(args.sizes or ",".join(str(s) for s in (WIDE_SPAN_SIZES if wide else SIZES)))))
    reparse_sizes = set() if wide else set(_csv_ints(args.reparse_sizes))
    formats = [f for f in args.formats.split(",") if f]
    compressions = [c for c in (args.compressions or ("plain" if wide else ",".join(COMPRESSIONS))).split(",") if c]
    result_name = args.result or ("ingest-wide-span" if wide else "ingest")
    goals = WIDE_SPAN_TARGETS if wide else TARGETS
    unknown = [f for f in formats if f not in FORMATS] + [c for c in compressions if c not in COMPRESSIONS]
    if unknown:
        parser.error(f"unknown format or compression: {', '.join(unknown)}")
    work, log, env = job_workspace(args.work_dir, "ingest", CONTRACTS_DIR)  # validation on, the default heap
    started_at = utc_now()
    load_start = [round(x, 2) for x in os.getloadavg()]
    rows: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    failures: list[str] = []
    print(f"[bench] work dir {work}; job output in {log}", file=sys.stderr, flush=True)

    def save(complete: bool) -> Path:
        ratios = compute_ratios(rows)
        targets = compute_targets(rows, ratios, goals)
        return write_result(result_name, {
            "complete": complete, "shape": args.shape, "sizes": sizes, "formats": formats, "compressions": compressions,
            "repeats": args.repeats, "load_average_start": load_start, "rows": rows, "ratios": ratios,
            "targets": targets, "targets_defined": goals, "checks": checks, "failures": failures,
            "work_dir": str(work)}, started_at=started_at, results_dir=Path(args.results_dir))

    for landing_format in formats:
        for compression in compressions:
            for size in sizes:
                try:
                    done = bench_file(work, env, log, landing_format, compression, size, args.repeats, args.keep,
                                      reparse=size in reparse_sizes, shape=args.shape,
                                      layer_jobs=not (wide and args.no_layer_jobs))
                except JobError as exc:
                    failures.append(str(exc))
                    print(f"[bench] FAILED: {exc}", file=sys.stderr, flush=True)
                    continue
                rows.extend(done["rows"])
                checks.extend(done["checks"])
                save(complete=False)
    path = save(complete=True)
    ratios = compute_ratios(rows)
    print(format_table(rows, ratios, compute_targets(rows, ratios, goals), checks))
    print(f"\n[bench] wrote {path}", file=sys.stderr)
    if not args.keep:
        shutil.rmtree(work / "data", ignore_errors=True)
    return 1 if failures or any(not c["equal"] for c in checks) else 0


if __name__ == "__main__":
    raise SystemExit(main())
