"""The erasure end-to-end tests' own reading of the lake, shared by their modules (test_job*.py).

Every object version is read by the test itself, not by the erasure job: DuckDB for Parquet, the Avro
reader for Iceberg manifests, gzip, else text. Tables are read with the CLI's ``query`` (a JVM per run,
so a caller asks for what it needs in one query).
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import duckdb

from spark_jobs.io.iceberg_files import read_avro
from tests.spark_jobs.erasure.conftest import CLICKSTREAM, cli

SUBJECT = "user-0016"  # in seed 42's data: silver rows, a malformed (quarantined) record, several files
DATASET = CLICKSTREAM
GOLD = ("clickstream_site_hourly", "clickstream_user_sessions")


def versions(s3, bucket):
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        yield from page.get("Versions", [])


def texts(data: bytes, tmp: Path):
    """The test's own reading of an object: DuckDB for Parquet, Avro records, gzip, else text."""
    if data[:2] == b"\x1f\x8b":
        yield from texts(gzip.decompress(data), tmp)
    elif data[:4] == b"PAR1":
        path = tmp / "scan.parquet"
        path.write_bytes(data)
        for row in duckdb.sql(f"SELECT COLUMNS(*)::VARCHAR FROM read_parquet('{path}')").fetchall():
            yield json.dumps(row, default=str)
    elif data[:4] == b"Obj\x01":
        yield json.dumps(read_avro(data), default=lambda b: b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b))
    else:
        yield data.decode("utf-8", "replace")


# What each object version holds, by the reading above: a version's bytes never change (an overwrite or a
# rewrite makes a new version; a removed one leaves the listing), so a version read once is not read again.
_READ: dict[tuple[str, str, str], list[str]] = {}


def version_texts(s3, bucket: str, version: dict, tmp: Path) -> list[str]:
    key = (bucket, version["Key"], version["VersionId"])
    if key not in _READ:
        data = s3.get_object(Bucket=bucket, Key=version["Key"], VersionId=version["VersionId"])["Body"].read()
        _READ[key] = list(texts(data, tmp))
    return _READ[key]


def holding(s3, bucket, needle: str, tmp: Path) -> list[str]:
    """Every object version in the bucket (current or not) whose text holds ``needle`` (lower case)."""
    found = []
    for version in versions(s3, bucket):
        if any(needle in text.lower() for text in version_texts(s3, bucket, version, tmp)):
            found.append(f"{version['Key']}@{'current' if version['IsLatest'] else 'noncurrent'}")
    return found


def query_rows(env, sql: str, *lake: str) -> list[str]:
    result = cli(env, "query", *lake, "--json", "--max-rows", "100000", sql)
    return sorted(json.dumps(row, sort_keys=True, default=str) for row in json.loads(result.stdout))


def gold_and_users(env, *lake: str) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """Both gold tables' rows and silver's rows per user, in ONE query (a JVM per `query` run)."""
    sql = " UNION ALL ".join([*(f"SELECT '{table}' AS t, to_json(struct(*)) AS r FROM gold.{table}" for table in GOLD),
                              f"SELECT 'silver' AS t, to_json(struct(user_id AS u, count(*) AS n)) AS r "
                              f"FROM silver.{DATASET} GROUP BY user_id"])
    rows = [json.loads(row) for row in query_rows(env, sql, *lake)]
    gold = sorted((row["t"], row["r"]) for row in rows if row["t"] != "silver")
    users = {json.loads(row["r"])["u"]: json.loads(row["r"])["n"] for row in rows if row["t"] == "silver"}
    return gold, users


def per_user(env, *lake: str) -> dict[str, int]:
    """Silver clickstream's rows per user."""
    return per_user_of(env, DATASET, *lake)


def per_user_of(env, dataset: str, *lake: str) -> dict[str, int]:
    rows = query_rows(env, f"SELECT user_id AS u, count(*) AS n FROM silver.{dataset} GROUP BY user_id", *lake)
    return {json.loads(r)["u"]: json.loads(r)["n"] for r in rows}


def boto3_client(tenant, service: str):
    import boto3

    aws = tenant["env"]
    return boto3.client(service, region_name=tenant["lake"]["region"], endpoint_url=aws["AWS_ENDPOINT_URL"],
                        verify=aws["AWS_CA_BUNDLE"], aws_access_key_id=aws["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=aws["AWS_SECRET_ACCESS_KEY"])
