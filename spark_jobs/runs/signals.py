"""What a layer run tells the tenant's monitoring: a CloudWatch metric after each publish, and an EventBridge event
when validation blocks a publish.

Both only when the lake names where they go (``LakeConfig.metric_namespace`` / ``event_source``: the tenant output
``orchestration``, which a tenant with orchestration enabled has; the module's alarms and rules read exactly these):

- **after a publish** (the run's manifest says ``published``): ``put_metric_data`` of ``LayerPublished`` = 1
  (``Count``) in the namespace, with the dimensions ``Dataset`` and ``Layer``, at the time the run finished. The
  tenant's freshness alarm of a dataset counts its silver publishes over the dataset's target
  (``modules/freshness_alarms.py``); ``python -m spark_jobs status`` reads the same metric back.
- **a publish blocked by validation** (an error-severity expectation failed; the run stops with exit 4):
  ``put_events`` of one event, source the tenant's (``tenantlake.<tenant>``), detail-type
  ``Publish Blocked by Validation``, whose detail names the dataset, the layer, the run, where its manifest is, and
  per failed rule its name, column, severity and counts, plus the quarantine's counts per rule. It never holds a
  record value: no observed values, no samples, no error text (the manifest and the data-quality report have
  those, in the lake). The tenant's ``publish-blocked`` rule sends it to the alerts topic.

**Signals never fail the run.** An error putting either becomes one warning line on the run's progress output
(``[signals] warning: ...``), and the run goes on (or stops with its own error, for a blocked publish).
"""
from __future__ import annotations

import datetime as dt
import json
from typing import Any, Callable

from tenant_model import PUBLISHED_METRIC, PUBLISH_BLOCKED_DETAIL_TYPE

TIMEOUT_S = 5.0  # a monitoring endpoint that does not answer must not hold the run
RETRIES = 1

Progress = Callable[[str], None]


def _warn(progress: Progress, what: str, exc: BaseException) -> None:
    response = getattr(exc, "response", None)
    code = response.get("Error", {}).get("Code", "") if isinstance(response, dict) else ""
    reason = code or f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]}"
    line = f"[signals] warning: {what} not sent ({reason})"
    try:
        progress(line)
    except Exception:  # noqa: BLE001 - a warning must not fail the run either
        pass


def _client(lake, service: str):
    from spark_jobs.io.s3 import lake_client

    return lake_client(lake, service, timeout_s=TIMEOUT_S, retries=RETRIES, emulator_credentials=True)


def published_metric(dataset: str, layer: str, finished_at: dt.datetime) -> dict[str, Any]:
    """The ``MetricData`` entry of one publish."""
    return {"MetricName": PUBLISHED_METRIC, "Timestamp": finished_at, "Value": 1.0, "Unit": "Count",
            "Dimensions": [{"Name": "Dataset", "Value": dataset}, {"Name": "Layer", "Value": layer}]}


def layer_published(run) -> bool:
    """Put the publish metric of a finished run whose manifest says it published; True when it was put."""
    lake, manifest = run.lake, run.manifest
    if not (lake.metric_namespace and manifest.published):
        return False
    finished = dt.datetime.fromisoformat(manifest.finished_at) if manifest.finished_at else dt.datetime.now(dt.timezone.utc)
    try:
        _client(lake, "cloudwatch").put_metric_data(
            Namespace=lake.metric_namespace, MetricData=[published_metric(manifest.dataset, manifest.layer, finished)])
    except Exception as exc:  # noqa: BLE001 - never fails the run
        _warn(run.progress, f"metric {PUBLISHED_METRIC} of {manifest.layer} {manifest.dataset}", exc)
        return False
    return True


def failed_rules(validation) -> list[dict[str, Any]]:
    """The error-severity expectations that failed: name, rule, column, severity and counts only."""
    rules = []
    for result in validation.results:
        if result.get("success") or result.get("severity") != "error":
            continue
        rules.append({"name": str(result.get("name")), "rule": result.get("rule"), "column": result.get("column"),
                      "severity": "error", "failed_rows": _count(result.get("unexpected_count")),
                      "checked_rows": _count(result.get("element_count"))})
    return rules


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def blocked_detail(run, validation) -> dict[str, Any]:
    """The event detail of a blocked publish (module docstring): names and counts, never a value."""
    quarantine = validation.quarantine or {}
    return {
        "dataset": run.contract.dataset,
        "layer": run.layer,
        "run_id": run.run_id,
        "manifest": f"{run.report_dir}/manifest.json",
        "rules": failed_rules(validation),
        "quarantined": {"total": _count(quarantine.get("total")) or 0,
                        "by_rule": {str(k): _count(v) for k, v in (quarantine.get("by_rule") or {}).items()}},
    }


def publish_blocked(run, validation) -> bool:
    """Emit the blocked-publish event of ``run``; True when EventBridge took it."""
    lake = run.lake
    if not lake.event_source:
        return False
    detail = blocked_detail(run, validation)
    try:
        answer = _client(lake, "events").put_events(Entries=[{
            "Source": lake.event_source, "DetailType": PUBLISH_BLOCKED_DETAIL_TYPE, "Detail": json.dumps(detail)}])
        if answer.get("FailedEntryCount"):
            raise RuntimeError(str(answer["Entries"][0].get("ErrorCode") or "FailedEntry"))
    except Exception as exc:  # noqa: BLE001 - never fails the run (which stops with its own error)
        _warn(run.progress, f"event '{PUBLISH_BLOCKED_DETAIL_TYPE}' of {run.layer} {run.contract.dataset}", exc)
        return False
    return True
