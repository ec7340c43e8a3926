"""Severity gating: which failures block publishing, the run status, and the job's exit code.

- an ``error``-severity expectation that fails -> status ``fail``, blocking: the layer's output is not
  published (the partition stays unpublished) and the reason names the failing expectations;
- only ``warn``-severity failures -> status ``warn``, published;
- nothing failed -> ``pass``;
- validation switched off (``TENANTLAKE_VALIDATION=off``) -> ``skipped``: nothing was checked, so never
  ``pass``; it exits 0 like ``pass`` and ranks below it.
An expectation that raised inside GX counts as failed with its own severity.
"""
from __future__ import annotations

from typing import Any, Iterable

STATUSES = ("skipped", "pass", "warn", "fail")  # in rank order: worst last

# Exit codes of `python -m spark_jobs run|run-all` (spark_jobs/quality/README.md "Data quality"). 1, 2 and 3 stay the CLI's
# "job failed", "usage error" and "counts invariant violated"; 4 is the CLI's "validation blocked a
# publish"; warn gets its own code so CI can tell the three data-quality outcomes apart.
EXIT_PASS = 0
EXIT_FAIL = 4
EXIT_WARN = 5
EXIT_CODES = {"skipped": EXIT_PASS, "pass": EXIT_PASS, "warn": EXIT_WARN, "fail": EXIT_FAIL}


# The quarantine's rules named in a reason, most rows first; the fields named per rule.
MAX_RULES_NAMED = 5
MAX_FIELDS_NAMED = 5


def gate(results: Iterable[dict[str, Any]], quarantine: dict[str, Any] | None = None,
         rule_fields: dict[str, list[str]] | None = None) -> tuple[str, bool, str]:
    """Return ``(status, blocking, reason)`` for a layer's expectation results. ``quarantine``: the run's
    quarantine summary (``{"total", "by_rule"}``, silver) and ``rule_fields``: per rule, the fields it
    failed on (``{"unknown_fields": ["dewp"]}``); a failing reason then says what the quarantine holds."""
    failed = [r for r in results if not r.get("success")]
    errors = [r for r in failed if r.get("severity", "error") == "error"]
    warnings = [r for r in failed if r.get("severity") == "warn"]
    quarantined = quarantine_text(quarantine, rule_fields)
    if errors:
        return "fail", True, "error-severity expectations failed: " + ", ".join(_describe(r) for r in errors) + quarantined
    if warnings:
        return "warn", False, "warn-severity expectations failed: " + ", ".join(_describe(r) for r in warnings) + quarantined
    return "pass", False, ""


def quarantine_text(quarantine: dict[str, Any] | None, rule_fields: dict[str, list[str]] | None = None) -> str:
    """``; quarantined: 26,115 rows failed unknown_fields (dewp), 3 rows failed temp_range`` ("" when the run
    quarantined nothing): each rule with its rows (a row may fail several rules) and, where known, the fields."""
    by_rule = dict((quarantine or {}).get("by_rule") or {})
    if not by_rule:
        return ""
    ranked = sorted(by_rule.items(), key=lambda item: (-int(item[1]), item[0]))
    parts = []
    for rule, rows in ranked[:MAX_RULES_NAMED]:
        fields = sorted((rule_fields or {}).get(rule) or [])
        named = ", ".join(fields[:MAX_FIELDS_NAMED]) + (f", +{len(fields) - MAX_FIELDS_NAMED} more"
                                                        if len(fields) > MAX_FIELDS_NAMED else "")
        parts.append(f"{int(rows):,} rows failed {rule}" + (f" ({named})" if fields else ""))
    if len(ranked) > MAX_RULES_NAMED:
        parts.append(f"{len(ranked) - MAX_RULES_NAMED} more rules")
    total = int((quarantine or {}).get("total") or 0)
    return f"; quarantined {total:,} rows: " + ", ".join(parts)


def _describe(result: dict[str, Any]) -> str:
    if result.get("exception"):
        return f"{result['name']} (raised: {str(result['exception']).splitlines()[0][:120]})"
    if result.get("unexpected_count") is not None:
        element_count = result.get("element_count")
        of = f"{element_count:,}" if isinstance(element_count, int) else element_count
        return f"{result['name']} ({result['unexpected_count']:,} unexpected of {of})"
    if result.get("name") == "row_count" and result.get("observed_value") == 0:
        return "row_count (no row left to publish)"
    return f"{result['name']} (observed {result.get('observed_value')})"


def worst(statuses: Iterable[str]) -> str:
    """The worst of several statuses (a run-all over datasets and layers): fail > warn > pass > skipped."""
    ranked = [STATUSES.index(s) for s in statuses if s in STATUSES]
    return STATUSES[max(ranked)] if ranked else "pass"


def exit_code(statuses: Iterable[str] | str, *, allow_warn: bool = False) -> int:
    """Exit code for one or several statuses: 0 pass or skipped, 5 warn (0 with ``allow_warn``), 4 fail."""
    status = worst([statuses] if isinstance(statuses, str) else statuses)
    if status == "warn" and allow_warn:
        return EXIT_PASS
    return EXIT_CODES[status]
