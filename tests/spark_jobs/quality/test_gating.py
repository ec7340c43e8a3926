"""Severity gating: statuses, blocking and exit codes, from expectation results."""
from __future__ import annotations

from spark_jobs.quality import gating


def _result(name, success, severity="error", unexpected=None):
    return {"name": name, "success": success, "severity": severity, "unexpected_count": unexpected,
            "element_count": 10, "observed_value": None}


def test_error_failure_blocks_and_names_the_expectation():
    status, blocking, reason = gating.gate([_result("a", True), _result("sensor_id_regex", False, unexpected=3),
                                            _result("w", False, "warn")])
    assert (status, blocking) == ("fail", True)
    assert reason == "error-severity expectations failed: sensor_id_regex (3 unexpected of 10)"


def test_warn_failure_reports_without_blocking():
    status, blocking, reason = gating.gate([_result("a", True), _result("event_ts_freshness", False, "warn")])
    assert (status, blocking) == ("warn", False)
    assert reason.startswith("warn-severity expectations failed: event_ts_freshness")


def test_all_passing_is_pass():
    assert gating.gate([_result("a", True)]) == ("pass", False, "")


def test_exit_codes_distinguish_pass_warn_fail():
    assert (gating.EXIT_PASS, gating.EXIT_WARN, gating.EXIT_FAIL) == (0, 5, 4)
    assert gating.exit_code("pass") == 0
    assert gating.exit_code(["pass", "warn"]) == 5
    assert gating.exit_code(["warn", "fail", "pass"]) == 4
    assert gating.exit_code("warn", allow_warn=True) == 0
    assert gating.exit_code("fail", allow_warn=True) == 4
    assert gating.worst([]) == "pass"


def test_validation_switched_off_is_skipped_never_pass():
    assert gating.worst(["skipped"]) == "skipped"
    assert gating.worst(["skipped", "pass"]) == "pass"
    assert gating.worst(["skipped", "warn"]) == "warn"
    assert gating.exit_code("skipped") == 0 and gating.exit_code(["skipped", "fail"]) == 4


def test_a_blocked_publish_names_each_quarantine_rule_with_its_count_and_fields():
    """The issue's case: a removed column's landing field made every row fail unknown_fields; the reason says
    which rule, how many rows and which field, never a value."""
    results = [{"name": "row_count", "success": False, "severity": "error", "observed_value": 0},
               _result("temp_range", True)]
    quarantine = {"total": 26115, "by_rule": {"unknown_fields": 26115, "temp_range": 12}}
    status, blocking, reason = gating.gate(results, quarantine, {"unknown_fields": ["dewp"]})
    assert (status, blocking) == ("fail", True)
    assert reason == ("error-severity expectations failed: row_count (no row left to publish); quarantined 26,115 rows: "
                      "26,115 rows failed unknown_fields (dewp), 12 rows failed temp_range")
    many = {f"rule_{i}": 10 - i for i in range(7)}
    text = gating.quarantine_text({"total": 40, "by_rule": many}, {"rule_0": [f"f{i}" for i in range(7)]})
    assert text.startswith("; quarantined 40 rows: 10 rows failed rule_0 (f0, f1, f2, f3, f4, +2 more), 9 rows")
    assert text.endswith(", 2 more rules") and gating.quarantine_text(None) == gating.quarantine_text({"by_rule": {}}) == ""
