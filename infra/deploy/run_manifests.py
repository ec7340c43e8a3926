"""Which layer of a job run failed, from what the jobs wrote: their run manifests in the lake.

EMR's ``describe_job_run`` says that a run failed (``stateDetails``, ``failureReason``), not where in
the job. Every layer job writes ``reports/<layer>/<dataset>/<run_id>/manifest.json`` whether it
succeeds or fails (``spark_jobs.jobs.runtime.job_run``), and run ids start with their UTC start time.
So after a run ends without ``COMPLETED``, the deploy reads, for each layer of the run, the newest
manifest of that dataset and event date that started after the job run was created:

* a manifest with ``status: failed`` names the layer and carries the job's own error line;
* no manifest for a layer (after the earlier ones succeeded) means the driver stopped while that
  layer ran (killed, out of memory, lost pod) or before it started;
* every layer succeeded: the job exited non-zero after them, e.g. exit 5 for warn-severity
  expectations; the warnings are named.

Manifests are matched by dataset, event date and time, not by job run id (the jobs do not know it):
a per-layer and a pipeline run of the same dataset and date running at the same time would be
indistinguishable. The deploy never starts two such runs itself.
"""
from __future__ import annotations

import dataclasses
import datetime
import json
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from infra.deploy.request import RunSpec
from infra.deploy.target import DeployTarget

MANIFEST_NAME = "manifest.json"
CLOCK_SKEW_SECONDS = 60  # a manifest may carry a start time this much before EMR's createdAt
RUN_ID_TIME_FORMAT = "%Y%m%dT%H%M%SZ"  # spark_jobs.runs.manifest.new_run_id


@dataclasses.dataclass(frozen=True)
class LayerResult:
    """What one layer of a run left in the lake. status: "succeeded" | "failed" | "missing"."""

    layer: str
    status: str
    run_id: str = ""
    error: str = ""
    warnings: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class RunResult:
    """The layers of one job run, in order, as their manifests tell it."""

    layers: tuple[LayerResult, ...]
    read_error: str = ""

    @property
    def failed_layer(self) -> str:
        """The layer to blame: the one that failed, else the first without a manifest, else the first
        with warnings; "" when the manifests cannot be read or say nothing went wrong."""
        for wanted in ("failed", "missing"):
            for result in self.layers:
                if result.status == wanted:
                    return result.layer
        return next((r.layer for r in self.layers if r.warnings), "")

    @property
    def succeeded(self) -> tuple[str, ...]:
        return tuple(r.layer for r in self.layers if r.status == "succeeded")

    def explain(self) -> str:
        """One line for the failure report."""
        if self.read_error:
            return f"run manifests not readable, layer unknown ({self.read_error})"
        blamed = next((r for r in self.layers if r.layer == self.failed_layer), None)
        if blamed is None:
            return "every layer wrote a succeeded manifest; the job failed after them (see the driver log)"
        if blamed.status == "failed":
            return f"{blamed.layer} failed (run {blamed.run_id}): {blamed.error or 'no error recorded'}"
        if blamed.status == "missing":
            return (f"{blamed.layer} wrote no run manifest: the driver stopped before or while it ran "
                    "(killed, out of memory, or a start-up error; see the driver log)")
        return (f"every layer succeeded, but {blamed.layer} had warn-severity expectations fail "
                f"(the jobs exit 5 on warnings): {'; '.join(blamed.warnings)}")


def _manifest_keys(s3, bucket: str, prefix: str, start_after: str) -> list[str]:
    keys: list[str] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix, StartAfter=start_after):
        for item in page.get("Contents", []):
            run_folder, _, name = item["Key"][len(prefix):].partition("/")
            if run_folder and name == MANIFEST_NAME:
                keys.append(item["Key"])
    return sorted(keys, reverse=True)


def _layer_result(layer: str, manifest: dict[str, Any]) -> LayerResult:
    warnings = tuple(f"{name}: {value.get('reason') or 'warn'}" for name, value in (manifest.get("validation") or {}).items()
                     if isinstance(value, dict) and value.get("status") == "warn")
    status = "failed" if manifest.get("status") == "failed" else "succeeded"
    error = (str(manifest.get("error") or "").strip().splitlines() or [""])[0]
    return LayerResult(layer, status, str(manifest.get("run_id", "")), error, warnings)


def read_run_result(s3, target: DeployTarget, spec: RunSpec, created_at: datetime.datetime | None) -> RunResult:
    """The manifests the layers of ``spec`` wrote since the job run was created (``createdAt``)."""
    since = created_at or datetime.datetime.now(datetime.timezone.utc)
    floor = (since - datetime.timedelta(seconds=CLOCK_SKEW_SECONDS)).astimezone(datetime.timezone.utc)
    wanted_date = spec.event_date.isoformat() if spec.event_date else None
    results: list[LayerResult] = []
    try:
        for layer in spec.layers:
            prefix = f"reports/{layer}/{spec.dataset}/"
            found = None
            for key in _manifest_keys(s3, target.bucket, prefix, prefix + floor.strftime(RUN_ID_TIME_FORMAT)):
                manifest = json.loads(s3.get_object(Bucket=target.bucket, Key=key)["Body"].read())
                if manifest.get("date") == wanted_date or layer == "bronze":  # bronze ingests whatever landed
                    found = _layer_result(layer, manifest)
                    break
            results.append(found or LayerResult(layer, "missing"))
    except (ClientError, BotoCoreError, ValueError, KeyError) as exc:
        code = exc.response.get("Error", {}).get("Code", "") if isinstance(exc, ClientError) else type(exc).__name__
        return RunResult(tuple(results), read_error=f"{code or 'error'} reading s3://{target.bucket}/reports/")
    return RunResult(tuple(results))
