"""``python -m spark_jobs contract plan``: what a contract change does to a dataset's live tables, and the
schema evolution that ``run``/``run-all`` apply before they write (spark_jobs/README.md, "Schema evolution").

The plan compares the tables the contract would write (silver's columns, each gold's output columns: the
real transformations, analysed on empty frames, so no data is read) with the live Iceberg tables, and lists
each change: a column added, widened (int -> long, float -> double, a decimal's precision), renamed (the
contract's ``renamed_from``), dropped (``removed: true``) or kept (a removed column under ``additive``), a
narrowed or otherwise changed type, a changed key or partition column. For each it says whether Iceberg
makes it in the metadata alone (no data file rewritten), whether the contract's ``evolution`` policy allows
it, what it does to gold, and, when refused, the way forward. A gold column that follows a silver rename
(``temp_avg`` -> ``temperature_avg`` after ``temp`` -> ``temperature``) is renamed too, keeping its values.

``run``/``run-all`` check the plan of every dataset they will run before any layer runs (a refused change
stops everything, one line, exit 2), and each silver or gold publish first applies its table's allowed
changes in ONE Iceberg commit (``tables.evolve``), then writes; a write that fails puts the schema back
(``publish_evolved``).
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.resources
import json
import sys
from typing import Any

from spark_jobs.contract.model import Contract, load_contract
from spark_jobs.contract.parts import ContractError
from spark_jobs.io import tables
from spark_jobs.io.partitioning import Partitioning
from spark_jobs.lake.config import lake_from_args
from spark_jobs.runs.session import command_session

KEY_PROPERTY = "tenantlake.key"                 # the silver key the table's rows were deduplicated on
CONTRACT_PROPERTY = "tenantlake.contract-version"  # the contract version of the table's last evolution
# What computed the table's rows as of its creation or last full run (``rows_contract``, JSON): a run that is
# not full recomputes only new and touched partitions, so a change here reaches the others with ``--full``.
ROWS_PROPERTY = "tenantlake.rows-contract"
WIDENINGS = {("int", "bigint"), ("float", "double")}
KINDS = ("add", "widen", "rename", "drop", "keep", "narrow", "retype", "key", "partition")


@dataclasses.dataclass(frozen=True)
class Change:
    """One difference between the contract and a live table.

    Attributes:
        table: the table as users name it (``silver.weather``).
        kind: ``add``, ``widen``, ``rename``, ``drop``, ``keep`` (a removed column the table keeps),
            ``narrow``, ``retype`` (a type Iceberg cannot change), ``key`` or ``partition``.
        column: the column as the contract names it (a rename's new name).
        before / after: the type before and after (a rename: the old and new name; ``key``: the keys).
        metadata_only: Iceberg makes the change without rewriting a data file.
        refused: why the change is refused ("" when it is allowed).
        fix: the way forward when refused. @default - ""
        effect: what the change does besides: to the gold tables (a silver change), to the rows (a kept
            column, a partition change). @default - ""
        step: the schema step that applies it (``tables.SchemaStep``), None when there is nothing to commit.
    """

    table: str
    kind: str
    column: str
    before: str | None
    after: str | None
    metadata_only: bool
    refused: str = ""
    fix: str = ""
    effect: str = ""
    step: tables.SchemaStep | None = None

    @property
    def allowed(self) -> bool:
        return not self.refused

    @property
    def what(self) -> str:
        """``widen wind_dir int -> bigint``, ``rename temp -> temperature``, ``add dewp2 double``."""
        if self.kind == "rename":
            return f"rename {self.before} -> {self.after}"
        if self.kind in ("add",):
            return f"add {self.column} {self.after}"
        if self.kind in ("drop", "keep"):
            return f"{'drop' if self.kind == 'drop' else 'keep (removed from the contract)'} {self.column} {self.before}"
        return f"{self.kind} {self.column} {self.before} -> {self.after}"

    def to_dict(self) -> dict[str, Any]:
        record = {k: v for k, v in dataclasses.asdict(self).items() if k != "step"}
        return {**record, "allowed": self.allowed, "sql": self.step.sql if self.step else None}


@dataclasses.dataclass
class TablePlan:
    """The plan of one table: its changes, the properties the evolution records, and what of the contract that
    computes its rows changed since its last full run (``rebuild``: old rows keep what they were computed
    with until a run with ``--full``)."""

    table: str
    exists: bool
    schema_id: int | None = None
    changes: list[Change] = dataclasses.field(default_factory=list)
    properties: dict[str, str] = dataclasses.field(default_factory=dict)
    rebuild: list[str] = dataclasses.field(default_factory=list)

    @property
    def steps(self) -> list[tables.SchemaStep]:
        return [c.step for c in self.changes if c.allowed and c.step is not None]

    @property
    def refused(self) -> list[Change]:
        return [c for c in self.changes if not c.allowed]


@dataclasses.dataclass
class Plan:
    dataset: str
    contract_version: str
    evolution: str
    tables: list[TablePlan]

    @property
    def changes(self) -> list[Change]:
        return [c for t in self.tables for c in t.changes]

    @property
    def refused(self) -> list[Change]:
        return [c for c in self.changes if not c.allowed]

    def to_dict(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "contract_version": self.contract_version, "evolution": self.evolution,
                "refused": len(self.refused),
                "tables": [{"table": t.table, "exists": t.exists, "schema_id": t.schema_id,
                            "properties": t.properties, "changes": [c.to_dict() for c in t.changes],
                            "rebuild": t.rebuild} for t in self.tables]}


# ------------------------------------------------------------------------------------------ types and policy
def type_change(before: str, after: str) -> str:
    """How a column's Spark type changes: ``same``, ``widen`` (what Iceberg promotes in place: int -> bigint,
    float -> double, a decimal's precision up at the same scale), ``narrow`` (the reverse) or ``retype``."""
    if before == after:
        return "same"
    if (before, after) in WIDENINGS:
        return "widen"
    if (after, before) in WIDENINGS:
        return "narrow"
    if before.startswith("decimal(") and after.startswith("decimal("):
        (p1, s1), (p2, s2) = (tuple(int(x) for x in t[8:-1].split(",")) for t in (before, after))
        if s1 == s2:
            return "widen" if p2 > p1 else "narrow"
    return "retype"


def _spark_name(contract_type: str) -> str:
    return {"long": "bigint"}.get(contract_type, contract_type)


def _contract_type(spark_type: str) -> str:
    return {"bigint": "long"}.get(spark_type, spark_type)


def _policy_refusal(policy: str, kind: str, column: str, before: str | None) -> tuple[str, str]:
    """(why refused, the way forward) of an allowed-in-Iceberg change under ``policy``; ("", "") when allowed."""
    if policy == "strict":
        return ("evolution: strict allows no table change",
                "set `evolution: additive` (adds, widenings) or `permissive` (also renames, drops) in the contract, "
                "or undo the change")
    if policy == "additive" and kind == "rename":
        return (f"a rename breaks every query that names `{before}`; evolution: additive does not allow it",
                f"set `evolution: permissive` to rename it in place (metadata only), or add `{column}` as a new "
                f"column and keep `{before}`")
    if policy == "additive" and kind == "drop":
        return (f"a drop breaks every query that names `{column}`; evolution: additive keeps it",
                "set `evolution: permissive` to drop it (metadata only)")
    return "", ""


# ------------------------------------------------------------------------------------------ the diff
def _mentions(gold_column: str, silver_column: str) -> bool:
    return (gold_column == silver_column or gold_column.startswith(f"{silver_column}_")
            or gold_column.endswith(f"_{silver_column}") or f"_{silver_column}_" in gold_column)


def _replace_token(name: str, old: str, new: str) -> str | None:
    """``name`` with the column ``old`` in it replaced by ``new`` (``temp_avg`` -> ``temperature_avg``)."""
    if name == old:
        return new
    if name.startswith(f"{old}_"):
        return new + name[len(old):]
    if name.endswith(f"_{old}"):
        return name[: -len(old)] + new
    if f"_{old}_" in name:
        return name.replace(f"_{old}_", f"_{new}_", 1)
    return None


def follow_renames(live: list[tuple[str, str]], expected: list[tuple[str, str]],
                   silver_renames: dict[str, str]) -> dict[str, str]:
    """A gold table's renames that follow silver's (new -> old): a live column that is gone, whose name with
    a renamed silver column's old name replaced by its new one is a new column of the gold output."""
    live_names, expected_names = dict(live), dict(expected)
    gone = [name for name in live_names if name not in expected_names]
    new = {name for name in expected_names if name not in live_names}
    found = {}
    for column in gone:
        for silver_new, silver_old in silver_renames.items():
            candidate = _replace_token(column, silver_old, silver_new)
            if candidate in new and candidate not in found:
                found[candidate] = column
                break
    return found


def diff_columns(table: str, live: list[tuple[str, str]], expected: list[tuple[str, str]], policy: str, *,
                 renames: dict[str, str], removed: tuple[str, ...] | None, rebuild: str) -> list[Change]:
    """The column changes from ``live`` (the table's (name, Spark type), in its order) to ``expected`` (the
    output's). ``renames``: new name -> old name. ``removed``: the columns the contract removed on purpose
    (silver); None when a column may disappear without that (gold: its output is code). ``rebuild``: how to
    rebuild the table from its input (the way forward of a change Iceberg cannot make in place)."""
    live_types, expected_types = dict(live), dict(expected)
    renamed = {new: old for new, old in renames.items()
               if new in expected_types and new not in live_types and old in live_types}
    current_name = {new: old for new, old in renamed.items()}  # the table's name of each expected column now
    changes: list[Change] = []
    previous: str | None = None
    for name, kind in expected:
        old = renamed.get(name)
        if old is not None:
            why, fix = _policy_refusal(policy, "rename", name, old)
            changes.append(Change(table, "rename", name, old, name, True, why, fix,
                                  step=tables.SchemaStep("rename", old, new_name=name)))
            changes += _type_changes(table, name, old, live_types[old], kind, policy, rebuild)
        elif name not in live_types:
            why, fix = _policy_refusal(policy, "add", name, None)
            after = current_name.get(previous, previous) if previous else None
            changes.append(Change(table, "add", name, None, kind, True, why, fix,
                                  step=tables.SchemaStep("add", name, type=kind, after=after)))
        else:
            changes += _type_changes(table, name, name, live_types[name], kind, policy, rebuild)
        previous = name
    for name, kind in live:
        if name in expected_types or name in renamed.values():
            continue
        if removed is not None and name not in removed:
            changes.append(Change(
                table, "drop", name, kind, None, True, f"`{name}` is in {table} but not in the contract",
                f"to drop it on purpose keep its entry with `removed: true` (a schema column's landing field is "
                f"then ignored), or put it back"))
        elif policy == "additive":
            changes.append(Change(table, "keep", name, kind, None, True,
                                  effect="kept in the table: rows written from now on read null in it"))
        else:
            why, fix = _policy_refusal(policy, "drop", name, kind)
            changes.append(Change(table, "drop", name, kind, None, True, why, fix,
                                  step=tables.SchemaStep("drop", name)))
    return changes


def _type_changes(table: str, name: str, table_name: str, before: str, after: str, policy: str,
                  rebuild: str) -> list[Change]:
    change = type_change(before, after)
    if change == "same":
        return []
    if change == "widen":
        why, fix = _policy_refusal(policy, "widen", name, before)
        return [Change(table, "widen", name, before, after, True, why, fix,
                       step=tables.SchemaStep("widen", table_name, type=after))]
    if change == "narrow":
        return [Change(table, "narrow", name, before, after, False,
                       f"narrowing {before} -> {after} would rewrite every data file (Iceberg widens types only)",
                       f"keep `{name}` as {_contract_type(before)} in the contract, or add a column of the narrower type "
                       f"under a new name and mark `{name}` `removed: true`")]
    return [Change(table, "retype", name, before, after, False,
                   f"{before} -> {after} is not a type change Iceberg can make in place (every data file would be "
                   f"rewritten)",
                   f"add a column under a new name (and mark `{name}` `removed: true`), or {rebuild}")]


# ------------------------------------------------------------------------------------------ expected schemas
def silver_schema(spark, contract: Contract):
    """The silver table's columns as the silver job writes them (``transforms.silver.to_silver``), from the
    contract alone: the typed columns, enrichment, ``event_date``, ``_is_late`` and lineage, analysed on an
    empty frame (no Spark job). A ``derived`` expression that does not evaluate is a ``ContractError``."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import types as T

    from spark_jobs.transforms import bronze as bronze_tx
    from spark_jobs.transforms import silver as silver_tx

    bronze = {f.name: f for f in bronze_tx.bronze_schema(contract).fields}
    typed = T.StructType([T.StructField(col.name, T._parse_datatype_string(col.type)) for col in contract.schema]
                         + [T.StructField("_is_late", T.BooleanType())]
                         + [bronze[name] for name in silver_tx.LINEAGE_COLUMNS])
    try:
        return silver_tx.to_silver(spark.createDataFrame([], typed), contract).schema
    except AnalysisException as exc:
        first_line = (str(exc).strip().splitlines() or [""])[0][:300]
        raise ContractError(contract.dataset, "derived", f"an expression does not evaluate over the schema "
                                                         f"({first_line})") from None


def gold_schema(spark, contract: Contract, name: str, silver):
    """A gold output's columns: its module's ``build`` on an empty silver frame of ``silver`` schema (subject
    keys as their keyed hash, text, with ``pseudonymise_gold``). Options it refuses are a ``ContractError``."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    from spark_jobs.transforms.gold import GoldNotFoundError, load_gold

    frame = spark.createDataFrame([], silver)
    if contract.pseudonymise_gold:
        keys = set(contract.subject_keys or ())
        frame = frame.select(*[F.col(c).cast("string").alias(c) if c in keys else F.col(c) for c in frame.columns])
    try:
        return load_gold(name).build(frame, dict(contract.gold_options.get(name, {}))).schema
    except (ValueError, GoldNotFoundError, AnalysisException) as exc:
        first_line = (str(exc).strip().splitlines() or [""])[0][:300]
        raise ContractError(contract.dataset, f"gold_options.{name}", first_line) from None


def schema_columns(schema) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in schema.fields]


