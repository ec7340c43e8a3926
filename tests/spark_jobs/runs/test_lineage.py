"""spark_jobs/runs/lineage.py: START and COMPLETE/FAIL events of real layer runs on a folder lake, valid for the
client's model of the OpenLineage spec; a failed run emits FAIL; an unreachable endpoint is a warning line.
The landing -> bronze -> silver -> gold graph of a whole run-all on the emulator is checked in
tests/spark_jobs/test_pipeline_e2e.py."""
from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest

from spark_jobs.lake.config import LakeConfig
from spark_jobs.runs import lineage
from tests.spark_jobs.runs.lineage_events import validate


def events_in(lake_root: Path) -> list[dict]:
    files = sorted((lake_root / "reports" / "lineage").rglob("*.jsonl"))
    return [json.loads(line) for path in files for line in path.read_text().splitlines() if line.strip()]


def test_a_failed_run_emits_start_then_fail_with_its_error(spark, tmp_path, monkeypatch):
    from spark_jobs.jobs.layer import run_layer
    from spark_jobs.lake.failures import JobFailed

    for name in ("OPENLINEAGE_URL", "OPENLINEAGE_CONFIG", "OPENLINEAGE_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    lake = LakeConfig(lake_uri=str(tmp_path / "lake"))
    with pytest.raises(JobFailed, match="no landing files"):
        run_layer(spark, lake, "iot", "bronze", progress=lambda line: None)
    events = events_in(tmp_path / "lake")
    assert [e["eventType"] for e in events] == ["START", "FAIL"]
    for event in events:
        validate(event)
    start, fail = events
    assert start["run"]["runId"] == fail["run"]["runId"]
    assert fail["job"] == {**fail["job"], "namespace": f"tenantlake/{(tmp_path / 'lake').as_posix().strip('/').replace('/', '_')}",
                           "name": "bronze.iot"}
    assert "no landing files" in fail["run"]["facets"]["errorMessage"]["message"]
    assert fail["job"]["facets"]["sourceCodeLocation"]["version"].startswith("spark_jobs-")
    assert [d["name"] for d in start["inputs"]] == [f"{(tmp_path / 'lake' / 'landing' / 'iot').as_posix()}"]
    assert fail["outputs"] == []  # nothing was published


def test_a_run_emits_complete_with_schema_counts_quality_and_code_version(spark, tmp_path, monkeypatch):
    """Bronze then silver of a small iot landing on a folder lake: COMPLETE events carry what the manifests say."""
    from spark_jobs.datagen import DatagenConfig, generate
    from spark_jobs.datagen.sink import write_landing
    from spark_jobs.jobs.layer import run_layer

    monkeypatch.delenv("OPENLINEAGE_URL", raising=False)
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    lake = LakeConfig(lake_uri=str(tmp_path / "lake"))
    write_landing(lake, "iot", generate(DatagenConfig(dataset="iot", records=60, sources=2, batch_size=20)).files)
    manifests = {layer: run_layer(spark, lake, "iot", layer, progress=lambda line: None) for layer in ("bronze", "silver")}
    events = events_in(tmp_path / "lake")
    for event in events:
        validate(event)
    complete = {e["job"]["name"]: e for e in events if e["eventType"] == "COMPLETE"}
    assert sorted(complete) == ["bronze.iot", "silver.iot"]
    silver = complete["silver.iot"]
    assert silver["job"]["facets"]["sourceCodeLocation"]["version"] == manifests["silver"]["code_version"]
    assert [d["name"].rsplit("/", 2)[-2:] for d in silver["inputs"]] == [["bronze", "iot"]]
    assert silver["inputs"][0]["inputFacets"]["dataQualityMetrics"]["rowCount"] == manifests["silver"]["rows_in"]
    table = next(d for d in silver["outputs"] if d["name"].endswith("/silver/iot"))
    assert [f["name"] for f in table["facets"]["schema"]["fields"]] == [c[0] for c in manifests["silver"]["tables"]["silver"]["columns"]]
    assert table["outputFacets"]["outputStatistics"]["rowCount"] == manifests["silver"]["rows_out"]
    assert table["facets"]["symlinks"]["identifiers"][0]["name"] == "silver.iot"
    quality = table["facets"]["tenantlake_dataQuality"]
    assert quality["status"] == manifests["silver"]["validation"]["silver"]["status"] and quality["assertions"]
    bronze = complete["bronze.iot"]["outputs"][0]
    assert bronze["outputFacets"]["outputStatistics"]["rowCount"] == manifests["bronze"]["rows_out"] == 60
    assert bronze["facets"]["schema"]["fields"][0]["name"] == "sensor_id"  # the contract's source field first
    # Bronze as it is: the parsed fields, their unknown names and parse id too (transforms.bronze.bronze_schema).
    bronze_fields = {f["name"]: f["type"] for f in bronze["facets"]["schema"]["fields"]}
    assert {"_raw", "_fields", "_unknown_fields", "_fields_id"} <= set(bronze_fields) and "_header" not in bronze_fields
    assert bronze_fields["_fields"].startswith("struct<event_id:string,") and bronze_fields["_fields_id"] == "int"
    # The contract's version on every run event, and the table's schema id on its dataset.
    for event in complete.values():
        assert event["run"]["facets"]["tenantlake_contract"]["version"] == manifests["silver"]["contract_version"]
    assert table["facets"]["tenantlake_icebergTable"] == {
        **table["facets"]["tenantlake_icebergTable"], "schemaId": manifests["silver"]["tables"]["silver"]["schema_id"],
        "snapshotId": manifests["silver"]["tables"]["silver"]["snapshot_id"]}
    assert manifests["silver"]["contract_version"].startswith("sha256:")
    # Each event is one SSE-KMS object of its own on S3; here, one file per event.
    assert len(list((tmp_path / "lake" / "reports" / "lineage").rglob("*.jsonl"))) == len(events) == 4


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_endpoint_is_one_warning_line_and_the_run_goes_on(monkeypatch):
    monkeypatch.setenv("OPENLINEAGE_URL", f"http://127.0.0.1:{_closed_port()}")
    lake = LakeConfig(lake_uri="s3a://acme-eu-west-1-lake")
    event = lineage._run_event("START", lake, "bronze.iot", "20261126T100000Z-0000aaaa", code_version="spark_jobs-0+x")
    lines: list[str] = []
    started = time.monotonic()
    lineage.emit(None, lake, [event], lines.append)
    assert time.monotonic() - started < 20
    assert len(lines) == 1 and lines[0].startswith("[lineage] warning: START event of bronze.iot not sent (http ")
    # The client's constructor writes OPENLINEAGE__TRANSPORT__* variables for OPENLINEAGE_URL; they must not
    # outlive the call, or every later run in this process would send to them (the lake's default lost).
    assert not [name for name in os.environ if name.startswith("OPENLINEAGE__")]
    monkeypatch.delenv("OPENLINEAGE_URL")
    assert lineage.destination() == "lake"


def test_disabled_sends_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENLINEAGE_DISABLED", "true")
    lake = LakeConfig(lake_uri=str(tmp_path / "lake"))
    event = lineage._run_event("START", lake, "bronze.iot", "20261126T100000Z-0000aaaa", code_version="v")
    lineage.emit(None, lake, [event], print)
    assert not (tmp_path / "lake").exists()


def test_erasure_events_name_the_tables_changed_and_nothing_of_the_request():
    lake = LakeConfig(lake_uri="s3a://acme-eu-west-1-lake", glue_databases=(("gold", "acme_gold"), ("silver", "acme_silver")))
    receipt = {"request_id": "er-5f1c", "subjects": [{"column": "user_id", "hash": "h"}],
               "datasets": {"clickstream": {"bronze": {"partitions_rewritten": 1, "rows_removed": 3},
                                           "quarantine": {"partitions_rewritten": 0, "rows_removed": 0},
                                           "silver": {"rows_deleted": 2}, "landing": {"objects_deleted": 0},
                                           "gold": {"event_dates_recomputed": ["2020-11-16"]}}}}
    outputs = lineage.erasure_outputs(lake, receipt)
    event = lineage._run_event("COMPLETE", lake, "erase", "20261126T100000Z-0000aaaa", code_version="v", outputs=outputs)
    from openlineage.client.serde import Serde

    text = Serde.to_json(event)
    validate(json.loads(text))
    assert sorted(d.name for d in outputs) == ["bronze/clickstream", "gold/clickstream_site_hourly",
                                               "gold/clickstream_user_sessions", "silver/clickstream"]
    assert "er-5f1c" not in text and "user_id" not in text and '"h"' not in text
