"""spark_jobs/erasure/iceberg.py: after a row-level delete, the table's metadata names the subject no more.

A copy-on-write DELETE lists the file it replaced as a DELETED entry of the new snapshot's manifest, with
the file's column bounds: the deleted customer, the file's minimum, is still in the current metadata.
``finish`` rewrites the manifests and expires every other snapshot: no manifest the table keeps names
the customer, no data file holds it, and the files Iceberg deleted are exactly those the delete replaced
(a real table, local Hadoop catalog).
"""
from __future__ import annotations

from spark_jobs.erasure import iceberg
from spark_jobs.erasure.matching import KeyRule, Needles
from spark_jobs.erasure.scan import Matcher, scan_chunks
from spark_jobs.io import tables
from spark_jobs.lake.config import LakeConfig


def _holding(folder, matcher) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")
                  and scan_chunks([p.read_bytes()], matcher)[0])


def test_finish_leaves_no_manifest_that_names_a_deleted_subject(spark, tmp_path):
    tbl = tables.table(spark, LakeConfig(lake_uri=str(tmp_path)), "silver", "erase_bounds")
    spark.sql(f"CREATE TABLE {tbl.qualified} (customer_id bigint, bytes bigint) USING iceberg "
              "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'copy-on-write')")
    spark.sql(f"INSERT INTO {tbl.qualified} VALUES (1042, 5), (5000, 1042)")
    spark.sql(f"INSERT INTO {tbl.qualified} VALUES (7000, 6)")  # a file the delete does not touch
    before = iceberg.snapshot_ids(spark, tbl)
    subjects = spark.createDataFrame([(1042,)], "customer_id bigint")
    subjects.createOrReplaceTempView("erase_bounds_subjects")
    spark.sql(f"MERGE INTO {tbl.qualified} t USING erase_bounds_subjects s ON t.customer_id = s.customer_id "
              "WHEN MATCHED THEN DELETE")
    matcher = Matcher(Needles.build([], [KeyRule.of("customer_id", "long", ["1042"])]))
    table_dir = tmp_path / "silver" / "erase_bounds"
    live_manifests = {r[0].rsplit("/", 1)[1] for r in spark.sql(f"SELECT path FROM {tbl.qualified}.manifests").collect()}
    assert set(_holding(table_dir / "metadata", matcher)) & live_manifests  # the DELETED entry's bounds

    result = iceberg.finish(spark, tbl, before)
    assert result["snapshots_expired"] == 3 and result["expired_data_files"] == 1  # the file the delete replaced
    assert len(iceberg.snapshot_ids(spark, tbl)) == 1
    assert _holding(table_dir, matcher) == []
    assert sorted(tuple(r) for r in tables.read(spark, tbl).collect()) == [(5000, 1042), (7000, 6)]
