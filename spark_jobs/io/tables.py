"""Iceberg tables of the lake: create, replace the covered partitions in one commit, read, snapshots.

Why a half-written run is never visible: an Iceberg write puts its data files under the table's
``data/`` folder, where no snapshot references them yet, then commits a new snapshot by writing new
metadata (manifests, a manifest list, ``v<N+1>.metadata.json``) and switching the table to it. A job
killed before that switch leaves the current snapshot as it was; its stray files are orphans that no
reader of the table sees (``maintain`` removes them). There is no rename of data files.

Idempotent re-runs: a publish replaces exactly the partitions the run covers (``overwrite`` with a
row filter aligned to the partitioning, in ONE commit: rows deleted and rows added become visible
together). The run's output is a function of its input, so a re-run on the same input commits the
same rows. Each commit records the run id in the snapshot summary (``tenantlake.run-id``), which is
how the job finds the snapshot it created.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any, Iterable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.catalog import FORMAT_VERSION, CatalogSettings, register
from spark_jobs.io import storage
from spark_jobs.lake import LakeConfig

RUN_ID_PROPERTY = "tenantlake.run-id"
TABLE_PROPERTIES = {
    "format-version": FORMAT_VERSION,
    # Additive schema evolution with the data commit: a column a contract adds appears in the same
    # snapshot as its first values (merge-schema on write); a changed type still fails the write.
    "write.spark.accept-any-schema": "true",
}


class TableError(RuntimeError):
    """A table cannot be written or read as asked; the message says what to do."""


@dataclasses.dataclass(frozen=True)
class Table:
    """One Iceberg table of a lake: ``<layer>.<name>`` in the lake's catalog."""

    catalog: CatalogSettings
    layer: str
    name: str

    @property
    def qualified(self) -> str:
        return self.catalog.qualified(self.layer, self.name)

    @property
    def display(self) -> str:
        """The name users write in SQL (the lake's catalog being the session default)."""
        return f"{self.catalog.namespace(self.layer)}.{self.name}"

    @property
    def location(self) -> str:
        return self.catalog.location(self.layer, self.name)


def table(spark: SparkSession, lake: LakeConfig, layer: str, name: str) -> Table:
    """The table ``<layer>.<name>`` of ``lake``, its catalog registered in ``spark``."""
    return Table(catalog=register(spark, lake), layer=layer, name=name)


def exists(spark: SparkSession, tbl: Table) -> bool:
    return bool(spark.catalog.tableExists(tbl.qualified))


# ---------------------------------------------------------------------------- partitioning and filters
@dataclasses.dataclass(frozen=True)
class Partitioning:
    """How a table is partitioned, and the row filter that selects whole partitions of it.

    Attributes:
        column: the source column (the contract's event time, or a gold table's ``event_date``).
        transform: ``day`` (hidden ``days(column)`` on a timestamp) or ``identity`` (a date column).
    """

    column: str
    transform: str

    @property
    def sql(self) -> str:
        """The ``PARTITIONED BY`` term, e.g. ``days(`event_ts`)``."""
        return f"days(`{self.column}`)" if self.transform == "day" else f"`{self.column}`"

    @property
    def spec(self) -> str:
        """How Spark's DESCRIBE TABLE names it, e.g. ``days(event_ts)``."""
        return f"days({self.column})" if self.transform == "day" else self.column

    def covering(self, dates: Iterable[str], include_null: bool) -> str:
        """A SQL filter selecting exactly the partitions of ``dates`` (``YYYY-MM-DD``), plus the null
        partition when ``include_null``: aligned with the partitioning, so Iceberg replaces whole files."""
        column = f"`{self.column}`"
        terms = []
        if self.transform == "day":
            for start, end in _date_ranges(sorted(set(dates))):
                terms.append(f"({column} >= TIMESTAMP '{start} 00:00:00' AND {column} < TIMESTAMP '{end} 00:00:00')")
        elif dates:
            terms.append(f"{column} IN ({', '.join(f'DATE {chr(39)}{d}{chr(39)}' for d in sorted(set(dates)))})")
        if include_null:
            terms.append(f"{column} IS NULL")
        return " OR ".join(terms) or "false"


def _date_ranges(dates: list[str]) -> list[tuple[str, str]]:
    """Consecutive dates merged into half-open ranges [start, day after end)."""
    ranges: list[tuple[dt.date, dt.date]] = []
    for text in dates:
        day = dt.date.fromisoformat(text)
        if ranges and ranges[-1][1] == day:
            ranges[-1] = (ranges[-1][0], day + dt.timedelta(days=1))
        else:
            ranges.append((day, day + dt.timedelta(days=1)))
    return [(start.isoformat(), end.isoformat()) for start, end in ranges]


# ---------------------------------------------------------------------------- create, write, read
def _column_ddl(schema: T.StructType) -> str:
    return ", ".join(f"`{field.name}` {field.dataType.simpleString()}" for field in schema.fields)


def check_no_legacy_files(spark: SparkSession, tbl: Table) -> None:
    """A table's folder must not already hold Parquet written before the tables existed (Hive-style
    ``<col>=<value>/`` folders): readers would not see it, and ``maintain`` would delete it as orphans."""
    legacy = [name for name in storage.list_dir(spark, tbl.location)
              if name not in ("data", "metadata") and not name.startswith(".")]
    if legacy:
        raise TableError(f"{tbl.location} holds files from before the Iceberg tables ({', '.join(legacy[:3])}"
                         f"{', ...' if len(legacy) > 3 else ''}); move them away, then re-run the layer without "
                         f"--date to rebuild {tbl.display} from its input")


