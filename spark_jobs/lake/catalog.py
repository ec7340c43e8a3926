"""The Iceberg catalog of a tenant's lake: the Spark configuration for it, locally and on AWS.

Silver and gold are Apache Iceberg tables (spark_jobs/README.md, "Tables and catalogs"). One function,
``catalog_conf``, gives the Spark settings of a lake's catalog, with two branches:

- ``hadoop`` (local runs: ``s3a://`` on the emulator, or a plain folder): Iceberg's Hadoop catalog
  with its warehouse at the lake's root, so the table ``silver.iot`` lives at ``<lake>/silver/iot/``
  and ``gold.iot_hourly`` at ``<lake>/gold/iot_hourly/``. Files go through Hadoop's FileSystem, so s3a's
  SSE-KMS settings (the tenant key) apply. **One writer per table**: a Hadoop catalog commits by
  writing ``v<N>.metadata.json`` after checking that it does not exist, then renaming; on S3 that
  check-then-rename is not atomic, so two processes committing to the same table at once can lose a
  commit. Within one JVM Iceberg's in-memory lock serialises commits.
- ``glue`` (EMR on EKS, ``s3://`` lakes): the AWS Glue Data Catalog with S3FileIO. S3FileIO sends no
  encryption header unless told, so the conf sets ``s3.sse.type=kms`` and ``s3.sse.key=<tenant key>``:
  every write names the tenant key, as the other writers do (without them its objects would take the lake's
  default encryption, the same key; the bucket policy denies only another key or algorithm). The
  Glue database of each layer is passed in (``namespaces``, else the lake's ``glue_databases``: the
  ``--glue-databases`` argument the EMR request carries), never derived here: jobs take resource names
  from the tenant's outputs (``glue_database_names``). The jar is EMR's own (``EMR_ICEBERG_JAR``). This branch cannot run
  against the emulator; it is tested as generated configuration only.

Consumers name a table ``<tenant>_<layer>.<table>`` (``acme_gold.iot_hourly``): the Glue database and the
table, as Athena and any Glue-catalog engine see them on AWS. ``consumer_conf`` makes the same names
resolve locally: each of the lake's Glue databases becomes a Spark catalog of its own, a Hadoop catalog
whose warehouse is that layer's folder, so ``acme_gold.iot_hourly`` is the table at ``<lake>/gold/iot_hourly``
(the metadata the job committed, read through Iceberg's catalog, not a copy). On AWS nothing is mapped:
the Glue catalog's namespaces are those databases.

Spark resolves a table by ``<catalog>.<namespace>.<table>``. The catalog name is derived from the lake
URI (``catalog_name``), so one Spark session can serve several lakes without mixing them up; the
``query`` command makes the lake's catalog the session default, so users write ``gold.iot_hourly``.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path
from typing import Mapping

import tenant_model as model
from spark_jobs.lake.config import LakeConfig

ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
SPARK_CATALOG_CLASS = "org.apache.iceberg.spark.SparkCatalog"
GLUE_CATALOG_IMPL = "org.apache.iceberg.aws.glue.GlueCatalog"
S3_FILE_IO = "org.apache.iceberg.aws.s3.S3FileIO"
LOCAL_JAR_NAME = "iceberg-spark-runtime-3.5_2.12-1.10.2-jackson.jar"  # built by infra/local/iceberg_jar.py
LOCAL_JAR = Path(__file__).resolve().parents[2] / ".local" / "jars" / LOCAL_JAR_NAME
EMR_ICEBERG_JAR = "/usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar"  # ships with EMR 7.x
JAR_ENV = "TENANTLAKE_ICEBERG_JAR"
LAYERS_WITH_TABLES: tuple[str, ...] = model.CATALOG_LAYERS
FORMAT_VERSION = "2"
KINDS = ("hadoop", "glue")


class CatalogError(RuntimeError):
    """The catalog cannot be configured (no Iceberg jar, a Glue catalog without databases)."""


@dataclasses.dataclass(frozen=True)
class CatalogSettings:
    """Where a lake's Iceberg tables are registered.

    Attributes:
        name: the Spark catalog name (``spark.sql.catalog.<name>``). @default - ``catalog_name(lake)``
        kind: ``hadoop`` or ``glue``. @default - ``glue`` for ``s3://`` lakes (EMR), else ``hadoop``
        warehouse: the lake root; table locations are ``<warehouse>/<layer>/<table>``.
        namespaces: layer -> namespace (Hadoop: a folder; Glue: a database). @default - {"silver": "silver",
            "gold": "gold"} (Hadoop); Glue requires them from the tenant's outputs
        kms_key_arn: the tenant key (Glue branch: S3FileIO's ``s3.sse.key``). @default - ""
        region: the lake's region (Glue branch: ``client.region``). @default - "eu-west-1"
    """

    name: str
    kind: str
    warehouse: str
    namespaces: Mapping[str, str]
    kms_key_arn: str = ""
    region: str = "eu-west-1"

    def namespace(self, layer: str) -> str:
        if layer not in self.namespaces:
            raise CatalogError(f"catalog {self.name}: no namespace for layer '{layer}' "
                               f"(tables exist for {', '.join(LAYERS_WITH_TABLES)})")
        return self.namespaces[layer]

    def qualified(self, layer: str, table: str) -> str:
        """``<catalog>.<namespace>.<table>``, what Spark resolves."""
        return f"{self.name}.{self.namespace(layer)}.{table}"

    def location(self, layer: str, table: str) -> str:
        """Where the table's ``data/`` and ``metadata/`` folders live: ``<warehouse>/<layer>/<table>``."""
        return f"{self.warehouse}/{layer}/{table}"


def catalog_name(lake: LakeConfig) -> str:
    """``lake_<10 hex of the lake URI>``: stable per lake, distinct between lakes in one session."""
    return "lake_" + hashlib.sha256(lake.lake_uri.encode()).hexdigest()[:10]


def catalog_settings(lake: LakeConfig, kind: str | None = None,
                     namespaces: Mapping[str, str] | None = None) -> CatalogSettings:
    """The catalog of ``lake``: Glue for an ``s3://`` lake (EMR), a Hadoop catalog otherwise."""
    kind = kind or ("glue" if lake.scheme == "s3" else "hadoop")
    if kind not in KINDS:
        raise CatalogError(f"catalog kind '{kind}' is not one of {', '.join(KINDS)}")
    if kind == "glue":
        namespaces = namespaces or dict(lake.glue_databases)
        if not namespaces or any(layer not in namespaces for layer in LAYERS_WITH_TABLES):
            raise CatalogError("glue catalog: pass the Glue database of each layer (--glue-databases "
                               "silver=DB,gold=DB, the tenant output glue_database_names); they are not "
                               "derived from the lake name")
        if not lake.kms_key_arn:
            raise CatalogError("glue catalog: the tenant key is required (S3FileIO writes SSE-KMS with it)")
    warehouse = lake.lake_uri if lake.scheme else str(Path(lake.lake_uri).resolve())
    return CatalogSettings(name=catalog_name(lake), kind=kind, warehouse=warehouse,
                           namespaces=dict(namespaces or {layer: layer for layer in LAYERS_WITH_TABLES}),
                           kms_key_arn=lake.kms_key_arn, region=lake.region)


def catalog_conf(settings: CatalogSettings) -> dict[str, str]:
    """The ``spark.sql.catalog.<name>.*`` settings of the catalog (runtime settings: a running session
    can take them, see ``register``). The table cache is off: a table another process committed to
    must be re-read, not served from this session's cache (the read-back check depends on it)."""
    prefix = f"spark.sql.catalog.{settings.name}"
    conf = {prefix: SPARK_CATALOG_CLASS, f"{prefix}.warehouse": settings.warehouse,
            f"{prefix}.cache-enabled": "false"}
    if settings.kind == "hadoop":
        conf[f"{prefix}.type"] = "hadoop"
    else:
        conf.update({
            f"{prefix}.catalog-impl": GLUE_CATALOG_IMPL,
            f"{prefix}.io-impl": S3_FILE_IO,
            f"{prefix}.s3.sse.type": "kms",
            f"{prefix}.s3.sse.key": settings.kms_key_arn,
            f"{prefix}.client.region": settings.region,
        })
    return conf


def submit_conf(settings: CatalogSettings) -> dict[str, str]:
    """Everything a spark-submit of a job needs for the catalog: the extensions, the jar (EMR's own for
    Glue, the local build otherwise) and ``catalog_conf``. For the EMR job request (infra/deploy)."""
    jar = f"local://{EMR_ICEBERG_JAR}" if settings.kind == "glue" else str(runtime_jar() or LOCAL_JAR)
    return {"spark.sql.extensions": ICEBERG_EXTENSIONS, "spark.jars": jar, **catalog_conf(settings)}


def runtime_jar() -> Path | None:
    """The Iceberg runtime jar for a session this process starts: ``$TENANTLAKE_ICEBERG_JAR``, else the
    local build in ``.local/jars/`` (``make setup``); None when neither exists."""
    explicit = os.environ.get(JAR_ENV, "")
    if explicit:
        return Path(explicit) if Path(explicit).is_file() else None
    return LOCAL_JAR if LOCAL_JAR.is_file() else None


def session_conf(jars: str = "") -> dict[str, str]:
    """Static settings for a new session (set before ``getOrCreate()``): Iceberg's SQL extensions and
    the runtime jar appended to ``jars`` (comma-separated). Empty when there is no jar to add and the
    session is not launched by spark-submit; under spark-submit the submitter owns ``spark.jars``
    (EMR: ``--jars local:///usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar``), so only the
    extensions are added."""
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return {"spark.sql.extensions": ICEBERG_EXTENSIONS}
    jar = runtime_jar()
    if jar is None:
        return {}
    listed = [j for j in jars.split(",") if j]
    if str(jar) not in listed:
        listed.append(str(jar))
    return {"spark.sql.extensions": ICEBERG_EXTENSIONS, "spark.jars": ",".join(listed)}


def consumer_conf(lake: LakeConfig) -> dict[str, str]:
    """Spark settings that make the consumers' names (``<glue database>.<table>``, the lake's
    ``glue_databases``) resolve on a local lake: per table layer a Hadoop catalog named after its Glue
    database, its warehouse the layer's folder. Empty for a lake without Glue databases, and for an
    ``s3://`` lake, whose Glue catalog has those databases as its namespaces."""
    if lake.scheme == "s3" or not lake.glue_databases:
        return {}
    settings = catalog_settings(lake, kind="hadoop")
    conf: dict[str, str] = {}
    for layer, database in lake.glue_databases:
        if layer in LAYERS_WITH_TABLES:
            prefix = f"spark.sql.catalog.{database}"
            conf.update({prefix: SPARK_CATALOG_CLASS, f"{prefix}.type": "hadoop",
                         f"{prefix}.warehouse": f"{settings.warehouse}/{layer}", f"{prefix}.cache-enabled": "false"})
    return conf


def register_consumer_names(spark, lake: LakeConfig) -> dict[str, str]:
    """Make ``consumer_conf``'s catalogs known to a running session (idempotent); returns layer -> the Glue
    database consumers name it by ({} when the lake has none)."""
    for key, value in consumer_conf(lake).items():
        if spark.conf.get(key, None) != value:
            spark.conf.set(key, value)
    return {layer: database for layer, database in lake.glue_databases if layer in LAYERS_WITH_TABLES}


def iceberg_available(spark) -> bool:
    """True when the session's JVM can load Iceberg's Spark catalog."""
    from py4j.java_gateway import JavaClass

    return isinstance(spark._jvm.org.apache.iceberg.spark.SparkCatalog, JavaClass)


def register(spark, lake: LakeConfig, kind: str | None = None,
             namespaces: Mapping[str, str] | None = None) -> CatalogSettings:
    """Make the lake's catalog known to a running session (idempotent) and return its settings.
    Fails with one line when the session has no Iceberg on its class path."""
    settings = catalog_settings(lake, kind=kind, namespaces=namespaces)
    if not iceberg_available(spark):
        raise CatalogError("this Spark session has no Iceberg runtime on its class path: run `make setup` "
                           f"(builds .local/jars/{LOCAL_JAR_NAME}) or set {JAR_ENV}; on EMR pass "
                           f"--jars local://{EMR_ICEBERG_JAR}")
    for key, value in catalog_conf(settings).items():
        if spark.conf.get(key, None) != value:
            spark.conf.set(key, value)
    return settings
