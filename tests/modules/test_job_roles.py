"""modules/job_roles.py: trust conditions and least-privilege permissions per role."""
from __future__ import annotations

import pytest

import tenant_model as model
from modules.job_roles import (
    READER_ACCESS,
    ATHENA_QUERY_ACTIONS,
    GLUE_READ_ACTIONS,
    GLUE_WRITE_ACTIONS,
    KMS_READ_ACTIONS,
    KMS_WRITE_ACTIONS,
    LOG_WRITE_ACTIONS,
    ROLE_ACCESS,
    S3_READ_ACTIONS,
    S3_WRITE_ACTIONS,
    RoleAccess,
)
from tests.modules.helpers import document_statements, resource

LAKE = "${aws_s3_bucket.lake_bucket.arn}"
KEY = "${aws_kms_key.kms_key.arn}"


def test_access_matrix():
    assert ROLE_ACCESS["job_execution"].read == ("landing", "bronze", "artifacts")
    # logs/: the logUri of every StartJobRun request (infra/deploy/request.py); EMR uploads job logs as the role.
    assert ROLE_ACCESS["job_execution"].write == ("bronze", "silver", "gold", "quarantine", "reports", "checkpoints",
                                                  "logs")
    assert ROLE_ACCESS["ingest_writer"].put_only == ("landing",) and not ROLE_ACCESS["ingest_writer"].read
    # The consumer reads reports; athena/consumer/ holds its Athena query results (put, read back, no delete), never
    # the readers of personal data's athena/personal/ (issue 52). Gold tables it reads through Lake Formation only
    # (the columns granted to it): no S3 right on gold/ (issue 44).
    assert ROLE_ACCESS["consumer"].read == ("reports", "athena/consumer") and not ROLE_ACCESS["consumer"].write
    assert ROLE_ACCESS["consumer"].lake_formation_data_access
    assert [r for r, a in ROLE_ACCESS.items() if a.lake_formation_data_access] == ["consumer"]
    assert [r for r, a in ROLE_ACCESS.items() if a.tags_tables] == ["job_execution"]
    assert ROLE_ACCESS["consumer"].put_only == ("athena/consumer",)
    assert READER_ACCESS.read == READER_ACCESS.put_only == ("athena/personal",) and READER_ACCESS.athena
    assert ROLE_ACCESS["job_execution"].glue_write == ("silver", "gold") and not ROLE_ACCESS["job_execution"].athena
    assert ROLE_ACCESS["consumer"].glue_read == ("gold",) and ROLE_ACCESS["consumer"].athena
    assert not (ROLE_ACCESS["ingest_writer"].glue_read or ROLE_ACCESS["ingest_writer"].glue_write)
    # The erasure role (erase runs): every prefix readable, every prefix but artifacts/ writable and purgeable.
    erasure = ROLE_ACCESS["erasure"]
    assert erasure.read == model.LAKE_PREFIXES
    assert erasure.write == erasure.delete_versions == tuple(p for p in model.LAKE_PREFIXES if p != "artifacts")
    assert erasure.list_all and erasure.logs and erasure.glue_write == ("silver", "gold") and not erasure.athena
    # Only the erasure role deletes object versions or lists the whole bucket.
    assert [r for r, a in ROLE_ACCESS.items() if a.delete_versions or a.list_all] == ["erasure"]


def test_role_access_defaults():
    access = RoleAccess()
    assert access.delete_versions == () and access.list_all is False
    assert (access.read, access.write, access.put_only, access.logs, access.athena) == ((), (), (), False, False)


def test_every_role_of_role_access_has_a_name_template_and_a_role(tenant_module):
    # The Firehose roles (modules/stream_ingest.py) and the maintenance scheduler's (maintenance_schedule.py) aside.
    # And Lake Formation's data-access role (modules/lake_formation.py), and the orchestration's three (the state
    # machine's, modules/pipeline_state_machine.py; the schedules' and arrival rules', modules/pipeline_triggers.py).
    others = {"streams_firehose_role", "maintenance_role", "lf_role", "pipeline_role", "triggers_scheduler_role",
              "triggers_events_role"}
    assert set(tenant_module["resource"]["aws_iam_role"]) - others == {f"roles_{role}" for role in ROLE_ACCESS}
    assert {f"{role}_role" for role in ROLE_ACCESS} <= set(model.NAME_TEMPLATES)


@pytest.mark.parametrize("role,name", [("job_execution", "${var.tenant_id}-emr-job-execution"),
                                       ("ingest_writer", "${var.tenant_id}-lake-ingest-writer"),
                                       ("consumer", "${var.tenant_id}-lake-consumer"),
                                       ("erasure", "${var.tenant_id}-emr-erasure")])
