"""Vended credentials on an emulator that ENFORCES IAM (moto's INITIAL_NO_AUTH_ACTION_COUNT), with the
ingest-writer role carrying the module's own permission statements (modules/job_roles.py).

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


def test_role_policy_is_enforced_session_policy_is_not(iam_enforcing_emulator, monkeypatch):
    from modules.job_roles import ROLE_ACCESS, permission_statements
    from modules.policy_document import policy_json
    from spark_jobs import creds
    from botocore.exceptions import ClientError

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

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", admin["key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", admin["secret"])
    target = creds.IngestTarget(tenant="credsiam", bucket=BUCKET, region=REGION, kms_key_arn=kms_arn,
                                role_arn=role_arn, endpoint=iam_enforcing_emulator.endpoint,
                                ca_bundle=iam_enforcing_emulator.ca_bundle)
    vended = creds.vend(target, "landing/iot", ttl=900)
    s3 = _client(iam_enforcing_emulator, "s3", vended.access_key_id, vended.secret_access_key, vended.session_token)
    sse = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": kms_arn}

    s3.put_object(Bucket=BUCKET, Key="landing/iot/ok.json", Body=b"[]", **sse)
    with pytest.raises(ClientError) as denied:
        s3.put_object(Bucket=BUCKET, Key="bronze/iot/nope.json", Body=b"[]", **sse)
    assert denied.value.response["Error"]["Code"] == "AccessDenied"
    # Outside the vended prefix but inside the role's landing/: AWS denies it (session policy); moto does not.
    s3.put_object(Bucket=BUCKET, Key="landing/clickstream/moto-allows.json", Body=b"[]", **sse)
    keys = sorted(o["Key"] for o in s3_admin.list_objects_v2(Bucket=BUCKET)["Contents"])
    assert keys == ["landing/clickstream/moto-allows.json", "landing/iot/ok.json"]
