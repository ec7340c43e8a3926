"""Silver job: bronze/<dataset>/ -> the Iceberg table silver.<dataset>, and quarantine/<dataset>/event_date=.../
(``event_month=YYYY-MM/`` at ``month`` granularity).

Silver is recomputed from bronze (all of it, or the rows of one ``--date``): the output is a function
of the input. The table is partitioned by ``days(<event time>)`` (``months()`` with the contract's
``partition_granularity: month``) and each publish replaces exactly the event dates the run covers
(plus the null partition on a full run) in one Iceberg commit, so a re-run on the same bronze commits
the same rows; a month covered in part keeps its other dates' rows (``tables.replace_dates``). Counts are checked BEFORE anything is written:
``rows_in (bronze rows) = rows_out (silver) + quarantined + duplicates``; validation runs before the
commit too, and a blocked publish commits nothing. After the commit the records the new snapshot
added (its manifests' count, less a month's other dates written again) must equal ``rows_out``.

Volume: bronze is read and parsed ONCE, into a staging folder (``checkpoints/<dataset>/silver-staging/``,
removed at the end, whatever happens): every record, flagged (``flagged/``), then the deduped, late-flagged
silver rows (``rows/``, written once so the validation's passes and the commit do not dedupe again).
Every later step reads them back, column by column, so nothing
the size of the input is held in the heap (``run_silver``); the table commit clusters its rows by
partition (``io/tables.WRITE_OPTIONS``), so a file spanning hundreds of months fits the default heap.

Quarantine stays plain Parquet (written with dynamic partition overwrite): its objects expire by the
bucket's lifecycle rule after ``retention_days["quarantine"]``, which would corrupt an Iceberg table
(spark_jobs/README.md, "Quarantine").
"""
from __future__ import annotations

import functools

from pyspark.sql import functions as F

from spark_jobs import quality
from spark_jobs.contract.model import Contract
from spark_jobs.contract.parts import MALFORMED_RULE, UNKNOWN_FIELDS_RULE
from spark_jobs.io import readers, storage, tables, writers
from spark_jobs.io.partitioning import Partitioning, granule, silver_partitioning
from spark_jobs.jobs import increment
from spark_jobs.jobs.runtime import JobRun
from spark_jobs.lake.failures import JobFailed
from spark_jobs.runs.manifest import InvariantViolation
from spark_jobs.tables import plan as contract_plan
from spark_jobs.tables.plan import publish_evolved
from spark_jobs.transforms import bronze as bronze_tx
from spark_jobs.transforms import silver as silver_tx


QUARANTINE_PARTITION_COLUMNS = ("event_date", "event_month")
# Up to this many duplicated keys, only their rows are ranked (the keys broadcast, about 50 bytes each);
# more, and the dedupe ranks every row (``deduped``).
BROADCAST_DUPLICATE_KEYS = 1_000_000


def other_quarantine_layout(spark, uri: str, contract: Contract) -> list[str]:
    """Partition folders of the quarantine in the OTHER granularity's layout (``event_date=`` when the
    contract says month, ``event_month=`` when it says day): left by a run before the contract's
    ``partition_granularity`` changed. Spark cannot read a folder that mixes both."""
    column = silver_tx.quarantine_partition(contract)
    return [name for name in storage.list_dir(spark, uri)
            if name.split("=", 1)[0] in QUARANTINE_PARTITION_COLUMNS and not name.startswith(f"{column}=")]


def quarantine_kept(spark, uri: str, months: list[str], dates: list[str], columns: list[str]):
    """At ``month`` granularity: the quarantined rows of ``months`` (covered in part by this run) whose
    event date is not one of ``dates``; they are written again with the run's rows, because a
    partition is replaced whole. None when there are none (persisted otherwise: the write replaces
    the files they are read from)."""
    folders = [f"{uri}/event_month={month}" for month in months if storage.has_data_files(spark, f"{uri}/event_month={month}")]
    if not folders:
        return None
    existing = spark.read.option("basePath", uri).parquet(*folders)
    kept = (existing.where(~F.coalesce(F.col("event_date").cast("string").isin(list(dates)), F.lit(False)))
            .select(*columns).persist())
    if kept.count() == 0:
        kept.unpersist()
        return None
    return kept


