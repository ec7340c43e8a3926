"""The erase job: remove every record of some data subjects from a tenant's lake, with a receipt.

For each dataset whose contract lists the subject's column in ``subject_keys``, in this order (each step
recorded in the request's journal, ``checkpoints/_erasure/<request>/state.json``, and idempotent, so a
run killed at any point is finished by running the same command again):

1. **lock** the dataset (``checkpoints/<ds>/erasure.lock``): pipeline runs of it are refused until the
   request completes;
2. **catch up bronze** (one ``availableNow`` bronze run), so every landing file is ingested;
3. **match**: bronze rows whose contract-typed subject column equals the (normalised) value, or that are
   malformed and mention it; their lineage (``_source_file``, ``_record_index``) is written to the
   journal folder, the event dates and bronze batches they touch are recorded;
4. **quarantine**, then **bronze**: each touched partition is rewritten without those rows (staged, then
   swapped: ``spark_jobs.erasure.partitions``);
5. **silver**: an Iceberg row-level ``DELETE``;
6. **gold**: each touched event date is recomputed from silver (a gold run per date);
7. **landing**: the ingested files that held a subject's record are deleted (bronze keeps the other
   records; the bronze checkpoint keeps their names, so nothing is ingested twice);
8. **tables**: ``expire_snapshots`` (all but the current) and ``remove_orphan_files`` on the dataset's
   silver and gold tables, so no snapshot still references the old files.

Then, for the whole lake: **reports** (``reports/`` but the receipts, ``athena/`` results, ``logs/``):
a text object that mentions a subject is rewritten with ``[erased]`` in its place, any other object that
does is deleted; the local report mirror is scrubbed the same way. **Purge**: every noncurrent object
version that holds a subject is deleted. **Verify**: every version of every object in the bucket is read
(``spark_jobs.erasure.objects``) and must hold no subject; for a request limited to some datasets, a
version in a left-out dataset's own objects is listed apart (``outside_request``), not held against it. The **receipt**
(``reports/erasure/<request>/receipt.json``) records keyed hashes of the subjects (never the ids), what
was touched per dataset and layer, the versions removed and the verification scan.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import time
from typing import Any, Callable

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from spark_jobs.contract import Contract, load_contract
from spark_jobs.erasure import INBOX_PREFIX, objects, partitions
from spark_jobs.erasure.subjects import Subject, SubjectError, load_key, normalised, pseudonym, request_id, subject_hash
from spark_jobs.io import storage, tables, writers
from spark_jobs.lake import LakeConfig, gold_table_name
from spark_jobs.leases import active_request, live_leases, lock_uri
from spark_jobs.transforms import bronze as bronze_tx
from spark_jobs.transforms import silver as silver_tx

RECEIPTS_PREFIX = "reports/erasure/"
SCRUBBED_PREFIXES = ("reports/", "athena/", "logs/")
REPLACEMENT = "[erased]"
LINEAGE = ("_source_file", "_record_index")
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
class ErasureError(RuntimeError):
    """The request cannot run as asked; one line saying what to do."""


# ------------------------------------------------------------------------------------------- journal
@dataclasses.dataclass
class Journal:
    """The request's progress, in the lake (job role only), rewritten after every step."""

    spark: SparkSession
    uri: str
    state: dict[str, Any]

    @classmethod
    def open(cls, spark: SparkSession, uri: str, fresh: dict[str, Any]) -> "Journal":
        state = json.loads(storage.read_text(spark, uri)) if storage.exists(spark, uri) else fresh
        return cls(spark, uri, state)

    def done(self, step: str) -> bool:
        return step in self.state["done"]

    def mark(self, step: str, **facts: Any) -> None:
        self.state["done"].append(step)
        for key, value in facts.items():
            self.state.setdefault("facts", {})[key] = value
        self.save()

    def fact(self, key: str, default: Any = None) -> Any:
        return self.state.get("facts", {}).get(key, default)

    def save(self) -> None:
        storage.write_text(self.spark, self.uri, json.dumps(self.state, indent=1, sort_keys=True))


# ------------------------------------------------------------------------------------------- matching
def _subjects_of(contract: Contract, subjects: list[Subject]) -> list[Subject]:
    return [s for s in subjects if s.column in (contract.subject_keys or ())]


