"""Bronze is exactly once across restarts: a replayed batch replaces its partition, committed files are
never read again, and new files land in a new batch."""
import json

import pytest

from spark_jobs.datagen import DatagenConfig, generate
from spark_jobs.datagen.sink import write_landing
from spark_jobs.contract.model import load_contract
from spark_jobs.io import storage
from spark_jobs.jobs.checkpoint import nothing_new
from spark_jobs.jobs.layer import run_layer
from spark_jobs.lake.config import LakeConfig


@pytest.fixture
def lake(tmp_path, monkeypatch):
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TENANTLAKE_VALIDATION", "off")  # this test is about delivery, not data quality
    return LakeConfig(lake_uri=str(tmp_path / "lake"))


def _bronze_rows(spark, lake):
    return spark.read.parquet(lake.bronze("iot")).count()


def test_restart_replays_the_unfinished_batch_without_duplicating(spark, lake, tmp_path):
    data = generate(DatagenConfig(dataset="iot", records=50, batch_size=10, bad_rate=0.1, seed=1))
    write_landing(lake, "iot", data.files)
    first = run_layer(spark, lake, "iot", "bronze", progress=lambda _: None)
    assert (first["rows_in"], first["rows_out"], len(first["batches"])) == (data.raw_records, data.raw_records, 1)
    malformed = sum(1 for b in data.bad if b["kind"] == "malformed")
    assert first["malformed"] == malformed
    # datagen's malformed files are arrays cut off on their one line: no element was written before the
    # break, so the whole files are added beside the batch's records (not the batch written again).
    assert "batch 0 broken arrays added" in [s["stage"] for s in first["stages"]]

    # Crash after the sink wrote batch 0 but before Spark committed it: the commit log loses the entry.
    commits = tmp_path / "lake" / "checkpoints" / "iot" / "bronze" / "commits"
    for leftover in commits.glob("*0*"):
        leftover.unlink()
    assert not nothing_new(spark, lake, "iot", load_contract("iot").landing)  # a batch to replay: the stream runs
    replay = run_layer(spark, lake, "iot", "bronze", progress=lambda _: None)
    assert [b["batch_id"] for b in replay["batches"]] == [0]
    assert _bronze_rows(spark, lake) == data.raw_records
    assert [n for n in storage.list_dir(spark, lake.bronze("iot")) if "=" in n] == ["_batch_id=0"]

    # Nothing new: nothing read, and the stream not even started (its checkpoint is left as it was).
    assert nothing_new(spark, lake, "iot", load_contract("iot").landing)
    checkpoint = sorted(p.relative_to(tmp_path) for p in (tmp_path / "lake" / "checkpoints" / "iot").rglob("*"))
    idle = run_layer(spark, lake, "iot", "bronze", progress=lambda _: None)
    assert (idle["rows_in"], idle["batches"]) == (0, [])
    assert [s.get("stream") for s in idle["stages"] if s["stage"] == "no new landing files"] == [
        "not started: every landing file was read already"]
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "lake" / "checkpoints" / "iot").rglob("*")) == checkpoint

    # A new producer file: only it is read, in the next batch.
    extra = [{"event_id": f"x{i}", "sensor_id": "sensor-009", "event_ts": "2020-11-17T00:00:0{i}Z",
              "temperature": 20.0, "status": "ok"} for i in range(3)]
    # With it, a pretty-printed array cut off after two elements: those were written as records before the
    # break was seen, so the batch is written again without them, the file kept whole as ONE record.
    cut = json.dumps(extra[:2] + [{"event_id": "x9"}], indent=2).encode()[:-12]
    write_landing(lake, "iot", [("part-1-000000.json", json.dumps(extra).encode()), ("part-1-000001.json", cut)])
    assert not nothing_new(spark, lake, "iot", load_contract("iot").landing)
    more = run_layer(spark, lake, "iot", "bronze", progress=lambda _: None)
    assert [(b["batch_id"], b["rows"], b["malformed"]) for b in more["batches"]] == [(1, 4, 1)]
    assert "batch 1 broken arrays added" not in [s["stage"] for s in more["stages"]]
    assert _bronze_rows(spark, lake) == data.raw_records + 4
    kept = spark.read.parquet(lake.bronze("iot")).where("_source_file like '%part-1-000001.json'").collect()
    assert [(r["_raw"], r["_is_malformed"]) for r in kept] == [(cut.decode(), True)]


def test_manifest_is_written_per_run(spark, lake):
    write_landing(lake, "iot", generate(DatagenConfig(dataset="iot", records=10)).files)
    manifest = run_layer(spark, lake, "iot", "bronze", progress=lambda _: None)
    stored = json.loads(storage.read_text(spark, f"{lake.report_dir('bronze', 'iot', manifest['run_id'])}/manifest.json"))
    assert stored["status"] == "succeeded" and stored["invariant_holds"] is True and stored["published"] is True
    assert stored["rows_in"] == 10 and stored["inputs"] == [lake.landing("iot")]
    assert stored["code_version"].startswith("spark_jobs-")