def input_count_columns(contract: Contract) -> dict:
    """Every count the manifest needs from the flagged records, as aggregates computed while they are written
    (``writers.write_counted``: no Spark job of their own): rows in, valid, quarantined, malformed, the event
    dates covered, those of the valid rows and of the quarantined ones (and whether any of either has none),
    and the landing fields the ``unknown_fields`` rows failed on (named in a blocked publish's reason)."""
    invalid = silver_tx.is_invalid()
    event_date = F.to_date(contract.event_time).cast("string")
    return {
        "rows_in": F.count(F.lit(1)),
        "valid": F.count(F.when(~invalid, 1)),
        "quarantined": F.count(F.when(invalid, 1)),
        "malformed": F.count(F.when(F.array_contains("_failed_rules", MALFORMED_RULE), 1)),
        "dates": F.collect_set(event_date),
        "valid_dates": F.collect_set(F.when(~invalid, event_date)),
        "valid_null": F.max(F.when(~invalid, event_date.isNull())),
        "quarantine_dates": F.collect_set(F.when(invalid, event_date)),
        "quarantine_null": F.max(F.when(invalid, event_date.isNull())),
        "unknown_fields": F.array_distinct(F.flatten(F.collect_set("_unknown_fields"))),
    }


def input_counts(row: dict) -> dict:
    """The manifest's counts from the values of ``input_count_columns``."""
    return {"rows_in": int(row["rows_in"]), "valid": int(row["valid"]), "quarantined": int(row["quarantined"]),
            "malformed": int(row["malformed"]), "dates": sorted(row["dates"] or []),
            "valid_dates": sorted(row["valid_dates"] or []), "valid_null": bool(row["valid_null"]),
            "quarantine_dates": sorted(row["quarantine_dates"] or []),
            "quarantine_null": bool(row["quarantine_null"]), "unknown_fields": sorted(row["unknown_fields"] or [])}


def output_count_columns() -> dict:
    """(silver rows, late rows), computed while the silver rows are written."""
    return {"rows": F.count(F.lit(1)), "late": F.count(F.when(F.col("_is_late"), 1))}


FLAGGED_FOLDER, ROWS_FOLDER = "flagged", "rows"  # in the staging folder: every record flagged; the silver rows


def staging_folder(lake, dataset: str) -> str:
    """Where a silver run writes its flagged records (``FLAGGED_FOLDER``: typed, checked; the raw text of the
    invalid rows only) and then its silver rows (``ROWS_FOLDER``), once each, to read them back for each step
    instead of parsing bronze or deduping again, or holding them in memory."""
    return lake.staging(dataset, "silver")


def deduped(spark, valid, contract: Contract, prefer: str | None = None, keys=None):
    """``valid`` deduped on the contract key, and how many duplicates were dropped. The duplicated keys are
    found first (an aggregation of the key columns alone); up to ``BROADCAST_DUPLICATE_KEYS`` of them, only
    their rows are ranked (the others pass without a shuffle), more and every row is (one shuffle and sort).
    ``prefer``: the column that breaks the last tie (``silver_tx.dedupe_latest``). ``keys``: the key columns
    of ``valid``'s rows from a cheaper plan (every row's key, no row added or dropped); None: ``valid``'s own."""
    duplicates = silver_tx.duplicate_keys(valid if keys is None else keys, contract).persist()
    try:
        row = duplicates.agg(F.count(F.lit(1)).alias("keys"), F.sum(F.col("_rows") - 1).alias("dropped")).first()
        keys, dropped = int(row["keys"]), int(row["dropped"] or 0)
        if keys == 0:
            return valid, 0, None
        if keys > BROADCAST_DUPLICATE_KEYS:
            duplicates.unpersist()
            return silver_tx.dedupe_latest(valid, contract, prefer=prefer), dropped, None
        return silver_tx.dedupe_latest(valid, contract, duplicates, prefer=prefer), dropped, duplicates
    except BaseException:
        duplicates.unpersist()
        raise


