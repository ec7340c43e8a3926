"""Data-quality hook points called by every layer job (issue 6 replaces the no-op bodies).

Call order inside a layer job (see /work/brief/INTERFACES.md section 6):
1. compute the layer's output DataFrame (and, for silver, the quarantine DataFrame);
2. ``validation = validate_layer(...)``; if ``validation.blocking``: do not publish, record
   ``validation.reason`` in the manifest, write the report, exit non-zero;
3. publish (write) the output;
4. ``publish_report(...)`` with the final manifest: writes validation JSON, summary page, data docs.
"""
from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass
class LayerValidation:
    """Outcome of validating one layer's output. status: "pass" | "warn" | "fail"."""

    status: str = "pass"
    blocking: bool = False
    reason: str = ""
    results: list[dict[str, Any]] = dataclasses.field(default_factory=list)


def validate_layer(spark: Any, *, layer: str, contract: Any, df: Any, context: dict[str, Any]) -> LayerValidation:
    """Validate ``df`` (the in-memory output the job already has) against the contract's suite for ``layer``.

    ``context`` carries at least: run_id, lake_uri, dataset, layer, and for silver ``quarantine_df``,
    for gold ``silver_count`` (referential checks). No-op until issue 6 lands.
    """
    return LayerValidation()


def publish_report(spark: Any, *, layer: str, contract: Any, validation: LayerValidation,
                   manifest: dict[str, Any], context: dict[str, Any]) -> str | None:
    """Write the per-run report next to the manifest; return its location. No-op until issue 6 lands."""
    return None
