import copy

import pytest

from spark_jobs.contract import ContractError, available_datasets, load_contract, parse_contract

MINIMAL = {
    "dataset": "mini", "landing": {"format": "json_lines"}, "source_field": "src", "key": ["id"],
    "event_time": "ts",
    "schema": [{"name": "id", "type": "string", "required": True}, {"name": "src", "type": "string"},
               {"name": "ts", "type": "timestamp"}, {"name": "v", "type": "double", "min": 0}],
}


def test_the_three_seed_contracts_load():
    assert {"iot", "clickstream", "inventory"} <= set(available_datasets())
    iot = load_contract("iot")
    assert (iot.landing_format, iot.key, iot.event_time, iot.gold) == ("json_array", ("event_id",), "event_ts", ("iot_hourly",))
    click = load_contract("clickstream")
    assert click.column_names == ("timestamp", "event", "user_id", "site_id", "url", "on_site_seconds", "viewed_percent")
    assert click.landing_format == "json_lines"
    assert load_contract("inventory").gold == ("inventory_org_usage", "inventory_compliance")


def test_rule_names_follow_the_shared_convention():
    names = load_contract("iot").rule_names()
    assert names[0] == "malformed_record"
    assert {"event_id_required", "sensor_id_regex", "event_ts_type", "temperature_range", "status_allowed",
            "unknown_fields", "fault_has_no_full_battery"} <= set(names)
    assert "event_id_type" not in names  # strings have no type rule


def test_defaults():
    contract = parse_contract(MINIMAL)
    assert (contract.lateness_minutes, contract.allow_extra_fields, contract.gold) == (30, False, ())
    assert contract.column("ts").format == "yyyy-MM-dd'T'HH:mm:ss'Z'"


@pytest.mark.parametrize("change, message", [
    ({"landing": {"format": "xml"}}, "contract 'mini': landing.format: 'xml' is not one of json_array, json_lines, csv, parquet"),
    ({"key": ["nope"]}, "contract 'mini': key: 'nope' is not a schema column"),
    ({"event_time": "id"}, "contract 'mini': event_time: 'id' must be a timestamp column of the schema"),
    ({"schema": [{"name": "id", "type": "dbl"}]}, "contract 'mini': schema[0] (id).type: 'dbl' is not one of"),
    ({"gold_options": {"x": {}}}, "contract 'mini': gold_options.x: names no gold transformation listed in `gold`"),
])
def test_errors_name_the_dataset_field_and_rule(change, message):
    raw = {**copy.deepcopy(MINIMAL), **change}
    with pytest.raises(ContractError) as err:
        parse_contract(raw)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_unknown_dataset_lists_the_known_ones():
    with pytest.raises(ContractError, match="no contract file nope.yaml; known datasets: .*iot"):
        load_contract("nope")
