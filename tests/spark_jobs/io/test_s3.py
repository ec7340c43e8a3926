"""``spark_jobs/io/s3.py`` on the session emulator: the one factory of the lake's boto3 clients and the one
listing of object versions."""
from __future__ import annotations

import pytest
from botocore.exceptions import NoCredentialsError

from spark_jobs.io.s3 import lake_client, list_versions
from spark_jobs.lake.config import LakeConfig

BUCKET = "tenantlake-test-io-s3"


@pytest.fixture
def lake(emulator, aws_env, monkeypatch) -> LakeConfig:
    for name, value in aws_env.items():  # the credentials a command takes from its environment
        monkeypatch.setenv(name, value)
    return LakeConfig(lake_uri=f"s3a://{BUCKET}", s3_endpoint=emulator.endpoint, ca_bundle=emulator.ca_bundle,
                      region="eu-west-1")


def test_every_version_under_a_prefix_and_the_delete_markers_when_asked(lake):
    s3 = lake_client(lake)
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    for key, body in (("landing/a", b"abc"), ("landing/a", b"abcde"), ("landing/b", b"xy"), ("other/c", b"z")):
        s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    s3.delete_object(Bucket=BUCKET, Key="landing/b")

    listed = list(list_versions(s3, BUCKET, "landing/"))
    assert sorted((v.key, v.size, v.is_latest, v.is_delete_marker) for v in listed) == [
        ("landing/a", 3, False, False), ("landing/a", 5, True, False), ("landing/b", 2, False, False)]
    assert all(v.version_id != "null" and len(v.etag) == 32 and v.last_modified.tzinfo for v in listed)
    markers = [v for v in list_versions(s3, BUCKET, "landing/", delete_markers=True) if v.is_delete_marker]
    assert [(m.key, m.size, m.is_latest) for m in markers] == [("landing/b", 0, True)]
    assert len(list(list_versions(s3, BUCKET))) == 4  # "": the whole bucket


def test_a_caller_sets_timeouts_and_the_emulators_keys_by_parameter(lake, monkeypatch, tmp_path):
    """The sizing's listing gives up fast; the usage report and the report mirror take the emulator's keys when
    the environment has none, and every other caller the default chain (which then finds none)."""
    quick = lake_client(lake, timeout_s=5, retries=1)
    assert (quick.meta.config.connect_timeout, quick.meta.config.read_timeout) == (5, 5)
    assert quick.meta.config.retries["total_max_attempts"] == 2  # the first attempt and one retry
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert "Buckets" in lake_client(lake, emulator_credentials=True, fresh_session=True).list_buckets()
    with pytest.raises(NoCredentialsError):
        lake_client(lake, fresh_session=True).list_buckets()
