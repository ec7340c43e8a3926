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
    ({"name_prefix": "_hidden-"}, "--name-prefix must start with a letter or digit"),
    ({"name_prefix": "a/b"}, "--name-prefix must start with a letter or digit"),
])
def test_bad_options_are_one_line_errors(change, message):
    with pytest.raises(DatagenError, match=message):
        generate(DatagenConfig(**{"dataset": "iot", **change}))


# ---- landing writes are create-only (issue 41) -------------------------------------------------------------
def _files(seed: int, prefix: str = "") -> list[tuple[str, bytes]]:
    return generate(DatagenConfig(dataset="iot", records=30, batch_size=10, seed=seed, name_prefix=prefix)).files


def _landing(lake_dir) -> dict[str, bytes]:
    folder = lake_dir / "landing" / "iot"
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_the_same_seed_again_is_already_landed_and_another_seed_under_the_same_names_is_refused(tmp_path):
    from spark_jobs.datagen.sink import LandingConflict, write_landing
    from spark_jobs.lake.config import LakeConfig

    lake = LakeConfig(str(tmp_path / "lake"))
    first = write_landing(lake, "iot", _files(1))
    assert (first.written, first.already) == (3, 0)
    landed = _landing(tmp_path / "lake")
    mtimes = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "lake" / "landing" / "iot").iterdir()}
    again = write_landing(lake, "iot", _files(1))  # what `make demo` does on every run
    assert (again.written, again.already) == (0, 3) and "3 already landed with the same content" in str(again)
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "lake" / "landing" / "iot").iterdir()} == mtimes

    other = _files(777) + [("part-0-000009.json", b"[]")]  # the case: same names, other bytes, and a new one
    with pytest.raises(LandingConflict) as refused:
        write_landing(lake, "iot", other)
    message = str(refused.value)
    assert message.startswith("datagen iot: 3 landing object(s) already exist with other content: "
                              "landing/iot/part-0-000000.json, landing/iot/part-0-000001.json, "
                              "landing/iot/part-0-000002.json; nothing was written.")
    assert "--name-prefix" in message and "\n" not in message
    assert _landing(tmp_path / "lake") == landed  # nothing written, not even the new name

    beside = write_landing(lake, "iot", _files(777, prefix="seed777-"))
    assert (beside.written, beside.already) == (3, 0)
    assert sorted(_landing(tmp_path / "lake")) == sorted(landed) + [f"seed777-part-0-00000{i}.json" for i in range(3)]


def test_on_s3_every_landing_put_is_conditional_and_a_refused_run_writes_no_version(emulator, aws_env, monkeypatch):
    import boto3

    from spark_jobs import cli

    for name, value in aws_env.items():
        monkeypatch.setenv(name, value)
    s3 = boto3.client("s3", region_name="eu-west-1")
    bucket = "tenantlake-datagen-lake"
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    key_arn = boto3.client("kms", region_name="eu-west-1").create_key()["KeyMetadata"]["Arn"]
    lake = ["--lake-uri", f"s3a://{bucket}", "--kms-key-arn", key_arn, "--s3-endpoint", emulator.endpoint]
    datagen = ["datagen", "--dataset", "iot", "--records", "30", *lake]

    def versions() -> dict[str, int]:
        found: dict[str, int] = {}
        for item in s3.list_object_versions(Bucket=bucket, Prefix="landing/iot/").get("Versions", []):
            found[item["Key"]] = found.get(item["Key"], 0) + 1
        return found

    assert cli.main(datagen) == 0
    assert cli.main(datagen) == 0  # same seed: already there, no new version
    assert versions() == {f"landing/iot/part-0-00000{i}.json": 1 for i in range(3)}
    assert cli.main([*datagen, "--seed", "777"]) == 2
    assert versions() == {f"landing/iot/part-0-00000{i}.json": 1 for i in range(3)}
    assert cli.main([*datagen, "--seed", "777", "--name-prefix", "seed777-"]) == 0
    assert len(versions()) == 6 and set(versions().values()) == {1}
