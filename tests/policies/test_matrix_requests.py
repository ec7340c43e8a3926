"""policies/matrix_requests.py: the request context of each kind of cell, as AWS would build it.

Built from hand-made tenants (plain data, no emulator); the matrix test evaluates the real ones.
"""
from __future__ import annotations

import pytest

from policies.access_matrix import parse
from policies.matrix_requests import FOREIGN_ENDPOINT, RequestBuilder, principal_arn
from policies.tenant_policies import AppliedTenant, RoleIdentity

ACCOUNT = "123456789012"


def _tenant(tenant_id: str, region: str = "eu-west-1", streams=()) -> AppliedTenant:
    role = lambda name: RoleIdentity(f"arn:aws:iam::{ACCOUNT}:role/{name}",  # noqa: E731
                                     ({"name": f"{name}/lake-access", "policy": {"Statement": [{"Sid": name}]}},))
    return AppliedTenant(
        tenant_id=tenant_id, region=region, account_id=ACCOUNT, lake_bucket=f"{tenant_id}-lake",
        log_bucket=f"{tenant_id}-lake-logs", key_arn=f"arn:aws:kms:{region}:{ACCOUNT}:key/{tenant_id}-key",
        lake_policy={"Statement": ["lake"]}, log_policy={"Statement": ["logs"]}, key_policy={"Statement": ["key"]},
        roles={"job_role": role(f"{tenant_id}-emr-job-execution"), "ingest_writer": role(f"{tenant_id}-lake-ingest-writer"),
               "consumer": role(f"{tenant_id}-lake-consumer"), "erasure_role": role(f"{tenant_id}-emr-erasure")},
        firehose_roles={d: role(f"{tenant_id}-lake-{d}-firehose") for d in streams},
        gateway_endpoint_id=f"vpce-{tenant_id}", gateway_endpoint_policy={"Statement": ["endpoint"]},
        stream_arns={d: f"arn:aws:kinesis:{region}:{ACCOUNT}:stream/{tenant_id}-lake-{d}" for d in streams})


TENANTS = {"acme": _tenant("acme"), "globex": _tenant("globex", "us-east-1"), "initech": _tenant("initech", streams=("iot",))}
ADMIN = f"arn:aws:iam::{ACCOUNT}:role/deployer"


def _simulation(**cell):
    matrix = parse({"tenants": {"owner": "acme", "other": "globex", "streaming": "initech"},
                    "other_account_id": "210987654321",
                    "identity_policies": {"full": {"Version": "2012-10-17", "Statement": [{"Effect": "Allow"}]}},
                    "principal_identity": {"admin": "full", "other_account": "full"},
                    "cells": [{"id": "c", "expect": "Allowed", **cell}]})
    builder = RequestBuilder(matrix, TENANTS, admin_arn=ADMIN,
                             admin_caller_arn=f"arn:aws:sts::{ACCOUNT}:assumed-role/deployer/ci")
    return builder.simulation(matrix.cells[0])


def test_a_role_acts_as_a_session_whose_principal_arn_is_the_role():
    s = _simulation(principal="job_role", action="s3:GetObject", key="silver/x")
    request = s["request"]
    assert request["principal"] == f"arn:aws:sts::{ACCOUNT}:assumed-role/acme-emr-job-execution/tenantlake-matrix"
    assert request["resource"] == {"resource": "arn:aws:s3:::acme-lake/silver/x", "accountId": ACCOUNT}
    assert request["contextVariables"] == {
        "aws:PrincipalArn": f"arn:aws:iam::{ACCOUNT}:role/acme-emr-job-execution", "aws:PrincipalAccount": ACCOUNT,
        "aws:PrincipalIsAWSService": "false", "aws:SecureTransport": "true", "aws:SourceVpce": "vpce-acme",
        "aws:ViaAWSService": "false"}
    assert s["identityPolicies"] == [{"name": "acme-emr-job-execution/lake-access",
                                      "policy": {"Statement": [{"Sid": "acme-emr-job-execution"}]}}]
    assert s["resourcePolicy"] == {"Statement": ["lake"]}
    assert s["vpcEndpointPolicies"] == [{"name": "vpce-acme", "policy": {"Statement": ["endpoint"]}}]


