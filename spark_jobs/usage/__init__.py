"""``python -m spark_jobs usage``: what one tenant uses in a month, and what it would cost.

Three sources, each described in its module and in ``spark_jobs/usage/README.md``:

- ``objects``: bytes and object counts per layer and dataset, current and noncurrent versions apart, from the
  lake's newest S3 Inventory report, else a listing of every version;
- ``runs``: runs, failures, run time and rows per layer and dataset, from the run manifests, maintenance
  reports and erasure receipts the jobs write under ``reports/``;
- ``emr``: vCPU-hours and GB-hours of the tenant's EMR on EKS job runs (``describe_job_run``), when the lake
  config names a virtual cluster and the runs exist;

then ``cost`` estimates the month from the price table (``prices.json``), and ``render`` prints the table,
the JSON and the page of the data-quality index (``usage/<month>/usage.html`` next to the index).

This is orchestration (boto3 against the lake), run where ``make`` runs, not on the cluster.
"""
from __future__ import annotations

import calendar
import datetime as dt
import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from spark_jobs.io.s3 import ObjectVersion, lake_client
from spark_jobs.lake.config import LakeConfig, gold_table_name
from spark_jobs.usage import cost, emr, objects, runs

REPORT_VERSION = 1
USAGE_PREFIX = "reports/usage"  # reports/usage/<month>/usage.json in the lake
PROGRESS_EVERY = 100_000  # a progress line per this many object versions read


class UsageError(ValueError):
    """The usage cannot be collected as asked; one line saying what to do."""


def month_days(month: str) -> list[str]:
    year, number = map(int, month.split("-"))
    return [f"{month}-{day:02d}" for day in range(1, calendar.monthrange(year, number)[1] + 1)]


def gold_datasets() -> dict[str, str]:
    """Gold table -> its dataset, over every contract."""
    from spark_jobs.contract.model import available_datasets, load_contract

    mapping = {}
    for dataset in available_datasets():
        for name in load_contract(dataset).gold:
            mapping[gold_table_name(dataset, name)] = dataset
    return mapping


class LakeStore:
    """The lake's objects through boto3 (``s3://``/``s3a://`` lakes) or the file system (a folder lake)."""

    def __init__(self, lake: LakeConfig):
        self.lake = lake
        self.s3 = None
        if lake.is_object_store:
            self.s3 = lake_client(lake, emulator_credentials=True)  # the emulator takes any keys
        self.root = None if lake.is_object_store else Path(lake.lake_uri.removeprefix("file://"))

    def client(self, service: str):
        return lake_client(self.lake, service, emulator_credentials=self.s3 is not None)

    def keys(self, prefix: str) -> list[str]:
        if self.s3 is None:
            base = self.root / prefix
            return sorted(str(p.relative_to(self.root)) for p in base.rglob("*") if p.is_file()) if base.is_dir() else []
        found = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.lake.bucket, Prefix=prefix):
            found += [item["Key"] for item in page.get("Contents", [])]
        return found

    def read_text(self, key: str) -> str:
        if self.s3 is None:
            return (self.root / key).read_text(encoding="utf-8")
        return self.s3.get_object(Bucket=self.lake.bucket, Key=key)["Body"].read().decode("utf-8")

    def put_text(self, key: str, text: str) -> str:
        """Write a report (SSE-KMS with the tenant key, as the bucket policy demands); returns its URI."""
        if self.s3 is None:
            target = self.root / key
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            return str(target)
        extra = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": self.lake.kms_key_arn} if self.lake.kms_key_arn else {}
        self.s3.put_object(Bucket=self.lake.bucket, Key=key, Body=text.encode("utf-8"),
                           ContentType="application/json", **extra)
        return f"s3://{self.lake.bucket}/{key}"

    def versions(self) -> tuple[Iterable[ObjectVersion], dict[str, Any]]:
        if self.s3 is None:  # a folder has one version per file
            now = dt.datetime.now(dt.timezone.utc)

            def files() -> Iterator[ObjectVersion]:
                for key in self.keys(""):
                    stat = (self.root / key).stat()
                    yield ObjectVersion(key, size=stat.st_size, last_modified=dt.datetime.fromtimestamp(
                        stat.st_mtime, dt.timezone.utc))
            return files(), {"source": "listing", "as_of": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "why": "a folder lake"}
        return objects.collect(self.s3, self.lake.bucket)


