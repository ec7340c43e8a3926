"""Lake Formation for one tenant: who may select which columns of its tables, by LF-tag.

Contracts say which columns identify or describe a person (``subject_keys``, ``personal_data``). This
construct makes that decide access, with Lake Formation tag-based access control (LF-TBAC):

| resource | name / target | what |
|---|---|---|
| ``aws_lakeformation_lf_tag`` x2 | ``<tenant>-classification`` (``pii``, ``none``), ``<tenant>-layer`` (``silver``, ``gold``) | the tenant's own tag keys: LF-tag keys are account-wide and tenants share accounts, so a key named ``tenant`` would have one owner for every tenant's values |
| ``aws_lakeformation_resource_lf_tags`` per Glue database | ``<tenant_key>_<layer>`` | ``classification=pii`` and ``layer=<layer>``. Tables and columns inherit the database's tags until a lower level assigns the key a value of its own, so a table or column nobody tagged is ``pii``: closed to the consumer |
| IAM role + inline policy | ``<tenant>-lakeformation-access`` | trusted by ``lakeformation.amazonaws.com`` of the tenant account (``aws:SourceAccount``); reads the registered locations (``s3:GetObject``, ``s3:ListBucket`` under them); the key policy lets it decrypt. Lake Formation reads the data with it when it vends credentials to Athena for the columns a caller was granted |
| ``aws_lakeformation_resource`` per consumer layer | ``s3://<lake>/gold`` | the location registered with that role |
| ``aws_lakeformation_permissions`` | see ``GRANTS`` | by LF-tag expression (``DATA_LOCATION_ACCESS`` and the tag ``ASSOCIATE`` by name) |

Columns are tagged after the jobs create or evolve a table (``spark_jobs/tables/lf_tags.py``): every column the
contract knows and that holds no personal data gets ``classification=none``, the personal ones ``pii``; a
column the tag step has not seen (schema evolution before the step ran) inherits ``pii``. The consumer is
granted ``SELECT`` on ``classification=none AND layer=gold``: the non-personal columns of gold tables.

The account's Lake Formation settings (administrators, and no ``IAMAllowedPrincipals`` default for new databases and
tables) are one per account and region: a platform unit holds them (``modules/lake_formation_settings.py``), and the
tenant unit depends on it, so they are in place before this module creates the tenant's databases, tags and grants.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

from cdktf import TerraformIterator, TerraformLocal
from cdktf_cdktf_provider_aws.iam_role import IamRole
from cdktf_cdktf_provider_aws.iam_role_policy import IamRolePolicy
from cdktf_cdktf_provider_aws.lakeformation_lf_tag import LakeformationLfTag
from cdktf_cdktf_provider_aws.lakeformation_permissions import (
    LakeformationPermissions,
    LakeformationPermissionsDataLocation,
    LakeformationPermissionsLfTag,
    LakeformationPermissionsLfTagPolicy,
    LakeformationPermissionsLfTagPolicyExpression,
)
from cdktf_cdktf_provider_aws.lakeformation_resource import LakeformationResource
from cdktf_cdktf_provider_aws.lakeformation_resource_lf_tags import (
    LakeformationResourceLfTags,
    LakeformationResourceLfTagsDatabase,
    LakeformationResourceLfTagsLfTag,
)
from constructs import Construct

import tenant_model as model
from modules.policy_document import Condition, ListExpr, Principal, Statement, policy_document

LAKE_FORMATION_SERVICE = "lakeformation.amazonaws.com"
LOCATION_READ_ACTIONS: tuple[str, ...] = ("s3:GetObject",)
TABLE_READ: tuple[str, ...] = ("SELECT", "DESCRIBE")
# What the pipeline does to its tables: Iceberg commits (ALTER: UpdateTable), reads, overwrites, maintenance.
TABLE_WRITE: tuple[str, ...] = ("SELECT", "INSERT", "DELETE", "DESCRIBE", "ALTER", "DROP")


@dataclasses.dataclass(frozen=True)
class Grant:
    """One Lake Formation grant by LF-tag expression.

    Attributes:
        principal: who: ``job_execution``, ``erasure``, ``consumer`` (the tenant roles) or ``readers`` (each of
            ``lake_formation.personal_data_reader_arns``).
        resource_type: ``DATABASE`` or ``TABLE`` (a table grant covers the columns whose tags match).
        expression: tag name (``classification``, ``layer``) -> the values it matches; keys AND, values OR.
        permissions: the Lake Formation permissions granted.
    """

    principal: str
    resource_type: str
    expression: Mapping[str, Sequence[str]]
    permissions: Sequence[str]


ALL_LAYERS = {"layer": model.CATALOG_LAYERS}
CONSUMER_LAYERS = {"layer": model.LF_CONSUMER_LAYERS}
# Who may do what, by tag expression (modules/README.md "Lake Formation"; the access matrix's Lake Formation
# cells evaluate these as applied).
GRANTS: dict[str, Grant] = {
    # The pipeline: creates tables in both databases and commits to every column of them.
    "job_databases": Grant("job_execution", "DATABASE", ALL_LAYERS, ("CREATE_TABLE", "DESCRIBE", "ALTER")),
    "job_tables": Grant("job_execution", "TABLE", ALL_LAYERS, TABLE_WRITE),
    # Erase runs rewrite silver and gold tables (never create or drop one).
    "erasure_databases": Grant("erasure", "DATABASE", ALL_LAYERS, ("DESCRIBE",)),
    "erasure_tables": Grant("erasure", "TABLE", ALL_LAYERS, ("SELECT", "INSERT", "DELETE", "DESCRIBE", "ALTER")),
    # The consumer: gold tables, the columns that hold no personal data.
    "consumer_databases": Grant("consumer", "DATABASE", CONSUMER_LAYERS, ("DESCRIBE",)),
    "consumer_tables": Grant("consumer", "TABLE", {"classification": (model.LF_NOT_PERSONAL,), **CONSUMER_LAYERS},
                             TABLE_READ),
    # Readers of personal data: every column of gold tables.
    "reader_databases": Grant("readers", "DATABASE", CONSUMER_LAYERS, ("DESCRIBE",)),
    "reader_tables": Grant("readers", "TABLE", {"classification": model.LF_CLASSIFICATION_VALUES, **CONSUMER_LAYERS},
                           TABLE_READ),
}


@dataclasses.dataclass(frozen=True)
class LakeFormationConfig:
    """Inputs of ``LakeFormation`` (values may be Terraform expressions).

    Attributes:
        tag_keys: the tenant's tag keys, ``{"classification": ..., "layer": ...}`` (``NAME_TEMPLATES``
            ``lf_tag_classification``, ``lf_tag_layer``).
        role_name: the data-access role, ``<tenant>-lakeformation-access``.
        account_id: the tenant account (the role trusts Lake Formation of this account only).
        role_arns: the ARN of each tenant role a grant names (``job_execution``, ``erasure``, ``consumer``).
        reader_arns: list expression of the readers of personal data (``var.lake_formation.personal_data_reader_arns``).
        tags: tags of the role.
        registered_layers: the layers whose locations are registered (the layers consumers read).
            @default - ``tenant_model.LF_CONSUMER_LAYERS`` (gold)
    """

    tag_keys: Mapping[str, str]
    role_name: str
    account_id: str
    role_arns: Mapping[str, str]
    reader_arns: ListExpr
    tags: Mapping[str, str]
    registered_layers: Sequence[str] = model.LF_CONSUMER_LAYERS


# The values of each of the tenant's tags (by tag name).
TAG_VALUES: dict[str, tuple[str, ...]] = {"classification": model.LF_CLASSIFICATION_VALUES,
                                          "layer": model.CATALOG_LAYERS}


def data_access_statements(cfg: LakeFormationConfig, lake_arn: str, key_arn: str) -> list[Statement]:
    """What Lake Formation may read with the role: the registered locations' objects, and their listing."""
    prefixes = [f"{layer}/" for layer in cfg.registered_layers]
    return [
        Statement("ReadRegisteredLocations", list(LOCATION_READ_ACTIONS),
                  [f"{lake_arn}/{layer}/*" for layer in cfg.registered_layers]),
        Statement("ListRegisteredLocations", ["s3:ListBucket"], [lake_arn],
                  conditions=[Condition("StringLike", "s3:prefix", [v for p in prefixes for v in (p, f"{p}*")])]),
        Statement("DecryptRegisteredLocations", ["kms:Decrypt", "kms:DescribeKey"], [key_arn],
                  conditions=[Condition("StringLike", "kms:ViaService", ["s3.*.amazonaws.com"])]),
    ]


