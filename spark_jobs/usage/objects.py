"""Bytes and object counts per layer and dataset: from the lake's newest S3 Inventory report, else a listing.

Each object version is put in a row ``(layer, dataset)`` by its key (``classify``): ``landing/<ds>/``,
``bronze/<ds>/``, ``silver/<ds>/``, ``quarantine/<ds>/`` and ``checkpoints/<ds>/`` name their dataset,
``gold/<table>/`` the dataset whose contract has that gold table, ``reports/<layer>/<ds>/`` the layer's
reports of a dataset (``reports``), and everything else its top-level folder (``artifacts``, ``logs``,
``athena``, ``reports`` with dataset ``-``). Current versions (``IsLatest``) and noncurrent ones are counted
apart; delete markers hold no bytes and are counted on their own.

Both sources give the same rows: ``tests/spark_jobs/usage/test_objects.py`` writes a report in the format S3
documents (``manifest.json`` naming Parquet files with the columns ``bucket, key, version_id, is_latest,
is_delete_marker, size, last_modified_date, storage_class, ...``) and compares it with a listing.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
from typing import Any, Iterator

from spark_jobs.io.s3 import ObjectVersion, list_versions, utc

DATASET_FOLDERS = ("landing", "bronze", "silver", "quarantine", "checkpoints")
NO_DATASET = "-"
BATCH_ROWS = 50_000  # inventory rows turned into Python objects at a time


@dataclasses.dataclass
class StorageRow:
    layer: str
    dataset: str
    current_bytes: int = 0
    current_objects: int = 0
    noncurrent_bytes: int = 0
    noncurrent_objects: int = 0
    delete_markers: int = 0
    # storage class -> bytes (current and noncurrent): what the price per GB-month depends on
    bytes_by_class: dict[str, int] = dataclasses.field(default_factory=dict)
    # versions written in the month asked for (PUT-class requests they cost, at least)
    versions_written: int = 0

    def add(self, version: ObjectVersion, written_in_month: bool) -> None:
        if written_in_month:
            self.versions_written += 1
        if version.is_delete_marker:
            self.delete_markers += 1
            return
        if version.is_latest:
            self.current_bytes += version.size
            self.current_objects += 1
        else:
            self.noncurrent_bytes += version.size
            self.noncurrent_objects += 1
        self.bytes_by_class[version.storage_class] = self.bytes_by_class.get(version.storage_class, 0) + version.size

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def classify(key: str, gold_datasets: dict[str, str]) -> tuple[str, str]:
    """``(layer, dataset)`` of an object key; ``gold_datasets`` maps a gold table to its dataset."""
    parts = key.split("/")
    top = parts[0] if len(parts) > 1 else NO_DATASET
    second = parts[1] if len(parts) > 2 else NO_DATASET
    if top in DATASET_FOLDERS:
        return top, second
    if top == "gold":
        return "gold", gold_datasets.get(second, second)
    if top == "reports" and len(parts) > 3 and parts[1] in ("bronze", "silver", "gold"):
        return "reports", parts[2]
    return top, NO_DATASET


class Tally:
    """One pass over the versions (a lake can hold millions: none is kept): the rows per layer and dataset,
    and per layer the bytes written on each day of ``days``."""

    def __init__(self, gold_datasets: dict[str, str], month: str, days: list[str]):
        self.gold_datasets, self.month, self.days = gold_datasets, month, days
        self.by_row: dict[tuple[str, str], StorageRow] = {}
        self.written: dict[str, list[int]] = {}
        self.versions = 0
        year, number = (int(p) for p in month.split("-")) if month else (1, 1)
        self.month_start = dt.datetime(year, number, 1, tzinfo=dt.timezone.utc)
        self.month_end = (self.month_start + dt.timedelta(days=32)).replace(day=1)
        first = dt.datetime.strptime(days[0], "%Y-%m-%d").replace(tzinfo=dt.timezone.utc) if days else self.month_start
        self.days_start = first

    def add(self, version: ObjectVersion) -> None:
        self.versions += 1
        modified = version.last_modified
        layer, dataset = classify(version.key, self.gold_datasets)
        row = self.by_row.get((layer, dataset))
        if row is None:
            row = self.by_row[(layer, dataset)] = StorageRow(layer, dataset)
        row.add(version, self.month_start <= modified < self.month_end)
        if not version.is_delete_marker and self.days:
            index = max((modified - self.days_start).days, 0)  # older versions count from day one
            if index < len(self.days):
                per_day = self.written.get(layer)
                if per_day is None:
                    per_day = self.written[layer] = [0] * len(self.days)
                per_day[index] += version.size

    def rows(self) -> list[StorageRow]:
        return [self.by_row[k] for k in sorted(self.by_row)]

    def stored_by_day(self) -> dict[str, list[int]]:
        """Per layer, the bytes of the versions stored today that had been written by the end of each day:
        what was stored then, less what has been deleted since (a lower bound of the bytes stored that day)."""
        series = {}
        for layer, per_day in self.written.items():
            total, values = 0, []
            for size in per_day:
                total += size
                values.append(total)
            series[layer] = values
        return series


# --------------------------------------------------------------------------------------- inventory
@dataclasses.dataclass(frozen=True)
class InventoryReport:
    """The newest delivered report of an inventory configuration."""

    config_id: str
    bucket: str          # where the report is (the log bucket)
    manifest_key: str
    created_at: dt.datetime
    data_keys: tuple[str, ...]
    file_format: str

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.manifest_key}"


def inventory_configuration(s3, bucket: str) -> dict[str, Any] | None:
    """The bucket's enabled Parquet inventory of every version (the tenant module's), or None."""
    from botocore.exceptions import ClientError

    try:
        configs = s3.list_bucket_inventory_configurations(Bucket=bucket).get("InventoryConfigurationList") or []
    except ClientError:
        return None
    for config in configs:
        destination = config.get("Destination", {}).get("S3BucketDestination", {})
        if config.get("IsEnabled") and config.get("IncludedObjectVersions") == "All" and \
                destination.get("Format") == "Parquet":
            return config
    return None


def newest_report(s3, source_bucket: str, config: dict[str, Any]) -> InventoryReport | None:
    """The newest ``manifest.json`` under ``<prefix>/<source bucket>/<config id>/<YYYY-MM-DDTHH-MMZ>/``."""
    destination = config["Destination"]["S3BucketDestination"]
    bucket = destination["Bucket"].rsplit(":", 1)[-1]
    prefix = f"{destination.get('Prefix', '').strip('/')}/{source_bucket}/{config['Id']}/".lstrip("/")
    folders: list[str] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix, Delimiter="/"):
        folders += [p["Prefix"] for p in page.get("CommonPrefixes", [])]
    for folder in sorted((f for f in folders if _is_report_folder(f[len(prefix):-1])), reverse=True):
        try:
            body = s3.get_object(Bucket=bucket, Key=f"{folder}manifest.json")["Body"].read()
        except s3.exceptions.NoSuchKey:
            continue  # a delivery still being written: its manifest comes last
        manifest = json.loads(body)
        created = dt.datetime.fromtimestamp(int(manifest.get("creationTimestamp", "0")) / 1000, dt.timezone.utc)
        return InventoryReport(config["Id"], bucket, f"{folder}manifest.json", created,
                               tuple(f["key"] for f in manifest.get("files", [])), str(manifest.get("fileFormat", "")))
    return None


def _is_report_folder(name: str) -> bool:
    try:
        dt.datetime.strptime(name, "%Y-%m-%dT%H-%MZ")
        return True
    except ValueError:
        return False


def report_versions(s3, report: InventoryReport) -> Iterator[ObjectVersion]:
    """The rows of a Parquet report's data files (pyarrow), as versions."""
    import pyarrow.parquet as pq

    if report.file_format.lower() != "parquet":
        raise ValueError(f"inventory report {report.uri} is {report.file_format}, not Parquet")
    wanted = ("key", "size", "is_latest", "is_delete_marker", "last_modified_date", "storage_class")
    for key in report.data_keys:
        data = pq.ParquetFile(io.BytesIO(s3.get_object(Bucket=report.bucket, Key=key)["Body"].read()))
        columns = [c for c in wanted if c in data.schema_arrow.names]
        for batch in data.iter_batches(batch_size=BATCH_ROWS, columns=columns):  # bounded memory per file
            for row in batch.to_pylist():
                modified = row.get("last_modified_date")
                if isinstance(modified, (int, float)):
                    modified = dt.datetime.fromtimestamp(modified / 1000, dt.timezone.utc)
                yield ObjectVersion(row["key"], size=int(row.get("size") or 0),
                                    is_latest=bool(row["is_latest"]) if "is_latest" in columns else True,
                                    is_delete_marker=bool(row.get("is_delete_marker")),
                                    last_modified=utc(modified or report.created_at),
                                    storage_class=str(row.get("storage_class") or "STANDARD"))


def collect(s3, bucket: str) -> tuple[Iterator[ObjectVersion], dict[str, Any]]:
    """The lake's versions (read as they are consumed, page by page or file by file) and where they come
    from: ``{"source": "inventory", "report": uri, "as_of": ...}`` when the bucket has an inventory with a
    delivered report, else ``{"source": "listing", ...}``."""
    config = inventory_configuration(s3, bucket)
    report = newest_report(s3, bucket, config) if config else None
    if report is not None:
        return report_versions(s3, report), {
            "source": "inventory", "inventory_id": report.config_id, "report": report.uri,
            "as_of": report.created_at.strftime("%Y-%m-%dT%H:%M:%SZ")}
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    reason = ("no inventory configuration on the bucket" if config is None
              else f"inventory {config['Id']} has delivered no report yet (S3 delivers the first within 48 hours)")
    return list_versions(s3, bucket, delete_markers=True), {"source": "listing", "as_of": now, "why": reason}
