"""spark_jobs/tables/plan.py: the diff of a contract against a live table, its policy, its gold effects, and
the expected schemas (the real transformations on empty frames). The whole scenario on s3a (plan, evolve,
time travel, refusals) is tests/spark_jobs/test_schema_evolution.py; ``tables.evolve`` itself is in
tests/spark_jobs/io/test_tables.py."""
from __future__ import annotations

import pytest

from spark_jobs.contract.model import load_contract
from spark_jobs.io.partitioning import Partitioning
from spark_jobs.tables.plan import diff_columns, follow_renames, type_change

LIVE = [("station", "string"), ("temp", "double"), ("dewp", "double"), ("wind_dir", "int"), ("event_date", "date")]
REBUILD = "rebuild it"


def _diff(expected, policy="permissive", renames=None, removed=("dewp",)):
    return diff_columns("silver.weather", LIVE, expected, policy, renames=renames or {}, removed=removed, rebuild=REBUILD)


@pytest.mark.parametrize("before, after, change", [
    ("int", "bigint", "widen"), ("float", "double", "widen"), ("decimal(10,2)", "decimal(12,2)", "widen"),
    ("bigint", "int", "narrow"), ("decimal(12,2)", "decimal(10,2)", "narrow"), ("double", "float", "narrow"),
    ("decimal(10,2)", "decimal(10,3)", "retype"), ("string", "int", "retype"), ("int", "double", "retype"),
    ("timestamp", "timestamp", "same"),
])
def test_type_changes_are_what_iceberg_promotes_in_place(before, after, change):
    assert type_change(before, after) == change


def test_add_widen_rename_drop_are_metadata_only_steps_in_the_table_order():
    expected = [("station", "string"), ("temperature", "double"), ("wind_dir", "bigint"), ("humidity", "double"),
                ("event_date", "date")]
    changes = _diff(expected, renames={"temperature": "temp"})
    assert [(c.kind, c.column) for c in changes] == [("rename", "temperature"), ("widen", "wind_dir"),
                                                     ("add", "humidity"), ("drop", "dewp")]
    assert all(c.allowed and c.metadata_only for c in changes)
    assert [c.step.sql for c in changes] == ["RENAME COLUMN `temp` TO `temperature`", "ALTER COLUMN `wind_dir` TYPE bigint",
                                             "ADD COLUMN `humidity` double AFTER `wind_dir`", "DROP COLUMN `dewp`"]


def test_a_rename_with_a_wider_type_widens_the_column_by_its_old_name():
    changes = _diff([("station", "string"), ("temperature", "double"), ("wind_dir", "int"), ("event_date", "date")],
                    renames={"temperature": "temp"})
    assert [c.step.sql for c in changes if c.step] == ["RENAME COLUMN `temp` TO `temperature`", "DROP COLUMN `dewp`"]
    widened = diff_columns("t", [("a", "int")], [("b", "bigint")], "permissive", renames={"b": "a"}, removed=(),
                           rebuild=REBUILD)
    assert [c.step.sql for c in widened] == ["RENAME COLUMN `a` TO `b`", "ALTER COLUMN `a` TYPE bigint"]


@pytest.mark.parametrize("policy, refused", [
    ("strict", {"add", "widen", "rename", "drop"}),
    ("additive", {"rename"}),
    ("permissive", set()),
])
def test_each_policy_refuses_its_changes_with_a_way_forward(policy, refused):
    expected = [("station", "string"), ("temperature", "double"), ("wind_dir", "bigint"), ("humidity", "double"),
                ("event_date", "date")]
    changes = _diff(expected, policy, renames={"temperature": "temp"})
    assert {c.kind for c in changes if not c.allowed} == refused
    assert all(c.fix for c in changes if not c.allowed)
    if policy == "additive":  # a removed column stays in the table: new rows read null
        kept = next(c for c in changes if c.column == "dewp")
        assert (kept.kind, kept.allowed, kept.step) == ("keep", True, None)
        assert "set `evolution: permissive`" in next(c for c in changes if c.kind == "rename").fix


def test_narrowing_a_new_type_and_an_undeclared_drop_are_refused_under_every_policy():
    expected = [("station", "int"), ("temp", "double"), ("wind_dir", "smallint"), ("event_date", "date")]
    for policy in ("strict", "additive", "permissive"):
        changes = {c.column: c for c in _diff(expected, policy, removed=())}
        assert changes["station"].kind == "retype" and "rebuild it" in changes["station"].fix
        assert changes["wind_dir"].kind == "retype"
        assert changes["dewp"].kind == "drop" and not changes["dewp"].allowed
        assert "`removed: true`" in changes["dewp"].fix
    narrowed = diff_columns("t", [("n", "bigint")], [("n", "int")], "permissive", renames={}, removed=(), rebuild=REBUILD)
    assert narrowed[0].kind == "narrow" and "keep `n` as long in the contract" in narrowed[0].fix


