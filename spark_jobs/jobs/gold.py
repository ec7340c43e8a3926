"""Gold job: the table silver.<dataset> -> an Iceberg table gold.<table> for each gold in the contract
(``spark_jobs.lake.gold_table_name``: ``gold.iot_hourly``, ``gold.airquality_period_summary``).

Silver is read at one snapshot (recorded in the manifest as ``input_snapshots``), so a silver commit
during the run cannot mix two versions. Every output is computed (and reconciled) before any is
written; each is then committed with an overwrite of the event dates read (plus the null partition on
a full run), so re-runs are idempotent. Counts: rows_in = silver rows read; rows_out = silver rows the
aggregates account for (the sum of each gold's ``RECONCILE_COLUMN``, which must equal rows_in for
every gold that declares one). Each gold table is its own commit: a run stopped between two of them
leaves the first new and the second as it was, both readable.
"""
from __future__ import annotations

from pyspark.sql import functions as F

from spark_jobs.contract_plan import evolve_for_write
from spark_jobs.io import readers, tables
from spark_jobs.jobs.partitioning import GoldPartitioningError, gold_partitioning, silver_partitioning  # noqa: F401
from spark_jobs.jobs.runtime import JobRun
from spark_jobs.lake import gold_table_name
from spark_jobs.manifest import InvariantViolation
from spark_jobs.transforms.gold import load_gold


def pseudonymised(silver, run: JobRun):
    """With the contract's ``pseudonymise_gold``, the gold transformations read each subject-key column as
    the keyed hash of its value (``spark_jobs.erasure.subjects.pseudonym``), so no gold column, derived
    ones included (a session id built from the user id), carries the value itself."""
    contract = run.contract
    keys = [c for c in (contract.subject_keys or ()) if c in silver.columns] if contract.pseudonymise_gold else []
    if not keys:
        return silver
    output = silver
    from spark_jobs.erasure.subjects import load_key, pseudonymiser

    keyed_hash = pseudonymiser(run.spark, load_key(run.spark, run.lake))  # the key in a broadcast, not in the plan
    return output.select(*[keyed_hash(F.col(c)).alias(c) if c in keys else F.col(c) for c in output.columns])


def _load_gold_tables(run: JobRun) -> dict:
    """Each gold table of the contract, looked up once (None: not created yet): the run asks it whether it
    has data and publishes through the same object (``tables.publish``), instead of looking it up again."""
    return {name: tables.load(run.spark, tables.table(run.spark, run.lake, "gold", gold_table_name(run.contract.dataset, name)))
            for name in run.contract.gold}


def _every_gold_table_has_data(gold_tables: dict) -> bool:
    """Every gold table of the contract has a snapshot: only then may gold read just the dates silver
    replaced (a gold table new in the contract needs every silver date)."""
    return all(tables.snapshot_now(loaded) is not None for loaded in gold_tables.values())