def collect_usage(lake: LakeConfig, *, tenant: str, month: str, outputs: dict[str, Any] | None = None,
                  price_table: dict[str, Any] | None = None, price_region: str = "",
                  progress=lambda line: None) -> dict[str, Any]:
    """The usage report of ``tenant`` for ``month`` (``YYYY-MM``): storage, runs, EMR, cost (see the module)."""
    outputs = outputs or {}
    store = LakeStore(lake)
    days = month_days(month)
    golds = gold_datasets()
    versions, storage_source = store.versions()
    tally = objects.Tally(golds, month, days)
    for version in versions:  # one pass, nothing kept: a lake can hold millions of versions
        tally.add(version)
        if tally.versions % PROGRESS_EVERY == 0:
            progress(f"[usage {tenant}] storage: {tally.versions} object versions read from the {storage_source['source']}")
    progress(f"[usage {tenant}] storage: {tally.versions} object versions from the {storage_source['source']}")
    inventory = outputs.get("inventory") or {}
    storage_rows = tally.rows()
    report_keys = runs.report_keys(store.keys)
    month_runs = runs.collect_runs(report_keys, runs.read_json_or_empty(store.read_text), month)
    progress(f"[usage {tenant}] runs: {len(month_runs)} in {month} from {len(report_keys)} report files")
    emr_block: dict[str, Any] = {"source": "none", "rows": []}
    cluster = outputs.get("emr_virtual_cluster_id")
    if cluster and lake.is_object_store:
        try:
            described = emr.job_runs_of_month(store.client("emr-containers"), cluster, month)
            emr_block = {"source": "describe_job_run", "virtual_cluster_id": cluster,
                         "rows": [r.to_dict() for r in emr.summarise(described)]}
            progress(f"[usage {tenant}] EMR on EKS: {len(described)} finished job runs on {cluster}")
        except Exception as exc:  # noqa: BLE001 - the figures of the lake still stand; say why EMR's are missing
            emr_block = {"source": "none", "rows": [], "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
            progress(f"[usage {tenant}] warning: EMR job runs not read ({emr_block['error']})")
    usage: dict[str, Any] = {
        "version": REPORT_VERSION, "kind": "usage", "tenant": tenant, "month": month, "lake_uri": lake.lake_uri,
        "generated_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "storage": {**storage_source, "inventory_configured": bool(inventory.get("id")),
                    "rows": [r.to_dict() for r in storage_rows], "totals": _storage_totals(storage_rows)},
        "runs": {"rows": [r.to_dict() for r in runs.summarise(month_runs)]},
        "emr": emr_block,
        "daily": {"days": days, "seconds": runs.seconds_by_day(month_runs, days),
                  "stored_bytes": tally.stored_by_day()},
    }
    table = price_table or cost.load_prices()
    usage["cost"] = cost.estimate(usage, table, price_region or lake.region)
    return usage


def _storage_totals(rows: list[objects.StorageRow]) -> dict[str, int]:
    keys = ("current_bytes", "current_objects", "noncurrent_bytes", "noncurrent_objects", "delete_markers",
            "versions_written")
    return {key: sum(getattr(r, key) for r in rows) for key in keys}


def write_report(usage: dict[str, Any], lake: LakeConfig, mirror_reports: Path) -> dict[str, str]:
    """``usage.json`` to the lake (``reports/usage/<month>/``) and ``usage.json`` + ``usage.html`` to the local
    report mirror, whose data-quality index lists the page; returns where each went."""
    from spark_jobs.usage import render

    text = json.dumps(usage, indent=1, sort_keys=True)
    where = {}
    try:
        where["lake"] = LakeStore(lake).put_text(f"{USAGE_PREFIX}/{usage['month']}/usage.json", text)
    except Exception as exc:  # noqa: BLE001 - the local page is still written; the line says why not the lake
        where["lake_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    folder = mirror_reports / "usage" / usage["month"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "usage.json").write_text(text + "\n", encoding="utf-8")
    (folder / "usage.html").write_text(render.page(usage), encoding="utf-8")
    where["page"] = str(folder / "usage.html")
    return where
