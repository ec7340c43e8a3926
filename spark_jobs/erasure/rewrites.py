"""Rewriting a dataset's layers without its subjects: bronze and quarantine partitions, the silver table.

- **Parquet layers** (bronze by ``_batch_id``, the quarantine by event date or month): the rows
  ``records.bronze_actions``/``quarantine_actions`` marked are removed or redacted, every touched
  partition staged in one write and swapped in one by one (``partitions``), each swap a journal step.
- **Silver**: the event dates that hold a subject's row or a mention are replaced in ONE commit, the way
  a silver run publishes (``tables.replace_dates``: whole partitions, a month's other dates carried over
  at month granularity): their rows without the subjects', the mentions redacted, every other row as it
  was. The rows ``records.silver_actions`` marks (on the executors) are told apart by a join on the contract
  key (null-safe), so the only literals in the plan are dates. (An Iceberg ``MERGE`` cannot do it: Spark skips resolving a MERGE
  into a table that accepts any schema, ``write.spark.accept-any-schema``, as the lake's tables do.)
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_jobs.contract.model import Contract
from spark_jobs.erasure import ErasureError, partitions, records
from spark_jobs.erasure.journal import Journal
from spark_jobs.erasure.matching import Needles
from spark_jobs.io import storage, tables, writers


class RewriteError(ErasureError):
    """A layer changed between the match and the rewrite; one line saying what to do."""


def rewrite_layer(spark, journal: Journal, *, layer: str, dataset: str, uri: str, column: str, staging_uri: str,
                  actions: DataFrame, counts: dict[str, dict[str, int]], needles: Needles,
                  progress=None) -> dict[str, int]:
    """Stage the touched partitions of one Parquet layer, then swap them one by one (journal steps
    ``stage:<layer>:<dataset>`` and ``<layer>:<dataset>:<column>=<value>``). ``counts``: partition value ->
    {"remove": n, "redact": n}, as matched."""
    values = sorted(counts)
    removed = sum(c.get(records.REMOVE, 0) for c in counts.values())
    redacted = sum(c.get(records.REDACT, 0) for c in counts.values())
    stage_step = f"stage:{layer}:{dataset}"
    if values and not journal.done(stage_step) and not partitions.staged(spark, staging_uri):
        read, written = partitions.stage_layer(spark, uri, column, values, staging_uri, actions, records.LINEAGE,
                                               lambda rows: records.redact(rows, needles))
        if read - removed != written:
            writers.delete_path(spark, staging_uri)
            raise RewriteError(f"{layer} {dataset}: {read} rows in the touched partitions, {removed} to remove, but "
                               f"{written} staged; did a pipeline run write meanwhile? run the erase command again")
    if values and not journal.done(stage_step):
        staged = [name.split("=", 1)[1] for name in storage.list_dir(spark, staging_uri) if name.startswith(f"{column}=")]
        journal.mark(stage_step, **{stage_step: sorted(staged)})
    staged_values = set(journal.fact(stage_step, []))
    for value in values:
        step = f"{layer}:{dataset}:{column}={value}"
        if journal.done(step):
            continue
        partition_uri, staged_uri = f"{uri}/{column}={value}", f"{staging_uri}/{column}={value}"
        if value not in staged_values:  # every row of it removed: nothing was staged
            writers.delete_path(spark, partition_uri)
        elif storage.exists(spark, staged_uri):  # not yet swapped (or cut off in the middle of its swap)
            partitions.swap(spark, partition_uri, staged_uri)
        journal.mark(step)
    if values:
        writers.delete_path(spark, staging_uri)
    if progress and values:
        progress(f"{dataset}: {layer} {removed} rows removed, {redacted} redacted in {len(values)} partitions")
    return {"partitions_rewritten": len(values), "rows_removed": removed, "rows_redacted": redacted}


def rewrite_silver(spark, tbl: tables.Table, contract: Contract, shared, run_id: str) -> dict[str, Any]:
    """Replace the silver event dates that hold a subject's row or a mention, in one commit; returns the
    counts, the event dates and the snapshot committed (None: nothing to change)."""
    from spark_jobs.jobs.silver import silver_partitioning

    nothing = {"rows_deleted": 0, "rows_redacted": 0, "event_dates": [], "snapshot_id": None}
    if tables.current_snapshot(spark, tbl) is None:
        return nothing
    keys = list(contract.key)
    needles: Needles = shared.value
    found = (records.silver_actions(tables.read(spark, tbl), contract, shared)
             .select(*keys, "event_date", records.ACTION).persist())
    try:
        summary = found.groupBy(records.ACTION).agg(F.count(F.lit(1)).alias("n"),
                                                    F.collect_set(F.col("event_date").cast("string")).alias("dates"),
                                                    F.max(F.col("event_date").isNull().cast("int")).alias("null_date")).collect()
        if not summary:
            return nothing
        counts = {r[records.ACTION]: int(r["n"]) for r in summary}
        dates = sorted({d for r in summary for d in r["dates"]})
        include_null = any(r["null_date"] for r in summary)
        partitioning = silver_partitioning(contract)
        current = tables.read(spark, tbl).where(F.expr(partitioning.rows(dates, include_null)))
        flagged = records.join_on_keys(current, found.select(*keys, records.ACTION), keys)
        redacted = records.redact(flagged.where(F.col(records.ACTION) == records.REDACT).select(*current.columns), needles)
        kept = flagged.where(F.col(records.ACTION).isNull()).select(*current.columns).unionByName(redacted)
        created = tables.replace_dates(kept, tbl, partitioning, dates, include_null, run_id)
    finally:
        found.unpersist()
    return {"rows_deleted": counts.get(records.REMOVE, 0), "rows_redacted": counts.get(records.REDACT, 0),
            "event_dates": dates, "snapshot_id": created.get("snapshot_id")}
