"""Receipts: ``reports/erasure/<request>/receipt.json``, and the history that links repeated requests.

A receipt holds keyed hashes of the subjects (``subjects.subject_hash``), never an id; what was touched
per dataset and layer; the versions removed; and the verification (``sweep.Sweep.summary``). Every
request has its own id (``subjects.new_request_id``), so a receipt is never overwritten. Requests for the
same set of subjects share a keyed digest (``subjects.subjects_digest``); ``checkpoints/_erasure/history/
<digest>.json`` lists them, so a repeated request's receipt cites the earlier ones (``earlier_requests``).
"""
from __future__ import annotations

import json
from typing import Any

from spark_jobs.erasure import objects
from spark_jobs.erasure.reports import RECEIPTS_PREFIX
from spark_jobs.io import storage
from spark_jobs.lake.config import LakeConfig


def receipt_path(request: str) -> str:
    return f"{RECEIPTS_PREFIX}{request}/receipt.json"


def history_uri(lake: LakeConfig, digest: str) -> str:
    return lake.path("checkpoints", "_erasure", "history", f"{digest}.json")


def earlier_requests(spark, lake: LakeConfig, digest: str) -> list[dict[str, Any]]:
    """The completed requests for the same subjects, oldest first (request id, status, completion time)."""
    uri = history_uri(lake, digest)
    if not storage.exists(spark, uri):
        return []
    try:
        return list(json.loads(storage.read_text(spark, uri)).get("requests", []))
    except ValueError:
        return []


def record(spark, lake: LakeConfig, digest: str, receipt: dict[str, Any]) -> None:
    """Add this request to its subjects' history (after its receipt is written)."""
    entries = [e for e in earlier_requests(spark, lake, digest) if e.get("request_id") != receipt["request_id"]]
    entries.append({key: receipt.get(key) for key in ("request_id", "status", "completed_at")})
    storage.write_text(spark, history_uri(lake, digest), json.dumps({"requests": entries}, indent=1, sort_keys=True))


def write(s3, lake: LakeConfig, receipt: dict[str, Any], tenant: str = "") -> str:
    """Write the receipt to the lake (and the local report mirror and its index, for a tenant); returns its key."""
    text = json.dumps(receipt, indent=1, sort_keys=True)
    key = receipt_path(receipt["request_id"])
    objects.put_text(s3, lake, key, text)
    if tenant:
        from spark_jobs.quality import index
        from spark_jobs.quality.report import mirror_root

        mirror = mirror_root(tenant)
        (mirror / "erasure" / receipt["request_id"]).mkdir(parents=True, exist_ok=True)
        (mirror / "erasure" / receipt["request_id"] / "receipt.json").write_text(text + "\n", encoding="utf-8")
        index.build_index(tenant, mirror)
    return key
