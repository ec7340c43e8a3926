"""Vended credentials on an emulator that ENFORCES IAM (moto's INITIAL_NO_AUTH_ACTION_COUNT), with the
ingest-writer role carrying the module's own permission statements (modules/job_roles.py); and `land`
with such credentials.

What moto enforces: the assumed role's identity policy (a put outside landing/ is denied). What it does
not: the session policy (a put under landing/ but outside the vended prefix succeeds here; on AWS it is
denied). The last assertion pins that limitation, so the README's statement fails loudly if moto changes.
"""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.integration

REGION = "eu-west-1"
BUCKET = "credsiam-eu-west-1-lake"
ADMIN_POLICY = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}


def _client(state, service, key_id="testing", secret="testing", token=None):
    import boto3

    return boto3.client(service, region_name=REGION, endpoint_url=state.endpoint, verify=state.ca_bundle,
                        aws_access_key_id=key_id, aws_secret_access_key=secret, aws_session_token=token)


@pytest.fixture(scope="module")
def ingest_writer(iam_enforcing_emulator):
    """An admin user, a KMS key, the lake bucket and the ingest-writer role with the module's statements."""
    from modules.job_roles import ROLE_ACCESS, permission_statements
    from modules.policy_document import policy_json

    iam = _client(iam_enforcing_emulator, "iam")
    iam.create_user(UserName="deployer")
    iam.put_user_policy(UserName="deployer", PolicyName="admin", PolicyDocument=json.dumps(ADMIN_POLICY))
    key = iam.create_access_key(UserName="deployer")["AccessKey"]
    admin = {"key_id": key["AccessKeyId"], "secret": key["SecretAccessKey"]}
    kms_arn = _client(iam_enforcing_emulator, "kms", **admin).create_key()["KeyMetadata"]["Arn"]
    s3_admin = _client(iam_enforcing_emulator, "s3", **admin)
    s3_admin.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    # The module trusts the account root; moto matches trust principals literally (the root does not
    # stand for the account's users there), so the deployer is named as well.
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {
        "AWS": ["arn:aws:iam::123456789012:root", "arn:aws:iam::123456789012:user/deployer"]}}]}
    iam_admin = _client(iam_enforcing_emulator, "iam", **admin)
    role_arn = iam_admin.create_role(RoleName="credsiam-lake-ingest-writer",
                                     AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    statements = permission_statements(ROLE_ACCESS["ingest_writer"], f"arn:aws:s3:::{BUCKET}", kms_arn, "unused")
    iam_admin.put_role_policy(RoleName="credsiam-lake-ingest-writer", PolicyName="lake-access",
                              PolicyDocument=policy_json(statements))
    return {"admin": admin, "kms_arn": kms_arn, "s3_admin": s3_admin, "role_arn": role_arn}


def _vend(state, setup, monkeypatch, prefix: str):
    from spark_jobs.landing import creds

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", setup["admin"]["key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", setup["admin"]["secret"])
    target = creds.IngestTarget(tenant="credsiam", bucket=BUCKET, region=REGION, kms_key_arn=setup["kms_arn"],
                                role_arn=setup["role_arn"], endpoint=state.endpoint, ca_bundle=state.ca_bundle)
    vended = creds.vend(target, prefix, ttl=900)
    return _client(state, "s3", vended.access_key_id, vended.secret_access_key, vended.session_token)


def test_role_policy_is_enforced_session_policy_is_not(iam_enforcing_emulator, ingest_writer, monkeypatch):
    from botocore.exceptions import ClientError

    kms_arn, s3_admin = ingest_writer["kms_arn"], ingest_writer["s3_admin"]
    s3 = _vend(iam_enforcing_emulator, ingest_writer, monkeypatch, "landing/iot")
    sse = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": kms_arn}

    s3.put_object(Bucket=BUCKET, Key="landing/iot/ok.json", Body=b"[]", **sse)
    with pytest.raises(ClientError) as denied:
        s3.put_object(Bucket=BUCKET, Key="bronze/iot/nope.json", Body=b"[]", **sse)
    assert denied.value.response["Error"]["Code"] == "AccessDenied"
    # Outside the vended prefix but inside the role's landing/: AWS denies it (session policy); moto does not.
    s3.put_object(Bucket=BUCKET, Key="landing/clickstream/moto-allows.json", Body=b"[]", **sse)
    keys = sorted(o["Key"] for o in s3_admin.list_objects_v2(Bucket=BUCKET, Prefix="landing/")["Contents"])
    assert keys == ["landing/clickstream/moto-allows.json", "landing/iot/ok.json"]


@pytest.mark.parametrize("size", [30, 6 * 1024 * 1024])  # one put; a multipart upload in parts of 5 MiB
def test_land_needs_nothing_but_the_ingest_writer_put(iam_enforcing_emulator, ingest_writer, monkeypatch, tmp_path,
                                                      size):
    """`land` with vended ingest-writer credentials (put under landing/ only: no read, no list): the file
    lands; landing it again is answered by the conditional put (or completion), still without reading or
    listing. A multipart upload needs no more than the role has: its parts are puts, and the second land's
    upload, refused at completion, is aborted (s3:AbortMultipartUpload)."""
    from botocore.exceptions import ClientError

    from spark_jobs.contract.model import parse_contract
    from spark_jobs.lake.config import LakeConfig
    from spark_jobs.landing.land import land

    s3 = _vend(iam_enforcing_emulator, ingest_writer, monkeypatch, "landing/readings")
    with pytest.raises(ClientError) as denied:  # the identity really cannot read or list
        s3.list_objects_v2(Bucket=BUCKET, Prefix="landing/")
    assert denied.value.response["Error"]["Code"] == "AccessDenied"
    contract = parse_contract({"dataset": "readings", "landing": {"format": "csv"}, "key": ["id"], "event_time": "ts",
                               "schema": [{"name": "id", "type": "string"}, {"name": "ts", "type": "timestamp"}]})
    lake = LakeConfig(lake_uri=f"s3a://{BUCKET}", kms_key_arn=ingest_writer["kms_arn"], region=REGION,
                      s3_endpoint=iam_enforcing_emulator.endpoint, ca_bundle=iam_enforcing_emulator.ca_bundle)
    sample = tmp_path / "a.csv"
    row = b"1,2024-01-01T00:00:00Z\n"
    sample.write_bytes(b"id,ts\n" + row * max(1, size // len(row)))
    first = land(lake, contract, [str(sample)], client=s3, part_size=5 * 1024 * 1024)
    again = land(lake, contract, [str(sample)], client=s3, part_size=5 * 1024 * 1024)
    assert (len(first.landed), len(first.already), len(again.landed), len(again.already)) == (1, 0, 0, 1)
    assert "Uploads" not in ingest_writer["s3_admin"].list_multipart_uploads(Bucket=BUCKET)
    ((_, key),) = first.landed
    with pytest.raises(ClientError):  # so the second land could not look: the conditional write answered it
        s3.head_object(Bucket=BUCKET, Key=key)
    head = ingest_writer["s3_admin"].head_object(Bucket=BUCKET, Key=key)
    assert (head["ServerSideEncryption"], head["SSEKMSKeyId"]) == ("aws:kms", ingest_writer["kms_arn"])