# ------------------------------------------------------------------------------------------ one table
def table_plan(spark, tbl: tables.Table, loaded, expected: list[tuple[str, str]], contract: Contract, layer: str,
               partitioning: Partitioning) -> TablePlan:
    """The plan of one live table (``loaded``: Iceberg's table object, None when it does not exist yet)."""
    if loaded is None:
        return TablePlan(tbl.display, exists=False)
    live = tables.table_columns(spark, loaded)
    rebuild = (f"rebuild {tbl.display} from its input: move {tbl.location} aside, then run the dataset without "
               f"--date")
    if layer == "silver":
        renames, removed = contract.renames, contract.removed_columns
    else:
        renames, removed = follow_renames(live, expected, contract.renames), None
    plan = TablePlan(tbl.display, exists=True, schema_id=tables.schema_id(loaded))
    plan.changes = diff_columns(tbl.display, live, expected, contract.evolution, renames=renames, removed=removed,
                                rebuild=rebuild)
    plan.changes += _partition_change(tbl, loaded, partitioning, renames, rebuild)
    if layer == "silver":
        key, recorded = ",".join(contract.key), tables.table_property(loaded, KEY_PROPERTY)
        renamed_to = {old: new for new, old in renames.items()}
        if recorded is None:
            plan.properties[KEY_PROPERTY] = key  # a table from before keys were recorded: record it now
        elif recorded != key and [renamed_to.get(k, k) for k in recorded.split(",")] != list(contract.key):
            plan.changes.append(Change(
                tbl.display, "key", ",".join(contract.key), recorded, key, False,
                f"the key changes from [{recorded}] to [{key}], and silver's rows are deduplicated on it",
                f"keep key [{recorded}], or {rebuild} (and its gold tables the same way)"))
        elif recorded != key:  # the key's columns were renamed
            plan.properties[KEY_PROPERTY] = key
    if plan.steps or plan.properties:
        plan.properties[CONTRACT_PROPERTY] = contract.version
    return plan


