"""policies/access_matrix.yaml: the file's rules, its rendered table, and EVERY cell against applied tenants.

The integration test applies the matrix's three tenants with the shared ``applied_tenant`` fixture
(acme and globex side by side on the platform network's one VPC and one S3 gateway endpoint, as two
namespaces of one shared EKS cluster; endpoint ids come from each tenant's outputs; initech for its
Firehose role), reads their policies back from the emulator
(``policies.tenant_policies``), and evaluates every cell with ``@cloud-copilot/iam-simulate`` in one
node process. A failing cell prints principal, action, key, context, expected, got and the decisive
statements.
"""
from __future__ import annotations

import collections

import pytest

from policies import access_matrix, matrix_check, simulate
from policies.access_matrix import MatrixError, parse
from policies.matrix_requests import RequestBuilder, principal_arn
from policies.tenant_policies import read_applied_tenant

MIN_CELLS = 60
# Context keys the cells depend on: if the simulator dropped one as "not applicable", a cell could pass
# for the wrong reason.
RELIED_ON_KEYS = {"aws:SecureTransport", "aws:SourceVpce", "aws:PrincipalArn", "aws:PrincipalIsAWSService",
                  "aws:SourceArn", "aws:SourceAccount", "s3:prefix", "s3:x-amz-server-side-encryption",
                  "s3:x-amz-server-side-encryption-aws-kms-key-id", "kms:ViaService",
                  "kms:EncryptionContext:aws:s3:arn", "kms:EncryptionContext:aws:kinesis:arn", "aws:ViaAWSService",
                  # the maintenance scheduler's cells (a run's execution role, the service a role is passed to)
                  "emr-containers:ExecutionRoleArn", "iam:PassedToService",
                  # create-only landing writes (issue 41)
                  "s3:if-none-match", "s3:ObjectCreationOperation",
                  # SSE-C (issue 42: the encryption denies judge only headers that are present)
                  "s3:x-amz-server-side-encryption-customer-algorithm",
                  # the jobs' signals (issue 54): a metric in the tenant's namespace, events under its source
                  "cloudwatch:namespace", "events:source", "events:detail-type"}


@pytest.fixture(scope="module")
def matrix():
    return access_matrix.load()


# ---- the file ------------------------------------------------------------------------------------
def test_matrix_covers_every_principal_kind_action_and_decision(matrix):
    assert len(matrix.cells) >= MIN_CELLS
    assert {c.principal for c in matrix.cells} == set(access_matrix.PRINCIPAL_KINDS)
    assert {c.action for c in matrix.cells} == set(access_matrix.ACTIONS)
    assert {c.expect for c in matrix.cells} == set(access_matrix.DECISIONS)
    # Every context dimension is exercised away from its default at least once.
    for field, values in access_matrix.CONTEXT_FIELDS.items():
        assert {c.context[field] for c in matrix.cells} == set(values), field
    # Every prefix of the lake, and the job logs prefix, appear in at least one cell.
    from tenant_model import LAKE_PREFIXES

    prefixes = {c.key.split("/", 1)[0] for c in matrix.cells if c.bucket == "lake" and c.key}
    assert set(LAKE_PREFIXES) | {"logs"} <= prefixes


def test_every_orchestration_role_and_signal_has_allowed_and_denied_cells(matrix):
    """Issue 54: the state machine's, schedules' and arrival rules' roles and the jobs' signals each have a cell that
    allows what they are for and one that denies the same on another tenant (or outside their scope)."""
    for kind in ("pipeline_runner_role", "pipeline_scheduler_role", "pipeline_events_role", "events_service",
                 "cloudwatch_service"):
        decisions = {c.expect for c in matrix.cells if c.principal == kind}
        assert "Allowed" in decisions and decisions - {"Allowed"}, kind
    for action in ("cloudwatch:PutMetricData", "events:PutEvents"):
        cells = [c for c in matrix.cells if c.action == action and c.principal == "job_role"]
        assert {(c.context["signal"], c.expect) for c in cells} == {("own", "Allowed"), ("other", "ImplicitlyDenied")}
    cross_tenant = {c.action for c in matrix.cells if c.principal == "pipeline_runner_role" and c.tenant == "other"}
    assert cross_tenant >= {"emr-containers:StartJobRun", "emr-containers:CancelJobRun", "states:StartExecution",
                            "sns:Publish"}


