"""The lake's AWS clients and its listing of object versions: the one home of both.

``aws_client`` builds every boto3 client spark_jobs opens, and nothing else in spark_jobs calls boto3's
``client``. ``lake_client`` is it for a lake (S3 above all; the same settings for the lake's other services):
the lake's region, and against the emulator (``LakeConfig.s3_endpoint``) its endpoint and CA bundle
(``LakeConfig.ca_bundle``, which defaults to ``$AWS_CA_BUNDLE``); on AWS the default credential chain. Callers that
hold a tenant's outputs rather than a lake (the producers, ``creds``) or that must not use the lake's endpoint
(``land``'s caller identity on AWS) give the region, endpoint and CA bundle themselves. What else differs
between the callers is a parameter:

- ``timeout_s`` / ``retries``: a caller that must not wait on a dead endpoint (the session sizing's listing:
  5 s, one retry) instead of botocore's 60 s and its retry mode's retries;
- ``emulator_credentials``: against the emulator, with no ``AWS_ACCESS_KEY_ID`` set, the emulator's dummy keys
  (the usage report and the report mirror, which run where ``make`` runs); everywhere else the default chain;
- ``fresh_session``: a client of a new boto3 session, so credentials that the environment holds *now* are used
  (``land`` with vended ingest credentials), not the ones the default session resolved first.

``list_versions`` lists every version under a prefix (``ListObjectVersions``, 1,000 per request, read as they
are consumed), delete markers too when asked, as ``ObjectVersion``: the erasure's sweep and purge, the landing
check (``spark_jobs/jobs/landing_versions.py``), the usage report and the session sizing all read it.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import os
from typing import Any, Iterator

from spark_jobs.lake.config import LakeConfig

# The emulator takes any keys; these are moto's documented test keys.
EMULATOR_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}  # pragma: allowlist secret


def lake_client(lake: LakeConfig, service: str = "s3", *, timeout_s: float | None = None, retries: int | None = None,
                emulator_credentials: bool = False, fresh_session: bool = False) -> Any:
    """A boto3 client of ``service`` for ``lake`` (module docstring): ``aws_client`` with the lake's region,
    endpoint and CA bundle; the other parameters as there."""
    return aws_client(service, region=lake.region, endpoint=lake.s3_endpoint, ca_bundle=lake.ca_bundle,
                      timeout_s=timeout_s, retries=retries, emulator_credentials=emulator_credentials,
                      fresh_session=fresh_session)


def aws_client(service: str, *, region: str = "", endpoint: str = "", ca_bundle: str = "",
               timeout_s: float | None = None, retries: int | None = None, emulator_credentials: bool = False,
               fresh_session: bool = False) -> Any:
    """A boto3 client of ``service`` (module docstring). ``region`` (@default - "": boto3's own, from the
    environment), ``endpoint`` (@default - "": AWS's) and ``ca_bundle`` (@default - "": boto3's, which reads
    ``$AWS_CA_BUNDLE``); ``timeout_s``: connect and read timeout (@default - botocore's, 60 s); ``retries``: retries
    after a request's first attempt (botocore's ``max_attempts``; @default - botocore's retry mode);
    ``emulator_credentials`` (@default - False) and ``fresh_session`` (@default - False): see above."""
    import boto3  # only for the commands that talk to AWS: never for --help

    kwargs: dict[str, Any] = {"region_name": region or None, "endpoint_url": endpoint or None,
                              "verify": ca_bundle or None}
    if emulator_credentials and endpoint and not os.environ.get("AWS_ACCESS_KEY_ID"):
        kwargs.update(EMULATOR_CREDENTIALS)
    config: dict[str, Any] = {}
    if timeout_s is not None:
        config.update(connect_timeout=timeout_s, read_timeout=timeout_s)
    if retries is not None:
        config["retries"] = {"max_attempts": retries}
    if config:
        from botocore.config import Config

        kwargs["config"] = Config(**config)
    return (boto3.session.Session() if fresh_session else boto3).client(service, **kwargs)


@dataclasses.dataclass(frozen=True)
class ObjectVersion:
    """One object version as S3 lists it (or an inventory report gives it): ``is_latest`` the current one,
    ``last_modified`` in UTC, ``etag`` without quotes ("" when unknown). A delete marker
    (``is_delete_marker``) holds no bytes."""

    key: str
    version_id: str = "null"
    is_latest: bool = True
    size: int = 0
    last_modified: dt.datetime | None = None
    etag: str = ""
    storage_class: str = "STANDARD"
    is_delete_marker: bool = False


def list_versions(s3, bucket: str, prefix: str = "", delete_markers: bool = False) -> Iterator[ObjectVersion]:
    """Every version (current and noncurrent) under ``prefix`` (``""``: the whole bucket), page by page as they
    are consumed; with ``delete_markers`` the delete markers too."""
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Versions", []):
            yield ObjectVersion(item["Key"], item.get("VersionId") or "null", bool(item.get("IsLatest")),
                                int(item.get("Size") or 0), utc(item.get("LastModified")),
                                str(item.get("ETag", "")).strip('"'), str(item.get("StorageClass") or "STANDARD"))
        if delete_markers:
            for item in page.get("DeleteMarkers", []):
                yield ObjectVersion(item["Key"], item.get("VersionId") or "null", bool(item.get("IsLatest")),
                                    last_modified=utc(item.get("LastModified")), is_delete_marker=True)


def utc(moment: dt.datetime | None) -> dt.datetime | None:
    """``moment`` with a time zone (UTC when it has none; botocore's already have one)."""
    return moment if moment is None or moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)
