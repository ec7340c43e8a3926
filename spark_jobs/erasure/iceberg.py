"""A dataset's Iceberg tables after an erasure: the snapshots that still reference a subject's files.

The silver rewrite and the gold recomputes replace data files. The snapshots the table had when the
request began still reference the replaced files (and older ones that may hold a subject), and the
request's own commits list the files they deleted as ``DELETED`` manifest entries, which keep those
files' column lower and upper bounds: a subject that was a file's min or max lives on there. ``finish``
therefore commits ``rewrite_manifests`` (manifests that list only live files), then expires every other
snapshot, by id (``expire_snapshots`` with ``snapshot_ids``): those from before the request and the
request's own. Iceberg deletes the data files, manifests and manifest lists that only they referenced:
the files the erasure's rewrites replaced, and the manifests that named them. No file the kept snapshot
references is touched, and no file that no snapshot ever referenced (a running write's, a killed
write's): orphan removal by age is ``maintain``'s. Time travel on the tables starts again from the erasure.

``unreferenced`` tells which of some files under a table's ``data/`` no snapshot references: a killed
write's file that the verification found holding a subject is deleted by the request (``sweep``), and
nothing else of the kind.
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from spark_jobs.io import tables


def snapshot_ids(spark: SparkSession, tbl: tables.Table) -> list[int]:
    """The ids of every snapshot the table keeps (none for a table not created yet)."""
    if not tables.exists(spark, tbl):
        return []
    return sorted(int(s.snapshotId()) for s in tables._iceberg_table(spark, tbl).snapshots())


def finish(spark: SparkSession, tbl: tables.Table, before: list[int]) -> dict[str, Any]:
    """Rewrite the current snapshot's manifests, then expire every other snapshot (``before``: the table's
    snapshots when the request began, recorded for the receipt)."""
    result: dict[str, Any] = {"table": tbl.display, "snapshots_before_request": len(before), "snapshots_expired": 0,
                              "expired_data_files": 0, "expired_manifests": 0, "expired_manifest_lists": 0}
    if tables.current_snapshot(spark, tbl) is None:
        return result
    system, name = f"{tbl.catalog.name}.system", f"'{tbl.catalog.namespace(tbl.layer)}.{tbl.name}'"
    spark.sql(f"CALL {system}.rewrite_manifests(table => {name})").collect()
    current = (tables.current_snapshot(spark, tbl) or {}).get("snapshot_id")
    expired = [i for i in snapshot_ids(spark, tbl) if i != current]
    if not expired:
        return result
    ids = ", ".join(f"{i}L" for i in expired)
    row = spark.sql(f"CALL {system}.expire_snapshots(table => {name}, snapshot_ids => array({ids}))").first().asDict()
    result.update(snapshots_expired=len(expired), expired_data_files=int(row.get("deleted_data_files_count") or 0),
                  expired_manifests=int(row.get("deleted_manifest_files_count") or 0),
                  expired_manifest_lists=int(row.get("deleted_manifest_lists_count") or 0))
    return result


def unreferenced(spark: SparkSession, tbl: tables.Table, paths: list[str]) -> list[str]:
    """Those of ``paths`` (full URIs under the table's ``data/``) that no snapshot of the table references."""
    if not paths or not tables.exists(spark, tbl):
        return sorted(paths)
    referenced = {r[0] for r in spark.sql(f"SELECT DISTINCT file_path FROM {tbl.qualified}.all_files").collect()}
    referenced |= {r[0] for r in spark.sql(f"SELECT DISTINCT path FROM {tbl.qualified}.all_manifests").collect()}
    return sorted(p for p in paths if p not in referenced)
