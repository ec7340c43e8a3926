import json

import pytest

from spark_jobs.datagen import BAD_KINDS, DatagenConfig, generate
from spark_jobs.datagen.generate import DatagenError


@pytest.mark.parametrize("dataset", ["iot", "clickstream", "inventory"])
def test_same_seed_same_bytes_and_the_truth_adds_up(dataset):
    config = DatagenConfig(dataset=dataset, records=400, batch_size=10, bad_rate=0.2, late_rate=0.05, seed=7)
    first, second = generate(config), generate(config)
    assert first.files == second.files
    assert generate(DatagenConfig(dataset=dataset, records=400, seed=8)).files != first.files
    assert first.raw_records == 400
    assert first.raw_records == len(first.valid) + len(first.bad) + first.duplicates
    assert {b["kind"] for b in first.bad} | ({"duplicate"} if first.duplicates else set()) == set(BAD_KINDS)
    assert first.late > 0


def test_iot_files_are_json_arrays_of_batch_size_records():
    data = generate(DatagenConfig(dataset="iot", records=95, batch_size=10))
    bodies = [json.loads(body) for _, body in data.files]
    assert [len(b) for b in bodies] == [10] * 9 + [5]
    assert set(bodies[0][0]) == {"event_id", "sensor_id", "event_ts", "temperature", "humidity", "battery", "status"}


def test_clickstream_lines_have_exactly_the_event_shape():
    data = generate(DatagenConfig(dataset="clickstream", records=20, batch_size=10))
    first = json.loads(data.files[0][1].decode().splitlines()[0])
    assert list(first) == ["timestamp", "event", "user_id", "site_id", "url", "on_site_seconds", "viewed_percent"]
    assert first["timestamp"] == "2020-11-16 22:00:00"


def test_malformed_json_array_input_is_a_truncated_file():
    data = generate(DatagenConfig(dataset="iot", records=300, bad_rate=0.5, seed=3))
    corrupt = {b["source_file"] for b in data.bad if b["kind"] == "malformed"}
    assert corrupt
    for name, body in data.files:
        if name in corrupt:
            with pytest.raises(ValueError):
                json.loads(body)


@pytest.mark.parametrize("change, message", [
    ({"dataset": "weather"}, "--dataset 'weather' has no generator"),
    ({"bad_rate": 1.5}, "--bad-rate must be between 0 and 1"),
    ({"records": 0}, "--records must be at least 1"),
    ({"start": "yesterday"}, "--start 'yesterday' is not YYYY-MM-DDTHH:MM:SSZ"),
])
def test_bad_options_are_one_line_errors(change, message):
    with pytest.raises(DatagenError, match=message):
        generate(DatagenConfig(**{"dataset": "iot", **change}))
