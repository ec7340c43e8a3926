"""Locally, the silver and gold tables in the tenant's Glue databases, as Iceberg's Glue catalog keeps them on AWS.

On EMR the jobs' catalog is the Glue Data Catalog (``spark_jobs/lake/catalog.py``): Iceberg's ``GlueCatalog`` creates each
table in the tenant's Glue database and points it at every new metadata file it commits. Locally the catalog is
Iceberg's Hadoop catalog on s3a (Iceberg's Glue module needs the AWS SDK v2 jars, which cannot be fetched here), so
the emulator's Glue databases would hold no table, and Lake Formation's tags on the columns of a table could not be
read back from the table (``GetResourceLFTags``). After each silver or gold commit the job therefore registers the
table in Glue the way ``GlueCatalog`` does (``table_input``): ``TableType`` ``EXTERNAL_TABLE``, the parameters
``table_type=ICEBERG``, ``metadata_location`` (the commit's metadata file, ``s3://``) and
``previous_metadata_location``, the location, and one column per field of the current schema (then of the earlier
schemas, ``iceberg.field.current=false``) with its Glue type and the ``iceberg.field.*`` parameters. The type names
follow Iceberg's ``IcebergToGlueConverter`` (and pyiceberg's ``_IcebergSchemaToGlueType``).

Only for an ``s3a://`` lake with Glue databases in its config (a tenant applied on the emulator); an ``s3://`` lake's
Glue catalog does it itself, a folder lake has no Glue. A commit made by another command (``maintain``, an erase)
is registered at the next run or ``sync-tags``.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

from spark_jobs.lake.config import LakeConfig

TABLE_TYPE = "EXTERNAL_TABLE"
ICEBERG = "ICEBERG"
_PRIMITIVES = {"boolean": "boolean", "int": "int", "long": "bigint", "float": "float", "double": "double",
               "date": "date", "time": "string", "string": "string", "uuid": "string", "timestamp": "timestamp",
               "timestamptz": "timestamp", "timestamp_ns": "timestamp", "timestamptz_ns": "timestamp",
               "binary": "binary"}


def glue_type(iceberg_type: Any) -> str:
    """An Iceberg type (from the metadata JSON) as Glue names it."""
    if isinstance(iceberg_type, dict):
        kind = iceberg_type.get("type")
        if kind == "struct":
            return "struct<" + ",".join(f"{f['name']}:{glue_type(f['type'])}" for f in iceberg_type["fields"]) + ">"
        if kind == "list":
            return f"array<{glue_type(iceberg_type['element'])}>"
        if kind == "map":
            return f"map<{glue_type(iceberg_type['key'])},{glue_type(iceberg_type['value'])}>"
        return str(kind)
    text = str(iceberg_type)
    if text.startswith("fixed"):
        return "binary"
    return _PRIMITIVES.get(text, text)  # decimal(P,S) is written alike


def table_input(name: str, metadata: dict, metadata_location: str, previous_location: str = "") -> dict:
    """The Glue ``TableInput`` of one Iceberg table (the module's docstring says what it holds)."""
    columns: dict[str, dict] = {}
    current = metadata.get("current-schema-id")
    schemas = sorted(metadata.get("schemas") or [], key=lambda s: s.get("schema-id") != current)
    for schema in schemas:
        for field in schema.get("fields") or ():
            if field["name"] not in columns:
                columns[field["name"]] = {"Name": field["name"], "Type": glue_type(field["type"]), "Parameters": {
                    "iceberg.field.id": str(field["id"]), "iceberg.field.optional": str(not field.get("required")).lower(),
                    "iceberg.field.current": str(schema.get("schema-id") == current).lower()}}
    parameters = {"table_type": ICEBERG, "metadata_location": metadata_location}
    if previous_location and previous_location != metadata_location:
        parameters["previous_metadata_location"] = previous_location
    return {"Name": name, "TableType": TABLE_TYPE, "Parameters": parameters,
            "StorageDescriptor": {"Columns": list(columns.values()), "Location": _s3(metadata["location"])}}


def _s3(uri: str) -> str:
    """An ``s3a://`` URI as Glue and Athena name it (``s3://``)."""
    return "s3://" + uri.split("://", 1)[1] if uri.startswith("s3a://") else uri


def registers(lake: LakeConfig) -> bool:
    return lake.scheme == "s3a" and bool(lake.glue_databases)


def register(spark, lake: LakeConfig, layer: str, name: str, glue=None, s3=None) -> bool:
    """Point the Glue table ``<database of layer>.<name>`` at the table's current metadata file (created at the first
    call); False when the lake does not register (``registers``) or the table does not exist."""
    from spark_jobs.io import tables
    from spark_jobs.io.s3 import lake_client

    databases = dict(lake.glue_databases)
    if not registers(lake) or layer not in databases:
        return False
    table = tables.table(spark, lake, layer, name)
    if not tables.exists(spark, table):
        return False
    location = spark.sql(f"SELECT file FROM {table.qualified}.metadata_log_entries "
                         "ORDER BY timestamp DESC LIMIT 1").first()[0]
    bucket, key = location.split("://", 1)[1].split("/", 1)
    s3 = s3 or lake_client(lake, "s3")
    metadata = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    glue = glue or lake_client(lake, "glue")
    try:
        previous = glue.get_table(DatabaseName=databases[layer], Name=name)["Table"]
    except glue.exceptions.EntityNotFoundException:
        previous = None
    if previous is None:
        try:
            glue.create_table(DatabaseName=databases[layer], TableInput=table_input(name, metadata, _s3(location)))
        except glue.exceptions.EntityNotFoundException:
            return False  # no such database (a lake config naming databases the emulator does not hold)
    else:
        before = (previous.get("Parameters") or {}).get("metadata_location", "")
        glue.update_table(DatabaseName=databases[layer], TableInput=table_input(name, metadata, _s3(location), before),
                          VersionId=previous.get("VersionId", ""))
    return True


def register_layer(spark, lake: LakeConfig, names: Sequence[str], layer: str) -> str:
    """``register`` each of ``names``; a line for the run's output ("" when nothing was registered)."""
    if not registers(lake):
        return ""
    from spark_jobs.io.s3 import lake_client

    glue, s3 = lake_client(lake, "glue"), lake_client(lake, "s3")
    done = [name for name in names if register(spark, lake, layer, name, glue=glue, s3=s3)]
    return f"{len(done)} table(s) registered in Glue {dict(lake.glue_databases)[layer]}" if done else ""