def ensure_table(spark: SparkSession, tbl: Table, schema: T.StructType, partitioning: Partitioning) -> bool:
    """Create the table (format v2, partitioned) unless it exists; True when it was created now.
    Creating commits no snapshot: a table exists without data until the first publish commits one."""
    if exists(spark, tbl):
        return False
    check_no_legacy_files(spark, tbl)
    properties = ", ".join(f"'{k}' = '{v}'" for k, v in TABLE_PROPERTIES.items())
    location = f" LOCATION '{tbl.location}'" if tbl.catalog.kind == "glue" else ""  # Hadoop: fixed by the catalog
    spark.sql(f"CREATE TABLE IF NOT EXISTS {tbl.qualified} ({_column_ddl(schema)}) USING iceberg "
              f"PARTITIONED BY ({partitioning.sql}){location} TBLPROPERTIES ({properties})")
    return True


def overwrite(df: DataFrame, tbl: Table, partitioning: Partitioning, condition: str, run_id: str) -> dict[str, Any]:
    """Replace the rows matching ``condition`` (whole partitions) by ``df`` in one commit; returns the
    snapshot it created (``snapshot``)."""
    ensure_table(df.sparkSession, tbl, df.schema, partitioning)
    (
        df.writeTo(tbl.qualified)
        .option("merge-schema", "true")
        .option(f"snapshot-property.{RUN_ID_PROPERTY}", run_id)
        .overwrite(F.expr(condition))
    )
    created = snapshot_of_run(df.sparkSession, tbl, run_id)
    if created is None:
        raise TableError(f"{tbl.display}: the write returned but no snapshot carries run id {run_id}")
    return created


def _iceberg_table(spark: SparkSession, tbl: Table):
    """Iceberg's own Table object (through the JVM): snapshot facts without running a Spark job."""
    return spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, tbl.qualified)


def _snapshot_dict(snapshot) -> dict[str, Any]:
    summary = {str(k): str(v) for k, v in dict(snapshot.summary()).items()}
    parent = snapshot.parentId()
    millis = int(snapshot.timestampMillis())
    committed = dt.datetime.fromtimestamp(millis / 1000, tz=dt.timezone.utc)
    return {"snapshot_id": int(snapshot.snapshotId()), "parent_id": None if parent is None else int(parent),
            "operation": str(snapshot.operation()),
            "committed_at": committed.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z",
            "run_id": summary.get(RUN_ID_PROPERTY),
            **{key.replace("-", "_"): int(summary.get(key, 0)) for key in ("added-records", "deleted-records",
                                                                          "total-records")}}


def snapshot_of_run(spark: SparkSession, tbl: Table, run_id: str) -> dict[str, Any] | None:
    """The newest snapshot whose summary carries ``run_id`` (None: the run committed nothing)."""
    found = [s for s in _iceberg_table(spark, tbl).snapshots() if dict(s.summary()).get(RUN_ID_PROPERTY) == run_id]
    return _snapshot_dict(max(found, key=lambda s: s.timestampMillis())) if found else None


def current_snapshot(spark: SparkSession, tbl: Table) -> dict[str, Any] | None:
    """The snapshot the table's ``main`` branch points at (None: no table, or no data committed yet)."""
    try:
        snapshot = _iceberg_table(spark, tbl).currentSnapshot()
    except Exception as exc:  # noqa: BLE001 - the JVM's NoSuchTableException, as py4j or pyspark raise it
        if "NoSuchTableException" in str(exc) or "TABLE_OR_VIEW_NOT_FOUND" in str(exc):
            return None
        raise
    return None if snapshot is None else _snapshot_dict(snapshot)


_TRANSFORM_TERMS = {"day": "days", "month": "months", "year": "years", "hour": "hours"}


def describe(spark: SparkSession, tbl: Table) -> dict[str, Any]:
    """Columns (name, Spark type) as Spark's DESCRIBE TABLE reports them, and the partition spec as
    Spark's DDL writes it (``days(event_ts)``, ``event_date``), from Iceberg's own spec."""
    columns = []
    for row in spark.sql(f"DESCRIBE TABLE {tbl.qualified}").collect():
        if not row["col_name"].strip() or row["col_name"].startswith("#"):
            break  # the partition sections follow the columns
        columns.append([row["col_name"], row["data_type"]])
    iceberg = _iceberg_table(spark, tbl)
    partitioning = []
    for field in iceberg.spec().fields():
        source, transform = str(iceberg.schema().findColumnName(field.sourceId())), str(field.transform())
        partitioning.append(source if transform == "identity" else f"{_TRANSFORM_TERMS.get(transform, transform)}({source})")
    return {"columns": columns, "partitioning": partitioning}


def read(spark: SparkSession, tbl: Table, snapshot_id: int | None = None) -> DataFrame:
    reader = spark.read if snapshot_id is None else spark.read.option("snapshot-id", str(snapshot_id))
    return reader.table(tbl.qualified)


def count_where(spark: SparkSession, tbl: Table, snapshot_id: int, condition: str) -> int:
    """Rows of snapshot ``snapshot_id`` matching ``condition``, read back from its data files (Iceberg's
    aggregate push-down is off here: it would answer from the manifests' record counts instead)."""
    return (spark.read.option("snapshot-id", str(snapshot_id)).option("aggregate-push-down-enabled", "false")
            .table(tbl.qualified).where(F.expr(condition)).count())


def publish_record(spark: SparkSession, tbl: Table, snapshot: dict[str, Any]) -> dict[str, Any]:
    """What the run manifest records about one publish: table, location, the snapshot it created,
    and the schema and partitioning the table has after it."""
    return {"table": tbl.display, "location": tbl.location, "catalog": tbl.catalog.kind, **snapshot,
            **describe(spark, tbl)}