def test_role_names_and_session_length(tenant_module, role, name):
    r = resource(tenant_module, "aws_iam_role", f"roles_{role}")
    assert r["name"] == name and r["max_session_duration"] == 3600
    assert r["assume_role_policy"] == f"${{data.aws_iam_policy_document.roles_{role}_trust.json}}"


@pytest.mark.parametrize("role", ["job_execution", "erasure"])
def test_emr_roles_trust_only_the_service_accounts_of_their_own_runs(tenant_module, role):
    [trust] = document_statements(tenant_module, f"roles_{role}_trust").values()
    assert trust["actions"] == ["sts:AssumeRoleWithWebIdentity"]
    assert trust["principals"] == [{"type": "Federated", "identifiers": ["${local.oidc_provider_arn}"]}]
    assert trust["condition"] == [
        {"test": "StringLike", "variable": "${local.oidc_issuer}:sub",
         "values": ["system:serviceaccount:${local.namespace}:emr-containers-sa-*-*-${var.account_id}-"
                    f'${{local.emr_role_name_base36["{role}"]}}']},
        {"test": "StringEquals", "variable": "${local.oidc_issuer}:aud", "values": ["sts.amazonaws.com"]}]
    assert tenant_module["locals"]["oidc_issuer"] == '${element(split(":oidc-provider/", local.oidc_provider_arn), 1)}'
    assert tenant_module["locals"]["emr_role_names"] == {
        "job_execution": "${var.tenant_id}-emr-job-execution", "erasure": "${var.tenant_id}-emr-erasure"}


# The AWS CLI's own test vectors (tests/unit/customizations/emrcontainers/test_base36.py), the longest
# role names IAM allows, and this project's role names for the longest tenant id.
BASE36_VECTORS = {"abcdefghijkl": "2x6xx5ubcrus4bplmr0", "+=,.@-_": "3bu5b0xg4tb",
                  "abcdefghijkl+=,.@-_": "1ll75jdngh5gbk11wbh7h35ji05wtb"}


def test_base36_of_a_role_name_is_the_aws_clis():
    for name, encoded in BASE36_VECTORS.items():
        assert model.base36_role_name(name) == encoded
    assert model.base36_role_name("") == "0"
    assert model.emr_service_account_pattern("emr-acme", "123456789012", "acme-emr-erasure") == (
        "system:serviceaccount:emr-acme:emr-containers-sa-*-*-123456789012-5rk95hrmqr4w5gssxrhq5ku3p")


