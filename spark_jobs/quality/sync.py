"""Pull a tenant's ``reports/`` from its lake into the local mirror (what ``make dq-report`` shows).

The lake is found like the jobs find it: ``$TENANTLAKE_STATE_DIR/tenants/<tenant>/lake.json``. Object
stores are read with boto3 (this is orchestration, not a transformation); in the local environment
(``s3_endpoint`` set) dummy credentials are used when none are in the environment, as the emulator
accepts any. Files already in the mirror with the same size are skipped.
"""
from __future__ import annotations

import shutil
from pathlib import Path

REPORT_SUFFIXES = (".html", ".json")


def sync_from_lake(tenant: str, mirror_reports: Path) -> int:
    """Copy new report files from the tenant's lake into ``mirror_reports``; return how many were copied.

    Raises ``FileNotFoundError`` when the tenant has no ``lake.json`` (never applied)."""
    from spark_jobs.lake.config import lake_from_outputs, tenant_lake_file
    import json

    lake_file = tenant_lake_file(tenant)
    if not lake_file.is_file():
        raise FileNotFoundError(f"tenant '{tenant}' has no {lake_file}")
    lake = lake_from_outputs(json.loads(lake_file.read_text()), str(lake_file))
    if not lake.is_object_store:
        source = Path(lake.lake_uri.removeprefix("file://")) / "reports"
        return _copy_local(source, mirror_reports)
    from spark_jobs.io.s3 import lake_client

    client = lake_client(lake, emulator_credentials=True)
    copied = 0
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=lake.bucket, Prefix="reports/"):
        for item in page.get("Contents", []):
            key = item["Key"]
            if not key.endswith(REPORT_SUFFIXES):
                continue
            target = mirror_reports / key[len("reports/"):]
            if target.is_file() and target.stat().st_size == item["Size"]:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            client.download_file(lake.bucket, key, str(target))
            copied += 1
    return copied


def _copy_local(source: Path, target_root: Path) -> int:
    copied = 0
    for file in source.rglob("*"):
        if file.is_file() and file.name.endswith(REPORT_SUFFIXES):
            target = target_root / file.relative_to(source)
            if target.is_file() and target.stat().st_size == file.stat().st_size:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, target)
            copied += 1
    return copied
