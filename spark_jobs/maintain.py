"""``python -m spark_jobs maintain``: Iceberg table maintenance for one tenant's silver and gold tables.

For each table of the chosen datasets (``silver.<dataset>`` and the gold tables of its contract;
tables not created yet are skipped), in this order:

1. ``rewrite_data_files``: compacts small files with Iceberg's defaults (a file group is rewritten
   when it holds at least 5 files or enough small ones; target size: the table's
   ``write.target-file-size-bytes``, 512 MB), or every file with ``--rewrite-all``;
2. ``expire_snapshots``: removes snapshots older than the retention (and the files only they
   reference), always keeping the latest ``--retain-last`` (default 1). Time travel (``query --as-of``)
   reaches back as far as the retention;
3. ``remove_orphan_files``: deletes files under the table's location that no snapshot references and
   that are older than ``--orphan-age-days`` (default 3, Iceberg's default; Iceberg refuses less than
   1 day, because a running write's files are orphans until its commit). A killed write leaves such files.

Snapshot retention: ``--snapshot-retention-days``, else the lake config's ``retention_days.snapshots``
(not among the tenant module's outputs today: a tenant setting reaches the jobs only through
``lake.json`` / Terraform outputs), else ``DEFAULT_SNAPSHOT_RETENTION_DAYS`` (7).

Each dataset's tables are maintained under a lease (``spark_jobs.leases``), the one pipeline runs take:
an erase request refuses to start while it is held, and maintenance refuses to start while an erase
request holds the dataset (a compaction racing an erasure's rewrite would lose its files).
Run it while no pipeline job writes the tenant's tables (the Hadoop catalog takes one writer).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any, Callable

from spark_jobs.contract import load_contract
from spark_jobs.io import tables
from spark_jobs.lake import LakeConfig, gold_table_name
from spark_jobs.leases import held_lease

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


def maintain_table(spark, tbl: tables.Table, options: MaintainOptions, now: dt.datetime) -> dict[str, Any]:
    """Run the three procedures on one table; returns their result rows and the snapshot counts."""
    system, name = f"{tbl.catalog.name}.system", f"'{tbl.catalog.namespace(tbl.layer)}.{tbl.name}'"
    snapshots_before = spark.sql(f"SELECT count(*) FROM {tbl.qualified}.snapshots").first()[0]
    rewrite_options = ", options => map('rewrite-all', 'true')" if options.rewrite_all else ""
    rewrite = spark.sql(f"CALL {system}.rewrite_data_files(table => {name}{rewrite_options})").first().asDict()
    expire_before = now - dt.timedelta(days=options.snapshot_retention_days)
    expire = spark.sql(f"CALL {system}.expire_snapshots(table => {name}, older_than => {_timestamp(expire_before)}, "
                       f"retain_last => {options.retain_last})").first().asDict()
    orphans_before = now - dt.timedelta(days=options.orphan_age_days)
    orphans = [row[0] for row in spark.sql(f"CALL {system}.remove_orphan_files(table => {name}, "
                                           f"older_than => {_timestamp(orphans_before)})").collect()]
    snapshots_after = spark.sql(f"SELECT count(*) FROM {tbl.qualified}.snapshots").first()[0]
    return {"table": tbl.display, "snapshots_before": int(snapshots_before), "snapshots_after": int(snapshots_after),
            "rewritten_data_files": int(rewrite.get("rewritten_data_files_count") or 0),
            "added_data_files": int(rewrite.get("added_data_files_count") or 0),
            "expired_data_files": int(expire.get("deleted_data_files_count") or 0),
            "expired_manifest_lists": int(expire.get("deleted_manifest_lists_count") or 0),
            "orphan_files_removed": len(orphans), "orphan_files": orphans,
            "snapshots_expired_before": expire_before.isoformat(timespec="seconds"),
            "orphans_older_than": orphans_before.isoformat(timespec="seconds")}


def maintain(spark, lake: LakeConfig, datasets: list[str], options: MaintainOptions,
             progress: Callable[[str], None] = print, now: dt.datetime | None = None) -> list[dict[str, Any]]:
    """Maintain every existing table of ``datasets``, each dataset under a lease; one progress line per
    table. A dataset an erase request holds stops the run (``leases.LeaseRefused``) before its tables
    are touched; the datasets before it stay maintained."""
    options.validate()
    now = now or dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    results = []
    for dataset in datasets:
        found = dataset_tables(spark, lake, dataset)
        if not found:
            continue
        with held_lease(spark, lake, dataset, "maintain"):
            for tbl in found:
                result = maintain_table(spark, tbl, options, now)
                progress(f"[maintain] {tbl.display}: snapshots {result['snapshots_before']} -> "
                         f"{result['snapshots_after']}, rewrote {result['rewritten_data_files']} data files into "
                         f"{result['added_data_files']}, expired files {result['expired_data_files']}, orphan files "
                         f"removed {result['orphan_files_removed']}")
                results.append(result)
    return results