def _partition_change(tbl: tables.Table, loaded, partitioning: Partitioning, renames: dict[str, str],
                      rebuild: str) -> list[Change]:
    current = tables._spec_terms(loaded)
    if current == [partitioning.spec]:
        return []
    source = partitioning.column
    old_source = renames.get(source, source)
    same_column = len(current) == 1 and current[0].rstrip(")").split("(")[-1] in (source, old_source)
    if same_column:  # a partition_granularity change: existing behaviour, one rewrite of every file
        return [Change(tbl.display, "partition", source, ", ".join(current), partitioning.spec, False,
                       effect="partition_granularity changed: every data file is rewritten once into the new "
                              "partitions (rewrite_data_files) before the run's commit")]
    return [Change(tbl.display, "partition", source, ", ".join(current) or "nothing", partitioning.spec, False,
                   "the partition column changes (the event time)", f"keep the event time, or {rebuild}")]


# ------------------------------------------------------------------------------------------ what computes the rows
SILVER_ROW_PARTS = ("landing", "source_field", "key", "event_time", "rules", "derived", "lateness_minutes",
                    "allow_extra_fields", "ignored_fields")


def rows_contract(contract: Contract, layer: str, gold: str | None = None) -> dict[str, Any]:
    """What of the contract (and code) computes a table's rows: silver's landing options, key, event time,
    columns (each one's spec), rules, derived columns, lateness and field handling; a gold table's module
    (a digest of its source) and options."""
    if layer == "silver":
        parts: dict[str, Any] = {name: getattr(contract, name) for name in SILVER_ROW_PARTS}
        parts["schema"] = {col.name: col for col in contract.schema}
    else:
        from spark_jobs.transforms.gold import GOLD_PACKAGE

        module = importlib.resources.files(GOLD_PACKAGE) / f"{gold}.py"
        digest = hashlib.sha256(module.read_bytes()).hexdigest()[:16] if module.is_file() else ""
        parts = {"module": digest, "options": contract.gold_options.get(gold, {}),
                 "pseudonymise_gold": contract.pseudonymise_gold}
    return json.loads(json.dumps(parts, sort_keys=True, default=_plain))


