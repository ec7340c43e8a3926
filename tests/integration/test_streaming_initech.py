"""Streaming ingestion on the emulator, on `initech` (the sample tenant with `streams = ["iot", "clickstream"]`),
applied through `make apply` by the shared ``applied_tenant`` fixture:

* the module's per-stream resources exist as configured (Kinesis stream with the tenant key, Firehose);
* vended producer credentials (``spark_jobs.landing.creds``) work for a put under their prefix;
* end to end: datagen records -> ``put_records`` into Kinesis -> delivered to landing (by the local
  Firehose stand-in: moto does not deliver Kinesis -> Firehose) -> bronze -> silver -> gold through the
  real CLI, and every produced event is accounted for.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.conftest import REPO_ROOT, TEST_STATE_DIR

pytestmark = pytest.mark.integration

TENANT = "initech"
REGION = "eu-central-1"
DATAGEN = {  # dataset -> generator options: small, with bad records (malformed included)
    "iot": dict(records=300, sources=6, batch_size=20, bad_rate=0.05, seed=7),
    "clickstream": dict(records=200, sources=3, batch_size=20, bad_rate=0.05, seed=7),
}


@pytest.fixture(scope="module")
def lake(applied_tenant, aws_env):
    """The applied tenant; at the end, its lake emptied version by version (see _purge_versions)."""
    lake = applied_tenant(TENANT)
    yield lake
    _purge_versions(aws_env, lake["lake_bucket_name"])


def _purge_versions(aws_env, bucket):
    """Delete every object version and delete marker while the bucket is still versioned.

    moto 5.2.5 cannot empty a bucket holding delete markers once versioning is suspended (terraform's
    force_destroy then retries a 500 ``'FakeDeleteMarker' object has no attribute 'dispose'``), and
    Spark's s3a leaves delete markers in the versioned lake; deleting by version id avoids that path.
    """
    import boto3

    s3 = boto3.client("s3", region_name=REGION, endpoint_url=aws_env["AWS_ENDPOINT_URL"],
                      verify=aws_env["AWS_CA_BUNDLE"], aws_access_key_id=aws_env["AWS_ACCESS_KEY_ID"],
                      aws_secret_access_key=aws_env["AWS_SECRET_ACCESS_KEY"])
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        for entry in page.get("Versions", []) + page.get("DeleteMarkers", []):
            s3.delete_object(Bucket=bucket, Key=entry["Key"], VersionId=entry["VersionId"])


@pytest.fixture(scope="module")
def clients(lake, aws_env):
    import boto3

    def client(service, **creds):
        return boto3.client(service, region_name=REGION, endpoint_url=aws_env["AWS_ENDPOINT_URL"],
                            verify=aws_env["AWS_CA_BUNDLE"], **(creds or {
                                "aws_access_key_id": aws_env["AWS_ACCESS_KEY_ID"],
                                "aws_secret_access_key": aws_env["AWS_SECRET_ACCESS_KEY"]}))
    return client


def test_stream_resources_are_applied_as_configured(lake, clients):
    assert lake["kinesis_stream_names"] == {"iot": "initech-lake-iot", "clickstream": "initech-lake-clickstream"}
    assert lake["firehose_delivery_stream_names"] == {"iot": "initech-lake-iot-to-landing",
                                                      "clickstream": "initech-lake-clickstream-to-landing"}
    kinesis, firehose = clients("kinesis"), clients("firehose")
    for dataset, stream in lake["kinesis_stream_names"].items():
        summary = kinesis.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]
        assert summary["EncryptionType"] == "KMS" and summary["KeyId"] == lake["kms_key_arn"]
        assert summary["OpenShardCount"] == 1 and summary["RetentionPeriodHours"] == 24
        described = firehose.describe_delivery_stream(
            DeliveryStreamName=lake["firehose_delivery_stream_names"][dataset])["DeliveryStreamDescription"]
        assert described["Source"]["KinesisStreamSourceDescription"]["KinesisStreamARN"] == summary["StreamARN"]
        s3 = described["Destinations"][0]["ExtendedS3DestinationDescription"]
        assert s3["BucketARN"] == lake["lake_bucket_arn"] and s3["Prefix"] == f"landing/{dataset}/"
        assert s3["ErrorOutputPrefix"] == f"quarantine/firehose/{dataset}/!{{firehose:error-output-type}}/"
        assert s3["BufferingHints"] == {"SizeInMBs": 1, "IntervalInSeconds": 60}
        assert s3["EncryptionConfiguration"] == {"KMSEncryptionConfig": {"AWSKMSKeyARN": lake["kms_key_arn"]}}
        assert s3["RoleARN"].endswith(f":role/initech-lake-{dataset}-firehose")


def test_vended_credentials_put_under_their_prefix(lake, clients, aws_env, monkeypatch, capsys):
    from spark_jobs.landing import creds

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):  # the caller's own (emulated) identity
        monkeypatch.setenv(name, aws_env[name])
    lake_json = str(TEST_STATE_DIR / "tenants" / TENANT / "lake.json")
    vended = creds.vend(creds.load_target(lake_config=lake_json), "landing/iot", ttl=900, session_name="producer-1")
    assert vended.assumed_role_arn == "arn:aws:sts::123456789012:assumed-role/initech-lake-ingest-writer/producer-1"
    assert vended.access_key_id != aws_env["AWS_ACCESS_KEY_ID"] and vended.session_token
    assert vended.policy["Statement"][0]["Resource"] == [f"arn:aws:s3:::{lake['lake_bucket_name']}/landing/iot/*"]
    s3 = clients("s3", aws_access_key_id=vended.access_key_id, aws_secret_access_key=vended.secret_access_key,
                 aws_session_token=vended.session_token)
    s3.put_object(Bucket=lake["lake_bucket_name"], Key="landing/iot/_vended-probe", Body=b"[]",
                  ServerSideEncryption="aws:kms", SSEKMSKeyId=lake["kms_key_arn"])
    head = clients("s3").head_object(Bucket=lake["lake_bucket_name"], Key="landing/iot/_vended-probe")
    assert head["ServerSideEncryption"] == "aws:kms" and head["SSEKMSKeyId"] == lake["kms_key_arn"]

    assert creds.main(["--lake-config", lake_json, "--prefix", "landing/clickstream", "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["s3a"]["fs.s3a.aws.credentials.provider"] == creds.S3A_PROVIDER
    assert printed["s3a"]["fs.s3a.endpoint"] == lake["s3_endpoint"] and printed["prefix"] == "landing/clickstream/"
    assert creds.main(["--lake-config", lake_json, "--prefix", "s3://acme-eu-west-1-lake/landing/iot"]) == 2
    assert "outside tenant 'initech''s lake" in capsys.readouterr().err


@pytest.fixture(scope="module")
def streamed(lake, clients, aws_env, tmp_path_factory):
    """Produce to Kinesis, deliver with the stand-in, run bronze -> silver -> gold; yield what tests read."""
    from infra.local.s3a_jars import ensure_jars
    from spark_jobs.contract.model import load_contract
    from spark_jobs.datagen import DatagenConfig, generate
    from spark_jobs.producers import firehose_standin, kinesis as producer

    kinesis, firehose, s3 = clients("kinesis"), clients("firehose"), clients("s3")
    produced, delivered, truth = {}, {}, {}
    for dataset, options in DATAGEN.items():
        data = generate(DatagenConfig(dataset=dataset, **options))
        contract = load_contract(dataset)
        records = producer.records_from_files(data.files, contract.landing_format, contract.source_field)
        assert len(records) == data.raw_records
        produced[dataset] = producer.put_records(kinesis, lake["kinesis_stream_names"][dataset], records)
        delivered[dataset] = firehose_standin.deliver(firehose, kinesis, s3,
                                                      lake["firehose_delivery_stream_names"][dataset], dataset)
        truth[dataset] = data
    env = {**os.environ, **aws_env, "TENANTLAKE_STATE_DIR": str(TEST_STATE_DIR), "SPARK_LOCAL_IP": "127.0.0.1",
           "TENANTLAKE_SPARK_JARS": ",".join(str(j) for j in ensure_jars()),
           "TENANTLAKE_VALIDATION": "off"}  # expectations are covered by tests/spark_jobs/quality
    args = ["run-all", "--tenant", TENANT, *[a for d in DATAGEN for a in ("--dataset", d)]]
    run = subprocess.run([sys.executable, "-m", "spark_jobs", *args], cwd=REPO_ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"run-all failed ({run.returncode}):\n{run.stdout}\n{run.stderr[-3000:]}"
    work = tmp_path_factory.mktemp("streamed")
    bucket = lake["lake_bucket_name"]
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="bronze/"):
        for obj in page.get("Contents", []):
            (work / obj["Key"]).parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(bucket, obj["Key"], str(work / obj["Key"]))
    yield {"produced": produced, "delivered": delivered, "truth": truth, "run": run, "s3": s3, "bucket": bucket,
           "local": work}


def _manifest(s3, bucket, layer, dataset):
    keys = [o["Key"] for p in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=f"reports/{layer}/{dataset}/")
            for o in p.get("Contents", []) if o["Key"].endswith("/manifest.json")]
    assert len(keys) == 1, keys
    return json.loads(s3.get_object(Bucket=bucket, Key=keys[0])["Body"].read())


@pytest.mark.parametrize("dataset", list(DATAGEN))
def test_delivered_objects_look_like_firehose_output(streamed, lake, dataset):
    s3, bucket = streamed["s3"], streamed["bucket"]
    delivered = streamed["delivered"][dataset]
    assert delivered.records == streamed["produced"][dataset].records and delivered.objects
    pattern = (rf"^landing/{dataset}/\d{{4}}/\d{{2}}/\d{{2}}/\d{{2}}/initech-lake-{dataset}-to-landing-1-"
               r"\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}-[0-9a-f-]{36}\.jsonl$")
    for key in delivered.objects:
        assert re.match(pattern, key), key
        head = s3.head_object(Bucket=bucket, Key=key)
        assert head["ServerSideEncryption"] == "aws:kms" and head["SSEKMSKeyId"] == lake["kms_key_arn"]


@pytest.mark.parametrize("dataset", list(DATAGEN))
def test_every_produced_event_is_accounted_for(streamed, dataset):
    s3, bucket, data = streamed["s3"], streamed["bucket"], streamed["truth"][dataset]
    produced = streamed["produced"][dataset]
    assert produced.records == data.raw_records and produced.retried == 0
    bronze, silver, gold = (_manifest(s3, bucket, layer, dataset) for layer in ("bronze", "silver", "gold"))
    assert bronze["rows_in"] == bronze["rows_out"] == data.raw_records
    assert bronze["malformed"] == sum(1 for b in data.bad if b["kind"] == "malformed")
    assert (silver["rows_in"], silver["rows_out"], silver["quarantined"], silver["duplicates"]) == (
        data.raw_records, len(data.valid), len(data.bad), data.duplicates)
    assert gold["rows_in"] == len(data.valid) and gold["status"] == "succeeded"
    for manifest in (bronze, silver, gold):
        assert manifest["rows_in"] == manifest["rows_out"] + manifest["quarantined"] + manifest["duplicates"]


@pytest.mark.parametrize("dataset", list(DATAGEN))
def test_bronze_keeps_the_stream_metadata_of_every_record(streamed, dataset):
    folder = streamed["local"] / "bronze" / dataset
    con = duckdb.connect()
    rows, with_meta, sequences, shards, first_arrival = con.sql(
        f"SELECT count(*), count(_stream_sequence_number), count(DISTINCT _stream_sequence_number), "
        f"list(DISTINCT _stream_shard_id), min(_stream_arrival_ts) "
        f"FROM read_parquet('{folder}/**/*.parquet', hive_partitioning = true)").fetchall()[0]
    produced = streamed["produced"][dataset]
    assert rows == with_meta == sequences == produced.records
    assert shards == list(produced.shards) == ["shardId-000000000000"]
    assert first_arrival is not None