def needs_reparse(spark, bronze, contract: Contract) -> bool:
    """Whether some bronze row holds another contract's parse (``silver_tx.parsed_for_another_contract``), so
    silver must parse ``_raw`` again. Bronze parsed its records once and stamped each row with the parse's id
    (``_fields_id``). When the footers of the files read prove, row group by row group, that every row holds
    this contract's id (no null, one value) or is malformed (silver does not parse those), no row needs it
    and no Spark job runs (``readers.row_group_statistics``). Otherwise (older bronze, another id, a null on a
    row not proven malformed, more files than the driver reads footers of) a Spark job looks for such a row."""
    columns = (bronze_tx.FIELDS_ID_COLUMN, "_is_malformed")
    if silver_tx.holds_parse(bronze):  # without them every well-formed row is parsed again: the job decides
        current = silver_tx.contract_fields_id(contract)
        groups = readers.row_group_statistics(spark, list(bronze.inputFiles()), columns)
        if groups is not None and all(group.get("_is_malformed") == (True, True, 0)
                                      or group.get(bronze_tx.FIELDS_ID_COLUMN) == (current, current, 0)
                                      for group in groups):
            return False
    return bool(bronze.where(silver_tx.parsed_for_another_contract(bronze, contract)).limit(1).count())


def run_silver(run: JobRun) -> None:
    """Silver from the bronze batches it has not taken yet (``jobs/increment.py``; all of them with ``--full``
    or on a first run): one pass over them (parse once, flag, write the flagged records to a staging folder),
    then each step reads back only the columns it needs: the counts, the partitions the new records touch
    (their dates, and those that hold their keys already), the dedupe over the new records and those
    partitions' current rows, the late flag (the silver rows written once more, to the same folder), the
    validation, the quarantine and the table commit (rows clustered by partition), which records the last
    batch taken. Nothing large is held in memory, so the heap does not grow with the rows or the partitions
    they span."""
    spark, lake, contract, manifest = run.spark, run.lake, run.contract, run.manifest
    dataset = contract.dataset
    silver_table = tables.table(spark, lake, "silver", dataset)
    bronze_uri, quarantine_uri = lake.bronze(dataset), lake.quarantine(dataset)
    manifest.inputs = [bronze_uri]
    manifest.outputs = {"silver": lake.silver(dataset), "quarantine": quarantine_uri}

    other_layout = other_quarantine_layout(spark, quarantine_uri, contract)
    if other_layout and manifest.date:  # checked before anything is read or written
        raise JobFailed(f"silver {dataset}: {quarantine_uri} holds partitions of the other granularity "
                        f"({', '.join(other_layout[:2])}{', ...' if len(other_layout) > 2 else ''}): the contract's "
                        f"partition_granularity is now {contract.partition_granularity}; run silver without --date "
                        "once, which rewrites the quarantine in the new layout", 2)
    if not storage.has_data_files(spark, bronze_uri):
        raise readers.MissingInputError(f"bronze {dataset} has no data at {bronze_uri}; run `python -m spark_jobs run "
                                        f"--dataset {dataset} --layer bronze` first")
    partitioning = silver_partitioning(contract)
    loaded = tables.load(spark, silver_table)
    reshaped = ""
    if other_layout:
        reshaped = f"the quarantine holds the other partition layout ({other_layout[0]})"
    elif loaded is not None and tables.spec_of(loaded) != [partitioning.spec]:
        reshaped = f"the table is partitioned by {tables.spec_of(loaded)}, the contract says {partitioning.spec}"
    plan = increment.plan_silver(spark, lake, contract, loaded, full=run.full, date=manifest.date, reshaped=reshaped)
    manifest.mode = plan.mode
    manifest.increment = plan.record()
    if not plan.batches:
        run.stage("nothing new", watermark=plan.watermark_before, bronze_committed=plan.upto)
        manifest.check_invariant()
        manifest.published = True  # nothing to commit: the table is up to date
        return
    quality.prewarm()  # rows to validate: Great Expectations loads while they are read
    schema = bronze_tx.bronze_schema(contract, readers.record_index_type(spark, bronze_uri))
    bronze = increment.read_bronze(spark, bronze_uri, schema, plan)
    input_bytes = readers.planned_bytes(bronze)
    run.stage("inputs listed", input_bytes=input_bytes, small_input=run.size_for_input(input_bytes), mode=plan.mode,
              batches=len(plan.batches))
    reparse = needs_reparse(spark, bronze, contract)
    parsed = silver_tx.parse_records(bronze, contract, reparse=reparse)
    if manifest.date:
        parsed = parsed.where(F.to_date(contract.event_time) == F.lit(manifest.date).cast("date"))
    staging = staging_folder(lake, dataset)
    writers.delete_path(spark, staging)
    flagged_uri = f"{staging}/{FLAGGED_FOLDER}"
    try:
        flagged, counted = writers.write_counted(silver_tx.narrow(silver_tx.flag_invalid_rows(parsed, contract), contract),
                                                 flagged_uri, input_count_columns(contract))
        _publish_from_staging(run, silver_table, loaded, plan, flagged, input_counts(counted), staging)
    finally:
        writers.delete_path(spark, staging)


