"""``python -m spark_jobs maintain``: Iceberg table maintenance for one tenant's silver and gold tables.

For each table of the chosen datasets (``silver.<dataset>`` and the gold tables of its contract;
tables not created yet are skipped), in this order:

1. ``rewrite_data_files``: compacts small files with Iceberg's defaults (a file group is rewritten
   when it holds at least 5 files or enough small ones; target size: the table's
   ``write.target-file-size-bytes``, 512 MB), or every file with ``--rewrite-all``;
2. ``rewrite_manifests``: rewrites the current snapshot's manifests into as few as their target size
   (8 MB) allows, so planning a scan reads a few manifests, not one per commit (skipped when there is
   only one: rewriting it would only commit a snapshot);
3. ``expire_snapshots``: removes snapshots older than the retention (and the files only they
   reference), always keeping the latest ``--retain-last`` (default 1). Time travel (``query --as-of``)
   reaches back as far as the retention;
4. ``remove_orphan_files``: deletes files under the table's location that no snapshot references and
   that are older than ``--orphan-age-days`` (default 3, Iceberg's default; Iceberg refuses less than
   1 day, because a running write's files are orphans until its commit). A killed write leaves such files.

Snapshot retention: ``--snapshot-retention-days``, else the lake config's ``retention_days.snapshots``
(the tenant module's output ``retention_days``), else ``DEFAULT_SNAPSHOT_RETENTION_DAYS`` (7).

Each run writes a report, ``reports/maintenance/<run_id>/report.json`` in the lake (and the local
mirror, whose data-quality index lists it): per table the data files, bytes and snapshots before and
after, what each procedure did, and the totals.

Each dataset's tables are maintained under the pipeline's leases of its silver and gold layers
(``spark_jobs.runs.leases``): a pipeline run that writes them (``run --layer silver|gold``, ``run-all``) and
maintenance exclude each other, so a compaction never races a commit (the Hadoop catalog takes one writer).
A dataset whose silver or gold lease a live run holds stops maintenance at once, in one line naming that
run (exit 1, the datasets before it stay maintained); so does a dataset an erase request holds (a compaction
racing an erasure's rewrite would lose its files), and an erase request refuses to start while maintenance
holds the leases. The weekly schedule (``modules/maintenance_schedule.py``) runs this same command on EMR,
so it follows the same rules.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import sys
from typing import Any, Callable

from spark_jobs.contract.model import available_datasets, load_contract
from spark_jobs.io import tables
from spark_jobs.lake.config import LakeConfig, gold_table_name, lake_from_args, read_lake_outputs
from spark_jobs.runs import lineage
from spark_jobs.runs.leases import fence, held_lease
from spark_jobs.runs.session import command_session, table_folders

REPORT_VERSION = 1
REPORTS_PREFIX = "reports/maintenance"  # reports/maintenance/<run_id>/report.json
# Facts of a table measured before and after maintenance (``table_stats``).
STAT_KEYS = ("snapshots", "data_files", "data_bytes", "records", "manifests", "retained_data_files",
             "retained_data_bytes")

DEFAULT_SNAPSHOT_RETENTION_DAYS = 7
DEFAULT_RETAIN_LAST = 1
DEFAULT_ORPHAN_AGE_DAYS = 3
MIN_ORPHAN_AGE_DAYS = 1  # Iceberg's own floor (24 hours) for remove_orphan_files


class MaintainError(ValueError):
    """Bad maintenance options; the message says which."""


@dataclasses.dataclass(frozen=True)
class MaintainOptions:
    """What ``maintain`` does to each table.

    Attributes:
        snapshot_retention_days: expire snapshots older than this. @default - 7 (DEFAULT_SNAPSHOT_RETENTION_DAYS)
        retain_last: snapshots always kept, however old. @default - 1
        orphan_age_days: only orphan files older than this are deleted (at least 1). @default - 3
        rewrite_all: rewrite every data file, not only groups of small ones. @default - False
    """

    snapshot_retention_days: int = DEFAULT_SNAPSHOT_RETENTION_DAYS
    retain_last: int = DEFAULT_RETAIN_LAST
    orphan_age_days: int = DEFAULT_ORPHAN_AGE_DAYS
    rewrite_all: bool = False

    def validate(self) -> None:
        if self.snapshot_retention_days < 0:
            raise MaintainError("--snapshot-retention-days must be 0 or more")
        if self.retain_last < 1:
            raise MaintainError("--retain-last must be at least 1 (the current snapshot is always kept)")
        if self.orphan_age_days < MIN_ORPHAN_AGE_DAYS:
            raise MaintainError(f"--orphan-age-days must be at least {MIN_ORPHAN_AGE_DAYS}: a running write's files "
                                "are orphans until it commits")


def retention_from_outputs(outputs: dict[str, Any]) -> int | None:
    """``retention_days.snapshots`` from a lake config, when the tenant's outputs carry it."""
    value = (outputs.get("retention_days") or {}).get("snapshots") if isinstance(outputs, dict) else None
    return int(value) if value is not None else None


