"""Vended producer credentials: short-lived, scoped to one prefix of one tenant's lake.

``python -m spark_jobs creds --tenant acme --prefix landing/iot --ttl 900`` assumes the tenant's
ingest-writer role (``ingest_writer_role_arn`` of its lake.json) with an inline SESSION policy that
allows only ``s3:PutObject`` (and multipart clean-up) under ``<bucket>/<prefix>/`` and the tenant key
for SSE-KMS. The effective permissions are the intersection of the role's policy (put under
``landing/``) and the session policy, so the credentials can write that one prefix and nothing else.

It prints them as environment variables (``--format env``), as JSON (``--format json``), and as the
Hadoop s3a keys a Spark or Flink writer needs (``--format s3a``); the default prints env and s3a.
No long-lived key is ever handed out. The caller's own credentials (env / default chain) must be
allowed to ``sts:AssumeRole`` the ingest-writer role (in the module: principals of the tenant account).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import re
import sys
import uuid
from typing import Any
from urllib.parse import urlparse

import tenant_model
from spark_jobs.io.s3 import aws_client
from spark_jobs.lake.config import LakeConfigError, read_lake_outputs

# STS AssumeRole bounds: 900 s minimum; the maximum is the roles' max_session_duration (the tenant model's).
TTL_MIN_SECONDS = 900
TTL_MAX_SECONDS = tenant_model.ROLE_MAX_SESSION_SECONDS
DEFAULT_TTL_SECONDS = 900
# Prefixes the ingest-writer role may put under; a vended prefix must lie inside one of them.
INGEST_ALLOWED_PREFIXES: tuple[str, ...] = tenant_model.INGEST_WRITER_PUT_PREFIXES
SESSION_S3_ACTIONS: tuple[str, ...] = ("s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts")
SESSION_KMS_ACTIONS: tuple[str, ...] = ("kms:GenerateDataKey", "kms:Encrypt", "kms:Decrypt", "kms:DescribeKey")
S3A_PROVIDER = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
_PREFIX_RE = re.compile(r"^[A-Za-z0-9!_.'()=-]+(/[A-Za-z0-9!_.'()=-]+)*$")


class CredsError(ValueError):
    """Bad request for credentials; the one-line message names the option and the rule."""


@dataclasses.dataclass(frozen=True)
class IngestTarget:
    """What the credentials are for (from the tenant's lake.json)."""

    tenant: str
    bucket: str
    region: str
    kms_key_arn: str
    role_arn: str
    endpoint: str = ""   # the emulator's endpoint (serves S3 and STS); "" on AWS
    ca_bundle: str = ""


def load_target(tenant: str = "", lake_config: str = "") -> IngestTarget:
    if not (tenant or lake_config):
        raise CredsError("say which lake: --tenant T or --lake-config FILE")
    outputs, path = read_lake_outputs(tenant=tenant, lake_config=lake_config)
    missing = [k for k in ("lake_bucket_name", "kms_key_arn", "ingest_writer_role_arn") if not outputs.get(k)]
    if missing:
        raise LakeConfigError(f"lake config {path} has no {missing[0]}; re-run `make apply TENANT=<tenant>`")
    return IngestTarget(tenant=str(outputs.get("tenant_id", tenant)), bucket=outputs["lake_bucket_name"],
                        region=str(outputs.get("region", "eu-west-1")), kms_key_arn=outputs["kms_key_arn"],
                        role_arn=outputs["ingest_writer_role_arn"], endpoint=str(outputs.get("s3_endpoint", "")),
                        ca_bundle=str(outputs.get("ca_bundle", "")))


def normalize_prefix(prefix: str, target: IngestTarget) -> str:
    """``landing/iot``, ``landing/iot/`` or ``s3://<bucket>/landing/iot`` -> ``landing/iot``; else CredsError."""
    text = prefix.strip()
    parsed = urlparse(text)
    if parsed.scheme:
        if parsed.scheme not in ("s3", "s3a") or parsed.netloc != target.bucket:
            raise CredsError(f"--prefix {prefix!r} is outside tenant '{target.tenant}''s lake "
                             f"(s3://{target.bucket}/...)")
        text = parsed.path
    text = text.strip("/")
    if not text or not _PREFIX_RE.match(text) or any(part in (".", "..") for part in text.split("/")):
        raise CredsError(f"--prefix {prefix!r} must be a plain key prefix like landing/iot (no wildcards, no '..')")
    top = text.split("/", 1)[0]
    if top not in INGEST_ALLOWED_PREFIXES:
        raise CredsError(f"--prefix {prefix!r} is outside the ingest-writer role's prefixes "
                         f"({', '.join(p + '/' for p in INGEST_ALLOWED_PREFIXES)})")
    return text


def check_ttl(ttl: int) -> int:
    if not TTL_MIN_SECONDS <= ttl <= TTL_MAX_SECONDS:
        raise CredsError(f"--ttl {ttl} must be between {TTL_MIN_SECONDS} (STS minimum) and {TTL_MAX_SECONDS} "
                         "seconds (the ingest-writer role's max session duration)")
    return ttl


def _partition(role_arn: str) -> str:
    return role_arn.split(":")[1] if role_arn.startswith("arn:") else "aws"


def session_policy(target: IngestTarget, prefix: str) -> dict[str, Any]:
    """The inline session policy: put under ``<bucket>/<prefix>/`` only, and the tenant key for SSE-KMS."""
    partition = _partition(target.role_arn)
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "PutUnderPrefixOnly", "Effect": "Allow", "Action": list(SESSION_S3_ACTIONS),
             "Resource": [f"arn:{partition}:s3:::{target.bucket}/{prefix}/*"]},
            {"Sid": "UseTenantKey", "Effect": "Allow", "Action": list(SESSION_KMS_ACTIONS),
             "Resource": [target.kms_key_arn]},
        ],
    }


