"""Erasure of a dataset stored by month (``partition_granularity: month``), a copy of clickstream landed
in the shared eraseco lake beside it (conftest.py's ``loaded``).

The copy holds clickstream's user ids, which the lake's other tests must not meet: an erase request reads
the whole bucket, and a hit in a dataset whose contract the request does not know (the other tests run
with the shipped contracts, clickmonth's is this test's own) counts against it. So the test removes every
version of every clickmonth object when it ends, passed or failed (``clickmonth_removed_after``)."""
from __future__ import annotations

import json

import pytest

from tests.spark_jobs.erasure.conftest import TENANT, cli
from tests.spark_jobs.erasure.readers import DATASET, GOLD, holding, per_user, per_user_of, query_rows, texts, versions

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]
MONTH_DATASET = "clickmonth"


@pytest.fixture
def clickmonth_removed_after(loaded):
    """The lake, and afterwards every version (and delete marker) of every object of ``clickmonth`` gone."""
    yield loaded
    s3, bucket = loaded["s3"], loaded["bucket"]
    left = []
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        left += [{"Key": v["Key"], "VersionId": v["VersionId"]} for v in page.get("Versions", []) + page.get("DeleteMarkers", [])
                 if MONTH_DATASET in v["Key"]]
    for start in range(0, len(left), 1000):
        s3.delete_objects(Bucket=bucket, Delete={"Objects": left[start:start + 1000], "Quiet": True})
    remaining = [v["Key"] for v in versions(s3, bucket) if MONTH_DATASET in v["Key"]]
    assert remaining == [], remaining[:10]


def test_erasure_of_a_dataset_stored_by_month(clickmonth_removed_after, tmp_path):
    """A copy of clickstream with ``partition_granularity: month``: the quarantine's month folders are
    rewritten without the subject, gold months are recomputed with their other days kept, and gold then
    equals the pipeline's gold from the same landing files without the subject (a folder lake). The
    subject is also in the tenant's clickstream, which ``--dataset clickmonth`` leaves out: the request
    completes, and its receipt names the versions of clickstream that still hold the subject."""
    import re

    import yaml

    from spark_jobs.contract.model import CONTRACTS_DIR

    tenant, dataset = clickmonth_removed_after, MONTH_DATASET
    contracts = tmp_path / "contracts"
    contracts.mkdir()
    raw = yaml.safe_load((CONTRACTS_DIR / "clickstream.yaml").read_text())
    raw.update(dataset=dataset, partition_granularity="month", expectations={})
    (contracts / f"{dataset}.yaml").write_text(yaml.safe_dump(raw))
    # Validation off: a tenth of the records is bad on purpose, which the default expectations would block.
    env = {**tenant["env"], "TENANTLAKE_CONTRACTS_DIR": str(contracts), "TENANTLAKE_VALIDATION": "off"}
    s3, bucket = tenant["s3"], tenant["bucket"]
    lake = ["--tenant", TENANT]
    # Three files a day apart across a month end, with bad records (some quarantined with a user id in them).
    local = tmp_path / "local"
    cli(env, "datagen", "--lake-uri", str(local), "--dataset", DATASET, "--records", "300", "--batch-size", "100",
        "--interval", "86400", "--start", "2024-01-30T00:00:00Z", "--bad-rate", "0.1")
    cli(env, "land", *lake, "--dataset", dataset, str(local / "landing" / DATASET))
    cli(env, "run-all", *lake, "--dataset", dataset, "--allow-warn", timeout=1200)
    quarantine_keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=f"quarantine/{dataset}/")["Contents"]
                       if o["Key"].endswith(".parquet")]
    assert {k.split("/")[2] for k in quarantine_keys} >= {"event_month=2024-01", "event_month=2024-02"}
    in_quarantine = {u for k in quarantine_keys
                     for text in texts(s3.get_object(Bucket=bucket, Key=k)["Body"].read(), tmp_path)
                     for u in re.findall(r"user-\d{4}", text)}
    users, in_clickstream = per_user_of(env, dataset, *lake), per_user(env, *lake)
    subject = max(in_quarantine & set(users) & set(in_clickstream), key=lambda u: (users[u], u))

    reference = tmp_path / "reference"
    (reference / "landing" / dataset).mkdir(parents=True)
    for path in (local / "landing" / DATASET).iterdir():
        (reference / "landing" / dataset / path.name).write_text(
            "".join(line for line in path.read_text().splitlines(True) if f'"{subject}"' not in line))
    cli(env, "run-all", "--lake-uri", str(reference), "--dataset", dataset, "--allow-warn", timeout=1200)

    erased_run = cli(env, "erase", *lake, "--dataset", dataset, "--subject", f"user_id={subject}", "--json",
                      timeout=1200)
    receipt = json.loads(erased_run.stdout)
    assert receipt["status"] == "completed" and list(receipt["datasets"]) == [dataset]
    assert f"to erase it there: the same command with --dataset {DATASET}" in erased_run.stderr
    left_out = receipt["verification"]["outside_request"]
    assert list(left_out) == [DATASET] and left_out[DATASET]["versions"] >= 1
    assert all(k.startswith((f"landing/{DATASET}/", f"bronze/{DATASET}/", f"quarantine/{DATASET}/",
                             f"silver/{DATASET}/", f"gold/{DATASET}_", f"checkpoints/{DATASET}/"))
               for k in receipt["verification"]["keys_with_subject"])
    assert receipt["verification"]["status"] == "verified; subject data remains in datasets outside this request"
    touched = receipt["datasets"][dataset]
    assert touched["quarantine"]["rows_removed"] >= 1
    assert set(touched["matched"]["quarantine_partitions"]) <= {"2024-01", "2024-02", "__HIVE_DEFAULT_PARTITION__"}
    assert [k for k in holding(s3, bucket, subject, tmp_path) if f"/{dataset}" in k] == []
    # One query per lake (a JVM each): both gold tables and the silver rows per user.
    sql = " UNION ALL ".join([*(f"SELECT '{gold}' AS t, to_json(struct(*)) AS r FROM gold.{dataset}_{gold}" for gold in GOLD),
                              f"SELECT 'silver' AS t, to_json(struct(user_id, count(*))) AS r FROM silver.{dataset} "
                              "GROUP BY user_id"])
    erased, expected = query_rows(env, sql, *lake), query_rows(env, sql, "--lake-uri", str(reference))
    assert len(erased) > len(users) and erased == expected