def test_gold_columns_follow_a_silver_rename():
    live = [("event_date", "date"), ("temp_count", "bigint"), ("temp_avg", "double"), ("max_temp_c", "double")]
    expected = [("event_date", "date"), ("temperature_count", "bigint"), ("temperature_avg", "double"),
                ("max_temperature_c", "double"), ("temperature_rank", "int")]
    assert follow_renames(live, expected, {"temperature": "temp"}) == {
        "temperature_count": "temp_count", "temperature_avg": "temp_avg", "max_temperature_c": "max_temp_c"}
    assert follow_renames(live, expected, {}) == {}


def test_the_expected_silver_schema_is_what_the_silver_transforms_write(spark):
    """The plan's silver columns, from the contract alone, equal the silver chain's output on an empty bronze
    frame of each seed contract (parse, flag, dedupe, late flag, enrichment)."""
    from spark_jobs.tables.plan import silver_schema
    from spark_jobs.transforms import bronze as bronze_tx
    from spark_jobs.transforms import silver as silver_tx

    for dataset in ("iot", "clickstream", "inventory"):
        contract = load_contract(dataset)
        bronze = spark.createDataFrame([], bronze_tx.bronze_schema(contract))
        flagged = silver_tx.narrow(silver_tx.flag_invalid_rows(silver_tx.parse_records(bronze, contract, reparse=False),
                                                               contract), contract)
        silver = silver_tx.to_silver(silver_tx.flag_late_rows(silver_tx.dedupe_latest(silver_tx.valid_rows(flagged),
                                                                                      contract), contract), contract)
        assert silver_schema(spark, contract) == silver.schema, dataset


def test_a_plan_on_a_lake_without_tables_creates_them_as_the_contract_says(spark, tmp_path):
    from spark_jobs.lake.config import LakeConfig
    from spark_jobs.tables.plan import format_plan, plan_dataset

    lake = LakeConfig(lake_uri=str(tmp_path / "lake"))
    plans = {dataset: plan_dataset(spark, lake, load_contract(dataset)) for dataset in ("iot", "clickstream", "inventory")}
    assert [t.table for t in plans["inventory"].tables] == ["silver.inventory", "gold.inventory_org_usage",
                                                            "gold.inventory_compliance"]
    for plan in plans.values():  # every seed gold's output schema comes out of its build on an empty frame
        assert not plan.changes and not plan.refused and not any(t.exists for t in plan.tables)
    text = format_plan(plans["inventory"])
    assert "silver.inventory: not created yet" in text and text.endswith("nothing to change")


def test_a_changed_key_or_event_time_is_refused_and_an_unrecorded_key_is_recorded(spark, tmp_path):
    """The key silver deduplicates on is a table property; a contract with another key, or another event time
    (the partition column), is refused with a rebuild as the way forward."""
    from spark_jobs.io import tables
    from spark_jobs.io.partitioning import silver_partitioning
    from spark_jobs.lake.config import LakeConfig
    from spark_jobs.tables.plan import KEY_PROPERTY, silver_schema, table_plan

    iot = load_contract("iot")
    schema = silver_schema(spark, iot)
    expected = [(f.name, f.dataType.simpleString()) for f in schema.fields]
    tbl = tables.table(spark, LakeConfig(lake_uri=str(tmp_path / "lake")), "silver", "iot")
    tables.ensure_table(spark, tbl, schema, silver_partitioning(iot), properties={KEY_PROPERTY: "sensor_id,event_ts"})
    loaded = tables.load(spark, tbl)
    plan = table_plan(spark, tbl, loaded, expected, iot, "silver", silver_partitioning(iot))
    [key] = plan.refused
    assert (key.kind, key.before, key.after) == ("key", "sensor_id,event_ts", "event_id")
    assert "silver's rows are deduplicated on it" in key.refused and "move " in key.fix and "without --date" in key.fix
    moved = Partitioning.of("_ingested_at", "timestamp", "day")
    refused = {c.kind: c for c in table_plan(spark, tbl, loaded, expected, iot, "silver", moved).refused}
    assert set(refused) == {"key", "partition"} and refused["partition"].before == "days(event_ts)"
    unrecorded = tables.table(spark, LakeConfig(lake_uri=str(tmp_path / "lake2")), "silver", "iot")
    tables.ensure_table(spark, unrecorded, schema, silver_partitioning(iot))
    fresh = table_plan(spark, unrecorded, tables.load(spark, unrecorded), expected, iot, "silver", silver_partitioning(iot))
    assert not fresh.changes and fresh.properties == {KEY_PROPERTY: "event_id", "tenantlake.contract-version": iot.version}