def _plain(value: Any) -> Any:
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) else str(value)


def rows_changes(recorded: str | None, current: dict[str, Any]) -> list[str]:
    """What differs between the table's recorded ``ROWS_PROPERTY`` and the contract's ``rows_contract``: part
    names, and per column ``column X added|removed|changed``. Nothing when the table records none (created
    before it was recorded: not known)."""
    if not recorded:
        return []
    try:
        before = json.loads(recorded)
    except ValueError:
        return []
    found = []
    for name in sorted(set(before) | set(current)):
        if name == "schema" and isinstance(before.get(name), dict) and isinstance(current.get(name), dict):
            found += _column_changes(before[name], current[name])
        elif name == "ignored_fields" and _only_removed_columns_ignored(before, current):
            continue
        elif before.get(name) != current.get(name):
            found.append(name)
    return found


def _only_removed_columns_ignored(before: dict[str, Any], current: dict[str, Any]) -> bool:
    """The ignored fields differ only by the landing fields of columns the contract removed since (a removed
    column's field is ignored from then on): no change to old rows, like the removal itself."""
    old_fields, new_fields = before.get("ignored_fields") or [], current.get("ignored_fields") or []
    old_schema, new_schema = before.get("schema"), current.get("schema")
    if not (isinstance(old_schema, dict) and isinstance(new_schema, dict)) or set(old_fields) - set(new_fields):
        return False
    kept = {spec.get("renamed_from") for spec in new_schema.values() if isinstance(spec, dict)} | set(new_schema)
    removed = {(spec.get("source") if isinstance(spec, dict) else None) or name
               for name, spec in old_schema.items() if name not in kept}
    return set(new_fields) - set(old_fields) <= removed


