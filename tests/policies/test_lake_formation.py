"""policies/lake_formation.py: the evaluator of Lake Formation's tag-based access control (inheritance, expressions,
named grants, IAMAllowedPrincipals), and the Lake Formation section of the matrix file (its rules and its table)."""
from __future__ import annotations

import pytest

from policies import lake_formation_matrix
from policies.access_matrix import MatrixError
from policies.lake_formation import Grant, LakeFormationState

CLS, LAYER = "acme-classification", "acme-layer"
CONSUMER = "arn:aws:iam::123456789012:role/acme-lake-consumer"
READER = "arn:aws:iam::123456789012:role/privacy-officer"
JOB = "arn:aws:iam::123456789012:role/acme-emr-job-execution"


def _policy(resource_type: str, **expression) -> dict:
    keys = {"classification": CLS, "layer": LAYER}
    return {"LFTagPolicy": {"ResourceType": resource_type, "Expression": [
        {"TagKey": keys[k], "TagValues": list(v)} for k, v in expression.items()]}}


def _state(grants=(), column_tags=None, table_tags=None, table_defaults=None) -> LakeFormationState:
    """Two databases tagged as the module tags them; the gold table's columns as the tag step tags them."""
    return LakeFormationState(
        tag_values={CLS: ("pii", "none"), LAYER: ("silver", "gold")},
        key_names={CLS: "classification", LAYER: "layer"},
        database_tags={"acme_gold": {CLS: "pii", LAYER: "gold"}, "acme_silver": {CLS: "pii", LAYER: "silver"}},
        table_tags=table_tags or {},
        column_tags=column_tags if column_tags is not None else {
            ("acme_gold", "sessions", "user_id"): {CLS: "pii"}, ("acme_gold", "sessions", "page_views"): {CLS: "none"},
            ("acme_silver", "clicks", "site_id"): {CLS: "none"}},
        grants=tuple(Grant(principal, resource, tuple(permissions)) for principal, resource, permissions in grants),
        table_defaults=table_defaults or {})


CONSUMER_GRANTS = [(CONSUMER, _policy("TABLE", classification=["none"], layer=["gold"]), ["SELECT", "DESCRIBE"]),
                   (CONSUMER, _policy("DATABASE", layer=["gold"]), ["DESCRIBE"])]


def test_a_column_tagged_none_is_selectable_and_one_tagged_or_inheriting_pii_is_not():
    state = _state(CONSUMER_GRANTS)
    allowed = state.decide(CONSUMER, "SELECT", "acme_gold", "sessions", "page_views")
    assert allowed.decision == "Allowed" and allowed.because == "TABLE classification=none AND layer=gold"
    assert state.decide(CONSUMER, "SELECT", "acme_gold", "sessions", "user_id").decision == "Denied"
    # Never tagged (schema evolution before the tag step): inherits the database's pii.
    assert state.effective_tags("acme_gold", "sessions", "referrer") == {CLS: "pii", LAYER: "gold"}
    assert state.decide(CONSUMER, "SELECT", "acme_gold", "sessions", "referrer").decision == "Denied"
    assert state.columns_allowed(CONSUMER, "acme_gold", "sessions", ["user_id", "page_views", "referrer"]) == ["page_views"]


def test_every_key_of_an_expression_must_match_and_any_of_its_values():
    state = _state(CONSUMER_GRANTS + [(READER, _policy("TABLE", classification=["pii", "none"], layer=["gold"]),
                                       ["SELECT"])])
    # A none column of silver: classification matches, layer does not.
    assert state.decide(CONSUMER, "SELECT", "acme_silver", "clicks", "site_id").decision == "Denied"
    for column in ("user_id", "page_views", "referrer"):
        assert state.decide(READER, "SELECT", "acme_gold", "sessions", column).decision == "Allowed"
    assert state.decide(READER, "SELECT", "acme_silver", "clicks", "site_id").decision == "Denied"


