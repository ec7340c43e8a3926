"""Bring your own data, on real public data: `land` + `run-all` on the applied initech tenant (emulator, s3a).

The data is not generated here. The pinned ``great-tables`` wheel (MIT, requirements/project.txt) ships
- ``great_tables/data/x-airquality.csv``: R's ``datasets::airquality``, daily New York readings of
  May to September 1973 (New York State Department of Conservation ozone, National Weather Service
  meteorology), 153 rows, ``NA`` for 44 missing values;
- ``great_tables/data/11-gibraltar.csv``: half-hourly weather at Gibraltar airport in May 2023, which this
  test turns into a Parquet file with DuckDB (``date + time`` as one timestamp column).

Each goes from a local folder to gold with the two commands of the onboarding path, as a user runs
them: ``python -m spark_jobs land`` (the CSV with credentials vended for the ingest-writer role,
``TENANTLAKE_ENV=aws`` as on AWS) and one ``run-all`` for both datasets. Gold is then compared with
DuckDB computed straight from the same files, and every manifest holds the counts invariant.
The contracts are test-only: ``tests/spark_jobs/contracts/`` through ``TENANTLAKE_CONTRACTS_DIR``.

initech, not acme: tests/integration/test_apply_acme.py destroys acme, initech stays applied after the
streaming test (which empties its lake), so in a full run this module applies nothing. Validation is off
in the run (``TENANTLAKE_VALIDATION=off``): this test is about the data; the CSV and Parquet datasets are
validated in tests/reliability/test_bad_input.py. Every object it wrote is deleted (by version) at the end.
"""
from __future__ import annotations

import importlib.metadata
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from spark_jobs.io import iceberg_files
from spark_jobs.lake.config import gold_table_name
from tests.conftest import REPO_ROOT, TEST_STATE_DIR

# The fixture applies initech when no earlier test did (minutes on a busy machine), then lands and runs two datasets.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]

TENANT = "initech"
DATASETS = ("airquality", "gibraltar")
CONTRACTS = REPO_ROOT / "tests" / "spark_jobs" / "contracts"
STATS = ("count", "min", "avg", "max")


def great_tables_file(name: str) -> Path:
    return Path(importlib.metadata.distribution("great-tables").locate_file(f"great_tables/data/{name}"))


