"""Tenant isolation and least privilege, on the module as applied for two tenants.

The tenant module is one synthesized module evaluated per tenant.  Plans are not enough: the role, bucket
and key policies name the KMS key's ARN, which is unknown until apply.  So both scratch tenants of the
reliability suite (faultco and isob, same account and region, isob with a Kinesis stream) are applied
once (test_infra_faults.py applies them; run alone, this module applies them), and EVERY policy the
tenants' Terraform state lists is read back from the emulator with boto3: each role's trust policy and
inline and attached policies, each bucket policy, each key policy, each gateway endpoint policy.

Static proof (every statement of every document):
1. nothing of tenant A names tenant B's buckets (hence prefixes), key, roles, endpoints, log group,
   namespace or streams, and vice versa; every S3/KMS resource an identity policy allows is its own;
2. no Allow statement grants S3 or KMS actions on ``*`` (key policies' ``Resource: "*"`` means "this
   key" and is exempt), and no tenant role may assume roles or pass them;
3. every trust policy is scoped: the job and erasure roles each to the EMR service accounts of its own
   runs in its own namespace (both tenants share the cluster's OIDC provider, so the ``sub`` condition,
   ending in the base36 of the role's name, is the boundary), other roles to the
   tenant account or to an AWS service with ``aws:SourceAccount``; no ``*`` principal;
4. every bucket policy denies plain HTTP, requests not through the tenant's own gateway endpoints, and
   every principal outside the tenant's allow-list (its own roles and admins; admins only on the log bucket).

Runtime proof, on a dedicated moto server that enforces IAM (``INITIAL_NO_AUTH_ACTION_COUNT``): each
tenant's job role, with its real applied permission policy, is allowed on its own lake's prefixes and
denied on the other tenant's lake.  What moto does not evaluate is pinned at the end (README); the access
matrix (tests/policies/test_access_matrix.py) evaluates it with an IAM policy simulator.
"""
from __future__ import annotations

import fnmatch
import json
import re

import pytest

import tenant_model

from tests.reliability.test_infra_faults import FAULT_TENANT, OTHER_TENANT, REGION, STATE_BUCKET, ensure_applied

pytestmark = pytest.mark.integration

ACCOUNT = "123456789012"
TENANTS = (FAULT_TENANT, OTHER_TENANT)


