"""A layer run on a small input: every stage records its Spark jobs (and, on s3a, its S3 requests) in the
manifest, the lease is a stage of its own, and a small input is planned with adaptive execution off and one
shuffle partition, which runs fewer Spark jobs for the same rows and leaves the session as it was."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import small
from spark_jobs import cli
from spark_jobs.io import tables
from spark_jobs.jobs.layer import run_layer
from spark_jobs.lake.config import LakeConfig
from spark_jobs.runs import session

pytestmark = pytest.mark.integration
QUIET = {"progress": lambda _: None}


@pytest.fixture(scope="module")
def small_lake(spark, tmp_path_factory):
    lake_dir = tmp_path_factory.mktemp("small-inputs") / "lake"
    assert cli.main(["datagen", "--dataset", "iot", "--records", "400", "--bad-rate", "0.02", "--late-rate", "0.02",
                     "--lake-uri", str(lake_dir)]) == 0
    lake = LakeConfig(lake_uri=str(lake_dir))
    run_layer(spark, lake, "iot", "bronze", **QUIET)
    return lake


def _silver_and_gold(spark, lake) -> dict[str, dict]:
    """Silver and gold over the same bronze each time: full runs (an incremental one would find nothing new)."""
    silver = run_layer(spark, lake, "iot", "silver", full=True, **QUIET)
    gold = run_layer(spark, lake, "iot", "gold", full=True, **QUIET)
    return {"silver": silver, "gold": gold}


def _jobs(manifest: dict) -> int:
    return sum(stage.get("spark_jobs", 0) for stage in manifest["stages"])


def _content(spark, lake, layer: str, name: str) -> list[tuple]:
    return sorted(tuple(r) for r in tables.read(spark, tables.table(spark, lake, layer, name)).drop("_ingested_at",
                                                                                                     "_run_id").collect())


def test_every_stage_records_its_spark_jobs_and_belongs_to_a_benchmark_step(spark, small_lake, monkeypatch):
    monkeypatch.setenv("TENANTLAKE_VALIDATION", "off")
    runs = _silver_and_gold(spark, small_lake)
    for layer, manifest in runs.items():
        names = [stage["stage"] for stage in manifest["stages"]]
        assert names[0] == "lease taken" and names[-2:] == ["done", "lease released"], names
        assert all("spark_jobs" in stage for stage in manifest["stages"]), manifest["stages"]
        assert "s3_requests" not in manifest["stages"][0]  # a local folder: no S3 figure, not a zero
        elapsed = [stage["elapsed_seconds"] for stage in manifest["stages"]]
        assert elapsed == sorted(elapsed)
        assert [name for name in names if small.step_of(name) == "other"] == []  # bench/small.py knows each stage
        steps = small.breakdown(manifest)
        assert sum(step["spark_jobs"] for step in steps.values()) == _jobs(manifest) > 0
        # The steps' seconds telescope to the last stage's elapsed time (each is rounded to 0.01 s; compare as
        # numbers: round(1.1500000000000001, 1) and round(1.15, 1) differ).
        assert sum(step["seconds"] for step in steps.values()) == pytest.approx(elapsed[-1], abs=0.01 * len(steps))
    assert {"read + transform", "Iceberg commit", "quarantine write", "read-back"} <= set(small.breakdown(runs["silver"]))
    # The manifest written to the lake has the same stages up to the report (its own write comes after it).
    written = json.loads((Path(small_lake.report_dir("silver", "iot", runs["silver"]["run_id"])) / "manifest.json")
                         .read_text())
    assert [s["stage"] for s in written["stages"]] == [s["stage"] for s in runs["silver"]["stages"]][:-2]


def test_a_small_input_runs_fewer_spark_jobs_for_the_same_rows_and_restores_the_session(spark, small_lake,
                                                                                         monkeypatch):
    monkeypatch.setenv("TENANTLAKE_VALIDATION", "off")
    before = {key: spark.conf.get(key, None) for key in session.SMALL_INPUT_CONF}
    monkeypatch.setattr(session, "SMALL_INPUT_BYTES", 0)  # nothing is small: the session's own plan
    as_large = _silver_and_gold(spark, small_lake)
    silver_large, gold_large = _content(spark, small_lake, "silver", "iot"), _content(spark, small_lake, "gold", "iot_hourly")
    monkeypatch.undo()
    monkeypatch.setenv("TENANTLAKE_VALIDATION", "off")
    as_small = _silver_and_gold(spark, small_lake)
    listed = next(s for s in as_small["silver"]["stages"] if s["stage"] == "inputs listed")
    assert listed["small_input"] is True and 0 < listed["input_bytes"] <= session.SMALL_INPUT_BYTES
    located = next(s for s in as_small["gold"]["stages"] if s["stage"] == "silver located")
    assert located["small_input"] is True and located["input_bytes"] > 0
    assert not next(s for s in as_large["silver"]["stages"] if s["stage"] == "inputs listed")["small_input"]
    for layer in ("silver", "gold"):
        assert _jobs(as_small[layer]) < _jobs(as_large[layer]), (layer, _jobs(as_small[layer]), _jobs(as_large[layer]))
        assert {k: as_small[layer][k] for k in ("rows_in", "rows_out", "quarantined", "duplicates", "late", "output_rows")} \
            == {k: as_large[layer][k] for k in ("rows_in", "rows_out", "quarantined", "duplicates", "late", "output_rows")}
    assert _content(spark, small_lake, "silver", "iot") == silver_large
    # Averages may differ in the last bits: a sum's order follows the partitions (bench/pipeline.py compares
    # gold the same way, within 1e-9 relative).
    gold_small = _content(spark, small_lake, "gold", "iot_hourly")
    assert len(gold_small) == len(gold_large)
    for ours, theirs in zip(gold_small, gold_large):
        assert [v for v in ours if not isinstance(v, float)] == [v for v in theirs if not isinstance(v, float)]
        assert [v for v in ours if isinstance(v, float)] == pytest.approx([v for v in theirs if isinstance(v, float)],
                                                                          rel=1e-9)
    assert {key: spark.conf.get(key, None) for key in session.SMALL_INPUT_CONF} == before


def test_silver_answers_its_reparse_check_and_its_commit_check_without_a_spark_job(spark, small_lake, monkeypatch):
    """Issue 56 part 6: bronze's footers prove that no row needs parsing again (every row holds this contract's
    parse, or is a broken array's malformed row), so reading and parsing is the flagged write's one job; the
    commit is checked from its own record count, so publishing runs none."""
    monkeypatch.setenv("TENANTLAKE_VALIDATION", "off")
    silver = run_layer(spark, small_lake, "iot", "silver", full=True, **QUIET)
    jobs = {stage["stage"]: stage["spark_jobs"] for stage in silver["stages"]}
    assert (jobs["read + parsed"], jobs["published"]) == (1, 0), silver["stages"]
    assert silver["tables"]["silver"]["added_records"] == silver["rows_out"] > 0
