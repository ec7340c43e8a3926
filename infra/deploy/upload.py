"""Upload the artifact to ``s3://<lake>/artifacts/spark_jobs/<version>/`` and the job dependencies to
``s3://<lake>/artifacts/job_deps/<version>/``, with SSE-KMS and the tenant key.

Each object carries its SHA-256 in its metadata (``x-amz-meta-sha256``). An object already there with
the same checksum, encrypted with the tenant key, is left alone: re-deploying unchanged code or
unchanged dependencies uploads nothing.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError

from infra.deploy.artifact import Artifact
from infra.deploy.job_deps import JobDeps
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


def _put_unless_there(s3, target: DeployTarget, key: str, path: Path, sha256: str, content_type: str,
                      version: str) -> bool:
    """Upload ``path`` to ``key`` unless the same bytes are there with the tenant key; True if uploaded.
    Raises ``DeployError`` (one line) when S3 or KMS refuses."""
    bucket = target.bucket
    try:
        if _already_there(s3, bucket, key, sha256, target.kms_key_arn):
            return False
        with open(path, "rb") as body:
            s3.put_object(
                Bucket=bucket,
                Key=key,
                Body=body,
                ContentType=content_type,
                ServerSideEncryption="aws:kms",
                SSEKMSKeyId=target.kms_key_arn,
                Metadata={CHECKSUM_METADATA_KEY: sha256, VERSION_METADATA_KEY: version},
            )
        return True
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


def upload_artifact(s3, artifact: Artifact, target: DeployTarget) -> UploadResult:
    """Upload what is missing or different; raise ``DeployError`` (one line) when S3 or KMS refuses."""
    uploaded: list[str] = []
    skipped: list[str] = []
    objects = [
        (artifact.zip_key, artifact.zip_path, artifact.sha256, "application/zip"),
        (artifact.entrypoint_key, artifact.entrypoint_path, artifact.entrypoint_sha256, "text/x-python"),
    ]
    for key, path, sha256, content_type in objects:
        if _put_unless_there(s3, target, key, Path(path), sha256, content_type, artifact.version):
            uploaded.append(key)
        else:
            skipped.append(key)
    return UploadResult(location=location_of(artifact, target.bucket), uploaded=tuple(uploaded), skipped=tuple(skipped))


def upload_job_deps(s3, deps: JobDeps, target: DeployTarget) -> bool:
    """Upload the dependency archive unless it is there already; True if it was uploaded."""
    return _put_unless_there(s3, target, deps.key, deps.path, deps.sha256, "application/gzip", deps.version)


def upload_subjects(s3, target: DeployTarget, key: str, text: str) -> None:
    """Put an erasure run's subject file (SSE-KMS, tenant key); the run deletes every version of it once
    the subjects are erased. Raises ``DeployError`` (one line, without the file's content)."""
    try:
        s3.put_object(Bucket=target.bucket, Key=key, Body=text.encode("utf-8"), ContentType="text/plain",
                      ServerSideEncryption="aws:kms", SSEKMSKeyId=target.kms_key_arn)
    except (ClientError, BotoCoreError) as exc:
        code = exc.response.get("Error", {}).get("Code", "?") if isinstance(exc, ClientError) else "error"
        raise DeployError(f"tenant '{target.tenant_id}': subject file upload to s3://{target.bucket}/{key} failed "
                          f"({code}); nothing was submitted") from exc



def publish_stable(s3, artifact: Artifact, deps: JobDeps, target: DeployTarget, python: str, kind: str) -> UploadResult:
    """Publish the code, the entrypoint and the dependency archive as a stable artifact (``request.STABLE_PREFIXES``:
    ``MAINTAIN``, what maintenance runs and the tenant's maintenance schedule run; ``PIPELINE``, what the tenant's
    state machine runs), plus its ``manifest.json`` (which code and archive it holds). Each object is skipped when
    the same bytes are there with the tenant key, so publishing unchanged code uploads nothing."""
    import hashlib
    import json

    from infra.deploy.request import stable_key, stable_location

    manifest = json.dumps({"code_version": artifact.version, "zip_sha256": artifact.sha256,
                           "entrypoint_sha256": artifact.entrypoint_sha256, "job_deps_version": deps.version,
                           "job_deps_sha256": deps.sha256, "python": python}, indent=1, sort_keys=True) + "\n"
    manifest_path = Path(artifact.zip_path).parent / f"{kind}-manifest.json"
    manifest_path.write_text(manifest)
    manifest_sha = hashlib.sha256(manifest.encode()).hexdigest()
    objects = [("zip", artifact.zip_path, artifact.sha256, "application/zip"),
               ("entrypoint", artifact.entrypoint_path, artifact.entrypoint_sha256, "text/x-python"),
               ("job_deps", deps.path, deps.sha256, "application/gzip"),
               ("manifest", manifest_path, manifest_sha, "application/json")]
    uploaded: list[str] = []
    skipped: list[str] = []
    for part, path, sha256, content_type in objects:
        key = stable_key(kind, part)
        (uploaded if _put_unless_there(s3, target, key, Path(path), sha256, content_type, artifact.version)
         else skipped).append(key)
    return UploadResult(location=stable_location(kind, target.bucket, artifact.version), uploaded=tuple(uploaded),
                        skipped=tuple(skipped))


def publish_maintenance(s3, artifact: Artifact, deps: JobDeps, target: DeployTarget, python: str) -> UploadResult:
    """The stable maintenance artifact (``publish_stable`` of ``MAINTAIN``)."""
    from infra.deploy.request import MAINTAIN

    return publish_stable(s3, artifact, deps, target, python, MAINTAIN)