def test_the_three_defects_of_issue_16_have_cells(matrix):
    cells = {c.id: c for c in matrix.cells}
    assert cells["job-put-logs"].expect == "Allowed" and cells["job-put-logs"].key.startswith("logs/")
    assert cells["firehose-put-landing"].context["endpoint"] == "none"
    assert cells["firehose-put-landing"].expect == "Allowed"
    assert cells["other-tenant-misscoped-get-silver"].expect == "ExplicitlyDenied"
    assert cells["other-tenant-misscoped-get-silver"].because == "DenyPrincipalsOutsideTenant"


def test_create_only_landing_writes_have_cells(matrix):
    """Issue 41: a landing PUT without If-None-Match is denied to the ingest writer and to admins, not to
    Firehose (unique keys, no header); a create-only PUT and the parts of a multipart upload pass."""
    cells = {c.id: c for c in matrix.cells}
    denied = [cells["ingest-put-landing-unconditional"], cells["admin-put-landing-unconditional"]]
    assert all(c.expect == "ExplicitlyDenied" and c.because == "DenyUnconditionalLandingWrites"
               and c.context["write_condition"] == "none" and c.key.startswith("landing/") for c in denied)
    assert cells["ingest-put-landing"].context["write_condition"] == "if_none_match"
    assert cells["ingest-put-landing"].expect == cells["admin-put-landing-create-only"].expect == "Allowed"
    assert cells["ingest-put-landing-upload-part"].expect == "Allowed"
    firehose = cells["firehose-put-landing"]
    assert (firehose.context["write_condition"], firehose.expect) == ("none", "Allowed")


def test_uploads_are_the_tenant_keys_and_multipart_uploads_pass(matrix):
    """Issue 42: a put naming SSE-S3, SSE-C, another key or aws:kms without a key id is denied; requests naming no
    encryption (UploadPart, CompleteMultipartUpload, a plain put) pass, for the job role and the ingest writer:
    the lake's default encryption, SSE-KMS with the tenant key, encrypts them."""
    cells = {c.id: c for c in matrix.cells}
    denied = {"job-put-sse-s3": "DenyNonKmsUploads", "job-put-other-tenant-key": "DenyWrongKeyUploads",
              "job-put-no-key-id": "DenyAwsManagedKeyUploads", "job-put-sse-c": "DenyCustomerKeyUploads",
              "job-create-multipart-other-tenant-key": "DenyWrongKeyUploads",
              "ingest-create-multipart-landing-sse-s3": "DenyNonKmsUploads", "admin-put-sse-c": "DenyCustomerKeyUploads"}
    assert {i: (cells[i].expect, cells[i].because) for i in denied} == {
        i: ("ExplicitlyDenied", sid) for i, sid in denied.items()}
    headerless = ["job-put-no-encryption-header", "job-upload-part", "job-complete-multipart",
                  "ingest-put-landing-upload-part", "ingest-complete-multipart-landing"]
    assert all(cells[i].context["sse"] == "none" and cells[i].expect == "Allowed" for i in headerless)
    parts = [cells[i] for i in ("job-upload-part", "ingest-put-landing-upload-part")]
    assert all(c.context["write_condition"] == "upload_part" for c in parts)  # s3:ObjectCreationOperation false
    completion = cells["ingest-complete-multipart-landing"]
    assert completion.key.startswith("landing/") and completion.context["write_condition"] == "if_none_match"
    assert {cells[i].principal for i in headerless} == {"job_role", "ingest_writer"}