def test_a_put_carries_the_encryption_headers_the_context_names():
    own = _simulation(principal="job_role", action="s3:PutObject", key="silver/x")["request"]["contextVariables"]
    assert own["s3:x-amz-server-side-encryption"] == "aws:kms"
    assert own["s3:x-amz-server-side-encryption-aws-kms-key-id"] == TENANTS["acme"].key_arn
    other = _simulation(principal="job_role", action="s3:PutObject", key="silver/x", context={"sse_key": "other"})
    assert other["request"]["contextVariables"]["s3:x-amz-server-side-encryption-aws-kms-key-id"] == \
        TENANTS["globex"].key_arn
    sse_s3 = _simulation(principal="job_role", action="s3:PutObject", key="silver/x", context={"sse": "AES256"})
    assert sse_s3["request"]["contextVariables"]["s3:x-amz-server-side-encryption"] == "AES256"
    assert "s3:x-amz-server-side-encryption-aws-kms-key-id" not in sse_s3["request"]["contextVariables"]
    none = _simulation(principal="job_role", action="s3:PutObject", key="silver/x", context={"sse": "none"})
    assert not any(k.startswith("s3:x-amz") for k in none["request"]["contextVariables"])
    # SSE-C names its algorithm in a header of its own, and sends no x-amz-server-side-encryption.
    sse_c = _simulation(principal="job_role", action="s3:PutObject", key="silver/x", context={"sse": "customer"})
    assert {k: v for k, v in sse_c["request"]["contextVariables"].items() if k.startswith("s3:x-amz")} == {
        "s3:x-amz-server-side-encryption-customer-algorithm": "AES256"}


@pytest.mark.parametrize("condition, creation, if_none_match", [
    ("none", "true", None), ("if_none_match", "true", "*"), ("upload_part", "false", None)])
def test_a_put_says_whether_it_creates_the_object_and_whether_it_is_create_only(condition, creation, if_none_match):
    context = _simulation(principal="ingest_writer", action="s3:PutObject", key="landing/iot/x.json",
                          context={"write_condition": condition})["request"]["contextVariables"]
    assert context["s3:ObjectCreationOperation"] == creation
    assert context.get("s3:if-none-match") == if_none_match
    get = _simulation(principal="job_role", action="s3:GetObject", key="landing/iot/x.json")["request"]["contextVariables"]
    assert "s3:ObjectCreationOperation" not in get and "s3:if-none-match" not in get


@pytest.mark.parametrize("endpoint, expected", [("own", "vpce-acme"), ("foreign", FOREIGN_ENDPOINT), ("none", None)])
def test_the_endpoint_context_and_policy(endpoint, expected):
    s = _simulation(principal="consumer", action="s3:GetObject", key="gold/x", context={"endpoint": endpoint})
    assert s["request"]["contextVariables"].get("aws:SourceVpce") == expected
    assert ("vpcEndpointPolicies" in s) == (endpoint == "own")  # another VPC's endpoint policy is not ours to know


def test_a_list_names_the_bucket_and_the_prefix():
    request = _simulation(principal="consumer", action="s3:ListBucket", key="gold/")["request"]
    assert request["resource"]["resource"] == "arn:aws:s3:::acme-lake"
    assert request["contextVariables"]["s3:prefix"] == "gold/"


@pytest.mark.parametrize("key", ["", "bronze/"])
def test_a_version_list_names_the_bucket_and_the_prefix_even_the_empty_one(key):
    request = _simulation(principal="erasure_role", action="s3:ListBucketVersions", key=key)["request"]
    assert request["principal"] == f"arn:aws:sts::{ACCOUNT}:assumed-role/acme-emr-erasure/tenantlake-matrix"
    assert request["resource"]["resource"] == "arn:aws:s3:::acme-lake"
    assert request["contextVariables"]["s3:prefix"] == key


def test_a_version_delete_names_the_object():
    s = _simulation(principal="erasure_role", action="s3:DeleteObjectVersion", key="bronze/x")
    assert s["request"]["resource"]["resource"] == "arn:aws:s3:::acme-lake/bronze/x"
    assert s["request"]["contextVariables"]["aws:PrincipalArn"] == f"arn:aws:iam::{ACCOUNT}:role/acme-emr-erasure"
    assert s["vpcEndpointPolicies"] == [{"name": "vpce-acme", "policy": {"Statement": ["endpoint"]}}]
    assert not any(k.startswith("s3:x-amz") for k in s["request"]["contextVariables"])


def test_another_tenants_role_and_another_account():
    other = _simulation(principal="other_tenant_job_role", action="s3:GetObject", key="silver/x")
    assert other["request"]["contextVariables"]["aws:PrincipalArn"] == f"arn:aws:iam::{ACCOUNT}:role/globex-emr-job-execution"
    assert other["request"]["resource"]["resource"] == "arn:aws:s3:::acme-lake/silver/x"
    erasure = _simulation(principal="other_tenant_erasure_role", action="s3:DeleteObjectVersion", key="bronze/x")
    assert erasure["request"]["contextVariables"]["aws:PrincipalArn"] == f"arn:aws:iam::{ACCOUNT}:role/globex-emr-erasure"
    assert erasure["identityPolicies"][0]["name"] == "globex-emr-erasure/lake-access"
    account = _simulation(principal="other_account", action="s3:GetObject", key="silver/x")
    assert account["request"]["principal"] == "arn:aws:sts::210987654321:assumed-role/partner-admin/tenantlake-matrix"
    assert account["request"]["contextVariables"]["aws:PrincipalAccount"] == "210987654321"
    assert account["identityPolicies"][0]["name"] == "full"


