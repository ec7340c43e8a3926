"""How many bytes a command will read, counted before its JVM starts (the CLI sizes the session with it:
``spark_jobs.runs.session.build_session(small_inputs=...)``).

A listing of the lake's folders the command reads (``landing/<ds>/``, ``bronze/<ds>/``, ``silver/<ds>/``;
``""`` is the whole lake): on an object store through boto3 (one request per 1,000 objects, or object
versions when the command reads every version, as ``erase`` does; stopped as soon as the total passes the
limit), on a plain folder through the file system (which keeps no versions). Anything that cannot be
listed (no credentials, an endpoint that does not answer in a few seconds) gives None, and the caller
sizes for large inputs.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Iterator
from urllib.parse import urlparse

from spark_jobs.io.s3 import lake_client, list_versions
from spark_jobs.lake.config import LakeConfig

LIST_TIMEOUT_S = 5


def stored_bytes(lake: LakeConfig, folders: Iterable[str], limit: int, versions: bool = False) -> int | None:
    """Bytes of the objects under ``folders`` (paths relative to the lake root, e.g. ``bronze/iot``; ``""``
    for the whole lake), counted until they pass ``limit`` (the count then stops, somewhere above it); with
    ``versions``, every stored version of them (an object store's noncurrent versions too). None when they
    cannot be listed."""
    try:
        if lake.is_object_store:
            return _object_bytes(lake, folders, limit, versions)
        return _folder_bytes(lake, folders, limit)
    except Exception:  # noqa: BLE001 - a sizing hint only: unknown means "not known to be small"
        return None


def _object_bytes(lake: LakeConfig, folders: Iterable[str], limit: int, versions: bool) -> int:
    client = lake_client(lake, timeout_s=LIST_TIMEOUT_S, retries=1)
    root = urlparse(lake.lake_uri).path.strip("/")
    total = 0
    for folder in folders:
        prefix = "/".join(p for p in (root, folder.strip("/")) if p)
        prefix = f"{prefix}/" if prefix else ""  # "" with no root: the whole bucket
        for size in _sizes(client, lake.bucket, prefix, versions):
            total += size
            if total > limit:
                return total
    return total


def _sizes(client, bucket: str, prefix: str, versions: bool) -> Iterator[int]:
    """The size of each object under ``prefix``, or of each of its versions, as the listing reads them."""
    if versions:
        yield from (version.size for version in list_versions(client, bucket, prefix))
        return
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        yield from (int(obj.get("Size") or 0) for obj in page.get("Contents", []))


def _folder_bytes(lake: LakeConfig, folders: Iterable[str], limit: int) -> int:
    parsed = urlparse(lake.lake_uri)
    root = Path(parsed.path if parsed.scheme == "file" else lake.lake_uri)
    total = 0
    for folder in folders:
        for directory, _, names in os.walk(root / folder):
            for name in names:
                total += os.path.getsize(os.path.join(directory, name))
                if total > limit:
                    return total
    return total
