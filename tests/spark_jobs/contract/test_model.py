import copy

import pytest

from spark_jobs.contract.model import available_datasets, load_contract, parse_contract
from spark_jobs.contract.parts import ContractError

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


def test_defaults():
    contract = parse_contract(MINIMAL)
    assert (contract.lateness_minutes, contract.allow_extra_fields, contract.gold) == (30, False, ())
    assert contract.partition_granularity == "day"
    assert parse_contract({**MINIMAL, "partition_granularity": "month"}).partition_granularity == "month"
    assert contract.column("ts").format == "yyyy-MM-dd'T'HH:mm:ss'Z'"


@pytest.mark.parametrize("change, message", [
    ({"landing": {"format": "xml"}}, "contract 'mini': landing.format: 'xml' is not one of json_array, json_lines, csv, parquet"),
    ({"key": ["nope"]}, "contract 'mini': key: 'nope' is not a schema column"),
    ({"event_time": "id"}, "contract 'mini': event_time: 'id' must be a timestamp column of the schema"),
    ({"schema": [{"name": "id", "type": "dbl"}]}, "contract 'mini': schema[0] (id).type: 'dbl' is not one of"),
    ({"gold_options": {"x": {}}}, "contract 'mini': gold_options.x: names no gold transformation listed in `gold`"),
    ({"partition_granularity": "week"}, "contract 'mini': partition_granularity: must be one of day, month, got 'week'"),
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


CSV = {**MINIMAL, "landing": {"format": "csv"}}


def test_csv_landing_defaults():
    landing = parse_contract(CSV).landing
    assert (landing.format, landing.header, landing.delimiter, landing.quote, landing.escape, landing.null_values,
            landing.encoding) == ("csv", True, ",", '"', '"', ("",), "utf-8")
    assert parse_contract(MINIMAL).landing_format == "json_lines"


def test_csv_landing_options_are_read():
    raw = {**CSV, "landing": {"format": "csv", "header": False, "delimiter": ";", "escape": "\\",
                              "null_values": ["", "NA"], "encoding": "latin-1"}}
    landing = parse_contract(raw).landing
    assert (landing.header, landing.delimiter, landing.escape, landing.null_values, landing.encoding) == (
        False, ";", "\\", ("", "NA"), "iso-8859-1")


@pytest.mark.parametrize("landing, message", [
    ({"format": "json_lines", "delimiter": ";"}, "landing.delimiter: applies to format csv only, not json_lines"),
    ({"format": "csv", "delimiter": ";;"}, "landing.delimiter: must be one character other than a line break"),
    ({"format": "csv", "delimiter": "\n"}, "landing.delimiter: must be one character other than a line break"),
    ({"format": "csv", "delimiter": '"'}, "landing.delimiter: must differ from the quote character"),
    ({"format": "csv", "escape": "x"}, "landing.escape: must be the quote ('\"') or a backslash"),
    ({"format": "csv", "null_values": "NA"}, "landing.null_values: must be a list of texts"),
    ({"format": "csv", "header": "yes"}, "landing.header: must be true or false"),
    ({"format": "csv", "encoding": "utf-16"}, "landing.encoding: 'utf-16' is not one of utf-8, iso-8859-1"),
    ({"format": "csv", "sep": ","}, "landing.sep: is not a landing option"),
])
def test_landing_option_errors(landing, message):
    with pytest.raises(ContractError) as err:
        parse_contract({**CSV, "landing": landing})
    assert str(err.value).startswith(f"contract 'mini': {message}")


def test_source_and_computed_columns():
    raw = copy.deepcopy(CSV)
    raw["schema"] = [{"name": "id", "type": "string", "required": True, "source": "ID"},
                     {"name": "src", "type": "string"}, {"name": "day", "type": "string"},
                     {"name": "ts", "type": "timestamp", "format": "yyyy-MM-dd", "computed": "concat('2024-01-', day)"}]
    contract = parse_contract(raw)
    assert contract.landing_fields == ("ID", "src", "day")
    assert contract.column("id").landing_name == "ID" and contract.column("ts").landing_name is None


@pytest.mark.parametrize("column, message", [
    ({"name": "Solar.R", "type": "double"}, "schema[4] (Solar.R).name: must match"),
    ({"name": "x", "type": "double", "source": "X", "computed": "1"}, "schema[4] (x): takes `source` or `computed`, not both"),
    ({"name": "x", "type": "double", "source": "id"}, "schema: two columns read the same landing field"),
])
def test_column_errors(column, message):
    raw = copy.deepcopy(MINIMAL)
    raw["schema"].append(column)
    with pytest.raises(ContractError) as err:
        parse_contract(raw)
    assert str(err.value).startswith(f"contract 'mini': {message}")


def test_source_field_is_optional():
    raw = copy.deepcopy(MINIMAL)
    del raw["source_field"]
    assert parse_contract(raw).source_field is None


def test_subject_keys_are_schema_columns_and_empty_declares_no_personal_data():
    assert parse_contract(MINIMAL).subject_keys is None  # not declared
    declared = parse_contract({**MINIMAL, "subject_keys": ["id"], "personal_data": ["v"], "pseudonymise_gold": True})
    assert (declared.subject_keys, declared.personal_data, declared.pseudonymise_gold) == (("id",), ("v",), True)
    assert parse_contract({**MINIMAL, "subject_keys": []}).subject_keys == ()
    assert load_contract("clickstream").subject_keys == ("user_id",)
    assert load_contract("iot").subject_keys == () and load_contract("inventory").subject_keys == ()


@pytest.mark.parametrize("change, message", [
    ({"subject_keys": ["nope"]}, "contract 'mini': subject_keys: 'nope' is not a schema column"),
    ({"subject_keys": "id"}, "contract 'mini': subject_keys: must be a list of schema column names, e.g. [user_id], or []"),
    ({"subject_keys": ["id", "id"]}, "contract 'mini': subject_keys: names a column twice"),
    ({"personal_data": ["x"]}, "contract 'mini': personal_data: 'x' is not a schema column"),
    ({"pseudonymise_gold": True}, "contract 'mini': pseudonymise_gold: needs subject_keys"),
    ({"subject_keys": [], "pseudonymise_gold": True}, "contract 'mini': pseudonymise_gold: needs subject_keys"),
    ({"subject_keys": ["id"], "pseudonymise_gold": "yes"}, "contract 'mini': pseudonymise_gold: must be true or false"),
])
def test_personal_data_fields_are_checked(change, message):
    with pytest.raises(ContractError) as err:
        parse_contract({**copy.deepcopy(MINIMAL), **change})
    assert str(err.value).startswith(message)


def test_subject_keys_may_carry_id_rules():
    from spark_jobs.contract.parts import DEFAULT_SUBJECT_ID_MIN_LENGTH, SubjectKey

    raw = copy.deepcopy(MINIMAL)
    raw["schema"].append({"name": "account", "type": "decimal(12, 2)"})
    raw["subject_keys"] = [{"column": "id", "pattern": "^u-[0-9]+$", "min_length": 3}, "account"]
    contract = parse_contract(raw)
    assert contract.subject_keys == ("id", "account") and contract.column("account").type == "decimal(12,2)"
    assert contract.subject_key("id") == SubjectKey("id", "^u-[0-9]+$", 3)
    assert contract.subject_key("account") == SubjectKey("account", None, DEFAULT_SUBJECT_ID_MIN_LENGTH) and \
        DEFAULT_SUBJECT_ID_MIN_LENGTH == 4
    assert load_contract("clickstream").subject_key("user_id").pattern is None  # user-001 is asked for, and nobody


@pytest.mark.parametrize("keys, message", [
    ([{"column": "id", "pattern": "("}], "subject_keys[0].pattern: invalid regular expression"),
    ([{"column": "id", "min_length": 0}], "subject_keys[0].min_length: must be a whole number of at least 1"),
    ([{"column": "id", "colour": 1}], "subject_keys[0].colour: is not a subject key field (known: column, pattern, min_length)"),
    ([{"column": "v"}], "subject_keys[0]: 'v' is double: a subject key is string, int, long or decimal(P,S)"),
    ([{"pattern": "x"}], "subject_keys[0]: must be a column name or {column: C, pattern: REGEX, min_length: N}"),
])
def test_bad_subject_key_rules_are_one_line(keys, message):
    with pytest.raises(ContractError) as err:
        parse_contract({**copy.deepcopy(MINIMAL), "subject_keys": keys})
    assert str(err.value).startswith(f"contract 'mini': {message}")


@pytest.mark.parametrize("kind, message", [("decimal(40,2)", "precision must be 1-38"),
                                           ("decimal(5,6)", "precision must be 1-38 and scale at most")])
def test_decimal_columns_have_a_precision_and_scale(kind, message):
    raw = copy.deepcopy(MINIMAL)
    raw["schema"].append({"name": "amount", "type": kind})
    with pytest.raises(ContractError, match=message):
        parse_contract(raw)


def test_a_personal_data_tenant_needs_declared_subject_keys():
    undeclared = parse_contract(MINIMAL)
    undeclared.check_personal_data(("internal",))  # nothing required
    for classification in (("gdpr",), ("pii",), ("internal", "gdpr", "pii")):
        with pytest.raises(ContractError) as err:
            undeclared.check_personal_data(classification)
        assert "\n" not in str(err.value) and str(err.value).startswith(
            "contract 'mini': subject_keys: is required for a tenant classified ")
    parse_contract({**MINIMAL, "subject_keys": []}).check_personal_data(("pii", "gdpr"))


def test_run_refuses_an_undeclared_contract_on_a_gdpr_lake_before_spark_starts(tmp_path, monkeypatch, capsys):
    """One line, exit 2, nothing written: the check runs before any layer (run-all checks every contract)."""
    from spark_jobs import cli

    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "mini.yaml").write_text(__import__("yaml").safe_dump(MINIMAL))
    monkeypatch.setenv("TENANTLAKE_CONTRACTS_DIR", str(tmp_path / "contracts"))
    lake = tmp_path / "lake"
    code = cli.main(["run-all", "--dataset", "iot", "--dataset", "mini", "--lake-uri", str(lake),
                     "--data-classification", "gdpr"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == ["error: contract 'mini': subject_keys: is required for a tenant classified gdpr: list "
                                 "the columns that identify a data subject, e.g. subject_keys: [user_id], or [] if "
                                 "the dataset holds no personal data"]
    assert not lake.exists()


@pytest.mark.parametrize("change, message", [
    ({"evolutoin": "strict"}, "contract 'mini': evolutoin: is not a contract key (did you mean `evolution`? known: "),
    ({"schema": [*MINIMAL["schema"], {"name": "x", "type": "int", "requird": True}]},
     "contract 'mini': schema[4] (x).requird: is not a column key (did you mean `required`? known: name, type,"),
    ({"rules": [{"name": "r", "expr": "true", "severity": "warn"}]},
     "contract 'mini': rules[0] (r).severity: is not a rule key (known: name, expr)"),
    ({"evolution": "lax"}, "contract 'mini': evolution: 'lax' is not one of strict, additive, permissive"),
    ({"lateness_minutes": "30"}, "contract 'mini': lateness_minutes: must be a whole number of minutes, at least 0, got '30'"),
    ({"subject_key_rules": []}, "contract 'mini': subject_key_rules: is not a contract key (derived from subject_keys)"),
    ({"ignored_fields": ["v"]}, "contract 'mini': ignored_fields: 'v' is the landing field of a schema column"),
    ({"schema": [*MINIMAL["schema"], {"name": "w", "type": "double", "renamed_from": "v"}]},
     "contract 'mini': schema: renamed_from 'v' is another column's name"),
    ({"schema": [*MINIMAL["schema"], {"name": "x", "type": "int", "removed": True}], "key": ["x"]},
     "contract 'mini': key: 'x' is not a schema column (it is removed)"),
])
def test_unknown_keys_typos_and_evolution_fields_are_refused_with_their_path(change, message):
    with pytest.raises(ContractError) as err:
        parse_contract({**copy.deepcopy(MINIMAL), **change})
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_evolution_defaults_to_additive_and_removed_columns_become_ignored_fields():
    assert parse_contract(MINIMAL).evolution == "additive"
    raw = copy.deepcopy(CSV)
    raw["schema"] += [{"name": "dew_point", "source": "Dew.Point", "type": "double", "removed": True},
                      {"name": "temperature", "source": "temp", "type": "double", "renamed_from": "temp"}]
    raw["ignored_fields"] = ["debug"]
    raw["evolution"] = "permissive"
    contract = parse_contract(raw)
    assert contract.column_names == ("id", "src", "ts", "v", "temperature")
    assert contract.removed_columns == ("dew_point",) and contract.ignored_fields == ("debug", "Dew.Point")
    assert contract.landing_fields == ("id", "src", "ts", "v", "temp") and contract.renames == {"temperature": "temp"}


def test_the_version_is_a_hash_of_the_content_not_of_the_text():
    version = parse_contract(MINIMAL).version
    assert version.startswith("sha256:") and len(version) == len("sha256:") + 16
    assert parse_contract(copy.deepcopy(MINIMAL)).version == version
    assert parse_contract({**MINIMAL, "lateness_minutes": 31}).version != version
    counted = [*MINIMAL["schema"], {"name": "n", "type": "int"}]
    spelled = [*MINIMAL["schema"], {"name": "n", "type": "integer"}]  # the same contract, spelled otherwise
    assert parse_contract({**MINIMAL, "schema": counted}).version == parse_contract({**MINIMAL, "schema": spelled}).version
    assert parse_contract({**MINIMAL, "schema": counted}).version != version


def test_contract_schema_prints_a_json_schema_that_takes_the_seed_contracts_and_refuses_a_typo(capsys):
    import json

    import jsonschema
    import yaml

    from spark_jobs import cli
    from spark_jobs.contract.model import CONTRACTS_DIR

    assert cli.main(["contract", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["$schema"].startswith("https://json-schema.org/") and schema["additionalProperties"] is False
    assert schema["properties"]["evolution"]["enum"] == ["strict", "additive", "permissive"]
    for dataset in ("iot", "clickstream", "inventory"):
        jsonschema.validate(yaml.safe_load((CONTRACTS_DIR / f"{dataset}.yaml").read_text()), schema)
    with pytest.raises(jsonschema.ValidationError, match="evolutoin"):
        jsonschema.validate({**MINIMAL, "evolutoin": "strict"}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**MINIMAL, "schema": [{"name": "id", "type": "dbl"}]}, schema)


def test_a_contract_file_that_is_not_yaml_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "broken.yaml").write_text("dataset: broken\nschema: [\n")
    monkeypatch.setenv("TENANTLAKE_CONTRACTS_DIR", str(tmp_path))
    with pytest.raises(ContractError, match=r"contract 'broken': \(file\): .*broken.yaml is not valid YAML: line 3"):
        load_contract("broken")


def test_trigger_and_freshness_say_when_a_dataset_runs_and_how_stale_it_may_get():
    contract = parse_contract({**MINIMAL, "trigger": {"schedule": {"cron": "cron(0 6 * * ? *)"},
                                                      "on_arrival": {}},
                               "freshness": {"max_minutes_since_publish": 90}})
    assert (contract.trigger.schedule.timezone, contract.trigger.schedule.flexible_window_minutes) == ("UTC", 0)
    assert contract.trigger.on_arrival.debounce_minutes == 10
    assert contract.freshness.max_minutes_since_publish == 90
    assert parse_contract(MINIMAL).trigger is None and parse_contract(MINIMAL).freshness is None
    # When a dataset runs is no change of its tables' contract: the version stays.
    assert contract.version == parse_contract(MINIMAL).version
    for dataset in ("iot", "clickstream", "inventory"):
        assert load_contract(dataset).trigger and load_contract(dataset).freshness


@pytest.mark.parametrize("change, message", [
    ({"trigger": {}}, "contract 'mini': trigger: names no trigger: give schedule, on_arrival or both"),
    ({"trigger": {"on_arrival": {"debounce_minutes": 7}}},
     "contract 'mini': trigger.on_arrival.debounce_minutes: must be a divisor of 60 (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, "
     "30, 60), got 7"),
    ({"trigger": {"schedule": {"cron": "every day"}}},
     "contract 'mini': trigger.schedule.cron: must be cron(...) or rate(...), got 'every day'"),
    ({"trigger": {"schedule": {"cron": "rate(1 hour)", "timezone": "Europe Dublin"}}},
     "contract 'mini': trigger.schedule.timezone: must be an IANA time zone name like UTC or Europe/Dublin, "
     "got 'Europe Dublin'"),
    ({"trigger": {"on_arival": {}}},
     "contract 'mini': trigger.on_arival: is not a trigger (schedule, on_arrival) (did you mean `on_arrival`? "
     "known: schedule, on_arrival)"),
    ({"freshness": {"max_minutes_since_publish": 20000}},
     "contract 'mini': freshness.max_minutes_since_publish: must be a whole number of minutes from 5 to 10080, "
     "got 20000"),
])
def test_trigger_and_freshness_errors_are_one_line(change, message):
    with pytest.raises(ContractError) as info:
        parse_contract({**MINIMAL, **change})
    assert str(info.value) == message
