"""Reading every version of every object in the bucket for the request's subjects, on the executors.

The driver lists the versions (``io.s3.list_versions``: keys, version ids and sizes only) and packs them
into slices of about ``SLICE_BYTES``, largest first; each executor task opens its own S3 client and reads
its slice's versions one at a time, streaming (``scan.scan_version``: bounded memory whatever the object's
size). The subjects travel to the executors in a broadcast variable, never in a plan. Only the findings
(key, version id, hit, unreadable reason, bytes, seconds) come back to the driver.

Skipped, by construction: ``SKIPPED_PREFIXES`` (``artifacts/``: the deployer's job code and dependency
archives; no job role may write there, so no record can be in it). Skipped versions are listed in the
receipt. A version id names immutable bytes, so a version read clean once is clean for good: the final
verification reads only the versions the sweep did not, and again those it found holding a subject or
could not read (a manifest's hit may rest on the data file it names, which the erasure deleted since).
"""
from __future__ import annotations

import dataclasses
import functools
import time
import uuid
from typing import Any, Callable, Iterable, Iterator

from spark_jobs.erasure.matching import Needles
from spark_jobs.erasure.scan import Finding, Matchers, scan_version
from spark_jobs.io.s3 import ObjectVersion, lake_client, list_versions
from spark_jobs.lake.config import LakeConfig

SKIPPED_PREFIXES = ("artifacts/",)
SLICE_BYTES = 256 << 20
PROGRESS_SECONDS = 15.0


@dataclasses.dataclass
class Sweep:
    """What reading the bucket found: a finding per version read, and the versions skipped."""

    findings: dict[tuple[str, str], Finding] = dataclasses.field(default_factory=dict)
    skipped: list[ObjectVersion] = dataclasses.field(default_factory=list)
    seconds: float = 0.0        # spent reading, in this sweep and the ones it builds on
    read_versions: int = 0      # versions read (the same count across those sweeps)
    read_bytes: int = 0
    current: set[tuple[str, str]] = dataclasses.field(default_factory=set)  # the versions that are latest

    @property
    def hits(self) -> list[Finding]:
        return [f for f in self.findings.values() if f.hit]

    @property
    def unreadable(self) -> list[Finding]:
        return [f for f in self.findings.values() if f.unreadable]

    def summary(self) -> dict[str, Any]:
        """What the receipt records: every version listed now and its finding, and what reading took."""
        listed = list(self.findings.values())
        return {"versions_scanned": len(listed), "objects_scanned": len({f.key for f in listed}),
                "bytes_scanned": sum(f.size for f in listed),
                "versions_read": self.read_versions, "bytes_read": self.read_bytes, "seconds": round(self.seconds, 1),
                "versions_per_second": round(self.read_versions / self.seconds, 1) if self.seconds else None,
                "megabytes_per_second": round(self.read_bytes / 1e6 / self.seconds, 2) if self.seconds else None,
                "versions_with_subject": len(self.hits),
                "keys_with_subject": sorted({f.key for f in self.hits})[:50],
                "unreadable": [f"{f.key}@{f.version_id}: {f.unreadable}" for f in self.unreadable][:50],
                "skipped": {"prefixes": list(SKIPPED_PREFIXES), "versions": len(self.skipped),
                            "bytes": sum(v.size for v in self.skipped),
                            "keys": sorted({v.key for v in self.skipped})[:50]}}


def list_bucket(s3, bucket: str) -> tuple[list[ObjectVersion], list[ObjectVersion]]:
    """(versions to read, versions skipped by construction), delete markers aside."""
    listed = list(list_versions(s3, bucket, ""))
    return ([v for v in listed if not v.key.startswith(SKIPPED_PREFIXES)],
            [v for v in listed if v.key.startswith(SKIPPED_PREFIXES)])