def test_a_lower_level_overrides_the_inherited_value_of_its_key_only():
    state = _state(CONSUMER_GRANTS, table_tags={("acme_gold", "sessions"): {CLS: "none"}},
                   column_tags={("acme_gold", "sessions", "user_id"): {CLS: "pii"}})
    assert state.effective_tags("acme_gold", "sessions") == {CLS: "none", LAYER: "gold"}  # layer still inherited
    assert state.decide(CONSUMER, "SELECT", "acme_gold", "sessions", "page_views").decision == "Allowed"
    assert state.decide(CONSUMER, "SELECT", "acme_gold", "sessions", "user_id").decision == "Denied"


def test_a_table_is_described_when_it_or_one_of_its_columns_matches():
    state = _state(CONSUMER_GRANTS)
    assert state.decide(CONSUMER, "DESCRIBE", "acme_gold", "sessions").decision == "Allowed"
    # A table none of whose columns were tagged none: nothing to show.
    assert state.decide(CONSUMER, "DESCRIBE", "acme_gold", "new_table").decision == "Denied"
    assert state.decide(CONSUMER, "DESCRIBE", "acme_gold").because == "DATABASE layer=gold"
    assert state.decide(CONSUMER, "DESCRIBE", "acme_silver").decision == "Denied"


def test_the_permission_and_the_principal_must_match_and_all_covers_every_permission():
    state = _state(CONSUMER_GRANTS + [(JOB, _policy("TABLE", layer=["silver", "gold"]), ["ALL"])])
    assert state.decide(CONSUMER, "INSERT", "acme_gold", "sessions").decision == "Denied"
    assert state.decide(READER, "SELECT", "acme_gold", "sessions", "page_views").decision == "Denied"
    assert state.decide(JOB, "INSERT", "acme_silver", "clicks").decision == "Allowed"
    assert state.decide(JOB, "SELECT", "acme_gold", "sessions", "user_id").because == "TABLE layer=gold|silver"
    assert state.decide(JOB, "CREATE_TABLE", "acme_gold").decision == "Denied"  # a TABLE grant is no database grant


def test_named_grants_on_a_database_a_table_and_columns():
    state = _state([
        (READER, {"Database": {"Name": "acme_gold"}}, ["DESCRIBE"]),
        (READER, {"Table": {"DatabaseName": "acme_silver", "TableWildcard": {}}}, ["SELECT"]),
        (CONSUMER, {"TableWithColumns": {"DatabaseName": "acme_gold", "Name": "sessions", "ColumnNames": ["page_views"]}},
         ["SELECT"]),
        (JOB, {"TableWithColumns": {"DatabaseName": "acme_gold", "Name": "sessions",
                                    "ColumnWildcard": {"ExcludedColumnNames": ["user_id"]}}}, ["SELECT"]),
    ])
    assert state.decide(READER, "DESCRIBE", "acme_gold").because == "Database acme_gold"
    assert state.decide(READER, "SELECT", "acme_silver", "clicks", "anything").because == "Table acme_silver.*"
    assert state.decide(CONSUMER, "SELECT", "acme_gold", "sessions", "page_views").decision == "Allowed"
    assert state.decide(CONSUMER, "SELECT", "acme_gold", "sessions", "event_date").decision == "Denied"
    assert state.decide(JOB, "SELECT", "acme_gold", "sessions", "event_date").decision == "Allowed"
    assert state.decide(JOB, "SELECT", "acme_gold", "sessions", "user_id").decision == "Denied"


