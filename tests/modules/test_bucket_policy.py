"""modules/bucket_policy.py: every statement of the lake and log bucket policies."""
from __future__ import annotations

from tests.modules.helpers import data, json_policy_statements, resource

LAKE_ARN = "${aws_s3_bucket.lake_bucket.arn}"
LOG_ARN = "${aws_s3_bucket.log_bucket_bucket.arn}"
# The tenant's own gateway endpoints, then a shared network's (the platform network unit's).
ENDPOINTS = ("list:concat([for e in aws_vpc_endpoint.endpoints_gateway : e.id], "
             "values(var.shared_gateway_endpoint_ids))")
ADMINS = "concat([data.aws_iam_session_context.deployer_session.issuer_arn], var.admin_principal_arns)"
READERS = "var.lake_formation.personal_data_reader_arns"
TENANT_ROLES = ("[aws_iam_role.roles_job_execution.arn, aws_iam_role.roles_ingest_writer.arn, "
                "aws_iam_role.roles_consumer.arn, aws_iam_role.roles_erasure.arn, aws_iam_role.lf_role.arn]")
# The Firehose roles, rendered from their name template for every entry of var.streams.
FIREHOSE_ROLES = ('[for s in var.streams : "arn:${data.aws_partition.inputs_partition.partition}:iam::'
                  '${var.account_id}:role/${var.tenant_id}-lake-${s}-firehose"]')


def _statements(module, name):
    policy = resource(module, "aws_s3_bucket_policy", name)
    return policy, json_policy_statements(policy["policy"])


def test_lake_policy_statements(tenant_module):
    policy, s = _statements(tenant_module, "lake_policy_policy")
    assert policy["bucket"] == "${aws_s3_bucket.lake_bucket.id}"
    assert policy["depends_on"] == ["aws_s3_bucket_public_access_block.lake_public_access_block"]
    assert list(s) == ["DenyInsecureTransport", "DenyNonKmsUploads", "DenyWrongKeyUploads", "DenyAwsManagedKeyUploads",
                       "DenyCustomerKeyUploads", "DenyUnconditionalLandingWrites", "DenyPrincipalsOutsideTenant",
                       "DenyOutsideTenantVpcEndpoints", "DenyAthenaOutsideConsumers", "DenyPersonalResultsOutsideReaders"]
    assert all(st["Effect"] == "Deny" and st["Principal"] == {"AWS": "*"} for st in s.values())
    assert s["DenyInsecureTransport"]["Action"] == ["s3:*"]
    assert s["DenyInsecureTransport"]["Resource"] == [LAKE_ARN, f"{LAKE_ARN}/*"]
    assert s["DenyInsecureTransport"]["Condition"] == {"Bool": {"aws:SecureTransport": ["false"]}}
    # Encryption: a header that is present must say aws:kms and the tenant key. Each deny first tests that its header
    # is there (Null false): UploadPart and CompleteMultipartUpload carry none, and a negated operator alone (IfExists
    # or not) matches an absent key, which denied every multipart upload. Headerless requests take the bucket default.
    sse, key_id = "s3:x-amz-server-side-encryption", "s3:x-amz-server-side-encryption-aws-kms-key-id"
    for sid in ("DenyNonKmsUploads", "DenyWrongKeyUploads", "DenyAwsManagedKeyUploads", "DenyCustomerKeyUploads"):
        assert s[sid]["Action"] == ["s3:PutObject"] and s[sid]["Resource"] == f"{LAKE_ARN}/*"
    assert s["DenyNonKmsUploads"]["Condition"] == {"Null": {sse: ["false"]}, "StringNotEquals": {sse: ["aws:kms"]}}
    assert s["DenyWrongKeyUploads"]["Condition"] == {
        "Null": {key_id: ["false"]}, "StringNotEquals": {key_id: ["${aws_kms_key.kms_key.arn}"]}}
    # aws:kms without a key id: S3 would use the aws/s3 key, not the bucket default's.
    assert s["DenyAwsManagedKeyUploads"]["Condition"] == {"StringEquals": {sse: ["aws:kms"]}, "Null": {key_id: ["true"]}}
    assert s["DenyCustomerKeyUploads"]["Condition"] == {
        "Null": {"s3:x-amz-server-side-encryption-customer-algorithm": ["false"]}}
    assert not [st for st in s.values() for op in st.get("Condition", {}) if op.endswith("IfExists")]
    # Landing writes are create-only: an object creation under landing/ without If-None-Match is denied to
    # everyone (admins too) but the Firehose roles, which write unique keys (matched by their name pattern).
    create_only = s["DenyUnconditionalLandingWrites"]
    assert create_only["Action"] == ["s3:PutObject"] and create_only["Resource"] == [f"{LAKE_ARN}/landing/*"]
    assert create_only["Condition"] == {
        "Null": {"s3:if-none-match": ["true"]}, "Bool": {"s3:ObjectCreationOperation": ["true"]},
        "ArnNotLike": {"aws:PrincipalArn": [
            "arn:${data.aws_partition.inputs_partition.partition}:iam::${var.account_id}:role/"
            "${var.tenant_id}-lake-*-firehose"]}}
    # Defence in depth: every principal but the tenant's roles, its Firehose roles and the admins is denied.
    principals = s["DenyPrincipalsOutsideTenant"]
    assert principals["Action"] == ["s3:*"] and principals["Resource"] == [LAKE_ARN, f"{LAKE_ARN}/*"]
    assert principals["Condition"] == {"ArnNotLike": {"aws:PrincipalArn": [
        f"list:concat({TENANT_ROLES}, {FIREHOSE_ROLES}, {ADMINS}, {READERS})"]}}
    outside = s["DenyOutsideTenantVpcEndpoints"]
    assert outside["Action"] == ["s3:*"] and outside["Resource"] == [LAKE_ARN, f"{LAKE_ARN}/*"]
    # Every condition must hold to deny: not via a tenant endpoint AND neither an admin nor a Firehose role
    # AND not a request Athena makes for its caller. No aws:ViaAWSService / aws:PrincipalIsAWSService escape.
    # Lake Formation's data-access role too: Athena reads gold with the credentials Lake Formation vends from it.
    assert outside["Condition"] == {"StringNotEquals": {"aws:SourceVpce": [ENDPOINTS],
                                                        "aws:CalledViaFirst": ["athena.amazonaws.com"]},
                                    "ArnNotLike": {"aws:PrincipalArn": [
                                        f"list:concat({ADMINS}, {FIREHOSE_ROLES}, [aws_iam_role.lf_role.arn])"]}}
    # ... and Athena's exemption serves the consumer role and the readers of personal data only.
    athena = s["DenyAthenaOutsideConsumers"]
    assert athena["Action"] == ["s3:*"] and athena["Resource"] == [LAKE_ARN, f"{LAKE_ARN}/*"]
    assert athena["Condition"] == {"StringEquals": {"aws:CalledViaFirst": ["athena.amazonaws.com"]},
                                   "ArnNotLike": {"aws:PrincipalArn": [
                                       f"list:concat([aws_iam_role.roles_consumer.arn], {READERS})"]}}
    # The readers' query results (their workgroup's folder) are theirs, the erasure role's and the admins' only.
    personal = s["DenyPersonalResultsOutsideReaders"]
    assert personal["Action"] == ["s3:*"] and personal["Resource"] == f"{LAKE_ARN}/athena/personal/*"
    assert personal["Condition"] == {"ArnNotLike": {"aws:PrincipalArn": [
        f"list:concat({READERS}, [aws_iam_role.roles_erasure.arn], {ADMINS})"]}}