class LakeFormation(Construct):
    """The tags, database tags, data-access role, registered locations and grants.

    The tags and the role are created at construction (the key and bucket policies name the role); ``grant(...)``
    tags the databases and adds the role's policy, the registrations and the grants once the databases, the key and
    the roles exist. Exposes ``tag_keys``, ``role_arn`` and ``location_arns`` (by layer).
    """

    def __init__(self, scope: Construct, id_: str, cfg: LakeFormationConfig) -> None:
        super().__init__(scope, id_)
        self.cfg = cfg
        # Lake Formation of this account only (the confused-deputy condition every service trust here carries).
        trust = policy_document(self, "role_trust", [Statement(
            "LakeFormationVendsCredentials", ["sts:AssumeRole"], [],
            principals=[Principal("Service", [LAKE_FORMATION_SERVICE])],
            conditions=[Condition("StringEquals", "aws:SourceAccount", [cfg.account_id])])])
        self.role = IamRole(self, "role", name=cfg.role_name, assume_role_policy=trust.json, tags=cfg.tags,
                            description="tenantlake: Lake Formation reads the registered table locations with it")
        self.role_arn = self.role.arn
        self.tags = {name: LakeformationLfTag(self, f"tag_{name}", key=cfg.tag_keys[name], values=list(TAG_VALUES[name]))
                     for name in cfg.tag_keys}
        self.tag_keys = {name: tag.key for name, tag in self.tags.items()}
        self.location_arns: dict[str, str] = {}

    def grant(self, lake_arn: str, key_arn: str, database_names: Mapping[str, str]) -> None:
        """Tag the databases (``classification=pii``, ``layer=<layer>``), register the consumer layers' locations
        (read with the tenant key ``key_arn``), and grant by tag expression. ``database_names``: the Glue database
        of each layer (references)."""
        cfg = self.cfg
        database_tags = [
            LakeformationResourceLfTags(
                self, f"database_{layer}", database=LakeformationResourceLfTagsDatabase(name=name),
                lf_tag=[LakeformationResourceLfTagsLfTag(key=self.tag_keys["classification"], value=model.LF_PERSONAL),
                        LakeformationResourceLfTagsLfTag(key=self.tag_keys["layer"], value=layer)])
            for layer, name in database_names.items()]
        document = policy_document(self, "role_permissions", data_access_statements(cfg, lake_arn, key_arn))
        IamRolePolicy(self, "role_policy", name="read-registered-locations", role=self.role.id, policy=document.json)
        locations = {layer: LakeformationResource(self, f"location_{layer}", arn=f"{lake_arn}/{layer}",
                                                  role_arn=self.role.arn)
                     for layer in cfg.registered_layers}
        self.location_arns = {layer: location.arn for layer, location in locations.items()}
        # The tables the pipeline creates in a registered location need DATA_LOCATION_ACCESS on it.
        for layer, location in locations.items():
            LakeformationPermissions(
                self, f"job_location_{layer}", principal=cfg.role_arns["job_execution"],
                permissions=["DATA_LOCATION_ACCESS"], data_location=LakeformationPermissionsDataLocation(arn=location.arn))
        # The tag step (spark_jobs/tables/lf_tags.py, as the job role) assigns classification values to columns.
        LakeformationPermissions(
            self, "job_associate_classification", principal=cfg.role_arns["job_execution"],
            permissions=["ASSOCIATE", "DESCRIBE"], lf_tag=LakeformationPermissionsLfTag(
                key=self.tag_keys["classification"], values=list(TAG_VALUES["classification"])))
        readers = TerraformIterator.from_list(TerraformLocal(self, "lf_personal_data_readers", str(cfg.reader_arns)).as_list)
        for name, grant in GRANTS.items():
            expression = [LakeformationPermissionsLfTagPolicyExpression(key=self.tag_keys[tag], values=list(values))
                          for tag, values in grant.expression.items()]
            policy = LakeformationPermissionsLfTagPolicy(resource_type=grant.resource_type, expression=expression)
            if grant.principal == "readers":
                LakeformationPermissions(self, name, for_each=readers, principal="${each.value}",
                                         permissions=list(grant.permissions), lf_tag_policy=policy,
                                         depends_on=database_tags)
            else:
                LakeformationPermissions(self, name, principal=cfg.role_arns[grant.principal],
                                         permissions=list(grant.permissions), lf_tag_policy=policy,
                                         depends_on=database_tags)
