"""The plain-Python reader of Iceberg metadata: the same live files Spark's ``files`` metadata table lists,
so DuckDB reads exactly the current snapshot (never the files an overwrite left for older snapshots)."""
from __future__ import annotations

import shutil

import duckdb
import pytest
from pyspark.sql import functions as F

from spark_jobs.io import iceberg_files, tables
from spark_jobs.io.partitioning import Partitioning
from spark_jobs.lake.config import LakeConfig
from tests.spark_jobs.conftest import ts

DAYS = Partitioning("event_ts", "day")


@pytest.fixture(scope="module")
def table_with_history(spark, tmp_path_factory):
    """A table with three snapshots: two days, then one day replaced, then the other day emptied."""
    lake = LakeConfig(lake_uri=str(tmp_path_factory.mktemp("iceberg-files") / "lake"))
    tbl = tables.table(spark, lake, "silver", "events")

    def rows(*items):
        return spark.createDataFrame(list(items), "id string, event_ts timestamp").withColumn("n", F.lit(1))

    snapshots = [tables.overwrite(rows(("a", ts("2020-11-16 01:00:00")), ("b", ts("2020-11-17 01:00:00"))), tbl, DAYS,
                                  DAYS.covering(["2020-11-16", "2020-11-17"], False), "r1")["snapshot_id"]]
    snapshots.append(tables.overwrite(rows(("c", ts("2020-11-16 02:00:00"))), tbl, DAYS,
                                      DAYS.covering(["2020-11-16"], False), "r2")["snapshot_id"])
    snapshots.append(tables.overwrite(rows(("c", ts("2020-11-16 02:00:00"))).limit(0), tbl, DAYS,
                                      DAYS.covering(["2020-11-17"], False), "r3")["snapshot_id"])
    return spark, tbl, snapshots


def test_live_files_are_the_ones_spark_lists(table_with_history):
    spark, tbl, snapshots = table_with_history
    spark_files = sorted(r[0] for r in spark.sql(f"SELECT file_path FROM {tbl.qualified}.files").collect())
    ours = iceberg_files.data_files(tbl.location)
    assert [f.uri for f in ours] == spark_files and len(ours) == 1
    on_disk = sorted((iceberg_files.Path(tbl.location) / "data").rglob("*.parquet"))
    assert len(on_disk) == 3  # the overwritten files are still there, for the older snapshots
    assert [f.uri for f in iceberg_files.data_files(tbl.location, snapshots[0])] == sorted(
        r[0] for r in spark.sql(f"SELECT file_path FROM {tbl.qualified}.files VERSION AS OF {snapshots[0]}").collect())


def test_duckdb_reads_the_current_snapshot_as_naive_utc(table_with_history):
    spark, tbl, snapshots = table_with_history
    assert duckdb.sql(f"SELECT id, event_ts, n FROM {iceberg_files.duckdb_source(tbl.location)}").fetchall() == [
        ("c", ts("2020-11-16 02:00:00"), 1)]
    first = duckdb.sql(f"SELECT id FROM {iceberg_files.duckdb_source(tbl.location, snapshots[0])} ORDER BY 1").fetchall()
    assert first == [("a",), ("b",)]


def test_a_commit_is_found_even_when_the_version_hint_was_not_updated(table_with_history, tmp_path):
    _, tbl, snapshots = table_with_history
    copy = tmp_path / "events"
    shutil.copytree(tbl.location, copy)
    (copy / "metadata" / "version-hint.text").write_text("1")  # a writer killed after its rename, before the hint
    assert iceberg_files.table_metadata(copy)["current-snapshot-id"] == snapshots[-1]
    (copy / "metadata" / "version-hint.text").unlink()
    assert iceberg_files.table_metadata(copy)["current-snapshot-id"] == snapshots[-1]


def test_not_a_table_and_tables_with_delete_files_are_refused(spark, tmp_path):
    with pytest.raises(iceberg_files.IcebergMetadataError, match="is not an Iceberg table"):
        iceberg_files.data_files(tmp_path)
    tbl = tables.table(spark, LakeConfig(lake_uri=str(tmp_path / "lake")), "gold", "mor")
    spark.sql(f"CREATE TABLE {tbl.qualified} (id int) USING iceberg TBLPROPERTIES ('format-version' = '2', "
              "'write.delete.mode' = 'merge-on-read')")
    spark.createDataFrame([(1,), (2,)], "id int").coalesce(1).writeTo(tbl.qualified).append()  # one file, two rows
    spark.sql(f"DELETE FROM {tbl.qualified} WHERE id = 1")
    with pytest.raises(iceberg_files.IcebergMetadataError, match="has delete files; read it through Spark"):
        iceberg_files.data_files(tbl.location)


@pytest.mark.parametrize("codec", ["null", "deflate", "bzip2", "xz"])
def test_avro_files_are_read_with_a_maintained_library(codec):
    """Manifests are read with fastavro (issue 40), not a hand-written decoder that knew two codecs (null and
    deflate) and no logical types: records come back whole, in every codec fastavro reads without extras."""
    import io

    import fastavro

    schema = {"type": "record", "name": "manifest_entry", "fields": [
        {"name": "status", "type": "int"},
        {"name": "data_file", "type": {"type": "record", "name": "r2", "fields": [
            {"name": "file_path", "type": "string"},
            {"name": "lower_bounds", "type": ["null", {"type": "array", "items": {
                "type": "record", "name": "k126_v127", "fields": [{"name": "key", "type": "int"},
                                                                  {"name": "value", "type": "bytes"}]}}]}]}}]}
    records = [{"status": 1, "data_file": {"file_path": "s3a://b/t/data/x.parquet",
                                           "lower_bounds": [{"key": 1, "value": b"\x12\x04\x00\x00"}]}}]
    sink = io.BytesIO()
    fastavro.writer(sink, schema, records, codec=codec, metadata={"schema": '{"fields": []}'})
    meta, found = iceberg_files.iter_avro(io.BytesIO(sink.getvalue()))
    assert meta["schema"] == '{"fields": []}' and list(found) == records
    assert iceberg_files.read_avro(sink.getvalue()) == records
    with pytest.raises(iceberg_files.IcebergMetadataError, match="not an Avro object container file"):
        iceberg_files.read_avro(b"PAR1")
