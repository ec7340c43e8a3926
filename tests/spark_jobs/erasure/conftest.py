"""One lake for every erasure test on the emulator: the gdpr tenant ``eraseco``, applied once per session.

Each test works on a dataset of its own in that lake (clickstream, a month-partitioned copy, ``contacts``
for exact matching and numeric keys), with ids that no other dataset holds: an erase request reads the
whole bucket, and must find only its own subjects.
"""
from __future__ import annotations

import json
import sys

import pytest

from infra.local.network import fixture_ids
from tests import shell
from tests.conftest import REPO_ROOT, TEST_STATE_DIR, run_make

TENANT = "eraseco"
SCRATCH = TEST_STATE_DIR / "erasure-tenants"
CLICKSTREAM = "clickstream"


def _tenant_file() -> str:
    return (f'include "root" {{\n  path = find_in_parent_folders("root.hcl")\n}}\ninputs = {{\n'
            f'  tenant_id           = "{TENANT}"\n  region              = "eu-west-1"\n'
            f'  data_classification = ["gdpr"]\n  account_id          = "123456789012"\n'
            f'  vpc_ids             = ["{fixture_ids.fixture_vpc_id(TENANT)}"]\n}}\n')


def cli(env, *args, timeout=900, expect=0) -> shell.ShellResult:
    result = shell.run([sys.executable, "-m", "spark_jobs", *args], timeout=timeout, env=env)
    assert result.returncode == expect, result.tail(40)
    return result


@pytest.fixture(scope="session")
def erase_tenant(emulator, aws_env, lake_formation_settings):
    """The applied tenant (after the account's Lake Formation settings in its region): its lake.json, the CLI's
    environment, a boto3 S3 client and the bucket."""
    import boto3

    from infra.local.s3a_jars import ensure_jars

    (SCRATCH / TENANT).mkdir(parents=True, exist_ok=True)
    (SCRATCH / TENANT / "terragrunt.hcl").write_text(_tenant_file())
    (SCRATCH / "root.hcl").write_text((REPO_ROOT / "tenants" / "root.hcl").read_text())
    lake_formation_settings("eu-west-1")
    run_make("apply", f"TENANT={TENANT}", f"TENANTS_DIR={SCRATCH}").check()
    lake = json.loads((TEST_STATE_DIR / "tenants" / TENANT / "lake.json").read_text())
    env = {**aws_env, "TENANTLAKE_STATE_DIR": str(TEST_STATE_DIR), "SPARK_LOCAL_IP": "127.0.0.1",
           "TENANTLAKE_SPARK_JARS": ",".join(str(j) for j in ensure_jars())}
    s3 = boto3.client("s3", region_name=lake["region"], endpoint_url=aws_env["AWS_ENDPOINT_URL"],
                      verify=aws_env["AWS_CA_BUNDLE"], aws_access_key_id=aws_env["AWS_ACCESS_KEY_ID"],
                      aws_secret_access_key=aws_env["AWS_SECRET_ACCESS_KEY"])
    return {"lake": lake, "env": env, "s3": s3, "bucket": lake["lake_bucket_name"]}


@pytest.fixture(scope="session")
def loaded(erase_tenant):
    """The tenant's clickstream data (59 users, seed 42, malformed and quarantined records) through run-all."""
    lake = ["--tenant", TENANT]
    cli(erase_tenant["env"], "datagen", *lake, "--dataset", CLICKSTREAM, "--records", "400", "--bad-rate", "0.03")
    cli(erase_tenant["env"], "run-all", *lake, "--dataset", CLICKSTREAM, "--allow-warn", timeout=1200)
    return erase_tenant
