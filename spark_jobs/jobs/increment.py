"""What a silver or gold run reads and rewrites: only what is new since its table's watermark.

**Silver.** Its table's mark (``tables.BRONZE_BATCH_MARK``, committed in the snapshot summary with the rows) is
the last bronze batch silver took. A run takes the bronze batches after it, up to the last one bronze's
checkpoint has committed (a later partition may be half written, or wait for its replay), and recomputes only
the partitions they touch: the new records' event dates, and the partitions that hold a new record's key
already (a key sent again with another event time moves its row; ``moved_key_dates``). Those partitions' rows
are read back from the table and deduped together with the new records, so the dedupe spans both.

**Gold.** Each gold table's mark (``tables.SILVER_SNAPSHOT_MARK``) is the silver snapshot it was built from. A
run asks silver's snapshots since then which partitions they changed (``tables.changed_since``: their
manifests, no data read), widens them by what each gold module declares it needs (``SILVER_DATES``: an output
of date D is built from silver dates D+lo..D+hi, e.g. a session that crosses midnight) and rebuilds those
output dates from those silver dates only.

A run recomputes everything instead (``mode`` ``full``) when asked (``--full``), on a first run, when the
watermark is unknown, or when what it would merge with has changed shape (a quarantine in the other
partition layout, a table partitioned otherwise). Pure planning here: the jobs do the reading and writing.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from typing import Iterable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs.contract.model import Contract
from spark_jobs.io import storage, tables
from spark_jobs.jobs.checkpoint import last_committed_batch
from spark_jobs.lake.config import LakeConfig

BATCH_PREFIX = "_batch_id="
# More new batches than this are read as the bronze folder filtered by batch id (one listing of it) instead
# of one path each (a listing per path).
MAX_BATCH_PATHS = 64


@dataclasses.dataclass
class SilverPlan:
    """Which bronze batches a silver run reads.

    Attributes:
        mode: ``incremental``, ``full`` or ``date`` (``--date``: that date from every batch).
        batches: the batch ids to read (every one up to ``upto`` for ``full`` and ``date``).
        upto: the last batch bronze committed (None: bronze has no checkpoint; every partition counts).
        watermark_before: the table's mark before the run (None: none).
        reason: why the run is full ("" when it is not, or was asked to be).
    """

    mode: str
    batches: list[int]
    upto: int | None
    watermark_before: int | None
    reason: str = ""

    @property
    def watermark(self) -> int | None:
        """The mark the run commits: the last batch it covered."""
        if self.mode == "date":
            return self.watermark_before
        candidates = [b for b in (self.upto, max(self.batches, default=None), self.watermark_before) if b is not None]
        return max(candidates) if candidates else None

    def record(self) -> dict:
        return {"watermark_before": self.watermark_before, "watermark": self.watermark, "bronze_batches": len(self.batches),
                "first_batch": min(self.batches, default=None), "last_batch": max(self.batches, default=None),
                "bronze_committed": self.upto, **({"full_because": self.reason} if self.reason else {})}


def bronze_batches(spark: SparkSession, bronze_uri: str) -> list[int]:
    """The batch ids bronze holds a partition of (one listing of the bronze folder)."""
    found = []
    for name in storage.list_dir(spark, bronze_uri):
        if name.startswith(BATCH_PREFIX) and name[len(BATCH_PREFIX):].isdigit():
            found.append(int(name[len(BATCH_PREFIX):]))
    return sorted(found)


def derived_watermark(spark: SparkSession, silver_table: tables.Table, quarantine_uri: str) -> int | None:
    """The newest bronze batch any silver or quarantine row comes from, when the table's mark is lost (its
    snapshots expired by an erasure or ``maintain``): Iceberg answers the silver side from its manifests'
    column bounds. Taking a batch after it again is harmless (the dedupe keeps one row per key, the quarantine
    replaces a batch's rows), so this is a safe place to start; a batch after it with rows would have left one."""
    newest = [tables.read(spark, silver_table).agg(F.max("_batch_id")).first()[0]]
    if storage.has_data_files(spark, quarantine_uri):
        newest.append(spark.read.parquet(quarantine_uri).agg(F.max("_batch_id")).first()[0])
    found = [int(b) for b in newest if b is not None]
    return max(found) if found else None


def plan_silver(spark: SparkSession, lake: LakeConfig, contract: Contract, loaded, *, full: bool, date: str | None,
                reshaped: str = "") -> SilverPlan:
    """Which batches this silver run reads, and why. ``loaded``: the silver table (None: not created);
    ``reshaped``: why merging with the current outputs is not possible ("" when it is)."""
    dataset = contract.dataset
    upto = last_committed_batch(spark, lake, dataset)
    present = [b for b in bronze_batches(spark, lake.bronze(dataset)) if upto is None or b <= upto]
    silver_table = tables.table(spark, lake, "silver", dataset)
    marks = tables.read_marks(spark, silver_table, loaded) if loaded is not None else {}
    before = int(marks[tables.BRONZE_BATCH_MARK]) if tables.BRONZE_BATCH_MARK in marks else None
    if date:
        return SilverPlan("date", present, upto, before)
    reason = ""  # why the run is full ("" when asked to be)
    if full:
        pass
    elif tables.snapshot_now(loaded) is None:
        full, reason = True, "the table has no data yet"
    elif reshaped:
        full, reason = True, reshaped
    elif before is None:
        before = derived_watermark(spark, silver_table, lake.quarantine(dataset))
        if before is None:
            full, reason = True, "the table's watermark is unknown and its rows name no bronze batch"
    if not full and upto is not None and before is not None and upto < before:
        full, reason = True, (f"bronze's checkpoint ends at batch {upto}, before silver's watermark {before} "
                              "(its checkpoint was replaced)")
    if full:
        return SilverPlan("full", present, upto, before, reason)
    return SilverPlan("incremental", [b for b in present if b > before], upto, before)


def read_bronze(spark: SparkSession, bronze_uri: str, schema, plan: SilverPlan) -> DataFrame:
    """The bronze rows of the plan's batches: a path per batch for a few, else the folder filtered by batch id
    (Spark prunes the partitions it does not need)."""
    reader = spark.read.schema(schema).option("basePath", bronze_uri)
    if plan.mode == "incremental" and len(plan.batches) <= MAX_BATCH_PATHS:
        return reader.parquet(*[f"{bronze_uri}/{BATCH_PREFIX}{b}" for b in plan.batches])
    batches = reader.parquet(bronze_uri)
    if plan.mode == "incremental":
        return batches.where(F.col("_batch_id").between(min(plan.batches), max(plan.batches)))
    return batches if plan.upto is None else batches.where(F.col("_batch_id") <= F.lit(plan.upto))


def key_holds_event_time(contract: Contract) -> bool:
    """A key that holds the event time cannot move to another partition: every row of a key is in one."""
    return contract.event_time in contract.key


def moved_key_dates(silver: DataFrame, new_keys: DataFrame, contract: Contract) -> tuple[set[str], bool]:
    """The event dates (and whether the null one) of the silver rows that hold one of ``new_keys`` (the new
    valid records' keys): their partitions must be rewritten too, since a key sent again with another event
    time moves its row. Reads the key columns and ``event_date`` of the table only (a broadcast semi-join)."""
    keys = new_keys.select(*[F.col(k).alias(f"_new_{k}") for k in contract.key]).distinct()
    same_key = functools.reduce(lambda a, b: a & b, [F.col(k).eqNullSafe(F.col(f"_new_{k}")) for k in contract.key])
    found = (silver.select(*contract.key, "event_date").join(F.broadcast(keys), same_key, "left_semi")
             .select(F.col("event_date").cast("string").alias("d")).distinct().collect())
    dates = {row["d"] for row in found if row["d"] is not None}
    return dates, any(row["d"] is None for row in found)


def whole_partitions(dates: Iterable[str], granularity: str) -> list[str]:
    """``dates`` widened to whole partitions: the dates themselves by day, every day of their months by month
    (so a rewrite of a month replaces all of it, and reads all of its current rows)."""
    dates = sorted(set(dates))
    if granularity != "month":
        return dates
    days = set()
    for month in sorted({d[:7] for d in dates}):
        first = dt.date.fromisoformat(f"{month}-01")
        following = (first.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
        days.update((first + dt.timedelta(days=i)).isoformat() for i in range((following - first).days))
    return sorted(days)


# ---------------------------------------------------------------------------------------------------- gold
def shifted(dates: Iterable[str], low: int, high: int) -> set[str]:
    """Every date ``d + k`` for ``d`` in ``dates`` and ``low <= k <= high``."""
    result = set()
    for text in dates:
        day = dt.date.fromisoformat(text)
        result.update((day + dt.timedelta(days=k)).isoformat() for k in range(low, high + 1))
    return result


@dataclasses.dataclass
class GoldPlan:
    """What a gold run rebuilds, per gold table of the contract.

    Attributes:
        mode: ``incremental``, ``full`` or ``date``.
        outputs: gold name -> the output event dates it rebuilds (incremental).
        null: gold name -> whether it rebuilds the null partition too.
        read_dates: the silver event dates the run reads (incremental: every output's window).
        read_null: whether it reads silver's null partition.
        watermarks: gold name -> the silver snapshot it was built from (None: none).
        changed_snapshots: silver snapshots with changes since the oldest watermark.
        reason: why the run is full.
    """

    mode: str
    outputs: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    null: dict[str, bool] = dataclasses.field(default_factory=dict)
    read_dates: list[str] = dataclasses.field(default_factory=list)
    read_null: bool = False
    watermarks: dict[str, int | None] = dataclasses.field(default_factory=dict)
    changed_snapshots: int = 0
    reason: str = ""

    def record(self, silver_snapshot: int) -> dict:
        return {"watermark_before": self.watermarks, "watermark": silver_snapshot,
                "changed_silver_snapshots": self.changed_snapshots, "silver_dates_read": len(self.read_dates),
                "output_dates": {name: len(dates) for name, dates in self.outputs.items()},
                **({"full_because": self.reason} if self.reason else {})}


def plan_gold(spark: SparkSession, silver_loaded, gold_tables: dict, specs: dict, *,
              full: bool, date: str | None, extra_dates: list[str] | None) -> GoldPlan:
    """Which output dates each gold table rebuilds and which silver dates the run reads. ``gold_tables``: name ->
    (the table, the loaded table or None: not created); ``specs``: name -> ``GoldSpec``; ``extra_dates``: dates
    to rebuild besides the changed ones (an erasure's)."""
    if date:
        return GoldPlan("date")
    watermarks: dict[str, int | None] = {}
    for name, (tbl, loaded) in gold_tables.items():
        gold = tables.read_marks(spark, tbl, loaded) if loaded is not None else {}
        mark = gold.get(tables.SILVER_SNAPSHOT_MARK)
        watermarks[name] = int(mark) if mark is not None else None
    if full:
        return GoldPlan("full", watermarks=watermarks)
    missing = [name for name, (_, loaded) in gold_tables.items() if tables.snapshot_now(loaded) is None]
    if missing:
        return GoldPlan("full", watermarks=watermarks, reason=f"gold {', '.join(missing)} has no data yet")
    unknown = [name for name, mark in watermarks.items() if mark is None]
    if unknown:
        return GoldPlan("full", watermarks=watermarks, reason=f"gold {', '.join(unknown)} has no watermark")
    plan = GoldPlan("incremental", watermarks=watermarks)
    changes: dict[int, tables.ChangedPartitions | None] = {}
    read: set[str] = set()
    for name, mark in watermarks.items():
        if mark not in changes:
            changes[mark] = tables.changed_since(spark, silver_loaded, mark)
        changed = changes[mark]
        if changed is None or changed.everything:
            why = ("silver changed every row" if changed is not None else
                   f"silver snapshot {mark}, which gold {name} was built from, is no longer in silver's history")
            return GoldPlan("full", watermarks=watermarks, reason=why)
        plan.changed_snapshots = max(plan.changed_snapshots, changed.snapshots)
        low, high = specs[name].silver_dates
        source = set(changed.dates) | set(extra_dates or ())
        outputs = shifted(source, -high, -low)  # silver date s feeds the outputs d with d + low <= s <= d + high
        plan.outputs[name] = sorted(outputs)
        plan.null[name] = changed.null
        read |= shifted(outputs, low, high)
        plan.read_null = plan.read_null or changed.null
    plan.read_dates = sorted(read)
    return plan
