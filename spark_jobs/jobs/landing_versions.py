"""Landing object versions against what bronze read: which versions bronze ingested, and which it never will.

Bronze's file source hands out each landing **name** once (its checkpoint log, ``sources/0/``, records the
path and the modification time it was listed with). A version written under a name bronze already read is
never read; neither is one replaced before bronze listed its name. Landing writes are create-only
(``land``, ``datagen``, the bucket policy's ``DenyUnconditionalLandingWrites``), so this should not happen;
this check says by name when it did anyway (an admin's ``aws s3 cp``, a tool outside the policy).

For each landing file (the contract's format, hidden names skipped, as bronze lists them) every version
(S3 ``ListObjectVersions``: LastModified, ETag, size; a folder lake has one version per file, its mtime)
is one of:

- **ingested**: the version bronze listed (the newest version written at or before the time the log
  recorded for its name), or the same bytes as such a version (an identical rewrite: same ETag);
- **pending**: bronze has not read its name yet (or the batch that reads it has not committed): the next
  run reads the newest version, and flags the older ones below;
- **not ingested**: any other version: written after bronze read its name, or replaced before bronze read
  it. Bronze never reads it: land its bytes under a new name (``land`` names objects by content).

``versions = ingested + pending + not ingested``. Bronze records this after each run (its manifest's
``landing``, the data-quality report's landing section) and ``counts`` (the table ``run-all`` ends with)
prints it per dataset. An identical rewrite is told from a change by its ETag (``content_compared``); where
there is none to compare, a rewrite after bronze read the name is flagged even when its bytes are the same:
a folder lake (one version per file: its mtime), and an S3 lake listed without ``s3:ListBucketVersions``
(the job role on AWS may list current objects only, so the check then compares the current objects).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import os
from typing import Any

from spark_jobs.io.landing import is_landing_file
from spark_jobs.io.storage import file_key
from spark_jobs.jobs.checkpoint import HandedOut, handed_out_files
from spark_jobs.lake.config import LakeConfig

# Versions named in a manifest or a JSON count (the counts still cover every one).
MAX_LISTED = 1000
# Versions named in the warning lines of a run or of `counts`.
MAX_NAMED = 20


@dataclasses.dataclass(frozen=True)
class LandingVersion:
    """One version of a landing object: ``key`` relative to the lake root, ``version_id`` ("" in a folder),
    ``modified_ms`` (S3 LastModified or the file's mtime, ms), ``etag`` ("" when unknown), ``size``."""

    key: str
    version_id: str
    modified_ms: int
    etag: str
    size: int

    def describe(self) -> str:
        when = dt.datetime.fromtimestamp(self.modified_ms / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        version = f"version {self.version_id}, " if self.version_id and self.version_id != "null" else ""
        return f"{self.key} ({version}written {when})"


@dataclasses.dataclass
class Reconciliation:
    """What bronze made of a dataset's landing versions (see the module docstring)."""

    versions: int = 0
    ingested: int = 0
    same_content: int = 0            # of ingested: identical rewrites of a version bronze read
    pending: list[LandingVersion] = dataclasses.field(default_factory=list)
    not_ingested: list[tuple[LandingVersion, str]] = dataclasses.field(default_factory=list)
    content_compared: bool = True    # identical rewrites told apart by ETag (every S3 version listed)

    def summary(self) -> dict[str, Any]:
        return {"versions": self.versions, "ingested": self.ingested, "same_content": self.same_content,
                "pending": len(self.pending), "not_ingested": len(self.not_ingested), "content_compared": self.content_compared,
                "not_ingested_versions": [{"key": v.key, "version_id": v.version_id, "size": v.size,
                                           "last_modified": v.describe().rsplit("written ", 1)[1][:-1],
                                           "reason": reason} for v, reason in self.not_ingested[:MAX_LISTED]]}

    def warnings(self, dataset: str, lake: LakeConfig) -> list[str]:
        """One line naming the versions bronze never ingests (up to ``MAX_NAMED``), one saying what to do (no
        prefix: ``report.landing_warnings`` and the bronze run add theirs)."""
        if not self.not_ingested:
            return []
        named = "; ".join(f"{v.describe()}: {reason}" for v, reason in self.not_ingested[:MAX_NAMED])
        more = len(self.not_ingested) - MAX_NAMED
        fix = (f"get each version (`aws s3api get-object --bucket {lake.bucket} --key <key> --version-id <version> "
               f"<file>`) and land it under a new name" if lake.is_object_store else "copy each file under a new name")
        return [f"{len(self.not_ingested)} landing object version(s) never ingested: {named}"
                + (f"; and {more} more (`counts --json` lists them)" if more > 0 else ""),
                f"bronze reads each landing name once: {fix} (`python -m spark_jobs land --dataset {dataset} "
                "FILE...` names objects by their content)"]


def reconcile(versions: list[LandingVersion], handed_out: list[HandedOut], committed: int | None,
              key_of: dict[tuple[str, str, str], str], content_compared: bool = True) -> Reconciliation:
    """Sort ``versions`` into ingested, pending and not ingested (module docstring). ``handed_out``: the
    bronze file-source log; ``committed``: its latest committed batch; ``key_of``: a log path's
    ``file_key`` -> the versions' key."""
    read: dict[str, list[int]] = {}
    in_flight: set[str] = set()
    for entry in handed_out:
        key = key_of.get(file_key(entry.path))
        if key is None:
            continue  # a file since deleted (an erasure deletes ingested landing files)
        if committed is not None and entry.batch_id <= committed:
            read.setdefault(key, []).append(entry.timestamp_ms)
        else:
            in_flight.add(key)
    by_key: dict[str, list[LandingVersion]] = {}
    for version in versions:
        by_key.setdefault(version.key, []).append(version)
    result = Reconciliation(versions=len(versions), content_compared=content_compared)
    for key, found in sorted(by_key.items()):
        found.sort(key=lambda v: v.modified_ms)
        times = read.get(key)
        if not times:  # not read yet: the next run reads the newest; the others were replaced before it
            newest = found[-1]
            result.pending.append(newest)
            for version in found[:-1]:
                if version.etag and version.etag == newest.etag:
                    result.pending.append(version)
                else:
                    result.not_ingested.append((version, "replaced before bronze read its name"))
            continue
        taken = {id(next(v for v in reversed(found) if v.modified_ms <= t)) for t in times
                 if any(v.modified_ms <= t for v in found)}
        etags = {v.etag for v in found if id(v) in taken and v.etag}
        last_read = max(times)
        for version in found:
            if id(version) in taken:
                result.ingested += 1
            elif version.etag and version.etag in etags:
                result.ingested += 1
                result.same_content += 1
            elif version.modified_ms > last_read:
                result.not_ingested.append((version, "written after bronze read this name"))
            else:
                result.not_ingested.append((version, "replaced before bronze read this name"))
    return result


def landing_versions(lake: LakeConfig, dataset: str, landing_format: str) -> tuple[list[LandingVersion], bool]:
    """Every version of the dataset's landing files, and whether their ETags tell identical rewrites apart
    (``Reconciliation.content_compared``). S3: ``ListObjectVersions`` (``ListObjectsV2`` for a caller that may
    not list versions); a folder: its files."""
    prefix = f"landing/{dataset}/"

    def visible(key: str) -> bool:
        parts = key[len(prefix):].split("/")
        return not any(p.startswith((".", "_")) for p in parts) and is_landing_file(parts[-1], landing_format)

    if not lake.is_object_store:
        found = []
        folder = lake.folder / "landing" / dataset
        for directory, subdirs, names in os.walk(folder):
            subdirs[:] = [d for d in subdirs if not d.startswith((".", "_"))]
            for name in names:
                path = os.path.join(directory, name)
                key = os.path.relpath(path, lake.folder).replace(os.sep, "/")
                if visible(key):
                    stat = os.stat(path)
                    found.append(LandingVersion(key, "", stat.st_mtime_ns // 1_000_000, "", stat.st_size))
        return found, False
    from botocore.exceptions import ClientError

    from spark_jobs.io.s3 import lake_client, list_versions

    s3 = lake_client(lake)
    try:
        return [LandingVersion(v.key, v.version_id, _ms(v.last_modified), v.etag, v.size)
                for v in list_versions(s3, lake.bucket, prefix) if visible(v.key)], True
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("AccessDenied", "403"):
            raise
    current = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=lake.bucket, Prefix=prefix):
        current += [LandingVersion(o["Key"], "", _ms(o["LastModified"]), "", int(o.get("Size", 0)))
                    for o in page.get("Contents", []) if visible(o["Key"])]
    return current, False


def _ms(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


def reconcile_dataset(spark, lake: LakeConfig, contract) -> Reconciliation:
    """``reconcile`` for one dataset of the lake: its landing versions against its bronze checkpoint's log."""
    versions, content_compared = landing_versions(lake, contract.dataset, contract.landing.format)
    handed_out, committed = handed_out_files(spark, lake, contract.dataset)
    key_of = {file_key(lake.path(v.key) if lake.is_object_store else str((lake.folder / v.key).absolute())): v.key
              for v in versions}
    return reconcile(versions, handed_out, committed, key_of, content_compared)
