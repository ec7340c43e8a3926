"""Landing writers for the generator: a local folder, or S3 (boto3, SSE-KMS with the tenant key).

Each file appears whole: locally it is written under a hidden temporary name and hard-linked to its name,
on S3 it is a single PUT. The bronze file source never sees half a file.

Writes are **create-only**, like ``land``'s: bronze reads each landing name once, so new bytes under a name
it has read would never be ingested. On S3 every PUT carries ``If-None-Match: *`` (the bucket policy denies
landing PUTs without it); in a folder the hard link fails when the name exists. A name that already holds the
same bytes is "already landed" (the same seed and options give the same files, so ``make demo`` can run
again); a name that holds other bytes is refused, and before anything is written: every name is checked
first (one listing, and a read of each name that exists), so a refused run writes nothing.
"""
from __future__ import annotations

import dataclasses

from spark_jobs.datagen.generate import DatagenError
from spark_jobs.io import create_only
from spark_jobs.lake.config import LakeConfig

# Conflicting names shown in the refusal (the count covers every one).
MAX_NAMED = 10


class LandingConflict(DatagenError):
    """Names of landing/ already hold other bytes; nothing (or, after a race, only the rest) was written."""


@dataclasses.dataclass(frozen=True)
class LandingWrite:
    """Where the files went, how many were written, and how many held the same bytes already."""

    location: str
    written: int
    already: int

    def __str__(self) -> str:
        already = f", {self.already} already landed with the same content" if self.already else ""
        return f"{self.location} ({self.written} files written{already})"


def _conflict(dataset: str, names: list[str], written: int) -> LandingConflict:
    shown = ", ".join(f"landing/{dataset}/{n}" for n in names[:MAX_NAMED])
    more = f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else ""
    state = ("nothing was written" if not written else
             f"{written} other files were written meanwhile (another writer raced this one for these names)")
    return LandingConflict(
        f"datagen {dataset}: {len(names)} landing object(s) already exist with other content: {shown}{more}; "
        f"{state}. Landing writes are create-only: bronze reads each name once, so new content under these names "
        "would never be ingested. Give this data names of its own: --name-prefix <text> (e.g. --name-prefix "
        "run2-), or land it with `python -m spark_jobs land`, which names files by their content")


def write_landing(lake: LakeConfig, dataset: str, files: list[tuple[str, bytes]]) -> LandingWrite:
    """Write the files under ``landing/<dataset>/``, create-only (module docstring). ``LandingConflict``
    (a ``DatagenError``: exit 2) when a name holds other bytes."""
    store = _S3Landing(lake, dataset) if lake.is_object_store else _FolderLanding(lake, dataset)
    existing = store.existing()
    if existing is not None:
        present = [(name, body) for name, body in files if name in existing]
        conflicts = [name for name, body in present if store.read(name) != body]
        if conflicts:
            raise _conflict(dataset, conflicts, 0)
    written, already, conflicts = 0, 0, []
    for name, body in files:
        if existing is not None and name in existing:
            already += 1
        elif store.create(name, body):
            written += 1
        elif store.read(name) == body:
            already += 1
        else:
            conflicts.append(name)
    if conflicts:
        raise _conflict(dataset, conflicts, written)
    return LandingWrite(lake.landing(dataset), written, already)


class _S3Landing:
    def __init__(self, lake: LakeConfig, dataset: str):
        from spark_jobs.io.s3 import lake_client

        self.lake, self.prefix = lake, f"landing/{dataset}/"
        self.client = lake_client(lake)

    _code = staticmethod(create_only.error_code)

    def existing(self) -> set[str] | None:
        """The names under the prefix (None: this caller may not list, e.g. write-only ingest credentials)."""
        from botocore.exceptions import ClientError

        names: set[str] = set()
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.lake.bucket, Prefix=self.prefix):
                names.update(o["Key"][len(self.prefix):] for o in page.get("Contents", []))
        except ClientError as exc:
            if self._code(exc) in ("AccessDenied", "403"):
                return None
            raise
        return names

    def read(self, name: str) -> bytes | None:
        """The object's bytes (None when this caller may not read it: it then counts as other content)."""
        from botocore.exceptions import ClientError

        try:
            return self.client.get_object(Bucket=self.lake.bucket, Key=self.prefix + name)["Body"].read()
        except ClientError as exc:
            if self._code(exc) in ("AccessDenied", "403", "NoSuchKey", "404"):
                return None
            raise

    def create(self, name: str, body: bytes) -> bool:
        return create_only.put_if_absent(self.client, self.lake, self.prefix + name, body) is not None


class _FolderLanding:
    def __init__(self, lake: LakeConfig, dataset: str):
        self.folder = lake.folder / "landing" / dataset

    def existing(self) -> set[str]:
        return {p.name for p in self.folder.iterdir() if p.is_file()} if self.folder.is_dir() else set()

    def read(self, name: str) -> bytes | None:
        try:
            return (self.folder / name).read_bytes()
        except FileNotFoundError:
            return None

    def create(self, name: str, body: bytes) -> bool:
        return create_only.link_if_absent(self.folder / name, body)