def _touched(run: JobRun, loaded, valid, counts: dict) -> tuple[list[str], bool]:
    """The event dates (whole partitions) and whether the null partition an incremental run rewrites: the new
    valid records' dates, and the partitions whose current rows hold one of their keys (a key sent again with
    another event time moves its row; ``increment.moved_key_dates``)."""
    contract = run.contract
    dates, null = set(counts["valid_dates"]), counts["valid_null"]
    lookup: dict = {"skipped": "the key holds the event time"} if increment.key_holds_event_time(contract) else {}
    if not lookup and counts["valid"]:
        current = tables.read(run.spark, tables.table(run.spark, run.lake, "silver", contract.dataset),
                              tables.snapshot_now(loaded)["snapshot_id"])
        moved, moved_null = increment.moved_key_dates(current, valid, contract)
        lookup = {"dates_holding_keys": len(moved), "outside_new_dates": len(moved - dates)}
        dates |= moved
        null = null or moved_null
    run.manifest.increment["key_lookup"] = lookup
    return increment.whole_partitions(dates, contract.partition_granularity), null


def _publish_from_staging(run: JobRun, silver_table: tables.Table, loaded, plan, flagged, counts: dict,
                          staging: str) -> None:
    spark, contract, manifest = run.spark, run.contract, run.manifest
    dataset = contract.dataset
    rows_uri = f"{staging}/{ROWS_FOLDER}"
    new_rows = counts["rows_in"]
    manifest.quarantined, manifest.malformed = counts["quarantined"], counts["malformed"]
    run.stage("read + parsed", rows_in=new_rows)

    partitioning = silver_partitioning(contract)
    valid = silver_tx.valid_rows(flagged)
    # One row per landing file, computed once (not again by each pass of the validation and the write).
    newest = silver_tx.newest_per_file(valid, contract).persist()
    computed = silver_tx.to_silver(silver_tx.flag_late_rows(valid, contract, newest), contract)
    incremental = plan.mode == "incremental"
    current_rows, kept = None, []
    if incremental:
        covered_dates, include_null = _touched(run, loaded, valid, counts)
        current = tables.read(spark, silver_table, tables.snapshot_now(loaded)["snapshot_id"])
        current_rows = _as_contract(current.where(F.expr(partitioning.rows(covered_dates, include_null))), run, silver_table,
                                    loaded, partitioning)
    else:
        covered_dates, include_null = counts["dates"], not manifest.date
        kept = _kept_columns(run, loaded, partitioning)
    reread = 0
    if current_rows is not None:
        reread = current_rows.count()
        candidates = (computed.withColumn(INCOMING, F.lit(1))
                      .unionByName(current_rows.withColumn(INCOMING, F.lit(0)), allowMissingColumns=True))
    else:
        candidates = computed.withColumn(INCOMING, F.lit(1))
    valid_in = counts["valid"] + reread
    manifest.rows_in = new_rows + reread
    # The candidates' keys are the valid records' keys (the late flag's join keeps every row and key) and the
    # re-read rows' keys: their duplicates are found from those columns alone, without computing the late flag.
    keys = valid.select(*contract.key)
    if current_rows is not None:
        keys = keys.unionByName(current_rows.select(*contract.key))
    rows, dropped, duplicates = deduped(spark, candidates, contract, prefer=INCOMING, keys=keys)
    rows = rows.drop(INCOMING)
    if kept:
        rows = _carry_kept_values(spark, rows, silver_table, loaded, partitioning, covered_dates, include_null, kept)
    # The silver rows are written once (counted as they are written), to be read back (only the columns each
    # needs) by every pass of the validation and the commit, instead of each of them deduping and flagging again.
    silver, written = writers.write_counted(rows, rows_uri, output_count_columns())
    for small in (newest, duplicates):
        if small is not None:
            small.unpersist()
    quarantine = silver_tx.to_quarantine(silver_tx.invalid_rows(flagged), contract, run.run_id)
    manifest.rows_out, manifest.late = int(written["rows"]), int(written["late"])
    manifest.duplicates = valid_in - manifest.rows_out
    rewritten = {granule(day, contract.partition_granularity) for day in covered_dates}
    manifest.increment.update({"bronze_rows": new_rows, "silver_rows_reread": reread,
                               "partitions_rewritten": len(rewritten) + int(include_null)})
    run.stage("deduped + split", rows_out=manifest.rows_out, quarantined=manifest.quarantined,
              duplicates=manifest.duplicates, late=manifest.late, reread=reread)
    if manifest.duplicates != dropped:
        raise InvariantViolation(f"silver {dataset}: {dropped} duplicate rows found by key, but {manifest.duplicates} "
                                 "dropped by the dedupe")
    manifest.check_invariant()

    run.validate(silver, quarantine_df=quarantine, quarantine_rows=manifest.quarantined, rows=manifest.rows_out,
                 read_from_storage=True, rule_fields={UNKNOWN_FIELDS_RULE: counts["unknown_fields"]})
    run.stage("validated")
    manifest.event_dates = covered_dates
    # The quarantine first, then the table: the table's commit records the batches taken, so a run stopped in
    # between takes them again and replaces the same quarantine rows (an incremental quarantine write drops
    # the rows of the batches it writes before adding them).
    run.fence(f"quarantine/{dataset}")
    if incremental:
        write_quarantine_increment(run, quarantine, plan.batches, counts, staging)
    else:
        write_quarantine(run, quarantine, partitioning, covered_dates, counts["quarantine_dates"])
    run.stage("quarantine written", rows=manifest.quarantined)
    # The contract's allowed schema changes first, in one metadata commit, undone if the write fails
    # (spark_jobs/tables/plan.py); a full run covers the null partition too (rows without an event time).
    marks = None if plan.mode == "date" else {tables.BRONZE_BATCH_MARK: str(plan.watermark)}
    snapshot, manifest.evolution["silver"] = publish_evolved(run, silver_table, silver, "silver", partitioning,
                                                             covered_dates, include_null, loaded, marks)
    manifest.tables["silver"] = snapshot
    manifest.published = True
    run.stage("committed silver", snapshot_id=snapshot["snapshot_id"], event_dates=len(covered_dates),
              kept_rows=snapshot["kept_records"], watermark=plan.watermark)
    # The commit's own record count (from its manifests, as gold checks its commits) must be the rows computed,
    # plus at month granularity the rows of a month's other dates written again: no scan, no Spark job.
    written_rows = snapshot["added_records"] - snapshot["kept_records"]
    if written_rows != manifest.rows_out:
        raise InvariantViolation(f"silver {dataset}: {manifest.rows_out} rows computed (+{snapshot['kept_records']} kept) "
                                 f"but {silver_table.display} snapshot {snapshot['snapshot_id']} added "
                                 f"{snapshot['added_records']} for event dates {covered_dates}")
    manifest.output_rows = {"silver": manifest.rows_out, "quarantine": manifest.quarantined}
    run.stage("published", silver_rows=written_rows, event_dates=len(covered_dates))


