"""infra/terragrunt/adoption.py: adopting what a killed apply left never reaches real AWS by default, and
with --adopt-orphans only adopts what is tagged with the tenant.  Against the session's emulator, with
resources created here and the "already exists" diagnostics terraform prints for them."""
from __future__ import annotations

import json

import pytest

from infra import terragrunt as tg
from infra.terragrunt import adoption
from tests.infra.terragrunt.conftest import tenant_file, write_tenant

pytestmark = pytest.mark.integration
TENANT = "adoptco"
REGION = "eu-west-1"
ROLE = f"{TENANT}-emr-job-execution"
BUCKET = f"{TENANT}-{REGION}-lake"


def _already_exists(kind: str, name: str, address: str) -> list[str]:
    return [f"Error: creating {kind} ({name}): operation error: https response error StatusCode: 409, "
            f"AlreadyExists: {name} already exists", "", f"  with {address},",
            f"  on main.tf.json line 1, in resource.{address}:"]


ORPHANS = [*_already_exists("IAM Role", ROLE, "aws_iam_role.roles_job_execution"),
           *_already_exists("S3 Bucket", BUCKET, "aws_s3_bucket.lake_bucket")]


@pytest.fixture
def orphans(scratch_tenants, boto_session, aws_env, emulator, monkeypatch):
    """adoptco's file, its role (tagged tenant=adoptco) and lake bucket (tag set by the test), and the env."""
    write_tenant(scratch_tenants, TENANT, tenant_file(TENANT, REGION, '"internal"'))
    run = tg.load_tenant(TENANT, scratch_tenants)
    iam, s3 = boto_session("iam", REGION), boto_session("s3", REGION)
    iam.create_role(RoleName=ROLE, AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
                    Tags=[{"Key": "tenant", "Value": TENANT}])
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    monkeypatch.delenv(adoption.ADOPT_FLAG_ENV, raising=False)
    yield run, s3, {**aws_env, "TENANTLAKE_AWS_ENDPOINT": emulator.endpoint}
    iam.delete_role(RoleName=ROLE)
    s3.delete_bucket(Bucket=BUCKET)


def _adopt(run, folder, env):
    lines: list[str] = []
    count = adoption.adopt_orphans(run, folder, ORPHANS, env, lines.append)
    return count, lines


def test_local_runs_adopt_without_being_asked(orphans, tmp_path):
    run, _, env = orphans
    count, lines = _adopt(run, tmp_path, env)
    imports = json.loads((tmp_path / adoption.IMPORTS_FILE).read_text())["import"]
    assert count == 2 and {i["to"]: i["id"] for i in imports} == {
        "aws_iam_role.roles_job_execution": ROLE, "aws_s3_bucket.lake_bucket": BUCKET}
    assert lines == [f"tenant '{TENANT}': adopting 2 resource(s) an interrupted apply created but never recorded: "
                     "aws_iam_role.roles_job_execution, aws_s3_bucket.lake_bucket"]


def test_against_aws_nothing_is_adopted_unless_asked(orphans, tmp_path, monkeypatch):
    run, _, env = orphans
    monkeypatch.setenv("TENANTLAKE_ENV", "aws")
    with pytest.raises(tg.TerragruntError) as err:
        _adopt(run, tmp_path, env)
    assert "\n" not in str(err.value)
    assert str(err.value).startswith(f"tenant '{TENANT}': already exists but not in the state: "
                                     "aws_iam_role.roles_job_execution, aws_s3_bucket.lake_bucket; ")
    assert f"apply --tenant {TENANT} --adopt-orphans" in str(err.value)
    assert not (tmp_path / adoption.IMPORTS_FILE).exists()


def test_asked_against_aws_a_resource_not_tagged_with_the_tenant_is_refused(orphans, tmp_path, monkeypatch):
    run, s3, env = orphans
    monkeypatch.setenv("TENANTLAKE_ENV", "aws")
    monkeypatch.setenv(adoption.ADOPT_FLAG_ENV, "1")
    s3.put_bucket_tagging(Bucket=BUCKET, Tagging={"TagSet": [{"Key": "tenant", "Value": "someoneelse"}]})
    with pytest.raises(tg.TerragruntError) as err:
        _adopt(run, tmp_path, env)
    assert "\n" not in str(err.value)
    assert f"aws_s3_bucket.lake_bucket ({BUCKET}: not tagged tenant={TENANT})" in str(err.value)
    assert "aws_iam_role" not in str(err.value).split("not adoptable: ", 1)[1]  # the role is tagged: not refused
    assert not (tmp_path / adoption.IMPORTS_FILE).exists()  # all or nothing


def test_asked_against_aws_resources_tagged_with_the_tenant_are_adopted(orphans, tmp_path, monkeypatch):
    run, s3, env = orphans
    monkeypatch.setenv("TENANTLAKE_ENV", "aws")
    monkeypatch.setenv(adoption.ADOPT_FLAG_ENV, "1")
    s3.put_bucket_tagging(Bucket=BUCKET, Tagging={"TagSet": [{"Key": "tenant", "Value": TENANT}]})
    count, _ = _adopt(run, tmp_path, env)
    assert count == 2 and (tmp_path / adoption.IMPORTS_FILE).exists()


def test_catalog_databases_and_the_workgroup_are_adopted_by_catalog_id_and_name(orphans, tmp_path, monkeypatch,
                                                                               boto_session):
    """The Glue database's import id is "<catalog id>:<name>"; against AWS both kinds are checked by tag."""
    run, _, env = orphans
    glue, athena = boto_session("glue", REGION), boto_session("athena", REGION)
    database, workgroup = f"{TENANT}_silver", f"{TENANT}-lake"
    glue.create_database(DatabaseInput={"Name": database}, Tags={"tenant": TENANT})
    athena.create_work_group(Name=workgroup, Tags=[{"Key": "tenant", "Value": "someoneelse"}])
    lines = [*_already_exists("Glue Catalog Database", database, "aws_glue_catalog_database.catalog_silver"),
             "Error: creating Athena WorkGroup (" + workgroup + "): InvalidRequestException: WorkGroup is already created",
             "", "  with aws_athena_workgroup.workgroup_workgroup,", ""]
    try:
        monkeypatch.setenv("TENANTLAKE_ENV", "aws")
        monkeypatch.setenv(adoption.ADOPT_FLAG_ENV, "1")
        with pytest.raises(tg.TerragruntError) as err:
            adoption.adopt_orphans(run, tmp_path, lines, env, print)
        assert str(err.value).split("not adoptable: ", 1)[1].startswith(
            f"aws_athena_workgroup.workgroup_workgroup ({workgroup}: not tagged tenant={TENANT})")
        account = boto_session("sts", REGION).get_caller_identity()["Account"]
        athena.tag_resource(ResourceARN=f"arn:aws:athena:{REGION}:{account}:workgroup/{workgroup}",
                            Tags=[{"Key": "tenant", "Value": TENANT}])
        assert adoption.adopt_orphans(run, tmp_path, lines, env, print) == 2
        imports = {i["to"]: i["id"] for i in json.loads((tmp_path / adoption.IMPORTS_FILE).read_text())["import"]}
        assert imports == {"aws_glue_catalog_database.catalog_silver": f"{account}:{database}",
                           "aws_athena_workgroup.workgroup_workgroup": workgroup}
    finally:
        glue.delete_database(Name=database)
        athena.delete_work_group(WorkGroup=workgroup)
