"""modules/lake_formation.py: LF-tags, database tags, the data-access role, the registered location and
every grant, as synthesized into the tenant module."""
from __future__ import annotations

import tenant_model as model
from modules.lake_formation import GRANTS, TABLE_READ, TAG_VALUES
from tests.modules.helpers import document_statements, resource

CLASSIFICATION = "${aws_lakeformation_lf_tag.lf_tag_classification.key}"
LAYER = "${aws_lakeformation_lf_tag.lf_tag_layer.key}"
LAKE = "${aws_s3_bucket.lake_bucket.arn}"
ROLES = {"job_execution": "${aws_iam_role.roles_job_execution.arn}", "erasure": "${aws_iam_role.roles_erasure.arn}",
         "consumer": "${aws_iam_role.roles_consumer.arn}", "readers": "${each.value}"}


def _lf(module: dict, type_: str) -> dict:
    return module["resource"][type_]


def test_the_account_settings_are_no_tenants(tenant_module):
    """The account's Lake Formation settings are the platform unit's (modules/lake_formation_settings.py): the tenant
    module neither creates them nor orders anything after them (the unit dependency does)."""
    assert "aws_lakeformation_data_lake_settings" not in tenant_module["resource"]
    assert "manage_settings" not in tenant_module["variable"]["lake_formation"]["type"]
    for layer in model.CATALOG_LAYERS:
        assert "depends_on" not in resource(tenant_module, "aws_glue_catalog_database", f"catalog_{layer}")


def test_the_tenants_own_tag_keys_and_values(tenant_module):
    tags = _lf(tenant_module, "aws_lakeformation_lf_tag")
    assert {name: (tag["key"], tag["values"]) for name, tag in tags.items()} == {
        "lf_tag_classification": ("${var.tenant_id}-classification", ["pii", "none"]),
        "lf_tag_layer": ("${var.tenant_id}-layer", ["silver", "gold"])}
    assert TAG_VALUES == {"classification": model.LF_CLASSIFICATION_VALUES, "layer": model.CATALOG_LAYERS}
    assert model.NAME_TEMPLATES["lf_tag_classification"] == "{tenant_id}-classification"


def test_every_database_is_personal_by_default_and_tagged_with_its_layer(tenant_module):
    tagged = _lf(tenant_module, "aws_lakeformation_resource_lf_tags")
    assert set(tagged) == {f"lf_database_{layer}" for layer in model.CATALOG_LAYERS}
    for layer in model.CATALOG_LAYERS:
        body = tagged[f"lf_database_{layer}"]
        assert body["database"] == {"name": f"${{aws_glue_catalog_database.catalog_{layer}.name}}"}
        # One resource per database with both keys: a second would replace the first's tags on some backends.
        assert body["lf_tag"] == [{"key": CLASSIFICATION, "value": "pii"}, {"key": LAYER, "value": layer}]


def test_the_data_access_role_reads_the_registered_gold_location_only(tenant_module):
    role = resource(tenant_module, "aws_iam_role", "lf_role")
    assert role["name"] == "${var.tenant_id}-lakeformation-access"
    trust = document_statements(tenant_module, "lf_role_trust")["LakeFormationVendsCredentials"]
    assert trust["principals"] == [{"type": "Service", "identifiers": ["lakeformation.amazonaws.com"]}]
    assert trust["actions"] == ["sts:AssumeRole"]
    assert trust["condition"] == [{"test": "StringEquals", "variable": "aws:SourceAccount", "values": ["${var.account_id}"]}]
    s = document_statements(tenant_module, "lf_role_permissions")
    assert s["ReadRegisteredLocations"]["actions"] == ["s3:GetObject"]
    assert s["ReadRegisteredLocations"]["resources"] == [f"{LAKE}/gold/*"]
    assert s["ListRegisteredLocations"]["condition"][0]["values"] == ["gold/", "gold/*"]
    assert s["DecryptRegisteredLocations"]["resources"] == ["${aws_kms_key.kms_key.arn}"]
    assert s["DecryptRegisteredLocations"]["actions"] == ["kms:Decrypt", "kms:DescribeKey"]
    location = resource(tenant_module, "aws_lakeformation_resource", "lf_location_gold")
    assert location["arn"] == f"{LAKE}/gold" and location["role_arn"] == "${aws_iam_role.lf_role.arn}"


def test_every_grant_is_by_tag_expression_and_as_documented(tenant_module):
    grants = _lf(tenant_module, "aws_lakeformation_permissions")
    keys = {"classification": CLASSIFICATION, "layer": LAYER}
    for name, grant in GRANTS.items():
        body = grants[f"lf_{name}"]
        assert body["principal"] == ROLES[grant.principal], name
        assert body["permissions"] == list(grant.permissions), name
        assert body["lf_tag_policy"] == {"resource_type": grant.resource_type, "expression": [
            {"key": keys[tag], "values": list(values)} for tag, values in grant.expression.items()]}, name
        assert ("for_each" in body) == (grant.principal == "readers")
    assert grants["lf_reader_tables"]["for_each"] == "${toset(local.lf_personal_data_readers)}"
    assert tenant_module["locals"]["lf_personal_data_readers"] == "${var.lake_formation.personal_data_reader_arns}"


def test_the_consumer_selects_the_non_personal_columns_of_gold_and_readers_every_column():
    assert GRANTS["consumer_tables"].expression == {"classification": ("none",), "layer": ("gold",)}
    assert GRANTS["consumer_tables"].permissions == TABLE_READ == ("SELECT", "DESCRIBE")
    assert GRANTS["reader_tables"].expression == {"classification": ("pii", "none"), "layer": ("gold",)}
    # Nobody but the pipeline's roles is granted anything on silver.
    assert {g.principal for g in GRANTS.values() if "silver" in g.expression["layer"]} == {"job_execution", "erasure"}
    # Only the job role writes; the consumer and readers never get INSERT, DELETE, ALTER or DROP.
    writers = {g.principal for g in GRANTS.values() if {"INSERT", "DELETE", "ALTER", "DROP"} & set(g.permissions)}
    assert writers == {"job_execution", "erasure"}


def test_the_job_role_may_create_tables_in_the_location_and_tag_their_columns(tenant_module):
    grants = _lf(tenant_module, "aws_lakeformation_permissions")
    location = grants["lf_job_location_gold"]
    assert location["principal"] == ROLES["job_execution"] and location["permissions"] == ["DATA_LOCATION_ACCESS"]
    assert location["data_location"] == {"arn": "${aws_lakeformation_resource.lf_location_gold.arn}"}
    associate = grants["lf_job_associate_classification"]
    assert associate["principal"] == ROLES["job_execution"] and associate["permissions"] == ["ASSOCIATE", "DESCRIBE"]
    assert associate["lf_tag"] == {"key": CLASSIFICATION, "values": ["pii", "none"]}
    # Nobody else may assign tags: a consumer that could would re-tag a personal column.
    assert [n for n, g in grants.items() if "ASSOCIATE" in g["permissions"]] == ["lf_job_associate_classification"]
