"""Gold job: the table silver.<dataset> -> an Iceberg table gold.<table> for each gold in the contract
(``spark_jobs.lake.config.gold_table_name``: ``gold.iot_hourly``, ``gold.airquality_period_summary``).

Silver is read at one snapshot (recorded in the manifest as ``input_snapshots``, and in each gold commit as
its watermark), so a silver commit during the run cannot mix two versions. A run rebuilds only the output
dates whose silver partitions changed since the table's watermark (``jobs/increment.py``; everything with
``--full``). Every output is computed (and reconciled) before any is written; each is then committed with an
overwrite of the event dates it rebuilds (the whole table on a full run), so re-runs are idempotent. Counts: rows_in = silver rows read; rows_out = silver rows the
aggregates account for (the sum of each gold's ``RECONCILE_COLUMN``, which must equal rows_in for
every gold that declares one). Each gold table is its own commit: a run stopped between two of them
leaves the first new and the second as it was, both readable.
"""
from __future__ import annotations

from pyspark.sql import functions as F

from spark_jobs import quality
from spark_jobs.io import readers, tables
from spark_jobs.io.partitioning import gold_partitioning, silver_partitioning
from spark_jobs.jobs import increment
from spark_jobs.jobs.pseudonyms import load_key, pseudonymiser
from spark_jobs.jobs.runtime import JobRun
from spark_jobs.lake.config import gold_table_name
from spark_jobs.runs.manifest import InvariantViolation
from spark_jobs.tables.plan import publish_evolved
from spark_jobs.transforms.gold import load_gold


def pseudonymised(silver, run: JobRun):
    """With the contract's ``pseudonymise_gold``, the gold transformations read each subject-key column as
    the keyed hash of its value (``spark_jobs.jobs.pseudonyms.pseudonym``), so no gold column, derived
    ones included (a session id built from the user id), carries the value itself."""
    contract = run.contract
    keys = [c for c in (contract.subject_keys or ()) if c in silver.columns] if contract.pseudonymise_gold else []
    if not keys:
        return silver
    output = silver
    keyed_hash = pseudonymiser(run.spark, load_key(run.spark, run.lake))  # the key in a broadcast, not in the plan
    return output.select(*[keyed_hash(F.col(c)).alias(c) if c in keys else F.col(c) for c in output.columns])


def _load_gold_tables(run: JobRun) -> dict:
    """Each gold table of the contract, looked up once: name -> (the table, its Iceberg object or None when it is
    not created yet). The run reads its watermark and publishes through the same object (``tables.publish``)."""
    found = {}
    for name in run.contract.gold:
        tbl = tables.table(run.spark, run.lake, "gold", gold_table_name(run.contract.dataset, name))
        found[name] = (tbl, tables.load(run.spark, tbl))
    return found


