"""policies/simulate.py: the node bridge to @cloud-copilot/iam-simulate, and the AWS semantics we rely on.

Real simulator runs (node + the pinned package from `make setup`), small hand-written policies.
"""
from __future__ import annotations

import pytest

from policies import simulate

ACCOUNT = "123456789012"
BUCKET = "arn:aws:s3:::b"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/r"
SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/r/s"


def _sim(action="s3:GetObject", resource=f"{BUCKET}/k", principal=SESSION, context=None, identity=None,
         resource_policy=None, endpoint_policies=None):
    simulation = {
        "request": {"action": action, "principal": principal, "resource": {"resource": resource, "accountId": ACCOUNT},
                    "contextVariables": context or {}},
        "identityPolicies": [{"name": "id", "policy": {"Version": "2012-10-17", "Statement": identity}}] if identity else [],
        "serviceControlPolicies": [], "resourceControlPolicies": [],
    }
    if resource_policy is not None:
        simulation["resourcePolicy"] = {"Version": "2012-10-17", "Statement": resource_policy}
    if endpoint_policies is not None:
        simulation["vpcEndpointPolicies"] = endpoint_policies
    return simulation


READ = [{"Sid": "Read", "Effect": "Allow", "Action": "s3:GetObject", "Resource": f"{BUCKET}/*"}]
DENY_PLAIN_HTTP = {"Sid": "DenyInsecureTransport", "Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:*",
                   "Resource": [BUCKET, f"{BUCKET}/*"], "Condition": {"Bool": {"aws:SecureTransport": ["false"]}}}
ONLY_ROLE = {"Sid": "DenyOthers", "Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:*",
             "Resource": [BUCKET, f"{BUCKET}/*"], "Condition": {"ArnNotLike": {"aws:PrincipalArn": [ROLE]}}}


def test_one_batch_returns_a_result_per_request_in_order_with_the_decisive_statements():
    tls = {"aws:SecureTransport": "true", "aws:PrincipalArn": ROLE}
    results = simulate.run([
        ("allowed", _sim(identity=READ, resource_policy=[DENY_PLAIN_HTTP], context=tls)),
        ("http", _sim(identity=READ, resource_policy=[DENY_PLAIN_HTTP], context={**tls, "aws:SecureTransport": "false"})),
        ("no-grant", _sim(identity=READ, resource=f"arn:aws:s3:::other/k", context=tls)),
    ])
    assert [(r.id, r.result) for r in results] == [
        ("allowed", "Allowed"), ("http", "ExplicitlyDenied"), ("no-grant", "ImplicitlyDenied")]
    assert results[0].sids("Allow") == ["Read"]
    assert results[1].sids("Deny") == ["DenyInsecureTransport"]
    assert results[1].decisive_label() == "resource: Deny DenyInsecureTransport"
    assert [d.effect for d in results[2].decisive] == ["NoAllow"] and results[2].decisive[0].policy_type == "identity"


def test_an_assumed_role_session_is_its_role_for_principal_arn_conditions_and_key_policies():
    # aws:PrincipalArn of a session is the role ARN: an allow-list naming the role lets its sessions through.
    own = simulate.run_one(_sim(identity=READ, resource_policy=[ONLY_ROLE], context={"aws:PrincipalArn": ROLE}))
    assert own.result == "Allowed"
    # A key policy naming the role grants its sessions, without any identity policy.
    key_policy = [{"Sid": "Use", "Effect": "Allow", "Principal": {"AWS": ROLE}, "Action": "kms:Decrypt", "Resource": "*"}]
    key = simulate.run_one(_sim(action="kms:Decrypt", resource=f"arn:aws:kms:eu-west-1:{ACCOUNT}:key/k",
                                resource_policy=key_policy, context={"aws:PrincipalArn": ROLE}))
    assert key.result == "Allowed" and key.sids("Allow") == ["Use"]


def test_a_negated_condition_on_an_absent_key_matches_so_an_anonymous_request_is_denied():
    # ArnNotLike on a key the request does not carry is true (AWS semantics): the allow-list denies anonymous.
    result = simulate.run_one(_sim(principal={"type": "Anonymous"}, resource_policy=[ONLY_ROLE]))
    assert result.result == "ExplicitlyDenied" and result.sids("Deny") == ["DenyOthers"]


KEY_ID = "s3:x-amz-server-side-encryption-aws-kms-key-id"
KEY = f"arn:aws:kms:eu-west-1:{ACCOUNT}:key/k"
PUT = [{"Sid": "Put", "Effect": "Allow", "Action": "s3:PutObject", "Resource": f"{BUCKET}/*"}]