def typed_match(contract: Contract, subjects: list[Subject]) -> Column:
    """Rows of silver (or parsed bronze) that belong to a subject: the typed column equals the value."""
    terms = [F.col(s.column) == F.lit(normalised(contract, s)) for s in subjects]
    condition = terms[0]
    for term in terms[1:]:
        condition = condition | term
    return F.coalesce(condition, F.lit(False))


def raw_mention(subjects: list[Subject], malformed_only: Column | None = None) -> Column:
    """Rows whose raw text mentions a subject's value (case-insensitive); with ``malformed_only``, only
    among rows where that column is true."""
    terms = [F.instr(F.lower(F.col("_raw")), s.value.strip().lower()) > 0 for s in subjects]
    condition = terms[0]
    for term in terms[1:]:
        condition = condition | term
    if malformed_only is not None:
        condition = malformed_only & condition
    return F.coalesce(condition, F.lit(False))


def _partition_values(spark: SparkSession, uri: str, column: str) -> list[str]:
    return sorted(name.split("=", 1)[1] for name in storage.list_dir(spark, uri) if name.startswith(f"{column}="))


# ------------------------------------------------------------------------------------------- the job
@dataclasses.dataclass
class EraseRun:
    spark: SparkSession
    lake: LakeConfig
    subjects: list[Subject]
    key: bytes
    request: str
    dry_run: bool
    progress: Callable[[str], None]
    started: float = dataclasses.field(default_factory=time.monotonic)

    def say(self, line: str) -> None:
        self.progress(f"[erase {self.request}] {line} ({time.monotonic() - self.started:.1f}s)")

    @property
    def work_uri(self) -> str:
        return self.lake.path("checkpoints", "_erasure", self.request)

    @property
    def work_prefix(self) -> str:
        return f"checkpoints/_erasure/{self.request}/"


def _match_dataset(run: EraseRun, contract: Contract, journal: Journal) -> dict[str, Any]:
    """Step 3 (and the dry run's whole work): what the subjects touch in this dataset."""
    spark, lake, dataset = run.spark, run.lake, contract.dataset
    subjects = _subjects_of(contract, run.subjects)
    matches_uri = f"{run.work_uri}/matches/{dataset}"
    found: dict[str, Any] = {"bronze_rows": 0, "bronze_batches": {}, "landing_files": [], "event_dates": [],
                             "quarantine_rows": 0, "quarantine_partitions": {}, "silver_rows": 0}
    rows: list = []
    if storage.has_data_files(spark, lake.bronze(dataset)):
        if run.dry_run or not partitions.staged(spark, matches_uri):
            bronze = spark.read.schema(bronze_tx.bronze_schema(contract)).parquet(lake.bronze(dataset))
            parsed = silver_tx.parse_records(bronze, contract)
            hits = parsed.where(typed_match(contract, subjects) | raw_mention(subjects, F.col("_is_malformed")))
            hits = hits.select(*LINEAGE, "_batch_id", F.to_date(contract.event_time).cast("string").alias("event_date"))
            if run.dry_run:
                rows = hits.collect()
            else:
                hits.coalesce(1).write.mode("overwrite").parquet(matches_uri)
        if not run.dry_run:
            rows = spark.read.parquet(matches_uri).collect()
        found["bronze_rows"] = len(rows)
        found["bronze_batches"] = _counts(str(r["_batch_id"]) for r in rows)
        found["landing_files"] = sorted({r["_source_file"] for r in rows})
        found["event_dates"] = sorted({r["event_date"] for r in rows if r["event_date"]})
    quarantine_uri = lake.quarantine(dataset)
    column = silver_tx.quarantine_partition(contract)
    if storage.has_data_files(spark, quarantine_uri):
        from spark_jobs.jobs.silver import other_quarantine_layout

        if other_quarantine_layout(spark, quarantine_uri, contract):
            raise ErasureError(f"{quarantine_uri} holds partitions of both granularities (the contract's "
                               f"partition_granularity changed to {contract.partition_granularity}); run "
                               f"`python -m spark_jobs run --dataset {dataset} --layer silver` once, then the erase command again")
        quarantine = spark.read.parquet(quarantine_uri)
        lineage = {(r["_source_file"], int(r["_record_index"])) for r in rows} if found["bronze_rows"] else set()
        keyed = spark.createDataFrame(sorted(lineage) or [("", -1)], "_source_file string, _record_index long")
        q_hits = (quarantine.join(F.broadcast(keyed.withColumn("_hit", F.lit(True))), list(LINEAGE), "left")
                  .where(F.coalesce(F.col("_hit"), F.lit(False)) | raw_mention(subjects)))
        q_rows = q_hits.select(F.coalesce(F.col(column).cast("string"), F.lit(HIVE_NULL)).alias("p")).collect()
        found["quarantine_rows"] = len(q_rows)
        found["quarantine_partitions"] = _counts(r["p"] for r in q_rows)
    silver_table = tables.table(spark, lake, "silver", dataset)
    if tables.current_snapshot(spark, silver_table) is not None:
        silver_hits = tables.read(spark, silver_table).where(typed_match(contract, subjects))
        dates = silver_hits.select(F.col("event_date").cast("string")).distinct().collect()
        found["silver_rows"] = silver_hits.count()
        found["event_dates"] = sorted(set(found["event_dates"]) | {r[0] for r in dates if r[0]})
    return found


