"""Lake Formation of an applied tenant: its tags and grants read back, and who may do what on which column.

The IAM policy simulator does not evaluate Lake Formation, and the emulator stores Lake Formation's tags and grants
without enforcing them (as it stores bucket policies). This module reads them back (``read_lake_formation``: the
LF-tags, the account settings, each database's, table's and column's assigned tags, every grant, each database's
``CreateTableDefaultPermissions``) and evaluates a request the way Lake Formation's tag-based access control is
documented to (``LakeFormationState.decide``):

* **Inheritance.** A database's tags apply to its tables, a table's to its columns; a lower level that assigns a
  key a value of its own overrides the inherited value for that key ("Assigning LF-Tags to Data Catalog
  resources"). A column's effective tags are therefore its database's, overridden by its table's, overridden by
  its own.
* **Expressions.** A grant on an LF-tag expression matches a resource whose effective tags give every key of the
  expression one of its values: keys AND, values OR ("Lake Formation tag-based access control best practices
  and considerations"). A ``TABLE`` grant gives its permissions on the matching tables and, for ``SELECT``, on
  the matching columns: a principal granted ``SELECT`` on ``classification=none`` selects exactly the columns
  whose effective ``classification`` is ``none`` (column filtering by tags, "Notes and restrictions for
  column-level filtering"); it sees (``DESCRIBE``) a table whose own tags match or one of whose columns' do
  (the tutorial "Managing a data lake using Lake Formation tag-based access control", step 4, grants a table's
  columns this way). A ``DATABASE`` grant matches databases.
* **Named resources.** Grants on a database, a table (or every table of a database) and a table's columns
  (names, or every column but the excluded ones) give their permissions on exactly those.
* **IAMAllowedPrincipals.** A grant to ``IAM_ALLOWED_PRINCIPALS`` on a table or its database, or a database whose
  ``CreateTableDefaultPermissions`` names it, hands the table to IAM: every principal whose identity policy allows
  the Glue and S3 actions may select every column. Such a table is reported as ``iam_allowed`` and every
  request on it is ``Allowed`` (``because``: ``IAMAllowedPrincipals``), so the matrix fails loudly.
* **Denied** is the default; Lake Formation has no explicit deny.

What the evaluator does not model: data lake administrators' and creators' implicit permissions (administrators
may grant themselves anything; the module makes the deployer one), data cell filters (the module creates none),
cross-account grants, and hybrid access mode (not used: every principal goes through Lake Formation).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Mapping, Sequence

IAM_ALLOWED_PRINCIPALS = "IAM_ALLOWED_PRINCIPALS"
DECISIONS: tuple[str, ...] = ("Allowed", "Denied")
# Permissions a request may ask for, and the resource it names: a column (SELECT), a table, a database.
TABLE_PERMISSIONS: tuple[str, ...] = ("SELECT", "DESCRIBE", "INSERT", "DELETE", "ALTER", "DROP")
DATABASE_PERMISSIONS: tuple[str, ...] = ("DESCRIBE", "CREATE_TABLE", "ALTER", "DROP")

Tags = Mapping[str, str]  # tag key -> the one value assigned (a resource has one value per key)


@dataclasses.dataclass(frozen=True)
class Grant:
    """One grant as ``ListPermissions`` returns it: principal, resource, permissions (with grant option too)."""

    principal: str
    resource: Mapping[str, Any]
    permissions: tuple[str, ...]

    @classmethod
    def from_api(cls, item: Mapping[str, Any]) -> "Grant":
        permissions = set(item.get("Permissions") or ()) | set(item.get("PermissionsWithGrantOption") or ())
        return cls(principal=item["Principal"]["DataLakePrincipalIdentifier"], resource=dict(item["Resource"]),
                   permissions=tuple(sorted(permissions)))

    def allows(self, permission: str) -> bool:
        return permission in self.permissions or "ALL" in self.permissions

    def label(self, key_names: Mapping[str, str]) -> str:
        """A readable name: ``TABLE classification=none AND layer=gold`` (tag keys by ``key_names``), or the named
        resource."""
        r = self.resource
        if "LFTagPolicy" in r:
            expression = " AND ".join(sorted(  # keys and values sorted: the API keeps no order
                f"{key_names.get(t['TagKey'], t['TagKey'])}={'|'.join(sorted(t['TagValues']))}"
                for t in r["LFTagPolicy"]["Expression"]))
            return f"{r['LFTagPolicy']['ResourceType']} {expression}"
        if "TableWithColumns" in r:
            t = r["TableWithColumns"]
            return f"TableWithColumns {t['DatabaseName']}.{t['Name']}"
        if "Table" in r:
            t = r["Table"]
            return f"Table {t['DatabaseName']}.{t.get('Name', '*')}"
        if "Database" in r:
            return f"Database {r['Database']['Name']}"
        return next(iter(r), "?")


@dataclasses.dataclass(frozen=True)
class Decision:
    decision: str  # Allowed or Denied
    because: str = ""  # the deciding grant's label ("" when denied)


@dataclasses.dataclass(frozen=True)
class LakeFormationState:
    """What Lake Formation holds for one tenant, read back.

    Attributes:
        tag_values: every LF-tag of the catalog and its values.
        key_names: the tenant's tag keys by their short name (``{"acme-classification": "classification"}``).
        database_tags, table_tags, column_tags: tags assigned at each level (not inherited).
        grants: every grant of the catalog.
        table_defaults: each database's ``CreateTableDefaultPermissions`` principals.
        settings: the account's data lake settings (``GetDataLakeSettings``).
        registered: the registered locations and the roles that read them.
    """

    tag_values: Mapping[str, tuple[str, ...]]
    key_names: Mapping[str, str]
    database_tags: Mapping[str, Tags]
    table_tags: Mapping[tuple[str, str], Tags]
    column_tags: Mapping[tuple[str, str, str], Tags]
    grants: tuple[Grant, ...]
    table_defaults: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    registered: Mapping[str, str] = dataclasses.field(default_factory=dict)

    # ---- tags --------------------------------------------------------------------------------------
    def effective_tags(self, database: str, table: str = "", column: str = "") -> dict[str, str]:
        """The database's tags, overridden by the table's, overridden by the column's."""
        tags = dict(self.database_tags.get(database, {}))
        if table:
            tags.update(self.table_tags.get((database, table), {}))
        if column:
            tags.update(self.column_tags.get((database, table, column), {}))
        return tags

    @staticmethod
    def _matches(expression: Iterable[Mapping[str, Any]], tags: Tags) -> bool:
        return all(tags.get(term["TagKey"]) in set(term["TagValues"]) for term in expression)

    # ---- IAMAllowedPrincipals ----------------------------------------------------------------------
    def iam_allowed(self, database: str, table: str = "") -> bool:
        """Whether IAM decides for the database (or table): a grant to IAM_ALLOWED_PRINCIPALS on it or on its
        database, or the database giving new tables that grant."""
        if IAM_ALLOWED_PRINCIPALS in self.table_defaults.get(database, ()):
            return True
        for grant in self.grants:
            if grant.principal != IAM_ALLOWED_PRINCIPALS:
                continue
            r = grant.resource
            if "Database" in r and r["Database"]["Name"] == database:
                return True
            named = r.get("Table") or r.get("TableWithColumns")
            if named and named["DatabaseName"] == database and (not table or named.get("Name") in (table, None)
                                                                or "TableWildcard" in named):
                return True
        return False

    # ---- decisions ---------------------------------------------------------------------------------
    def decide(self, principal: str, permission: str, database: str, table: str = "", column: str = "") -> Decision:
        """May ``principal`` (an IAM ARN) do ``permission`` on the column (SELECT), table or database?"""
        if self.iam_allowed(database, table):
            return Decision("Allowed", "IAMAllowedPrincipals")
        for grant in self.grants:
            if grant.principal == principal and grant.allows(permission) and self._covers(grant, database, table, column):
                return Decision("Allowed", grant.label(self.key_names))
        return Decision("Denied")

    def _covers(self, grant: Grant, database: str, table: str, column: str) -> bool:
        r = grant.resource
        if "LFTagPolicy" in r:
            policy = r["LFTagPolicy"]
            if policy["ResourceType"] == "DATABASE":
                return not table and self._matches(policy["Expression"], self.effective_tags(database))
            if not table:
                return False
            if column:
                return self._matches(policy["Expression"], self.effective_tags(database, table, column))
            # The table itself: its own tags match, or one of its columns' does (the grant then shows the table
            # with those columns only, as in the LF-TBAC tutorial's column-level grant).
            return self._matches(policy["Expression"], self.effective_tags(database, table)) or any(
                self._matches(policy["Expression"], self.effective_tags(database, table, c))
                for (d, t, c) in self.column_tags if (d, t) == (database, table))
        if "Database" in r:
            return not table and r["Database"]["Name"] == database
        if "Table" in r:
            named = r["Table"]
            return bool(table) and named["DatabaseName"] == database and (
                "TableWildcard" in named or named.get("Name") == table)
        if "TableWithColumns" in r:
            named = r["TableWithColumns"]
            if not table or named["DatabaseName"] != database or named.get("Name") != table:
                return False
            if not column:
                return True
            if "ColumnWildcard" in named:
                return column not in (named["ColumnWildcard"] or {}).get("ExcludedColumnNames", ())
            return column in named.get("ColumnNames", ())
        return False

    def columns_allowed(self, principal: str, database: str, table: str, columns: Sequence[str]) -> list[str]:
        """The columns of ``columns`` the principal may select."""
        return [c for c in columns if self.decide(principal, "SELECT", database, table, c).decision == "Allowed"]


