"""The lake's objects and all their versions, as S3 keeps them: writing and deleting.

Spark and the Iceberg procedures see only current objects; a versioned bucket keeps every overwritten
or deleted object as a noncurrent version. Erasure therefore works on versions through the S3 API
(boto3, the same credentials as the jobs' s3a). The client and the listing of versions are
``spark_jobs/io/s3.py``'s (``lake_client``, ``list_versions``); reading a version for subjects is
``scan.py``'s, on the executors (``sweep.py``).
"""
from __future__ import annotations

from typing import Any, Iterable

from spark_jobs.lake.config import LakeConfig


def delete_versions(s3, bucket: str, pairs: Iterable[tuple[str, str]]) -> int:
    """Delete object versions (or delete markers) for good; returns how many."""
    pairs = list(pairs)
    for start in range(0, len(pairs), 1000):
        chunk = pairs[start:start + 1000]
        result = s3.delete_objects(Bucket=bucket, Delete={"Quiet": True, "Objects": [
            {"Key": key, "VersionId": version_id} for key, version_id in chunk]})
        if result.get("Errors"):
            first = result["Errors"][0]
            raise OSError(f"could not delete {first.get('Key')} version {first.get('VersionId')}: {first.get('Message')}")
    return len(pairs)


def read_uri(s3, uri: str) -> str:
    """The current version of ``s3://bucket/key`` (or ``s3a://``) as UTF-8 text."""
    bucket, _, key = uri.split("://", 1)[1].partition("/")
    if not bucket or not key:
        raise OSError(f"{uri} is not s3://BUCKET/KEY")
    try:
        return s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode("utf-8")
    except Exception as exc:  # noqa: BLE001 - botocore's errors: one line for the caller
        raise OSError(str(exc).splitlines()[0]) from None


def put_text(s3, lake: LakeConfig, key: str, text: str) -> None:
    """Overwrite one object with ``text``, SSE-KMS with the tenant key (what the bucket policy requires)."""
    extra: dict[str, Any] = {}
    if lake.kms_key_arn:
        extra = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": lake.kms_key_arn}
    s3.put_object(Bucket=lake.bucket, Key=key, Body=text.encode("utf-8"), **extra)