def dataset_tables(spark, lake: LakeConfig, dataset: str) -> list[tables.Table]:
    """The existing silver and gold tables of one dataset."""
    candidates = [tables.table(spark, lake, "silver", dataset)]
    candidates += [tables.table(spark, lake, "gold", gold_table_name(dataset, name))
                   for name in load_contract(dataset).gold]
    return [tbl for tbl in candidates if tables.exists(spark, tbl)]


def _timestamp(moment: dt.datetime) -> str:
    return f"TIMESTAMP '{moment.strftime('%Y-%m-%d %H:%M:%S.%f')}'"


def table_stats(spark, tbl: tables.Table) -> dict[str, int]:
    """What a table holds: its snapshots; the current snapshot's data files, bytes, records and manifests
    (Iceberg's own metadata, no Spark job); and the distinct data files and bytes any snapshot still
    references (``all_data_files``: what the table keeps in storage, a Spark job over every manifest)."""
    iceberg = tables._iceberg_table(spark, tbl)
    current = iceberg.currentSnapshot()
    summary = {str(k): str(v) for k, v in dict(current.summary()).items()} if current is not None else {}
    retained = spark.sql(f"SELECT count(*) AS files, coalesce(sum(file_size_in_bytes), 0) AS bytes FROM "
                         f"(SELECT DISTINCT file_path, file_size_in_bytes FROM {tbl.qualified}.all_data_files)").first()
    return {"snapshots": len(list(iceberg.snapshots())),
            "data_files": int(summary.get("total-data-files", 0)),
            "data_bytes": int(summary.get("total-files-size", 0)),
            "records": int(summary.get("total-records", 0)),
            "manifests": _current_manifests(spark, tbl),
            "retained_data_files": int(retained["files"]), "retained_data_bytes": int(retained["bytes"])}


def _current_manifests(spark, tbl: tables.Table) -> int:
    iceberg = tables._iceberg_table(spark, tbl)
    current = iceberg.currentSnapshot()
    return len(list(current.allManifests(iceberg.io()))) if current is not None else 0


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


