"""Terratest-style: the sample layout of a shared EKS cluster on the emulator, through the make targets a
user runs.  `make apply TENANT=acme` applies the platform units it depends on first (the network,
tenants/_platform/network, and the account's Lake Formation settings, tenants/_platform/lake-formation-eu-west-1),
then acme, whose apply the runner lets through only once those settings hold no IAM_ALLOWED_PRINCIPALS default; `globex` is applied alongside on the same VPC; the network and both tenants re-plan clean;
`make destroy-all` destroys the tenants, then the network; nothing is left.  One apply per unit, against this
session's emulator (tests/conftest.py); globex's apply is a fixture the tests that need it ask for, and the
destroy is a module of its own, last in the whole run (tests/integration/test_destroy_all.py); the fixtures
both use are in tests/integration/conftest.py. The tests pass in any order (make test-shuffled).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import uuid

import pytest

from infra import terragrunt as tg
from infra.local.network import fixture_ids
from infra.terragrunt.cli import load_layout
from tests.conftest import REPO_ROOT, TEST_STATE_DIR, run_make
from tests.integration.conftest import NETWORK, REGION, STATE_BUCKET, TENANT

pytestmark = pytest.mark.integration
LAKE_FORMATION = "_platform/lake-formation-eu-west-1"

# ---- bad input first: nothing may reach the emulator --------------------------------------------
def test_bad_tenant_file_fails_before_terraform_and_creates_nothing(emulator, boto_session):
    folder = REPO_ROOT / ".local" / "test-tenants" / uuid.uuid4().hex[:8]
    (folder / "badco").mkdir(parents=True)
    try:
        shutil.copy2(REPO_ROOT / "tenants" / "root.hcl", folder / "root.hcl")
        (folder / "badco" / "terragrunt.hcl").write_text(
            'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\ninputs = {\n'
            '  tenant_id = "badco"\n  region = "us-east-1"\n  data_classification = ["gdpr"]\n'
            f'  account_id = "123456789012"\n  vpc_ids = ["{fixture_ids.fixture_vpc_id("badco")}"]\n}}\n')
        result = run_make("apply", "TENANT=badco", f"TENANTS_DIR={folder}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert result.returncode != 0
    assert "error: tenant 'badco': region: us-east-1 is outside the EU but data_classification includes gdpr" \
        in result.stderr.splitlines()
    assert "terraform" not in result.stdout.lower()
    buckets = [b["Name"] for b in boto_session("s3", "us-east-1").list_buckets()["Buckets"]]
    assert not [b for b in buckets if "badco" in b]
    assert not (TEST_STATE_DIR / "tenants" / "badco").exists()
    vpcs = boto_session("ec2", "us-east-1").describe_vpcs(
        Filters=[{"Name": "tag:tenant", "Values": ["badco"]}])["Vpcs"]
    assert vpcs == []


# ---- apply ---------------------------------------------------------------------------------------
def test_apply_writes_lake_json_with_the_module_outputs(lake, cfg, emulator):
    assert lake["tenant_id"] == TENANT and lake["region"] == REGION
    assert lake["lake_bucket_name"] == cfg.lake_bucket_name
    assert lake["s3_endpoint"] == emulator.endpoint and lake["ca_bundle"] == emulator.ca_bundle
    assert lake["truststore"] == emulator.truststore
    for key in ("kms_key_arn", "job_execution_role_arn", "emr_virtual_cluster_id", "log_group_name",
                "gateway_endpoint_ids", "lake_prefixes"):
        assert lake[key], key
    import os

    os.environ["TENANTLAKE_STATE_DIR"] = str(TEST_STATE_DIR)
    try:
        assert tg.outputs(TENANT)["lake_bucket_name"] == lake["lake_bucket_name"]
    finally:
        del os.environ["TENANTLAKE_STATE_DIR"]


def test_state_lives_in_the_emulator_state_bucket_not_on_disk(lake, s3):
    head = s3.head_object(Bucket=STATE_BUCKET, Key=f"tenants/{TENANT}/terraform.tfstate")
    assert head["ContentLength"] > 0
    state = json.loads(s3.get_object(Bucket=STATE_BUCKET, Key=f"tenants/{TENANT}/terraform.tfstate")["Body"].read())
    assert any(r["type"] == "aws_s3_bucket" for r in state["resources"])
    assert s3.get_bucket_versioning(Bucket=STATE_BUCKET)["Status"] == "Enabled"
    work = TEST_STATE_DIR / "tenants" / TENANT
    assert not (work / "terraform.tfstate").exists()
    backend = json.loads((work / ".terraform" / "terraform.tfstate").read_text())
    assert backend["backend"]["type"] == "s3" and "resources" not in backend


def test_bucket_encryption_is_kms_with_the_tenant_key(lake, s3):
    rules = s3.get_bucket_encryption(Bucket=lake["lake_bucket_name"])["ServerSideEncryptionConfiguration"]["Rules"]
    default = rules[0]["ApplyServerSideEncryptionByDefault"]
    assert default["SSEAlgorithm"] == "aws:kms"
    assert default["KMSMasterKeyID"] == lake["kms_key_arn"]


def test_versioning_and_public_access_block(lake, s3):
    assert s3.get_bucket_versioning(Bucket=lake["lake_bucket_name"])["Status"] == "Enabled"
    block = s3.get_public_access_block(Bucket=lake["lake_bucket_name"])["PublicAccessBlockConfiguration"]
    assert block == {"BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True,
                     "RestrictPublicBuckets": True}


def test_the_lake_inventory_is_daily_parquet_of_every_version_into_the_log_bucket_with_the_key(lake, s3):
    """The AWS provider applies modules/inventory.py on the emulator and reads it back as put (moto's
    corrections: infra/local/moto_server.py); the output names where its reports go."""
    config = s3.get_bucket_inventory_configuration(Bucket=lake["lake_bucket_name"], Id="lake-daily")["InventoryConfiguration"]
    destination = config["Destination"]["S3BucketDestination"]
    assert (config["IsEnabled"], config["IncludedObjectVersions"], config["Schedule"]) == (True, "All", {"Frequency": "Daily"})
    assert (destination["Bucket"], destination["Format"], destination["Prefix"]) == (
        f"arn:aws:s3:::{lake['log_bucket_name']}", "Parquet", "inventory")
    assert destination["Encryption"] == {"SSEKMS": {"KeyId": lake["kms_key_arn"]}}
    assert set(config["OptionalFields"]) == {"Size", "LastModifiedDate", "StorageClass", "ETag", "IsMultipartUploaded",
                                             "EncryptionStatus"}
    assert lake["inventory"] == {"id": "lake-daily", "bucket": lake["log_bucket_name"], "prefix": "inventory"}


def test_every_documented_lifecycle_rule_per_prefix(lake, s3, cfg):
    rules = s3.get_bucket_lifecycle_configuration(Bucket=lake["lake_bucket_name"])["Rules"]
    by_prefix = {r.get("Filter", {}).get("Prefix", r.get("Prefix", "")): r for r in rules}
    assert all(r["Status"] == "Enabled" for r in rules)
    bucket_wide = by_prefix[""]
    assert bucket_wide["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"] == 7
    assert bucket_wide["NoncurrentVersionExpiration"]["NoncurrentDays"] == 30
    for prefix in ("landing", "bronze", "quarantine", "logs"):  # logs/: EMR job logs (the logUri of every run)
        assert by_prefix[f"{prefix}/"]["Expiration"]["Days"] == cfg.effective_retention_days[prefix], prefix
    transitions = {t["StorageClass"]: t["Days"] for t in by_prefix["bronze/"]["Transitions"]}
    assert transitions == {"STANDARD_IA": 30, "GLACIER_IR": 90}
    assert by_prefix["checkpoints/"]["NoncurrentVersionExpiration"]["NoncurrentDays"] == 7


def test_bucket_policy_denies_plain_http_other_keys_and_other_endpoints(lake, s3):
    policy = json.loads(s3.get_bucket_policy(Bucket=lake["lake_bucket_name"])["Policy"])
    statements = {s["Sid"]: s for s in policy["Statement"]}
    tls = statements["DenyInsecureTransport"]
    assert tls["Effect"] == "Deny" and _values(tls["Condition"]["Bool"]["aws:SecureTransport"]) == ["false"]
    # Encryption: each deny judges its header only when the request carries it (Null false), so UploadPart and
    # CompleteMultipartUpload, which carry none, pass and take the default encryption
    # (test_bucket_encryption_is_kms_with_the_tenant_key: the tenant key) (issue 42).
    sse, key_id = "s3:x-amz-server-side-encryption", "s3:x-amz-server-side-encryption-aws-kms-key-id"
    encryption = {sid: {op: {k: _values(v) for k, v in keys.items()} for op, keys in statements[sid]["Condition"].items()}
                  for sid in ("DenyNonKmsUploads", "DenyWrongKeyUploads", "DenyAwsManagedKeyUploads",
                              "DenyCustomerKeyUploads")}
    assert encryption == {
        "DenyNonKmsUploads": {"Null": {sse: ["false"]}, "StringNotEquals": {sse: ["aws:kms"]}},
        "DenyWrongKeyUploads": {"Null": {key_id: ["false"]}, "StringNotEquals": {key_id: [lake["kms_key_arn"]]}},
        "DenyAwsManagedKeyUploads": {"StringEquals": {sse: ["aws:kms"]}, "Null": {key_id: ["true"]}},
        "DenyCustomerKeyUploads": {"Null": {"s3:x-amz-server-side-encryption-customer-algorithm": ["false"]}}}
    assert all(statements[sid]["Effect"] == "Deny" and _values(statements[sid]["Action"]) == ["s3:PutObject"]
               for sid in encryption)
    assert "DenyUnencryptedUploads" not in statements
    vpce = statements["DenyOutsideTenantVpcEndpoints"]
    assert vpce["Effect"] == "Deny"
    vpce_condition = {k.lower(): v for k, v in vpce["Condition"]["StringNotEquals"].items()}
    assert sorted(_values(vpce_condition["aws:sourcevpce"])) == sorted(lake["gateway_endpoint_ids"].values())
    # The allow-list names the tenant's roles as applied (acme has no streams: no Firehose role), plus admins.
    principals = statements["DenyPrincipalsOutsideTenant"]
    allowed = set(_values(principals["Condition"]["ArnNotLike"]["aws:PrincipalArn"]))
    roles = {lake["job_execution_role_arn"], lake["ingest_writer_role_arn"], lake["consumer_role_arn"],
             lake["erasure_role_arn"]}
    assert principals["Effect"] == "Deny" and roles <= allowed
    # The readers of personal data are on the allow-list (their query results, issue 52), not exempt from the
    # endpoint rule; what else is on it (the admins, Lake Formation's data-access role) is exempt.
    readers = set(lake["lake_formation"]["personal_data_readers"])
    assert readers <= allowed
    assert allowed - roles - readers == set(_values(vpce["Condition"]["ArnNotLike"]["aws:PrincipalArn"]))


def _values(value):
    return value if isinstance(value, list) else [value]


def test_the_sample_layout_puts_acme_and_globex_on_the_shared_network():
    import os

    os.environ.setdefault("TENANTLAKE_STATE_ACCOUNT_ID", tg.LOCAL_ACCOUNT_ID)
    runs = {r.name: r for r in load_layout(REPO_ROOT / "tenants")}
    # On the shared network, after the account's Lake Formation settings in their region.
    assert [d.unit for d in runs[TENANT].dependencies] == [NETWORK, LAKE_FORMATION] == [
        d.unit for d in runs["globex"].dependencies]
    assert runs[TENANT].config.vpc_ids == () == runs["globex"].config.vpc_ids


def test_acme_uses_the_shared_networks_endpoints_and_creates_none(lake, network, boto_session):
    """The network unit was applied first (acme's inputs are its outputs), and acme has no endpoint of its own."""
    assert lake["gateway_endpoint_ids"] == network["gateway_endpoint_ids"]
    assert lake["interface_endpoint_ids"] == network["interface_endpoint_ids"]
    (vpc_id,) = network["vpc_ids"]
    assert sorted(lake["interface_endpoint_ids"]) == [f"{vpc_id}.{s}" for s in ("kms", "logs", "sts")]
    ec2 = boto_session("ec2", REGION)
    assert ec2.describe_vpc_endpoints(Filters=[{"Name": "tag:tenant", "Values": [TENANT]}])["VpcEndpoints"] == []
    assert ec2.describe_security_groups(Filters=[{"Name": "tag:tenant", "Values": [TENANT]}])["SecurityGroups"] == []


def test_one_s3_gateway_endpoint_on_every_route_table_of_the_cluster_vpc(network, boto_session):
    ec2 = boto_session("ec2", REGION)
    (vpc_id,) = network["vpc_ids"]
    endpoints = ec2.describe_vpc_endpoints(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["VpcEndpoints"]
    gateways = [e for e in endpoints if e["VpcEndpointType"] == "Gateway" and e["State"].lower() == "available"]
    assert [e["VpcEndpointId"] for e in gateways] == [network["gateway_endpoint_ids"][vpc_id]]
    (endpoint,) = gateways
    assert endpoint["ServiceName"] == f"com.amazonaws.{REGION}.s3"
    tables = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["RouteTables"]
    assert len(tables) == 3  # the main one plus the fixture VPC's two private ones
    assert sorted(endpoint["RouteTableIds"]) == sorted(t["RouteTableId"] for t in tables) == sorted(
        network["route_table_ids"][vpc_id])
    assert _tag_dict(endpoint["Tags"])["component"] == "platform-network" and "tenant" not in _tag_dict(endpoint["Tags"])


def test_the_network_endpoint_policies_allow_the_served_tenants_and_the_cluster_only(network, boto_session):
    ec2 = boto_session("ec2", REGION)
    (vpc_id,) = network["vpc_ids"]
    (gateway,) = ec2.describe_vpc_endpoints(VpcEndpointIds=[network["gateway_endpoint_ids"][vpc_id]])["VpcEndpoints"]
    statements = {s["Sid"]: s for s in json.loads(gateway["PolicyDocument"])["Statement"]}
    lakes = [f"arn:aws:s3:::{t}-{REGION}-lake" for t in ("acme", "globex")]
    assert sorted(_values(statements["TenantBucketsOnly"]["Resource"])) == sorted([*lakes, *(f"{a}/*" for a in lakes)])
    assert _values(statements["ClusterReadOnly"]["Action"]) == ["s3:GetObject"]
    assert sorted(_values(statements["ClusterReadOnly"]["Resource"])) == [
        f"arn:aws:s3:::al2023-repos-{REGION}-de612dc2/*", f"arn:aws:s3:::prod-{REGION}-starport-layer-bucket/*"]
    (kms,) = ec2.describe_vpc_endpoints(VpcEndpointIds=[network["interface_endpoint_ids"][f"{vpc_id}.kms"]])["VpcEndpoints"]
    (only,) = json.loads(kms["PolicyDocument"])["Statement"]
    assert _values(only["Resource"]) == [f"arn:aws:kms:{REGION}:123456789012:key/*"]
    assert sorted(_values(only["Condition"]["ForAnyValue:StringEquals"]["kms:ResourceAliases"])) == [
        "alias/acme-lake", "alias/globex-lake"]
    assert network["tenants"] == ["acme", "globex"]


def test_job_role_trust_has_the_exact_sub_and_aud(lake, boto_session, cfg):
    from tenant_model import base36_role_name

    iam = boto_session("iam", REGION)
    role_name = lake["job_execution_role_arn"].rsplit("/", 1)[1]
    trust = iam.get_role(RoleName=role_name)["Role"]["AssumeRolePolicyDocument"]
    if isinstance(trust, str):
        trust = json.loads(trust)
    (statement,) = trust["Statement"]
    issuer = cfg.oidc_provider_arn.split(":oidc-provider/", 1)[1]
    assert statement["Action"] in ("sts:AssumeRoleWithWebIdentity", ["sts:AssumeRoleWithWebIdentity"])
    assert _values(statement["Principal"]["Federated"]) == [cfg.oidc_provider_arn]
    assert _values(statement["Condition"]["StringLike"][f"{issuer}:sub"]) == [
        f"system:serviceaccount:emr-{TENANT}:emr-containers-sa-*-*-123456789012-{base36_role_name(role_name)}"]
    assert base36_role_name(role_name) == base36_role_name(f"{TENANT}-emr-job-execution")  # terraform computed it
    assert _values(statement["Condition"]["StringEquals"][f"{issuer}:aud"]) == ["sts.amazonaws.com"]


def test_virtual_cluster_is_running_in_the_tenant_namespace(lake, boto_session):
    emr = boto_session("emr-containers", REGION)
    cluster = emr.describe_virtual_cluster(id=lake["emr_virtual_cluster_id"])["virtualCluster"]
    assert cluster["state"] == "RUNNING"
    assert cluster["containerProvider"]["info"]["eksInfo"]["namespace"] == f"emr-{TENANT}" == lake["emr_namespace"]


def test_glue_databases_and_athena_workgroup_are_the_tenants(lake, boto_session, cfg):
    """The table catalog on AWS, as applied: a Glue database per table layer at its prefix of the lake, and a
    workgroup whose results are SSE-KMS with the tenant key under athena/consumer/, enforced."""
    assert lake["glue_database_names"] == cfg.glue_databases == {"silver": "acme_silver", "gold": "acme_gold"}
    glue = boto_session("glue", REGION)
    for layer, name in lake["glue_database_names"].items():
        database = glue.get_database(Name=name)["Database"]
        assert database["LocationUri"] == f"s3://{lake['lake_bucket_name']}/{layer}/"
        arn = f"arn:aws:glue:{REGION}:123456789012:database/{name}"
        assert _has_tags(glue.get_tags(ResourceArn=arn)["Tags"], cfg.standard_tags()), name
    athena = boto_session("athena", REGION)
    workgroup = athena.get_work_group(WorkGroup=lake["athena_workgroup_name"])["WorkGroup"]
    assert workgroup["Name"] == cfg.name("athena_workgroup") == "acme-lake"
    config = workgroup["Configuration"]
    assert config["EnforceWorkGroupConfiguration"] is True
    assert config["ResultConfiguration"] == {
        "OutputLocation": f"s3://{lake['lake_bucket_name']}/athena/consumer/",
        "EncryptionConfiguration": {"EncryptionOption": "SSE_KMS", "KmsKey": lake["kms_key_arn"]}}
    # The readers of personal data's own workgroup (issue 52): their results where the consumer cannot read.
    personal = athena.get_work_group(WorkGroup=lake["personal_data_reader"]["workgroup"])["WorkGroup"]
    assert personal["Name"] == cfg.name("athena_personal_workgroup") == "acme-lake-personal"
    assert personal["Configuration"]["EnforceWorkGroupConfiguration"] is True
    assert personal["Configuration"]["ResultConfiguration"]["OutputLocation"] == (
        f"s3://{lake['lake_bucket_name']}/athena/personal/")


def test_lake_formation_tags_grants_and_settings_are_applied(lake, boto_session, cfg):
    """`make apply TENANT=acme` creates acme's Lake Formation (modules/lake_formation.py): its two LF-tags, each
    database tagged pii and its layer, the consumer's grant on gold's non-personal columns, the privacy officer's
    on every gold column, the gold location registered with the data-access role, and (acme manages eu-west-1's
    settings) no IAMAllowedPrincipals default for new databases and tables. Who may select what, evaluated from
    these: tests/policies/test_access_matrix.py."""
    lf = boto_session("lakeformation", REGION)
    outputs = lake["lake_formation"]
    assert (outputs["classification_tag"], outputs["layer_tag"]) == (cfg.name("lf_tag_classification"),
                                                                      cfg.name("lf_tag_layer")) == ("acme-classification", "acme-layer")
    tags = {t["TagKey"]: sorted(t["TagValues"]) for t in lf.list_lf_tags()["LFTags"]}
    assert tags["acme-classification"] == ["none", "pii"] and tags["acme-layer"] == ["gold", "silver"]
    for layer, database in lake["glue_database_names"].items():
        assigned = lf.get_resource_lf_tags(Resource={"Database": {"Name": database}}, ShowAssignedLFTags=True)
        assert {t["TagKey"]: t["TagValues"] for t in assigned["LFTagOnDatabase"]} == {
            "acme-classification": ["pii"], "acme-layer": [layer]}, database

    def grants(principal: str) -> list[dict]:
        return [g for g in lf.list_permissions()["PrincipalResourcePermissions"]
                if g["Principal"]["DataLakePrincipalIdentifier"] == principal]

    (consumer,) = [g for g in grants(lake["consumer_role_arn"]) if g["Resource"]["LFTagPolicy"]["ResourceType"] == "TABLE"]
    assert sorted(consumer["Permissions"]) == ["DESCRIBE", "SELECT"]
    assert {t["TagKey"]: t["TagValues"] for t in consumer["Resource"]["LFTagPolicy"]["Expression"]} == {
        "acme-classification": ["none"], "acme-layer": ["gold"]}
    assert outputs["personal_data_readers"] == ["arn:aws:iam::123456789012:role/acme-privacy-officer"]
    assert len(grants(outputs["personal_data_readers"][0])) == 2  # its database and its tables
    assert len(grants(lake["job_execution_role_arn"])) == 4  # databases, tables, the gold location, tagging
    registered = {r["ResourceArn"]: r["RoleArn"] for r in lf.list_resources()["ResourceInfoList"]}
    assert registered[f"arn:aws:s3:::{lake['lake_bucket_name']}/gold"] == outputs["data_access_role_arn"]
    settings = lf.get_data_lake_settings()["DataLakeSettings"]
    assert settings["DataLakeAdmins"] and "IAM_ALLOWED_PRINCIPALS" not in str(
        settings.get("CreateDatabaseDefaultPermissions")) + str(settings.get("CreateTableDefaultPermissions"))
    # Created after those settings (the platform unit first), so the databases hand no table to IAM alone (the emulator
    # copies the account's defaults into a new database as AWS does).
    glue = boto_session("glue", REGION)
    for database in lake["glue_database_names"].values():
        assert not glue.get_database(Name=database)["Database"].get("CreateTableDefaultPermissions"), database


def test_tags_on_each_resource(lake, boto_session, cfg):
    expected = cfg.standard_tags()
    assert expected["owner"] == "acme-data-team" and expected["data_classification"] == "gdpr"
    s3 = boto_session("s3", REGION)
    for bucket in (lake["lake_bucket_name"], lake["log_bucket_name"]):
        assert _has_tags(_tag_dict(s3.get_bucket_tagging(Bucket=bucket)["TagSet"]), expected), bucket
    kms = boto_session("kms", REGION)
    assert _has_tags(_tag_dict(kms.list_resource_tags(KeyId=lake["kms_key_arn"])["Tags"], "TagKey", "TagValue"), expected)
    iam = boto_session("iam", REGION)
    for output in ("job_execution_role_arn", "ingest_writer_role_arn", "consumer_role_arn", "erasure_role_arn"):
        role = iam.get_role(RoleName=lake[output].rsplit("/", 1)[1])["Role"]
        assert _has_tags(_tag_dict(role.get("Tags", [])), expected), output
    logs = boto_session("logs", REGION)
    (group,) = [g for g in logs.describe_log_groups(logGroupNamePrefix=lake["log_group_name"])["logGroups"]
                if g["logGroupName"] == lake["log_group_name"]]
    assert _has_tags(logs.list_tags_for_resource(resourceArn=group["arn"].removesuffix(":*"))["tags"], expected)
    emr = boto_session("emr-containers", REGION)
    assert _has_tags(emr.describe_virtual_cluster(id=lake["emr_virtual_cluster_id"])["virtualCluster"]["tags"], expected)


def _has_tags(actual: dict, expected: dict) -> bool:
    """Every standard tag with its exact value (resources may add their own, e.g. bucket_purpose)."""
    missing = {k: v for k, v in expected.items() if actual.get(k) != v}
    assert not missing, f"missing or different tags: {missing} (got {actual})"
    return True


def _tag_dict(tags, key="Key", value="Value"):
    return {t[key]: t[value] for t in tags}


# ---- globex alongside, on the same VPC; everything re-plans clean ----------------------------------
def test_globex_applied_alongside_on_the_same_vpc_leaves_acme_untouched_and_acme_replans_clean(lake, s3, network, globex):
    replan, globex_out = globex["replan"], globex["out"]
    assert replan.returncode == 0, replan.tail()  # 0 = no changes
    assert "No changes." in replan.stdout
    assert globex["returncode"] == 0, "make apply TENANT=globex failed:\n" + "\n".join(globex_out.splitlines()[-25:])
    # The network was applied by this emulator and is unchanged: globex's apply does not apply it again.
    assert f"dependency {NETWORK} is up to date (applied by this emulator); skipped" in globex_out
    # Nor the account's Lake Formation settings, which acme's apply put in place (one unit for the region).
    assert f"dependency {LAKE_FORMATION} is up to date (applied by this emulator); skipped" in globex_out
    assert "that its state does not hold" not in globex_out + replan.stdout  # no endpoint made twice

    before, after = globex["before"], globex["after"]
    assert after["acme_state"]["ETag"] == before["acme_state"]["ETag"]
    assert after["acme_state"].get("VersionId") == before["acme_state"].get("VersionId")
    assert after["network_state"]["ETag"] == before["network_state"]["ETag"]
    assert after["acme_policy"] == before["acme_policy"]
    globex_lake = globex["lake"]
    assert globex_lake["lake_bucket_name"] == "globex-eu-west-1-lake" != lake["lake_bucket_name"]
    assert globex_lake["kms_key_arn"] != lake["kms_key_arn"]
    # Two tenants, one VPC, one S3 gateway endpoint: both lakes are reachable through it, and only through it.
    assert globex_lake["gateway_endpoint_ids"] == lake["gateway_endpoint_ids"] == network["gateway_endpoint_ids"]
    for bucket in (lake["lake_bucket_name"], globex_lake["lake_bucket_name"]):
        statements = {x["Sid"]: x for x in json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"])["Statement"]}
        condition = {k.lower(): v for k, v in statements["DenyOutsideTenantVpcEndpoints"]["Condition"][
            "StringNotEquals"].items()}
        assert sorted(_values(condition["aws:sourcevpce"])) == sorted(network["gateway_endpoint_ids"].values())


def test_the_network_and_both_tenants_replan_clean(lake, globex):
    """After both applies, neither the network, nor the account's Lake Formation settings, nor globex (nor acme, above)
    has anything to change."""
    import os

    env = {**os.environ, "TENANTLAKE_STATE_DIR": str(TEST_STATE_DIR)}
    plans = {unit: subprocess.Popen(["make", "-s", "plan", arg, "TF_ARGS=-detailed-exitcode"], cwd=REPO_ROOT, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for unit, arg in ((NETWORK, f"UNIT={NETWORK}"), (LAKE_FORMATION, f"UNIT={LAKE_FORMATION}"),
                               ("globex", "TENANT=globex"))}
    for unit, proc in plans.items():
        out, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, f"make plan {unit} -detailed-exitcode (0 = no changes):\n" + "\n".join(
            out.splitlines()[-25:])
        assert "No changes." in out


def test_destroying_the_network_under_its_tenants_is_refused(lake, globex):
    result = run_make("destroy", f"UNIT={NETWORK}")
    ours = [line for line in result.stderr.splitlines() if not line.startswith("make:")]
    assert result.returncode != 0
    assert ours == [f"error: unit '{NETWORK}': acme, globex still depend on it and are applied; destroy them first "
                    "(make destroy-all destroys every unit, dependents first)"]
