"""spark_jobs/usage/objects.py: rows per layer and dataset from a listing of every version, and the same rows
from an S3 Inventory report in the format S3 documents (Parquet data files named by a manifest.json)."""
from __future__ import annotations

import datetime as dt
import io
import json

import pytest

from spark_jobs.io.s3 import ObjectVersion
from spark_jobs.usage import objects

GOLDS = {"iot_hourly": "iot", "clickstream_site_hourly": "clickstream"}
MONTH = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m")


def tally(versions, month: str = MONTH, days: tuple[str, ...] = ()) -> objects.Tally:
    """The versions tallied as ``usage.collect_usage`` tallies them, one pass."""
    counted = objects.Tally(GOLDS, month, list(days))
    for version in versions:
        counted.add(version)
    return counted


def test_keys_are_classified_by_layer_and_dataset():
    assert objects.classify("landing/iot/a.json", GOLDS) == ("landing", "iot")
    assert objects.classify("silver/iot/data/event_ts_day=2020-11-16/x.parquet", GOLDS) == ("silver", "iot")
    assert objects.classify("gold/iot_hourly/metadata/v1.metadata.json", GOLDS) == ("gold", "iot")
    assert objects.classify("reports/silver/iot/20261121T100000Z-0000aaaa/manifest.json", GOLDS) == ("reports", "iot")
    assert objects.classify("reports/maintenance/r/report.json", GOLDS) == ("reports", "-")
    assert objects.classify("checkpoints/iot/bronze/offsets/0", GOLDS) == ("checkpoints", "iot")
    assert objects.classify("artifacts/spark_jobs/abc/spark_jobs.zip", GOLDS) == ("artifacts", "-")
    assert objects.classify("README", GOLDS) == ("-", "-")


@pytest.fixture
def versioned_lake(boto_session):
    """A versioned bucket: two current objects, one overwritten (one noncurrent version), one deleted."""
    s3 = boto_session("s3")
    bucket = f"usage-objects-{dt.datetime.now().strftime('%H%M%S%f')}"
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(Bucket=bucket, Key="landing/iot/a.json", Body=b"x" * 100)
    s3.put_object(Bucket=bucket, Key="silver/iot/data/f.parquet", Body=b"y" * 300)
    s3.put_object(Bucket=bucket, Key="silver/iot/data/f.parquet", Body=b"z" * 500)
    s3.put_object(Bucket=bucket, Key="gold/iot_hourly/data/g.parquet", Body=b"g" * 70)
    s3.put_object(Bucket=bucket, Key="landing/iot/gone.json", Body=b"q" * 40)
    s3.delete_object(Bucket=bucket, Key="landing/iot/gone.json")
    return s3, bucket


def test_a_listing_counts_current_and_noncurrent_versions_apart(versioned_lake):
    s3, bucket = versioned_lake
    versions, source = objects.collect(s3, bucket)
    assert source["source"] == "listing" and source["why"] == "no inventory configuration on the bucket"
    rows = {(r.layer, r.dataset): r for r in tally(versions).rows()}
    landing, silver, gold = rows[("landing", "iot")], rows[("silver", "iot")], rows[("gold", "iot")]
    assert (landing.current_bytes, landing.current_objects, landing.noncurrent_bytes, landing.noncurrent_objects,
            landing.delete_markers) == (100, 1, 40, 1, 1)
    assert (silver.current_bytes, silver.noncurrent_bytes, silver.noncurrent_objects) == (500, 300, 1)
    assert (gold.current_bytes, gold.current_objects) == (70, 1)
    assert silver.bytes_by_class == {"STANDARD": 800}
    assert landing.versions_written == 3  # two puts and a delete marker, all this month