def maintain_table(spark, tbl: tables.Table, options: MaintainOptions, now: dt.datetime | None = None) -> dict[str, Any]:
    """Run the four procedures on one table; returns what each did and the table's stats before and after.
    The retention and the orphans' age count back from ``now``, by default the moment each procedure starts
    (so the snapshots compaction just made are older than a retention of 0 days)."""
    system, name = f"{tbl.catalog.name}.system", f"'{tbl.catalog.namespace(tbl.layer)}.{tbl.name}'"
    before = table_stats(spark, tbl)
    rewrite_options = ", options => map('rewrite-all', 'true')" if options.rewrite_all else ""
    rewrite = spark.sql(f"CALL {system}.rewrite_data_files(table => {name}{rewrite_options})").first().asDict()
    # One manifest is as few as it gets: rewriting it would only commit a snapshot.
    manifests = (spark.sql(f"CALL {system}.rewrite_manifests(table => {name})").first().asDict()
                 if _current_manifests(spark, tbl) > 1 else {})
    expire_before = (now or _utcnow()) - dt.timedelta(days=options.snapshot_retention_days)
    expire = spark.sql(f"CALL {system}.expire_snapshots(table => {name}, older_than => {_timestamp(expire_before)}, "
                       f"retain_last => {options.retain_last})").first().asDict()
    orphans_before = (now or _utcnow()) - dt.timedelta(days=options.orphan_age_days)
    orphans = [row[0] for row in spark.sql(f"CALL {system}.remove_orphan_files(table => {name}, "
                                           f"older_than => {_timestamp(orphans_before)})").collect()]
    after = table_stats(spark, tbl)
    return {"table": tbl.display, "snapshots_before": before["snapshots"], "snapshots_after": after["snapshots"],
            "before": before, "after": after,
            "rewritten_data_files": int(rewrite.get("rewritten_data_files_count") or 0),
            "added_data_files": int(rewrite.get("added_data_files_count") or 0),
            "rewritten_manifests": int(manifests.get("rewritten_manifests_count") or 0),
            "added_manifests": int(manifests.get("added_manifests_count") or 0),
            "expired_data_files": int(expire.get("deleted_data_files_count") or 0),
            "expired_manifest_lists": int(expire.get("deleted_manifest_lists_count") or 0),
            "orphan_files_removed": len(orphans), "orphan_files": orphans,
            "snapshots_expired_before": expire_before.isoformat(timespec="seconds"),
            "orphans_older_than": orphans_before.isoformat(timespec="seconds")}