def _client(aws_env, service, key_id=None, secret=None, token=None, endpoint=None, ca=None):
    import boto3

    return boto3.client(service, region_name=REGION, endpoint_url=endpoint or aws_env["AWS_ENDPOINT_URL"],
                        verify=ca or aws_env["AWS_CA_BUNDLE"], aws_access_key_id=key_id or aws_env["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=secret or aws_env["AWS_SECRET_ACCESS_KEY"], aws_session_token=token)


def _doc(value):
    return json.loads(value) if isinstance(value, str) else value


def _list(value):
    return value if isinstance(value, list) else [value]


def _collect(tenant: str, lake: dict, aws_env) -> dict:
    """Every policy document of the tenant, found through its Terraform state, read back from the emulator."""
    s3, iam = _client(aws_env, "s3"), _client(aws_env, "iam")
    state = json.loads(s3.get_object(Bucket=STATE_BUCKET, Key=f"tenants/{tenant}/terraform.tfstate")["Body"].read())
    by_type: dict[str, list[dict]] = {}
    for resource in state["resources"]:
        if resource["mode"] == "managed":
            by_type.setdefault(resource["type"], []).extend(i["attributes"] for i in resource["instances"])
    roles, identity = {}, {}
    for attrs in by_type["aws_iam_role"]:
        name = attrs["name"]
        roles[name] = _doc(iam.get_role(RoleName=name)["Role"]["AssumeRolePolicyDocument"])
        for policy in iam.list_role_policies(RoleName=name)["PolicyNames"]:
            identity[f"{name}/{policy}"] = _doc(iam.get_role_policy(RoleName=name, PolicyName=policy)["PolicyDocument"])
        for attached in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]:
            version = iam.get_policy(PolicyArn=attached["PolicyArn"])["Policy"]["DefaultVersionId"]
            identity[f"{name}/{attached['PolicyName']}"] = _doc(iam.get_policy_version(
                PolicyArn=attached["PolicyArn"], VersionId=version)["PolicyVersion"]["Document"])
    buckets = {a["bucket"]: _doc(s3.get_bucket_policy(Bucket=a["bucket"])["Policy"]) for a in by_type["aws_s3_bucket_policy"]}
    kms = _client(aws_env, "kms")
    keys = {a["arn"]: _doc(kms.get_key_policy(KeyId=a["arn"], PolicyName="default")["Policy"]) for a in by_type["aws_kms_key"]}
    ec2 = _client(aws_env, "ec2")
    gateway_ids = [a["id"] for a in by_type["aws_vpc_endpoint"] if a["vpc_endpoint_type"] == "Gateway"]
    endpoints = {e["VpcEndpointId"]: _doc(e["PolicyDocument"])
                 for e in ec2.describe_vpc_endpoints(VpcEndpointIds=gateway_ids)["VpcEndpoints"]}
    key_arn = lake["kms_key_arn"]
    identifiers = [lake["lake_bucket_name"], lake["log_bucket_name"], key_arn.rsplit("/", 1)[1],
                   *lake["gateway_endpoint_ids"].values(), *lake["interface_endpoint_ids"].values(),
                   f"/tenantlake/{tenant}/", f"emr-{tenant}:", f":role/{tenant}-", *lake["kinesis_stream_names"].values()]
    return {"roles": roles, "identity": identity, "buckets": buckets, "keys": keys, "endpoints": endpoints,
            "lake": lake, "identifiers": identifiers, "key_arn": key_arn}


@pytest.fixture(scope="module")
def tenants(emulator, aws_env, concurrent_applies):
    # The scratch tenants come out of the infrastructure-fault scenario (tests/reliability/conftest.py), run
    # first whatever the order: applied here before it, faultco could not be killed midway.
    lakes = ensure_applied(*TENANTS)
    return {t: _collect(t, lakes[t], aws_env) for t in TENANTS}


def _all_documents(policies: dict) -> dict[str, dict]:
    return {**{f"trust {k}": v for k, v in policies["roles"].items()},
            **{f"identity {k}": v for k, v in policies["identity"].items()},
            **{f"bucket {k}": v for k, v in policies["buckets"].items()},
            **{f"key {k}": v for k, v in policies["keys"].items()},
            **{f"endpoint {k}": v for k, v in policies["endpoints"].items()}}


def test_every_policy_kind_was_read(tenants):
    for tenant, policies in tenants.items():
        # + Lake Formation's data-access role and its policy (modules/lake_formation.py)
        assert len(policies["roles"]) == (6 if tenant == OTHER_TENANT else 5)  # isob: + its Firehose role
        assert len(policies["identity"]) == (7 if tenant == OTHER_TENANT else 5)  # + Firehose + stream-iot
        assert len(policies["buckets"]) == 2 and len(policies["keys"]) == 1 and len(policies["endpoints"]) == 1


@pytest.mark.parametrize("owner, other", [TENANTS, TENANTS[::-1]])
def test_no_statement_of_one_tenant_names_the_others_resources(tenants, owner, other):
    mine, theirs = tenants[owner], tenants[other]
    leaks = [(name, ident) for name, document in _all_documents(mine).items()
             for ident in theirs["identifiers"] if ident in json.dumps(document)]
    assert leaks == []
    # Positively: every S3 and KMS resource an identity or endpoint policy allows is the owner's own.
    own_bucket = f"arn:aws:s3:::{mine['lake']['lake_bucket_name']}"
    for name, document in {**mine["identity"], **mine["endpoints"]}.items():
        for statement in _list(document["Statement"]):
            for resource in _list(statement.get("Resource", [])):
                if resource.startswith("arn:aws:s3:::"):
                    assert resource == own_bucket or resource.startswith(own_bucket + "/"), (name, resource)
                if resource.startswith("arn:aws:kms:"):
                    assert resource == mine["key_arn"], (name, resource)


def _grants_s3_or_kms(actions) -> bool:
    return any(a == "*" or a.lower().startswith(("s3:", "kms:")) for a in _list(actions))


def test_no_statement_grants_s3_or_kms_on_star(tenants):
    checked = 0
    for policies in tenants.values():
        documents = {**policies["identity"], **policies["buckets"], **policies["endpoints"]}  # key policies exempt
        for name, document in documents.items():
            for statement in _list(document["Statement"]):
                assert "NotResource" not in statement and "NotAction" not in statement, name
                if statement["Effect"] != "Allow" or not _grants_s3_or_kms(statement["Action"]):
                    continue
                checked += 1
                for resource in _list(statement["Resource"]):
                    assert resource != "*" and not re.match(r"^arn:aws:(s3|kms):[^/]*\*", resource), (name, statement)
        for name, document in policies["identity"].items():
            for statement in _list(document["Statement"]):
                if statement["Effect"] == "Allow":
                    assert not any(a.startswith(("sts:AssumeRole", "iam:PassRole")) or a in ("*", "sts:*", "iam:*")
                                   for a in _list(statement["Action"])), (name, statement)
    assert checked >= 20
    print(f"no S3/KMS grant on *: {checked} Allow statements with S3 or KMS actions checked")


def test_every_trust_policy_is_scoped_to_its_tenant(tenants):
    for tenant, policies in tenants.items():
        other = next(t for t in TENANTS if t != tenant)
        for role, trust in policies["roles"].items():
            for statement in _list(trust["Statement"]):
                principal = statement["Principal"]
                assert principal != "*" and "*" not in _list(principal.get("AWS", [])), (role, statement)
                actions = _list(statement["Action"])
                if actions == ["sts:AssumeRoleWithWebIdentity"]:
                    conditions = statement["Condition"]
                    (sub_key,) = conditions["StringLike"]
                    patterns = _list(conditions["StringLike"][sub_key])
                    # Its own runs' pods only: the base36 of its own name ends the service account (issue 31).
                    assert patterns == [tenant_model.emr_service_account_pattern(f"emr-{tenant}", ACCOUNT, role)]
                    own = tenant_model.emr_service_account(f"emr-{tenant}", ACCOUNT, role)
                    foreign = tenant_model.emr_service_account(f"emr-{other}", ACCOUNT, role.replace(tenant, other, 1))
                    sibling = tenant_model.emr_service_account(f"emr-{tenant}", ACCOUNT, next(
                        r for r in (f"{tenant}-emr-job-execution", f"{tenant}-emr-erasure") if r != role))
                    assert fnmatch.fnmatchcase(own, patterns[0])
                    assert not fnmatch.fnmatchcase(foreign, patterns[0]) and not fnmatch.fnmatchcase(sibling, patterns[0])
                    assert _list(conditions["StringEquals"][sub_key.replace(":sub", ":aud")]) == ["sts.amazonaws.com"]
                    assert role in (f"{tenant}-emr-job-execution", f"{tenant}-emr-erasure")  # EMR job runs
                elif "Service" in principal:
                    assert _list(statement["Condition"]["StringEquals"]["aws:SourceAccount"]) == [ACCOUNT], role
                else:
                    assert actions == ["sts:AssumeRole"] and _list(principal["AWS"]) == [f"arn:aws:iam::{ACCOUNT}:root"]


def test_bucket_policies_deny_plain_http_other_endpoints_and_principals_outside_the_tenant(tenants):
    for tenant, policies in tenants.items():
        other = next(t for t in TENANTS if t != tenant)
        own_endpoints = sorted(policies["lake"]["gateway_endpoint_ids"].values())
        assert sorted(tenants[other]["lake"]["gateway_endpoint_ids"].values()) != own_endpoints
        for bucket, document in policies["buckets"].items():
            statements = {s["Sid"]: s for s in _list(document["Statement"])}
            arns = sorted([f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"])
            for sid in ("DenyInsecureTransport", "DenyOutsideTenantVpcEndpoints"):
                statement = statements[sid]
                assert statement["Effect"] == "Deny" and statement["Principal"] in ("*", {"AWS": "*"}), (bucket, sid)
                assert _list(statement["Action"]) == ["s3:*"] and sorted(_list(statement["Resource"])) == arns
            tls = statements["DenyInsecureTransport"]["Condition"]
            assert _list(tls["Bool"]["aws:SecureTransport"]) == ["false"]
            outside = statements["DenyOutsideTenantVpcEndpoints"]["Condition"]
            assert sorted(_list(outside["StringNotEquals"]["aws:SourceVpce"])) == own_endpoints, bucket
            exempt = _list(outside["ArnNotLike"]["aws:PrincipalArn"])
            assert exempt and not any("*" in arn or f"/{other}-" in arn for arn in exempt), exempt
            # Defence in depth: every principal outside the allow-list is denied, wherever it comes from. The
            # lake's list is the tenant's own roles (Firehose included) plus the exempt admins; the log
            # bucket's is the admins only (AWS services, i.e. log delivery, are exempt there).
            principals = statements["DenyPrincipalsOutsideTenant"]
            assert principals["Effect"] == "Deny" and _list(principals["Action"]) == ["s3:*"], bucket
            allowed = set(_list(principals["Condition"]["ArnNotLike"]["aws:PrincipalArn"]))
            own_roles = {f"arn:aws:iam::{ACCOUNT}:role/{name}" for name in policies["roles"]}
            if bucket == policies["lake"]["lake_bucket_name"]:
                assert allowed == own_roles | set(exempt) and "Bool" not in principals["Condition"], bucket
            else:
                assert allowed == set(exempt) and own_roles.isdisjoint(allowed), bucket
                assert principals["Condition"]["Bool"] == {"aws:PrincipalIsAWSService": ["false"]}
            assert not any("*" in arn or f"/{other}-" in arn for arn in allowed), allowed


# ---- runtime: moto enforcing IAM ---------------------------------------------------------------
ADMIN_POLICY = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}


@pytest.fixture(scope="module")
def job_role_sessions(tenants, iam_enforcing_emulator, aws_env):
    """Per tenant: an S3 and a KMS client as its job role (real applied permission policy) on the enforcing
    emulator, plus an admin S3 client.  The trust names the test's user: moto 5.2.5 answers the job role's
    own AssumeRoleWithWebIdentity with a 500 when it enforces IAM (the call is unsigned)."""
    kw = {"endpoint": iam_enforcing_emulator.endpoint, "ca": iam_enforcing_emulator.ca_bundle}
    iam = _client(aws_env, "iam", **kw)
    iam.create_user(UserName="deployer")
    iam.put_user_policy(UserName="deployer", PolicyName="admin", PolicyDocument=json.dumps(ADMIN_POLICY))
    key = iam.create_access_key(UserName="deployer")["AccessKey"]
    admin = {"key_id": key["AccessKeyId"], "secret": key["SecretAccessKey"], **kw}
    iam_admin, s3_admin = _client(aws_env, "iam", **admin), _client(aws_env, "s3", **admin)
    sts = _client(aws_env, "sts", **admin)
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {
        "AWS": f"arn:aws:iam::{ACCOUNT}:user/deployer"}}]}
    sessions = {}
    for tenant, policies in tenants.items():
        bucket = policies["lake"]["lake_bucket_name"]
        s3_admin.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
        s3_admin.put_object(Bucket=bucket, Key="silver/iot/seed.json", Body=b"{}")
        role = f"{tenant}-emr-job-execution"
        arn = iam_admin.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        iam_admin.put_role_policy(RoleName=role, PolicyName="lake-access",
                                  PolicyDocument=json.dumps(policies["identity"][f"{role}/lake-access"]))
        creds = sts.assume_role(RoleArn=arn, RoleSessionName=f"{tenant}-spark")["Credentials"]
        session = {"key_id": creds["AccessKeyId"], "secret": creds["SecretAccessKey"], "token": creds["SessionToken"], **kw}
        sessions[tenant] = {"s3": _client(aws_env, "s3", **session), "kms": _client(aws_env, "kms", **session),
                            "bucket": bucket, "key_arn": policies["key_arn"]}
    return sessions


