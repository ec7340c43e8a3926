"""The tenant's table catalog on AWS: one Glue database per table layer (silver, gold).

The jobs register their Iceberg tables there (``spark_jobs/lake/catalog.py``, Glue branch) with each table's
location under the layer's prefix of the lake (``s3://<lake>/<layer>/<table>``), which is also the
database's ``location_uri``. Names: ``<tenant_key>_<layer>`` (``tenant_model.GLUE_DATABASE_TEMPLATE``;
the tenant id with ``-`` as ``_``, what Glue and Athena accept unquoted). Who may read or change them
is in the roles' identity policies (``modules/job_roles.py``): the job role reads and writes both, the
consumer reads gold only, nobody else in the account is granted anything. The emulator stores the
databases; locally the jobs register each committed table in them as Iceberg's Glue catalog does on AWS (the local
catalog is a Hadoop catalog: ``spark_jobs/io/glue_tables.py``).
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

from cdktf_cdktf_provider_aws.glue_catalog_database import GlueCatalogDatabase
from constructs import Construct

import tenant_model as model


@dataclasses.dataclass(frozen=True)
class GlueDatabasesConfig:
    """Inputs of ``GlueDatabases`` (values may be Terraform expressions).

    Attributes:
        tenant_key: the tenant id as a Glue identifier (``replace(var.tenant_id, "-", "_")``).
        lake_bucket: the lake bucket's name; a database's location is ``s3://<lake>/<layer>/``.
        tags: tags of the databases.
        layers: the layers that hold tables. @default - ``tenant_model.CATALOG_LAYERS`` (silver, gold)
    """

    tenant_key: str
    lake_bucket: str
    tags: Mapping[str, str]
    layers: Sequence[str] = model.CATALOG_LAYERS


class GlueDatabases(Construct):
    """``aws_glue_catalog_database`` per layer; ``names``/``arns`` by layer, ``catalog_arn``."""

    def __init__(self, scope: Construct, id_: str, cfg: GlueDatabasesConfig) -> None:
        super().__init__(scope, id_)
        self.databases = {
            layer: GlueCatalogDatabase(
                self, layer, name=model.glue_database_name(layer, cfg.tenant_key),
                location_uri=f"s3://{cfg.lake_bucket}/{layer}/",
                description=f"tenantlake {layer} tables (Apache Iceberg) of one tenant", tags=cfg.tags)
            for layer in cfg.layers
        }
        self.names = {layer: db.name for layer, db in self.databases.items()}
        self.arns = {layer: db.arn for layer, db in self.databases.items()}
