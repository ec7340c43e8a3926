"""`make destroy-all` of the shared tenants: acme, globex, initech and the platform units (the network, the Lake
Formation settings of both regions), dependents first.

Other modules share these tenants (``applied_tenant``), so this module runs after them: its one test is
marked ``last_in_session`` (tests/conftest.py moves it to the end, also after a shuffle). Under ``make test``
(pytest-xdist workers, ``--dist loadfile``) it is the last module of the unit that holds every module using
these tenants (tests/conftest.py, ``SCHEDULE_UNITS``; tests/test_schedule.py checks the unit), so on its
worker nothing needs them after it. Each worker has its own emulator, so it destroys only that worker's
tenants (the fixtures apply them first where that worker had not).
"""
from __future__ import annotations

import pytest

from infra.platform_lake_formation import iam_allowed_defaults
from tests.conftest import TEST_STATE_DIR, run_make
from tests.integration.conftest import NETWORK, REGION, TENANT

pytestmark = pytest.mark.integration
LF_WEST, LF_CENTRAL = "_platform/lake-formation-eu-west-1", "_platform/lake-formation-eu-central-1"


@pytest.mark.last_in_session
def test_destroy_all_removes_the_tenants_then_the_network(lake, network, globex, boto_session, cfg):
    result = run_make("destroy-all")
    assert result.returncode == 0, result.tail()
    lines = result.stdout.splitlines()
    done = {unit: max(i for i, line in enumerate(lines) if line.startswith(f"[{unit}] ") and "Destroy complete" in line)
            for unit in (TENANT, "globex", NETWORK)}
    first_network_line = min(i for i, line in enumerate(lines) if line.startswith(f"[{NETWORK}] "))
    assert done[TENANT] < first_network_line and done["globex"] < first_network_line < done[NETWORK]
    # initech is applied when the streaming tests ran (tests/integration/test_streaming_initech.py), else not.
    assert ("[initech] unit 'initech': not applied (its state holds no resources); nothing to destroy" in lines
            or any(line.startswith("[initech] ") and "Destroy complete" in line for line in lines))
    assert lines[-1] == (f"destroy {LF_CENTRAL}=0, {LF_WEST}=0, {NETWORK}=0, acme=0, globex=0, initech=0")
    # The settings after the tenants of their region; destroyed, they name no administrator and still no default.
    assert done[TENANT] < max(i for i, line in enumerate(lines) if line.startswith(f"[{LF_WEST}] ")
                              and "Destroy complete" in line)
    settings = boto_session("lakeformation", REGION).get_data_lake_settings()["DataLakeSettings"]
    assert not settings.get("DataLakeAdmins") and iam_allowed_defaults(settings) == []
    assert not (TEST_STATE_DIR / "tenants" / TENANT / "lake.json").exists()

    for tenant in (TENANT, "globex"):
        s3 = boto_session("s3", REGION)
        assert not [b["Name"] for b in s3.list_buckets()["Buckets"] if b["Name"].startswith(f"{tenant}-")]
        iam = boto_session("iam", REGION)
        assert not [r["RoleName"] for r in iam.list_roles()["Roles"] if tenant in r["RoleName"]]
        kms = boto_session("kms", REGION)
        assert not [a for a in kms.list_aliases()["Aliases"] if a["AliasName"] == f"alias/{tenant}-lake"]
        logs = boto_session("logs", REGION)
        assert not [g for g in logs.describe_log_groups()["logGroups"] if tenant in g["logGroupName"]]
        emr = boto_session("emr-containers", REGION)
        assert not [c for c in emr.list_virtual_clusters()["virtualClusters"]
                    if c["state"] == "RUNNING" and tenant in c["name"]]
        ec2 = boto_session("ec2", REGION)
        endpoints = ec2.describe_vpc_endpoints(Filters=[{"Name": "tag:tenant", "Values": [tenant]}])["VpcEndpoints"]
        assert [e for e in endpoints if e["State"].lower() not in ("deleted", "deleting")] == []
        groups = ec2.describe_security_groups(Filters=[{"Name": "tag:tenant", "Values": [tenant]}])["SecurityGroups"]
        assert groups == []
        lf = boto_session("lakeformation", REGION)
        assert not [t["TagKey"] for t in lf.list_lf_tags()["LFTags"] if t["TagKey"].startswith(f"{tenant}-")]
        assert not [r for r in lf.list_resources()["ResourceInfoList"] if f":::{tenant}-" in r["ResourceArn"]]
        assert not [g for g in lf.list_permissions()["PrincipalResourcePermissions"]
                    if f":role/{tenant}-" in g["Principal"]["DataLakePrincipalIdentifier"]]
    # The network: no endpoint of it left anywhere, and its fixture VPC is gone.
    ec2 = boto_session("ec2", REGION)
    left = ec2.describe_vpc_endpoints(Filters=[{"Name": "tag:component", "Values": ["platform-network"]}])["VpcEndpoints"]
    assert [e["VpcEndpointId"] for e in left if e["State"].lower() not in ("deleted", "deleting")] == []
    assert ec2.describe_vpcs(Filters=[{"Name": "vpc-id", "Values": network["vpc_ids"]}])["Vpcs"] == []
    # The tenant key cannot vanish at once: AWS (and moto) schedule it for deletion.
    key = boto_session("kms", REGION).describe_key(KeyId=lake["kms_key_arn"])["KeyMetadata"]
    assert key["KeyState"] == "PendingDeletion"