INCOMING = "_incoming"  # 1 for a record computed by this run, 0 for a row read back from the table


def _as_contract(current, run: JobRun, silver_table: tables.Table, loaded, partitioning):
    """The table's current rows in the columns this run writes: renamed as the contract renames them, without
    the columns it drops (``contract plan``'s steps for the table), the rest as they are (a column the table
    keeps under ``additive`` keeps its values)."""
    expected = contract_plan.silver_schema(run.spark, run.contract)
    plan = contract_plan.table_plan(run.spark, silver_table, loaded, contract_plan.schema_columns(expected),
                                    run.contract, "silver", partitioning)
    for step in plan.steps:
        if step.op == "rename" and step.column in current.columns:
            current = current.withColumnRenamed(step.column, step.new_name)
        elif step.op == "drop" and step.column in current.columns:
            current = current.drop(step.column)
    return current


def _kept_columns(run: JobRun, loaded, partitioning) -> list[str]:
    """The columns a full or ``--date`` run must carry over from the table: those the contract removed under
    ``evolution: additive`` (``removed: true``), which the table keeps with their old values."""
    if tables.snapshot_now(loaded) is None or run.contract.evolution != "additive":
        return []
    ours = set(silver_tx.silver_columns(run.contract))
    removed = set(run.contract.removed_columns)
    return [name for name, _ in tables.table_columns(run.spark, loaded) if name not in ours and name in removed]