def _column_changes(old: dict[str, dict], new: dict[str, dict]) -> list[str]:
    """Columns whose values old rows would have otherwise: one changed in what computes it (its rules, format,
    source, case...), or a ``computed`` column added (old rows read null where a full run computes it). A
    rename (``renamed_from``) and a widened type keep the values; a plain column added reads null in old rows
    either way (a record that carried the field failed ``unknown_fields``), and a removed one keeps (``additive``)
    or loses (``permissive``) its values as the table does: none of these is a change here."""
    def same(before: dict, after: dict) -> bool:
        ignored = ("name", "renamed_from", "type")
        if {k: v for k, v in before.items() if k not in ignored} != {k: v for k, v in after.items() if k not in ignored}:
            return False
        kinds = (_spark_name(str(before.get("type"))), _spark_name(str(after.get("type"))))
        return type_change(*kinds) in ("same", "widen")

    renamed = {spec.get("renamed_from"): name for name, spec in new.items() if spec.get("renamed_from") in old}
    changes = []
    for column in sorted(set(old) | set(new)):
        if column in renamed and same(old[column], new[renamed[column]]):
            continue
        if column in new and new[column].get("renamed_from") in renamed and same(old[new[column]["renamed_from"]], new[column]):
            continue
        if column not in old:
            if new[column].get("computed"):
                changes.append(f"column {column} added")
        elif column in new and not same(old[column], new[column]):
            changes.append(f"column {column} changed")
    return changes


