"""The artifact lands under artifacts/spark_jobs/<version>/ with SSE-KMS (tenant key) and is not re-uploaded."""
from __future__ import annotations

import pytest

from infra.deploy.artifact import build_artifact
from infra.deploy.target import DeployError, target_from_outputs
from infra.deploy.upload import upload_artifact

pytestmark = pytest.mark.integration


def test_upload_lands_encrypted_and_unchanged_code_is_not_uploaded_again(tmp_path, driven_emulator, tenant_outputs):
    target = target_from_outputs("acme", tenant_outputs)
    built = build_artifact(tmp_path)
    s3 = driven_emulator.client("s3")
    first = upload_artifact(s3, built, target)
    assert first.uploaded == (f"artifacts/spark_jobs/{built.version}/spark_jobs.zip",
                              f"artifacts/spark_jobs/{built.version}/entrypoint.py")
    assert first.location.zip_uri == f"s3://acme-eu-west-1-lake/artifacts/spark_jobs/{built.version}/spark_jobs.zip"
    head = s3.head_object(Bucket=target.bucket, Key=built.zip_key)
    assert head["ServerSideEncryption"] == "aws:kms"
    assert head["SSEKMSKeyId"] == target.kms_key_arn
    assert head["Metadata"]["sha256"] == built.sha256
    body = s3.get_object(Bucket=target.bucket, Key=built.zip_key)["Body"].read()
    assert body == built.zip_path.read_bytes()
    etag = head["ETag"]

    second = upload_artifact(s3, build_artifact(tmp_path / "again"), target)
    assert second.uploaded == () and len(second.skipped) == 2
    assert s3.head_object(Bucket=target.bucket, Key=built.zip_key)["ETag"] == etag
    versions = s3.list_objects_v2(Bucket=target.bucket, Prefix="artifacts/")["KeyCount"]
    assert versions == 2


def test_same_version_with_a_different_checksum_is_replaced(tmp_path, driven_emulator, tenant_outputs):
    target = target_from_outputs("acme", tenant_outputs)
    built = build_artifact(tmp_path)
    s3 = driven_emulator.client("s3")
    s3.put_object(Bucket=target.bucket, Key=built.zip_key, Body=b"stale", ServerSideEncryption="aws:kms",
                  SSEKMSKeyId=target.kms_key_arn, Metadata={"sha256": "0" * 64})
    result = upload_artifact(s3, built, target)
    assert built.zip_key in result.uploaded
    assert s3.get_object(Bucket=target.bucket, Key=built.zip_key)["Body"].read() == built.zip_path.read_bytes()


def test_upload_failure_is_one_clear_line(tmp_path, driven_emulator, tenant_outputs):
    target = target_from_outputs("acme", {**tenant_outputs, "lake_bucket_name": "acme-eu-west-1-missing"})
    with pytest.raises(DeployError) as err:
        upload_artifact(driven_emulator.client("s3"), build_artifact(tmp_path), target)
    message = str(err.value)
    assert "artifact upload to s3://acme-eu-west-1-missing/artifacts/spark_jobs/" in message
    assert "NoSuchBucket" in message and "nothing was submitted" in message and "\n" not in message
