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

Marks: what a table's rows were computed from (silver: the last bronze batch taken, ``BRONZE_BATCH_MARK``;
gold: the silver snapshot read, ``SILVER_SNAPSHOT_MARK``) go into the snapshot summary of the same commit
(``snapshot-property.<mark>``), so the mark and the rows are committed together or not at all. A commit that
names no marks (an erasure's rewrite, a ``--date`` run) carries the current ones forward. Table maintenance and
an erasure end with snapshots of their own (``replace``: the same rows in other files) and expire older ones,
so the marks are also written beside the table after each commit (``marks_uri``), naming the snapshot they
belong to: ``read_marks`` trusts that copy only for that snapshot (``latest_data_snapshot``).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import json

from spark_jobs.io import storage
from spark_jobs.io.partitioning import Partitioning, days_in_month
from spark_jobs.lake.catalog import FORMAT_VERSION, CatalogSettings, register
from spark_jobs.lake.config import LakeConfig

RUN_ID_PROPERTY = "tenantlake.run-id"
# Marks (see the module's docstring): silver's last bronze batch taken, gold's silver snapshot read.
BRONZE_BATCH_MARK = "tenantlake.bronze-batch"
SILVER_SNAPSHOT_MARK = "tenantlake.silver-snapshot"
MARKS = (BRONZE_BATCH_MARK, SILVER_SNAPSHOT_MARK)
# A snapshot of this operation holds the same rows as its parent in other files (compaction, a manifest
# rewrite, a partition layout change): it changes no partition's rows and carries no marks of its own.
SAME_ROWS_OPERATION = "replace"
TABLE_PROPERTIES = {
    "format-version": FORMAT_VERSION,
    # Iceberg, not Spark's analyser, judges a write against the table: columns resolved by name, and a
    # column the DataFrame lacks (one a contract removed while the table keeps it) written as null. The
    # schema itself changes only through `evolve` (spark_jobs/README.md, "Schema evolution"): writes do not
    # merge schemas, so a DataFrame that does not match the evolved table fails instead of changing it.
    "write.spark.accept-any-schema": "true",
}


# Every write clusters its rows by partition first: a shuffle by the partition value, then each task writes
# its partitions one after the other, ONE file open at a time (Iceberg's hash distribution and its local sort
# by partition; ``fanout`` off). Written out, not left to the defaults, because a task that wrote rows of
# hundreds of months at once would hold a Parquet writer (buffers for every column) per month.
WRITE_OPTIONS = {"distribution-mode": "hash", "fanout-enabled": "false"}


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


def load(spark: SparkSession, tbl: Table):
    """Iceberg's own Table object (through the JVM), or None when the table does not exist. Each call is
    one catalog lookup (on the Hadoop catalog over s3a: about 11 requests, the version hint, the next
    versions probed and the metadata file read), so a publish loads its table once, takes every fact it
    needs from that object, and ``refresh()``es it after its commit (``publish``)."""
    try:
        return _iceberg_table(spark, tbl)
    except Exception as exc:  # noqa: BLE001 - the JVM's NoSuchTableException, as py4j or pyspark raise it
        if _is_missing_table(exc):
            return None
        raise


def _is_missing_table(exc: BaseException) -> bool:
    return "NoSuchTableException" in str(exc) or "TABLE_OR_VIEW_NOT_FOUND" in str(exc)


def _ensure(spark: SparkSession, tbl: Table, schema: T.StructType, partitioning: Partitioning,
            loaded: Any = None, properties: dict[str, str] | None = None) -> tuple[Any, bool]:
    """``ensure_table`` on the loaded table (``loaded``, else loaded here): (the table object or None when
    it was created now, created)."""
    loaded = loaded if loaded is not None else load(spark, tbl)
    if loaded is not None:
        current = _spec_terms(loaded)
        if current != [partitioning.spec]:
            if len(current) != 1:
                raise TableError(f"{tbl.display} is partitioned by {current or 'nothing'}, not {partitioning.spec}; "
                                 "the jobs evolve one partition field only")
            spark.sql(f"ALTER TABLE {tbl.qualified} REPLACE PARTITION FIELD {current[0]} WITH {partitioning.sql}")
            if loaded.currentSnapshot() is not None:
                # Every file is rewritten into the new partitions once (same rows, a `replace` snapshot):
                # an overwrite commits whole files, and a month file is not whole in a day's filter.
                system, name = f"{tbl.catalog.name}.system", f"'{tbl.catalog.namespace(tbl.layer)}.{tbl.name}'"
                spark.sql(f"CALL {system}.rewrite_data_files(table => {name}, options => map('rewrite-all', 'true'))")
            loaded.refresh()
        return loaded, False
    check_no_legacy_files(spark, tbl)
    properties = ", ".join(f"'{k}' = {_sql_text(v)}" for k, v in {**TABLE_PROPERTIES, **(properties or {})}.items())
    location = f" LOCATION '{tbl.location}'" if tbl.catalog.kind == "glue" else ""  # Hadoop: fixed by the catalog
    spark.sql(f"CREATE TABLE IF NOT EXISTS {tbl.qualified} ({_column_ddl(schema)}) USING iceberg "
              f"PARTITIONED BY ({partitioning.sql}){location} TBLPROPERTIES ({properties})")
    return None, True


def _sql_text(value: str) -> str:
    """A Spark SQL string literal holding ``value`` (a property's JSON text may hold quotes and backslashes)."""
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def ensure_table(spark: SparkSession, tbl: Table, schema: T.StructType, partitioning: Partitioning,
                 properties: dict[str, str] | None = None) -> bool:
    """Create the table (format v2, partitioned) unless it exists; True when it was created now.
    Creating commits no snapshot: a table exists without data until the first publish commits one.
    An existing table partitioned otherwise (the contract's ``partition_granularity`` changed) has its
    partition field replaced first (Iceberg partition evolution), then every data file rewritten into
    the new partitions (``rewrite_data_files`` with ``rewrite-all``: the same rows, one more snapshot),
    so that later overwrites of single dates always replace whole files. Both happen before the
    caller's data commit; a reader sees the same rows throughout. ``properties``: more table properties
    of a table created now."""
    return _ensure(spark, tbl, schema, partitioning, properties=properties)[1]


def _commit(df: DataFrame, tbl: Table, condition: str, run_id: str, options: dict[str, str] | None,
            loaded: Any, marks: dict[str, str] | None = None, fence=None) -> tuple[dict[str, Any], Any]:
    """Spark's overwrite of ``condition`` by ``df`` (one commit), then the snapshot it created, read from
    ``loaded`` refreshed (or from the table loaded now, when it was created by this publish). ``marks`` go
    into the snapshot's summary (None: the table's current marks, carried forward) and beside the table
    (``marks_uri``). ``fence`` (a callable naming what is committed) runs right before the commit: a run
    that no longer holds its lease stops there (``spark_jobs.runs.leases.fence``)."""
    spark = df.sparkSession
    if marks is None:
        marks = read_marks(spark, tbl, loaded) if loaded is not None else {}
    writer = df.writeTo(tbl.qualified).option(f"snapshot-property.{RUN_ID_PROPERTY}", run_id)
    for key, value in marks.items():
        writer = writer.option(f"snapshot-property.{key}", str(value))
    for key, value in WRITE_OPTIONS.items():
        writer = writer.option(key, value)
    for key, value in (options or {}).items():
        writer = writer.option(key, value)
    if fence is not None:
        fence(tbl.display)
    writer.overwrite(F.expr(condition))
    if loaded is None:
        loaded = _iceberg_table(spark, tbl)
    else:
        loaded.refresh()
    created = _snapshot_of_run(loaded, run_id)
    if created is None:
        raise TableError(f"{tbl.display}: the write returned but no snapshot carries run id {run_id}")
    if marks:
        storage.write_text(spark, marks_uri(tbl), json.dumps({"snapshot_id": created["snapshot_id"],
                                                             "marks": {k: str(v) for k, v in marks.items()}}))
    return created, loaded


def overwrite(df: DataFrame, tbl: Table, partitioning: Partitioning, condition: str, run_id: str,
              options: dict[str, str] | None = None) -> dict[str, Any]:
    """Replace the rows matching ``condition`` (whole partitions) by ``df`` in one commit; returns the
    snapshot it created (``snapshot``). ``options``: more Iceberg write options."""
    loaded, _ = _ensure(df.sparkSession, tbl, df.schema, partitioning)
    return _commit(df, tbl, condition, run_id, options, loaded)[0]


def _replace(df: DataFrame, tbl: Table, partitioning: Partitioning, dates: list[str], include_null: bool,
             run_id: str, loaded: Any = None, marks: dict[str, str] | None = None,
             fence=None, everything: bool = False) -> tuple[dict[str, Any], Any]:
    """``replace_dates``, also returning the table object refreshed after the commit (``everything``: every
    row of the table is replaced, whatever the dates)."""
    spark = df.sparkSession
    loaded, _ = _ensure(spark, tbl, df.schema, partitioning, loaded)
    if everything:
        created, loaded = _commit(df, tbl, "true", run_id, {}, loaded, marks, fence)
        return {**created, "kept_records": 0}, loaded
    partial = partitioning.partial(dates)
    current = None
    if partial and loaded is not None and loaded.currentSnapshot() is not None:
        current = _snapshot_dict(loaded.currentSnapshot())
    options: dict[str, str] = {}
    kept_df, kept = None, 0
    if current is not None:
        others = (f"({partitioning.covering([f'{month}-01' for month in partial], False)}) "
                  f"AND NOT coalesce({partitioning.rows(dates, include_null)}, false)")
        kept_df = read(spark, tbl, current["snapshot_id"]).where(F.expr(others)).persist()
        kept = kept_df.count()
        if kept:
            df = df.unionByName(kept_df, allowMissingColumns=True)
        options = {"validate-from-snapshot-id": str(current["snapshot_id"]), "isolation-level": "serializable"}
    created, loaded = _commit(df, tbl, partitioning.covering(dates, include_null), run_id, options, loaded,
                              marks, fence)
    if kept_df is not None:
        kept_df.unpersist()
    return {**created, "kept_records": kept}, loaded


def replace_dates(df: DataFrame, tbl: Table, partitioning: Partitioning, dates: list[str], include_null: bool,
                  run_id: str) -> dict[str, Any]:
    """Replace the rows of the event ``dates`` (plus the null partition when ``include_null``) by ``df``
    in ONE commit; returns the snapshot it created, with ``kept_records``.

    At ``day`` granularity the dates are whole partitions: a plain ``overwrite``. At ``month``, a
    month the dates cover only in part (``Partitioning.partial``) is still replaced whole, because an
    overwrite commits whole files: the rows of its other dates are read from the current snapshot and
    written again in the same commit (``kept_records`` of them), and the commit is validated against
    that snapshot (``isolation-level=serializable``), so a commit made in between fails this one
    instead of being overwritten."""
    return _replace(df, tbl, partitioning, dates, include_null, run_id)[0]


def publish(df: DataFrame, tbl: Table, partitioning: Partitioning, dates: list[str], include_null: bool,
            run_id: str, loaded: Any = None, marks: dict[str, str] | None = None, fence=None,
            everything: bool = False) -> dict[str, Any]:
    """``replace_dates``, returning what the run manifest records about it (``publish_record``): the
    snapshot created, ``kept_records``, and the table's columns and partitioning after the commit.
    ``marks``: what the rows were computed from, committed with them (None: the current marks, carried
    forward); ``fence``: called with the table's name right before the commit (``_commit``); ``everything``:
    replace every row of the table (a full gold rebuild), not only the dates'.

    The table is looked up once (or not at all when the caller passes it ``loaded``: ``load``) and
    refreshed once after the commit; the record comes from that object, not from more lookups (a
    DESCRIBE TABLE, the spec, the snapshot list each looked the table up again: 10 lookups per publish
    before, 4 now with Spark's own)."""
    created, loaded = _replace(df, tbl, partitioning, dates, include_null, run_id, loaded, marks, fence, everything)
    return {"table": tbl.display, "location": tbl.location, "catalog": tbl.catalog.kind, **created,
            **_describe_loaded(df.sparkSession, loaded)}


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


def _snapshot_of_run(loaded, run_id: str) -> dict[str, Any] | None:
    """Right after a run's commit its snapshot is the current one (one writer per table): that one is
    checked first, without walking the table's history (every snapshot's summary is a few JVM calls, and
    a table keeps a snapshot per run until ``maintain`` expires them)."""
    current = loaded.currentSnapshot()
    if current is not None and str(current.summary().get(RUN_ID_PROPERTY)) == run_id:
        return _snapshot_dict(current)
    found = [s for s in loaded.snapshots() if dict(s.summary()).get(RUN_ID_PROPERTY) == run_id]
    return _snapshot_dict(max(found, key=lambda s: s.timestampMillis())) if found else None


def current_snapshot(spark: SparkSession, tbl: Table) -> dict[str, Any] | None:
    """The snapshot the table's ``main`` branch points at (None: no table, or no data committed yet)."""
    return snapshot_now(load(spark, tbl))


def snapshot_bytes(loaded) -> int | None:
    """The bytes of data files in the table's current snapshot (its summary's ``total-files-size``; None:
    no table or no snapshot). Read from the table object: no request, no Spark job."""
    snapshot = loaded.currentSnapshot() if loaded is not None else None
    if snapshot is None:
        return None
    value = dict(snapshot.summary()).get("total-files-size")
    return int(value) if value is not None else None


def snapshot_rows(loaded) -> int | None:
    """The rows of the table's current snapshot from its summary (``total-records``), when the snapshot has
    no delete files (then every data file's records are live rows: what ``count(*)`` reads from the same
    manifests); None when it has some, or the summary does not say (count the rows instead)."""
    snapshot = loaded.currentSnapshot() if loaded is not None else None
    if snapshot is None:
        return None
    summary = dict(snapshot.summary())
    if str(summary.get("total-delete-files")) != "0" or summary.get("total-records") is None:
        return None
    return int(summary["total-records"])


def snapshot_now(loaded) -> dict[str, Any] | None:
    """``current_snapshot`` of a table object already loaded (``load``; None: no table)."""
    snapshot = loaded.currentSnapshot() if loaded is not None else None
    return None if snapshot is None else _snapshot_dict(snapshot)


# ---------------------------------------------------------------------------- marks and changed partitions
def marks_uri(tbl: Table) -> str:
    """Where a table's marks are written beside it after each commit (``_commit``): under the lake's
    ``checkpoints/_tables/`` (the job role's prefix), not in the table's folder, whose unreferenced files
    ``maintain``'s orphan removal deletes."""
    return f"{tbl.catalog.warehouse}/checkpoints/_tables/{tbl.layer}/{tbl.name}.marks.json"


def latest_data_snapshot(loaded) -> int | None:
    """The id of the newest snapshot that changed the table's rows: the current one, or the first parent
    before it of an operation other than ``replace`` (a compaction or manifest rewrite holds the same rows in
    other files). A parent expired since is still named by its child. None: no snapshot."""
    snapshot = loaded.currentSnapshot() if loaded is not None else None
    while snapshot is not None and str(snapshot.operation()) == SAME_ROWS_OPERATION:
        parent = snapshot.parentId()
        if parent is None:
            return None
        found = loaded.snapshot(parent)
        if found is None:
            return int(parent)
        snapshot = found
    return None if snapshot is None else int(snapshot.snapshotId())


def read_marks(spark: SparkSession, tbl: Table, loaded) -> dict[str, str]:
    """The marks of the table's rows (``MARKS``): from the summary of its latest data snapshot
    (``latest_data_snapshot``), else from the copy beside the table when it names that snapshot; {} when
    neither says (no snapshot, an older table, or marks lost with expired snapshots)."""
    latest = latest_data_snapshot(loaded)
    if latest is None:
        return {}
    snapshot = loaded.snapshot(latest)
    if snapshot is not None:
        summary = {str(k): str(v) for k, v in dict(snapshot.summary()).items()}
        found = {key: summary[key] for key in MARKS if key in summary}
        if found:
            return found
    uri = marks_uri(tbl)
    if not storage.exists(spark, uri):
        return {}
    try:
        beside = json.loads(storage.read_text(spark, uri))
    except ValueError:
        return {}
    if not isinstance(beside, dict) or beside.get("snapshot_id") != latest:
        return {}
    return {str(k): str(v) for k, v in (beside.get("marks") or {}).items() if k in MARKS}


@dataclasses.dataclass
class ChangedPartitions:
    """The partitions whose rows some snapshots changed, as event dates (a month: each of its days), the
    null partition (``null``), or every row (``everything``: a file of a table without partitions)."""

    dates: set[str] = dataclasses.field(default_factory=set)
    null: bool = False
    everything: bool = False
    snapshots: int = 0


def changed_since(spark: SparkSession, loaded, since: int) -> ChangedPartitions | None:
    """The partitions whose data or delete files the snapshots after ``since`` (up to the current one)
    added or removed, from their own manifests (no data file is read); ``replace`` snapshots change no rows
    and are skipped. None when ``since`` is not an ancestor of the current snapshot (expired, or another
    history): the caller must then read everything."""
    changed = ChangedPartitions()
    snapshot = loaded.currentSnapshot()
    io = loaded.io()
    specs = loaded.specs()
    while snapshot is not None and int(snapshot.snapshotId()) != since:
        if str(snapshot.operation()) != SAME_ROWS_OPERATION:
            changed.snapshots += 1
            for files in (snapshot.addedDataFiles(io), snapshot.removedDataFiles(io),
                          snapshot.addedDeleteFiles(io), snapshot.removedDeleteFiles(io)):
                for data_file in files:
                    _add_partition(spark, changed, specs.get(data_file.specId()), data_file.partition())
        parent = snapshot.parentId()
        if parent is None:
            return None
        if int(parent) == since:
            return changed
        snapshot = loaded.snapshot(parent)
    return changed if snapshot is not None else None


def _add_partition(spark: SparkSession, changed: ChangedPartitions, spec, partition) -> None:
    """One data file's partition as event dates: ``day``/``identity`` (days since 1970-01-01) is one date,
    ``month`` (months since 1970-01) every day of the month; a null value is the null partition. A file
    of a table without partitions changes ``everything``."""
    fields = list(spec.fields()) if spec is not None else []
    if not fields:
        changed.everything = True
        return
    value = partition.get(0, spark._jvm.java.lang.Object().getClass())
    if value is None:
        changed.null = True
        return
    transform = str(fields[0].transform())
    epoch = dt.date(1970, 1, 1)
    if transform == "month":
        month = f"{1970 + int(value) // 12:04d}-{int(value) % 12 + 1:02d}"
        first = dt.date.fromisoformat(f"{month}-01")
        changed.dates.update((first + dt.timedelta(days=i)).isoformat() for i in range(days_in_month(month)))
    else:
        changed.dates.add((epoch + dt.timedelta(days=int(value))).isoformat())


_TRANSFORM_TERMS = {"day": "days", "month": "months", "year": "years", "hour": "hours"}


def spec_terms(spark: SparkSession, tbl: Table) -> list[str]:
    """The table's current partition spec as Spark's DDL writes it (``days(event_ts)``, ``event_date``),
    from Iceberg's own spec (no Spark job)."""
    return _spec_terms(_iceberg_table(spark, tbl))


def spec_of(loaded) -> list[str]:
    """``spec_terms`` of a table object already loaded (``load``)."""
    return _spec_terms(loaded)


def _spec_terms(iceberg) -> list[str]:
    terms = []
    for field in iceberg.spec().fields():
        source, transform = str(iceberg.schema().findColumnName(field.sourceId())), str(field.transform())
        terms.append(source if transform == "identity" else f"{_TRANSFORM_TERMS.get(transform, transform)}({source})")
    return terms


def describe(spark: SparkSession, tbl: Table) -> dict[str, Any]:
    """Columns (name, Spark type) as Spark's DESCRIBE TABLE reports them, and the partition spec
    (``spec_terms``)."""
    columns = []
    for row in spark.sql(f"DESCRIBE TABLE {tbl.qualified}").collect():
        if not row["col_name"].strip() or row["col_name"].startswith("#"):
            break  # the partition sections follow the columns
        columns.append([row["col_name"], row["data_type"]])
    return {"columns": columns, "partitioning": spec_terms(spark, tbl)}


def _describe_loaded(spark: SparkSession, loaded) -> dict[str, Any]:
    """``describe`` from a loaded table object, without looking the table up again: the columns as
    Spark's DESCRIBE TABLE names them (Iceberg's schema converted by Iceberg's own ``SparkSchemaUtil``,
    the conversion Spark's view of the table uses), the partition spec and the current schema's id."""
    spark_schema = spark._jvm.org.apache.iceberg.spark.SparkSchemaUtil.convert(loaded.schema())
    columns = [[str(field.name()), str(field.dataType().simpleString())] for field in spark_schema.fields()]
    return {"columns": columns, "partitioning": _spec_terms(loaded), "schema_id": int(loaded.schema().schemaId())}


def read(spark: SparkSession, tbl: Table, snapshot_id: int | None = None) -> DataFrame:
    reader = spark.read if snapshot_id is None else spark.read.option("snapshot-id", str(snapshot_id))
    return reader.table(tbl.qualified)


def publish_record(spark: SparkSession, tbl: Table, snapshot: dict[str, Any]) -> dict[str, Any]:
    """What the run manifest records about one publish: table, location, the snapshot it created,
    and the schema and partitioning the table has after it."""
    return {"table": tbl.display, "location": tbl.location, "catalog": tbl.catalog.kind, **snapshot,
            **describe(spark, tbl)}


# ---------------------------------------------------------------------------- schema evolution
@dataclasses.dataclass(frozen=True)
class SchemaStep:
    """One metadata-only change of a table's schema (``evolve``).

    Attributes:
        op: ``add`` (an optional column: old rows read null), ``widen`` (int -> long, float -> double, a
            decimal's precision), ``rename`` or ``drop``.
        column: the column as the table names it now (``add``: the new column).
        type: ``add``/``widen``: the Spark type (``bigint``, ``decimal(12,2)``). @default - None
        new_name: ``rename``: the column's new name. @default - None
        after: ``add``: the column it follows (its current name), None for the end. @default - None
    """

    op: str
    column: str
    type: str | None = None
    new_name: str | None = None
    after: str | None = None

    @property
    def sql(self) -> str:
        """The change as Spark SQL on ``<table>`` (what reviewers read; ``evolve`` commits it through
        Iceberg's API, all steps in one commit)."""
        if self.op == "add":
            return f"ADD COLUMN `{self.column}` {self.type}" + (f" AFTER `{self.after}`" if self.after else "")
        if self.op == "widen":
            return f"ALTER COLUMN `{self.column}` TYPE {self.type}"
        if self.op == "rename":
            return f"RENAME COLUMN `{self.column}` TO `{self.new_name}`"
        return f"DROP COLUMN `{self.column}`"


def table_columns(spark: SparkSession, loaded) -> list[tuple[str, str]]:
    """(name, Spark type) of each column of a loaded table, in the table's order (``_describe_loaded``)."""
    return [(name, kind) for name, kind in _describe_loaded(spark, loaded)["columns"]]


def schema_id(loaded) -> int | None:
    """The id of the table's current schema (Iceberg numbers each schema; an evolution adds one)."""
    return None if loaded is None else int(loaded.schema().schemaId())


def table_property(loaded, name: str) -> str | None:
    value = None if loaded is None else loaded.properties().get(name)
    return None if value is None else str(value)


@dataclasses.dataclass(frozen=True)
class Evolved:
    """What ``evolve`` changed, to undo it (``undo_evolution``) when the write it was made for fails:
    the schema id before, the metadata file it committed, and the old values of the properties it set
    (None: the property was not set)."""

    schema_id_before: int
    metadata_after: str
    properties_before: dict[str, str | None]


def evolve(spark: SparkSession, loaded, steps: list[SchemaStep],
           properties: dict[str, str] | None = None) -> Evolved:
    """Apply ``steps`` and set ``properties`` in ONE Iceberg commit (a transaction: all of it or none).
    Every step changes metadata only: no data file is read or written, and no snapshot is made, so the
    table's current snapshot, its files and time travel to earlier snapshots stay as they were (a snapshot
    is read with the schema it was written with). Names refer to the table as it is before the commit.
    Returns what ``undo_evolution`` needs to put the schema and properties back."""
    jvm = spark._jvm
    before = Evolved(int(loaded.schema().schemaId()), "",
                     {key: table_property(loaded, key) for key in (properties or {})})
    txn = loaded.newTransaction()
    if steps:
        update = txn.updateSchema()
        for step in steps:
            if step.op == "add":
                update = update.addColumn(step.column, _iceberg_type(jvm, step.type))
                if step.after:
                    update = update.moveAfter(step.column, step.after)
            elif step.op == "widen":
                update = update.updateColumn(step.column, _iceberg_type(jvm, step.type))
            elif step.op == "rename":
                update = update.renameColumn(step.column, step.new_name)
            elif step.op == "drop":
                update = update.deleteColumn(step.column)
            else:
                raise ValueError(f"schema step {step.op!r} is not one of add, widen, rename, drop")
        update.commit()
    if properties:
        update_properties = txn.updateProperties()
        for key, value in properties.items():
            update_properties = update_properties.set(key, value)
        update_properties.commit()
    txn.commitTransaction()
    loaded.refresh()
    return dataclasses.replace(before, metadata_after=str(loaded.operations().current().metadataFileLocation()))


def undo_evolution(spark: SparkSession, loaded, evolved: Evolved) -> bool:
    """Put the schema and properties ``evolve`` changed back, when the write it was made for failed: one
    metadata commit that makes the schema of before current again (Iceberg keeps every schema, so the ids
    and the data files read through them are the same) and restores the properties. Only when nothing was
    committed since the evolution (the table's metadata file is still the one it wrote); returns whether it
    undid it. No data file was written under the new schema (the write failed), so nothing reads it."""
    loaded.refresh()
    ops = loaded.operations()
    base = ops.current()
    if str(base.metadataFileLocation()) != evolved.metadata_after:
        return False
    builder = spark._jvm.org.apache.iceberg.TableMetadata.buildFrom(base).setCurrentSchema(evolved.schema_id_before)
    restore = {k: v for k, v in evolved.properties_before.items() if v is not None}
    if restore:
        builder = builder.setProperties(restore)
    unset = [k for k, v in evolved.properties_before.items() if v is None]
    if unset:
        builder = builder.removeProperties(spark._jvm.java.util.HashSet(unset))
    ops.commit(base, builder.build())
    loaded.refresh()
    return True


def _iceberg_type(jvm, spark_type: str | None):
    """Iceberg's type for a Spark type name, converted by Iceberg's own ``SparkSchemaUtil``."""
    return jvm.org.apache.iceberg.spark.SparkSchemaUtil.convert(jvm.org.apache.spark.sql.types.DataType.fromDDL(spark_type))


def in_table_order(df: DataFrame, columns: list[str]) -> DataFrame:
    """``df`` with its columns in the table's order (Iceberg checks the order of a write that does not merge
    schemas); a table column ``df`` lacks is left out (written as null), a ``df`` column the table lacks stays
    last (the write then fails: the table was not evolved for it)."""
    ordered = [name for name in columns if name in df.columns]
    extra = [name for name in df.columns if name not in columns]
    if ordered + extra == list(df.columns):
        return df
    return df.select(*[F.col(f"`{name}`") for name in ordered + extra])