def _denied(call) -> bool:
    from botocore.exceptions import ClientError

    try:
        call()
    except ClientError as err:
        # moto answers KMS (a JSON API) with an XML error body: botocore then reports the code as "403".
        error = err.response["Error"]
        assert "AccessDenied" in f"{error.get('Code')} {error.get('Message')}", error
        return True
    return False


@pytest.mark.parametrize("owner, other", [TENANTS, TENANTS[::-1]])
def test_job_role_is_allowed_on_its_own_lake_and_denied_on_the_other(job_role_sessions, owner, other):
    s3, own, foreign = job_role_sessions[owner]["s3"], job_role_sessions[owner]["bucket"], job_role_sessions[other]["bucket"]
    s3.put_object(Bucket=own, Key=f"silver/iot/{owner}.json", Body=b"{}")
    assert s3.get_object(Bucket=own, Key="silver/iot/seed.json")["Body"].read() == b"{}"
    assert _denied(lambda: s3.put_object(Bucket=foreign, Key=f"silver/iot/{owner}.json", Body=b"{}"))
    assert _denied(lambda: s3.get_object(Bucket=foreign, Key="silver/iot/seed.json"))
    assert _denied(lambda: s3.delete_object(Bucket=foreign, Key="silver/iot/seed.json"))
    # Listing: its own layer prefixes only (the s3:prefix condition of ListOwnPrefixes), never the other lake.
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=own, Prefix="silver/iot/seed")["Contents"]] == \
        ["silver/iot/seed.json"]
    assert _denied(lambda: s3.list_objects_v2(Bucket=foreign, Prefix="silver/"))
    # Least privilege inside its own lake too: landing/ is read-only for the job role, and no other prefix.
    assert _denied(lambda: s3.put_object(Bucket=own, Key="landing/iot/forged.json", Body=b"[]"))
    assert _denied(lambda: s3.put_object(Bucket=own, Key="elsewhere/x.json", Body=b"{}"))


def test_what_moto_does_not_evaluate_is_pinned(job_role_sessions):
    """If one of these starts failing, moto learned something: update README (reliability, isolation)."""
    session = job_role_sessions[FAULT_TENANT]
    # Conditions in identity policies are ignored (moto evaluates only StringEquals on sts:ExternalId): the
    # s3:prefix condition of ListOwnPrefixes does not bind, so listing outside the layer prefixes succeeds
    # here; AWS denies it.
    assert not _denied(lambda: session["s3"].list_objects_v2(Bucket=session["bucket"], Prefix="elsewhere/"))
    # KMS requests are authorised against resource "*": a grant scoped to the tenant key never matches,
    # so moto denies the job role its own key (AWS allows it).
    assert _denied(lambda: session["kms"].describe_key(KeyId=session["key_arn"]))