# ---- read back ------------------------------------------------------------------------------------------
ClientFactory = Callable[..., Any]


def _tags(items: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    return {t["TagKey"]: t["TagValues"][0] for t in items or () if t.get("TagValues")}


def _all_grants(lf) -> list[Grant]:
    grants, token = [], None
    while True:
        page = lf.list_permissions(**({"NextToken": token} if token else {}))
        grants += [Grant.from_api(item) for item in page.get("PrincipalResourcePermissions", [])]
        token = page.get("NextToken")
        if not token:
            return grants


def read_lake_formation(lake: Mapping[str, Any], client: ClientFactory,
                        tables: Mapping[str, Mapping[str, Sequence[str]]]) -> LakeFormationState:
    """Read back the tenant's Lake Formation from AWS (or the emulator): ``lake`` is its ``lake.json``,
    ``tables`` the tables to read column tags of (layer -> table -> columns)."""
    region = lake["region"]
    lf, glue = client("lakeformation", region), client("glue", region)
    outputs = lake.get("lake_formation") or {}
    if not outputs.get("classification_tag"):
        raise ValueError(f"tenant {lake.get('tenant_id')!r}: its outputs have no lake_formation tags; re-apply it")
    key_names = {outputs["classification_tag"]: "classification", outputs["layer_tag"]: "layer"}
    tag_values = {t["TagKey"]: tuple(t["TagValues"]) for t in lf.list_lf_tags().get("LFTags", [])}
    databases = dict(lake.get("glue_database_names") or {})
    database_tags, table_defaults, table_tags, column_tags = {}, {}, {}, {}
    for layer, database in databases.items():
        answer = lf.get_resource_lf_tags(Resource={"Database": {"Name": database}}, ShowAssignedLFTags=True)
        database_tags[database] = _tags(answer.get("LFTagOnDatabase"))
        defaults = glue.get_database(Name=database)["Database"].get("CreateTableDefaultPermissions") or []
        table_defaults[database] = tuple(p["Principal"]["DataLakePrincipalIdentifier"] for p in defaults)
        for table, columns in (tables.get(layer) or {}).items():
            answer = lf.get_resource_lf_tags(Resource={"Table": {"DatabaseName": database, "Name": table}},
                                             ShowAssignedLFTags=True)
            table_tags[(database, table)] = _tags(answer.get("LFTagsOnTable"))
            answer = lf.get_resource_lf_tags(Resource={"TableWithColumns": {
                "DatabaseName": database, "Name": table, "ColumnNames": list(columns)}}, ShowAssignedLFTags=True)
            for item in answer.get("LFTagsOnColumns", []):
                column_tags[(database, table, item["Name"])] = _tags(item.get("LFTags"))
    registered = {r["ResourceArn"]: r.get("RoleArn", "") for r in lf.list_resources().get("ResourceInfoList", [])}
    return LakeFormationState(
        tag_values=tag_values, key_names=key_names, database_tags=database_tags, table_tags=table_tags,
        column_tags=column_tags, grants=tuple(_all_grants(lf)), table_defaults=table_defaults,
        settings=lf.get_data_lake_settings().get("DataLakeSettings", {}), registered=registered)
