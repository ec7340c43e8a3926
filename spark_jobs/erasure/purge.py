"""Deleting for good the object versions that still hold a subject after the rewrites:

- **what the erase matched** (``matched``), whatever the sweep finds in it: every version of each landing
  file that held a subject's record or a mention (the erase deletes the file), and every noncurrent version
  under each bronze and quarantine partition it rewrote (the current files hold the rows kept, redacted
  where they had to be);

and, from the sweep's findings (``sweep.py``):

- **noncurrent versions** under the request's prefixes (each covered dataset's landing, bronze,
  quarantine, silver and gold folders and the staging folders ``checkpoints/<dataset>/bronze-staging`` and
  ``silver-staging``, the scrubbed prefixes, the request's work folder): S3 keeps every
  overwritten or deleted object as one; versions without subject data stay (versioning is the pipeline's
  recovery mechanism);
- **the subject files in the inbox** (``checkpoints/_erasure/inbox/``, how an EMR run gets its ids):
  every version and delete marker of a file that names a subject;
- **a table data file no snapshot references** (a killed write's) that holds a subject, under a covered
  table's ``data/`` (``iceberg.unreferenced``): all its versions. Nothing else unreferenced is touched.
"""
from __future__ import annotations

from typing import Callable

from spark_jobs.erasure import INBOX_PREFIX, objects
from spark_jobs.erasure.sweep import Sweep
from spark_jobs.io.s3 import list_versions
from spark_jobs.lake.config import LakeConfig


def noncurrent(s3, lake: LakeConfig, sweep: Sweep, prefixes: list[str]) -> int:
    """Delete the noncurrent versions under ``prefixes`` that hold a subject; returns how many."""
    doomed = [(f.key, f.version_id) for f in sweep.hits
              if (f.key, f.version_id) not in sweep.current and f.key.startswith(tuple(prefixes))]
    return objects.delete_versions(s3, lake.bucket, doomed)


def inbox(s3, lake: LakeConfig, sweep: Sweep) -> int:
    """Every version and delete marker of the inbox's subject files that name a subject."""
    keys = {f.key for f in sweep.hits if f.key.startswith(INBOX_PREFIX)}
    if not keys:
        return 0
    return objects.delete_versions(s3, lake.bucket, [(v.key, v.version_id) for v in list_versions(
        s3, lake.bucket, INBOX_PREFIX, delete_markers=True) if v.key in keys])


def unreferenced_files(s3, lake: LakeConfig, sweep: Sweep, data_prefixes: dict[str, str],
                       unreferenced: Callable[[str, list[str]], list[str]]) -> list[str]:
    """Delete (every version of) the current files under a covered table's ``data/`` prefix that hold a
    subject and that no snapshot of the table references. ``data_prefixes``: key prefix -> table;
    ``unreferenced(table, uris)`` says which URIs no snapshot references. Returns the keys deleted."""
    deleted = []
    for prefix, table in sorted(data_prefixes.items()):
        keys = sorted({f.key for f in sweep.hits if (f.key, f.version_id) in sweep.current and f.key.startswith(prefix)})
        if not keys:
            continue
        uris = {lake.path(*key.split("/")): key for key in keys}
        for uri in unreferenced(table, sorted(uris)):
            key = uris[uri]
            objects.delete_versions(s3, lake.bucket, [(v.key, v.version_id) for v in list_versions(s3, lake.bucket, key)
                                                      if v.key == key])
            deleted.append(key)
    return deleted


def matched(s3, lake: LakeConfig, landing_keys: list[str], partition_prefixes: list[str]) -> int:
    """Delete every version of the landing objects ``landing_keys`` and every noncurrent version under the
    rewritten partitions ``partition_prefixes`` (keys ending in ``/``); returns how many."""
    doomed = [(v.key, v.version_id) for key in landing_keys for v in list_versions(s3, lake.bucket, key) if v.key == key]
    doomed += [(v.key, v.version_id) for prefix in partition_prefixes
               for v in list_versions(s3, lake.bucket, prefix) if not v.is_latest]
    return objects.delete_versions(s3, lake.bucket, sorted(set(doomed)))
