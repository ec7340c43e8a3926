"""Suite generation from contracts: every schema property yields the right GX expectation and rule name."""
from __future__ import annotations

import datetime as dt

import pytest

from spark_jobs.quality import suites
from spark_jobs.quality.suites import SuiteError, build_specs

NOW = dt.datetime(2026, 11, 21, 12, 0, 0)


def _by_name(specs):
    return {spec.name: spec for spec in specs}


def test_silver_suite_derives_every_schema_check(contract):
    specs = _by_name(build_specs(contract, "silver", now=NOW))
    assert specs["event_id_required"].expectation == "expect_column_values_to_not_be_null"
    assert specs["event_id_required"].rule == "event_id_required"
    assert specs["key_unique"].expectation == "expect_column_values_to_be_unique"
    assert specs["key_unique"].kwargs == {"column": "event_id"}
    assert specs["temperature_type"].kwargs == {"column": "temperature", "type_": "DoubleType"}
    assert specs["temperature_type"].rule == "temperature_type"
    assert specs["sensor_id_type"].rule == ""  # strings never fail a cast, so no quarantine rule to link
    assert specs["temperature_range"].expectation == "expect_column_values_to_be_between"
    assert specs["temperature_range"].kwargs == {"column": "temperature", "min_value": -40, "max_value": 85}
    assert specs["status_allowed"].kwargs == {"column": "status", "value_set": ["ok", "warn", "fault"]}
    assert specs["sensor_id_regex"].kwargs == {"column": "sensor_id", "regex": "^sensor-[0-9]{3}$"}
    assert specs["sensor_id_regex"].rule == "sensor_id_regex"
    freshness = specs["event_ts_freshness"]
    assert freshness.expectation == "expect_column_max_to_be_between"
    assert freshness.severity == "warn"
    assert freshness.kwargs["min_value"] == NOW - dt.timedelta(hours=suites.DEFAULT_FRESHNESS_HOURS)
    rule = specs["fault_has_no_full_battery"]
    assert rule.expectation == "unexpected_rows_expectation"
    assert "NOT (NOT (status = 'fault' AND temperature > 80))" in rule.kwargs["unexpected_rows_query"]
    assert all(s.severity == "error" for n, s in specs.items() if n != "event_ts_freshness")
    assert "temperature_required" not in specs  # not required, not a key column


def test_compound_key_uses_compound_uniqueness(contract):
    contract["key"] = ["sensor_id", "event_ts"]
    specs = _by_name(build_specs(contract, "silver", now=NOW))
    assert specs["key_unique"].expectation == "expect_compound_columns_to_be_unique"
    assert specs["key_unique"].kwargs == {"column_list": ["sensor_id", "event_ts"]}


def test_contract_entries_add_expectations_and_override_severity_and_mostly(contract):
    contract["expectations"]["silver"] = [
        {"expectation": "expect_column_mean_to_be_between", "kwargs": {"column": "temperature", "min_value": 0,
                                                                       "max_value": 40}, "severity": "warn"},
        {"name": "sensor_id_regex", "severity": "warn", "mostly": 0.9},
    ]
    specs = _by_name(build_specs(contract, "silver", now=NOW))
    mean = specs["column_mean_to_be_between:temperature"]
    assert (mean.severity, mean.source, mean.mostly) == ("warn", "contract", None)
    assert (specs["sensor_id_regex"].severity, specs["sensor_id_regex"].mostly) == ("warn", 0.9)


@pytest.mark.parametrize("entry, message", [
    ({"expectation": "expect_column_values_to_not_be_null", "kwargs": {"column": "x"}, "severity": "fatal"},
     "severity must be one of error, warn"),
    ({"expectation": "expect_column_values_to_not_be_null", "kwargs": {"column": "x"}, "mostly": 1.5},
     "mostly must be a number in (0, 1]"),
    ({"expectation": "not_an_expectation"}, "must be a GX expectation name"),
    ({"name": "no_such_check", "severity": "warn"}, "'no_such_check' overrides no derived expectation"),
])
def test_bad_contract_entries_fail_with_one_line_naming_the_entry(contract, entry, message):
    contract["expectations"]["silver"] = [entry]
    with pytest.raises(SuiteError) as err:
        build_specs(contract, "silver", now=NOW)
    assert message in str(err.value)
    assert "dataset 'iot'" in str(err.value) and "\n" not in str(err.value)


