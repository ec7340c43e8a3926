"""Render the "Latest results" section of bench/README.md from bench/results/*.json.

    .venv/bin/python -m bench.report            # rewrite the section in bench/README.md
    .venv/bin/python -m bench.report --print    # print it instead

Only the text between the BEGIN/END GENERATED markers is replaced. Each table says which result file,
machine and commit it came from, so a figure can always be traced to its run.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, RESULTS_DIR

README = REPO_ROOT / "bench" / "README.md"
BEGIN = "<!-- BEGIN GENERATED (bench/report.py) -->"
END = "<!-- END GENERATED -->"


def _num(value: Any, digits: int = 1) -> str:
    if value is None or value == "":
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) >= 1000):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def _table(rows: list[dict[str, Any]], columns: list[tuple[str, str]], digits: int = 1) -> list[str]:
    """Markdown table; ``columns`` are (key, header); a column absent from every row is dropped."""
    present = [(key, header) for key, header in columns if any(key in row for row in rows)]
    if not present:
        return []
    lines = ["| " + " | ".join(header for _, header in present) + " |",
             "|" + "|".join("---" for _ in present) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(_num(row.get(key), digits) for key, _ in present) + " |")
    return lines


def _provenance(result: dict[str, Any], path: Path) -> str:
    machine, git = result.get("machine", {}), result.get("git", {})
    commit = str(git.get("commit", "unknown"))[:12] + (" (uncommitted changes)" if git.get("dirty") else "")
    load = machine.get("load_average")
    rounds = result.get("rounds") or []
    if len(rounds) > 1:  # appended rounds: each names its own code; the load is in the table
        return (f"_From `bench/results/{path.name}`, {len(rounds)} rounds run {result.get('started_at') or '?'} – "
                f"{result.get('finished_at') or '?'}, each on the commits its rows name, "
                f"{machine.get('cores', '?')} cores, {machine.get('memory_gb', '?')} GB._")
    return (f"_From `bench/results/{path.name}`, run {result.get('started_at') or '?'} – "
            f"{result.get('finished_at') or '?'}, commit `{commit}`, {machine.get('cores', '?')} cores, "
            f"{machine.get('memory_gb', '?')} GB, load average at the end {load}._")


def _targets(result: dict[str, Any]) -> list[str]:
    targets = result.get("targets") or []
    if not targets:
        return []
    lines = ["", "Targets (a report, not a test):", ""]
    for target in targets:
        text = target.get("text") or f"{target.get('label')}: {target.get('value')}"
        lines.append(f"- {'met' if target.get('met') else '**below target**'}: {text.replace('  BELOW TARGET', '')}")
    return lines


PIPELINE_COLUMNS = [("dataset", "dataset"), ("size", "events"), ("storage", "storage"), ("layer", "layer"),
                    ("variant", "variant"), ("wall_s", "wall s"), ("wall_s_min", "min s"), ("wall_s_max", "max s"),
                    ("runs", "runs"), ("rows_in", "rows in"), ("rows_out", "rows out"),
                    ("rows_per_s", "rows/s"), ("peak_python_mb", "peak Python MB"),
                    ("peak_jvm_mb", "peak JVM MB")]
RATIO_COLUMNS = [("dataset", "dataset"), ("size", "events"), ("storage", "storage"), ("layer", "layer"),
                 ("ours_over_duckdb", "ours / DuckDB"), ("tuned_over_naive", "tuned / naive"),
                 ("validation_overhead", "validation overhead"), ("validation_share_of_job", "validation in job"),
                 ("gold_in_run_all_over_duckdb", "gold in run-all / DuckDB"),
                 ("pipeline_over_duckdb", "silver + gold in run-all / DuckDB"),
                 ("run_all_over_duckdb", "whole run-all / DuckDB silver + gold"), ("equal", "output equal (DuckDB; run-all: the layer jobs)")]
INFRA_COLUMNS = [("measure", "measure"), ("n_tenants", "tenants"), ("parallelism", "parallelism"),
                 ("wall_s", "wall s"), ("per_tenant_s", "s per tenant"), ("note", "note")]
INGEST_COLUMNS = [("format", "format"), ("compression", "compression"), ("size", "rows"), ("layer", "job"),
                  ("wall_s", "wall s"), ("runs", "runs"), ("session_s", "session s"), ("rows_in", "rows in"),
                  ("rows_out", "rows out"), ("rows_per_s", "rows/s"), ("peak_total_mb", "peak RSS MB")]
INGEST_RATIO_COLUMNS = [("format", "format"), ("compression", "compression"), ("size", "rows"),
                        ("bronze_over_duckdb", "bronze / DuckDB ingest"), ("silver_over_duckdb", "silver / DuckDB silver"),
                        ("ingest_over_duckdb", "bronze + silver / DuckDB silver"), ("bronze_doubling", "bronze x2"),
                        ("silver_doubling", "silver x2"), ("duckdb_ingest_doubling", "DuckDB ingest x2"),
                        ("duckdb_silver_doubling", "DuckDB silver x2"),
                        ("silver_parse_once_speedup", "silver parsing _raw / silver reading _fields"),
                        ("gold_over_duckdb", "gold / DuckDB gold"), ("gold_doubling", "gold x2"),
                        ("run_all_over_duckdb", "run-all / DuckDB silver + gold"),
                        ("run_all_times_duckdb", "run-all time / DuckDB's"), ("run_all_doubling", "run-all x2")]
SMALL_COLUMNS = [("run", "run"), ("dataset", "dataset"), ("layer", "layer"), ("wall_s", "wall s"), ("wall_s_min", "min s"),
                 ("wall_s_max", "max s"), ("runs", "runs"), ("step_lease", "lease"), ("step_listing", "listing"),
                 ("step_read + transform", "read + transform"), ("step_bronze batches", "bronze batches"),
                 ("step_validation (GX)", "validation (GX)"), ("step_Iceberg commit", "Iceberg commit"),
                 ("step_quarantine write", "quarantine write"), ("step_read-back", "read-back"),
                 ("step_manifest + report", "manifest + report"), ("step_other", "other"),
                 ("spark_jobs", "Spark jobs"), ("s3_requests", "S3 requests"), ("cpu_s", "CPU s"),
                 ("emulator_cpu_s", "emulator CPU s")]
SMALL_RUN_COLUMNS = [("round", "round"), ("run", "run"), ("small_inputs", "small-input session"),
                     ("session_s", "session start s"), ("layers_s", "layers s"),
                     ("counts_s", "counts table s"), ("run_all_s", "run-all s"), ("load", "load average before -> after")]
BACKFILL_COLUMNS = [("round", "round"), ("variant", "code"), ("layer", "layer"), ("wall_s", "wall s"), ("publish_s", "publish s"),
                    ("table_commit_s", "table commit s"), ("after_commit_s", "after commit s"),
                    ("rows_in", "rows in"), ("rows_out", "rows out"), ("load", "load average before -> after")]
EXPORT_COLUMNS = [("variant", "partitions"), ("rows", "rows"), ("mb", "MB"), ("infer_s", "contract infer s"),
                  ("land_s", "land s"), ("run_all_s", "run-all s"), ("peak_total_mb", "peak RSS MB"),
                  ("silver_rows", "silver rows"), ("quarantined", "quarantined"), ("gold_rows", "gold rows")]
ERASURE_COLUMNS = [("events", "events"), ("subjects", "subjects"), ("erase_driver_memory", "erase heap"), ("erase_s", "erase wall s"), ("status", "status"),
                   ("silver_rows_deleted", "silver rows deleted"), ("versions_read", "versions read"),
                   ("gb_read", "GB read"), ("versions_per_s", "versions/s"), ("mb_per_s", "MB/s"),
                   ("versions_skipped", "versions skipped"), ("peak_python_mb", "peak Python MB"),
                   ("peak_jvm_mb", "peak JVM MB"), ("peak_total_mb", "peak total MB"), ("run_all_s", "run-all s")]
BACKFILL_REQUEST_COLUMNS = [("round", "round"), ("variant", "code"), ("prefix", "prefix"), ("requests", "requests"),
                            ("per_partition", "per partition")]
BACKFILL_RATIO_COLUMNS = [("round", "round"), ("order", "order"), ("layer", "layer"), ("ours_over_baseline", "ratio (wall)"),
                          ("publish_ours_over_baseline", "ratio (publish)")]
MAINTENANCE_COLUMNS = [("stage", "table"), ("runs", "daily runs"), ("rows", "rows"), ("snapshots", "snapshots"),
                       ("data_files", "data files"), ("data_mb", "data MB"), ("retained_data_files", "files kept"),
                       ("retained_mb", "MB kept"), ("manifests", "manifests"), ("scan_s", "full scan s (median)"),
                       ("maintain_s", "maintain s"), ("rows_unchanged", "rows unchanged")]


def _section(title: str, result: dict[str, Any], path: Path, columns: list[tuple[str, str]]) -> list[str]:
    lines = [f"### {title}", "", _provenance(result, path), ""]
    lines += _table(result.get("rows") or [], columns)
    ratios = result.get("ratios")
    if result.get("benchmark") == "backfill" and ratios:
        lines += ["", "Ratios (each row says which two runs of its round it divides: Iceberg / baseline = the "
                      "Iceberg tables over the baseline's Parquet folders, month / day = month over day "
                      "partitions; below 1 is faster):", "", *_table(ratios, BACKFILL_RATIO_COLUMNS, digits=3)]
        lines += ["", "Checks: " + ", ".join(f"{c['check']} {'yes' if c.get('equal') else 'NO'}"
                                               for c in result.get("checks") or [])]
    if result.get("benchmark") == "backfill" and result.get("requests"):
        lines += ["", "S3 requests per lake prefix (the emulator's log), in all and per daily partition:", "",
                  *_table(result["requests"], BACKFILL_REQUEST_COLUMNS)]
    elif result.get("benchmark", "").startswith("ingest") and ratios:
        lines += ["", "Ratios (throughput, same rows: DuckDB time / ours; x2 = time(2n) / time(n), n = the row's size):",
                  "", *_table(ratios, INGEST_RATIO_COLUMNS, digits=3)]
        checks = result.get("checks") or []
        lines += ["", f"Equality checks: {sum(1 for c in checks if c.get('equal'))}/{len(checks)} equal."]
    elif result.get("benchmark", "").startswith("small") and result.get("runs"):
        lines += ["", "Each run-all (one process: the session start, the layers above, the counts table):", "",
                  *_table(result["runs"], SMALL_RUN_COLUMNS)]
        lines += ["", "Checks: " + ", ".join(f"{c['check']} {'yes' if c.get('equal') else 'NO'}"
                                               for c in result.get("checks") or [])]
    elif isinstance(ratios, list) and ratios:
        ratio_keys = ("ours_over_duckdb", "tuned_over_naive", "validation_overhead", "gold_in_run_all_over_duckdb",
                      "pipeline_over_duckdb")
        with_ratios = [row for row in ratios if any(row.get(key) is not None for key in ratio_keys)]
        lines += ["", "Ratios (throughput ratios; validation overhead = time with / without expectations − 1):", "",
                  *_table(with_ratios, RATIO_COLUMNS, digits=3)]
    if result.get("benchmark", "").startswith(("erasure", "export")) and result.get("checks"):
        lines += ["", "Checks: " + ", ".join(f"{c['check']} {'yes' if c.get('equal') else 'NO'}"
                                               for c in result["checks"])]
    lines += _targets(result)
    notes = result.get("notes") or []
    if notes:
        lines += ["", *[f"- {note}" for note in notes]]
    return lines + [""]


def render(results_dir: Path = RESULTS_DIR) -> str:
    sections: list[str] = []
    known = {"pipeline": ("Pipeline", PIPELINE_COLUMNS), "infra": ("Infrastructure", INFRA_COLUMNS),
             "backfill": ("Backfill", BACKFILL_COLUMNS), "maintenance": ("Maintenance", MAINTENANCE_COLUMNS),
             "ingest": ("Ingest", INGEST_COLUMNS), "small": ("Small inputs", SMALL_COLUMNS),
             "export": ("A first export", EXPORT_COLUMNS), "erasure": ("Erasure", ERASURE_COLUMNS)}
    for name, (title, columns) in known.items():
        path = results_dir / f"{name}.json"
        if path.exists():
            sections += _section(title, json.loads(path.read_text()), path, columns)
        else:
            sections += [f"### {title}", "", f"_No result yet: run `make bench-{name}` (writes bench/results/{name}.json)._", ""]
        # A run with --result <name>-<part> (e.g. one dataset measured in a run of its own) follows its kind.
        for extra in sorted(results_dir.glob(f"{name}-*.json")):
            part = extra.stem[len(name) + 1:]
            sections += _section(f"{title} ({part})", json.loads(extra.read_text()), extra, columns)
    return "\n".join(sections).rstrip() + "\n"


def update_readme(text: str, readme: Path = README) -> None:
    current = readme.read_text()
    if BEGIN not in current or END not in current:
        raise SystemExit(f"bench.report: {readme} lacks the {BEGIN} ... {END} markers")
    head, rest = current.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{BEGIN}\n{text}{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--print", action="store_true", help="print the section instead of updating the README")
    args = parser.parse_args(argv)
    text = render()
    if args.print:
        print(text)
    else:
        update_readme(text)
        print(f"bench.report: updated {README.relative_to(REPO_ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
