"""The catalog configuration: the Hadoop branch (runs here) and the Glue branch (generated conf only: the
Glue catalog and S3FileIO need AWS and EMR's jar, which the emulator path cannot show)."""
from __future__ import annotations

import pytest

from spark_jobs.lake import catalog
from spark_jobs.lake.config import LakeConfig

KEY = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
GLUE_DATABASES = {"silver": "acme_silver", "gold": "acme_gold"}


def test_hadoop_catalog_for_a_local_lake_puts_the_warehouse_at_the_lake_root(tmp_path):
    lake = LakeConfig(lake_uri=str(tmp_path / "lake"))
    settings = catalog.catalog_settings(lake)
    assert settings.kind == "hadoop" and settings.warehouse == str((tmp_path / "lake").resolve())
    assert settings.qualified("gold", "iot_hourly") == f"{settings.name}.gold.iot_hourly"
    assert settings.location("silver", "iot") == f"{tmp_path / 'lake'}/silver/iot" == lake.silver("iot")
    assert settings.location("gold", "iot_hourly") == lake.gold("iot", "iot_hourly")
    prefix = f"spark.sql.catalog.{settings.name}"
    assert catalog.catalog_conf(settings) == {
        prefix: "org.apache.iceberg.spark.SparkCatalog", f"{prefix}.type": "hadoop",
        f"{prefix}.warehouse": settings.warehouse, f"{prefix}.cache-enabled": "false"}


def test_s3a_lake_gets_a_hadoop_catalog_on_the_bucket():
    lake = LakeConfig(lake_uri="s3a://acme-eu-west-1-lake", kms_key_arn=KEY)
    settings = catalog.catalog_settings(lake)
    assert (settings.kind, settings.warehouse) == ("hadoop", "s3a://acme-eu-west-1-lake")
    assert settings.location("silver", "iot") == "s3a://acme-eu-west-1-lake/silver/iot"


def test_gold_tables_are_named_per_dataset_when_the_gold_module_is_generic():
    from spark_jobs.lake.config import gold_table_name

    assert gold_table_name("iot", "iot_hourly") == "iot_hourly"
    assert gold_table_name("weather", "weather_daily") == "weather_daily"
    # period_summary serves any dataset: two datasets on one tenant must not share a table.
    assert gold_table_name("airquality", "period_summary") == "airquality_period_summary"
    assert LakeConfig(lake_uri="s3a://x").gold("gibraltar", "period_summary") == "s3a://x/gold/gibraltar_period_summary"


def test_catalog_names_are_stable_per_lake_and_distinct_between_lakes():
    first, second = LakeConfig(lake_uri="s3a://a-lake"), LakeConfig(lake_uri="s3a://b-lake")
    assert catalog.catalog_name(first) == catalog.catalog_name(LakeConfig(lake_uri="s3a://a-lake/"))
    assert catalog.catalog_name(first) != catalog.catalog_name(second)
    assert catalog.catalog_name(first).startswith("lake_") and catalog.catalog_name(first).isidentifier()


def test_glue_branch_for_an_s3_lake_on_emr():
    lake = LakeConfig(lake_uri="s3://acme-eu-west-1-lake", kms_key_arn=KEY, region="eu-west-1")
    settings = catalog.catalog_settings(lake, namespaces=GLUE_DATABASES)
    assert settings.kind == "glue"
    assert settings.qualified("gold", "iot_hourly") == f"{settings.name}.acme_gold.iot_hourly"
    assert settings.location("gold", "iot_hourly") == "s3://acme-eu-west-1-lake/gold/iot_hourly"
    prefix = f"spark.sql.catalog.{settings.name}"
    conf = catalog.submit_conf(settings)
    assert conf == {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.jars": "local:///usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar",
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.catalog-impl": "org.apache.iceberg.aws.glue.GlueCatalog",
        f"{prefix}.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        f"{prefix}.warehouse": "s3://acme-eu-west-1-lake",
        # Every write names the tenant key (without these two S3FileIO sends no encryption header: the lake's default).
        f"{prefix}.s3.sse.type": "kms",
        f"{prefix}.s3.sse.key": KEY,
        f"{prefix}.client.region": "eu-west-1",
        f"{prefix}.cache-enabled": "false",
    }


