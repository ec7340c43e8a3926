"""``python -m spark_jobs status --tenant T``: per dataset, its last run, its freshness against its target, and its
open alarms.

- **last run**: from the run manifests every layer run writes (``reports/<layer>/<dataset>/<run_id>/manifest.json``,
  whatever started the run: ``run-all``, a deploy, the tenant's state machine). The newest manifest of the dataset's
  layers is the last run's latest step: its time (finished, or started while it runs), its result (``succeeded``,
  ``failed``, ``blocked`` when validation stopped the publish, ``running``) and, when it did not succeed, the layer
  that failed and the error's class (never its text: it may quote data).
- **freshness**: the time since silver was last published (the newest silver manifest that says ``published``)
  against the contract's ``freshness.max_minutes_since_publish``: ``fresh``, ``STALE`` or ``never published``.
- **CloudWatch**, where the lake names a metric namespace (a tenant with ``orchestration`` enabled, whose lake
  config holds its outputs): the silver publishes the jobs put in the last target window (``LayerPublished``, as the
  freshness alarm counts them), and the tenant's alarms in state ``ALARM`` for the dataset (its freshness alarm, by
  the name the module's outputs give). On the local emulator alarms never evaluate (they stay ``OK``), so only the
  manifests' freshness tells staleness there.

It reads with boto3 only (no Spark). Exit code 0; ``--json`` prints the same as a list of objects.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import sys
from typing import Any, Callable

from spark_jobs.contract.model import available_datasets, load_contract
from spark_jobs.lake.config import LAYERS, LakeConfig, LakeConfigError, lake_from_args, read_lake_outputs
from tenant_model import FRESHNESS_LAYER, PUBLISHED_METRIC

MANIFEST = "manifest.json"
RUN_ID_TIME = "%Y%m%dT%H%M%SZ"


@dataclasses.dataclass
class DatasetStatus:
    dataset: str
    last_run_at: str = ""
    last_layer: str = ""
    result: str = "never run"
    failed_layer: str = ""
    error: str = ""
    run_id: str = ""
    last_publish_at: str = ""
    target_minutes: int | None = None
    age_minutes: float | None = None
    freshness: str = "never published"
    cloudwatch_publishes: int | None = None
    open_alarms: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _utc(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    try:
        moment = dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def _run_time(run_id: str) -> dt.datetime | None:
    try:
        return dt.datetime.strptime(run_id[:16], RUN_ID_TIME).replace(tzinfo=dt.timezone.utc)
    except ValueError:
        return None


class ManifestReader:
    """The run manifests of a lake, newest first per layer and dataset (one listing each, read as needed)."""

    def __init__(self, s3, bucket: str):
        self.s3, self.bucket = s3, bucket

    def run_ids(self, layer: str, dataset: str) -> list[str]:
        prefix = f"reports/{layer}/{dataset}/"
        ids = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                run_id, _, name = item["Key"][len(prefix):].partition("/")
                if name == MANIFEST and _run_time(run_id) is not None:
                    ids.append(run_id)
        return sorted(ids, reverse=True)

    def read(self, layer: str, dataset: str, run_id: str) -> dict[str, Any]:
        key = f"reports/{layer}/{dataset}/{run_id}/{MANIFEST}"
        return json.loads(self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read())


def _result(manifest: dict[str, Any]) -> str:
    status = str(manifest.get("status") or "")
    if status == "failed":
        blocked = any(isinstance(v, dict) and v.get("blocking") for v in (manifest.get("validation") or {}).values())
        return "blocked" if blocked else "failed"
    return "succeeded" if status == "succeeded" else "running"


def last_run(reader: ManifestReader, dataset: str) -> tuple[DatasetStatus, dict[str, list[str]]]:
    """The dataset's last run from its newest manifest across the layers; also each layer's run ids."""
    status = DatasetStatus(dataset)
    ids = {layer: reader.run_ids(layer, dataset) for layer in LAYERS}
    newest = max(((run_ids[0], layer) for layer, run_ids in ids.items() if run_ids), default=None)
    if newest is None:
        return status, ids
    run_id, layer = newest
    manifest = reader.read(layer, dataset, run_id)
    status.run_id, status.last_layer, status.result = run_id, layer, _result(manifest)
    status.last_run_at = str(manifest.get("finished_at") or manifest.get("started_at") or "")
    if status.result == "blocked":
        status.failed_layer, status.error = layer, "validation blocked the publish"
    elif status.result == "failed":
        status.failed_layer = layer
        status.error = str(manifest.get("error") or "").split(":", 1)[0]  # the class, never the message
    return status, ids


def freshness(status: DatasetStatus, reader: ManifestReader, silver_ids: list[str], target: int | None,
              now: dt.datetime) -> None:
    status.target_minutes = target
    for run_id in silver_ids:
        manifest = reader.read(FRESHNESS_LAYER, status.dataset, run_id)
        published = _utc(manifest.get("finished_at")) if manifest.get("published") else None
        if published is not None:
            status.last_publish_at = published.isoformat(timespec="seconds")
            status.age_minutes = round((now - published).total_seconds() / 60, 1)
            break
    if status.age_minutes is None:
        status.freshness = "never published"
    elif target is None:
        status.freshness = "no target"
    else:
        status.freshness = "fresh" if status.age_minutes <= target else "STALE"


def cloudwatch_facts(statuses: list[DatasetStatus], lake: LakeConfig, alarm_names: dict[str, str],
                     now: dt.datetime, client: Callable[[str], Any]) -> None:
    """Publishes counted from the metric, and the dataset's alarms in ALARM (both best effort: a note, not a failure)."""
    if not lake.metric_namespace:
        return
    try:
        cloudwatch = client("cloudwatch")
        for status in statuses:
            window = status.target_minutes or 24 * 60
            answer = cloudwatch.get_metric_statistics(
                Namespace=lake.metric_namespace, MetricName=PUBLISHED_METRIC,
                Dimensions=[{"Name": "Dataset", "Value": status.dataset}, {"Name": "Layer", "Value": FRESHNESS_LAYER}],
                StartTime=now - dt.timedelta(minutes=window), EndTime=now + dt.timedelta(minutes=1),
                Period=max(60, window * 60), Statistics=["Sum"])
            status.cloudwatch_publishes = int(sum(point.get("Sum", 0) for point in answer.get("Datapoints", [])))
        names = {name: dataset for dataset, name in alarm_names.items()}
        if names:
            for alarm in cloudwatch.describe_alarms(AlarmNames=sorted(names)).get("MetricAlarms", []):
                if alarm.get("StateValue") == "ALARM":
                    for status in statuses:
                        if status.dataset == names.get(alarm["AlarmName"]):
                            status.open_alarms.append(alarm["AlarmName"])
    except Exception as exc:  # noqa: BLE001 - CloudWatch is extra information
        code = getattr(exc, "response", {}).get("Error", {}).get("Code", "") if hasattr(exc, "response") else ""
        for status in statuses:
            status.notes.append(f"CloudWatch not read ({code or type(exc).__name__})")