def test_a_run_with_nothing_new_still_writes_its_manifest_and_report(spark, tmp_path, monkeypatch):
    """Validation on: the second bronze run finds every landing file read already, starts no stream and
    validates nothing, and still leaves a succeeded manifest and its data-quality report."""
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    lake = LakeConfig(lake_uri=str(tmp_path / "lake"))
    write_landing(lake, "iot", generate(DatagenConfig(dataset="iot", records=10)).files)
    assert run_layer(spark, lake, "iot", "bronze", progress=lambda _: None)["rows_in"] == 10
    idle = run_layer(spark, lake, "iot", "bronze", progress=lambda _: None)
    assert (idle["status"], idle["published"], idle["rows_in"], idle["validation"]) == ("succeeded", True, 0, {})
    folder = lake.report_dir("bronze", "iot", idle["run_id"])
    stored = json.loads(storage.read_text(spark, f"{folder}/manifest.json"))
    assert [s["stage"] for s in stored["stages"]][-2:] == ["no new landing files", "landing reconciled"]
    summary = json.loads(storage.read_text(spark, f"{folder}/summary.json"))
    assert (summary["run_id"], summary["layer"], summary["dataset"]) == (idle["run_id"], "bronze", "iot")
    assert summary["landing"]["versions"] == summary["landing"]["ingested"] > 0


def test_continuous_mode_ingests_then_stops_at_max_runtime(spark, lake):
    write_landing(lake, "iot", generate(DatagenConfig(dataset="iot", records=20)).files)
    manifest = run_layer(spark, lake, "iot", "bronze", continuous=True, trigger_seconds=1, max_runtime=6,
                         progress=lambda _: None)
    assert manifest["status"] == "succeeded" and manifest["rows_in"] == 20
    assert not [q for q in spark.streams.active if q.name and q.name.startswith("bronze_iot")]


def _age(folder, days: float) -> None:
    """Every file under ``folder`` modified ``days`` earlier than now."""
    import os
    import time

    moment = time.time() - days * 86_400
    for path in folder.rglob("*"):
        if path.is_file():
            os.utime(path, (moment, moment))


def test_a_name_bronze_has_read_is_never_read_again_however_old(spark, lake, tmp_path):
    """Past Spark's file-source limit (a name is forgotten 7 days before the newest file listed) and the landing
    lifecycle (30 days): a name rewritten with other bytes, and content landed again under its old name after its
    object expired, are not read again; a new name is."""
    write_landing(lake, "iot", generate(DatagenConfig(dataset="iot", records=20, batch_size=10, seed=3)).files)
    first = run_layer(spark, lake, "iot", "bronze", progress=lambda _: None)
    assert first["rows_in"] == 20
    # The checkpoint ages 40 days: its record of each file, and the files themselves.
    source_log = tmp_path / "lake" / "checkpoints" / "iot" / "bronze" / "sources" / "0"
    aged_ms = 40 * 86_400_000
    for entry in (p for p in source_log.iterdir() if not p.name.startswith(".")):
        lines = entry.read_text().splitlines()
        entries = [json.dumps({**json.loads(line), "timestamp": json.loads(line)["timestamp"] - aged_ms}) for line in lines[1:]]
        entry.write_text("\n".join([lines[0], *entries]))
        (source_log / f".{entry.name}.crc").unlink(missing_ok=True)
    landing = tmp_path / "lake" / "landing" / "iot"
    _age(landing, 40)
    names = sorted(p.name for p in landing.iterdir() if not p.name.startswith("."))
    # A new file today: Spark's file source would now forget every name older than 7 days before it.
    write_landing(lake, "iot", [("later-000000.json", json.dumps([{"event_id": "new", "sensor_id": "sensor-002",
                                                                   "event_ts": "2020-11-17T00:00:01Z"}]).encode())])
    later = run_layer(spark, lake, "iot", "bronze", progress=lambda _: None)
    assert later["rows_in"] == 1
    expired = landing / names[0]
    content = expired.read_bytes()
    expired.unlink()  # the lifecycle expired it; the same content lands again under its name today
    expired.write_bytes(content)
    (landing / names[1]).write_bytes(json.dumps([{"event_id": "rewritten", "sensor_id": "sensor-001",
                                                  "event_ts": "2020-11-17T00:00:00Z"}]).encode())  # a name rewritten
    again = run_layer(spark, lake, "iot", "bronze", progress=lambda _: None)
    assert (again["rows_in"], again["batches"]) == (0, [])
    ingested = {r[0] for r in spark.read.parquet(lake.bronze("iot")).select("_source_file").collect()}
    assert len(ingested) == len(names) + 1 and spark.read.parquet(lake.bronze("iot")).count() == 21


CSV_CONTRACT = """dataset: readings
landing: {format: csv, null_values: ["", NA]}
key: [id]
event_time: ts
schema:
  - {name: id, type: string, required: true}
  - {name: ts, type: timestamp, required: true}
  - {name: v, type: double}
"""
PARQUET_CONTRACT = CSV_CONTRACT.replace("dataset: readings", "dataset: preadings").replace(
    'landing: {format: csv, null_values: ["", NA]}', "landing: {format: parquet}")


