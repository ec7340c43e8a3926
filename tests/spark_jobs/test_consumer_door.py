"""The consumer's door: the tables the jobs write, read through the names a consumer uses
(``<tenant>_<layer>.<table>``, the tenant module's Glue databases), with the schema and partitioning the
job recorded.

Locally the names resolve through Iceberg's Hadoop catalog, one catalog per Glue database over that
layer's folder (``spark_jobs.lake.catalog.consumer_conf``). On AWS they are the Glue catalog's own namespaces:
that branch is checked as generated configuration against the databases an applied tenant holds (Glue
and Athena themselves cannot run against the emulator; spark_jobs/README.md says what stays unproven).
"""
from __future__ import annotations

import json
import re

import pytest

from spark_jobs import cli
from spark_jobs.contract.model import available_datasets, load_contract
from spark_jobs.io import tables
from spark_jobs.io.partitioning import Partitioning
from spark_jobs.lake import catalog
from spark_jobs.lake.config import LakeConfig, gold_table_name

pytestmark = pytest.mark.integration
GLUE = (("gold", "acme_gold"), ("silver", "acme_silver"))
ATHENA_NAME = re.compile(r"^[a-z0-9_]{1,255}$")  # Glue and Athena: lowercase letters, digits, underscores


def _manifest(lake_dir, layer: str, dataset: str) -> dict:
    runs = sorted((lake_dir / "reports" / layer / dataset).iterdir(), key=lambda run: run.stat().st_mtime_ns)
    return json.loads((runs[-1] / "manifest.json").read_text())


def _described(spark, name: str) -> tuple[list[list[str]], list[str]]:
    """Columns and partition terms as ``DESCRIBE TABLE <name>`` reports them through the catalog: Spark lists
    identity partitions under "# Partition Information" (by column) and transforms under "# Partitioning"
    ("Part 0: days(event_ts)")."""
    rows = spark.sql(f"DESCRIBE TABLE {name}").collect()
    columns, partitions, section = [], [], "columns"
    for row in rows:
        label = row["col_name"].strip()
        if not label or label == "# col_name":
            continue
        if label.startswith("#"):
            section = {"# Partitioning": "transforms", "# Partition Information": "identity"}.get(label, "other")
            continue
        if section == "columns":
            columns.append([row["col_name"], row["data_type"]])
        elif section == "transforms" and label.startswith("Part "):
            partitions.append(row["data_type"])
        elif section == "identity":
            partitions.append(label)
    return columns, partitions