def _cli(env, *args, timeout=900, expect=0):
    result = subprocess.run([sys.executable, "-m", "spark_jobs", *args], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == expect, f"{args[0]} exit {result.returncode}:\n{result.stdout}\n{result.stderr[-4000:]}"
    return result


def _download(s3, bucket: str, prefix: str, dest: Path) -> Path:
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            target = dest / obj["Key"]
            target.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(bucket, obj["Key"], str(target))
    return dest / prefix


def _keys(s3, bucket: str, prefix: str) -> list[str]:
    return sorted(o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
                  for o in page.get("Contents", []))


def _manifests(s3, bucket: str, layer: str, dataset: str) -> list[dict]:
    keys = [k for k in _keys(s3, bucket, f"reports/{layer}/{dataset}/") if k.endswith("/manifest.json")]
    return [json.loads(s3.get_object(Bucket=bucket, Key=k)["Body"].read()) for k in keys]


@pytest.fixture(scope="module")
def onboarded(applied_tenant, aws_env, tmp_path_factory):
    import boto3

    from infra.local.s3a_jars import ensure_jars

    lake = applied_tenant(TENANT)
    work = tmp_path_factory.mktemp("byod")
    csv_folder, parquet_folder = work / "airquality-export", work / "gibraltar-export"
    csv_folder.mkdir()
    parquet_folder.mkdir()
    shutil.copy(great_tables_file("x-airquality.csv"), csv_folder / "airquality.csv")
    parquet = parquet_folder / "gibraltar-2023-05.parquet"
    duckdb.sql(f"COPY (SELECT date + time AS observed_at, temp, dew_point, humidity, wind_dir, wind_speed, wind_gust, "
               f"pressure, condition FROM read_csv('{great_tables_file('11-gibraltar.csv')}')) TO '{parquet}' (FORMAT parquet)")
    env = {**os.environ, **aws_env, "TENANTLAKE_STATE_DIR": str(TEST_STATE_DIR), "TENANTLAKE_CONTRACTS_DIR": str(CONTRACTS),
           "SPARK_LOCAL_IP": "127.0.0.1", "TENANTLAKE_SPARK_JARS": ",".join(str(j) for j in ensure_jars())}
    env["TENANTLAKE_VALIDATION"] = "off"

    # The CSV as a producer on AWS would land it: with ingest-writer credentials vended for its prefix.
    vended = json.loads(_cli(env, "creds", "--tenant", TENANT, "--prefix", "landing/airquality", "--format", "json").stdout)
    producer_env = {**env, **vended["env"], "TENANTLAKE_ENV": "aws"}
    land_csv = _cli(producer_env, "land", "--tenant", TENANT, "--dataset", "airquality", str(csv_folder))
    land_csv_again = _cli(producer_env, "land", "--tenant", TENANT, "--dataset", "airquality", str(csv_folder / "airquality.csv"))
    land_parquet = _cli(env, "land", "--tenant", TENANT, "--dataset", "gibraltar", str(parquet_folder))
    # Historical data: the silver freshness expectation warns (exit 5) when validation is on; --allow-warn as documented.
    run_all = _cli(env, "run-all", "--tenant", TENANT, "--dataset", "airquality", "--dataset", "gibraltar", "--allow-warn",
                   timeout=1500)
    s3 = boto3.client("s3", region_name=lake["region"], endpoint_url=aws_env["AWS_ENDPOINT_URL"],
                      verify=aws_env["AWS_CA_BUNDLE"], aws_access_key_id=aws_env["AWS_ACCESS_KEY_ID"],
                      aws_secret_access_key=aws_env["AWS_SECRET_ACCESS_KEY"])
    bucket = lake["lake_bucket_name"]
    downloaded = work / "lake"
    for dataset in DATASETS:
        for prefix in (f"silver/{dataset}/", f"quarantine/{dataset}/", f"gold/{_gold_table(dataset)}/"):
            _download(s3, bucket, prefix, downloaded)
    yield {"lake": lake, "s3": s3, "bucket": bucket, "csv": csv_folder / "airquality.csv", "parquet": parquet,
           "land_csv": land_csv, "land_csv_again": land_csv_again, "land_parquet": land_parquet, "run_all": run_all,
           "downloaded": downloaded}
    _purge(s3, bucket)


def _purge(s3, bucket: str) -> None:
    """Delete every version and delete marker this module wrote (the tenant stays applied for others)."""
    prefixes = [f"{layer}/{dataset}/" for dataset in DATASETS
                for layer in ("landing", "bronze", "silver", "quarantine", "checkpoints")]
    prefixes += [f"gold/{_gold_table(dataset)}/" for dataset in DATASETS]
    prefixes += [f"reports/{layer}/{dataset}/" for dataset in DATASETS for layer in ("bronze", "silver", "gold")]
    for prefix in prefixes:
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
            for entry in page.get("Versions", []) + page.get("DeleteMarkers", []):
                s3.delete_object(Bucket=bucket, Key=entry["Key"], VersionId=entry["VersionId"])


def test_land_uploads_each_file_once_with_the_tenant_key(onboarded):
    s3, bucket, lake = onboarded["s3"], onboarded["bucket"], onboarded["lake"]
    out, err = onboarded["land_csv"].stdout, onboarded["land_csv"].stderr
    assert f"land: as arn:aws:sts::123456789012:assumed-role/{TENANT}-lake-ingest-writer/" in err
    assert f"land airquality: landed 1 file(s) (2.9 kB) -> s3a://{bucket}/landing/airquality/" in out
    assert f"next: python -m spark_jobs run-all --tenant {TENANT} --dataset airquality" in out
    assert "1 file(s) already landed (same content), not written again" in onboarded["land_csv_again"].stdout
    for dataset, local in (("airquality", onboarded["csv"]), ("gibraltar", onboarded["parquet"])):
        keys = _keys(s3, bucket, f"landing/{dataset}/")
        assert len(keys) == 1, keys
        head = s3.head_object(Bucket=bucket, Key=keys[0])
        assert (head["ServerSideEncryption"], head["SSEKMSKeyId"]) == ("aws:kms", lake["kms_key_arn"])
        assert head["Metadata"]["source-name"] == local.name
        assert s3.get_object(Bucket=bucket, Key=keys[0])["Body"].read() == local.read_bytes()


@pytest.mark.parametrize("dataset, rows", [("airquality", 153), ("gibraltar", 1431)])
def test_every_layer_holds_the_counts_invariant(onboarded, dataset, rows):
    s3, bucket = onboarded["s3"], onboarded["bucket"]
    for layer in ("bronze", "silver", "gold"):
        (manifest,) = _manifests(s3, bucket, layer, dataset)
        assert manifest["status"] == "succeeded" and manifest["published"] and manifest["invariant_holds"], manifest
        assert manifest["rows_in"] == manifest["rows_out"] + manifest["quarantined"] + manifest["duplicates"] == rows
        assert (manifest["quarantined"], manifest["duplicates"], manifest["malformed"]) == (0, 0, 0)
    assert f"silver {dataset}: rows_in={rows} rows_out={rows} quarantined=0 duplicates=0 late=0" in onboarded["run_all"].stdout


def _gold_table(dataset: str) -> str:
    """Both datasets use the generic period_summary gold: each gets a table of its own."""
    return gold_table_name(dataset, "period_summary")


def _gold(onboarded, dataset: str) -> list[tuple]:
    folder = onboarded["downloaded"] / "gold" / _gold_table(dataset)
    return duckdb.sql(f"SELECT * EXCLUDE (event_date) FROM {iceberg_files.duckdb_source(folder)} "
                      "ORDER BY period_start").fetchall()


def _reference(sql: str, measures: list[str], source: str) -> list[tuple]:
    stats = ", ".join(f"count({m}), min({m}), avg({m}), max({m})" for m in measures)
    return duckdb.sql(f"SELECT period_start, count(*), {stats} FROM ({sql}) GROUP BY ALL ORDER BY period_start").fetchall()


def _same(got: list[tuple], expected: list[tuple]) -> None:
    assert len(got) == len(expected)
    for row, ref in zip(got, expected):
        for value, want in zip(row, ref):
            if isinstance(want, float) and value is not None:
                assert math.isclose(value, want, rel_tol=1e-9), (row, ref)
            else:
                assert value == want, (row, ref)


def test_airquality_gold_equals_duckdb_straight_from_the_csv(onboarded):
    measures = {"ozone": "Ozone", "solar_r": "Solar_R", "wind": "Wind", "temp": "Temp"}
    source = (f"SELECT make_date(1973, Month, Day)::TIMESTAMP AS period_start, "
              + ", ".join(f"{src}::DOUBLE AS {name}" for name, src in measures.items())
              + f" FROM read_csv('{onboarded['csv']}', nullstr = 'NA', header = true)")
    expected = _reference(source, list(measures), "csv")
    gold = _gold(onboarded, "airquality")
    _same(gold, expected)
    assert len(gold) == 153 and sum(r[1] for r in gold) == 153
    # NA is null, not a value: 37 days lack ozone, 7 lack solar radiation (44 NA in the file).
    assert (sum(1 - r[2] for r in gold), sum(1 - r[6] for r in gold)) == (37, 7)


def test_gibraltar_parquet_gold_equals_duckdb_straight_from_the_parquet(onboarded):
    measures = ["temp", "humidity", "wind_speed", "pressure"]
    source = f"SELECT date_trunc('hour', observed_at) AS period_start, {', '.join(measures)} FROM read_parquet('{onboarded['parquet']}')"
    _same(_gold(onboarded, "gibraltar"), _reference(source, measures, "parquet"))


def test_silver_keeps_the_csv_values(onboarded):
    folder = onboarded["downloaded"] / "silver" / "airquality"
    silver = duckdb.sql(f"SELECT observed_on, ozone, solar_r, wind, temp FROM {iceberg_files.duckdb_source(folder)} "
                        "ORDER BY observed_on").fetchall()
    source = duckdb.sql(f"SELECT make_date(1973, Month, Day)::TIMESTAMP, Ozone::DOUBLE, Solar_R::DOUBLE, Wind::DOUBLE, "
                        f"Temp::DOUBLE FROM read_csv('{onboarded['csv']}', nullstr = 'NA') ORDER BY 1").fetchall()
    assert silver == source
