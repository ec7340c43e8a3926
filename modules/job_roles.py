"""IAM roles of one tenant, least privilege by medallion layer.

| role | trusted by | may read | may write |
|---|---|---|---|
| job execution (EMR on EKS) | the EKS OIDC provider, only for the EMR service accounts of runs as this role in the tenant namespace (``system:serviceaccount:<ns>:emr-containers-sa-*-*-<account>-<base36 of the role name>``, ``aud = sts.amazonaws.com``) | landing/, bronze/, artifacts/ and everything it writes; the silver and gold Glue databases | bronze/ silver/ gold/ quarantine/ reports/ checkpoints/ logs/; tables in the silver and gold Glue databases |
| ingest writer | principals of the tenant's account | - | landing/ (put only) |
| consumer | principals of the tenant's account | reports/, athena/consumer/; the gold Glue database; gold tables through Lake Formation (the columns granted to it, ``modules/lake_formation.py``); its Athena workgroup | athena/consumer/ (put only: query results) |
| erasure (EMR on EKS erase runs) | like the job execution role, for the service accounts of runs as this role only | every lake prefix, every object version, the whole bucket listed (``ListBucket``, ``ListBucketVersions``, no ``s3:prefix`` condition); the silver and gold Glue databases | every prefix but artifacts/, object versions included (``s3:DeleteObjectVersion``); tables in the silver and gold Glue databases |

The readers of personal data (``lake_formation.personal_data_reader_arns``) are the tenant's own principals: the
module makes no role for them but a managed policy, ``<tenant>-lake-personal-data-reader`` (``READER_ACCESS``), to
attach to each: athena/personal/ (read, put), the gold Glue database, ``GetDataAccess`` and the personal workgroup.

Every role may use only the tenant key (data-key actions), and the job and erasure roles may write only
the tenant's log group.  No statement grants S3 or KMS actions on ``*`` (a checkov custom check, too).
Glue actions name the account's catalog, the tenant's databases and their tables (``table/<db>/*``);
Athena actions name the tenant's workgroup. The consumer's query results are SSE-KMS objects under
``athena/consumer/``, so it gets data keys too (``KMS_WRITE_ACTIONS``); its S3 rights confine its puts there.
Write prefixes are also readable by the job role: Spark's commit protocol lists and reads what it
writes, and the gold job reads silver.  ``logs/`` is the ``logUri`` of every StartJobRun request
(``infra/deploy/request.py``): EMR uploads the job's driver and executor logs there as the job role.

Each EMR role trusts the service accounts of runs as itself only: EMR on EKS names them
``emr-containers-sa-<component>-<job id>-<account>-<base36 of the execution role's name>``, and the trust's
``sub`` pattern ends with that base36 text (``aws emr-containers update-role-trust-policy`` writes the same).
A pod of a pipeline run (the job role) therefore cannot assume the erasure role. Terraform cannot encode a
name it only knows at plan time (``${var.tenant_id}-emr-erasure``) with a built-in, so ``base36_locals``
writes the computation out as Terraform expressions: the name's bytes from a character table, their
value as a sum of byte powers, its base-36 digits by division (Terraform's numbers are exact to 512
bits); ``tenant_model.base36_role_name`` is the reference, and tests/modules/test_job_roles.py runs the
expression in ``terraform console`` against it.

The erasure role is the ``executionRoleArn`` of erase runs (``python -m spark_jobs erase``, see
``spark_jobs/erasure/job.py``): it does what the bronze and gold jobs do, and deletes landing objects,
rewrites reports/ and athena/ objects, deletes noncurrent object versions and reads every version of
every object in the bucket (the verification lists the bucket with the prefix ``""``).  Versioning is
the pipeline's recovery mechanism, so ``s3:DeleteObjectVersion`` and ``s3:ListBucketVersions`` are
granted to this role only, never to the job role.  Its listing has no ``s3:prefix`` condition: it may
read every prefix anyway, and a condition that admitted the empty prefix would admit every prefix.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

from cdktf import TerraformLocal
from cdktf_cdktf_provider_aws.iam_policy import IamPolicy
from cdktf_cdktf_provider_aws.iam_role import IamRole
from cdktf_cdktf_provider_aws.iam_role_policy import IamRolePolicy
from constructs import Construct

import tenant_model as model
from modules.policy_document import Condition, Principal, Statement, policy_document

S3_READ_ACTIONS: tuple[str, ...] = ("s3:GetObject", "s3:GetObjectVersion")
S3_WRITE_ACTIONS: tuple[str, ...] = ("s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload",
                                     "s3:ListMultipartUploadParts")
S3_PUT_ONLY_ACTIONS: tuple[str, ...] = ("s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts")
KMS_READ_ACTIONS: tuple[str, ...] = ("kms:Decrypt", "kms:DescribeKey")
# Writing SSE-KMS objects needs a data key; multipart completion also decrypts it.
KMS_WRITE_ACTIONS: tuple[str, ...] = ("kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKey", "kms:Encrypt")
LOG_WRITE_ACTIONS: tuple[str, ...] = ("logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams")
# What reading an Iceberg table through Glue needs (Athena, Spark), and what committing to one adds
# (Iceberg's GlueCatalog creates a table, then commits by UpdateTable with the expected version).
GLUE_READ_ACTIONS: tuple[str, ...] = ("glue:GetDatabase", "glue:GetDatabases", "glue:GetTable", "glue:GetTables",
                                      "glue:GetPartition", "glue:GetPartitions", "glue:BatchGetPartition")
GLUE_WRITE_ACTIONS: tuple[str, ...] = (*GLUE_READ_ACTIONS, "glue:CreateTable", "glue:UpdateTable", "glue:DeleteTable")
ATHENA_QUERY_ACTIONS: tuple[str, ...] = (
    "athena:StartQueryExecution", "athena:StopQueryExecution", "athena:GetQueryExecution", "athena:GetQueryResults",
    "athena:BatchGetQueryExecution", "athena:ListQueryExecutions", "athena:GetWorkGroup")
# Lake Formation (modules/lake_formation.py). Athena reads a table of a registered location with credentials
# Lake Formation vends for the columns the caller was granted; the caller's identity policy must allow asking.
# The job role tags the tables and columns it creates (spark_jobs/tables/lf_tags.py). Lake Formation's API actions
# have no resource-level permissions: the grants (which tags, which tables) are Lake Formation's own.
LF_DATA_ACCESS_ACTIONS: tuple[str, ...] = ("lakeformation:GetDataAccess",)
LF_TAGGING_ACTIONS: tuple[str, ...] = ("lakeformation:AddLFTagsToResource", "lakeformation:RemoveLFTagsFromResource",
                                       "lakeformation:GetResourceLFTags", "lakeformation:ListLFTags",
                                       "lakeformation:GetLFTag")


@dataclasses.dataclass(frozen=True)
class RoleAccess:
    """Which prefixes a role may read and write, and whether it writes the tenant's log group.

    Attributes:
        read: prefixes whose objects (and object versions) it may get. @default - ()
        write: prefixes it may put and delete objects under (readable too). @default - ()
        put_only: prefixes it may only put under (no delete). @default - ()
        logs: whether it writes the tenant's log group. @default - False
        glue_read: table layers whose Glue database and tables it may read. @default - ()
        glue_write: table layers whose tables it may create, update and delete. @default - ()
        athena: whether it queries in the tenant's Athena workgroup. @default - False
        delete_versions: prefixes under which it may delete object versions (``s3:DeleteObjectVersion``,
            statement ``DeleteObjectVersions``). @default - () (no version is ever deleted)
        list_all: list the whole bucket, object versions included (``s3:ListBucket`` and
            ``s3:ListBucketVersions`` without an ``s3:prefix`` condition, statement ``ListWholeLake``)
            instead of its own prefixes only (``ListOwnPrefixes``). @default - False
        lake_formation_data_access: reads tables through Lake Formation (``lakeformation:GetDataAccess``,
            statement ``ReadTablesThroughLakeFormation``): the data comes with credentials Lake Formation vends
            for the columns it was granted, not from its own S3 rights. @default - False
        tags_tables: attaches the tenant's LF-tags to the tables and columns it creates (statement
            ``TagTenantTables``; Lake Formation's ``ASSOCIATE`` grant names the tags). @default - False
    """

    read: Sequence[str] = ()
    write: Sequence[str] = ()
    put_only: Sequence[str] = ()
    logs: bool = False
    glue_read: Sequence[str] = ()
    glue_write: Sequence[str] = ()
    athena: bool = False
    delete_versions: Sequence[str] = ()
    list_all: bool = False
    lake_formation_data_access: bool = False
    tags_tables: bool = False


@dataclasses.dataclass(frozen=True)
class CatalogGrants:
    """The ARNs the Glue and Athena statements name.

    Attributes:
        catalog_arn: ``arn:<partition>:glue:<region>:<account>:catalog``.
        database_arns: Glue database ARN per layer.
        table_arns: ``arn:...:table/<database>/*`` per layer.
        workgroup_arn: the tenant's Athena workgroup.
    """

    catalog_arn: str
    database_arns: Mapping[str, str]
    table_arns: Mapping[str, str]
    workgroup_arn: str


# Where erase runs write and delete object versions: every lake prefix but the deployer's artifacts/.
ERASURE_WRITE_PREFIXES: tuple[str, ...] = tuple(p for p in model.LAKE_PREFIXES if p != "artifacts")
S3_VERSION_DELETE_ACTIONS: tuple[str, ...] = ("s3:DeleteObjectVersion",)
S3_LIST_ALL_ACTIONS: tuple[str, ...] = ("s3:ListBucket", "s3:ListBucketVersions")

# Prefixes per role (modules/README.md "IAM roles"; asserted in tests/modules/test_job_roles.py).
ROLE_ACCESS: dict[str, RoleAccess] = {
    "job_execution": RoleAccess(read=("landing", "bronze", "artifacts"),
                                write=("bronze", "silver", "gold", "quarantine", "reports", "checkpoints", "logs"),
                                logs=True, glue_write=model.CATALOG_LAYERS, tags_tables=True),
    "ingest_writer": RoleAccess(put_only=model.INGEST_WRITER_PUT_PREFIXES),
    # The consumer reads gold tables through Lake Formation only (the columns it was granted): no S3 right on
    # gold/, which would let it read a table's files, personal columns included.
    # Its query results: athena/consumer/ only, never the readers of personal data's athena/personal/.
    "consumer": RoleAccess(read=("reports", model.ATHENA_RESULT_PREFIXES["consumer"]),
                           put_only=(model.ATHENA_RESULT_PREFIXES["consumer"],), glue_read=model.LF_CONSUMER_LAYERS,
                           athena=True, lake_formation_data_access=True),
    # GDPR erase runs: everything but the job code (artifacts/, the deployer's) is rewritten and purged.
    "erasure": RoleAccess(read=model.LAKE_PREFIXES, write=ERASURE_WRITE_PREFIXES,
                          delete_versions=ERASURE_WRITE_PREFIXES, list_all=True, logs=True,
                          glue_write=model.CATALOG_LAYERS),
}
# The managed policy for the readers of personal data (``personal_data_reader_policy``): their query results in
# athena/personal/ (the personal workgroup's), gold through Lake Formation (every column, their grants), nothing else.
READER_ACCESS = RoleAccess(read=(model.ATHENA_RESULT_PREFIXES["personal"],),
                           put_only=(model.ATHENA_RESULT_PREFIXES["personal"],), glue_read=model.LF_CONSUMER_LAYERS,
                           athena=True, lake_formation_data_access=True)
# The roles EMR on EKS runs jobs as (their trust: the EKS OIDC provider, their own service accounts).
EMR_ROLES: tuple[str, ...] = ("job_execution", "erasure")
BASE36_LOCAL = "emr_role_name_base36"


def base36_locals(role_names: Mapping[str, str]) -> dict[str, object]:
    """Terraform locals that compute ``tenant_model.base36_role_name`` of each of ``role_names`` (role key ->
    a name, a Terraform template allowed): ``local.emr_role_name_base36[<role key>]``. Numbers travel as
    strings (jsii would round them to doubles) and are read with ``tonumber``."""
    digits = -(-model.MAX_ROLE_NAME_LENGTH * 8 * 1000 // 5170) + 1  # ceil(bits / log2(36)), and one to spare
    powers = "local.emr_role_name_base36_powers"
    value = "sum([for i, c in split(\"\", name) : local.emr_role_name_bytes[c] * " \
            "tonumber(local.emr_role_name_byte_powers[length(name) - 1 - i])])"
    digit = f"floor(v / tonumber({powers}[j])) - 36 * floor(v / tonumber({powers}[j + 1]))"
    return {
        "emr_role_name_bytes": {char: ord(char) for char in model.IAM_ROLE_NAME_CHARS},
        "emr_role_name_byte_powers": [str(256 ** k) for k in range(model.MAX_ROLE_NAME_LENGTH)],
        "emr_role_name_base36_powers": [str(36 ** j) for j in range(digits + 1)],
        "emr_role_names": dict(role_names),
        "emr_role_name_values": f"${{{{ for role, name in local.emr_role_names : role => {value} }}}}",
        BASE36_LOCAL: (f"${{{{ for role, v in local.emr_role_name_values : role => join(\"\", [for j in "
                       f"reverse(range({digits})) : substr(\"{model.BASE36_ALPHABET}\", {digit}, 1) "
                       f"if tonumber({powers}[j]) <= v]) }}}}"),
    }


@dataclasses.dataclass(frozen=True)
class JobRolesConfig:
    """Inputs of ``JobRoles`` (values may be Terraform expressions).

    Attributes:
        role_names: name per role key of ``ROLE_ACCESS`` (from ``tenant_model.NAME_TEMPLATES``).
        partition, account_id: the tenant's account.
        oidc_provider_arn, oidc_issuer: the EKS cluster's IAM OIDC provider and its issuer (host/path).
        emr_namespace: the Kubernetes namespace of the tenant's EMR jobs.
        tags: tags of the roles.
        max_session_duration: seconds a role session lasts at most. @default - 3600 (``tenant_model.ROLE_MAX_SESSION_SECONDS``)
        reader_policy_name: the managed policy of the readers of personal data (``READER_ACCESS``); "" makes none.
            @default - ""
    """

    role_names: Mapping[str, str]
    partition: str
    account_id: str
    oidc_provider_arn: str
    oidc_issuer: str
    emr_namespace: str
    tags: Mapping[str, str]
    max_session_duration: int = model.ROLE_MAX_SESSION_SECONDS
    reader_policy_name: str = ""


def trust_statements(cfg: JobRolesConfig, role: str) -> list[Statement]:
    # EMR on EKS roles: the service accounts of runs as this very role (the base36 of its name), in the
    # tenant namespace. A job run's pods cannot assume the erasure role, nor an erase run's the job role.
    if role in EMR_ROLES:
        role_id = f'${{local.{BASE36_LOCAL}["{role}"]}}'
        return [Statement(
            "EmrOnEksServiceAccountsOfThisRole", ["sts:AssumeRoleWithWebIdentity"], [],
            principals=[Principal("Federated", [cfg.oidc_provider_arn])],
            conditions=[
                Condition("StringLike", f"{cfg.oidc_issuer}:sub", [model.EMR_SERVICE_ACCOUNT_PATTERN.format(
                    namespace=cfg.emr_namespace, account_id=cfg.account_id, role_id=role_id)]),
                Condition("StringEquals", f"{cfg.oidc_issuer}:aud", ["sts.amazonaws.com"]),
            ])]
    return [Statement("TenantAccountPrincipals", ["sts:AssumeRole"], [],
                      principals=[Principal("AWS", [f"arn:{cfg.partition}:iam::{cfg.account_id}:root"])])]


def permission_statements(access: RoleAccess, bucket_arn: str, key_arn: str, log_group_arn: str,
                          catalog: CatalogGrants | None = None) -> list[Statement]:
    readable = list(dict.fromkeys([*access.read, *access.write]))
    statements: list[Statement] = []
    listable = list(dict.fromkeys([*readable, *access.put_only]))
    if access.list_all:
        # The whole bucket (prefix "" included) and its object versions: no s3:prefix condition.
        statements.append(Statement("ListWholeLake", list(S3_LIST_ALL_ACTIONS), [bucket_arn]))
        statements.append(Statement("LocateBucket", ["s3:GetBucketLocation"], [bucket_arn]))
    elif listable and readable:
        statements.append(Statement(
            "ListOwnPrefixes", ["s3:ListBucket"], [bucket_arn],
            conditions=[Condition("StringLike", "s3:prefix", [v for p in listable for v in (f"{p}/", f"{p}/*")])]))
        statements.append(Statement("LocateBucket", ["s3:GetBucketLocation"], [bucket_arn]))
    if readable:
        statements.append(Statement("ReadPrefixes", list(S3_READ_ACTIONS), [f"{bucket_arn}/{p}/*" for p in readable]))
    if access.write:
        statements.append(Statement("WritePrefixes", list(S3_WRITE_ACTIONS), [f"{bucket_arn}/{p}/*" for p in access.write]))
    if access.delete_versions:
        statements.append(Statement("DeleteObjectVersions", list(S3_VERSION_DELETE_ACTIONS),
                                    [f"{bucket_arn}/{p}/*" for p in access.delete_versions]))
    if access.put_only:
        statements.append(Statement("PutOnlyPrefixes", list(S3_PUT_ONLY_ACTIONS),
                                    [f"{bucket_arn}/{p}/*" for p in access.put_only]))
    writes = bool(access.write or access.put_only)
    statements.append(Statement("UseTenantKey", list(KMS_WRITE_ACTIONS if writes else KMS_READ_ACTIONS), [key_arn]))
    if access.logs:
        statements.append(Statement("WriteTenantLogGroup", list(LOG_WRITE_ACTIONS),
                                    [log_group_arn, f"{log_group_arn}:*"]))
    for sid, layers, actions in (("WriteTenantTables", access.glue_write, GLUE_WRITE_ACTIONS),
                                 ("ReadTenantTables", access.glue_read, GLUE_READ_ACTIONS)):
        if layers and catalog is not None:
            statements.append(Statement(sid, list(actions), [
                catalog.catalog_arn, *[catalog.database_arns[layer] for layer in layers],
                *[catalog.table_arns[layer] for layer in layers]]))
    if access.athena and catalog is not None:
        statements.append(Statement("QueryInTenantWorkgroup", list(ATHENA_QUERY_ACTIONS), [catalog.workgroup_arn]))
    if access.lake_formation_data_access:
        statements.append(Statement("ReadTablesThroughLakeFormation", list(LF_DATA_ACCESS_ACTIONS), ["*"]))
    if access.tags_tables:
        statements.append(Statement("TagTenantTables", list(LF_TAGGING_ACTIONS), ["*"]))
    return statements


class JobRoles(Construct):
    """The four tenant roles of ``ROLE_ACCESS``.  ``grant(...)`` attaches their permissions once the key exists."""

    def __init__(self, scope: Construct, id_: str, cfg: JobRolesConfig) -> None:
        super().__init__(scope, id_)
        self.cfg = cfg
        self.roles: dict[str, IamRole] = {}
        for name, value in base36_locals({role: cfg.role_names[role] for role in EMR_ROLES}).items():
            TerraformLocal(self, name, value)
        for role in ROLE_ACCESS:
            trust = policy_document(self, f"{role}_trust", trust_statements(cfg, role))
            self.roles[role] = IamRole(
                self, role, name=cfg.role_names[role], assume_role_policy=trust.json,
                description=f"tenantlake {role.replace('_', ' ')} role", max_session_duration=cfg.max_session_duration,
                tags=cfg.tags)
        self.arns = {role: r.arn for role, r in self.roles.items()}

    def grant(self, bucket_arn: str, key_arn: str, log_group_arn: str, catalog: CatalogGrants | None = None,
              reader_catalog: CatalogGrants | None = None) -> None:
        """The roles' policies; with ``reader_catalog`` (the personal workgroup's grants) and a ``reader_policy_name``,
        the readers' managed policy too (``reader_policy_arn``)."""
        for role, access in ROLE_ACCESS.items():
            document = policy_document(self, f"{role}_permissions",
                                       permission_statements(access, bucket_arn, key_arn, log_group_arn, catalog))
            IamRolePolicy(self, f"{role}_policy", name="lake-access", role=self.roles[role].id, policy=document.json)
        if reader_catalog is not None and self.cfg.reader_policy_name:
            document = policy_document(self, "personal_data_reader_permissions",
                                       permission_statements(READER_ACCESS, bucket_arn, key_arn, log_group_arn,
                                                             reader_catalog))
            self.reader_policy = IamPolicy(
                self, "personal_data_reader_policy", name=self.cfg.reader_policy_name, policy=document.json,
                description="tenantlake: attach to each reader of personal data (lake_formation.personal_data_reader_arns)",
                tags=self.cfg.tags)
            self.reader_policy_arn = self.reader_policy.arn
