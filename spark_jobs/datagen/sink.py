"""Landing writers for the generator: a local folder, or S3 (boto3, SSE-KMS with the tenant key).

Each file appears whole: locally it is written under a hidden temporary name and renamed, on S3 it
is a single PUT. The bronze file source never sees half a file.
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

from spark_jobs.lake import LakeConfig


def write_landing(lake: LakeConfig, dataset: str, files: list[tuple[str, bytes]]) -> str:
    """Write the files under ``landing/<dataset>/``; returns the landing location."""
    if lake.is_object_store:
        import boto3

        client = boto3.client(
            "s3", region_name=lake.region, endpoint_url=lake.s3_endpoint or None,
            verify=lake.ca_bundle or None,
        )
        extra = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": lake.kms_key_arn} if lake.kms_key_arn else {}
        for name, body in files:
            client.put_object(Bucket=lake.bucket, Key=f"landing/{dataset}/{name}", Body=body, **extra)
        return lake.landing(dataset)
    parsed = urlparse(lake.lake_uri)
    root = Path(parsed.path if parsed.scheme == "file" else lake.lake_uri)
    folder = root / "landing" / dataset
    folder.mkdir(parents=True, exist_ok=True)
    for name, body in files:
        tmp = folder / f".{name}.tmp"
        tmp.write_bytes(body)
        os.replace(tmp, folder / name)
    return str(folder)