def _rows_json(parts: dict[str, Any]) -> str:
    return json.dumps(parts, sort_keys=True, separators=(",", ":"))


# ------------------------------------------------------------------------------------------ a dataset
def plan_dataset(spark, lake, contract: Contract) -> Plan:
    """The plan of the dataset's silver table and every gold table of its contract."""
    from spark_jobs.io.partitioning import gold_partitioning, silver_partitioning
    from spark_jobs.lake.config import gold_table_name
    from spark_jobs.transforms.gold import load_gold

    expected_silver = silver_schema(spark, contract)
    silver_tbl = tables.table(spark, lake, "silver", contract.dataset)
    silver_loaded = tables.load(spark, silver_tbl)
    silver_plan = table_plan(spark, silver_tbl, silver_loaded, schema_columns(expected_silver), contract,
                             "silver", silver_partitioning(contract))
    silver_plan.rebuild = rows_changes(tables.table_property(silver_loaded, ROWS_PROPERTY),
                                       rows_contract(contract, "silver"))
    gold_plans = []
    for name in contract.gold:
        expected = schema_columns(gold_schema(spark, contract, name, expected_silver))
        gold_tbl = tables.table(spark, lake, "gold", gold_table_name(contract.dataset, name))
        partitioning = gold_partitioning(load_gold(name), contract.partition_granularity)
        gold_loaded = tables.load(spark, gold_tbl)
        gold_plan = table_plan(spark, gold_tbl, gold_loaded, expected, contract, "gold", partitioning)
        gold_plan.rebuild = rows_changes(tables.table_property(gold_loaded, ROWS_PROPERTY),
                                         rows_contract(contract, "gold", name))
        gold_plans.append(gold_plan)
    silver_plan.changes = [dataclasses.replace(c, effect=c.effect or _gold_effect(c, gold_plans))
                           for c in silver_plan.changes]
    return Plan(contract.dataset, contract.version, contract.evolution, [silver_plan, *gold_plans])


def _gold_effect(change: Change, gold_plans: list[TablePlan]) -> str:
    """What a silver column change does to gold: the gold columns that change with it (by name)."""
    if change.kind in ("key", "partition"):
        return ""
    names = {change.column, change.before} if change.kind == "rename" else {change.column}
    effects = []
    for plan in gold_plans:
        related = [c for c in plan.changes if any(_mentions(c.column, n) or (c.kind == "rename" and _mentions(str(c.before), n))
                                                  for n in names if n)]
        if related:
            effects.append(f"{plan.table}: " + ", ".join(c.what for c in related))
    return "; ".join(effects) or "no gold column changes"