def collect(lake: LakeConfig, datasets: list[str], alarm_names: dict[str, str] | None = None,
            now: dt.datetime | None = None) -> list[DatasetStatus]:
    from spark_jobs.io.s3 import lake_client

    now = now or dt.datetime.now(dt.timezone.utc)
    reader = ManifestReader(lake_client(lake, "s3", emulator_credentials=True), lake.bucket)
    statuses = []
    for dataset in datasets:
        contract = load_contract(dataset)
        status, ids = last_run(reader, dataset)
        freshness(status, reader, ids[FRESHNESS_LAYER],
                  contract.freshness.max_minutes_since_publish if contract.freshness else None, now)
        statuses.append(status)
    cloudwatch_facts(statuses, lake, alarm_names or {}, now,
                     lambda service: lake_client(lake, service, emulator_credentials=True, timeout_s=10, retries=1))
    return statuses


def _minutes(value: float | None) -> str:
    if value is None:
        return "-"
    minutes = int(round(value))
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def render(statuses: list[DatasetStatus], tenant: str, now: dt.datetime) -> str:
    rows = [("dataset", "last run (UTC)", "result", "failed layer", "freshness (silver)", "CloudWatch", "open alarms")]
    for s in statuses:
        when = (_utc(s.last_run_at) or now).strftime("%Y-%m-%d %H:%M") if s.last_run_at else "-"
        result = s.result + (f" ({s.last_layer})" if s.result in ("succeeded", "running") and s.last_layer else "")
        failed = f"{s.failed_layer} ({s.error})" if s.failed_layer and s.error else (s.failed_layer or "-")
        if s.freshness in ("fresh", "STALE"):
            fresh = f"{s.freshness}: {_minutes(s.age_minutes)} ago (target {_minutes(s.target_minutes)})"
        elif s.freshness == "no target":
            fresh = f"published {_minutes(s.age_minutes)} ago (no target)"
        else:
            fresh = s.freshness + (f" (target {_minutes(s.target_minutes)})" if s.target_minutes else "")
        cloudwatch = (f"{s.cloudwatch_publishes} publish(es) in target" if s.cloudwatch_publishes is not None
                      else ("; ".join(s.notes) or "-"))
        rows.append((s.dataset, when, result, failed, fresh, cloudwatch, ", ".join(s.open_alarms) or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [f"tenant {tenant}: {len(statuses)} dataset(s) at {now.strftime('%Y-%m-%d %H:%M')} UTC"]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", action="append", default=None, choices=available_datasets(),
                        help="dataset (repeatable; default: every contract)")
    parser.add_argument("--json", action="store_true", help="print a JSON list instead of a table")


def run(args: argparse.Namespace) -> int:
    lake = lake_from_args(args)
    if not lake.is_object_store:
        raise LakeConfigError(f"status reads a lake in S3 (its run manifests and CloudWatch); {lake.lake_uri} is a folder")
    outputs: dict[str, Any] = {}
    if (args.tenant or args.lake_config) and not args.lake_uri:
        outputs = read_lake_outputs(args.tenant, args.lake_config)[0]
    alarm_names = dict((outputs.get("orchestration") or {}).get("freshness_alarms") or {})
    now = dt.datetime.now(dt.timezone.utc)
    statuses = collect(lake, args.dataset or available_datasets(), alarm_names, now)
    tenant = args.tenant or str(outputs.get("tenant_id") or lake.bucket)
    print(json.dumps([s.to_dict() for s in statuses], indent=1) if args.json else render(statuses, tenant, now))
    if not lake.metric_namespace:
        print("note: no CloudWatch facts: the lake names no metric namespace (the tenant's orchestration is off)",
              file=sys.stderr)
    return 0
