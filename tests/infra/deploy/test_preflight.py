"""Checks before any upload or submission: each bad case is one line and nothing is submitted."""
from __future__ import annotations

import json

import pytest

from infra.deploy import preflight
from infra.deploy.target import DeployError, target_from_outputs

from .conftest import create_tenant_resources

pytestmark = pytest.mark.integration


def _clients(emu):
    return emu.client


def test_a_healthy_tenant_passes(driven_emulator, tenant_outputs):
    preflight.run_all_checks(_clients(driven_emulator), target_from_outputs("acme", tenant_outputs))


def test_missing_virtual_cluster(driven_emulator, tenant_outputs):
    target = target_from_outputs("acme", {**tenant_outputs, "emr_virtual_cluster_id": "doesnotexist0000000000000"})
    with pytest.raises(DeployError, match="EMR virtual cluster 'doesnotexist0000000000000' does not exist"):
        preflight.check_virtual_cluster(driven_emulator.client("emr-containers"), target)


def test_terminated_virtual_cluster(driven_emulator, tenant_outputs):
    emr = driven_emulator.client("emr-containers")
    emr.delete_virtual_cluster(id=tenant_outputs["emr_virtual_cluster_id"])
    with pytest.raises(DeployError, match="is TERMINATED, not RUNNING"):
        preflight.check_virtual_cluster(emr, target_from_outputs("acme", tenant_outputs))


def test_role_that_does_not_exist(driven_emulator, tenant_outputs):
    arn = "arn:aws:iam::123456789012:role/acme-nope"
    with pytest.raises(DeployError, match=f"job execution role {arn} does not exist"):
        preflight.check_role(driven_emulator.client("iam"), target_from_outputs(
            "acme", {**tenant_outputs, "job_execution_role_arn": arn}))


def test_role_of_another_tenant(driven_emulator, tenant_outputs):
    other = create_tenant_resources(driven_emulator, tenant="globex")
    target = target_from_outputs("acme", {**tenant_outputs, "job_execution_role_arn": other["job_execution_role_arn"]})
    with pytest.raises(DeployError, match=r"is not this tenant's role \(tagged tenant=globex\)"):
        preflight.check_role(driven_emulator.client("iam"), target)


def test_untagged_role_without_the_tenant_prefix(driven_emulator, tenant_outputs):
    iam = driven_emulator.client("iam")
    arn = iam.create_role(RoleName="shared-emr-role", AssumeRolePolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": []}))["Role"]["Arn"]
    with pytest.raises(DeployError, match="has no tenant tag and no tenant name prefix"):
        preflight.check_role(iam, target_from_outputs("acme", {**tenant_outputs, "job_execution_role_arn": arn}))


def test_unknown_dataset_and_layer():
    available = ("clickstream", "inventory", "iot")
    assert preflight.check_selection("acme", None, None, available) == (list(available), ["bronze", "silver", "gold"])
    assert preflight.check_selection("acme", "iot, iot", "gold,bronze", available) == (["iot"], ["bronze", "gold"])
    with pytest.raises(DeployError, match="unknown dataset 'weather' \\(known: clickstream, inventory, iot\\)"):
        preflight.check_selection("acme", "iot,weather", None, available)
    with pytest.raises(DeployError, match="unknown layer 'platinum'"):
        preflight.check_selection("acme", None, "platinum", available)
