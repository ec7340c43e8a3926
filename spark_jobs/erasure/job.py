"""The erase job: remove every record of some data subjects from a tenant's lake, with a receipt.

The request is checked first (``subjects.check_request``: each id one token, at least its key's
``min_length``, matching its ``pattern``; a numeric key's id a number): a request that fails changes
nothing. For each dataset whose contract lists the subject's column in ``subject_keys``, in this order
(each step recorded in the request's journal, ``checkpoints/_erasure/<request>/state.json``, and
idempotent, so a run killed at any point is finished by running the same command again):

1. **lock** the dataset (``checkpoints/<ds>/erasure.lock``, written create-only and rewritten every minute while
   the request runs, as a lease is): pipeline and maintenance runs of it are refused until the request
   completes; another request is refused in one line naming the holder, and a killed request for the same
   subjects (its process gone, or silent for 10 minutes) is resumed;
2. **catch up bronze** (one ``availableNow`` bronze run), so every landing file is ingested;
3. **match** (``records``): bronze rows whose contract-typed subject column equals an id, or whose text
   holds one (``scan.batch_hits``, the verification's own reading) while their subject columns cannot be
   read (malformed, or untyped), are removed; another subject's row whose text holds one is redacted
   (``[erased]`` in its place). Lineage and actions are saved in the journal folder;
4. **quarantine**, then **bronze**: the touched partitions are staged in one write and swapped in one by
   one (``rewrites``, ``partitions``);
5. **silver**: the touched event dates replaced in one commit: without the subjects' rows, the
   mentioning rows redacted, every other row as it was;
6. **gold**: the touched event dates recomputed from silver (one gold run);
7. **landing**: the ingested files that held a subject's record or a mention are deleted (bronze keeps
   the other records; its checkpoint keeps their names, so nothing is ingested twice);
8. **tables** (``iceberg``): the manifests are rewritten to list live files only, and every other
   snapshot (from before the request, and the request's own) is expired by id; Iceberg deletes the files
   only they referenced: the files the erasure's rewrites replaced, and the manifests that named them.

Then the whole bucket is **swept** (``sweep``): every version of every object is read on the executors,
streaming; ``artifacts/`` (job code) is skipped and listed. With its findings: **reports** (``reports/``
but the receipts, ``athena/``, ``logs/``) that name a subject are rewritten without it or deleted, as is
the local report mirror; every version of the landing files and every noncurrent version of the bronze and
quarantine partitions the erase matched, noncurrent versions that hold a subject under the request's
prefixes, the inbox's subject files, and unreferenced table files that hold one are **purged**. **Verify**: the bucket
is listed again and the versions not read yet are read; none may hold a subject, and none may be
unreadable, for the receipt to say ``completed``. For a request limited to some datasets, a version in a
left-out dataset's own objects is listed apart (``outside_request``). The **receipt**
(``reports/erasure/<request>/receipt.json``; a new id per request, citing earlier requests for the same
subjects) records keyed hashes of the subjects (never the ids), what was touched and the verification.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import time
from typing import Any, Callable

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_jobs.contract.model import Contract, load_contract
from spark_jobs.erasure import ErasureError, iceberg, objects, purge, receipts, records, reports, rewrites
from spark_jobs.erasure import sweep as sweeping
from spark_jobs.erasure.journal import Journal
from spark_jobs.erasure.matching import Needles
from spark_jobs.erasure.subjects import (
    Subject, SubjectError, applies, check_request, needles, new_request_id, subject_hash, subjects_digest)
from spark_jobs.io import readers, storage, tables, writers
from spark_jobs.io.s3 import lake_client, list_versions
from spark_jobs.jobs.pseudonyms import load_key
from spark_jobs.lake.config import STAGING_FOLDERS, LakeConfig, gold_table_name
from spark_jobs.runs.leases import (
    HeldLock, create_lock, live_leases, lock_heartbeat, lock_key, lock_text, read_lock, release_lock, replace_lock,
    stale_reason)
from spark_jobs.transforms import bronze as bronze_tx
from spark_jobs.transforms import silver as silver_tx

__all__ = ["ErasureError", "erase", "receipt_path"]
receipt_path = receipts.receipt_path


@dataclasses.dataclass
class EraseRun:
    spark: SparkSession
    lake: LakeConfig
    subjects: list[Subject]
    key: bytes
    request: str
    digest: str
    dry_run: bool
    progress: Callable[[str], None]
    needles: Needles
    started: float = dataclasses.field(default_factory=time.monotonic)
    _shared: dict[str, Any] = dataclasses.field(default_factory=dict)

    def shared_needles(self, dataset: str):
        """The needles of ``dataset`` (its key names: ``Needles.scoped``) in a broadcast variable, one per
        dataset and run: how the executors get the ids, never in a plan."""
        if dataset not in self._shared:
            self._shared[dataset] = self.spark.sparkContext.broadcast(self.needles.scoped(dataset))
        return self._shared[dataset]

    def say(self, line: str) -> None:
        self.progress(f"[erase {self.request}] {line} ({time.monotonic() - self.started:.1f}s)")

    @property
    def work_uri(self) -> str:
        return self.lake.path("checkpoints", "_erasure", self.request)

    @property
    def work_prefix(self) -> str:
        return f"checkpoints/_erasure/{self.request}/"


def _dataset_tables(spark, lake: LakeConfig, contract: Contract) -> list[tables.Table]:
    return [tables.table(spark, lake, "silver", contract.dataset)] + [
        tables.table(spark, lake, "gold", gold_table_name(contract.dataset, g)) for g in contract.gold]


def _counts(rows, column: str) -> dict[str, dict[str, int]]:
    """{partition value: {action: rows}} from (value, action, n) rows."""
    found: dict[str, dict[str, int]] = {}
    for row in rows:
        found.setdefault(str(row[column]), {})[row[records.ACTION]] = int(row["n"])
    return dict(sorted(found.items()))


def _match(run: EraseRun, contract: Contract, journal: Journal) -> dict[str, Any]:
    """Step 3 (and the dry run's whole work): what the subjects touch in this dataset."""
    spark, lake, dataset = run.spark, run.lake, contract.dataset
    step = f"match:{dataset}"
    if journal.done(step):
        return journal.fact(step)
    shared = run.shared_needles(dataset)
    matches = f"{run.work_uri}/matches/{dataset}"
    found: dict[str, Any] = {"bronze": {}, "quarantine": {}, "landing_files": [], "event_dates": [], "silver": {}}
    bronze = None
    if storage.has_data_files(spark, lake.bronze(dataset)):
        index_type = readers.record_index_type(spark, lake.bronze(dataset))
        bronze = records.bronze_actions(spark.read.schema(bronze_tx.bronze_schema(contract, index_type)).parquet(lake.bronze(dataset)),
                                        contract, shared)
        if not run.dry_run:
            bronze.write.mode("overwrite").parquet(f"{matches}/bronze")
            bronze = spark.read.parquet(f"{matches}/bronze")
        else:
            bronze = bronze.persist()
        by_batch = bronze.groupBy("_batch_id", records.ACTION).agg(  # one Spark job for counts, files and dates
            F.count(F.lit(1)).alias("n"), F.collect_set("_source_file").alias("files"),
            F.collect_set("event_date").alias("dates")).collect()
        found["bronze"] = _counts(by_batch, "_batch_id")
        found["landing_files"] = sorted({f for r in by_batch for f in r["files"]})
        found["event_dates"] = sorted({d for r in by_batch for d in r["dates"] if d})
    quarantine_uri, column = lake.quarantine(dataset), silver_tx.quarantine_partition(contract)
    if storage.has_data_files(spark, quarantine_uri):
        from spark_jobs.jobs.silver import other_quarantine_layout

        if other_quarantine_layout(spark, quarantine_uri, contract):
            raise ErasureError(f"{quarantine_uri} holds partitions of both granularities (the contract's "
                               f"partition_granularity changed to {contract.partition_granularity}); run "
                               f"`python -m spark_jobs run --dataset {dataset} --layer silver` once, then the erase command again")
        quarantined = records.quarantine_actions(spark.read.parquet(quarantine_uri), column, bronze, shared)
        if not run.dry_run:
            quarantined.write.mode("overwrite").parquet(f"{matches}/quarantine")
            quarantined = spark.read.parquet(f"{matches}/quarantine")
        by_partition = quarantined.groupBy("_partition", records.ACTION).agg(F.count(F.lit(1)).alias("n")).collect()
        found["quarantine"] = _counts(by_partition, "_partition")
    if run.dry_run:
        silver_table = tables.table(spark, lake, "silver", dataset)
        if tables.current_snapshot(spark, silver_table) is not None:
            hits = records.silver_actions(tables.read(spark, silver_table), contract, shared)
            summary = hits.groupBy(records.ACTION).agg(F.count(F.lit(1)).alias("n"),
                                                       F.collect_set(F.col("event_date").cast("string")).alias("d")).collect()
            found["silver"] = {r[records.ACTION]: int(r["n"]) for r in summary}
            found["event_dates"] = sorted(set(found["event_dates"]) | {d for r in summary for d in r["d"]})
        if bronze is not None:
            bronze.unpersist()
    else:
        journal.mark(step, **{step: found})
    return found


def _total(counts: dict[str, dict[str, int]], action: str) -> int:
    return sum(c.get(action, 0) for c in counts.values())


def _describe_match(dataset: str, found: dict[str, Any], verb: str = "matched") -> str:
    bronze, quarantine, silver = found["bronze"], found["quarantine"], found["silver"]
    text = (f"{dataset}: {verb}: bronze {_total(bronze, records.REMOVE)} rows to remove, {_total(bronze, records.REDACT)} "
            f"to redact ({len(bronze)} batches); quarantine {_total(quarantine, records.REMOVE)} to remove, "
            f"{_total(quarantine, records.REDACT)} to redact; {len(found['landing_files'])} landing files")
    if silver:
        text += (f"; silver {silver.get(records.REMOVE, 0)} rows to delete, {silver.get(records.REDACT, 0)} to redact; "
                 f"gold for {len(found['event_dates'])} dates")
    return text


def _erase_dataset(run: EraseRun, contract: Contract, journal: Journal) -> dict[str, Any]:
    from spark_jobs.jobs.layer import run_layer

    spark, lake, dataset = run.spark, run.lake, contract.dataset
    if not journal.done(f"catch-up:{dataset}"):
        if storage.has_data_files(spark, lake.landing(dataset)):
            run_layer(spark, lake, dataset, "bronze", erasure_request=run.request, progress=run.progress)
        journal.mark(f"catch-up:{dataset}")
    snapshots_key = f"snapshots:{dataset}"
    if journal.fact(snapshots_key) is None:  # before this request's first commit to any of the tables
        journal.state.setdefault("facts", {})[snapshots_key] = {
            t.display: iceberg.snapshot_ids(spark, t) for t in _dataset_tables(spark, lake, contract)}
        journal.save()
    found = _match(run, contract, journal)
    run.say(_describe_match(dataset, found))
    matches = f"{run.work_uri}/matches/{dataset}"
    touched: dict[str, Any] = {"matched": {"bronze_batches": len(found["bronze"]),
                                           "quarantine_partitions": found["quarantine"],
                                           "landing_files": len(found["landing_files"])}}
    for layer, uri, column, counts in (
            ("quarantine", lake.quarantine(dataset), silver_tx.quarantine_partition(contract), found["quarantine"]),
            ("bronze", lake.bronze(dataset), "_batch_id", found["bronze"])):
        actions = spark.read.parquet(f"{matches}/{layer}") if counts else None
        touched[layer] = rewrites.rewrite_layer(
            spark, journal, layer=layer, dataset=dataset, uri=uri, column=column,
            staging_uri=f"{run.work_uri}/staging/{layer}/{dataset}", actions=actions, counts=counts,
            needles=run.needles.scoped(dataset), progress=run.say) if counts else {"partitions_rewritten": 0, "rows_removed": 0,
                                                                   "rows_redacted": 0}
    silver_table = tables.table(spark, lake, "silver", dataset)
    if not journal.done(f"silver:{dataset}"):
        result = rewrites.rewrite_silver(spark, silver_table, contract, run.shared_needles(dataset),
                                         run_id=f"erase-{run.request}")
        journal.mark(f"silver:{dataset}", **{f"silver:{dataset}": result})
    touched["silver"] = journal.fact(f"silver:{dataset}")
    dates = sorted(set(found["event_dates"]) | set(touched["silver"]["event_dates"]))
    if contract.gold and dates and not journal.done(f"gold:{dataset}"):
        run_layer(spark, lake, dataset, "gold", dates=dates, erasure_request=run.request, progress=run.progress)
        journal.mark(f"gold:{dataset}")
    touched["gold"] = {"event_dates_recomputed": dates if contract.gold else [],
                       "tables": [f"gold.{gold_table_name(dataset, g)}" for g in contract.gold]}
    if not journal.done(f"landing:{dataset}"):
        for uri in found["landing_files"]:
            writers.delete_path(spark, uri)
        journal.mark(f"landing:{dataset}")
    touched["landing"] = {"objects_deleted": len(found["landing_files"])}
    if not journal.done(f"tables:{dataset}"):
        before = journal.fact(snapshots_key)
        expired = [iceberg.finish(spark, t, before.get(t.display, [])) for t in _dataset_tables(spark, lake, contract)
                   if tables.exists(spark, t)]
        journal.mark(f"tables:{dataset}", **{f"tables:{dataset}": expired})
    touched["tables"] = journal.fact(f"tables:{dataset}")
    run.say(f"{dataset}: silver {touched['silver']['rows_deleted']} rows deleted, {touched['silver']['rows_redacted']} "
            f"redacted; gold recomputed for {len(touched['gold']['event_dates_recomputed'])} dates; "
            f"{len(found['landing_files'])} landing files deleted; snapshots from before the request expired")
    return touched


def _dataset_prefixes(contract: Contract) -> list[str]:
    dataset = contract.dataset
    # The layers' staging folders (lake.STAGING_FOLDERS: bronze's batches, and -fixed beside them; silver's
    # flagged records): the staged copies' noncurrent versions hold the same records.
    return [f"landing/{dataset}/", f"bronze/{dataset}/", f"quarantine/{dataset}/", f"silver/{dataset}/",
            *[f"gold/{gold_table_name(dataset, g)}/" for g in contract.gold],
            *[f"checkpoints/{dataset}/{folder}" for folder in STAGING_FOLDERS.values()]]


def _left_out(datasets: list[str] | None) -> list[Contract]:
    """The datasets a request limited by ``--dataset`` did not cover (none when it covered all)."""
    from spark_jobs.contract.model import available_datasets

    return [load_contract(name) for name in available_datasets() if datasets and name not in datasets]


def _outside_request(hits: list, left_out: list[Contract]) -> dict[str, list]:
    """The verification's hits that lie in a left-out dataset's own objects (its landing, bronze,
    quarantine, silver, gold and checkpoint prefixes), by dataset. Any other hit (a covered dataset, a
    report, anything outside a dataset) is the request's own."""
    owners = [(c.dataset, (*_dataset_prefixes(c), f"checkpoints/{c.dataset}/")) for c in left_out]
    found: dict[str, list] = {}
    for version in hits:
        owner = next((name for name, prefixes in owners if version.key.startswith(prefixes)), None)
        if owner is not None:
            found.setdefault(owner, []).append(version)
    return found


def _lock_owner(holder: dict[str, Any]) -> str:
    """``er-… (pid 42 on host-a, since …)``: who holds a lock, in a few words (never a subject)."""
    how = f"pid {holder.get('pid')} on {holder.get('host')}, " if holder.get("pid") else ""
    return f"{holder.get('request_id') or 'an unknown request'} ({how}since {holder.get('since') or 'an unknown time'})"


def _running(lake: LakeConfig, dataset: str, holder: dict[str, Any], stored) -> bool:
    """A lock whose request is still running: heartbeats, and not stale (``leases.stale_reason``). A lock
    without heartbeats (written before requests had them) is a killed request's."""
    return "heartbeat_seconds" in holder and stale_reason(holder, stored.modified, lock_key(dataset), stored.now) is None


def _resolve_request(lake: LakeConfig, affected: list[Contract], digest: str) -> tuple[str | None, str | None]:
    """(the id of a killed request for the same subjects, its ``since``) to resume, from the locks; refuses
    (one line naming the holder) when another request holds a dataset, or a running one the same subjects."""
    resumed = since = None
    for contract in affected:
        found = read_lock(lake, contract.dataset)
        if found is None:
            continue
        holder, stored = found
        if holder.get("subjects_digest") != digest:
            raise ErasureError(f"dataset {contract.dataset} is locked by erasure request {_lock_owner(holder)}: "
                               "finish it first (re-run its erase command); nothing was changed")
        if _running(lake, contract.dataset, holder, stored):
            raise ErasureError(f"dataset {contract.dataset}: erasure request {_lock_owner(holder)} for the same "
                               "subjects is running; nothing was changed: wait for it to end (its receipt says what "
                               "it did)")
        resumed, since = holder.get("request_id") or resumed, holder.get("since") or since
    return resumed, since


def _take_locks(lake: LakeConfig, affected: list[Contract], text: str, resumed: str | None) -> list[HeldLock]:
    """Lock every dataset of the request, create-only (of two requests that race, one gets each lock), or take
    over the lock of the killed request being resumed. Refuses in one line naming the holder, releasing the
    locks it created."""
    held: list[HeldLock] = []
    created: list[HeldLock] = []
    for contract in affected:
        lock = create_lock(lake, contract.dataset, text)
        if lock is not None:
            created.append(lock)
        else:
            found = read_lock(lake, contract.dataset)
            holder, stored = found if found else ({}, None)
            if resumed and holder.get("request_id") == resumed and not _running(lake, contract.dataset, holder, stored):
                lock = replace_lock(lake, contract.dataset, text, stored.tag)
            if lock is None:
                for mine in created:
                    release_lock(lake, mine)
                raise ErasureError(f"dataset {contract.dataset} is held by erasure request {_lock_owner(holder)}, "
                                   "which started meanwhile; nothing was changed: wait for it to end")
        held.append(lock)
    return held


def _matched_objects(run: EraseRun, affected: list[Contract], journal: Journal) -> tuple[list[str], list[str]]:
    """What the erase itself matched (step 3, from the journal): the landing files' keys, and the key prefixes
    of the bronze and quarantine partitions it rewrote."""
    landing, partitions = [], []
    for contract in affected:
        found = journal.fact(f"match:{contract.dataset}") or {}
        landing += [uri.split("://", 1)[1].partition("/")[2] for uri in found.get("landing_files", [])]
        column = silver_tx.quarantine_partition(contract)
        partitions += [f"bronze/{contract.dataset}/_batch_id={batch}/" for batch in found.get("bronze", {})]
        partitions += [f"quarantine/{contract.dataset}/{column}={value}/" for value in found.get("quarantine", {})]
    return sorted(set(landing)), sorted(set(partitions))


def _sweep_and_purge(run: EraseRun, s3, affected: list[Contract], journal: Journal, tenant: str) -> sweeping.Sweep:
    """Read the whole bucket once; scrub reports, purge versions and unreferenced table files from it."""
    found = sweeping.sweep(run.spark, run.lake, s3, run.needles, run.say, label="sweep")
    facts: dict[str, Any] = {"reports": reports.scrub(s3, run.lake, found, run.needles)}
    facts["reports"]["local_mirror_files_scrubbed"] = reports.scrub_mirror(tenant, run.needles) if tenant else 0
    run.say(reports.describe(facts["reports"]))
    prefixes = [p for c in affected for p in _dataset_prefixes(c)] + list(reports.SCRUBBED_PREFIXES) + [run.work_prefix]
    landing_keys, partition_prefixes = _matched_objects(run, affected, journal)
    facts["matched_versions_removed"] = purge.matched(s3, run.lake, landing_keys, partition_prefixes)
    facts["object_versions_removed"] = purge.noncurrent(s3, run.lake, found, prefixes)
    facts["subject_files_deleted"] = purge.inbox(s3, run.lake, found)
    tables_by_prefix = {f"{t.location.split(run.lake.bucket + '/', 1)[1]}/data/": t
                        for c in affected for t in _dataset_tables(run.spark, run.lake, c)}
    facts["unreferenced_files_deleted"] = purge.unreferenced_files(
        s3, run.lake, found, {p: t.display for p, t in tables_by_prefix.items()},
        lambda name, uris: iceberg.unreferenced(run.spark, next(t for t in tables_by_prefix.values()
                                                                 if t.display == name), uris))
    run.say(f"purged {facts['matched_versions_removed']} versions of the landing files and partitions the erase "
            f"matched, {facts['object_versions_removed']} other noncurrent object versions and "
            f"{len(facts['unreferenced_files_deleted'])} unreferenced table files that held a subject")
    if facts["subject_files_deleted"]:
        run.say(f"deleted {facts['subject_files_deleted']} versions of subject files in the inbox")
    for key, value in facts.items():
        journal.state.setdefault("facts", {})[key] = value
    journal.save()
    return found


def check(subjects: list[Subject], datasets: list[str] | None = None) -> list[Contract]:
    """The checks a request must pass before anything starts (no Spark): every subject's column is a subject
    key somewhere, every id meets its key's rules. Returns the contracts the request touches."""
    from spark_jobs.contract.model import available_datasets

    contracts = [load_contract(name) for name in (datasets or available_datasets())]
    declared = {c for contract in contracts for c in (contract.subject_keys or ())}
    unknown = sorted({s.column for s in subjects} - declared)
    if unknown:
        raise SubjectError(f"no dataset lists '{unknown[0]}' in subject_keys (declared: "
                           f"{', '.join(sorted(declared)) or 'none'})")
    affected = [c for c in contracts if any(applies(c, s) for s in subjects)]
    check_request(affected, subjects)
    return affected


def check_lake(lake: LakeConfig) -> None:
    """An erasure needs object versions: a lake on a plain folder is refused (before any Spark starts)."""
    if not lake.is_object_store:
        raise ErasureError(f"erase works on an S3 lake (a versioned bucket), not {lake.lake_uri}")


def _keyed_contracts(subjects: list[Subject]) -> list[Contract]:
    """Every dataset with one of the subjects' columns among its subject keys, covered by the request or not:
    the verification reads each dataset's own objects with that dataset's key names (``Needles.for_key``)."""
    from spark_jobs.contract.model import available_datasets

    contracts = [load_contract(name) for name in available_datasets()]
    return [c for c in contracts if any(applies(c, s) for s in subjects)]


def erase(spark: SparkSession, lake: LakeConfig, subjects: list[Subject], *, tenant: str = "",
          datasets: list[str] | None = None, dry_run: bool = False,
          progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Run (or, with ``dry_run``, plan) one erasure request; returns the receipt (see the module docstring)."""
    check_lake(lake)
    affected = check(subjects, datasets)
    has_key = storage.exists(spark, lake.path("checkpoints", "_erasure", "key"))
    key = load_key(spark, lake, create=not dry_run) if not dry_run or has_key else b"\0" * 32
    digest = subjects_digest(key, subjects, affected)
    resumed, since = (None, None) if dry_run else _resolve_request(lake, affected, digest)
    run = EraseRun(spark, lake, subjects, key, resumed or new_request_id(), digest, dry_run, progress,
                   needles(_keyed_contracts(subjects), subjects, key))
    earlier = [e["request_id"] for e in receipts.earlier_requests(spark, lake, digest)] if has_key else []
    receipt: dict[str, Any] = {
        "request_id": run.request, "tenant": tenant, "dry_run": dry_run, "subjects_digest": digest,
        "earlier_requests": earlier,
        "subjects": [{"column": s.column, "subject_hash": subject_hash(key, s)} for s in subjects],
        "requested_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "datasets": {}}
    if dry_run:
        for contract in affected:
            found = _match(run, contract, Journal.in_memory())
            receipt["datasets"][contract.dataset] = {"would_touch": found}
            run.say(f"dry run {_describe_match(contract.dataset, found, 'would touch')} (landing files not yet "
                    "ingested are ingested first)")
        return receipt

    since = since or receipt["requested_at"]
    text = lambda: lock_text(run.request, digest, since)  # noqa: E731 - each heartbeat's own time
    held = _take_locks(lake, affected, text(), resumed)
    with lock_heartbeat(lake, held, text):
        if not resumed:  # a resumed request's locks kept every pipeline run out since it began
            busy = [(contract.dataset, uri, lease) for contract in affected
                    for uri, lease in live_leases(spark, lake, contract.dataset)]
            if busy:
                for lock in held:
                    release_lock(lake, lock)
                dataset, uri, lease = busy[0]
                raise ErasureError(f"dataset {dataset}: a {lease.get('layer')} run is in progress (since "
                                   f"{lease.get('since')}, host {lease.get('host')}, pid {lease.get('pid')}); nothing "
                                   f"was changed: run the erase command again when it has ended (a continuous ingest "
                                   f"must be stopped); if that run was killed, delete its lease {uri}")
        receipt = _carry_out(run, affected, receipt, resumed, tenant, datasets)
    for lock in held:  # the request is complete (or verified incomplete, with its receipt): runs may start again
        if not release_lock(lake, lock):
            run.say(f"warning: the lock {lake.path(lock.key)} was taken over by another request; left to it")
    return receipt


def _carry_out(run: EraseRun, affected: list[Contract], receipt: dict[str, Any], resumed: str | None, tenant: str,
               datasets: list[str] | None) -> dict[str, Any]:
    """The request's steps, under its locks (module docstring): each dataset, the sweep, the verification and
    the receipt."""
    spark, lake = run.spark, run.lake
    journal = Journal.open(spark, f"{run.work_uri}/state.json", {"request_id": run.request, "done": [],
                                                                   "requested_at": receipt["requested_at"]})
    receipt["requested_at"] = journal.state["requested_at"]
    if journal.state["done"] or resumed:
        run.say(f"resuming: {len(journal.state['done'])} steps already done")
    for contract in affected:
        receipt["datasets"][contract.dataset] = _erase_dataset(run, contract, journal)

    s3 = lake_client(lake)
    swept = _sweep_and_purge(run, s3, affected, journal, tenant)
    for key_name in ("reports", "object_versions_removed", "matched_versions_removed", "subject_files_deleted",
                     "unreferenced_files_deleted"):
        receipt[key_name] = journal.fact(key_name)
    verification = sweeping.sweep(spark, lake, s3, run.needles, run.say, label="verify", known=swept)
    outside = _outside_request(verification.hits, _left_out(datasets))
    set_apart = {id(f) for hits in outside.values() for f in hits}
    remaining = [f for f in verification.hits if id(f) not in set_apart]
    unreadable = verification.unreadable
    status = ("subject data remains" if remaining else "unreadable objects: not verified" if unreadable
              else "verified" if not outside else "verified; subject data remains in datasets outside this request")
    receipt["verification"] = {**verification.summary(), "status": status,
                               "scope": f"every version of every object in s3://{lake.bucket} but "
                                        f"{', '.join(sweeping.SKIPPED_PREFIXES)} (job code)"}
    if outside:
        receipt["verification"]["outside_request"] = {
            name: {"versions": len(hits), "keys": sorted({f.key for f in hits})[:20]} for name, hits in outside.items()}
    receipt["status"] = "completed" if not remaining and not unreadable else "incomplete"
    receipt["completed_at"] = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    receipt["personal_data_columns"] = {c.dataset: list(c.personal_data) for c in affected}
    written = receipts.write(s3, lake, receipt, tenant)
    receipts.record(spark, lake, run.digest, receipt)
    # The work folder (journal, matched lineage, staging) goes last, with its versions: the receipt is written.
    objects.delete_versions(s3, lake.bucket, [(v.key, v.version_id) for v in
                                              list_versions(s3, lake.bucket, run.work_prefix, delete_markers=True)])
    run.say(f"{receipt['status']}: {verification.summary()['versions_scanned']} object versions verified, "
            f"{len(remaining)} hold a subject, {len(unreadable)} unreadable; receipt {written}")
    if unreadable:
        run.say(f"unreadable, so not verified: {', '.join(sorted({f.key for f in unreadable})[:5])}")
    if outside:
        names = sorted(outside)
        run.say(f"note: {sum(len(h) for h in outside.values())} object versions of datasets this request left out "
                f"hold a subject ({', '.join(names)}); to erase it there: the same command with "
                + " ".join(f"--dataset {n}" for n in names))
    return receipt