def maintain(spark, lake: LakeConfig, datasets: list[str], options: MaintainOptions,
             progress: Callable[[str], None] = print, now: dt.datetime | None = None,
             on_table: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Maintain every existing table of ``datasets``, each dataset under its silver and gold leases; one
    progress line per table. A dataset whose lease a live run holds, or that an erase request holds, stops the
    run (``leases.LeaseRefused``) before its tables are touched; the datasets before it stay maintained. ``on_table`` gets each table's result as it is
    done (``run_maintenance`` keeps them when a later table fails)."""
    options.validate()
    results = []
    for dataset in datasets:
        found = dataset_tables(spark, lake, dataset)
        if not found:
            continue
        with held_lease(spark, lake, dataset, "maintain"):
            for tbl in found:
                fence(lake, dataset, tbl.layer, f"the maintenance of {tbl.display}")  # still this run's lease
                result = maintain_table(spark, tbl, options, now)
                before, after = result["before"], result["after"]
                progress(f"[maintain] {tbl.display}: snapshots {before['snapshots']} -> {after['snapshots']}, "
                         f"data files {before['data_files']} -> {after['data_files']} "
                         f"({_mb(before['data_bytes'])} -> {_mb(after['data_bytes'])}), kept in storage "
                         f"{before['retained_data_files']} -> {after['retained_data_files']} files "
                         f"({_mb(before['retained_data_bytes'])} -> {_mb(after['retained_data_bytes'])}), "
                         f"manifests {before['manifests']} -> {after['manifests']}, orphan files removed "
                         f"{result['orphan_files_removed']}")
                results.append(result)
                if on_table is not None:
                    on_table(result)
    return results


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def totals(results: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """The stats of every table maintained, summed: ``{"before": {...}, "after": {...}}``."""
    return {when: {key: sum(r[when][key] for r in results) for key in STAT_KEYS} for when in ("before", "after")}


def run_maintenance(spark, lake: LakeConfig, datasets: list[str], options: MaintainOptions, tenant: str = "",
                    progress: Callable[[str], None] = print, now: dt.datetime | None = None) -> dict[str, Any]:
    """``maintain`` plus its report: ``reports/maintenance/<run_id>/report.json`` in the lake and the local
    mirror (whose data-quality index is rebuilt). The report is written when a dataset is refused or a
    procedure fails too (``status`` "failed", ``error``, the tables done before), and the error re-raised."""
    from spark_jobs.runs.manifest import new_run_id

    started = dt.datetime.now(dt.timezone.utc)
    report: dict[str, Any] = {
        "version": REPORT_VERSION, "kind": "maintenance", "run_id": new_run_id(started), "lake_uri": lake.lake_uri,
        "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"), "datasets": list(datasets),
        "options": dataclasses.asdict(options), "status": "completed"}
    results: list[dict[str, Any]] = []

    def finish() -> None:
        finished = dt.datetime.now(dt.timezone.utc)
        report.update(finished_at=finished.strftime("%Y-%m-%dT%H:%M:%SZ"),
                      duration_seconds=round((finished - started).total_seconds(), 1), tables=results,
                      totals=totals(results))
        report["report"] = write_report(spark, lake, report, tenant)
        progress(f"[maintain] report {report['report']}")

    try:
        maintain(spark, lake, datasets, options, on_table=results.append, progress=progress, now=now)
    except Exception as exc:
        report.update(status="failed", error=(str(exc).strip().splitlines() or [type(exc).__name__])[0][:500])
        try:
            finish()
        except Exception as write_error:  # noqa: BLE001 - the run's own error is the one to report
            progress(f"[maintain] warning: the report of the failed run was not written "
                     f"({(str(write_error).splitlines() or [''])[0][:200]})")
        raise
    finish()
    return report


def write_report(spark, lake: LakeConfig, report: dict[str, Any], tenant: str = "") -> str:
    """Write ``report.json`` to the lake and the local mirror, refresh the mirror's index; returns the lake
    URI of the report (the mirror path when the lake is not reachable as a path or object store)."""
    from spark_jobs.quality import index, storage, tenant_of
    from spark_jobs.quality.report import mirror_root

    text = json.dumps(report, indent=1, sort_keys=True, default=str)
    uri = lake.path(REPORTS_PREFIX, report["run_id"], "report.json")
    storage.write_text(spark, uri, text)
    mirror = mirror_root(tenant_of({"tenant": tenant, "lake_uri": lake.lake_uri}))
    local = mirror / "maintenance" / report["run_id"] / "report.json"
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_text(text + "\n", encoding="utf-8")
    index.build_index(mirror.parent.name, mirror)
    return uri


def run(args: argparse.Namespace) -> int:
    """The command, with the options ``spark_jobs.cli`` parsed: maintenance inside an OpenLineage run, then one
    line of totals (or the tables as JSON)."""
    lake = lake_from_args(args)
    retention = args.snapshot_retention_days
    if retention is None and (args.tenant or args.lake_config) and not args.lake_uri:
        retention = retention_from_outputs(read_lake_outputs(args.tenant, args.lake_config)[0])
    options = MaintainOptions(
        snapshot_retention_days=DEFAULT_SNAPSHOT_RETENTION_DAYS if retention is None else retention,
        retain_last=args.retain_last, orphan_age_days=args.orphan_age_days, rewrite_all=args.rewrite_all)
    options.validate()
    datasets = args.dataset or available_datasets()
    progress = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    with command_session(lake, "tenantlake-maintain", args.jars, reads=table_folders(datasets)) as spark:
        with lineage.tracked(spark, lake, "maintain", progress=progress) as changed:  # START, COMPLETE or FAIL
            report = run_maintenance(spark, lake, datasets, options, tenant=args.tenant, progress=progress)
            changed(lineage.maintenance_outputs(lake, report))
    results, total = report["tables"], report["totals"]
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"maintain: {len(results)} tables (snapshot retention {options.snapshot_retention_days} d, "
              f"retain last {options.retain_last}, orphans older than {options.orphan_age_days} d): data files "
              f"{total['before']['data_files']} -> {total['after']['data_files']}, kept in storage "
              f"{total['before']['retained_data_bytes'] / 1e6:.1f} -> {total['after']['retained_data_bytes'] / 1e6:.1f} "
              f"MB; report {report['report']}")
    return 0