def slices(versions: list[ObjectVersion], parallelism: int) -> list[list[tuple[str, str, int]]]:
    """Versions packed into slices of about ``SLICE_BYTES`` (at least two per core), largest first."""
    total = sum(v.size for v in versions)
    count = max(1, min(len(versions), max(2 * parallelism, -(-total // SLICE_BYTES))))
    bins: list[list[tuple[str, str, int]]] = [[] for _ in range(count)]
    loads = [0] * count
    for version in sorted(versions, key=lambda v: (-v.size, v.key, v.version_id)):
        target = loads.index(min(loads))
        bins[target].append((version.key, version.version_id, version.size))
        loads[target] += max(version.size, 1)
    return [b for b in bins if b]


def _scan_slice(lake: LakeConfig, needles, items: Iterable[list[tuple[str, str, int]]]) -> Iterator[Finding]:
    """One executor task: its own S3 client, each version read as a stream."""
    s3 = lake_client(lake)
    matchers = Matchers(needles.value)  # each object read with its dataset's key names and landing encoding
    for chunk in items:
        for key, version_id, size in chunk:
            yield scan_version(s3, lake.bucket, key, version_id, size, matchers.for_key(key))


def scan(spark, lake: LakeConfig, versions: list[ObjectVersion], needles: Needles,
         progress: Callable[[str], None], label: str = "scan") -> tuple[list[Finding], float]:
    """Read ``versions`` on the executors; returns the findings and the seconds it took. One progress line
    every ``PROGRESS_SECONDS`` while it runs."""
    started = time.monotonic()
    if not versions:
        return [], 0.0
    sc = spark.sparkContext
    packed = slices(versions, sc.defaultParallelism)
    broadcast = sc.broadcast(needles)
    rdd = sc.parallelize(packed, len(packed)).mapPartitions(
        functools.partial(_scan_slice, lake, broadcast))
    group, outcome = f"tenantlake-erase-{label}-{uuid.uuid4().hex[:8]}", {}

    def run() -> None:
        sc.setJobGroup(group, f"erasure {label}: {len(versions)} object versions")
        try:
            outcome["findings"] = rdd.collect()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            outcome["error"] = exc

    from pyspark import InheritableThread

    worker = InheritableThread(target=run, daemon=True)
    worker.start()
    total_bytes = sum(v.size for v in versions)
    while worker.is_alive():
        worker.join(PROGRESS_SECONDS)
        if worker.is_alive():
            done = _tasks_done(sc, group)
            progress(f"{label}: {done} of {len(packed)} slices read ({len(versions)} versions, "
                     f"{total_bytes / 1e9:.2f} GB in all)")
    broadcast.unpersist()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["findings"], time.monotonic() - started


def _tasks_done(sc, group: str) -> int:
    tracker, done = sc.statusTracker(), 0
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for stage in (info.stageIds if info else []):
            stage_info = tracker.getStageInfo(stage)
            done += stage_info.numCompletedTasks if stage_info else 0
    return done


def sweep(spark, lake: LakeConfig, s3, needles: Needles, progress: Callable[[str], None],
          label: str = "sweep", known: Sweep | None = None) -> Sweep:
    """List the bucket and read every version ``known`` did not find clean (a version read once is
    immutable); returns all findings, ``known``'s clean ones for the versions still listed included."""
    to_read, skipped = list_bucket(s3, lake.bucket)
    previous = {k: f for k, f in (known.findings if known else {}).items() if not f.hit and not f.unreadable}
    new = [v for v in to_read if (v.key, v.version_id) not in previous]
    findings, seconds = scan(spark, lake, new, needles, progress, label)
    result = Sweep(skipped=skipped, seconds=seconds + (known.seconds if known else 0.0),
                   read_versions=len(new) + (known.read_versions if known else 0),
                   read_bytes=sum(v.size for v in new) + (known.read_bytes if known else 0))
    result.current = {(v.key, v.version_id) for v in to_read if v.is_latest}
    still = {(v.key, v.version_id) for v in to_read}
    result.findings = {k: f for k, f in previous.items() if k in still}
    result.findings.update({(f.key, f.version_id): f for f in findings})
    progress(f"{label}: {len(new)} object versions read ({sum(v.size for v in new) / 1e6:.1f} MB, {seconds:.1f}s), "
             f"{len(result.findings) - len(new)} known from the sweep, {len(skipped)} skipped "
             f"({', '.join(SKIPPED_PREFIXES)}), {len(result.hits)} hold a subject")
    return result
