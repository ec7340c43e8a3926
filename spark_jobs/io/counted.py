"""Row counts of a layer's files, remembered between counts, so the counts table reads only files it has not
counted yet (``spark_jobs/jobs/report.py``).

The files of landing, bronze and the quarantine are never changed in place: a file is written whole once, an
erasure or a replayed batch writes new files and deletes the old, the lifecycle rules delete them. So a file's
rows are known once counted, for as long as it is listed with the same size and modification time. The
ledger, ``checkpoints/<dataset>/counts/<layer>.json``, holds per file a digest of its path (never the path:
a file name may name a person, and the erasure's sweep reads every object), its size, its modification time
and its rows. Each count lists the layer (a listing, no file read), counts the files the ledger does not know
(a new batch, today's landing files), and writes the ledger again with exactly the files listed: a file that
is gone is gone from the total too. Two counts at the same time each write a ledger that is right.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Callable

from pyspark.sql import SparkSession

from spark_jobs.io import storage
from spark_jobs.lake.config import LakeConfig

LEDGER_VERSION = 1

# (path, size in bytes, modification time in ms), as the layer is listed.
Listed = tuple[str, int, int]


@dataclasses.dataclass(frozen=True)
class Counted:
    """A layer's rows (None: some file could not be counted), its files, and how many were counted now."""

    rows: int | None
    files: int
    counted_now: int


def ledger_uri(lake: LakeConfig, dataset: str, layer: str) -> str:
    return lake.path("checkpoints", dataset, "counts", f"{layer}.json")


def file_digest(path: str) -> str:
    """The ledger's name for a file: a digest of its path as every lister names it (``file:/a``, ``file:///a``
    and ``/a`` alike; an escaped and an unescaped path alike)."""
    return hashlib.sha256("|".join(storage.file_key(path)).encode()).hexdigest()[:24]


def _read_ledger(spark: SparkSession, uri: str) -> dict[str, list[int]]:
    if not storage.exists(spark, uri):
        return {}
    try:
        ledger = json.loads(storage.read_text(spark, uri))
    except ValueError:
        return {}  # unreadable: counted again, then written whole
    if not isinstance(ledger, dict) or ledger.get("version") != LEDGER_VERSION:
        return {}
    return {k: v for k, v in (ledger.get("files") or {}).items() if isinstance(v, list) and len(v) == 3}


def count_files(spark: SparkSession, lake: LakeConfig, dataset: str, layer: str, listed: list[Listed],
                count: Callable[[list[tuple[str, int]]], dict[str, int] | None]) -> Counted:
    """The rows of the ``listed`` files: from the ledger for those it knows with the same size and modification
    time, from ``count`` for the others (given ``(path, size)`` pairs; returns rows per path, a path it leaves
    out having 0, or None when a file cannot be counted: then nothing is remembered). The ledger is written
    again when anything changed."""
    uri = ledger_uri(lake, dataset, layer)
    ledger = _read_ledger(spark, uri)
    known: dict[str, list[int]] = {}
    unknown: list[tuple[str, int, int, str]] = []
    for path, size, modified in listed:
        digest = file_digest(path)
        entry = ledger.get(digest)
        if entry is not None and entry[0] == size and entry[1] == modified:
            known[digest] = entry
        else:
            unknown.append((path, size, modified, digest))
    if unknown:
        counted = count([(path, size) for path, size, _, _ in unknown])
        if counted is None:
            return Counted(None, len(listed), len(unknown))
        by_digest = {file_digest(path): rows for path, rows in counted.items()}
        for _, size, modified, digest in unknown:
            known[digest] = [size, modified, int(by_digest.get(digest, 0))]
    if unknown or set(known) != set(ledger):
        storage.write_text(spark, uri, json.dumps({"version": LEDGER_VERSION, "files": known}, sort_keys=True,
                                                  separators=(",", ":")))
    return Counted(sum(entry[2] for entry in known.values()), len(listed), len(unknown))


def parquet_rows(spark: SparkSession, root: str, files: list[tuple[str, int]]) -> dict[str, int]:
    """Rows per Parquet file (of the folder ``root``), in one Spark job that reads no column: each file's row
    groups say how many rows they hold."""
    from pyspark.sql import functions as F

    if not files:
        return {}
    rows = (spark.read.option("basePath", root).parquet(*[path for path, _ in files])
            .select(F.input_file_name().alias("file")).groupBy("file").count().collect())
    return {row["file"]: int(row["count"]) for row in rows}