def _counts(values) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return dict(sorted(counts.items()))


def _rewrite_partitions(run: EraseRun, journal: Journal, layer: str, dataset: str, uri: str, column: str,
                        values: dict[str, int], subjects: list[Subject], malformed_only: bool) -> dict[str, int]:
    """Step 4 for one layer: every touched partition staged and swapped (``partitions``)."""
    spark = run.spark
    keyed = spark.read.parquet(f"{run.work_uri}/matches/{dataset}") if storage.has_data_files(
        spark, f"{run.work_uri}/matches/{dataset}") else None
    for value in values:
        step = f"{layer}:{dataset}:{column}={value}"
        if journal.done(step):
            continue
        partition_uri, staging_uri = f"{uri}/{column}={value}", f"{run.work_uri}/staging/{layer}/{dataset}/{column}={value}"
        if not partitions.staged(spark, staging_uri):  # staged before a kill: only the swap is left
            mention = raw_mention(subjects, F.col("_is_malformed") if malformed_only else None)
            if storage.has_data_files(spark, partition_uri):
                _, gone = partitions.stage(spark, partition_uri, staging_uri, mention, keyed, LINEAGE)
                if gone == 0:  # swapped before a kill cut the journal entry: nothing left to do here
                    writers.delete_path(spark, staging_uri)
                elif gone != values[value]:  # the partition changed since the match: the request is not what it saw
                    raise ErasureError(f"{layer} {dataset} {column}={value}: {gone} rows to remove, {values[value]} "
                                       "matched; did a pipeline run write meanwhile? run the erase command again")
        if partitions.staged(spark, staging_uri):
            partitions.swap(spark, partition_uri, staging_uri)
        journal.mark(step)
    return {"partitions_rewritten": len(values), "rows_removed": sum(values.values())}


def _maintain_tables(run: EraseRun, contract: Contract) -> list[dict[str, Any]]:
    """Step 8: only the current snapshot stays; files no snapshot references are deleted."""
    spark, lake = run.spark, run.lake
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) + dt.timedelta(seconds=1)
    stamp = f"TIMESTAMP '{now.strftime('%Y-%m-%d %H:%M:%S')}'"
    done = []
    names = [("silver", contract.dataset)] + [("gold", gold_table_name(contract.dataset, g)) for g in contract.gold]
    for layer, name in names:
        tbl = tables.table(spark, lake, layer, name)
        if tables.current_snapshot(spark, tbl) is None:
            continue
        system, qualified = f"{tbl.catalog.name}.system", f"'{tbl.catalog.namespace(layer)}.{name}'"
        expire = spark.sql(f"CALL {system}.expire_snapshots(table => {qualified}, older_than => {stamp}, "
                           "retain_last => 1)").first().asDict()
        # The procedure refuses an age under 24 h; the action takes any. Safe here: the request holds the
        # dataset's lock, so no pipeline run writes these tables meanwhile.
        actions = spark._jvm.org.apache.iceberg.spark.actions.SparkActions.get(spark._jsparkSession)
        result = (actions.deleteOrphanFiles(tables._iceberg_table(spark, tbl))
                  .olderThan(int(now.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)).execute())
        orphans = list(result.orphanFileLocations())
        done.append({"table": tbl.display, "expired_data_files": int(expire.get("deleted_data_files_count") or 0),
                     "expired_manifests": int(expire.get("deleted_manifest_files_count") or 0),
                     "orphan_files_removed": len(orphans)})
    return done


