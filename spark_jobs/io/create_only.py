"""Create-only writes: an object or a file appears whole, and only where its name is free.

On S3 a single PUT with ``If-None-Match: *`` (S3 answers 412 when the name exists, 409 while another
conditional write of it is under way); in a folder a complete hidden temporary file hard-linked to the name
(``link`` fails when the name exists, and a reader never sees half a file). Used for the pipeline's leases and
the erasure lock (``spark_jobs/runs/leases.py``), the erasure key (``spark_jobs/erasure/subjects.py``) and the
generator's landing files (``spark_jobs/datagen/sink.py``).
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from spark_jobs.lake.config import LakeConfig

# What S3 answers a conditional write whose condition does not hold (or one that raced another).
PRECONDITION_CODES = ("PreconditionFailed", "412", "ConditionalRequestConflict", "409")


def error_code(exc: Exception) -> str:
    """The S3 error code of a botocore ``ClientError`` ("" for anything else)."""
    return str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))


def sse_kms(lake: LakeConfig) -> dict[str, str]:
    """The encryption headers every lake PUT carries (the bucket policy denies the others)."""
    return {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": lake.kms_key_arn} if lake.kms_key_arn else {}


def put_if_absent(client: Any, lake: LakeConfig, key: str, body: bytes, **extra: Any) -> str | None:
    """PUT ``body`` at ``key`` of the lake's bucket unless the name exists: its ETag, or None."""
    from botocore.exceptions import ClientError

    try:
        return client.put_object(Bucket=lake.bucket, Key=key, Body=body, IfNoneMatch="*", **sse_kms(lake),
                                 **extra)["ETag"]
    except ClientError as exc:
        if error_code(exc) in PRECONDITION_CODES:
            return None
        raise


def temporary_beside(path: Path, body: bytes) -> Path:
    """``body`` written whole to a hidden temporary file in ``path``'s folder (created if need be)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex[:8]}.tmp"
    tmp.write_bytes(body)
    return tmp


def link_if_absent(path: Path, body: bytes) -> bool:
    """Create the file ``path`` holding ``body`` unless the name exists: True when created."""
    tmp = temporary_beside(path, body)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    return True


def create_text(lake: LakeConfig, key: str, text: str) -> bool:
    """Create the lake object ``key`` (relative to the lake's root) holding ``text`` unless it exists: True
    when this call created it. S3: a conditional PUT (SSE-KMS with the tenant key); a folder: a hard link."""
    if lake.is_object_store:
        from spark_jobs.io.s3 import lake_client

        return put_if_absent(lake_client(lake), lake, key, text.encode("utf-8")) is not None
    return link_if_absent(Path(lake.folder) / key, text.encode("utf-8"))
