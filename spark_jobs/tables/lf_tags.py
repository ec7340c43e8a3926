"""Lake Formation tags of the tables the jobs create: every column personal (``pii``) or not (``none``).

The tenant module tags each Glue database ``classification=pii`` (``modules/lake_formation.py``): a table
and every column inherit it, so a table the pipeline creates at its first run is closed to the consumer,
who is granted ``SELECT`` on ``classification=none`` columns of gold only. After a silver or gold run commits,
the job tags the table's columns (``tag_after_run``, as the job role; ``sync-tags`` does the same for every
table of a lake): a column is ``none`` when the contract knows it and it holds no personal data, else
``pii``. A column nobody has tagged yet (added by schema evolution before this step ran) stays ``pii``.
Before a silver or gold run commits (``tag_before_run``), the columns the tables already have and the contract
now calls personal are tagged ``pii``: a column reclassified from ``none`` is closed before the commit that writes
it, and nothing is opened before a commit. Locally the tables are registered in the emulator's Glue first
(``spark_jobs/io/glue_tables.py``), so the tags are on the columns of real Glue tables. And a run refuses to start
where a Glue database of the tenant would hand the tables it creates to ``IAM_ALLOWED_PRINCIPALS``
(``check_default_permissions``).

Which columns are personal, from the contract (``spark_jobs/README.md``, "Erasure"):

* silver: the ``subject_keys`` and ``personal_data`` columns, and each ``derived`` or ``computed`` column whose
  expression reads one of them (parsed with sqlglot); every other column of ``silver_columns(contract)``
  (the schema, the derived columns, ``event_date``, ``_is_late`` and the lineage columns) is ``none``;
* gold: a column named like a personal silver column, and those the gold module declares personal
  (``PERSONAL_COLUMNS``, e.g. ``clickstream_user_sessions``' ``session_id``, which holds the user id); every other
  column of the module's ``COLUMNS`` is ``none``. A gold module that declares no ``COLUMNS`` (``period_summary``:
  its columns depend on its options) has all its columns ``pii``: closed to the consumer, open to readers of
  personal data.

A column of the table that the contract or the gold module does not name is ``pii``. Bad input is refused before
any call to Lake Formation, in one line, and nothing is tagged: a personal column the contract names that the
table does not have (``LfTagError``). The plan is pure (``plan_table``); ``apply`` makes one
``AddLFTagsToResource`` call per value and table (the column lists), and fails on any failure it reports.

Locally the calls go to the emulator, which stores the tags but enforces nothing (policies/README.md); the
access matrix reads them back. A lake without Lake Formation tags in its config (a folder lake, a tenant applied
before the module had them) is left alone.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Mapping, Sequence

import tenant_model
from spark_jobs.contract.model import Contract, available_datasets, load_contract
from spark_jobs.lake.config import LakeConfig, gold_table_name, lake_from_args
from spark_jobs.runs.session import command_session


class LfTagError(ValueError):
    """The tags cannot be planned or applied; one line naming the table, the column and the rule. Nothing was
    tagged when the plan failed."""


@dataclasses.dataclass(frozen=True)
class TablePlan:
    """The classification of every column of one table.

    Attributes:
        layer: ``silver`` or ``gold``.
        database: the table's Glue database (the tenant output ``glue_database_names``).
        table: the table's name in it.
        personal: columns tagged ``pii`` (personal, or not known to the contract), in table order.
        not_personal: columns tagged ``none``, in table order.
    """

    layer: str
    database: str
    table: str
    personal: tuple[str, ...]
    not_personal: tuple[str, ...]

    @property
    def display(self) -> str:
        return f"{self.database}.{self.table}"


def _referenced_columns(expression: str) -> set[str]:
    """The column names a Spark SQL expression reads (sqlglot's Spark dialect)."""
    import sqlglot
    from sqlglot import exp

    try:
        parsed = sqlglot.parse_one(expression, read="spark")
    except sqlglot.errors.ParseError:
        return {"*"}  # unreadable: treated as reading everything, so as personal when anything is
    return {column.name for column in parsed.find_all(exp.Column)}


def personal_silver_columns(contract: Contract) -> set[str]:
    """The silver columns that hold personal data: subject keys, ``personal_data``, and the derived or computed
    columns whose expression reads one of them."""
    personal = set(contract.subject_keys or ()) | set(contract.personal_data)
    expressions = [(col.name, col.computed) for col in contract.schema if col.computed]
    expressions += [(derived.name, derived.expr) for derived in contract.derived]
    changed = True
    while changed:  # a derived column may read another derived column
        changed = False
        for name, expression in expressions:
            reads = _referenced_columns(expression)
            if name not in personal and personal and (reads & personal or "*" in reads):
                personal.add(name)
                changed = True
    return personal


def known_silver_columns(contract: Contract) -> tuple[str, ...]:
    from spark_jobs.transforms.silver import silver_columns

    return tuple(silver_columns(contract))


def gold_declaration(gold_name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(``COLUMNS``, ``PERSONAL_COLUMNS``) of a gold module; ``()`` where it declares none."""
    import importlib

    from spark_jobs.transforms.gold import GOLD_PACKAGE, load_gold

    load_gold(gold_name)  # a missing module: its own one-line error
    module = importlib.import_module(f"{GOLD_PACKAGE}.{gold_name}")
    return tuple(getattr(module, "COLUMNS", ())), tuple(getattr(module, "PERSONAL_COLUMNS", ()))


def check_contract(contract: Contract) -> None:
    """What can be refused before any run: a gold module's ``PERSONAL_COLUMNS`` that its ``COLUMNS`` lack."""
    for gold in contract.gold:
        columns, personal = gold_declaration(gold)
        missing = [c for c in personal if columns and c not in columns]
        if missing:
            raise LfTagError(f"gold transformation '{gold}': PERSONAL_COLUMNS names '{missing[0]}', which is not in its "
                             f"COLUMNS ({', '.join(columns)}); nothing was tagged")


def plan_table(contract: Contract, layer: str, database: str, table: str, columns: Sequence[str],
               gold_name: str = "") -> TablePlan:
    """The classification of ``columns`` (the table's, in order) of one table of ``contract``'s dataset; a
    personal column the contract names that the silver table lacks is refused (``LfTagError``)."""
    personal_silver = personal_silver_columns(contract)
    if layer == "silver":
        missing = sorted(personal_silver - set(columns))
        if missing:
            field = ("subject_keys" if missing[0] in (contract.subject_keys or ())
                     else "personal_data" if missing[0] in contract.personal_data else "derived")
            raise LfTagError(f"contract '{contract.dataset}': {field}: '{missing[0]}' is not a column of {database}.{table} "
                             f"(its columns: {', '.join(columns)}); nothing was tagged")
        known, personal = set(known_silver_columns(contract)), personal_silver
    elif layer == "gold":
        declared, declared_personal = gold_declaration(gold_name)
        missing = [c for c in declared_personal if c not in columns]
        if missing:
            raise LfTagError(f"gold transformation '{gold_name}': PERSONAL_COLUMNS names '{missing[0]}', which is not a "
                             f"column of {database}.{table} (its columns: {', '.join(columns)}); nothing was tagged")
        known, personal = set(declared), personal_silver | set(declared_personal)
    else:
        raise LfTagError(f"layer '{layer}' has no tables (silver, gold)")
    is_open = [c in known and c not in personal for c in columns]
    return TablePlan(layer=layer, database=database, table=table,
                     personal=tuple(c for c, ok in zip(columns, is_open) if not ok),
                     not_personal=tuple(c for c, ok in zip(columns, is_open) if ok))


def dataset_tables(contract: Contract, layers: Iterable[str] = tenant_model.CATALOG_LAYERS) -> list[tuple[str, str, str]]:
    """``(layer, table, gold name)`` of every table of the dataset in ``layers``."""
    tables = []
    if "silver" in layers:
        tables.append(("silver", contract.dataset, ""))
    if "gold" in layers:
        tables += [("gold", gold_table_name(contract.dataset, gold), gold) for gold in contract.gold]
    return tables


def plan_dataset(contract: Contract, databases: Mapping[str, str], columns_of: Callable[[str, str], Sequence[str] | None],
                 layers: Iterable[str] = tenant_model.CATALOG_LAYERS) -> list[TablePlan]:
    """The plans of the dataset's tables in ``layers``; ``columns_of(layer, table)`` gives a table's columns (None:
    the table does not exist yet, and is skipped). Every plan is made before any is applied."""
    check_contract(contract)
    plans = []
    for layer, table, gold in dataset_tables(contract, layers):
        if layer not in databases:
            raise LfTagError(f"no Glue database for layer '{layer}' (the tenant output glue_database_names)")
        columns = columns_of(layer, table)
        if columns is not None:
            plans.append(plan_table(contract, layer, databases[layer], table, list(columns), gold))
    return plans


# ---- Lake Formation ------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Classification:
    """The tenant's classification tag (the tenant output ``lake_formation``: ``classification_tag``,
    ``personal``, ``not_personal``)."""

    key: str
    personal: str = tenant_model.LF_PERSONAL
    not_personal: str = tenant_model.LF_NOT_PERSONAL


def classification(lake: LakeConfig) -> Classification | None:
    """The lake's classification tag, or None when its config has no Lake Formation tags."""
    return Classification(lake.lf_classification_tag) if lake.lf_classification_tag else None


def lake_formation_client(lake: LakeConfig):
    """boto3 Lake Formation client: the emulator's endpoint and CA locally, the default chain on AWS."""
    from spark_jobs.io.s3 import lake_client

    return lake_client(lake, "lakeformation")


def apply(client: Any, tag: Classification, plans: Sequence[TablePlan]) -> dict[str, int]:
    """Tag every planned column; returns ``{"tables", "personal", "not_personal"}`` counts. A failure Lake
    Formation reports stops with one line naming the table and the error."""
    counts = {"tables": 0, "personal": 0, "not_personal": 0}
    for plan in plans:
        for value, columns, kind in ((tag.personal, plan.personal, "personal"),
                                     (tag.not_personal, plan.not_personal, "not_personal")):
            if not columns:
                continue
            resource = {"TableWithColumns": {"DatabaseName": plan.database, "Name": plan.table,
                                             "ColumnNames": list(columns)}}
            answer = client.add_lf_tags_to_resource(Resource=resource, LFTags=[{"TagKey": tag.key, "TagValues": [value]}])
            if answer.get("Failures"):
                error = answer["Failures"][0].get("Error") or {}
                raise LfTagError(f"{plan.display}: tagging {len(columns)} column(s) {tag.key}={value} failed: "
                                 f"{error.get('ErrorCode', '?')}: {error.get('ErrorMessage', '')}")
            counts[kind] += len(columns)
        counts["tables"] += 1
    return counts


def summary(counts: Mapping[str, int], tag: Classification) -> str:
    return (f"{counts['tables']} table(s): {counts['not_personal']} column(s) {tag.key}={tag.not_personal}, "
            f"{counts['personal']} {tag.key}={tag.personal}")


def spark_columns(spark, lake: LakeConfig) -> Callable[[str, str], Sequence[str] | None]:
    """``columns_of`` from the lake's catalog: a table's columns as Spark reads them, None when it does not exist."""
    from spark_jobs.io import tables

    def columns_of(layer: str, name: str) -> Sequence[str] | None:
        table = tables.table(spark, lake, layer, name)
        return spark.table(table.qualified).columns if tables.exists(spark, table) else None

    return columns_of


def personal_only(plans: Sequence[TablePlan]) -> list[TablePlan]:
    """The plans with their personal columns only: what may be tagged before a commit (closing, never opening)."""
    return [dataclasses.replace(plan, not_personal=()) for plan in plans if plan.personal]


def tag_before_run(spark, lake: LakeConfig, dataset: str, layer: str) -> str:
    """Before a silver or gold run commits: every column the existing tables of that layer already have and that the
    contract now calls personal is tagged ``pii``, so a column reclassified from ``none`` is closed before the commit
    that writes it. Nothing is tagged ``none`` here (opening waits for the commit: ``tag_after_run``), and a column
    the commit adds has no tag yet, so it inherits the database's ``pii``: closed by default. Returns a line for the
    run's output ("" when nothing was tagged)."""
    tag = classification(lake)
    if tag is None or layer not in tenant_model.CATALOG_LAYERS:
        return ""
    plans = personal_only(plan_dataset(load_contract(dataset), dict(lake.glue_databases), spark_columns(spark, lake),
                                       [layer]))
    if not plans:
        return ""
    return f"lf-tags {layer} {dataset} before the commit: " + summary(apply(lake_formation_client(lake), tag, plans), tag)


def tag_after_run(spark, lake: LakeConfig, dataset: str, layer: str) -> str:
    """The job's tag step, after a silver or gold run committed: tag that layer's tables of the dataset (locally,
    after pointing their Glue tables at the commit: ``spark_jobs.io.glue_tables``). Returns a line for the run's
    output ("" when the lake has no Lake Formation tags or the layer no tables)."""
    tag = classification(lake)
    if tag is None or layer not in tenant_model.CATALOG_LAYERS:
        return ""
    from spark_jobs.io import glue_tables

    contract = load_contract(dataset)
    registered = glue_tables.register_layer(spark, lake, [table for _, table, _ in dataset_tables(contract, [layer])],
                                            layer)
    plans = plan_dataset(contract, dict(lake.glue_databases), spark_columns(spark, lake), [layer])
    line = f"lf-tags {layer} {dataset}: " + summary(apply(lake_formation_client(lake), tag, plans), tag)
    return line + (f"; {registered}" if registered else "")


IAM_ALLOWED_PRINCIPALS = "IAM_ALLOWED_PRINCIPALS"


def check_default_permissions(lake: LakeConfig) -> None:
    """The job's preflight on a lake whose tables Lake Formation guards: no Glue database of the tenant may give the
    tables the jobs create to ``IAM_ALLOWED_PRINCIPALS`` (its ``CreateTableDefaultPermissions``, which AWS copies from
    the account's Lake Formation settings when it creates the database). Such a table is open to every principal IAM
    lets in, and the tags and grants decide nothing. Refused in one line naming the fix (``LfTagError``)."""
    if classification(lake) is None or not lake.glue_databases:
        return
    from spark_jobs.io.s3 import lake_client

    glue = lake_client(lake, "glue")
    for layer, database in lake.glue_databases:
        if layer not in tenant_model.CATALOG_LAYERS:
            continue
        try:
            defaults = glue.get_database(Name=database)["Database"].get("CreateTableDefaultPermissions") or []
        except glue.exceptions.EntityNotFoundException:
            continue  # no such database (a folder lake named after one): nothing to hand over
        if any((d.get("Principal") or {}).get("DataLakePrincipalIdentifier") == IAM_ALLOWED_PRINCIPALS for d in defaults):
            raise LfTagError(
                f"Glue database {database} gives every table created in it to {IAM_ALLOWED_PRINCIPALS} "
                "(CreateTableDefaultPermissions), so Lake Formation's tags and grants would decide nothing for the "
                "tables this run creates; nothing was run. Fix: the platform unit that manages the account's Lake "
                f"Formation settings (tenants/_platform/lake-formation-{lake.region}: make apply UNIT=_platform/"
                f"lake-formation-{lake.region}) must be applied before the tenant's databases are created; for this "
                f"database, once, as a Lake Formation administrator: aws glue update-database --name "
                f"{database} --database-input '{{\"Name\": \"{database}\", \"CreateTableDefaultPermissions\": []}}' "
                f"and revoke {IAM_ALLOWED_PRINCIPALS}' grants on it (modules/README.md, \"IAMAllowedPrincipals\")")


def sync(spark, lake: LakeConfig, datasets: Sequence[str], dry_run: bool = False) -> tuple[list[TablePlan], dict]:
    """``sync-tags``: plan every existing table of ``datasets`` (all plans first, so a refusal tags nothing), then
    apply unless ``dry_run``."""
    tag = classification(lake)
    if tag is None:
        raise LfTagError("the lake config has no Lake Formation tags (the tenant output lake_formation); re-apply the "
                         "tenant, or pass --lf-classification-tag")
    columns_of = spark_columns(spark, lake)
    if not dry_run:  # locally, the Glue tables first (spark_jobs/io/glue_tables.py): the tags are on their columns
        from spark_jobs.io import glue_tables

        for dataset in datasets:
            for layer, table, _ in dataset_tables(load_contract(dataset)):
                glue_tables.register_layer(spark, lake, [table], layer)
    plans = [plan for dataset in datasets
             for plan in plan_dataset(load_contract(dataset), dict(lake.glue_databases), columns_of)]
    counts = {"tables": len(plans), "personal": sum(len(p.personal) for p in plans),
              "not_personal": sum(len(p.not_personal) for p in plans)}
    if not dry_run:
        counts = apply(lake_formation_client(lake), tag, plans)
    return plans, counts


# ---- `python -m spark_jobs sync-tags` --------------------------------------------------------------------
def add_parser(commands, datasets: Sequence[str], lake_args: Callable) -> None:
    parser = commands.add_parser(
        "sync-tags", help="tag the columns of every silver and gold table for Lake Formation (pii / none)",
        description="Tag the columns of every existing silver and gold table of the lake with the tenant's Lake "
                    "Formation classification tag, from the contracts (spark_jobs/tables/lf_tags.py). Runs after a table was "
                    "created or a contract reclassified a column; silver and gold runs tag their own tables.")
    parser.add_argument("--dataset", action="append", choices=list(datasets), help="dataset (repeatable; default: all)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, tag nothing")
    lake_args(parser)


def run(args) -> int:
    """The command, with the options ``spark_jobs.cli`` parsed."""
    lake = lake_from_args(args)
    tag = classification(lake)
    datasets = args.dataset or available_datasets()
    for dataset in datasets:  # contracts and gold declarations before Spark starts
        check_contract(load_contract(dataset))
    if tag is None:
        raise LfTagError("the lake config has no Lake Formation tags (the tenant output lake_formation); re-apply the "
                         "tenant, or pass --lf-classification-tag")
    with command_session(lake, "tenantlake-sync-tags", args.jars) as spark:
        plans, counts = sync(spark, lake, datasets, dry_run=args.dry_run)
    for plan in plans:
        print(f"{plan.display}: {tag.not_personal}: {', '.join(plan.not_personal) or '-'}; "
              f"{tag.personal}: {', '.join(plan.personal) or '-'}")
    print(("would tag " if args.dry_run else "tagged ") + summary(counts, tag))
    return 0
