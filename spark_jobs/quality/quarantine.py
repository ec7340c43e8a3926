"""Link expectation failures to quarantined rows (our own row-level Spark logic, not GX).

Quarantined rows carry ``_failed_rules`` (array of rule names). Expectations carry the same names in
``rule``, so counts and sample rows per rule come from one small aggregation over the quarantine
DataFrame of this run (which is small next to the layer's output).

**Samples hold no personal data.** The reports land under ``reports/``, which the consumer role may read
(modules/README.md, "IAM roles"), while the quarantine's own files stay under ``quarantine/``, which it may not.
So a sample shows a quarantined record's fields through ``mask_record``: the value of a field the contract knows
and that holds no personal data as it came; the value of a subject key or ``personal_data`` field as
``[personal]``; the value of a field the contract does not know (which may be personal) as ``[unknown field]``;
and a record that cannot be read as fields at all (malformed JSON, a CSV line whose header the sample does not
carry) as a note of its length only. The erasure still reads every report (``spark_jobs/erasure/reports.py``).
"""
from __future__ import annotations

import json
from typing import Any, Mapping

SAMPLES_PER_RULE = 3   # sample quarantined rows shown per rule in the summary page
RAW_PREVIEW_CHARS = 200
PERSONAL_MASK = "[personal]"
UNKNOWN_MASK = "[unknown field]"


def _field(obj: Any, name: str, default: Any = None) -> Any:
    """``name`` of a contract (the model, or the plain mapping the quality tests use) or of one of its entries."""
    return obj.get(name, default) if isinstance(obj, Mapping) else getattr(obj, name, default)


def open_fields(contract: Any) -> tuple[frozenset[str], frozenset[str]]:
    """(the landing fields a sample may show, the personal ones): a field is open when a schema column reads it
    (its ``source``, else its name) and that column is neither a subject key nor ``personal_data``."""
    personal_columns = set(_field(contract, "subject_keys") or ()) | set(_field(contract, "personal_data") or ())
    shown, personal = set(), set()
    for column in _field(contract, "schema") or ():
        if _field(column, "computed"):
            continue  # computed from other fields: not a field of the landing record
        name = _field(column, "source") or _field(column, "name")
        (personal if _field(column, "name") in personal_columns else shown).add(name)
    return frozenset(shown - personal), frozenset(personal)


def _withheld(raw: str, why: str) -> str:
    return f"[{why}: {len(raw)} characters, not shown: they may hold personal data]"


def mask_record(raw: str | None, contract: Any) -> str | None:
    """A quarantined record's text as a sample may show it (the module's docstring says what is masked)."""
    if raw is None or contract is None:
        return None if raw is None else _withheld(raw, "record")
    shown, personal = open_fields(contract)
    landing = _field(contract, "landing") or {}
    fields: dict[str, Any] | None = None
    if _field(landing, "format") == "csv":
        if _field(landing, "header", True):
            return _withheld(raw, "csv record (its file's header names the fields)")
        from spark_jobs.contract.parts import LandingSpec
        from spark_jobs.landing.files import csv_reader

        spec = LandingSpec(**landing) if isinstance(landing, Mapping) else landing
        names = [_field(c, "source") or _field(c, "name") for c in _field(contract, "schema") or ()
                 if not _field(c, "computed")]
        rows = list(csv_reader(raw, spec))
        if len(rows) == 1 and len(rows[0]) == len(names):
            fields = dict(zip(names, rows[0]))
    else:
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            fields = parsed
    if fields is None:
        return _withheld(raw, "malformed record")
    masked = {name: value if name in shown else PERSONAL_MASK if name in personal else UNKNOWN_MASK
              for name, value in fields.items()}
    return json.dumps(masked, ensure_ascii=False)


def summarize(quarantine_df: Any, run_id: str | None = None, total: int | None = None,
              contract: Any = None) -> dict[str, Any]:
    """``{"total": n, "by_rule": {rule: rows}, "samples": {rule: [row dicts]}}`` for this run's quarantine.
    ``total``: the run's quarantined rows when the job has counted them already (silver has: its counts
    aggregation), which saves a Spark job; otherwise they are counted here. A sample's ``_raw`` is the record
    through ``mask_record`` (``contract``: the dataset's; without one, every record is withheld)."""
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
            samples[rule] = [_sample(s.asDict(), contract) for s in row["samples"][:SAMPLES_PER_RULE]]
    return {"total": int(total), "by_rule": by_rule, "samples": samples}


def _sample(row: dict[str, Any], contract: Any) -> dict[str, Any]:
    """One sample row: ``_raw`` masked (``mask_record``), every value cut to ``RAW_PREVIEW_CHARS``."""
    if "_raw" in row:
        row = {**row, "_raw": mask_record(None if row["_raw"] is None else str(row["_raw"]), contract)}
    return {k: (str(v)[:RAW_PREVIEW_CHARS] if v is not None else None) for k, v in row.items()}


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