def _erase_dataset(run: EraseRun, contract: Contract, journal: Journal) -> dict[str, Any]:
    from spark_jobs.jobs.layer import run_layer

    spark, lake, dataset = run.spark, run.lake, contract.dataset
    subjects = _subjects_of(contract, run.subjects)
    facts_key = f"matches:{dataset}"
    if not journal.done(f"catch-up:{dataset}"):
        if storage.has_data_files(spark, lake.landing(dataset)):
            run_layer(spark, lake, dataset, "bronze", erasure_request=run.request, progress=run.progress)
        journal.mark(f"catch-up:{dataset}")
    if not journal.done(facts_key):
        found = _match_dataset(run, contract, journal)
        journal.mark(facts_key, **{facts_key: found})
    found = journal.fact(facts_key)
    run.say(f"{dataset}: matched {found['bronze_rows']} bronze rows in {len(found['bronze_batches'])} batches, "
            f"{found['quarantine_rows']} quarantined, {found['silver_rows']} silver rows, "
            f"{len(found['event_dates'])} event dates, {len(found['landing_files'])} landing files")
    touched: dict[str, Any] = {"matched": found}
    touched["quarantine"] = _rewrite_partitions(run, journal, "quarantine", dataset, lake.quarantine(dataset),
                                                silver_tx.quarantine_partition(contract), found["quarantine_partitions"],
                                                subjects, False)
    touched["bronze"] = _rewrite_partitions(run, journal, "bronze", dataset, lake.bronze(dataset), "_batch_id",
                                            found["bronze_batches"], subjects, True)
    run.say(f"{dataset}: quarantine {touched['quarantine']['rows_removed']} rows, "
            f"bronze {touched['bronze']['rows_removed']} rows removed")
    silver_table = tables.table(spark, lake, "silver", dataset)
    if not journal.done(f"silver:{dataset}"):
        snapshot_id = None
        if tables.current_snapshot(spark, silver_table) is not None and found["silver_rows"]:
            values = ", ".join("'" + normalised(contract, s).replace("'", "''") + "'" for s in subjects)
            columns = sorted({s.column for s in subjects})
            condition = " OR ".join(f"`{c}` IN ({values})" for c in columns)
            spark.sql(f"DELETE FROM {silver_table.qualified} WHERE {condition}")
            snapshot_id = (tables.current_snapshot(spark, silver_table) or {}).get("snapshot_id")
        journal.mark(f"silver:{dataset}", **{f"silver:{dataset}": {"rows_deleted": found["silver_rows"],
                                                                  "snapshot_id": snapshot_id}})
    touched["silver"] = journal.fact(f"silver:{dataset}")
    for date in found["event_dates"]:
        if contract.gold and not journal.done(f"gold:{dataset}:{date}"):
            run_layer(spark, lake, dataset, "gold", date=date, erasure_request=run.request, progress=run.progress)
            journal.mark(f"gold:{dataset}:{date}")
    touched["gold"] = {"event_dates_recomputed": found["event_dates"] if contract.gold else [],
                       "tables": [f"gold.{gold_table_name(dataset, g)}" for g in contract.gold]}
    if not journal.done(f"landing:{dataset}"):
        for uri in found["landing_files"]:
            writers.delete_path(spark, uri)
        journal.mark(f"landing:{dataset}")
    touched["landing"] = {"objects_deleted": len(found["landing_files"])}
    if not journal.done(f"tables:{dataset}"):
        journal.mark(f"tables:{dataset}", **{f"tables:{dataset}": _maintain_tables(run, contract)})
    touched["tables"] = journal.fact(f"tables:{dataset}")
    run.say(f"{dataset}: silver {touched['silver']['rows_deleted']} rows deleted, gold recomputed for "
            f"{len(touched['gold']['event_dates_recomputed'])} dates, {len(found['landing_files'])} landing files "
            "deleted, snapshots expired")
    return touched


