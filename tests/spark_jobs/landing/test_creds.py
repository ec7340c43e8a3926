"""spark_jobs/landing/creds.py without AWS: prefix rules, TTL bounds, the exact session policy, both output forms.
The STS round trip on the emulator is in tests/integration/test_acme_streaming.py."""
from __future__ import annotations

import json

import pytest

from spark_jobs.landing import creds

TARGET = creds.IngestTarget(tenant="acme", bucket="acme-eu-west-1-lake", region="eu-west-1",
                            kms_key_arn="arn:aws:kms:eu-west-1:123456789012:key/k1",
                            role_arn="arn:aws:iam::123456789012:role/acme-lake-ingest-writer",
                            endpoint="https://127.0.0.1:5000", ca_bundle="/tmp/ca.pem")


@pytest.mark.parametrize("given", ["landing/iot", "landing/iot/", "/landing/iot", "s3://acme-eu-west-1-lake/landing/iot",
                                   "s3a://acme-eu-west-1-lake/landing/iot/"])
def test_prefix_forms_normalize(given):
    assert creds.normalize_prefix(given, TARGET) == "landing/iot"


@pytest.mark.parametrize("given,message", [
    ("s3://globex-us-east-1-lake/landing/iot", "is outside tenant 'acme''s lake (s3://acme-eu-west-1-lake/...)"),
    ("gs://acme-eu-west-1-lake/landing/iot", "is outside tenant 'acme''s lake"),
    ("bronze/iot", "is outside the ingest-writer role's prefixes (landing/)"),
    ("landingx/iot", "is outside the ingest-writer role's prefixes (landing/)"),
    ("landing/../bronze", "must be a plain key prefix"),
    ("landing/*", "must be a plain key prefix"),
    ("", "must be a plain key prefix"),
])
def test_prefix_outside_the_lake_or_the_role_is_a_clear_error(given, message):
    with pytest.raises(creds.CredsError) as err:
        creds.normalize_prefix(given, TARGET)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("ttl,ok", [(899, False), (900, True), (3600, True), (3601, False)])
def test_ttl_bounds_follow_sts_and_the_role(ttl, ok):
    if ok:
        assert creds.check_ttl(ttl) == ttl
    else:
        with pytest.raises(creds.CredsError, match=r"--ttl .* between 900 \(STS minimum\) and 3600 seconds"):
            creds.check_ttl(ttl)


def test_session_policy_is_exactly_prefix_scoped():
    assert creds.session_policy(TARGET, "landing/iot") == {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "PutUnderPrefixOnly", "Effect": "Allow",
             "Action": ["s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"],
             "Resource": ["arn:aws:s3:::acme-eu-west-1-lake/landing/iot/*"]},
            {"Sid": "UseTenantKey", "Effect": "Allow",
             "Action": ["kms:GenerateDataKey", "kms:Encrypt", "kms:Decrypt", "kms:DescribeKey"],
             "Resource": ["arn:aws:kms:eu-west-1:123456789012:key/k1"]},
        ]}


def _vended():
    return creds.VendedCredentials("ASIA1", "secret1", "token1", "2026-11-22T01:00:00Z",
                                   "arn:aws:sts::123456789012:assumed-role/acme-lake-ingest-writer/s", TARGET,
                                   "landing/iot", creds.session_policy(TARGET, "landing/iot"))


def test_both_output_forms():
    text = creds.render(_vended(), "all")
    assert "export AWS_ACCESS_KEY_ID=ASIA1" in text and "export AWS_SESSION_TOKEN=token1" in text
    lines = dict(line.split("=", 1) for line in text.splitlines() if line.startswith("fs.s3a."))
    assert lines["fs.s3a.access.key"] == "ASIA1" and lines["fs.s3a.secret.key"] == "secret1"
    assert lines["fs.s3a.session.token"] == "token1" and lines["fs.s3a.endpoint"] == "https://127.0.0.1:5000"
    assert lines["fs.s3a.aws.credentials.provider"] == "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
    assert lines["fs.s3a.server-side-encryption.key"] == TARGET.kms_key_arn
    as_json = json.loads(creds.render(_vended(), "json"))
    assert as_json["prefix"] == "landing/iot/" and as_json["env"]["AWS_SECRET_ACCESS_KEY"] == "secret1"  # pragma: allowlist secret - dummy or public value
    assert as_json["s3a"] == lines


def test_aws_endpoint_when_not_local():
    import dataclasses

    vended = dataclasses.replace(_vended(), target=dataclasses.replace(TARGET, endpoint=""))
    assert vended.s3a()["fs.s3a.endpoint"] == "s3.eu-west-1.amazonaws.com"
    assert "fs.s3a.path.style.access" not in vended.s3a() and "AWS_ENDPOINT_URL" not in vended.env()


def test_cli_errors_are_one_line(tmp_path, capsys):
    lake = tmp_path / "lake.json"
    lake.write_text(json.dumps({"tenant_id": "acme", "lake_bucket_name": TARGET.bucket, "kms_key_arn": TARGET.kms_key_arn,
                                "ingest_writer_role_arn": TARGET.role_arn, "region": "eu-west-1"}))
    assert creds.main(["--lake-config", str(lake), "--prefix", "bronze/iot"]) == 2
    assert creds.main(["--lake-config", str(lake), "--prefix", "landing/iot", "--ttl", "60"]) == 2
    assert creds.main(["--lake-config", str(tmp_path / "nope.json"), "--prefix", "landing/iot"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith("error: ") for line in err)
    assert "outside the ingest-writer role's prefixes" in err[0] and "--ttl 60" in err[1] and "does not exist" in err[2]


def test_spark_jobs_cli_has_the_creds_command(tmp_path, capsys):
    from spark_jobs import cli

    lake = tmp_path / "lake.json"
    lake.write_text(json.dumps({"tenant_id": "acme", "lake_bucket_name": TARGET.bucket, "kms_key_arn": TARGET.kms_key_arn,
                                "ingest_writer_role_arn": TARGET.role_arn, "region": "eu-west-1"}))
    assert cli.main(["creds", "--lake-config", str(lake), "--prefix", "s3://other-bucket/landing/iot"]) == 2
    assert capsys.readouterr().err.startswith("error: --prefix 's3://other-bucket/landing/iot' is outside tenant 'acme''s lake")


def test_datagen_to_kinesis_needs_a_stream_of_the_dataset(tmp_path, capsys):
    from spark_jobs import cli

    lake = tmp_path / "lake.json"
    lake.write_text(json.dumps({"tenant_id": "acme", "lake_bucket_name": TARGET.bucket, "kms_key_arn": TARGET.kms_key_arn,
                                "region": "eu-west-1", "kinesis_stream_names": {"iot": "acme-lake-iot"}}))
    code = cli.main(["datagen", "--lake-config", str(lake), "--dataset", "clickstream", "--records", "10", "--sink", "kinesis"])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1
    assert err[0] == ("error: tenant 'acme' has no stream for 'clickstream' (streams: iot); "
                      "add it to `streams` in its terragrunt.hcl and apply")