def check_datasets(spark, lake, datasets: list[str]) -> list[Plan]:
    """Every dataset's plan, before a run does anything: the first refused change stops it (``ContractError``,
    one line naming the dataset, table, column, change and the way forward)."""
    plans = []
    for dataset in datasets:
        plan = plan_dataset(spark, lake, load_contract(dataset))
        if plan.refused:
            raise refusal(plan)
        plans.append(plan)
    return plans


def refusal(plan: Plan) -> ContractError:
    first = plan.refused[0]
    more = len(plan.refused) - 1
    where = first.table if first.kind in ("key", "partition") else f"{first.table} column {first.column}"
    return ContractError(plan.dataset, where,
                         f"{first.what} is refused: {first.refused}; {first.fix}; nothing was run"
                         + (f" ({more} more refused: `python -m spark_jobs contract plan --dataset {plan.dataset}` "
                            "lists them)" if more else ""))


# ------------------------------------------------------------------------------------------ applying it
def evolve_for_write(run, tbl: tables.Table, df, layer: str, partitioning: Partitioning, loaded: Any = None):
    """Before a publish: the table's allowed changes in ONE metadata commit (``tables.evolve``), so the write
    matches the table; returns ``(df in the table's column order, the table object, the manifest's record,
    what undoes the change or None)``. A silver table created now records its key. A change the contract's
    policy refuses stops the run (``ContractError``; ``run``/``run-all`` found it before any layer ran)."""
    spark, contract = run.spark, run.contract
    loaded = loaded if loaded is not None else tables.load(spark, tbl)
    rows = _rows_json(rows_contract(contract, layer, None if layer == "silver" else _gold_name(run, tbl)))
    if loaded is None:
        properties = {CONTRACT_PROPERTY: contract.version, ROWS_PROPERTY: rows}
        if layer == "silver":
            properties[KEY_PROPERTY] = ",".join(contract.key)
        tables.ensure_table(spark, tbl, df.schema, partitioning, properties=properties)
        loaded = tables.load(spark, tbl)
        return df, loaded, {"created": True, "schema_id": tables.schema_id(loaded), "changes": []}, None
    plan = table_plan(spark, tbl, loaded, schema_columns(df.schema), contract, layer, partitioning)
    if plan.refused:
        raise refusal(Plan(contract.dataset, contract.version, contract.evolution, [plan]))
    if run.manifest.mode == "full" and tables.table_property(loaded, ROWS_PROPERTY) != rows:
        plan.properties[ROWS_PROPERTY] = rows  # every row is computed again: they follow this contract now
    before = tables.schema_id(loaded)
    snapshot = tables.snapshot_now(loaded)
    evolved = None
    if plan.steps or plan.properties:
        run.fence(f"the schema of {tbl.display}")
        evolved = tables.evolve(spark, loaded, plan.steps, plan.properties)
    after = tables.snapshot_now(loaded)
    record = {"schema_id_before": before, "schema_id": tables.schema_id(loaded),
              "changes": [c.what for c in plan.changes if c.kind != "partition"],
              "sql": [f"ALTER TABLE {tbl.display} {step.sql}" for step in plan.steps],
              # a schema change commits metadata only: the current snapshot, and so its data files, are the same
              "snapshot_unchanged": (snapshot or {}).get("snapshot_id") == (after or {}).get("snapshot_id")}
    if plan.steps:
        run.stage(f"evolved {tbl.display}", changes=len(plan.steps), schema_id=record["schema_id"])
    aligned = tables.in_table_order(df, [name for name, _ in tables.table_columns(spark, loaded)])
    return aligned, loaded, record, evolved


def _gold_name(run, tbl: tables.Table) -> str:
    """The gold of the contract whose table ``tbl`` is."""
    from spark_jobs.lake.config import gold_table_name

    return next(name for name in run.contract.gold if gold_table_name(run.contract.dataset, name) == tbl.name)


