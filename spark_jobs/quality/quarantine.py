"""Link expectation failures to quarantined rows (our own row-level Spark logic, not GX).

Quarantined rows carry ``_failed_rules`` (array of rule names). Expectations carry the same names in
``rule``, so counts and sample rows per rule come from one small aggregation over the quarantine
DataFrame of this run (which is small next to the layer's output).
"""
from __future__ import annotations

from typing import Any

SAMPLES_PER_RULE = 3   # sample quarantined rows shown per rule in the summary page
RAW_PREVIEW_CHARS = 200


def summarize(quarantine_df: Any, run_id: str | None = None, total: int | None = None) -> dict[str, Any]:
    """``{"total": n, "by_rule": {rule: rows}, "samples": {rule: [row dicts]}}`` for this run's quarantine.
    ``total``: the run's quarantined rows when the job has counted them already (silver has: its counts
    aggregation), which saves a Spark job; otherwise they are counted here."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if quarantine_df is None:
        return {"total": 0, "by_rule": {}, "samples": {}}
    rows = quarantine_df
    if run_id and "_run_id" in rows.columns:
        rows = rows.where(F.col("_run_id") == run_id)
    preview_columns = [c for c in ("_source_file", "_raw") if c in rows.columns]
    exploded = rows.select(F.explode_outer("_failed_rules").alias("_rule"), *preview_columns)
    ranked = exploded.withColumn(
        "_n", F.row_number().over(Window.partitionBy("_rule").orderBy(*[F.col(c) for c in preview_columns] or [F.lit(1)])))
    # One pass: per-rule counts and the first few rows per rule together.
    collected = ranked.groupBy("_rule").agg(
        F.count(F.lit(1)).alias("rows"),
        F.collect_list(F.when(F.col("_n") <= SAMPLES_PER_RULE, F.struct(*preview_columns))).alias("samples"),
    ).collect() if preview_columns else ranked.groupBy("_rule").agg(F.count(F.lit(1)).alias("rows")).collect()
    total = rows.count() if total is None else total
    by_rule, samples = {}, {}
    for row in sorted(collected, key=lambda r: (-r["rows"], str(r["_rule"]))):
        rule = row["_rule"] or "(no rule)"
        by_rule[rule] = int(row["rows"])
        if preview_columns:
            samples[rule] = [{k: (str(v)[:RAW_PREVIEW_CHARS] if v is not None else None) for k, v in s.asDict().items()}
                             for s in row["samples"][:SAMPLES_PER_RULE]]
    return {"total": int(total), "by_rule": by_rule, "samples": samples}


def apply_quarantine(results: list[dict[str, Any]], summary: dict[str, Any], default_mostly: float) -> None:
    """Judge each rule-linked expectation on the candidate rows: published rows plus quarantined ones.

    GX saw only the published rows (quarantine already removed the bad ones). For an expectation whose
    ``rule`` names a quarantine reason, the rows quarantined for that rule are added back:
    ``unexpected = unexpected in published + quarantined for the rule`` over
    ``published + quarantined (parsed) rows``, judged against ``mostly`` (``default_mostly`` if unset).
    GX's own figures stay in ``published_unexpected`` / ``published_success``. Updates ``results`` in place.
    """
    by_rule = summary.get("by_rule", {})
    parsed_quarantined = max(int(summary.get("total", 0)) - int(by_rule.get("malformed_record", 0)), 0)
    published = next((r.get("observed_value") for r in results if r["name"] == "row_count"), None)
    published = published if isinstance(published, int) else 0
    candidates = published + parsed_quarantined
    for result in results:
        rule = result.get("rule")
        result["quarantined_rows"] = int(by_rule.get(rule, 0)) if rule else 0
        if not rule or rule == "malformed_record":
            continue
        published_unexpected = int(result.get("unexpected_count") or 0)
        unexpected = published_unexpected + result["quarantined_rows"]
        mostly = result["mostly"] if result.get("mostly") is not None else default_mostly
        rate = unexpected / candidates if candidates else 0.0
        result.update({
            "published_success": result["success"],
            "published_unexpected": published_unexpected,
            "element_count": candidates,
            "unexpected_count": unexpected,
            "unexpected_percent": round(100 * rate, 4),
            "effective_mostly": mostly,
            "success": bool(result["success"]) and rate <= (1 - mostly) + 1e-12,
            "observed_value": (f"{unexpected} unexpected of {candidates} candidate rows "
                               f"({result['quarantined_rows']} quarantined, {published_unexpected} published)"),
        })
        base = "" if result.get("threshold") in (None, "-") else result["threshold"] + "; "
        result["threshold"] = base + f"at most {100 * (1 - mostly):.2f} % of candidate rows (mostly={mostly})"