def test_bronze_suite_checks_structure_metadata_and_malformed_rate(contract):
    columns = ["_raw", "_is_malformed", "_source_file", "_record_index", "_ingested_at", "_batch_id"]
    specs = _by_name(build_specs(contract, "bronze", columns=columns))
    for meta in suites.BRONZE_METADATA_COLUMNS:
        assert specs[f"{meta}_present"].expectation == "expect_column_values_to_not_be_null"
    malformed = specs["malformed_rate"]
    assert malformed.kwargs == {"column": "_is_malformed", "value_set": [False]}
    assert (malformed.severity, malformed.rule) == ("warn", "malformed_record")
    assert malformed.mostly == pytest.approx(1 - suites.DEFAULT_MAX_MALFORMED_RATE)
    contract["max_malformed_rate"] = 0.2
    assert _by_name(build_specs(contract, "bronze", columns=columns))["malformed_rate"].mostly == pytest.approx(0.8)
    # A missing metadata column is a structural failure, not a silent skip.
    specs = _by_name(build_specs(contract, "bronze", columns=["_raw"]))
    assert specs["_ingested_at_present"].expectation == "expect_column_to_exist"


def test_gold_suite_checks_counts_aggregates_and_silver_reference(contract):
    columns = ["sensor_id", "event_hour", "reading_count", "temperature_min", "temperature_avg", "temperature_max",
               "avg_humidity", "min_humidity", "max_humidity", "battery_min"]
    specs = _by_name(build_specs(contract, "gold", columns=columns, context={"silver_count": 500}))
    assert specs["row_count"].kwargs == {"min_value": 1, "max_value": 500}
    assert specs["covers_every_silver_row"].kwargs == {"column": "reading_count", "min_value": 500, "max_value": 500}
    below = specs["temperature_avg_not_below_min"].kwargs
    assert (below["column_A"], below["column_B"], below["or_equal"]) == ("temperature_avg", "temperature_min", True)
    above = specs["temperature_avg_not_above_max"].kwargs
    assert (above["column_A"], above["column_B"]) == ("temperature_max", "temperature_avg")
    assert "avg_humidity_not_below_min" in specs  # avg_x / min_x / max_x naming works too
    assert not any(name.startswith("battery") for name in specs)  # no avg for battery: nothing to compare
    no_count = _by_name(build_specs(contract, "gold", columns=["org_id", "rule"], context={"silver_count": 5}))
    assert no_count["row_count"].kwargs == {"min_value": 0} and "covers_every_silver_row" not in no_count


def test_unknown_layer_is_rejected(contract):
    with pytest.raises(SuiteError, match="layer must be one of bronze, silver, gold"):
        build_specs(contract, "platinum")


def test_every_spec_becomes_a_gx_expectation_with_severity_and_rule_meta(contract):
    from spark_jobs.quality.runner import to_gx_expectation

    contract["key"] = ["sensor_id", "event_ts"]
    specs = build_specs(contract, "silver", now=NOW) + build_specs(
        contract, "gold", columns=["reading_count", "t_min", "t_avg", "t_max"], context={"silver_count": 3})
    for spec in specs:
        gx_expectation = to_gx_expectation(spec)
        assert gx_expectation.meta == {"name": spec.name, "rule": spec.rule, "severity": spec.severity,
                                       "source": spec.source}
        assert gx_expectation.severity.value == ("critical" if spec.severity == "error" else "warning")


def test_readme_data_quality_numbers_match_the_code():
    from pathlib import Path

    from spark_jobs.quality import gating, index

    section = (Path(__file__).resolve().parents[3] / "spark_jobs" / "quality" / "README.md").read_text()
    assert suites.DEFAULT_ROW_MOSTLY == 0.99 and "(default **0.99**" in section
    assert suites.DEFAULT_FRESHNESS_HOURS == 48 and "at most 48 h old" in section
    assert suites.DEFAULT_MAX_MALFORMED_RATE == 0.01 and "false for at least 99 % of rows" in section
    assert index.TREND_RUNS == 10 and "last 10 runs" in section
    assert (gating.EXIT_PASS, gating.EXIT_FAIL, gating.EXIT_WARN) == (0, 4, 5)
    assert "`0` pass" in section and "`4` fail" in section and "`5` warn" in section
    assert "make dq-report TENANT=acme" in section


def test_contract_sets_the_malformed_rate_threshold(contract):
    contract["expectations"]["bronze"] = [{"name": "malformed_rate", "mostly": 0.95}]
    specs = _by_name(build_specs(contract, "bronze", columns=["_raw", "_is_malformed"]))
    assert (specs["malformed_rate"].mostly, specs["malformed_rate"].severity) == (0.95, "warn")


def test_gold_uses_the_modules_reconcile_column(contract):
    columns = ["org_id", "host_count", "snapshot_count", "count"]
    specs = _by_name(build_specs(contract, "gold", columns=columns,
                                 context={"silver_count": 9, "count_column": "snapshot_count"}))
    assert specs["covers_every_silver_row"].kwargs["column"] == "snapshot_count"
    none = _by_name(build_specs(contract, "gold", columns=columns, context={"silver_count": 9, "count_column": None}))
    assert "covers_every_silver_row" not in none and none["row_count"].kwargs == {"min_value": 0}