def publish_evolved(run, tbl: tables.Table, df, layer: str, partitioning: Partitioning, dates: list[str],
                    include_null: bool, loaded: Any = None, marks: dict[str, str] | None = None,
                    everything: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """The table's allowed schema changes (``evolve_for_write``), then the publish (``tables.publish``, fenced by
    the run's lease): returns (the publish record, the evolution record). The schema change and the data are two
    Iceberg commits (Spark's write cannot join a transaction), so when the write fails the schema change is
    undone (``tables.undo_evolution``): the table is left on the schema and properties it had, with the error."""
    aligned, loaded, record, evolved = evolve_for_write(run, tbl, df, layer, partitioning, loaded)
    try:
        published = tables.publish(aligned, tbl, partitioning, dates, include_null, run.run_id, loaded, marks,
                                   fence=run.fence, everything=everything)
    except BaseException:
        if evolved is not None:
            try:
                undone = tables.undo_evolution(run.spark, loaded, evolved)
            except Exception as exc:  # noqa: BLE001 - the write's own error is the one to report
                run.progress(f"[{run.layer} {run.contract.dataset}] warning: the schema change of {tbl.display} was not "
                             f"undone ({type(exc).__name__}); run `contract plan` and the layer again")
            else:
                record["undone"] = undone
                if undone:
                    run.stage(f"schema of {tbl.display} put back", schema_id=evolved.schema_id_before)
        raise
    return published, record


# ------------------------------------------------------------------------------------------ the command
def format_plan(plan: Plan) -> str:
    lines = [f"contract plan {plan.dataset}: evolution {plan.evolution}, contract {plan.contract_version}"]
    for table in plan.tables:
        if not table.exists:
            lines.append(f"{table.table}: not created yet (the first run creates it as the contract says)")
            continue
        if not table.changes and not table.rebuild:
            lines.append(f"{table.table} (schema {table.schema_id}): no change")
            continue
        lines.append(f"{table.table} (schema {table.schema_id}):")
        for change in table.changes:
            how = "metadata only" if change.metadata_only else "rewrites data files"
            verdict = f"REFUSED: {change.refused}; way forward: {change.fix}" if change.refused else "allowed"
            lines.append(f"  {change.what:<48} {how:<20} {verdict}")
            if change.effect and change.allowed:
                lines.append(f"  {'':<48} effect: {change.effect}")
        if table.rebuild:
            lines.append(f"  {rebuild_note(table)}")
    allowed = [c for c in plan.changes if c.allowed and c.step is not None]
    if plan.refused:
        lines.append(f"{len(plan.refused)} change(s) refused: run and run-all stop before any work until the contract "
                     "or its evolution policy changes")
    elif allowed:
        lines.append(f"{len(allowed)} change(s) allowed: run and run-all apply them before writing, in one metadata "
                     "commit per table (no data file is rewritten)")
    else:
        lines.append("nothing to change")
    if any(t.rebuild for t in plan.tables):
        lines.append(f"old rows follow the contract only after `python -m spark_jobs run-all --dataset {plan.dataset} "
                     "--full` (a run without it recomputes only the partitions new data touches)")
    return "\n".join(lines)


def rebuild_note(table: TablePlan) -> str:
    """One line: what of the contract that computes the table's rows changed since its last full run."""
    return (f"rows computed by another contract ({', '.join(table.rebuild)}): new and rewritten partitions follow "
            "this one, the others keep their values until a run with --full")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", required=True, help="the dataset whose contract to compare with its tables")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")


def run(args: argparse.Namespace) -> int:
    """``contract plan``: print the plan; exit 2 when a change is refused (the CLI's "bad configuration"), else 0."""
    contract = load_contract(args.dataset)  # a bad contract: its one line before Spark starts
    lake = lake_from_args(args)
    with command_session(lake, "tenantlake-contract-plan", args.jars, small_inputs=True) as spark:
        return _print_plan(args, plan_dataset(spark, lake, contract))


def _print_plan(args: argparse.Namespace, plan: Plan) -> int:
    print(json.dumps(plan.to_dict(), indent=1) if args.json else format_plan(plan))
    if plan.refused:
        print(f"error: {refusal(plan)}".replace("; nothing was run", ""), file=sys.stderr)
        return 2
    return 0
