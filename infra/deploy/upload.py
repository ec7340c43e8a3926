"""Upload the artifact to ``s3://<lake>/artifacts/spark_jobs/<version>/`` with SSE-KMS and the tenant key.

Each object carries its SHA-256 in its metadata (``x-amz-meta-sha256``). An object already there with
the same checksum, encrypted with the tenant key, is left alone: re-deploying unchanged code uploads
nothing.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError

from infra.deploy.artifact import Artifact
from infra.deploy.request import ArtifactLocation
from infra.deploy.target import DeployError, DeployTarget

CHECKSUM_METADATA_KEY = "sha256"
VERSION_METADATA_KEY = "code-version"


@dataclasses.dataclass(frozen=True)
class UploadResult:
    location: ArtifactLocation
    uploaded: tuple[str, ...]  # keys written this time
    skipped: tuple[str, ...]   # keys already there with the same checksum


def location_of(artifact: Artifact, bucket: str) -> ArtifactLocation:
    return ArtifactLocation(
        version=artifact.version,
        zip_uri=f"s3://{bucket}/{artifact.zip_key}",
        entrypoint_uri=f"s3://{bucket}/{artifact.entrypoint_key}",
    )


def _already_there(s3, bucket: str, key: str, sha256: str, kms_key_arn: str) -> bool:
    try:
        head = s3.head_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return False
        raise
    return (
        head.get("Metadata", {}).get(CHECKSUM_METADATA_KEY) == sha256
        and head.get("ServerSideEncryption") == "aws:kms"
        and head.get("SSEKMSKeyId") == kms_key_arn
    )


def upload_artifact(s3, artifact: Artifact, target: DeployTarget) -> UploadResult:
    """Upload what is missing or different; raise ``DeployError`` (one line) when S3 or KMS refuses."""
    bucket = target.bucket
    uploaded: list[str] = []
    skipped: list[str] = []
    objects = [
        (artifact.zip_key, artifact.zip_path, artifact.sha256, "application/zip"),
        (artifact.entrypoint_key, artifact.entrypoint_path, artifact.entrypoint_sha256, "text/x-python"),
    ]
    for key, path, sha256, content_type in objects:
        try:
            if _already_there(s3, bucket, key, sha256, target.kms_key_arn):
                skipped.append(key)
                continue
            s3.put_object(
                Bucket=bucket,
                Key=key,
                Body=Path(path).read_bytes(),
                ContentType=content_type,
                ServerSideEncryption="aws:kms",
                SSEKMSKeyId=target.kms_key_arn,
                Metadata={CHECKSUM_METADATA_KEY: sha256, VERSION_METADATA_KEY: artifact.version},
            )
            uploaded.append(key)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            raise DeployError(
                f"tenant '{target.tenant_id}': artifact upload to s3://{bucket}/{key} failed: "
                f"{error.get('Code', '?')}: {error.get('Message', exc)}; nothing was submitted"
            ) from exc
        except BotoCoreError as exc:
            raise DeployError(
                f"tenant '{target.tenant_id}': artifact upload to s3://{bucket}/{key} failed: {exc}; nothing was submitted"
            ) from exc
    return UploadResult(location=location_of(artifact, bucket), uploaded=tuple(uploaded), skipped=tuple(skipped))
