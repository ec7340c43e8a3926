"""Silver job: bronze/<dataset>/ -> the Iceberg table silver.<dataset>, and quarantine/<dataset>/event_date=.../.

Silver is recomputed from bronze (all of it, or the rows of one ``--date``): the output is a function
of the input. The table is partitioned by ``days(<event time>)`` and each publish replaces exactly the
event dates the run covers (plus the null partition on a full run) in one Iceberg commit, so a re-run
on the same bronze commits the same rows. Counts are checked BEFORE anything is written:
``rows_in (bronze rows) = rows_out (silver) + quarantined + duplicates``; validation runs before the
commit too, and a blocked publish commits nothing. After the commit the rows of the covered
partitions are read back from the new snapshot and must equal ``rows_out``.

Quarantine stays plain Parquet (written with dynamic partition overwrite): its objects expire by the
bucket's lifecycle rule after ``retention_days["quarantine"]``, which would corrupt an Iceberg table
(spark_jobs/README.md, "Quarantine").
"""
from __future__ import annotations

from pyspark.sql import functions as F

from spark_jobs.contract import MALFORMED_RULE, Contract
from spark_jobs.io import readers, tables, writers
from spark_jobs.jobs.runtime import JobRun
from spark_jobs.manifest import InvariantViolation
from spark_jobs.transforms import silver as silver_tx


def silver_partitioning(contract: Contract) -> tables.Partitioning:
    """``days(<event time>)`` for a timestamp event time (hidden: readers filter on the column itself);
    identity on a date event time."""
    kind = contract.column(contract.event_time).type
    return tables.Partitioning(contract.event_time, "day" if kind == "timestamp" else "identity")


def input_counts(flagged, contract: Contract) -> dict:
    """Every count the manifest needs from the flagged records, in ONE aggregation (one Spark job): rows
    in, valid, quarantined, malformed, the event dates covered and the event dates quarantined."""
    invalid = silver_tx.is_invalid()
    event_date = F.to_date(contract.event_time).cast("string")
    row = flagged.agg(
        F.count(F.lit(1)).alias("rows_in"),
        F.count(F.when(~invalid, 1)).alias("valid"),
        F.count(F.when(invalid, 1)).alias("quarantined"),
        F.count(F.when(F.array_contains("_failed_rules", MALFORMED_RULE), 1)).alias("malformed"),
        F.collect_set(event_date).alias("dates"),
        F.collect_set(F.when(invalid, event_date)).alias("quarantine_dates"),
    ).first()
    return {"rows_in": int(row["rows_in"]), "valid": int(row["valid"]), "quarantined": int(row["quarantined"]),
            "malformed": int(row["malformed"]), "dates": sorted(row["dates"]),
            "quarantine_dates": sorted(row["quarantine_dates"])}


def output_counts(silver) -> tuple[int, int]:
    """(silver rows, late rows) in one aggregation; it also fills the persisted silver frame."""
    row = silver.agg(F.count(F.lit(1)).alias("rows"), F.count(F.when(F.col("_is_late"), 1)).alias("late")).first()
    return int(row["rows"]), int(row["late"])


def run_silver(run: JobRun) -> None:
    """One pass over bronze: parse once, persist the narrow form, count in one aggregation, dedupe and
    flag late rows over the valid rows (persisted for validation and the write), then commit."""
    spark, lake, contract, manifest = run.spark, run.lake, run.contract, run.manifest
    dataset = contract.dataset
    silver_table = tables.table(spark, lake, "silver", dataset)
    bronze_uri, quarantine_uri = lake.bronze(dataset), lake.quarantine(dataset)
    manifest.inputs = [bronze_uri]
    manifest.outputs = {"silver": lake.silver(dataset), "quarantine": quarantine_uri}

    bronze = readers.read_layer(spark, bronze_uri, f"bronze {dataset}",
                                f"run `python -m spark_jobs run --dataset {dataset} --layer bronze` first")
    parsed = silver_tx.parse_records(bronze, contract)
    if manifest.date:
        parsed = parsed.where(F.to_date(contract.event_time) == F.lit(manifest.date).cast("date"))
    flagged = silver_tx.narrow(silver_tx.flag_invalid_rows(parsed, contract), contract).persist()
    counts = input_counts(flagged, contract)
    manifest.rows_in, manifest.quarantined, manifest.malformed = counts["rows_in"], counts["quarantined"], counts["malformed"]
    run.stage("parsed + validated", rows_in=manifest.rows_in)

    silver = silver_tx.to_silver(silver_tx.flag_late_rows(silver_tx.dedupe_latest(silver_tx.valid_rows(flagged), contract),
                                                          contract), contract).persist()
    quarantine = silver_tx.to_quarantine(silver_tx.invalid_rows(flagged), contract, run.run_id).persist()
    manifest.rows_out, manifest.late = output_counts(silver)
    manifest.duplicates = counts["valid"] - manifest.rows_out
    run.stage("deduped + split", rows_out=manifest.rows_out, quarantined=manifest.quarantined,
              duplicates=manifest.duplicates, late=manifest.late)
    manifest.check_invariant()

    run.validate(silver, quarantine_df=quarantine)
    covered_dates = manifest.event_dates = counts["dates"]
    partitioning = silver_partitioning(contract)
    # A full run covers the null partition too (rows without an event time, if a contract allows them).
    covered = partitioning.covering(covered_dates, include_null=not manifest.date)
    snapshot = tables.overwrite(silver, silver_table, partitioning, covered, run.run_id)
    manifest.tables["silver"] = tables.publish_record(spark, silver_table, snapshot)
    run.stage("committed silver", snapshot_id=snapshot["snapshot_id"], event_dates=len(covered_dates))
    writers.replace_partitions(quarantine, quarantine_uri, ["event_date"], covered=covered_dates,
                               present=counts["quarantine_dates"])
    manifest.published = True
    written_rows = tables.count_where(spark, silver_table, snapshot["snapshot_id"], covered)
    if written_rows != manifest.rows_out:
        raise InvariantViolation(f"silver {dataset}: {manifest.rows_out} rows computed but {written_rows} read back "
                                 f"from {silver_table.display} snapshot {snapshot['snapshot_id']} for event dates "
                                 f"{covered_dates}")
    manifest.output_rows = {"silver": manifest.rows_out, "quarantine": manifest.quarantined}
    run.stage("published", silver_rows=written_rows, event_dates=len(covered_dates))
    for df in (flagged, silver, quarantine):
        df.unpersist()