@pytest.mark.parametrize("grants,defaults", [
    ([("IAM_ALLOWED_PRINCIPALS", {"Database": {"Name": "acme_gold"}}, ["ALL"])], {}),
    ([("IAM_ALLOWED_PRINCIPALS", {"Table": {"DatabaseName": "acme_gold", "Name": "sessions"}}, ["ALL"])], {}),
    ([], {"acme_gold": ("IAM_ALLOWED_PRINCIPALS",)}),
])
def test_iam_allowed_principals_hands_the_table_to_iam(grants, defaults):
    state = _state(grants, table_defaults=defaults)
    assert state.iam_allowed("acme_gold", "sessions") and not state.iam_allowed("acme_silver", "clicks")
    decision = state.decide(CONSUMER, "SELECT", "acme_gold", "sessions", "user_id")
    assert (decision.decision, decision.because) == ("Allowed", "IAMAllowedPrincipals")


def test_grants_from_the_api_merge_grantable_permissions():
    grant = Grant.from_api({"Principal": {"DataLakePrincipalIdentifier": CONSUMER}, "Resource": {"Database": {"Name": "d"}},
                            "Permissions": ["DESCRIBE"], "PermissionsWithGrantOption": ["ALTER"]})
    assert grant.permissions == ("ALTER", "DESCRIBE") and grant.allows("ALTER") and not grant.allows("DROP")


# ---- the matrix file's Lake Formation section ------------------------------------------------------------
def test_the_section_has_cells_for_every_principal_kind_and_both_decisions():
    matrix = lake_formation_matrix.load()
    assert {c.principal for c in matrix.cells} == set(lake_formation_matrix.PRINCIPAL_KINDS)
    assert {c.expect for c in matrix.cells} == {"Allowed", "Denied"}
    consumer_gold = [c for c in matrix.cells if c.principal == "consumer" and c.layer == "gold" and c.column]
    assert {c.expect for c in consumer_gold} == {"Allowed", "Denied"}


def test_its_table_in_modules_readme_is_current(capsys):
    assert lake_formation_matrix.main(["--check"]) == 0, capsys.readouterr().err
    table = lake_formation_matrix.render_table(lake_formation_matrix.load())
    assert table.count("\n| ") == len(lake_formation_matrix.load().cells) + 1


@pytest.mark.parametrize("cell,message", [
    ({"principal": "consumer", "permission": "SELECT", "table": "gold/t", "column": "c", "expect": "Denied"},
     "lake_formation cell 1: id is required"),
    ({"id": "x", "principal": "anyone", "permission": "SELECT", "table": "gold/t", "column": "c", "expect": "Denied"},
     "lake_formation cell 1 (x): principal 'anyone' is not one of consumer, "),
    ({"id": "x", "principal": "consumer", "permission": "SELECT", "table": "gold/t", "expect": "Denied"},
     "lake_formation cell 1 (x): a SELECT cell names a column, and only a SELECT cell does"),
    ({"id": "x", "principal": "consumer", "permission": "CREATE_TABLE", "table": "gold/t", "expect": "Denied"},
     "lake_formation cell 1 (x): permission 'CREATE_TABLE' on a table is not one of SELECT, "),
    ({"id": "x", "principal": "consumer", "permission": "SELECT", "table": "gold", "column": "c", "expect": "Denied"},
     "lake_formation cell 1 (x): table names <layer>/<table>, got 'gold'"),
    ({"id": "x", "principal": "consumer", "permission": "DESCRIBE", "database": "gold", "expect": "Denied",
      "because": "DATABASE layer=gold"}, "lake_formation cell 1 (x): because names a grant; a denied request has none"),
    ({"id": "x", "principal": "consumer", "permission": "DESCRIBE", "expect": "Allowed"},
     "lake_formation cell 1 (x): names a table (<layer>/<table>) or a database (<layer>)"),
])
def test_a_bad_cell_is_one_line_naming_the_cell_and_the_field(cell, message):
    with pytest.raises(MatrixError) as err:
        lake_formation_matrix.parse({"lake_formation": {"datasets": ["iot"], "cells": [cell]}}, "m.yaml")
    assert str(err.value).startswith(f"m.yaml: {message}") and "\n" not in str(err.value)
