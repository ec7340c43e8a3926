"""Adopting what a killed apply created but never recorded in the state.

Terraform persists the state of a running apply at most every 20 s; a run killed in between leaves
resources it created but never wrote to the state.  The next apply then fails creating them again
("already exists").  Every such resource of the adoptable kinds has a deterministic, tenant-named
identity, so the fallback imports them (Terraform import blocks) and applies once more.

Adoption imports whatever carries the expected name, so it never runs against real AWS by default: it
runs in ``TENANTLAKE_ENV=local`` (the emulator, which only this machine's runs write to), and in
``aws`` only when asked (``--adopt-orphans``, i.e. ``TENANTLAKE_ADOPT_ORPHANS=1``), and then only for
resources whose ``tenant`` tag names the tenant being applied: a same-named resource of someone else is
refused in one line, and nothing is imported.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Mapping

from infra.terragrunt.config import TenantRun
from infra.terragrunt.environment import boto_client as _boto_client
from infra.terragrunt.environment import env_name
from infra.terragrunt.errors import TerragruntError
from infra.terragrunt.outputs import outputs
from infra.terragrunt.terraform import _ANSI_RE, Printer
from tenant_model import tenant_key

ADOPTABLE_TYPES = ("aws_iam_role", "aws_s3_bucket", "aws_cloudwatch_log_group", "aws_kms_alias", "aws_kinesis_stream",
                   "aws_security_group", "aws_vpc_security_group_ingress_rule", "aws_emrcontainers_virtual_cluster",
                   "aws_kinesis_firehose_delivery_stream", "aws_glue_catalog_database", "aws_athena_workgroup",
                   "aws_iam_policy")
ALREADY_EXISTS_MARKERS = ("already exists", "already created", "AlreadyExists", "AlreadyOwnedByYou", "Duplicate", "ResourceInUseException")
IMPORTS_FILE = "adopted_imports.tf.json"
ADOPTION_ROUNDS = 3  # adopt-and-apply rounds after the first apply failed on orphans
ADOPT_FLAG_ENV = "TENANTLAKE_ADOPT_ORPHANS"  # "1": adopt in TENANTLAKE_ENV=aws too (tenant tag checked)
_CREATE_ERROR_RE = re.compile(r"Error: creating [A-Za-z0-9 ]+?(?: \(([^)]+)\))?(?::|$)")
_WITH_RE = re.compile(r"^[\s│]*with ([A-Za-z0-9_]+\.[A-Za-z0-9_]+(?:\[[^\]]*\])?),\s*$")


def orphans_in(output: list[str]) -> list[tuple[str, str]]:
    """``(address, name)`` of every resource terraform failed to create because it already exists
    (``name`` is "" when terraform's message names none, e.g. a security group rule)."""
    found: list[tuple[str, str]] = []
    block: dict | None = None  # the current "Error: creating ..." diagnostic: name, address, exists

    def close() -> None:
        if block and block["address"] and block["exists"]:
            found.append((block["address"], block["name"]))

    for raw in output:
        line = _ANSI_RE.sub("", raw)
        match = _CREATE_ERROR_RE.search(line)
        if match or "Error:" in line or line.startswith("╵"):
            close()
            block = {"name": match.group(1) or "", "address": None, "exists": False} if match else None
        if block is None:
            continue
        block["exists"] = block["exists"] or any(marker in line for marker in ALREADY_EXISTS_MARKERS)
        with_match = _WITH_RE.match(line)
        if with_match and block["address"] is None:
            block["address"] = with_match.group(1)
    close()
    return found


def _import_id(run: TenantRun, address: str, name: str, env: Mapping[str, str]) -> str | None:
    kind, region = address.split(".", 1)[0], run.config.region
    if kind in ("aws_iam_role", "aws_s3_bucket", "aws_cloudwatch_log_group", "aws_kms_alias", "aws_kinesis_stream",
                "aws_athena_workgroup"):
        return name
    if kind == "aws_iam_policy":  # terraform's id: the policy's ARN
        return f"arn:aws:iam::{run.config.account_id}:policy/{name}"
    if kind == "aws_glue_catalog_database":  # terraform's id: "<catalog id>:<database name>"
        return f"{_boto_client('glue', region, env).get_database(Name=name)['Database']['CatalogId']}:{name}"
    if kind == "aws_security_group":
        vpc = re.search(r'\["(vpc-[0-9a-f]+)"\]', address)
        filters = [{"Name": "group-name", "Values": [name]}, *([{"Name": "vpc-id", "Values": [vpc.group(1)]}] if vpc else [])]
        groups = _boto_client("ec2", region, env).describe_security_groups(Filters=filters)["SecurityGroups"]
        return groups[0]["GroupId"] if len(groups) == 1 else None
    if kind == "aws_vpc_security_group_ingress_rule":
        # The tenant's (tagged) security group in that VPC, and its one ingress rule.
        vpc = re.search(r'\["(vpc-[0-9a-f]+)"\]', address)
        ec2 = _boto_client("ec2", region, env)
        groups = ec2.describe_security_groups(Filters=[
            {"Name": "tag:tenant", "Values": [run.config.tenant_id]},
            *([{"Name": "vpc-id", "Values": [vpc.group(1)]}] if vpc else [])])["SecurityGroups"]
        if len(groups) != 1:
            return None
        rules = [r for r in ec2.describe_security_group_rules(Filters=[
            {"Name": "group-id", "Values": [groups[0]["GroupId"]]}])["SecurityGroupRules"] if not r["IsEgress"]]
        return rules[0]["SecurityGroupRuleId"] if len(rules) == 1 else None
    if kind == "aws_emrcontainers_virtual_cluster":
        clusters = _boto_client("emr-containers", region, env).list_virtual_clusters(states=["RUNNING"])["virtualClusters"]
        ids = [c["id"] for c in clusters if c["name"] == name]
        return ids[0] if len(ids) == 1 else None
    if kind == "aws_kinesis_firehose_delivery_stream":
        return _boto_client("firehose", region, env).describe_delivery_stream(
            DeliveryStreamName=name)["DeliveryStreamDescription"]["DeliveryStreamARN"]
    return None


def untracked_leftovers(run: TenantRun, env: Mapping[str, str]) -> list[str]:
    """VPC endpoints and KMS keys tagged with the tenant that its state does not hold (a killed apply's)."""
    values = outputs(run.name)
    tracked = {*values.get("gateway_endpoint_ids", {}).values(), *values.get("interface_endpoint_ids", {}).values(),
               values.get("kms_key_arn")}
    tenant_tag = {"Name": "tag:tenant", "Values": [run.config.tenant_id]}
    found: list[str] = []
    if run.config.vpc_ids:  # endpoints in the tenant's own VPCs (a shared network's are not the tenant's)
        ec2 = _boto_client("ec2", run.config.region, env)
        found = [e["VpcEndpointId"] for e in ec2.describe_vpc_endpoints(Filters=[
            tenant_tag, {"Name": "vpc-id", "Values": list(run.config.vpc_ids)}])["VpcEndpoints"]
            if e["VpcEndpointId"] not in tracked and e["State"].lower() not in ("deleting", "deleted")]
    kms = _boto_client("kms", run.config.region, env)
    for page in kms.get_paginator("list_keys").paginate():
        for key in page["Keys"]:
            if key["KeyArn"] in tracked:
                continue
            tags = kms.list_resource_tags(KeyId=key["KeyArn"]).get("Tags", [])
            if {"TagKey": "tenant", "TagValue": run.config.tenant_id} in tags and \
                    kms.describe_key(KeyId=key["KeyArn"])["KeyMetadata"]["KeyState"] not in ("PendingDeletion",):
                found.append(key["KeyArn"])
    return found


def adoption_allowed() -> bool:
    """Locally always; against AWS only with ``--adopt-orphans`` (``TENANTLAKE_ADOPT_ORPHANS=1``)."""
    return env_name() == "local" or os.environ.get(ADOPT_FLAG_ENV) == "1"


def resource_tags(kind: str, name: str, import_id: str, region: str, env: Mapping[str, str]) -> dict[str, str]:
    """The tags of an existing resource of an adoptable kind (``{}`` when it has none)."""
    client = lambda service: _boto_client(service, region, env)  # noqa: E731 - one region, many services
    if kind == "aws_iam_role":
        return {t["Key"]: t["Value"] for t in client("iam").list_role_tags(RoleName=name).get("Tags", [])}
    if kind == "aws_iam_policy":
        return {t["Key"]: t["Value"] for t in client("iam").list_policy_tags(PolicyArn=import_id).get("Tags", [])}
    if kind == "aws_s3_bucket":
        s3 = client("s3")
        try:
            return {t["Key"]: t["Value"] for t in s3.get_bucket_tagging(Bucket=name)["TagSet"]}
        except s3.exceptions.ClientError:  # NoSuchTagSet: created, killed before tagging
            return {}
    if kind == "aws_cloudwatch_log_group":
        logs = client("logs")
        arns = [g["arn"].removesuffix(":*") for g in logs.describe_log_groups(logGroupNamePrefix=name)["logGroups"]
                if g["logGroupName"] == name]
        return logs.list_tags_for_resource(resourceArn=arns[0]).get("tags", {}) if arns else {}
    if kind == "aws_kms_alias":
        kms = client("kms")
        targets = [a.get("TargetKeyId") for a in kms.list_aliases()["Aliases"] if a["AliasName"] == name]
        return ({t["TagKey"]: t["TagValue"] for t in kms.list_resource_tags(KeyId=targets[0]).get("Tags", [])}
                if targets and targets[0] else {})
    if kind == "aws_kinesis_stream":
        return {t["Key"]: t["Value"] for t in client("kinesis").list_tags_for_stream(StreamName=name).get("Tags", [])}
    if kind == "aws_security_group":
        groups = client("ec2").describe_security_groups(GroupIds=[import_id])["SecurityGroups"]
        return {t["Key"]: t["Value"] for t in groups[0].get("Tags", [])} if groups else {}
    if kind == "aws_vpc_security_group_ingress_rule":
        rules = client("ec2").describe_security_group_rules(SecurityGroupRuleIds=[import_id])["SecurityGroupRules"]
        return {t["Key"]: t["Value"] for t in rules[0].get("Tags", [])} if rules else {}
    if kind == "aws_emrcontainers_virtual_cluster":
        return client("emr-containers").describe_virtual_cluster(id=import_id)["virtualCluster"].get("tags", {})
    if kind == "aws_kinesis_firehose_delivery_stream":
        return {t["Key"]: t["Value"] for t in client("firehose").list_tags_for_delivery_stream(
            DeliveryStreamName=name).get("Tags", [])}
    if kind in ("aws_glue_catalog_database", "aws_athena_workgroup"):
        account = client("sts").get_caller_identity()["Account"]
        if kind == "aws_glue_catalog_database":
            return client("glue").get_tags(ResourceArn=f"arn:aws:glue:{region}:{account}:database/{name}").get("Tags", {})
        return {t["Key"]: t["Value"] for t in client("athena").list_tags_for_resource(
            ResourceARN=f"arn:aws:athena:{region}:{account}:workgroup/{name}").get("Tags", [])}
    return {}


def _names_tenant(run: TenantRun, name: str) -> bool:
    """Whether a resource name carries the tenant (Glue names use the tenant key, ``-`` as ``_``)."""
    return name == "" or run.config.tenant_id in name or tenant_key(run.config.tenant_id) in name


def adopt_orphans(run: TenantRun, folder: Path, output: list[str], env: Mapping[str, str], echo: Printer) -> int:
    """Write import blocks for the tenant's orphaned resources; returns how many (0: nothing to adopt).

    Raises a one-line error, and imports nothing, when an "already exists" failure is not one the runner
    may adopt: adoption is not allowed here (``adoption_allowed``), a type it does not know, a name without
    the tenant id, an id it cannot look up, or (when adopting against AWS) a ``tenant`` tag that is not
    this tenant's."""
    orphans = orphans_in(output)
    if orphans and not adoption_allowed():
        raise TerragruntError(
            f"tenant '{run.name}': already exists but not in the state: {', '.join(a for a, _ in orphans)}; a killed "
            f"apply may have created them, or someone else did. The runner adopts them against AWS only when asked: "
            f"check they are this tenant's, then python -m infra.terragrunt apply --tenant {run.name} --adopt-orphans "
            "(it imports only resources tagged tenant=" + run.config.tenant_id + ")")
    check_tags = env_name() != "local"
    imports, refused = [], []
    for address, name in orphans:
        import_id, kind = None, address.split(".", 1)[0]
        if kind in ADOPTABLE_TYPES and _names_tenant(run, name):
            import_id = _import_id(run, address, name, env)
        if import_id is None:
            refused.append(f"{address} ({name})")
        elif check_tags and resource_tags(kind, name, import_id, run.config.region, env).get("tenant") != \
                run.config.tenant_id:
            refused.append(f"{address} ({name or import_id}: not tagged tenant={run.config.tenant_id})")
        else:
            imports.append({"to": address, "id": import_id})
    if refused:
        raise TerragruntError(f"tenant '{run.name}': already exists but not in the state, and not adoptable: "
                              f"{', '.join(refused)}; import it by hand (terraform import in {folder}) or delete it")
    if imports:
        try:  # keep what an earlier round (or the endpoints adopted before the apply) imports
            earlier = json.loads((folder / IMPORTS_FILE).read_text())["import"]
        except (OSError, ValueError, KeyError):
            earlier = []
        merged = {i["to"]: i for i in [*earlier, *imports]}
        (folder / IMPORTS_FILE).write_text(json.dumps({"import": list(merged.values())}, indent=2) + "\n")
        echo(f"tenant '{run.name}': adopting {len(imports)} resource(s) an interrupted apply created but never "
             f"recorded: {', '.join(i['to'] for i in imports)}")
    return len(imports)
