"""How many bytes a command will read, counted before its JVM starts (the CLI sizes the session with it:
``spark_jobs.session.build_session(small_inputs=...)``).

A listing of the lake's folders the command reads (``landing/<ds>/``, ``bronze/<ds>/``, ``silver/<ds>/``):
on an object store through boto3 (one request per 1,000 objects, stopped as soon as the total passes the
limit), on a plain folder through the file system. Anything that cannot be listed (no credentials, an
endpoint that does not answer in a few seconds) gives None, and the caller sizes for large inputs.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable
from urllib.parse import urlparse

from spark_jobs.lake import LakeConfig

LIST_TIMEOUT_S = 5


def stored_bytes(lake: LakeConfig, folders: Iterable[str], limit: int) -> int | None:
    """Bytes of the objects under ``folders`` (paths relative to the lake root, e.g. ``bronze/iot``), counted
    until they pass ``limit`` (the count then stops, somewhere above it); None when they cannot be listed."""
    try:
        if lake.is_object_store:
            return _object_bytes(lake, folders, limit)
        return _folder_bytes(lake, folders, limit)
    except Exception:  # noqa: BLE001 - a sizing hint only: unknown means "not known to be small"
        return None


def _object_bytes(lake: LakeConfig, folders: Iterable[str], limit: int) -> int:
    import boto3
    from botocore.config import Config

    client = boto3.client("s3", region_name=lake.region, endpoint_url=lake.s3_endpoint or None,
                          verify=lake.ca_bundle or None,
                          config=Config(connect_timeout=LIST_TIMEOUT_S, read_timeout=LIST_TIMEOUT_S,
                                        retries={"max_attempts": 1}))
    root = urlparse(lake.lake_uri).path.strip("/")
    total = 0
    for folder in folders:
        prefix = "/".join(p for p in (root, folder.strip("/")) if p) + "/"
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=lake.bucket, Prefix=prefix):
            total += sum(int(obj.get("Size") or 0) for obj in page.get("Contents", []))
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