def _needles(run: EraseRun, contracts: list[Contract]) -> list[str]:
    """What the scans look for: each value as given and as silver stores it, and its gold pseudonym."""
    values = {s.value.strip() for s in run.subjects}
    for contract in contracts:
        for subject in _subjects_of(contract, run.subjects):
            values.add(normalised(contract, subject))
            if contract.pseudonymise_gold:
                values.add(pseudonym(run.key, normalised(contract, subject)))
    return sorted(values)


def _scrub_reports(run: EraseRun, s3, forms: list[str]) -> dict[str, int]:
    """Reports, Athena results, logs: rewrite text that mentions a subject, delete anything else that does."""
    rewritten = deleted = 0
    for prefix in SCRUBBED_PREFIXES:
        for version in list(objects.versions(s3, run.lake.bucket, prefix)):
            if not version.is_latest or version.key.startswith(RECEIPTS_PREFIX):
                continue
            data = objects.read_version(s3, run.lake.bucket, version)
            if not objects.contains_any(data, forms):
                continue
            is_text = prefix == "reports/" and not data.startswith((objects.PARQUET_MAGIC, objects.AVRO_MAGIC,
                                                                    objects.GZIP_MAGIC))
            if is_text:
                objects.put_text(s3, run.lake, version.key, _replace(data.decode("utf-8", errors="replace"), forms))
                rewritten += 1
            else:
                s3.delete_object(Bucket=run.lake.bucket, Key=version.key)
                deleted += 1
    return {"objects_rewritten": rewritten, "objects_deleted": deleted}


def _replace(text: str, forms: list[str]) -> str:
    import re

    for form in sorted(forms, key=len, reverse=True):
        text = re.sub(re.escape(form), REPLACEMENT, text, flags=re.IGNORECASE)
    return text


def _scrub_mirror(tenant: str, forms: list[str]) -> int:
    """The local copy of the tenant's reports (``make dq-report``'s mirror), scrubbed the same way."""
    from spark_jobs.quality.report import mirror_root

    root, changed = mirror_root(tenant), 0
    if not root.is_dir():
        return 0
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "erasure" not in p.relative_to(root).parts[:1]):
        data = path.read_bytes()
        if objects.contains_any(data, forms):
            if data.startswith((objects.PARQUET_MAGIC, objects.AVRO_MAGIC, objects.GZIP_MAGIC)):
                path.unlink()
            else:
                path.write_text(_replace(data.decode("utf-8", errors="replace"), forms), encoding="utf-8")
            changed += 1
    return changed


def _purge(run: EraseRun, s3, prefixes: list[str], forms: list[str]) -> int:
    """Delete every noncurrent version under ``prefixes`` that holds a subject; returns how many."""
    found = objects.scan(s3, run.lake.bucket, prefixes, forms)
    return objects.delete_versions(s3, run.lake.bucket, [(v.key, v.version_id) for v in found.hits if not v.is_latest])


def _purge_inbox(run: EraseRun, s3, forms: list[str]) -> int:
    """Delete every version (current ones too) of the subject files in the inbox that name a subject,
    and their delete markers: the request has been carried out, and they hold the ids."""
    found = objects.scan(s3, run.lake.bucket, [INBOX_PREFIX], forms)
    keys = {v.key for v in found.hits}
    markers = [(k, v) for k, v in objects.delete_markers(s3, run.lake.bucket, INBOX_PREFIX) if k in keys]
    return objects.delete_versions(s3, run.lake.bucket, [(v.key, v.version_id) for v in found.hits] + markers)


def _dataset_prefixes(contract: Contract) -> list[str]:
    dataset = contract.dataset
    return [f"landing/{dataset}/", f"bronze/{dataset}/", f"quarantine/{dataset}/", f"silver/{dataset}/",
            *[f"gold/{gold_table_name(dataset, g)}/" for g in contract.gold]]