def run_gold(run: JobRun) -> None:
    """Gold from the silver partitions that changed since each gold table's watermark (``jobs/increment.py``;
    every one with ``--full``, on a first run, or when a watermark is unknown): the output dates those changes
    feed, each rebuilt from the silver dates its gold module says it needs (``SILVER_DATES``). Silver is read at
    one snapshot, which each table's commit records as its new watermark."""
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
    gold_tables = _load_gold_tables(run)
    specs = {name: load_gold(name) for name in contract.gold}
    plan = increment.plan_gold(spark, silver_loaded, gold_tables, specs, full=run.full, date=manifest.date,
                               extra_dates=run.dates)
    manifest.mode = plan.mode
    manifest.increment = plan.record(snapshot["snapshot_id"]) if plan.mode != "date" else {}
    partitioning = silver_partitioning(contract)
    silver = tables.read(spark, silver_table, snapshot["snapshot_id"])
    if manifest.date:
        # The event-time range lets Iceberg prune to the one partition; event_date is the contract.
        day = partitioning.rows([manifest.date], include_null=False)
        silver = silver.where(F.expr(day)).where(F.col("event_date") == F.lit(manifest.date).cast("date"))
    elif plan.mode == "incremental":
        if not plan.read_dates and not plan.read_null:  # (a contract without gold tables too)
            run.stage("nothing new", silver_snapshot=snapshot["snapshot_id"])
            manifest.check_invariant()
            manifest.published = True  # nothing to commit: every table is up to date
            return
        silver = silver.where(F.expr(partitioning.rows(plan.read_dates, plan.read_null)))
    quality.prewarm()  # tables to validate: Great Expectations loads while silver is read
    # The whole table on a full run; else what the plan reads, as Spark sizes the pruned scan.
    input_bytes = (tables.snapshot_bytes(silver_loaded) if plan.mode == "full" else readers.planned_bytes(silver))
    small = run.size_for_input(input_bytes)
    run.stage("silver located", snapshot_id=snapshot["snapshot_id"], input_bytes=input_bytes, small_input=small,
              mode=plan.mode)
    # A small input is cached for the passes below (one read of its few files); a large one is not: each
    # pass reads only the columns it needs from the snapshot's Parquet, where a cache of every silver column
    # (10M rows over 384 months: 45 of gold's 66 CPU seconds) would be built and spilled first.
    if small:
        silver = silver.persist()
    # Rows in and the dates covered in one aggregation (one Spark job; it also fills the cache).
    read = silver.agg(F.count(F.lit(1)).alias("rows"), F.collect_set(F.col("event_date").cast("string")).alias("dates")).first()
    manifest.rows_in = int(read["rows"])
    silver_dates = sorted(read["dates"])
    if manifest.date:  # the date is recomputed even when silver no longer has rows for it (after an erasure)
        covered = {name: [manifest.date] for name in contract.gold}
    elif plan.mode == "incremental":
        covered = plan.outputs
    else:
        covered = {name: silver_dates for name in contract.gold}
    manifest.event_dates = sorted({d for dates in covered.values() for d in dates})
    run.stage("silver read", rows_in=manifest.rows_in, event_dates=len(manifest.event_dates))

    gold_input = pseudonymised(silver, run)
    built = []
    accounted: int | None = None
    for name in contract.gold:
        spec = specs[name]
        gold_partitioning_ = gold_partitioning(spec, contract.partition_granularity)
        output = spec.build(gold_input, dict(contract.gold_options.get(name, {})))
        # An incremental run reads a window around the dates it rebuilds (SILVER_DATES): the outputs of the
        # window's edges are partial and are left out; the reconciling sum counts every row read.
        keep = _output_filter(spec, plan, name) if plan.mode == "incremental" else None
        wanted = F.lit(True) if keep is None else keep
        totals = output.agg(F.count(F.when(wanted, 1)).alias("rows"),
                            *([F.sum(spec.reconcile_column).alias("total")] if spec.reconcile_column else [])).first()
        output = (output if keep is None else output.where(keep)).persist()
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
        built.append((spec, gold_partitioning_, output))
    manifest.rows_out = manifest.rows_in if accounted is None else accounted
    manifest.check_invariant()

    for spec, _, output in built:
        run.validate(output, gold_name=spec.name, silver_count=manifest.rows_in, rows=manifest.output_rows[spec.name])
        run.stage(f"validated {spec.name}")
    marks = None if manifest.date else {tables.SILVER_SNAPSHOT_MARK: str(snapshot["snapshot_id"])}
    for spec, gold_partitioning_, output in built:
        gold_table, loaded = gold_tables[spec.name]
        dates = covered[spec.name]
        include_null = not manifest.date and (plan.null.get(spec.name, False) if plan.mode == "incremental" else True)
        # The gold's output schema changed with the contract: the table evolves first (spark_jobs/tables/plan.py).
        created, manifest.evolution[spec.name] = publish_evolved(
            run, gold_table, output, "gold", gold_partitioning_, dates, include_null, loaded, marks,
            everything=plan.mode == "full")
        manifest.tables[spec.name] = created
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


def _output_filter(spec, plan: increment.GoldPlan, name: str):
    """The rows of the output dates this gold table rebuilds (and of the null date when it does): the run reads
    the silver dates every gold table of the contract needs (a window around each one's outputs:
    ``SILVER_DATES``), so a table's output holds other dates too, built from part of their input."""
    dates = plan.outputs.get(name, [])
    column = F.col(spec.partition_by[0])
    in_dates = column.cast("string").isin(dates) if dates else F.lit(False)
    return (in_dates | column.isNull()) if plan.null.get(name) else F.coalesce(in_dates, F.lit(False))