def test_rendered_table_in_modules_readme_is_current(matrix, capsys):
    assert access_matrix.main(["--check"]) == 0, capsys.readouterr().err
    table = access_matrix.render_table(matrix)
    assert table in access_matrix.README.read_text()
    assert table.count("\n| ") == len(matrix.cells) + 1  # header + one row per cell


VALID = {"tenants": {"owner": "acme", "other": "globex", "streaming": "initech"},
         "identity_policies": {"full": {"Version": "2012-10-17", "Statement": []}}}


@pytest.mark.parametrize("cell, message", [
    ({"principal": "job_role", "action": "s3:GetObject", "key": "a", "expect": "Allowed"}, "cell 1: id is required"),
    ({"id": "x", "principal": "jobrole", "action": "s3:GetObject", "key": "a", "expect": "Allowed"},
     "cell 1 (x): principal 'jobrole' is not one of job_role, "),
    ({"id": "x", "principal": "job_role", "action": "s3:GetObject", "key": "a", "expect": "Denied"},
     "cell 1 (x): expect 'Denied' is not one of Allowed, ExplicitlyDenied, ImplicitlyDenied"),
    ({"id": "x", "principal": "job_role", "action": "s3:GetObject", "expect": "Allowed"},
     "cell 1 (x): key is required for s3:GetObject"),
    ({"id": "x", "principal": "job_role", "action": "s3:GetObject", "key": "a", "expect": "Allowed",
      "context": {"tls": "yes"}}, "cell 1 (x): context.tls 'yes' is not one of True, False"),
    ({"id": "x", "principal": "admin", "action": "s3:GetObject", "key": "a", "expect": "Allowed"},
     "cell 1 (x): identity 'applied' needs a role of a tenant; admin has none"),
    ({"id": "x", "principal": "anonymous", "action": "s3:GetObject", "key": "a", "expect": "Allowed",
      "identity": "full"}, "cell 1 (x): a request of anonymous has no identity policy"),
    ({"id": "x", "principal": "job_role", "action": "s3:GetObject", "key": "a", "expect": "ImplicitlyDenied",
      "because": "ReadPrefixes"}, "cell 1 (x): because names a statement; an implicit deny has none"),
    ({"id": "x", "principal": "job_role", "action": "s3:GetObject", "key": "a", "expect": "Allowed", "colour": 1},
     "cell 1 (x): unknown field 'colour'"),
    ({"id": "x", "principal": "job_role", "action": "sts:AssumeRoleWithWebIdentity", "key": "erasure_role",
      "expect": "Allowed"}, "cell 1 (x): sts:AssumeRoleWithWebIdentity is the action of a pod's service account"),
    ({"id": "x", "principal": "job_service_account", "action": "sts:AssumeRoleWithWebIdentity", "key": "consumer",
      "expect": "Allowed"}, "cell 1 (x): key (the role assumed) 'consumer' is not one of job_role, erasure_role"),
])
def test_a_bad_cell_fails_in_one_line_naming_cell_and_field(cell, message):
    with pytest.raises(MatrixError) as err:
        parse({**VALID, "cells": [cell]}, "m.yaml")
    assert str(err.value).startswith(f"m.yaml: {message}") and "\n" not in str(err.value)


def test_a_duplicate_cell_id_is_refused():
    cell = {"id": "x", "principal": "job_role", "action": "s3:GetObject", "key": "a", "expect": "Allowed"}
    with pytest.raises(MatrixError, match=r"^m.yaml: cell 2 \(x\): id is used by another cell$"):
        parse({**VALID, "cells": [cell, cell]}, "m.yaml")