def test_terraform_computes_the_same_base36_as_the_reference(tmp_path):
    """The module's locals, evaluated by terraform itself (``terraform console``, no provider), for every
    kind of name: the CLI's vectors, 64-character names of the smallest and largest bytes, both role names
    of the longest tenant id."""
    import json
    import subprocess

    from modules.job_roles import base36_locals

    tenant = "t" + "z" * 23
    names = {**{f"v{i}": n for i, n in enumerate(BASE36_VECTORS)}, "low": "+" * 64, "high": "z" * 64,
             "mixed": ("Aa0+=,.@_-" * 7)[:64],
             "job": model.render_name("job_execution_role", tenant_id=tenant),
             "erasure": model.render_name("erasure_role", tenant_id=tenant)}
    (tmp_path / "main.tf.json").write_text(json.dumps({"locals": base36_locals(names)}))
    done = subprocess.run(["terraform", "console"], input="jsonencode(local.emr_role_name_base36)\n", cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(json.loads(done.stdout.strip())) == {key: model.base36_role_name(n) for key, n in names.items()}


@pytest.mark.parametrize("role", ["ingest_writer", "consumer"])
def test_other_roles_trust_the_tenant_account(tenant_module, role):
    [trust] = document_statements(tenant_module, f"roles_{role}_trust").values()
    assert trust["actions"] == ["sts:AssumeRole"]
    assert trust["principals"] == [{"type": "AWS", "identifiers": [
        "arn:${data.aws_partition.inputs_partition.partition}:iam::${var.account_id}:root"]}]


def test_job_role_permissions(tenant_module):
    s = document_statements(tenant_module, "roles_job_execution_permissions")
    readable = ["landing", "bronze", "artifacts", "silver", "gold", "quarantine", "reports", "checkpoints", "logs"]
    assert s["ListOwnPrefixes"]["resources"] == [LAKE]
    assert s["ListOwnPrefixes"]["condition"] == [{"test": "StringLike", "variable": "s3:prefix",
                                                  "values": [v for p in readable for v in (f"{p}/", f"{p}/*")]}]
    assert s["ReadPrefixes"]["resources"] == [f"{LAKE}/{p}/*" for p in readable]
    assert s["WritePrefixes"]["resources"] == [f"{LAKE}/{p}/*" for p in
                                               ("bronze", "silver", "gold", "quarantine", "reports", "checkpoints",
                                                "logs")]
    assert "s3:PutObject" in s["WritePrefixes"]["actions"]
    assert s["UseTenantKey"]["resources"] == [KEY] and s["UseTenantKey"]["actions"] == list(KMS_WRITE_ACTIONS)
    log_group = ("arn:${data.aws_partition.inputs_partition.partition}:logs:${var.region}:${var.account_id}"
                 ":log-group:/tenantlake/${var.tenant_id}/emr")
    assert s["WriteTenantLogGroup"]["resources"] == [log_group, f"{log_group}:*"]
    # Versioning is the pipeline's recovery mechanism: the job role never deletes or lists versions.
    actions = {a for st in s.values() for a in st["actions"]}
    assert not actions & {"s3:DeleteObjectVersion", "s3:ListBucketVersions"}
    assert "DeleteObjectVersions" not in s and "ListWholeLake" not in s


LOG_GROUP = ("arn:${data.aws_partition.inputs_partition.partition}:logs:${var.region}:${var.account_id}"
             ":log-group:/tenantlake/${var.tenant_id}/emr")


def test_erasure_role_permissions(tenant_module):
    s = document_statements(tenant_module, "roles_erasure_permissions")
    assert list(s) == ["ListWholeLake", "LocateBucket", "ReadPrefixes", "WritePrefixes", "DeleteObjectVersions",
                       "UseTenantKey", "WriteTenantLogGroup", "WriteTenantTables"]
    # The verification scan lists every version of the whole bucket (prefix ""): no s3:prefix condition.
    assert s["ListWholeLake"] == {**s["ListWholeLake"], "actions": ["s3:ListBucket", "s3:ListBucketVersions"],
                                  "resources": [LAKE]}
    assert "condition" not in s["ListWholeLake"]
    assert s["LocateBucket"]["actions"] == ["s3:GetBucketLocation"] and s["LocateBucket"]["resources"] == [LAKE]
    writable = [p for p in model.LAKE_PREFIXES if p != "artifacts"]
    assert s["ReadPrefixes"]["actions"] == list(S3_READ_ACTIONS) == ["s3:GetObject", "s3:GetObjectVersion"]
    assert s["ReadPrefixes"]["resources"] == [f"{LAKE}/{p}/*" for p in model.LAKE_PREFIXES]
    assert s["WritePrefixes"]["actions"] == list(S3_WRITE_ACTIONS)
    assert s["WritePrefixes"]["resources"] == [f"{LAKE}/{p}/*" for p in writable]
    assert s["DeleteObjectVersions"]["actions"] == ["s3:DeleteObjectVersion"]
    assert s["DeleteObjectVersions"]["resources"] == [f"{LAKE}/{p}/*" for p in writable]
    assert not any(r.startswith(f"{LAKE}/artifacts/") for sid in ("WritePrefixes", "DeleteObjectVersions")
                   for r in s[sid]["resources"])
    assert s["UseTenantKey"]["resources"] == [KEY] and s["UseTenantKey"]["actions"] == list(KMS_WRITE_ACTIONS)
    assert s["WriteTenantLogGroup"]["actions"] == list(LOG_WRITE_ACTIONS)
    assert s["WriteTenantLogGroup"]["resources"] == [LOG_GROUP, f"{LOG_GROUP}:*"]
    # The same Glue grants as the job role (the silver DELETE, expire_snapshots, the gold recompute).
    job = document_statements(tenant_module, "roles_job_execution_permissions")
    assert s["WriteTenantTables"] == job["WriteTenantTables"]


def test_only_the_erasure_role_may_delete_or_list_object_versions(tenant_module):
    for name, doc in tenant_module["data"]["aws_iam_policy_document"].items():
        actions = {a for st in doc["statement"] for a in st["actions"]}
        if actions & {"s3:DeleteObjectVersion", "s3:ListBucketVersions"}:
            # The gateway endpoint's policy passes them through; identity policies decide who may.
            assert name in ("roles_erasure_permissions", "endpoints_gateway_policy"), name


def test_ingest_writer_may_only_put_under_landing(tenant_module):
    s = document_statements(tenant_module, "roles_ingest_writer_permissions")
    assert list(s) == ["PutOnlyPrefixes", "UseTenantKey"]
    assert s["PutOnlyPrefixes"]["actions"] == ["s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"]
    assert s["PutOnlyPrefixes"]["resources"] == [f"{LAKE}/landing/*"]


GLUE = "arn:${data.aws_partition.inputs_partition.partition}:glue:${var.region}:${var.account_id}"
TENANT_KEY = '${replace(var.tenant_id, "-", "_")}'


def test_consumer_reads_reports_gold_through_lake_formation_and_queries_in_its_workgroup(tenant_module):
    s = document_statements(tenant_module, "roles_consumer_permissions")
    assert list(s) == ["ListOwnPrefixes", "LocateBucket", "ReadPrefixes", "PutOnlyPrefixes", "UseTenantKey",
                       "ReadTenantTables", "QueryInTenantWorkgroup", "ReadTablesThroughLakeFormation"]
    assert s["ReadPrefixes"]["actions"] == ["s3:GetObject", "s3:GetObjectVersion"]
    # No gold/: its files hold every column; the consumer reads gold through Lake Formation (granted columns only).
    assert s["ReadPrefixes"]["resources"] == [f"{LAKE}/reports/*", f"{LAKE}/athena/consumer/*"]
    assert not [v for v in s["ListOwnPrefixes"]["condition"][0]["values"] if v.startswith("gold")]
    assert s["ReadTablesThroughLakeFormation"]["actions"] == ["lakeformation:GetDataAccess"]
    assert s["PutOnlyPrefixes"]["resources"] == [f"{LAKE}/athena/consumer/*"]
    assert "s3:DeleteObject" not in s["PutOnlyPrefixes"]["actions"]
    # Athena writes the results SSE-KMS with the tenant key, as the consumer.
    assert s["UseTenantKey"]["actions"] == list(KMS_WRITE_ACTIONS)
    assert s["ReadTenantTables"]["actions"] == list(GLUE_READ_ACTIONS)
    assert s["ReadTenantTables"]["resources"] == [f"{GLUE}:catalog", "${aws_glue_catalog_database.catalog_gold.arn}",
                                                  f"{GLUE}:table/{TENANT_KEY}_gold/*"]
    assert s["QueryInTenantWorkgroup"]["actions"] == list(ATHENA_QUERY_ACTIONS)
    assert s["QueryInTenantWorkgroup"]["resources"] == ["${aws_athena_workgroup.athena_workgroup.arn}"]


def test_the_readers_of_personal_data_get_a_policy_for_their_own_workgroup_and_results(tenant_module):
    s = document_statements(tenant_module, "roles_personal_data_reader_permissions")
    assert list(s) == ["ListOwnPrefixes", "LocateBucket", "ReadPrefixes", "PutOnlyPrefixes", "UseTenantKey",
                       "ReadTenantTables", "QueryInTenantWorkgroup", "ReadTablesThroughLakeFormation"]
    assert s["ReadPrefixes"]["resources"] == s["PutOnlyPrefixes"]["resources"] == [f"{LAKE}/athena/personal/*"]
    assert s["QueryInTenantWorkgroup"]["resources"] == ["${aws_athena_workgroup.athena_personal_workgroup.arn}"]
    policy = tenant_module["resource"]["aws_iam_policy"]["roles_personal_data_reader_policy"]
    assert policy["name"] == "${var.tenant_id}-lake-personal-data-reader"
    assert policy["policy"] == "${data.aws_iam_policy_document.roles_personal_data_reader_permissions.json}"
    workgroup = tenant_module["resource"]["aws_athena_workgroup"]["athena_personal_workgroup"]
    assert workgroup["configuration"]["enforce_workgroup_configuration"] is True
    assert workgroup["configuration"]["result_configuration"]["output_location"] == (
        "s3://${var.tenant_id}-${var.region}-lake/athena/personal/")
    assert tenant_module["resource"]["aws_athena_workgroup"]["athena_workgroup"]["configuration"][
        "result_configuration"]["output_location"] == "s3://${var.tenant_id}-${var.region}-lake/athena/consumer/"


def test_job_role_commits_to_the_tenants_silver_and_gold_tables_only(tenant_module):
    s = document_statements(tenant_module, "roles_job_execution_permissions")
    tables = s["WriteTenantTables"]
    assert tables["actions"] == list(GLUE_WRITE_ACTIONS)
    assert {"glue:CreateTable", "glue:UpdateTable"} <= set(tables["actions"])
    assert tables["resources"] == [
        f"{GLUE}:catalog", "${aws_glue_catalog_database.catalog_silver.arn}",
        "${aws_glue_catalog_database.catalog_gold.arn}", f"{GLUE}:table/{TENANT_KEY}_silver/*",
        f"{GLUE}:table/{TENANT_KEY}_gold/*"]
    assert "QueryInTenantWorkgroup" not in s
    assert not any(a.startswith(("glue:", "athena:")) for st in document_statements(
        tenant_module, "roles_ingest_writer_permissions").values() for a in st["actions"])


def test_no_s3_or_kms_action_on_a_wildcard_resource(tenant_module):
    for name, doc in tenant_module["data"]["aws_iam_policy_document"].items():
        for st in doc["statement"]:
            if any(a == "*" or a.startswith(("s3:", "kms:")) for a in st["actions"]):
                assert "*" not in st.get("resources", []), (name, st["sid"])