@dataclasses.dataclass(frozen=True)
class VendedCredentials:
    access_key_id: str
    secret_access_key: str
    session_token: str
    expiration: str          # ISO 8601, UTC
    assumed_role_arn: str
    target: IngestTarget
    prefix: str
    policy: dict

    def env(self) -> dict[str, str]:
        out = {"AWS_ACCESS_KEY_ID": self.access_key_id, "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
               "AWS_SESSION_TOKEN": self.session_token, "AWS_REGION": self.target.region}
        if self.target.endpoint:
            out["AWS_ENDPOINT_URL"] = self.target.endpoint
        return out

    def s3a(self) -> dict[str, str]:
        endpoint = self.target.endpoint or f"s3.{self.target.region}.amazonaws.com"
        out = {
            "fs.s3a.access.key": self.access_key_id,
            "fs.s3a.secret.key": self.secret_access_key,
            "fs.s3a.session.token": self.session_token,
            "fs.s3a.endpoint": endpoint,
            "fs.s3a.endpoint.region": self.target.region,
            "fs.s3a.aws.credentials.provider": S3A_PROVIDER,
            # Uploads name the tenant key (the bucket policy denies any other key or algorithm).
            "fs.s3a.server-side-encryption-algorithm": "SSE-KMS",
            "fs.s3a.server-side-encryption.key": self.target.kms_key_arn,
        }
        if self.target.endpoint:
            out["fs.s3a.path.style.access"] = "true"
        return out

    def as_json(self) -> dict[str, Any]:
        return {"tenant": self.target.tenant, "bucket": self.target.bucket, "prefix": self.prefix + "/",
                "expiration": self.expiration, "assumed_role_arn": self.assumed_role_arn,
                "env": self.env(), "s3a": self.s3a(), "session_policy": self.policy}


def vend(target: IngestTarget, prefix: str, ttl: int = DEFAULT_TTL_SECONDS, session_name: str = "") -> VendedCredentials:
    """Assume the ingest-writer role with the prefix-scoped session policy."""
    prefix = normalize_prefix(prefix, target)
    ttl = check_ttl(ttl)
    policy = session_policy(target, prefix)
    # A fresh session: the caller's credentials as the environment holds them now (boto3's default
    # session caches the first ones it resolved).
    sts = aws_client("sts", region=target.region, endpoint=target.endpoint, ca_bundle=target.ca_bundle,
                     fresh_session=True)
    name = session_name or f"ingest-{target.tenant}-{uuid.uuid4().hex[:8]}"
    try:
        response = sts.assume_role(RoleArn=target.role_arn, RoleSessionName=name[:64], DurationSeconds=ttl,
                                   Policy=json.dumps(policy, separators=(",", ":")))
    except Exception as exc:  # botocore ClientError / endpoint errors: one line
        raise CredsError(f"sts:AssumeRole of {target.role_arn} failed: {exc}") from None
    creds = response["Credentials"]
    expiration = creds["Expiration"]
    if isinstance(expiration, dt.datetime):
        expiration = expiration.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return VendedCredentials(access_key_id=creds["AccessKeyId"], secret_access_key=creds["SecretAccessKey"],
                             session_token=creds["SessionToken"], expiration=str(expiration),
                             assumed_role_arn=response["AssumedRoleUser"]["Arn"], target=target, prefix=prefix,
                             policy=policy)


def render(creds: VendedCredentials, fmt: str) -> str:
    lines: list[str] = []
    if fmt == "json":
        return json.dumps(creds.as_json(), indent=2)
    if fmt in ("env", "all"):
        lines.append(f"# s3://{creds.target.bucket}/{creds.prefix}/ until {creds.expiration} (environment)")
        lines += [f"export {k}={v}" for k, v in creds.env().items()]
    if fmt in ("s3a", "all"):
        if lines:
            lines.append("")
        lines.append("# Hadoop s3a keys (Spark: prefix each with spark.hadoop.; Flink: flink-conf.yaml)")
        lines += [f"{k}={v}" for k, v in creds.s3a().items()]
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tenant", default="", help="tenant id: reads $TENANTLAKE_STATE_DIR/tenants/<T>/lake.json")
    parser.add_argument("--lake-config", default="", help="a lake.json (terraform outputs + emulator facts)")
    parser.add_argument("--prefix", required=True, help="key prefix the credentials may write, e.g. landing/iot")
    parser.add_argument("--ttl", type=int, default=DEFAULT_TTL_SECONDS,
                        help=f"lifetime in seconds, {TTL_MIN_SECONDS}-{TTL_MAX_SECONDS} (default: {DEFAULT_TTL_SECONDS})")
    parser.add_argument("--format", choices=["all", "env", "json", "s3a"], default="all",
                        help="all = env + s3a (default), or one of env, json, s3a")
    parser.add_argument("--session-name", default="", help="STS role session name (default: ingest-<tenant>-<random>)")


def run(args: argparse.Namespace) -> int:
    try:
        target = load_target(args.tenant, args.lake_config)
        creds = vend(target, args.prefix, args.ttl, args.session_name)
    except (CredsError, LakeConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(render(creds, args.format))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs creds", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