def test_glue_needs_its_databases_and_the_key_from_the_outputs():
    lake = LakeConfig(lake_uri="s3://acme-eu-west-1-lake", kms_key_arn=KEY)
    with pytest.raises(catalog.CatalogError, match="pass the Glue database of each layer"):
        catalog.catalog_settings(lake)
    with pytest.raises(catalog.CatalogError, match="pass the Glue database of each layer"):
        catalog.catalog_settings(lake, namespaces={"silver": "acme_silver"})
    with pytest.raises(catalog.CatalogError, match="the tenant key is required"):
        catalog.catalog_settings(LakeConfig(lake_uri="s3://x"), namespaces=GLUE_DATABASES)


def test_session_conf_appends_the_local_jar_and_under_spark_submit_leaves_jars_to_the_submitter(monkeypatch, tmp_path):
    jar = tmp_path / "iceberg.jar"
    jar.write_bytes(b"jar")
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.setenv(catalog.JAR_ENV, str(jar))
    assert catalog.session_conf("a.jar,b.jar") == {"spark.sql.extensions": catalog.ICEBERG_EXTENSIONS,
                                                   "spark.jars": f"a.jar,b.jar,{jar}"}
    assert catalog.session_conf(f"a.jar,{jar}")["spark.jars"] == f"a.jar,{jar}"
    monkeypatch.setenv(catalog.JAR_ENV, str(tmp_path / "missing.jar"))
    assert catalog.session_conf("a.jar") == {}
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "12345")
    assert catalog.session_conf("a.jar") == {"spark.sql.extensions": catalog.ICEBERG_EXTENSIONS}


def test_register_makes_the_catalog_known_to_a_running_session(spark, tmp_path):
    lake = LakeConfig(lake_uri=str(tmp_path / "lake"))
    settings = catalog.register(spark, lake)
    assert catalog.register(spark, lake) == settings  # idempotent
    for key, value in catalog.catalog_conf(settings).items():
        assert spark.conf.get(key) == value
    spark.sql(f"CREATE TABLE {settings.qualified('gold', 't')} (x int) USING iceberg")
    assert (tmp_path / "lake" / "gold" / "t" / "metadata").is_dir()


def test_glue_databases_come_from_the_lake_and_the_cli_and_the_hadoop_catalog_ignores_them():
    from spark_jobs.cli import build_parser
    from spark_jobs.lake.config import lake_from_outputs, resolve_lake

    args = build_parser().parse_args(["counts", "--lake-uri", "s3://acme-eu-west-1-lake", "--kms-key-arn", KEY,
                                      "--glue-databases", "silver=acme_silver,gold=acme_gold"])
    lake = resolve_lake(lake_uri=args.lake_uri, kms_key_arn=args.kms_key_arn, glue_databases=args.glue_databases)
    assert dict(catalog.catalog_settings(lake).namespaces) == GLUE_DATABASES
    with pytest.raises(SystemExit):
        build_parser().parse_args(["counts", "--glue-databases", "silver"])
    # The tenant's outputs carry them too; a local (s3a) lake still uses the Hadoop catalog and layer names.
    local = lake_from_outputs({"lake_bucket_name": "acme-eu-west-1-lake", "kms_key_arn": KEY,
                               "glue_database_names": GLUE_DATABASES}, "lake.json")
    assert dict(local.glue_databases) == GLUE_DATABASES
    settings = catalog.catalog_settings(local)
    assert settings.kind == "hadoop" and dict(settings.namespaces) == {"silver": "silver", "gold": "gold"}