# ---- every cell, against applied tenants -----------------------------------------------------------
@pytest.fixture(scope="module")
def client(aws_env):
    """A factory ``client(service, region)`` for boto3 clients on the session emulator."""
    import boto3

    def make(service: str, region: str = "eu-west-1"):
        return boto3.client(service, region_name=region, endpoint_url=aws_env["AWS_ENDPOINT_URL"],
                            verify=aws_env["AWS_CA_BUNDLE"], aws_access_key_id=aws_env["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=aws_env["AWS_SECRET_ACCESS_KEY"])

    return make


@pytest.fixture(scope="module")
def applied(matrix, applied_tenant, client):
    return {tenant: read_applied_tenant(applied_tenant(tenant), client) for tenant in matrix.tenants.values()}


@pytest.fixture(scope="module")
def outcomes(matrix, applied, client):
    # The deployer: the identity terraform ran as, with the same credentials (the module resolves it the
    # same way for its admin list: aws_iam_session_context turns a role session into the role ARN).
    caller = client("sts").get_caller_identity()["Arn"]
    builder = RequestBuilder(matrix, applied, admin_arn=principal_arn(caller), admin_caller_arn=caller)
    return matrix_check.check(matrix, builder)


@pytest.mark.integration
def test_policies_are_read_back_from_the_applied_tenants(matrix, applied, client):
    owner, other, streaming = (applied[matrix.tenants[r]] for r in ("owner", "other", "streaming"))
    assert owner.key_arn != other.key_arn and owner.lake_bucket != other.lake_bucket
    # A shared cluster: both tenants' requests come through the same endpoint, so the cross-tenant cells
    # are decided by the principal allow-lists and the key policies, not by a network boundary.
    assert owner.gateway_endpoint_id == other.gateway_endpoint_id
    for tenant in applied.values():
        assert {s["Sid"] for s in tenant.lake_policy["Statement"]} >= {"DenyInsecureTransport",
                                                                        "DenyOutsideTenantVpcEndpoints"}
        assert tenant.gateway_endpoint_id.startswith("vpce-") and tenant.gateway_endpoint_policy["Statement"]
        assert all(role.policies for role in tenant.roles.values())
        # The cells that allow a put naming no encryption rest on the lake's default encryption: the tenant key.
        rules = client("s3", tenant.region).get_bucket_encryption(Bucket=tenant.lake_bucket)[
            "ServerSideEncryptionConfiguration"]["Rules"]
        assert [(r["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"],
                 r["ApplyServerSideEncryptionByDefault"]["KMSMasterKeyID"]) for r in rules] == [("aws:kms", tenant.key_arn)]
    assert set(streaming.firehose_roles) >= {matrix.streaming_dataset}


@pytest.mark.integration
def test_every_cell_decides_as_expected(outcomes):
    failed = [o.report() for o in outcomes if not o.ok]
    by_kind = collections.Counter((o.cell.principal, o.ok) for o in outcomes)
    print(f"access matrix: {len(outcomes)} cells, {len(outcomes) - len(failed)} as expected, {len(failed)} failed; "
          + ", ".join(f"{kind} {by_kind[(kind, True)]}/{by_kind[(kind, True)] + by_kind[(kind, False)]}"
                      for kind in access_matrix.PRINCIPAL_KINDS))
    assert not failed, f"{len(failed)} of {len(outcomes)} cells failed:\n" + "\n".join(failed)


@pytest.mark.integration
def test_no_cell_relies_on_a_context_key_the_simulator_ignored(outcomes):
    ignored = {o.cell.id: sorted(set(o.result.ignored_context_keys) & RELIED_ON_KEYS) for o in outcomes}
    assert {cell: keys for cell, keys in ignored.items() if keys} == {}
    # A pod's web-identity cells rest on its token's sub and aud (simulate.mjs puts them back).
    for outcome in (o for o in outcomes if o.cell.principal in access_matrix.SERVICE_ACCOUNT_KINDS):
        assert outcome.result.ignored_context_keys == (), outcome.cell.id
        assert sorted(k.rsplit(":", 1)[1] for k in outcome.result.completed_context_keys) == ["aud", "sub"]


@pytest.mark.integration
def test_each_emr_role_trusts_the_service_accounts_of_its_own_runs(matrix, applied):
    """The trust policies read back from IAM: Terraform computed the base36 of each role's name as the AWS CLI
    does (``tenant_model.base36_role_name``), so each role admits its own runs' pods only (issue 31)."""
    import tenant_model

    for tenant in applied.values():
        patterns = {}
        for kind in ("job_role", "erasure_role"):
            role = tenant.roles[kind]
            (statement,) = role.trust["Statement"]
            (sub,) = [v for k, v in statement["Condition"]["StringLike"].items() if k.endswith(":sub")]
            patterns[kind] = sub
            assert sub == tenant_model.emr_service_account_pattern(tenant.emr_namespace, role.account_id, role.name)
        assert patterns["job_role"] != patterns["erasure_role"] and not patterns["erasure_role"].endswith("-*")


def test_the_pinned_simulator_is_installed():
    assert simulate.PINNED_VERSION == "0.1.173"
    assert simulate.installed_version() == simulate.PINNED_VERSION


# ---- Lake Formation (issue 44): who may select which column, read back from the applied owner tenant -------------
@pytest.fixture(scope="module")
def lf_matrix():
    from policies import lake_formation_matrix

    return lake_formation_matrix.load()


@pytest.fixture(scope="module")
def lake_formation(matrix, lf_matrix, applied_tenant, client):
    """The tag step on the owner tenant's tables as the jobs write them (``spark_jobs.tables.lf_tags``; the emulator holds no
    Glue tables, the local catalog being a Hadoop catalog), then its Lake Formation read back: ``(state, owner
    outputs, the tagged tables' plans)``."""
    from policies.lake_formation import read_lake_formation
    from spark_jobs.contract.model import available_datasets, load_contract
    from spark_jobs.tables import lf_tags
    from tests.spark_jobs.declared_columns import declared_columns

    owner = applied_tenant(matrix.tenants["owner"])
    databases = owner["glue_database_names"]
    tag = lf_tags.Classification(owner["lake_formation"]["classification_tag"])
    plans = []
    for dataset in available_datasets():
        contract = load_contract(dataset)
        plans += lf_tags.plan_dataset(contract, databases,
                                      lambda layer, table, c=contract: declared_columns(c, layer, table))
    assert set(lf_matrix.datasets) <= set(available_datasets())
    lf_tags.apply(client("lakeformation", owner["region"]), tag, plans)
    tables: dict[str, dict[str, list[str]]] = {}
    for plan in plans:
        tables.setdefault(plan.layer, {})[plan.table] = [*plan.personal, *plan.not_personal]
    for cell in lf_matrix.cells:  # cells on columns and tables no tag step has seen
        if cell.table:
            columns = tables.setdefault(cell.layer, {}).setdefault(cell.table, [])
            if cell.column and cell.column not in columns:
                columns.append(cell.column)
    return read_lake_formation(owner, client, tables), owner, plans


@pytest.mark.integration
def test_every_lake_formation_cell_decides_as_expected(matrix, lf_matrix, lake_formation, applied_tenant):
    from policies import lake_formation_matrix

    state, owner, _ = lake_formation
    other = applied_tenant(matrix.tenants["other"])
    readers = owner["lake_formation"]["personal_data_readers"]
    assert readers, f"tenant {owner['tenant_id']} names no reader of personal data (lake_formation)"
    principals = {"consumer": owner["consumer_role_arn"], "personal_data_reader": readers[0],
                  "job_role": owner["job_execution_role_arn"], "erasure_role": owner["erasure_role_arn"],
                  "ingest_writer": owner["ingest_writer_role_arn"], "other_tenant_consumer": other["consumer_role_arn"]}
    outcomes = lake_formation_matrix.check(lf_matrix, state, principals, owner["glue_database_names"])
    failed = [o.report() for o in outcomes if not o.ok]
    print(f"lake formation matrix: {len(outcomes)} cells, {len(outcomes) - len(failed)} as expected")
    assert not failed, f"{len(failed)} of {len(outcomes)} cells failed:\n" + "\n".join(failed)


@pytest.mark.integration
def test_the_consumer_selects_exactly_the_non_personal_columns_of_every_gold_table(lake_formation):
    """Every table of every contract, not only the cells': the consumer's columns are the tag step's none ones,
    gold only; a reader of personal data selects every gold column."""
    state, owner, plans = lake_formation
    reader = owner["lake_formation"]["personal_data_readers"][0]
    for plan in plans:
        columns = [*plan.personal, *plan.not_personal]
        consumer = state.columns_allowed(owner["consumer_role_arn"], plan.database, plan.table, columns)
        assert set(consumer) == (set(plan.not_personal) if plan.layer == "gold" else set()), plan.display
        expected_reader = set(columns) if plan.layer == "gold" else set()
        assert set(state.columns_allowed(reader, plan.database, plan.table, columns)) == expected_reader, plan.display
    personal = {(p.table, c) for p in plans if p.layer == "gold" for c in p.personal}
    assert {("clickstream_user_sessions", "user_id"), ("clickstream_user_sessions", "session_id")} <= personal


@pytest.mark.integration
def test_the_cells_are_evaluated_in_the_default_permissions_state_the_matrix_names(lf_matrix, lake_formation):
    """Issue 52: the matrix says which state of default permissions it evaluated, and it is the one read back."""
    from policies import lake_formation_matrix

    state, owner, _ = lake_formation
    assert lf_matrix.default_permissions == "none"
    assert lake_formation_matrix.default_permissions_state(state, owner["glue_database_names"]) == "none"
    assert "`default_permissions: none`" in lake_formation_matrix.render_table(lf_matrix)


@pytest.mark.integration
def test_lake_formation_as_applied_leaves_nothing_to_iam(matrix, lake_formation, applied_tenant, client):
    """No database of the tenants is left to IAMAllowedPrincipals; the unit managing the settings made the deployer
    an administrator and gave new databases and tables no IAMAllowedPrincipals default; the gold location is read
    with the tenant's data-access role."""
    from policies.lake_formation import IAM_ALLOWED_PRINCIPALS

    state, owner, plans = lake_formation
    for plan in plans:
        assert not state.iam_allowed(plan.database, plan.table), plan.display
    assert state.database_tags == {owner["glue_database_names"][layer]: {
        owner["lake_formation"]["classification_tag"]: "pii", owner["lake_formation"]["layer_tag"]: layer}
        for layer in owner["glue_database_names"]}
    settings = state.settings
    caller = principal_arn(client("sts").get_caller_identity()["Arn"])
    assert caller in [a["DataLakePrincipalIdentifier"] for a in settings.get("DataLakeAdmins", [])]
    for default in ("CreateDatabaseDefaultPermissions", "CreateTableDefaultPermissions"):
        assert IAM_ALLOWED_PRINCIPALS not in str(settings.get(default) or []), default
    gold = owner["lake_formation"]["registered_locations"]["gold"]
    assert gold == f"arn:aws:s3:::{owner['lake_bucket_name']}/gold"
    assert state.registered[gold] == owner["lake_formation"]["data_access_role_arn"]
    assert not [arn for arn in state.registered if arn.startswith(f"arn:aws:s3:::{owner['lake_bucket_name']}/")
                and arn != gold]  # silver stays unregistered: no consumer reads it
    assert sorted(state.tag_values[owner["lake_formation"]["classification_tag"]]) == ["none", "pii"]


# ---- issue 52: personal data only behind the door, from the consumer's side ------------------------------------------
@pytest.mark.integration
def test_a_readers_query_results_are_denied_to_the_consumer(matrix, applied, client, outcomes):
    """A query in the readers' workgroup writes its results where that workgroup enforces (the emulator applies the
    workgroup's configuration as AWS does, whatever the request names); the simulator then judges who may read them,
    with the policies read back: the reader, not the consumer, directly or through Athena."""
    owner = applied[matrix.tenants["owner"]]
    athena = client("athena", owner.region)
    query = athena.start_query_execution(
        QueryString="SELECT user_id, page_views FROM acme_gold.clickstream_user_sessions", WorkGroup=owner.personal_workgroup,
        ResultConfiguration={"OutputLocation": f"s3://{owner.lake_bucket}/athena/consumer/"})["QueryExecutionId"]
    location = athena.get_query_execution(QueryExecutionId=query)["QueryExecution"]["ResultConfiguration"]["OutputLocation"]
    assert location == f"s3://{owner.lake_bucket}/athena/personal/{query}.csv"
    key = location.split("/", 3)[3]
    caller = client("sts").get_caller_identity()["Arn"]
    builder = RequestBuilder(matrix, applied, admin_arn=principal_arn(caller), admin_caller_arn=caller)
    cells = {c.id: c for c in matrix.cells}
    for template in ("consumer-get-personal-results", "consumer-get-personal-results-via-athena"):
        assert matrix_check.readable(builder, cells[template], [key]) == [], template
    assert matrix_check.readable(builder, cells["reader-get-results-via-athena"], [key]) == [key]
    # The cells that say so, as evaluated with every other.
    by_id = {o.cell.id: o for o in outcomes}
    assert all(by_id[i].ok for i in ("consumer-get-personal-results", "consumer-get-personal-results-via-athena",
                                     "reader-get-results-via-athena", "reader-athena-query"))
    assert cells["reader-athena-query"].key == "personal"


DEMO_DATASET, DEMO_RECORDS = "clickstream", "1000"


@pytest.fixture(scope="module")
def demo_lake(matrix, applied, client, aws_env):
    """What `make demo` does for clickstream, smaller, on the applied owner tenant (s3a, validated, with bad records):
    ``(owner, every object key of the lake, the user ids of the landing records)``."""
    import json
    import os
    import re
    import subprocess
    import sys

    from infra.local.s3a_jars import ensure_jars
    from tests.conftest import REPO_ROOT, TEST_STATE_DIR

    owner = applied[matrix.tenants["owner"]]
    env = {**os.environ, **aws_env, "TENANTLAKE_STATE_DIR": str(TEST_STATE_DIR), "SPARK_LOCAL_IP": "127.0.0.1",
           "TENANTLAKE_SPARK_JARS": ",".join(str(j) for j in ensure_jars())}
    for args in (["datagen", "--tenant", owner.tenant_id, "--dataset", DEMO_DATASET, "--records", DEMO_RECORDS,
                  "--bad-rate", "0.02"],
                 ["run-all", "--tenant", owner.tenant_id, "--dataset", DEMO_DATASET, "--allow-warn"]):
        done = subprocess.run([sys.executable, "-m", "spark_jobs", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                              text=True, timeout=1200)
        assert done.returncode == 0, f"{args[0]}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    s3 = client("s3", owner.region)
    keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=owner.lake_bucket)
            for o in page.get("Contents", [])]
    ids: set[str] = set()
    for key in keys:
        if key.startswith(f"landing/{DEMO_DATASET}/"):
            ids |= set(re.findall(r"user-[0-9]{4}", s3.get_object(Bucket=owner.lake_bucket, Key=key)["Body"].read().decode()))
    assert len(ids) > 10, json.dumps(sorted(ids))
    return owner, keys, ids


def _holding(s3, bucket: str, keys: list[str], ids: set[str]) -> dict[str, list[str]]:
    """Key -> the ids its bytes hold: as text, a gzip member decompressed, a Parquet file's values read with pyarrow."""
    import gzip
    import io

    import pyarrow.parquet as pq

    found = {}
    for key in keys:
        data = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        if data[:4] == b"PAR1":
            data = str(pq.read_table(io.BytesIO(data)).to_pylist()).encode()
        hits = sorted(i for i in ids if i.encode() in data)
        if hits:
            found[key] = hits
    return found


@pytest.mark.integration
def test_no_object_the_consumer_may_read_holds_a_user_id_while_the_quarantine_does(matrix, applied, client, demo_lake):
    """Every object of the lake, judged by the simulator against the consumer's policies read back (directly through
    the tenant's endpoint, and through Athena): those it may get are read whole, and none holds a clickstream user id
    of the landing records; the quarantine, which it may not get, does."""
    owner, keys, ids = demo_lake
    caller = client("sts").get_caller_identity()["Arn"]
    builder = RequestBuilder(matrix, applied, admin_arn=principal_arn(caller), admin_caller_arn=caller)
    cells = {c.id: c for c in matrix.cells}
    readable = sorted(set(matrix_check.readable(builder, cells["consumer-get-reports"], keys))
                      | set(matrix_check.readable(builder, cells["consumer-get-own-results"], keys)))
    assert any(k.startswith(f"reports/silver/{DEMO_DATASET}/") and k.endswith("summary.json") for k in readable)
    assert not [k for k in readable if not k.startswith(("reports/", "athena/consumer/"))]
    s3 = client("s3", owner.region)
    assert _holding(s3, owner.lake_bucket, readable, ids) == {}
    quarantine = [k for k in keys if k.startswith(f"quarantine/{DEMO_DATASET}/") and k.endswith(".parquet")]
    assert quarantine and set(quarantine).isdisjoint(readable)
    assert _holding(s3, owner.lake_bucket, quarantine, ids)


@pytest.mark.integration
def test_each_gold_table_is_in_glue_and_its_column_tags_read_back_from_the_table(matrix, applied, client, demo_lake):
    """The run registered its silver and gold tables in the emulator's Glue (spark_jobs/io/glue_tables.py) and tagged
    their columns: GetResourceLFTags of each gold table answers every column's tag."""
    from spark_jobs.contract.model import load_contract
    from spark_jobs.lake.config import gold_table_name
    from spark_jobs.tables import lf_tags
    from tests.spark_jobs.declared_columns import declared_columns

    owner, _, _ = demo_lake
    glue, lf = client("glue", owner.region), client("lakeformation", owner.region)
    contract = load_contract(DEMO_DATASET)
    for gold in contract.gold:
        table = gold_table_name(DEMO_DATASET, gold)
        glue_table = glue.get_table(DatabaseName=owner.glue_databases["gold"], Name=table)["Table"]
        assert glue_table["Parameters"]["table_type"] == "ICEBERG"
        assert glue_table["Parameters"]["metadata_location"].startswith(f"s3://{owner.lake_bucket}/gold/{table}/metadata/")
        columns = [c["Name"] for c in glue_table["StorageDescriptor"]["Columns"]]
        assert columns == list(declared_columns(contract, "gold", table)), table
        answer = lf.get_resource_lf_tags(Resource={"Table": {"DatabaseName": owner.glue_databases["gold"], "Name": table}},
                                         ShowAssignedLFTags=True)
        tags = {c["Name"]: c["LFTags"][0]["TagValues"][0] for c in answer["LFTagsOnColumns"]}
        plan = lf_tags.plan_table(contract, "gold", owner.glue_databases["gold"], table, columns, gold)
        assert tags == {**{c: "pii" for c in plan.personal}, **{c: "none" for c in plan.not_personal}}, table
    assert glue.get_table(DatabaseName=owner.glue_databases["silver"], Name=DEMO_DATASET)["Table"]["Parameters"][
        "table_type"] == "ICEBERG"