@pytest.mark.parametrize("condition, header, expected", [
    # IfExists does not narrow a Deny: with a negated operator an absent key still matches (AWS: "...IfExists
    # condition operators"), so such a deny also refused UploadPart, which carries no encryption header.
    ({"StringNotEqualsIfExists": {KEY_ID: [KEY]}}, None, "ExplicitlyDenied"),
    ({"StringNotEquals": {KEY_ID: [KEY]}}, None, "ExplicitlyDenied"),
    # Null false first: the deny judges the header only when the request carries it (modules/bucket_policy.py).
    ({"Null": {KEY_ID: ["false"]}, "StringNotEquals": {KEY_ID: [KEY]}}, None, "Allowed"),
    ({"Null": {KEY_ID: ["false"]}, "StringNotEquals": {KEY_ID: [KEY]}}, KEY, "Allowed"),
    ({"Null": {KEY_ID: ["false"]}, "StringNotEquals": {KEY_ID: [KEY]}}, f"{KEY}-other", "ExplicitlyDenied"),
])
def test_a_deny_on_a_header_judges_it_only_when_present_if_it_tests_null_false(condition, header, expected):
    deny = {"Sid": "DenyWrongKey", "Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:PutObject",
            "Resource": f"{BUCKET}/*", "Condition": condition}
    context = {"aws:PrincipalArn": ROLE, **({KEY_ID: header} if header else {})}
    result = simulate.run_one(_sim(action="s3:PutObject", identity=PUT, resource_policy=[deny], context=context))
    assert result.result == expected and not result.ignored_context_keys


def test_an_endpoint_policy_that_does_not_allow_the_bucket_denies_implicitly():
    endpoint = [{"name": "vpce-1", "policy": {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:*", "Resource": ["arn:aws:s3:::other/*"]}]}}]
    result = simulate.run_one(_sim(identity=READ, context={"aws:SourceVpce": "vpce-1"}, endpoint_policies=endpoint))
    assert result.result == "ImplicitlyDenied" and [d.policy_type for d in result.decisive] == ["vpce"]


KEY = f"arn:aws:kms:eu-west-1:{ACCOUNT}:key/k"
ROOT_ENABLES_IAM = [{"Sid": "Root", "Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
                     "Action": "kms:*", "Resource": "*"}]
THROUGH_S3_FOR_BUCKET = [{"Sid": "ThroughS3", "Effect": "Allow", "Action": "kms:GenerateDataKey", "Resource": KEY,
                          "Condition": {"StringEquals": {"kms:ViaService": "s3.eu-west-1.amazonaws.com"},
                                        "StringLike": {"kms:EncryptionContext:aws:s3:arn": [BUCKET]}}}]


@pytest.mark.parametrize("encryption_context, expected", [
    (BUCKET, "Allowed"), ("arn:aws:s3:::other", "ImplicitlyDenied"), (None, "ImplicitlyDenied")])
def test_kms_encryption_context_conditions_are_evaluated(encryption_context, expected):
    # iam-simulate 0.1.173 alone drops kms:EncryptionContext:* from the request (the variable follows a ":"),
    # which would make the matching context deny; simulate.mjs puts the key back.
    context = {"kms:ViaService": "s3.eu-west-1.amazonaws.com"}
    if encryption_context:
        context["kms:EncryptionContext:aws:s3:arn"] = encryption_context
    result = simulate.run_one(_sim(action="kms:GenerateDataKey", resource=KEY, identity=THROUGH_S3_FOR_BUCKET,
                                   resource_policy=ROOT_ENABLES_IAM, context=context))
    assert result.result == expected
    assert result.completed_context_keys == (("kms:EncryptionContext:aws:s3:arn",) if encryption_context else ())
    assert result.ignored_context_keys == ()


def test_a_request_the_simulator_rejects_names_its_id():
    with pytest.raises(simulate.SimulatorError, match=r"^the simulator rejected bad-action: "):
        simulate.run([("bad-action", _sim(action="s3:NoSuchAction", identity=READ))])


def test_a_missing_install_says_to_run_make_setup(monkeypatch, tmp_path):
    (tmp_path / "simulator").mkdir()
    monkeypatch.setattr(simulate, "SIMULATOR_DIR", tmp_path / "simulator")
    with pytest.raises(simulate.SimulatorError, match=r"is not installed in .*node_modules: run `make setup`$"):
        simulate.run([("x", _sim(identity=READ))])
