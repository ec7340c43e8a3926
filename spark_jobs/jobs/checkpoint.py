"""The bronze stream's checkpoint: check it before a run, and rebuild it from bronze when it is broken.

Layout (Spark 3.5 file source + ``foreachBatch``) under ``checkpoints/<dataset>/bronze/``:
``metadata`` (the query id), ``offsets/<n>`` (what batch n reads), ``commits/<n>`` (batch n is done)
and ``sources/0/<n>[.compact]`` (the file source's manifest: every landing file handed out, with the
batch that read it). A restart reads the latest two offsets, the latest commit and the manifest
from its latest ``.compact`` entry on. If one of those is unreadable, Spark stops with a stack trace,
and deleting the checkpoint would be worse: batch ids restart at 0, so bronze's ``_batch_id=<n>``
partitions would be overwritten by different files (records lost) or the old files ingested again
(duplicates).

``check_checkpoint`` reads exactly what a restart reads and fails with one line naming the broken
file and the recovery command. ``recover_checkpoint`` (``python -m spark_jobs recover``) moves the
checkpoint aside and writes a new one whose manifest holds every landing file bronze already holds
(bronze's ``_source_file`` column is the record of what was ingested), as one compacted batch
numbered after bronze's highest ``_batch_id``: the next run reads only files bronze does not have,
into a new partition. A batch that was cut off before its sink wrote anything is simply read again.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import time
import uuid
from urllib.parse import urlparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_jobs.contract.parts import LandingSpec
from spark_jobs.io import landing as landing_io
from spark_jobs.io import storage
from spark_jobs.lake.config import LakeConfig
from spark_jobs.lake.failures import JobFailed, describe_error

SOURCE_LOG = "sources/0"          # the single file source of the bronze query
DEFAULT_COMPACT_INTERVAL = 10     # spark.sql.streaming.fileSource.log.compactInterval's default
_VERSION_LINE = re.compile(r"^v[0-9]+$")
# The offset log records the session settings a restart must keep; these are Spark 3.5's values for
# a query without state (the bronze query has none), plus the session's shuffle partitions.
_OFFSET_CONF = {
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "spark.sql.streaming.join.stateFormatVersion": "2",
    "spark.sql.streaming.stateStore.compression.codec": "lz4",
    "spark.sql.optimizer.pruneFiltersCanPruneStreamingSubplan": "false",
    "spark.sql.streaming.stateStore.rocksdb.formatVersion": "5",
    "spark.sql.streaming.statefulOperator.useStrictDistribution": "true",
    "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion": "2",
    "spark.sql.streaming.multipleWatermarkPolicy": "min",
    "spark.sql.streaming.aggregation.stateFormatVersion": "2",
}


def recover_command(dataset: str, lake_args: str) -> str:
    return f"python -m spark_jobs recover --layer bronze --dataset {dataset} {lake_args}".rstrip()


class CheckpointCorruptError(JobFailed):
    """A checkpoint file a restart must read is unreadable; nothing was processed."""

    def __init__(self, dataset: str, file_uri: str, reason: str, lake_uri: str):
        self.dataset, self.file_uri, self.reason, self.lake_uri = dataset, file_uri, reason, lake_uri
        super().__init__(self.message(f"--lake-uri {lake_uri}"), 1)

    def message(self, lake_args: str) -> str:
        return (f"bronze {self.dataset}: checkpoint file {self.file_uri} is corrupt ({self.reason}); nothing was "
                f"ingested. Stop every bronze job of this dataset, then run `{recover_command(self.dataset, lake_args)}` "
                f"(README: Pipeline > Recovery)")


def _batch_ids(spark: SparkSession, folder: str) -> list[tuple[int, str]]:
    """(batch id, file name) of a metadata log folder, oldest first; other names are ignored, as Spark does."""
    found = []
    for name in storage.list_dir(spark, folder):
        stem = name[: -len(".compact")] if name.endswith(".compact") else name
        if stem.isdigit():
            found.append((int(stem), name))
    return sorted(found)


def last_committed_batch(spark: SparkSession, lake: LakeConfig, dataset: str) -> int | None:
    """The latest batch the bronze stream of ``dataset`` committed (its ``commits/`` log): every bronze partition
    ``_batch_id`` up to it is whole. A later partition may still be being written or waits for its replay. None
    when there is no checkpoint (or no commit yet)."""
    commits = _batch_ids(spark, f"{lake.checkpoint(dataset)}/commits")
    return commits[-1][0] if commits else None


def _read(spark: SparkSession, uri: str) -> list[str]:
    try:
        return storage.read_text(spark, uri).splitlines()
    except Exception as exc:  # noqa: BLE001 - e.g. Hadoop's ChecksumException on a local lake
        name, message = describe_error(exc)
        raise ValueError(f"unreadable: {name}: {message[:200]}") from None


def _json(line: str, what: str) -> dict:
    try:
        value = json.loads(line)
    except ValueError:
        raise ValueError(f"{what} is not JSON: {line[:40]!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not a JSON object")
    return value


def _check_log_entry(lines: list[str], kind: str) -> None:
    if not lines or not _VERSION_LINE.match(lines[0].strip()):
        raise ValueError(f"first line is {lines[0][:40]!r}, not a log version like 'v1'" if lines else "empty file")
    if kind == "commits":
        _json(lines[1] if len(lines) > 1 else "", "commit entry")
    elif kind == "offsets":
        if len(lines) < 3:
            raise ValueError("no source offset")
        _json(lines[1], "batch metadata")
        for line in lines[2:]:
            if line.strip() != "-":
                _json(line, "source offset")
    else:
        for line in lines[1:]:
            if "path" not in _json(line, "file entry"):
                raise ValueError("file entry without a path")


def check_checkpoint(spark: SparkSession, lake: LakeConfig, dataset: str) -> None:
    """Read what a restart of the bronze query reads; raise ``CheckpointCorruptError`` on the first broken file."""
    root = lake.checkpoint(dataset)
    if not storage.exists(spark, root):
        return

    def verify(uri: str, kind: str) -> None:
        try:
            if kind == "metadata":
                if "id" not in _json(" ".join(_read(spark, uri)), "query metadata"):
                    raise ValueError("no query id")
            else:
                _check_log_entry(_read(spark, uri), kind)
        except ValueError as exc:
            raise CheckpointCorruptError(dataset, uri, str(exc), lake.lake_uri) from None

    if storage.exists(spark, f"{root}/metadata"):
        verify(f"{root}/metadata", "metadata")
    for name in [n for _, n in _batch_ids(spark, f"{root}/offsets")][-2:]:
        verify(f"{root}/offsets/{name}", "offsets")
    for name in [n for _, n in _batch_ids(spark, f"{root}/commits")][-1:]:
        verify(f"{root}/commits/{name}", "commits")
    manifest = _batch_ids(spark, f"{root}/{SOURCE_LOG}")
    compacted = [i for i, (_, name) in enumerate(manifest) if name.endswith(".compact")]
    for _, name in manifest[compacted[-1] if compacted else 0:]:
        verify(f"{root}/{SOURCE_LOG}/{name}", "sources")


@dataclasses.dataclass(frozen=True)
class HandedOut:
    """A landing file the bronze stream handed out, as its file-source log records it: the path (URI form),
    the modification time it was listed with (ms), and the batch that read it."""

    path: str
    timestamp_ms: int
    batch_id: int


def handed_out_files(spark: SparkSession, lake: LakeConfig, dataset: str) -> tuple[list[HandedOut], int | None]:
    """Every landing file the bronze stream of ``dataset`` handed out (``sources/0/``, from its latest
    ``.compact`` entry on, which holds every earlier entry), and the latest committed batch id (None: none
    yet; a file of a later batch is in flight: that batch is replayed with it). ``ValueError`` names an
    unreadable entry."""
    root = lake.checkpoint(dataset)
    manifest = _batch_ids(spark, f"{root}/{SOURCE_LOG}")
    compacted = [i for i, (_, name) in enumerate(manifest) if name.endswith(".compact")]
    files = []
    for _, name in manifest[compacted[-1] if compacted else 0:]:
        for line in _read(spark, f"{root}/{SOURCE_LOG}/{name}")[1:]:
            if line.strip():
                entry = _json(line, "file entry")
                files.append(HandedOut(str(entry["path"]), int(entry.get("timestamp") or 0), int(entry.get("batchId", -1))))
    commits = _batch_ids(spark, f"{root}/commits")
    return files, (commits[-1][0] if commits else None)


def nothing_new(spark: SparkSession, lake: LakeConfig, dataset: str, landing: LandingSpec) -> bool:
    """True when a bronze run of ``dataset`` has provably nothing to do: its checkpoint has no batch to
    replay (the latest offsets are committed; every file its log handed out is in a committed batch), and
    every landing file, listed as the stream lists them (``io.landing.landing_paths``), is a name the log
    handed out already, which the file source never hands out again. The stream would then start, list,
    find no new file and stop without writing anything (on a small lake about 10 s of a session's time).
    Any doubt (no checkpoint, a name written differently, a file too old for the source) is False: the
    stream runs and decides, as it always did."""
    root = lake.checkpoint(dataset)
    offsets = _batch_ids(spark, f"{root}/offsets")
    if not offsets:
        return False
    handed_out, committed = handed_out_files(spark, lake, dataset)
    if committed is None or offsets[-1][0] != committed or any(f.batch_id > committed for f in handed_out):
        return False
    seen = {f.path for f in handed_out}
    return all(path in seen for path in landing_io.landing_paths(spark, lake.landing(dataset), landing))


def is_checkpoint_failure(exc: BaseException, lake: LakeConfig, dataset: str) -> bool:
    """True when Spark's own error is about a file of this checkpoint (a case ``check_checkpoint`` let through)."""
    text = str(exc)
    folder = urlparse(lake.checkpoint(dataset)).path or lake.checkpoint(dataset)
    return folder in text and any(word in text for word in ("malformed", "Checksum", "corrupt", "Unrecognized",
                                                            "JsonParseException", "MismatchedInput", "doesn't exist"))


@dataclasses.dataclass(frozen=True)
class Recovery:
    """What ``recover_checkpoint`` did."""

    moved_to: str | None        # where the old checkpoint went (None: there was none)
    files_seeded: int           # landing files recorded as already ingested
    seed_batch_id: int | None   # the compacted batch that records them (None: bronze was empty, fresh start)
    next_batch_id: int          # the batch id the next bronze run writes

    def summary(self) -> str:
        moved = f"old checkpoint moved to {self.moved_to}" if self.moved_to else "there was no checkpoint"
        if self.seed_batch_id is None:
            return f"{moved}; bronze is empty, so the next run starts afresh at batch 0"
        return (f"{moved}; new checkpoint records {self.files_seeded} landing files already in bronze as batch "
                f"{self.seed_batch_id}; the next run reads only new files, as batch {self.next_batch_id}")


def _seed_batch_id(after: int, compact_interval: int) -> int:
    """The first compaction batch id (``(id + 1) % interval == 0``) above ``after``: a compacted
    manifest entry stands alone, so no earlier entries need to exist."""
    candidate = after + 1
    while (candidate + 1) % compact_interval:
        candidate += 1
    return candidate


def recover_checkpoint(spark: SparkSession, lake: LakeConfig, dataset: str) -> Recovery:
    root = lake.checkpoint(dataset)
    moved_to = None
    if storage.exists(spark, root):
        moved_to = f"{root}.broken-{dt.datetime.now(dt.timezone.utc).strftime('%Y%m%dT%H%M%SZ')}"
        storage.rename(spark, root, moved_to)
    bronze_uri = lake.bronze(dataset)
    if not storage.has_data_files(spark, bronze_uri):
        return Recovery(moved_to=moved_to, files_seeded=0, seed_batch_id=None, next_batch_id=0)
    bronze = spark.read.parquet(bronze_uri)
    highest = bronze.agg(F.max("_batch_id")).first()[0]
    # When bronze last ingested each file (ms): a file rewritten since keeps that time in the new log, so the
    # landing check still sees its newer version as never ingested (spark_jobs/jobs/landing_versions.py).
    ingested = {storage.file_key(r[0]): int(r[1]) for r in bronze.groupBy("_source_file")
                .agg(F.max(F.unix_millis("_ingested_at"))).collect()}
    landing = [(uri_form, min(modified, ingested[storage.file_key(path)]))
               for path, uri_form, modified in storage.list_files(spark, lake.landing(dataset))
               if landing_io.is_landing_file(path.rsplit("/", 1)[-1]) and storage.file_key(path) in ingested]

    interval = int(spark.conf.get("spark.sql.streaming.fileSource.log.compactInterval", str(DEFAULT_COMPACT_INTERVAL)))
    seed = _seed_batch_id(int(highest if highest is not None else -1), interval)
    now_ms = int(time.time() * 1000)
    conf = {**_OFFSET_CONF, "spark.sql.shuffle.partitions": spark.conf.get("spark.sql.shuffle.partitions")}

    def offsets(batch_id: int) -> str:
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": now_ms, "conf": conf}
        return f"v1\n{json.dumps(meta, separators=(',', ':'))}\n{json.dumps({'logOffset': batch_id})}"

    # Written in the order Spark writes them, the query id last: a half-done recovery is not a checkpoint.
    entries = [json.dumps({"path": p, "timestamp": m, "batchId": seed}, separators=(",", ":")) for p, m in landing]
    storage.write_text(spark, f"{root}/{SOURCE_LOG}/{seed}.compact", "\n".join(["v1", *entries]))
    storage.write_text(spark, f"{root}/offsets/{seed - 1}", offsets(seed - 1))  # a restart reads the two latest
    storage.write_text(spark, f"{root}/offsets/{seed}", offsets(seed))
    storage.write_text(spark, f"{root}/commits/{seed}", 'v1\n{"nextBatchWatermarkMs":0}')
    storage.write_text(spark, f"{root}/metadata", json.dumps({"id": str(uuid.uuid4())}))
    check_checkpoint(spark, lake, dataset)
    return Recovery(moved_to=moved_to, files_seeded=len(landing), seed_batch_id=seed, next_batch_id=seed + 1)