def test_consumer_names_read_the_tables_the_job_wrote(spark, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TENANTLAKE_VALIDATION", "off")
    lake_dir = tmp_path / "lake"
    glue = ",".join(f"{layer}={db}" for layer, db in GLUE)
    lake_args = ["--lake-uri", str(lake_dir), "--glue-databases", glue]
    assert cli.main(["datagen", "--dataset", "iot", "--records", "200", "--batch-size", "50", "--interval", "900",
                     "--start", "2024-03-01T00:00:00Z", "--lake-uri", str(lake_dir)]) == 0
    assert cli.main(["run-all", "--dataset", "iot", *lake_args]) == 0
    capsys.readouterr()
    lake = LakeConfig(lake_uri=str(lake_dir), glue_databases=GLUE)
    assert catalog.register_consumer_names(spark, lake) == {"gold": "acme_gold", "silver": "acme_silver"}

    written = [("silver", "iot", _manifest(lake_dir, "silver", "iot")["tables"]["silver"]),
               ("gold", "iot_hourly", _manifest(lake_dir, "gold", "iot")["tables"]["iot_hourly"])]
    for layer, table, record in written:
        consumer_name = f"{dict(GLUE)[layer]}.{table}"
        columns, partitioning = _described(spark, consumer_name)
        assert columns == record["columns"] and partitioning == record["partitioning"], consumer_name
        # The same table, not a copy: its current snapshot is the one the job committed, with the same rows.
        current = spark.sql(f"SELECT snapshot_id FROM {consumer_name}.snapshots ORDER BY committed_at DESC "
                            "LIMIT 1").first()[0]
        assert current == record["snapshot_id"]
        job_table = tables.table(spark, lake, layer, table)
        assert sorted(map(tuple, spark.table(consumer_name).collect())) == \
            sorted(map(tuple, tables.read(spark, job_table).collect()))

    # The query command takes the consumers' names too, with --as-of.
    gold = written[1][2]
    assert cli.main(["query", *lake_args, "--json", "SELECT count(*) AS n FROM acme_gold.iot_hourly"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"n": gold["total_records"]}]
    assert cli.main(["query", *lake_args, "--json", "--as-of", str(gold["snapshot_id"]),
                     "SELECT count(*) AS n FROM acme_gold.iot_hourly"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"n": gold["total_records"]}]


def test_without_glue_databases_or_on_aws_nothing_is_mapped():
    assert catalog.consumer_conf(LakeConfig(lake_uri="/tmp/lake")) == {}
    # On AWS the Glue catalog's namespaces are the databases themselves: the names need no mapping.
    assert catalog.consumer_conf(LakeConfig(lake_uri="s3://acme-eu-west-1-lake", kms_key_arn="k", glue_databases=GLUE)) == {}
    conf = catalog.consumer_conf(LakeConfig(lake_uri="s3a://acme-eu-west-1-lake", glue_databases=GLUE))
    assert conf["spark.sql.catalog.acme_gold.warehouse"] == "s3a://acme-eu-west-1-lake/gold"
    assert conf["spark.sql.catalog.acme_gold.type"] == "hadoop"


def test_on_aws_the_jobs_register_each_table_where_consumers_look(applied_tenant, boto_session, monkeypatch):
    """The Glue branch as generated: every table the contracts publish is ``<catalog>.<glue db>.<table>``
    with its location under that database's location (as applied on the emulator), a name Athena takes,
    and CREATE TABLE names that location (Glue does not derive it)."""
    acme = applied_tenant("acme")
    databases = acme["glue_database_names"]
    glue = boto_session("glue")
    lake = LakeConfig(lake_uri=f"s3://{acme['lake_bucket_name']}", kms_key_arn=acme["kms_key_arn"],
                      region=acme["region"], glue_databases=tuple(sorted(databases.items())))
    settings = catalog.catalog_settings(lake)
    assert settings.kind == "glue" and dict(settings.namespaces) == databases
    for dataset in available_datasets():
        contract = load_contract(dataset)
        for layer, table in [("silver", dataset)] + [("gold", gold_table_name(dataset, g)) for g in contract.gold]:
            database = glue.get_database(Name=databases[layer])["Database"]
            assert ATHENA_NAME.match(table) and ATHENA_NAME.match(database["Name"]), table
            assert settings.qualified(layer, table) == f"{settings.name}.{database['Name']}.{table}"
            assert settings.location(layer, table) == database["LocationUri"] + table

    # CREATE TABLE through the Glue catalog names the location: what the job runs, captured.
    statements: list[str] = []

    class Recorder:
        def sql(self, text):
            statements.append(text)

    monkeypatch.setattr(tables, "load", lambda spark, tbl: None)  # no such table yet (ensure_table looks it up once)
    monkeypatch.setattr(tables, "check_no_legacy_files", lambda spark, tbl: None)
    from pyspark.sql import types as T

    tbl = tables.Table(catalog=settings, layer="gold", name="iot_hourly")
    schema = T.StructType([T.StructField("event_date", T.DateType())])
    assert tables.ensure_table(Recorder(), tbl, schema, Partitioning("event_date", "identity", "date"))
    (statement,) = statements
    assert statement.startswith(f"CREATE TABLE IF NOT EXISTS {settings.name}.{databases['gold']}.iot_hourly ")
    assert f"LOCATION 's3://{acme['lake_bucket_name']}/gold/iot_hourly'" in statement