def test_the_admin_is_the_deployer_session_and_its_role():
    request = _simulation(principal="admin", action="s3:GetObject", key="x", context={"endpoint": "none"})["request"]
    assert request["principal"] == f"arn:aws:sts::{ACCOUNT}:assumed-role/deployer/ci"
    assert request["contextVariables"]["aws:PrincipalArn"] == ADMIN


def test_anonymous_requests_carry_no_principal_keys():
    s = _simulation(principal="anonymous", action="s3:GetObject", key="gold/x")
    assert s["request"]["principal"] == {"type": "Anonymous"} and s["identityPolicies"] == []
    assert set(s["request"]["contextVariables"]) == {"aws:SecureTransport", "aws:SourceVpce"}


@pytest.mark.parametrize("source, arn", [("lake", "arn:aws:s3:::acme-lake"), ("logs", "arn:aws:s3:::acme-lake-logs"),
                                         ("other_lake", "arn:aws:s3:::globex-lake")])
def test_the_log_delivery_service_names_the_bucket_it_logs(source, arn):
    s = _simulation(principal="s3_log_delivery", action="s3:PutObject", bucket="logs", key="s3-access/x",
                    context={"endpoint": "none", "sse": "none", "source": source})
    context = s["request"]["contextVariables"]
    assert s["request"]["principal"] == "logging.s3.amazonaws.com" and s["identityPolicies"] == []
    assert s["resourcePolicy"] == {"Statement": ["logs"]}
    assert context == {"aws:PrincipalIsAWSService": "true", "aws:PrincipalServiceName": "logging.s3.amazonaws.com",
                       "aws:SourceArn": arn, "aws:SourceAccount": ACCOUNT, "aws:SecureTransport": "true",
                       "s3:ObjectCreationOperation": "true"}


def test_kms_requests_name_the_key_the_calling_service_and_the_encryption_context():
    bucket = _simulation(principal="job_role", action="kms:GenerateDataKey")
    assert bucket["request"]["resource"]["resource"] == TENANTS["acme"].key_arn
    assert bucket["resourcePolicy"] == {"Statement": ["key"]}
    context = bucket["request"]["contextVariables"]
    assert context["kms:ViaService"] == "s3.eu-west-1.amazonaws.com"
    assert context["kms:EncryptionContext:aws:s3:arn"] == "arn:aws:s3:::acme-lake"  # S3 Bucket Key
    assert context["kms:CallerAccount"] == ACCOUNT and "aws:SourceVpce" not in context
    obj = _simulation(principal="job_role", action="kms:Decrypt", key="gold/x", context={"kms_context": "object"})
    assert obj["request"]["contextVariables"]["kms:EncryptionContext:aws:s3:arn"] == "arn:aws:s3:::acme-lake/gold/x"
    stream = _simulation(principal="firehose_role", tenant="streaming", action="kms:Decrypt",
                         context={"kms_via": "kinesis", "kms_context": "stream"})["request"]["contextVariables"]
    assert stream["kms:ViaService"] == "kinesis.eu-west-1.amazonaws.com"
    assert stream["kms:EncryptionContext:aws:kinesis:arn"] == f"arn:aws:kinesis:eu-west-1:{ACCOUNT}:stream/initech-lake-iot"
    direct = _simulation(principal="job_role", action="kms:Decrypt", context={"kms_via": "none", "kms_context": "none"})
    assert not any(k.startswith("kms:") and k != "kms:CallerAccount" for k in direct["request"]["contextVariables"])


def test_a_firehose_cell_on_a_tenant_without_that_stream_says_so():
    with pytest.raises(ValueError, match=r"^cell c: tenant acme has no Firehose role for 'iot' \(its streams: none\)$"):
        _simulation(principal="firehose_role", action="s3:PutObject", key="landing/iot/x")


@pytest.mark.parametrize("caller, expected", [
    (f"arn:aws:sts::{ACCOUNT}:assumed-role/deployer/ci-run", f"arn:aws:iam::{ACCOUNT}:role/deployer"),
    (f"arn:aws:iam::{ACCOUNT}:user/alice", f"arn:aws:iam::{ACCOUNT}:user/alice"),
    ("arn:aws-cn:sts::123456789012:assumed-role/x/y", "arn:aws-cn:iam::123456789012:role/x"),
])
def test_principal_arn_of_a_caller(caller, expected):
    assert principal_arn(caller) == expected