def test_what_computes_the_rows_is_compared_part_by_part_and_a_rename_or_widening_is_no_change():
    import json

    from spark_jobs.tables.plan import rows_changes, rows_contract

    inventory = load_contract("inventory")
    current = rows_contract(inventory, "silver")
    assert rows_changes(None, current) == []  # a table from before it was recorded: not known
    before = json.loads(json.dumps(current))
    before["rules"], before["lateness_minutes"] = [], 5
    before["schema"]["cpu_percent"]["max"] = 50  # a changed range: other rows would be quarantined
    del before["schema"]["disk_total_gb"]  # a plain column added: old rows read null either way
    computed = json.loads(json.dumps(current))
    computed["schema"]["collected_day"] = {"name": "collected_day", "type": "string", "computed": "substr(collected_at, 1, 10)"}
    renamed = json.loads(json.dumps(current))
    renamed["schema"]["org"] = {**renamed["schema"].pop("org_id"), "name": "org"}
    assert rows_changes(json.dumps(before), current) == ["lateness_minutes", "rules", "column cpu_percent changed"]
    assert rows_changes(json.dumps(current), computed) == ["column collected_day added"]
    assert rows_changes(json.dumps(computed), current) == []  # a column removed: the table keeps or drops it
    after_rename = json.loads(json.dumps(current))
    after_rename["schema"]["org_id"]["renamed_from"] = "org"
    assert rows_changes(json.dumps(renamed), after_rename) == []
    narrow = json.loads(json.dumps(current))
    narrow["schema"]["cpu_percent"]["type"] = "float"
    assert rows_changes(json.dumps(narrow), current) == []  # float -> double: old values read the same
    # A column removed through the contract (removed: true): its landing field becomes ignored, still no change;
    # a field ignored for another reason is one (records carrying it are read otherwise).
    import yaml

    from spark_jobs.contract.model import CONTRACTS_DIR, parse_contract

    raw = yaml.safe_load((CONTRACTS_DIR / "inventory.yaml").read_text())
    next(c for c in raw["schema"] if c["name"] == "disk_total_gb")["removed"] = True
    removal = rows_contract(parse_contract(raw), "silver")
    assert "disk_total_gb" in removal["ignored_fields"] and rows_changes(json.dumps(current), removal) == []
    other = json.loads(json.dumps(removal))
    other["ignored_fields"] = [*other["ignored_fields"], "note"]
    assert rows_changes(json.dumps(current), other) == ["ignored_fields"]
    gold = rows_contract(inventory, "gold", "inventory_compliance")
    assert len(gold["module"]) == 16 and gold["options"] == dict(inventory.gold_options["inventory_compliance"])


def test_a_table_computed_by_another_contract_is_planned_as_a_rebuild(spark, tmp_path):
    """``contract plan`` says when old rows need ``--full``: the table records what computed its rows at its
    creation and last full run (``ROWS_PROPERTY``)."""
    import json

    from spark_jobs.io import tables
    from spark_jobs.io.partitioning import silver_partitioning
    from spark_jobs.lake.config import LakeConfig
    from spark_jobs.tables.plan import ROWS_PROPERTY, format_plan, plan_dataset, rows_contract, silver_schema

    iot = load_contract("iot")
    lake = LakeConfig(lake_uri=str(tmp_path / "lake"))
    older = {**rows_contract(iot, "silver"), "lateness_minutes": iot.lateness_minutes + 30}
    tables.ensure_table(spark, tables.table(spark, lake, "silver", "iot"), silver_schema(spark, iot),
                        silver_partitioning(iot), properties={ROWS_PROPERTY: json.dumps(older)})
    plan = plan_dataset(spark, lake, iot)
    assert plan.tables[0].rebuild == ["lateness_minutes"] and not plan.refused
    text = format_plan(plan)
    assert ("rows computed by another contract (lateness_minutes): new and rewritten partitions follow this one, the "
            "others keep their values until a run with --full") in text
    assert "run-all --dataset iot --full" in text and plan.to_dict()["tables"][0]["rebuild"] == ["lateness_minutes"]