@pytest.fixture
def contracts(tmp_path, monkeypatch):
    folder = tmp_path / "contracts"
    folder.mkdir()
    (folder / "readings.yaml").write_text(CSV_CONTRACT)
    (folder / "preadings.yaml").write_text(PARQUET_CONTRACT)
    monkeypatch.setenv("TENANTLAKE_CONTRACTS_DIR", str(folder))
    return folder


@pytest.mark.parametrize("dataset, bad_name, bad_bytes, reason", [
    ("readings", "x.csv", b"PAR1\x00\x00\x00\x00PAR1", "is a Parquet file, not CSV"),
    ("readings", "y.csv.gz", b"id,ts,v\n1,2024-01-01T00:00:00Z,1\n", "is named .gz but is not gzip data"),
    ("preadings", "z.parquet", b"id,ts,v\n", "is not a readable Parquet file"),
])
def test_a_file_not_of_the_declared_format_fails_bronze_naming_it(spark, lake, contracts, tmp_path, dataset, bad_name,
                                                                   bad_bytes, reason):
    """Nothing of the batch is written; once the file is moved out, the replayed batch ingests the rest."""
    import duckdb

    from spark_jobs.lake.failures import JobFailed

    good = tmp_path / "good"
    good.mkdir()
    if dataset == "readings":
        (good / "good.csv").write_bytes(b"id,ts,v\n1,2024-01-01T00:00:00Z,NA\n2,2024-01-01T01:00:00Z,2\n")
    else:
        duckdb.sql(f"COPY (SELECT * FROM (VALUES ('1', '2024-01-01T00:00:00Z', 1.0), ('2', '2024-01-01T01:00:00Z', NULL)) "
                   f"t(id, ts, v)) TO '{good / 'good.parquet'}' (FORMAT parquet)")
    write_landing(lake, dataset, [(p.name, p.read_bytes()) for p in good.iterdir()] + [(bad_name, bad_bytes)])
    bad_path = tmp_path / "lake" / "landing" / dataset / bad_name
    with pytest.raises(JobFailed) as failed:
        run_layer(spark, lake, dataset, "bronze", progress=lambda _: None)
    lines = str(failed.value).splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"bronze {dataset}: landing file file:"), lines
    assert f"{bad_path} {reason}" in lines[0]
    assert lines[0].endswith(f"; nothing of this batch was written: move the file out of landing/{dataset}/ and run bronze again")
    assert not storage.has_data_files(spark, lake.bronze(dataset))

    bad_path.rename(tmp_path / bad_name)
    again = run_layer(spark, lake, dataset, "bronze", progress=lambda _: None)
    assert [(b["batch_id"], b["files"], b["rows"]) for b in again["batches"]] == [(0, 1, 2)]


def test_a_batch_is_counted_by_its_own_write_and_writes_raw_without_a_dictionary(spark, lake, contracts):
    """The batch's rows, malformed rows and files come from the write's own Spark job (observed), not from a
    job reading the staged files back; ``_raw``, one record's text per row, is written without a Parquet
    dictionary, while a column of few values keeps one. An empty file adds no file to the count."""
    import glob

    import pyarrow.parquet as pq

    # The same record 40 times: with a dictionary, Parquet would keep one for _raw too.
    write_landing(lake, "readings", [
        ("a.csv", b"id,ts,v\n" + b"1,2024-01-01T00:00:00Z,NA\n" * 40 + b"2,2024-01-01T01:00:00Z,2,extra\n"),
        ("b.csv", b"id,ts,v\n3,2024-01-01T02:00:00Z,3\n"),
        ("c.csv", b""),
    ])
    manifest = run_layer(spark, lake, "readings", "bronze", progress=lambda _: None)
    assert [(b["files"], b["rows"], b["malformed"]) for b in manifest["batches"]] == [(2, 42, 1)]
    counted = [stage for stage in manifest["stages"] if stage["stage"] == "batch 0 counted"]
    # The one job left: Spark reads the staged files' schema from a footer (the counts come with the write).
    assert [stage["spark_jobs"] for stage in counted] == [1]
    files = {path: pq.ParquetFile(path).metadata for path in glob.glob(f"{lake.bronze('readings')}/_batch_id=0/*.parquet")}
    largest = max(files.values(), key=lambda meta: meta.num_rows).row_group(0)  # a.csv's records
    dictionary = {largest.column(i).path_in_schema: largest.column(i).has_dictionary_page
                  for i in range(largest.num_columns)}
    assert (dictionary["_raw"], dictionary["_source_file"]) == (False, True), dictionary


def test_a_batch_of_only_empty_files_is_counted_as_nothing(spark, lake, contracts):
    """The observed counts of a write with no rows (no task had a line) are zeros, not missing: no partition."""
    write_landing(lake, "readings", [("c.csv", b""), ("d.csv", b"")])
    manifest = run_layer(spark, lake, "readings", "bronze", progress=lambda _: None)
    assert [(b["files"], b["rows"], b["malformed"]) for b in manifest["batches"]] == [(0, 0, 0)]
    assert not storage.has_data_files(spark, lake.bronze("readings"))