def run_gold(run: JobRun) -> None:
    spark, lake, contract, manifest = run.spark, run.lake, run.contract, run.manifest
    dataset = contract.dataset
    silver_table = tables.table(spark, lake, "silver", dataset)
    manifest.inputs = [silver_table.location]
    hint = f"run `python -m spark_jobs run --dataset {dataset} --layer silver` first"
    silver_loaded = tables.load(spark, silver_table)
    snapshot = tables.snapshot_now(silver_loaded)
    if snapshot is None:
        raise readers.MissingInputError(f"silver {dataset} has no data in table {silver_table.display} "
                                        f"({silver_table.location}); {hint}")
    manifest.input_snapshots = {silver_table.display: snapshot["snapshot_id"]}
    input_bytes = tables.snapshot_bytes(silver_loaded)  # the whole table: at most what this run reads
    small = run.size_for_input(input_bytes)
    run.stage("silver located", snapshot_id=snapshot["snapshot_id"], input_bytes=input_bytes, small_input=small)
    silver = tables.read(spark, silver_table, snapshot["snapshot_id"])
    if manifest.date:
        # The event-time range lets Iceberg prune to the one partition; event_date is the contract.
        day = silver_partitioning(contract).rows([manifest.date], include_null=False)
        silver = silver.where(F.expr(day)).where(F.col("event_date") == F.lit(manifest.date).cast("date"))
    gold_tables = _load_gold_tables(run)
    dates = run.dates if run.dates is not None and _every_gold_table_has_data(gold_tables) else None
    if dates is not None and not manifest.date:
        # run-all: only the event dates the silver run before this one replaced, and the null partition
        # (that run was a full one); the other dates' gold is already built from unchanged silver.
        silver = silver.where(F.expr(silver_partitioning(contract).rows(dates, include_null=True)))
    # A small input is cached for the passes below (one read of its few files); a large one is not: each
    # pass reads only the columns it needs from the snapshot's Parquet, where a cache of every silver column
    # (10M rows over 384 months: 45 of gold's 66 CPU seconds) would be built and spilled first.
    if small:
        silver = silver.persist()
    # Rows in and the dates covered in one aggregation (one Spark job; it also fills the cache).
    read = silver.agg(F.count(F.lit(1)).alias("rows"), F.collect_set(F.col("event_date").cast("string")).alias("dates")).first()
    manifest.rows_in = int(read["rows"])
    if manifest.date:  # the date is recomputed even when silver no longer has rows for it (after an erasure)
        covered_dates = [manifest.date]
    else:
        covered_dates = sorted(set(dates)) if dates is not None else sorted(read["dates"])
    manifest.event_dates = covered_dates
    run.stage("silver read", rows_in=manifest.rows_in, event_dates=len(covered_dates))

    gold_input = pseudonymised(silver, run)
    built = []
    accounted: int | None = None
    for name in contract.gold:
        spec = load_gold(name)
        partitioning = gold_partitioning(spec, contract.partition_granularity)
        output = spec.build(gold_input, dict(contract.gold_options.get(name, {}))).persist()
        # Rows and the reconciling sum in one aggregation (one Spark job, which also fills the cache).
        totals = output.agg(F.count(F.lit(1)).alias("rows"),
                            *([F.sum(spec.reconcile_column).alias("total")] if spec.reconcile_column else [])).first()
        rows = int(totals["rows"])
        manifest.output_rows[name] = rows
        manifest.outputs[name] = lake.gold(dataset, name)
        if spec.reconcile_column:
            total = int(totals["total"] or 0)
            if total != manifest.rows_in:
                raise InvariantViolation(f"gold {dataset}.{name}: sum({spec.reconcile_column}) = {total} but "
                                         f"{manifest.rows_in} silver rows were read")
            accounted = total
        run.stage(f"built {name}", rows=rows)
        built.append((spec, partitioning, output))
    manifest.rows_out = manifest.rows_in if accounted is None else accounted
    manifest.check_invariant()

    for spec, _, output in built:
        run.validate(output, gold_name=spec.name, silver_count=manifest.rows_in, rows=manifest.output_rows[spec.name])
        run.stage(f"validated {spec.name}")
    for spec, partitioning, output in built:
        gold_table = tables.table(spark, lake, "gold", gold_table_name(dataset, spec.name))
        # The gold's output schema changed with the contract: the table evolves first (spark_jobs/contract_plan.py).
        aligned, loaded, manifest.evolution[spec.name] = evolve_for_write(run, gold_table, output, "gold", partitioning,
                                                                          gold_tables[spec.name])
        created = manifest.tables[spec.name] = tables.publish(aligned, gold_table, partitioning, covered_dates,
                                                              not manifest.date, run.run_id, loaded)
        manifest.published = True
        # The commit's own record count (from its manifests) must be the rows computed (plus, at month
        # granularity, the rows of a month's other dates written again); a scan per gold table would add
        # a Spark job each (silver, the input, is read back with a scan).
        if created["added_records"] != manifest.output_rows[spec.name] + created["kept_records"]:
            raise InvariantViolation(f"gold {dataset}.{spec.name}: {manifest.output_rows[spec.name]} rows computed "
                                     f"(+{created['kept_records']} kept) but snapshot {created['snapshot_id']} "
                                     f"added {created['added_records']}")
        run.stage(f"published {spec.name}", rows=created["added_records"], snapshot_id=created["snapshot_id"])
        output.unpersist()
    # Every table of the contract is committed; a contract without gold tables has nothing to publish.
    manifest.published = True
    if small:
        silver.unpersist()
