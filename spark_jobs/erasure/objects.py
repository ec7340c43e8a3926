"""The lake's objects and all their versions, as S3 keeps them: listing, reading, writing, deleting.

Spark and the Iceberg procedures see only current objects; a versioned bucket keeps every overwritten
or deleted object as a noncurrent version. Erasure therefore works on versions through the S3 API
(boto3, the same credentials as the jobs' s3a). Reading a version for subjects is ``scan.py``'s, on the
executors (``sweep.py``).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Iterator

from spark_jobs.lake import LakeConfig

@dataclasses.dataclass(frozen=True)
class Version:
    """One object version (``is_latest``: the current one); delete markers are not listed. ``last_modified``
    (UTC) and ``etag`` as S3 lists them (the landing check, ``spark_jobs/landing_versions.py``)."""

    key: str
    version_id: str
    is_latest: bool
    size: int
    last_modified: Any = None
    etag: str = ""


def s3_client(lake: LakeConfig):
    """boto3 S3 client for the lake: the emulator's endpoint and CA locally, the default chain on AWS."""
    import boto3

    kwargs: dict[str, Any] = {"region_name": lake.region}
    if lake.s3_endpoint:
        kwargs["endpoint_url"] = lake.s3_endpoint
        kwargs["verify"] = lake.ca_bundle or None
    return boto3.client("s3", **kwargs)


def versions(s3, bucket: str, prefix: str = "") -> Iterator[Version]:
    """Every version (current and noncurrent) under ``prefix``; delete markers skipped."""
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Versions", []):
            yield Version(item["Key"], item.get("VersionId") or "null", bool(item.get("IsLatest")), int(item.get("Size", 0)),
                          item.get("LastModified"), str(item.get("ETag", "")).strip('"'))


def delete_markers(s3, bucket: str, prefix: str = "") -> Iterator[tuple[str, str]]:
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("DeleteMarkers", []):
            yield item["Key"], item.get("VersionId") or "null"


def read_version(s3, bucket: str, version: Version) -> bytes:
    return s3.get_object(Bucket=bucket, Key=version.key, VersionId=version.version_id)["Body"].read()


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
