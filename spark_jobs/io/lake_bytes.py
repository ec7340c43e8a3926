"""How many bytes a command will read, counted before its JVM starts (the CLI sizes the session with it:
``spark_jobs.session.build_session(small_inputs=...)``).

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
from typing import Iterable
from urllib.parse import urlparse

from spark_jobs.lake import LakeConfig

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
    import boto3
    from botocore.config import Config

    client = boto3.client("s3", region_name=lake.region, endpoint_url=lake.s3_endpoint or None,
                          verify=lake.ca_bundle or None,
                          config=Config(connect_timeout=LIST_TIMEOUT_S, read_timeout=LIST_TIMEOUT_S,
                                        retries={"max_attempts": 1}))
    root = urlparse(lake.lake_uri).path.strip("/")
    listing, entries = ("list_object_versions", "Versions") if versions else ("list_objects_v2", "Contents")
    total = 0
    for folder in folders:
        prefix = "/".join(p for p in (root, folder.strip("/")) if p)
        prefix = f"{prefix}/" if prefix else ""  # "" with no root: the whole bucket
        for page in client.get_paginator(listing).paginate(Bucket=lake.bucket, Prefix=prefix):
            total += sum(int(obj.get("Size") or 0) for obj in page.get(entries, []))
            if total > limit:
                return total
    return total


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
