"""The lake's objects and all their versions, as S3 keeps them: listing, reading, deleting, and the scan
that looks for a data subject in any of them.

Spark and the Iceberg procedures see only current objects; a versioned bucket keeps every overwritten
or deleted object as a noncurrent version. Erasure therefore works on versions through the S3 API
(boto3, the same credentials as the jobs' s3a), and its verification reads every version of every
object: Parquet with a Parquet reader (pyarrow: values are dictionary-encoded and compressed, so a byte
search would miss them), Avro (Iceberg manifests and manifest lists, whose column bounds can hold an
id) with ``spark_jobs.io.iceberg_files.read_avro``, gzip decompressed, everything else (JSON, CSV,
HTML, Iceberg metadata) as text. A match is case-insensitive and substring-based: a raw record or a
report that mentions the id counts.
"""
from __future__ import annotations

import dataclasses
import gzip
import io
import json
from typing import Any, Callable, Iterable, Iterator

from spark_jobs.lake import LakeConfig

PARQUET_MAGIC, AVRO_MAGIC, GZIP_MAGIC = b"PAR1", b"Obj\x01", b"\x1f\x8b"


@dataclasses.dataclass(frozen=True)
class Version:
    """One object version (``is_latest``: the current one); delete markers are not listed."""

    key: str
    version_id: str
    is_latest: bool
    size: int


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
            yield Version(item["Key"], item.get("VersionId") or "null", bool(item.get("IsLatest")), int(item.get("Size", 0)))


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


# --------------------------------------------------------------------------------------------- scan
def _strings(value: Any) -> Iterator[str]:
    """Every text inside a decoded Avro/JSON value (bytes decoded as UTF-8: Iceberg bounds are bytes)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, (bytes, bytearray)):
        yield bytes(value).decode("utf-8", errors="replace")
    elif isinstance(value, dict):
        for item in value.items():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _parquet_texts(data: bytes) -> Iterator[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(data))
    for column in table.columns:
        kind = column.type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind) or \
                pa.types.is_nested(kind) or pa.types.is_dictionary(kind):
            for value in column.to_pylist():
                yield from _strings(value)


def texts_of(data: bytes) -> Iterator[str]:
    """The texts an object holds, by its format (see the module docstring)."""
    if data.startswith(GZIP_MAGIC):
        yield from texts_of(gzip.decompress(data))
    elif data.startswith(PARQUET_MAGIC) and data.endswith(PARQUET_MAGIC):
        yield from _parquet_texts(data)
    elif data.startswith(AVRO_MAGIC):
        from spark_jobs.io.iceberg_files import read_avro

        for record in read_avro(data):
            yield from _strings(record)
    else:
        yield data.decode("utf-8", errors="replace")


def needle_forms(needles: Iterable[str]) -> list[str]:
    """The lower-cased forms to look for: each value, and its JSON-escaped form when that differs."""
    forms = set()
    for needle in needles:
        forms.add(needle.lower())
        forms.add(json.dumps(needle)[1:-1].lower())
    return sorted(f for f in forms if f)


def contains_any(data: bytes, forms: list[str]) -> bool:
    """Whether any text of the object contains any of ``forms`` (from ``needle_forms``)."""
    for text in texts_of(data):
        lowered = text.lower()
        if any(form in lowered for form in forms):
            return True
    return False


@dataclasses.dataclass
class ScanResult:
    """What a scan read and where it found a subject."""

    objects: int = 0
    versions: int = 0
    bytes: int = 0
    hits: list[Version] = dataclasses.field(default_factory=list)
    unreadable: list[str] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"objects_scanned": self.objects, "versions_scanned": self.versions, "bytes_scanned": self.bytes,
                "versions_with_subject": len(self.hits), "unreadable": self.unreadable[:20],
                "keys_with_subject": sorted({v.key for v in self.hits})[:50]}


def scan(s3, bucket: str, prefixes: Iterable[str], forms: list[str],
         progress: Callable[[str], None] | None = None) -> ScanResult:
    """Read every version under ``prefixes`` and report those that contain any of ``forms``. An object
    that cannot be parsed by its format is read as text instead, and listed as unreadable."""
    result, keys = ScanResult(), set()
    for prefix in prefixes:
        for version in versions(s3, bucket, prefix):
            keys.add(version.key)
            result.versions += 1
            result.bytes += version.size
            data = read_version(s3, bucket, version)
            try:
                hit = contains_any(data, forms)
            except Exception:  # noqa: BLE001 - a broken file is scanned as bytes, and named
                result.unreadable.append(f"{version.key}@{version.version_id}")
                hit = any(form.encode("utf-8") in data.lower() for form in forms)
            if hit:
                result.hits.append(version)
            if progress and result.versions % 500 == 0:
                progress(f"scanned {result.versions} versions ({result.bytes / 1e6:.1f} MB)")
    result.objects = len(keys)
    return result
