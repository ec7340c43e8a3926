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
