"""Paths and the environment switch (``TENANTLAKE_ENV`` = ``local`` | ``aws``), the process environment
terraform runs with, and the state bucket.

``local`` targets the embedded emulator recorded in ``$TENANTLAKE_STATE_DIR/emulator.json`` (started or
reused here); ``aws`` targets real AWS with the caller's credential chain.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Mapping

from infra.terragrunt.errors import TerragruntError

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TENANTS_DIR = REPO_ROOT / "tenants"
ENVIRONMENTS = ("local", "aws")
LOCAL_ACCOUNT_ID = "123456789012"  # moto's fixed account id
DEFAULT_STATE_REGION = "eu-west-1"


def state_dir() -> Path:
    """``$TENANTLAKE_STATE_DIR`` (default ``<repo>/.local``): emulator state and tenant working dirs."""
    return Path(os.environ.get("TENANTLAKE_STATE_DIR") or REPO_ROOT / ".local").resolve()


def work_dir(tenant_id: str) -> Path:
    return state_dir() / "tenants" / tenant_id


def env_name() -> str:
    env = os.environ.get("TENANTLAKE_ENV", "local")
    if env not in ENVIRONMENTS:
        raise TerragruntError(f"TENANTLAKE_ENV={env!r} is not one of {', '.join(ENVIRONMENTS)}")
    return env


def _cli_config() -> str:
    """The user's TF_CLI_CONFIG_FILE when it is a file, else the repo's mirror or registry config
    (``infra.local.terraform_config``, the Makefile's choice)."""
    from infra.local import terraform_config

    return terraform_config.cli_config()


def static_env() -> dict[str, str]:
    """The variables root.hcl reads that do not need the emulator (enough to parse and validate)."""
    env = {
        "TF_CLI_CONFIG_FILE": _cli_config(),
        "TF_IN_AUTOMATION": "1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "TENANTLAKE_ENV": env_name(),
        "TENANTLAKE_STATE_REGION": os.environ.get("TENANTLAKE_STATE_REGION") or DEFAULT_STATE_REGION,
    }
    if env_name() == "local":
        env["TENANTLAKE_STATE_ACCOUNT_ID"] = LOCAL_ACCOUNT_ID
    elif not os.environ.get("TENANTLAKE_STATE_ACCOUNT_ID"):
        raise TerragruntError("TENANTLAKE_ENV=aws needs TENANTLAKE_STATE_ACCOUNT_ID (the account of the state bucket)")
    return env


def emulator_state():
    """The emulator recorded in the state dir when its PID is still our moto server, else a new one.

    A running server is reused without the HTTP health probe of ``emulator.start()``: that probe
    (``/moto-api/data.json``) serializes every backend and can take longer than its timeout once the
    emulator holds a few tenants, and ``start()`` then replaces the busy server, state and all.
    """
    from infra.local import emulator as emu

    state = emu.read_state(state_dir())
    if state is not None and emu.is_our_server(state):
        return state
    return emu.start(state_dir())[0]


def run_env() -> dict[str, str]:
    """Process environment for terragrunt/terraform: ``os.environ`` + ``static_env()`` plus, in ``local``,
    the emulator (started or reused) and its dummy credentials."""
    env = static_env()
    if env_name() == "local":
        from infra.local import emulator as emu

        state = emulator_state()
        env.update(emu.env_vars(state))
        env["TENANTLAKE_AWS_ENDPOINT"] = state.endpoint
        env["AWS_REGION"] = env["TENANTLAKE_STATE_REGION"]
    return {**os.environ, **env}


def boto_client(service: str, region: str, env: Mapping[str, str]):
    """A boto3 client for ``service``: the emulator's when ``env`` names one, else the default chain's."""
    import boto3

    kwargs: dict[str, Any] = {"region_name": region}
    if env.get("TENANTLAKE_AWS_ENDPOINT"):
        kwargs.update(endpoint_url=env["TENANTLAKE_AWS_ENDPOINT"], verify=env.get("AWS_CA_BUNDLE") or None,
                      aws_access_key_id=env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"])
    return boto3.client(service, **kwargs)


_BUCKET_LOCK = threading.Lock()


def ensure_state_bucket(backend_config: Mapping[str, Any], env: Mapping[str, str]) -> None:
    """Create the state bucket when missing: versioned, encrypted, private (terragrunt would do the same)."""
    bucket, region = backend_config["bucket"], backend_config.get("region", DEFAULT_STATE_REGION)
    s3 = boto_client("s3", region, env)
    with _BUCKET_LOCK:
        try:
            s3.head_bucket(Bucket=bucket)
            return
        except s3.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket", "NotFound"):
                raise TerragruntError(f"state bucket {bucket}: {exc}") from None
        create: dict[str, Any] = {"Bucket": bucket}
        if region != "us-east-1":
            create["CreateBucketConfiguration"] = {"LocationConstraint": region}
        s3.create_bucket(**create)
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
        s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration={
            "BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True, "RestrictPublicBuckets": True})


def rel(path: Path) -> str:
    """``path`` relative to the repository when it is inside it (for one-line messages), else as given."""
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)