def test_deployer_is_the_identity_running_terraform(tenant_module):
    caller = data(tenant_module, "aws_caller_identity", "deployer_caller")
    assert set(caller) <= {"//"}
    # An assumed-role session resolves to its role ARN, which is what aws:PrincipalArn carries.
    assert data(tenant_module, "aws_iam_session_context", "deployer_session")["arn"] == \
        "${data.aws_caller_identity.deployer_caller.arn}"


def test_log_bucket_policy_allows_log_delivery_of_the_lake_only_and_denies_the_rest(tenant_module):
    policy, s = _statements(tenant_module, "log_policy_policy")
    assert policy["bucket"] == "${aws_s3_bucket.log_bucket_bucket.id}"
    assert list(s) == ["DenyInsecureTransport", "S3ServerAccessLogsDelivery", "S3InventoryDelivery",
                       "DenyPrincipalsOutsideTenant", "DenyOutsideTenantVpcEndpoints"]
    delivery = s["S3ServerAccessLogsDelivery"]
    assert delivery["Effect"] == "Allow" and delivery["Principal"] == {"Service": "logging.s3.amazonaws.com"}
    assert delivery["Action"] == ["s3:PutObject"] and delivery["Resource"] == f"{LOG_ARN}/*"
    assert delivery["Condition"]["StringEquals"] == {"aws:SourceAccount": ["${var.account_id}"]}
    # The lake only: the log bucket does not log into itself.
    assert [a.rsplit(":", 1)[-1] for a in delivery["Condition"]["ArnLike"]["aws:SourceArn"]] == [
        "${var.tenant_id}-${var.region}-lake"]
    services_exempt = {"Bool": {"aws:PrincipalIsAWSService": ["false"]}}
    assert s["DenyPrincipalsOutsideTenant"]["Condition"] == {
        "ArnNotLike": {"aws:PrincipalArn": [f"list:{ADMINS}"]}, **services_exempt}
    assert s["DenyOutsideTenantVpcEndpoints"]["Condition"] == {
        "StringNotEquals": {"aws:SourceVpce": [ENDPOINTS]}, "ArnNotLike": {"aws:PrincipalArn": [f"list:{ADMINS}"]},
        **services_exempt}
