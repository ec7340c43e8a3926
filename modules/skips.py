"""Checkov skips, recorded next to the resource they concern.

checkov's ``terraform_json`` runner (3.3.x) does not read inline skip comments, so a skip is written
into the resource's ``"//"`` comment block as ``{"checkov": {"skip": {"<check id>": "<reason>"}}}`` and
``policies/gate.py`` honours exactly those (a failed check on that resource with that id is reported
as skipped with its reason; any other failure fails the gate).
"""
from __future__ import annotations

from cdktf import TerraformResource

MAX_SKIPS = 3  # the budget for the whole module


def skip_check(resource: TerraformResource, check_id: str, reason: str) -> None:
    resource.add_override(f"//.checkov.skip.{check_id}", reason)
