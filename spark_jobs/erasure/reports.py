"""Reports, Athena results and job logs that name a subject: rewritten without it, or deleted.

Acts on the sweep's findings (``sweep.py``), current versions only (noncurrent ones are purged):

- a text object under ``reports/`` (JSON, HTML, CSV; at most ``MAX_REWRITE_BYTES``) is rewritten with
  each matching token, and each keyed id, replaced by ``[erased]`` (``Needles.redact``, with the key names of
  the report's dataset, ``Needles.for_key``), SSE-KMS with the
  tenant key; the version that held the subject is then deleted for good;
- any other object that holds one (a Parquet sample, an Athena result under ``athena/``, a job log under
  ``logs/``, a larger report) is deleted: a delete marker, and its version deleted for good;
- the receipts (``reports/erasure/``) are never touched: they hold keyed hashes only.

``scrub_mirror`` does the same to the local copy of the tenant's reports (``make dq-report``'s mirror).
"""
from __future__ import annotations

from typing import Any

from spark_jobs.erasure import objects
from spark_jobs.erasure.matching import Needles
from spark_jobs.erasure.scan import AVRO_MAGIC, GZIP_MAGIC, PARQUET_MAGIC, Matchers, scan_chunks
from spark_jobs.erasure.sweep import Sweep
from spark_jobs.lake.config import LakeConfig

SCRUBBED_PREFIXES = ("reports/", "athena/", "logs/")
RECEIPTS_PREFIX = "reports/erasure/"
MAX_REWRITE_BYTES = 64 << 20
BINARY_MAGICS = (PARQUET_MAGIC, AVRO_MAGIC, GZIP_MAGIC)


def scrub(s3, lake: LakeConfig, sweep: Sweep, needles: Needles) -> dict[str, int]:
    """Rewrite or delete the current versions under ``SCRUBBED_PREFIXES`` that hold a subject."""
    rewritten = deleted = redactions = 0
    for finding in sorted(sweep.hits, key=lambda f: f.key):
        key, version_id = finding.key, finding.version_id
        if (key, version_id) not in sweep.current or not key.startswith(SCRUBBED_PREFIXES) \
                or key.startswith(RECEIPTS_PREFIX):
            continue
        if key.startswith("reports/") and finding.size <= MAX_REWRITE_BYTES:
            data = s3.get_object(Bucket=lake.bucket, Key=key, VersionId=version_id)["Body"].read()
            if not data.startswith(BINARY_MAGICS):
                text, count = needles.for_key(key).redact(data.decode("utf-8", errors="replace"))
                objects.put_text(s3, lake, key, text)
                objects.delete_versions(s3, lake.bucket, [(key, version_id)])
                rewritten, redactions = rewritten + 1, redactions + count
                continue
        s3.delete_object(Bucket=lake.bucket, Key=key)
        objects.delete_versions(s3, lake.bucket, [(key, version_id)])
        deleted += 1
    return {"objects_rewritten": rewritten, "objects_deleted": deleted, "tokens_redacted": redactions}


def scrub_mirror(tenant: str, needles: Needles) -> int:
    """The local copy of the tenant's reports, scrubbed the same way; returns the files changed."""
    from spark_jobs.quality.report import mirror_root

    root, changed, matchers = mirror_root(tenant), 0, Matchers(needles)
    if not root.is_dir():
        return 0
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "erasure" not in p.relative_to(root).parts[:1]):
        data, key = path.read_bytes(), "reports/" + path.relative_to(root).as_posix()  # its key in the lake
        if data.startswith(BINARY_MAGICS):
            hit, _ = scan_chunks([data], matchers.for_key(key))
            if hit:
                path.unlink()
                changed += 1
            continue
        text, count = needles.for_key(key).redact(data.decode("utf-8", errors="replace"))
        if count:
            path.write_text(text, encoding="utf-8")
            changed += 1
    return changed


def describe(result: dict[str, Any]) -> str:
    return (f"reports: {result['objects_rewritten']} rewritten ({result['tokens_redacted']} ids redacted), "
            f"{result['objects_deleted']} deleted")