def _carry_kept_values(spark, rows, silver_table: tables.Table, loaded, partitioning, dates: list[str],
                       include_null: bool, kept: list[str]):
    """``rows`` recomputed from bronze, with the kept columns' values of the same records (their landing file
    and position) from the table's current rows: a record keeps the value it had; a record first seen now has
    none."""
    lineage = ["_source_file", "_record_index"]
    current = (tables.read(spark, silver_table, tables.snapshot_now(loaded)["snapshot_id"])
               .where(F.expr(partitioning.rows(dates, include_null)))
               .select(*[F.col(c).alias(f"_kept_{c}") for c in lineage], *kept))
    same_record = functools.reduce(lambda a, b: a & b, [F.col(c).eqNullSafe(F.col(f"_kept_{c}")) for c in lineage])
    return rows.join(current, same_record, "left").drop(*[f"_kept_{c}" for c in lineage])


def write_quarantine(run: JobRun, quarantine, partitioning: Partitioning, covered_dates: list[str],
                     quarantine_dates: list[str]) -> None:
    """Replace the quarantine partitions of the covered dates (``writers.replace_partitions``). At
    ``month`` granularity a month covered in part keeps its other dates' rows (``quarantine_kept``).
    A full run then removes the partitions of the other granularity's layout (``other_quarantine_layout``):
    it has just rewritten every date bronze holds, and the quarantine's retention (30 days by default)
    is shorter than bronze's (365), so those folders hold nothing bronze cannot recompute."""
    spark, contract, uri = run.spark, run.contract, run.lake.quarantine(run.contract.dataset)
    granularity, column = contract.partition_granularity, silver_tx.quarantine_partition(contract)
    present = {granule(day, granularity) for day in quarantine_dates}
    kept = quarantine_kept(spark, uri, partitioning.partial(covered_dates), covered_dates, quarantine.columns)
    if kept is not None:
        present |= {str(row[0]) for row in kept.select(column).distinct().collect()}
        quarantine = quarantine.unionByName(kept)
    writers.replace_partitions(quarantine, uri, [column], covered=sorted({granule(d, granularity) for d in covered_dates}),
                               present=sorted(present))
    if kept is not None:
        kept.unpersist()
    if not run.manifest.date:
        stale = other_quarantine_layout(spark, uri, contract)
        for name in stale:
            writers.delete_path(spark, f"{uri}/{name}")
        if stale:
            run.stage("quarantine moved to the new layout", removed_partitions=len(stale))


def write_quarantine_increment(run: JobRun, quarantine, batches: list[int], counts: dict, staging: str) -> None:
    """The quarantine of an incremental run: only the partitions its invalid records fall in, each rewritten
    with its current rows (less any of the batches this run takes: a run stopped before its table commit
    wrote them once already) and the new ones. Staged first (the rows are read from the folders they
    replace), then swapped in with dynamic partition overwrite."""
    spark, contract, uri = run.spark, run.contract, run.lake.quarantine(run.contract.dataset)
    if not counts["quarantined"]:
        return
    column = silver_tx.quarantine_partition(contract)
    values = sorted({granule(day, contract.partition_granularity) for day in counts["quarantine_dates"]})
    folders = [f"{uri}/{column}={value}" for value in values]
    if counts["quarantine_null"]:
        folders.append(f"{uri}/{column}={NULL_PARTITION}")
    present = [folder for folder in folders if storage.has_data_files(spark, folder)]
    rows = quarantine
    if present:
        current = (spark.read.schema(quarantine.schema).option("basePath", uri).parquet(*present)
                   .where(~F.col("_batch_id").isin([int(b) for b in batches])))
        rows = quarantine.unionByName(current.select(*quarantine.columns))
    staged = f"{staging}/quarantine"
    rows.write.mode("overwrite").parquet(staged)
    writers.replace_partitions(spark.read.parquet(staged), uri, [column])


NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # where Spark writes the rows whose partition value is null