def _write_inventory_report(s3, versions, source_bucket, dest_bucket, config_id, folder_time):
    """An inventory report as S3 documents it: Parquet data files and a manifest.json naming them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({
        "bucket": [source_bucket] * len(versions),
        "key": [v.key for v in versions],
        "version_id": [f"v{i}" for i in range(len(versions))],
        "is_latest": [v.is_latest for v in versions],
        "is_delete_marker": [v.is_delete_marker for v in versions],
        "size": pa.array([None if v.is_delete_marker else v.size for v in versions], pa.int64()),
        "last_modified_date": pa.array([v.last_modified.replace(tzinfo=None) for v in versions], pa.timestamp("ms")),
        "storage_class": [None if v.is_delete_marker else v.storage_class for v in versions],
    })
    base = f"inventory/{source_bucket}/{config_id}"
    halves = [table.slice(0, len(versions) // 2), table.slice(len(versions) // 2)]
    files = []
    for i, part in enumerate(halves):
        buffer = io.BytesIO()
        pq.write_table(part, buffer)
        key = f"{base}/data/part-{i}.parquet"
        s3.put_object(Bucket=dest_bucket, Key=key, Body=buffer.getvalue())
        files.append({"key": key, "size": buffer.tell(), "MD5checksum": "-"})
    manifest = {"sourceBucket": source_bucket, "destinationBucket": f"arn:aws:s3:::{dest_bucket}", "version": "2016-11-30",
                "creationTimestamp": str(int(folder_time.timestamp() * 1000)), "fileFormat": "Parquet",
                "fileSchema": "message s3.inventory { required binary bucket (UTF8); required binary key (UTF8); ... }",
                "files": files}
    s3.put_object(Bucket=dest_bucket, Key=f"{base}/{folder_time.strftime('%Y-%m-%dT%H-%MZ')}/manifest.json",
                  Body=json.dumps(manifest).encode())


def test_the_newest_inventory_report_gives_the_same_rows_as_a_listing(versioned_lake):
    s3, bucket = versioned_lake
    logs = f"{bucket}-logs"
    s3.create_bucket(Bucket=logs, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    listed = list(objects.collect(s3, bucket)[0])
    s3.put_bucket_inventory_configuration(Bucket=bucket, Id="lake-daily", InventoryConfiguration={
        "Id": "lake-daily", "IsEnabled": True, "IncludedObjectVersions": "All", "Schedule": {"Frequency": "Daily"},
        "Destination": {"S3BucketDestination": {"Bucket": f"arn:aws:s3:::{logs}", "Format": "Parquet",
                                                "Prefix": "inventory", "AccountId": "123456789012"}},
        "OptionalFields": ["Size", "LastModifiedDate", "StorageClass"]})
    _, before_delivery = objects.collect(s3, bucket)
    assert before_delivery["source"] == "listing" and "has delivered no report yet" in before_delivery["why"]
    now = dt.datetime.now(dt.timezone.utc).replace(second=0, microsecond=0)
    _write_inventory_report(s3, listed[:1], bucket, logs, "lake-daily", now - dt.timedelta(days=1))  # an older one
    _write_inventory_report(s3, listed, bucket, logs, "lake-daily", now)
    reported, source = objects.collect(s3, bucket)
    assert source["source"] == "inventory" and source["report"].endswith(f"{now.strftime('%Y-%m-%dT%H-%MZ')}/manifest.json")
    as_rows = [r.to_dict() for r in tally(reported).rows()]
    assert as_rows == [r.to_dict() for r in tally(listed).rows()]


def test_stored_by_day_is_cumulative_per_layer():
    day = dt.datetime(2026, 11, 2, 12, tzinfo=dt.timezone.utc)
    versions = [ObjectVersion("silver/iot/a", size=10, last_modified=day),
                ObjectVersion("silver/iot/b", size=5, is_latest=False, last_modified=day + dt.timedelta(days=1)),
                ObjectVersion("silver/iot/c", is_delete_marker=True, last_modified=day),
                ObjectVersion("gold/iot_hourly/d", size=7, last_modified=day - dt.timedelta(days=60))]
    series = tally(versions, "2026-11", ("2026-11-01", "2026-11-02", "2026-11-03")).stored_by_day()
    assert series == {"silver": [0, 10, 15], "gold": [7, 7, 7]}