def erase(spark: SparkSession, lake: LakeConfig, subjects: list[Subject], *, tenant: str = "",
          datasets: list[str] | None = None, dry_run: bool = False,
          progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Run (or, with ``dry_run``, plan) one erasure request; returns the receipt (see the module docstring)."""
    from spark_jobs.contract import available_datasets

    if not lake.is_object_store:
        raise ErasureError(f"erase works on an S3 lake (a versioned bucket), not {lake.lake_uri}")
    contracts = [load_contract(name) for name in (datasets or available_datasets())]
    columns = {s.column for s in subjects}
    declared = {c for contract in contracts for c in (contract.subject_keys or ())}
    unknown = sorted(columns - declared)
    if unknown:
        raise SubjectError(f"no dataset lists '{unknown[0]}' in subject_keys (declared: "
                           f"{', '.join(sorted(declared)) or 'none'})")
    affected = [c for c in contracts if _subjects_of(c, subjects)]
    key = load_key(spark, lake, create=not dry_run) if not dry_run or storage.exists(
        spark, lake.path("checkpoints", "_erasure", "key")) else b"\0" * 32
    run = EraseRun(spark, lake, subjects, key, request_id(key, subjects), dry_run, progress)
    for contract in affected:
        holder = active_request(spark, lake, contract.dataset)
        if holder not in (None, run.request):
            raise ErasureError(f"dataset {contract.dataset} is locked by erasure request {holder}: finish it first "
                               "(re-run its erase command)")
    receipt: dict[str, Any] = {
        "request_id": run.request, "tenant": tenant, "dry_run": dry_run,
        "subjects": [{"column": s.column, "subject_hash": subject_hash(key, s)} for s in subjects],
        "requested_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "datasets": {}}
    if dry_run:
        for contract in affected:
            receipt["datasets"][contract.dataset] = {"would_touch": _match_dataset(run, contract, Journal(spark, "", {"done": []}))}
            found = receipt["datasets"][contract.dataset]["would_touch"]
            run.say(f"dry run {contract.dataset}: would remove {found['bronze_rows']} bronze rows "
                    f"({len(found['bronze_batches'])} batches), {found['quarantine_rows']} quarantined rows, "
                    f"{found['silver_rows']} silver rows, recompute gold for {len(found['event_dates'])} dates, "
                    f"delete {len(found['landing_files'])} landing files (landing files not yet ingested are "
                    "ingested first)")
        return receipt

    journal = Journal.open(spark, f"{run.work_uri}/state.json", {"request_id": run.request, "done": [],
                                                                   "requested_at": receipt["requested_at"]})
    receipt["requested_at"] = journal.state["requested_at"]
    if journal.state["done"]:
        run.say(f"resuming: {len(journal.state['done'])} steps already done")
    for contract in affected:
        storage.write_text(spark, lock_uri(lake, contract.dataset),
                           json.dumps({"request_id": run.request, "since": receipt["requested_at"]}))
    if not journal.state["done"]:  # a resumed request's locks kept every pipeline run out since it began
        busy = [(contract.dataset, uri, lease) for contract in affected
                for uri, lease in live_leases(spark, lake, contract.dataset)]
        if busy:
            for contract in affected:
                writers.delete_path(spark, lock_uri(lake, contract.dataset))
            dataset, uri, lease = busy[0]
            raise ErasureError(f"dataset {dataset}: a {lease.get('layer')} run is in progress (since "
                               f"{lease.get('since')}, host {lease.get('host')}, pid {lease.get('pid')}); nothing "
                               f"was changed: run the erase command again when it has ended (a continuous ingest "
                               f"must be stopped); if that run was killed, delete its lease {uri}")
    for contract in affected:
        receipt["datasets"][contract.dataset] = _erase_dataset(run, contract, journal)

    s3 = objects.s3_client(lake)
    forms = objects.needle_forms(_needles(run, affected))
    if not journal.done("reports"):
        journal.mark("reports", reports={**_scrub_reports(run, s3, forms),
                                         "local_mirror_files_scrubbed": _scrub_mirror(tenant, forms) if tenant else 0})
    receipt["reports"] = journal.fact("reports")
    run.say(f"reports: {receipt['reports']['objects_rewritten']} rewritten, {receipt['reports']['objects_deleted']} deleted")
    prefixes = [p for c in affected for p in _dataset_prefixes(c)] + list(SCRUBBED_PREFIXES) + [run.work_prefix]
    removed = int(journal.fact("versions_removed", 0)) + _purge(run, s3, prefixes, forms)
    journal.state.setdefault("facts", {})["versions_removed"] = removed
    journal.save()
    receipt["object_versions_removed"] = removed
    run.say(f"purged {removed} noncurrent object versions that held a subject")
    inbox = _purge_inbox(run, s3, forms)
    if inbox:
        receipt["subject_files_deleted"] = inbox
        run.say(f"deleted {inbox} versions of subject files in {INBOX_PREFIX}")

    verification = objects.scan(s3, lake.bucket, [""], forms, progress=run.say)
    outside = _outside_request(verification.hits, _left_out(datasets))
    left_out_hits = {id(v) for hits in outside.values() for v in hits}
    remaining = [v for v in verification.hits if id(v) not in left_out_hits]
    receipt["verification"] = {**verification.to_dict(), "scope": f"every version of every object in s3://{lake.bucket}",
                               "status": ("subject data remains" if remaining else "verified" if not outside else
                                          "verified; subject data remains in datasets outside this request")}
    if outside:
        receipt["verification"]["outside_request"] = {
            name: {"versions": len(hits), "keys": sorted({v.key for v in hits})[:20]} for name, hits in outside.items()}
    receipt["status"] = "completed" if not remaining else "incomplete"
    receipt["completed_at"] = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    receipt["personal_data_columns"] = {c.dataset: list(c.personal_data) for c in affected}
    text = json.dumps(receipt, indent=1, sort_keys=True)
    objects.put_text(s3, lake, f"{RECEIPTS_PREFIX}{run.request}/receipt.json", text)
    if tenant:
        from spark_jobs.quality import index
        from spark_jobs.quality.report import mirror_root

        mirror = mirror_root(tenant)
        (mirror / "erasure" / run.request).mkdir(parents=True, exist_ok=True)
        (mirror / "erasure" / run.request / "receipt.json").write_text(text + "\n", encoding="utf-8")
        index.build_index(tenant, mirror)
    # The work folder (journal, matched lineage, staging) goes last, with its versions: the receipt is written.
    work = [(v.key, v.version_id) for v in objects.versions(s3, lake.bucket, run.work_prefix)]
    objects.delete_versions(s3, lake.bucket, work + list(objects.delete_markers(s3, lake.bucket, run.work_prefix)))
    for contract in affected:
        writers.delete_path(spark, lock_uri(lake, contract.dataset))
    run.say(f"{receipt['status']}: {verification.versions} object versions scanned, "
            f"{len(remaining)} hold a subject; receipt {RECEIPTS_PREFIX}{run.request}/receipt.json")
    if outside:
        names = sorted(outside)
        run.say(f"note: {sum(len(h) for h in outside.values())} object versions of datasets this request left out "
                f"hold a subject ({', '.join(names)}); to erase it there: the same command with "
                + " ".join(f"--dataset {n}" for n in names))
    return receipt


def _left_out(datasets: list[str] | None) -> list[Contract]:
    """The datasets a request limited by ``--dataset`` did not cover (none when it covered all)."""
    from spark_jobs.contract import available_datasets

    return [load_contract(name) for name in available_datasets() if datasets and name not in datasets]


def _outside_request(hits: list[objects.Version], left_out: list[Contract]) -> dict[str, list[objects.Version]]:
    """The verification's hits that lie in a left-out dataset's own objects (its landing, bronze,
    quarantine, silver, gold and checkpoint prefixes), by dataset. Any other hit (a covered dataset, a
    report, anything outside a dataset) is the request's own."""
    owners = [(c.dataset, (*_dataset_prefixes(c), f"checkpoints/{c.dataset}/")) for c in left_out]
    found: dict[str, list[objects.Version]] = {}
    for version in hits:
        owner = next((name for name, prefixes in owners if version.key.startswith(prefixes)), None)
        if owner is not None:
            found.setdefault(owner, []).append(version)
    return found


def receipt_path(request: str) -> str:
    return f"{RECEIPTS_PREFIX}{request}/receipt.json"
