"""spark_jobs/jobs/landing_versions.py: landing object versions against what bronze read.

The rules on hand-made versions and log entries (no Spark), then the issue's case at small size on a folder
lake with the shared Spark session: a landing file overwritten after bronze read it is named by bronze's run,
its data-quality report, the counts table, and still after `recover` rebuilt the checkpoint. On S3 (versions,
ETags, s3a) the same is checked end to end in test_pipeline_e2e.py.
"""
from __future__ import annotations

import json
import os
import time

import pytest

from spark_jobs.io.storage import file_key
from spark_jobs.jobs.checkpoint import HandedOut
from spark_jobs.jobs.landing_versions import LandingVersion, reconcile

S = 1000  # ms


def _v(key: str, at: int, etag: str, version: str = "") -> LandingVersion:
    return LandingVersion(f"landing/iot/{key}", version or f"v{at}", at * S, etag, 10)


def _reconcile(versions, log, committed=0, content_compared=True):
    key_of = {file_key(f"s3a://lake/{v.key}"): v.key for v in versions}
    return reconcile(versions, [HandedOut(f"s3a://lake/landing/iot/{name}", at * S, batch) for name, at, batch in log],
                     committed, key_of, content_compared)


def test_every_version_is_ingested_pending_or_named_as_never_ingested():
    versions = [
        _v("a.json", 10, "A"),                       # read
        _v("b.json", 10, "B"), _v("b.json", 30, "B"),  # read, then rewritten with the same bytes
        _v("c.json", 10, "C"), _v("c.json", 30, "C2"),  # read, then overwritten: never ingested
        _v("d.json", 10, "D"), _v("d.json", 15, "D2"),  # replaced before bronze listed it: D never ingested
        _v("e.json", 40, "E"), _v("e.json", 50, "E2"),  # not read yet: E2 pending, E replaced before
        _v("f.json", 40, "F"),                       # handed out to a batch that has not committed: pending
    ]
    log = [("a.json", 10, 0), ("b.json", 10, 0), ("c.json", 10, 0), ("d.json", 15, 0), ("f.json", 40, 1),
           ("gone.json", 5, 0)]  # a file an erasure deleted since: no version, nothing to say
    result = _reconcile(versions, log, committed=0)
    assert (result.versions, result.ingested, result.same_content) == (10, 5, 1)
    assert sorted((v.key, v.version_id) for v in result.pending) == [("landing/iot/e.json", "v50"),
                                                                    ("landing/iot/f.json", "v40")]
    assert [(v.key, v.version_id, why) for v, why in result.not_ingested] == [
        ("landing/iot/c.json", "v30", "written after bronze read this name"),
        ("landing/iot/d.json", "v10", "replaced before bronze read this name"),
        ("landing/iot/e.json", "v40", "replaced before bronze read its name")]
    assert result.versions == result.ingested + len(result.pending) + len(result.not_ingested)
    summary = result.summary()
    assert (summary["not_ingested"], summary["pending"]) == (3, 2)
    assert summary["not_ingested_versions"][0] == {"key": "landing/iot/c.json", "version_id": "v30", "size": 10,
                                                   "last_modified": "1970-01-01T00:00:30Z",
                                                   "reason": "written after bronze read this name"}


def test_without_etags_a_rewrite_after_bronze_read_the_name_is_flagged():
    versions = [_v("a.json", 10, ""), _v("b.json", 30, "")]  # a folder lake: b changed after it was read
    result = _reconcile(versions, [("a.json", 10, 0), ("b.json", 10, 0)], content_compared=False)
    assert result.ingested == 1 and [why for _, why in result.not_ingested] == ["written after bronze read this name"]
    assert result.summary()["content_compared"] is False


def test_the_warning_names_the_versions_and_says_how_to_land_them(monkeypatch):
    from spark_jobs.jobs import landing_versions
    from spark_jobs.lake.config import LakeConfig

    monkeypatch.setattr(landing_versions, "MAX_NAMED", 1)
    result = _reconcile([_v("c.json", 10, "C"), _v("c.json", 30, "C2"), _v("x.json", 10, "X"),
                         _v("x.json", 31, "X2")], [("c.json", 10, 0), ("x.json", 10, 0)])
    named, fix = result.warnings("iot", LakeConfig("s3a://acme-lake", kms_key_arn="k"))
    assert named == ("2 landing object version(s) never ingested: landing/iot/c.json (version v30, written "
                     "1970-01-01T00:00:30Z): written after bronze read this name; and 1 more (`counts --json` lists them)")
    assert "aws s3api get-object --bucket acme-lake --key <key> --version-id <version>" in fix
    assert "python -m spark_jobs land --dataset iot FILE..." in fix


@pytest.mark.integration
def test_an_overwritten_landing_file_is_named_by_bronze_the_report_and_counts_even_after_recover(spark, tmp_path,
                                                                                                monkeypatch):
    """The issue's sequence at small size: datagen, bronze, datagen with another seed (refused, nothing
    written), then a writer outside the rules overwrites one file: never ingested, and said so by name."""
    from spark_jobs import cli
    from spark_jobs.jobs import report
    from spark_jobs.jobs.checkpoint import recover_checkpoint
    from spark_jobs.jobs.layer import run_layer
    from spark_jobs.lake.config import LakeConfig

    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    lake = LakeConfig(str(tmp_path / "lake"))
    datagen = ["datagen", "--dataset", "iot", "--records", "40", "--batch-size", "10", "--lake-uri", lake.lake_uri]
    assert cli.main(datagen) == 0
    with monkeypatch.context() as quiet:  # only the second run's report is read
        quiet.setenv("TENANTLAKE_VALIDATION", "off")
        first = run_layer(spark, lake, "iot", "bronze", progress=lambda _: None)
    assert first["landing"]["versions"] == first["landing"]["ingested"] == 4 and first["landing"]["not_ingested"] == 0
    assert cli.main([*datagen, "--seed", "777"]) == 2  # refused: same names, other bytes

    overwritten = tmp_path / "lake" / "landing" / "iot" / "part-0-000001.json"
    time.sleep(0.01)
    overwritten.write_text(json.dumps([{"event_id": "new-1", "sensor_id": "sensor-001", "event_ts": "2020-11-16T22:00:00Z",
                                        "temperature": 20.0, "status": "ok"}]))
    seen: list[str] = []
    second = run_layer(spark, lake, "iot", "bronze", progress=seen.append)
    assert second["rows_in"] == 0  # bronze does not read the name again ...
    assert second["landing"]["not_ingested"] == 1  # ... and says so
    assert second["landing"]["not_ingested_versions"][0]["key"] == "landing/iot/part-0-000001.json"
    warning = next(line for line in seen if "never ingested" in line)
    assert warning.startswith("[bronze iot] warning: 1 landing object version(s) never ingested: "
                              "landing/iot/part-0-000001.json (written ")
    assert warning.endswith("): written after bronze read this name")

    def counted() -> dict[str, int | None]:
        rows = report.layer_counts(spark, lake, ["iot"])
        return {row["layer"]: row["rows"] for row in rows}, report.landing_warnings(rows)

    table, warnings = counted()
    assert table["landing (object versions)"] == 4 and table["landing versions ingested"] == 3
    assert table["landing versions NOT ingested"] == 1 and table["bronze"] == 40
    assert warnings[0].startswith("warning: iot: 1 landing object version(s) never ingested: "
                                  "landing/iot/part-0-000001.json")
    assert "copy each file under a new name" in warnings[1]

    recover_checkpoint(spark, lake, "iot")  # the rebuilt log keeps the time bronze read the file
    assert counted()[0]["landing versions NOT ingested"] == 1

    # The bronze run's data-quality report has the landing section, naming the version.
    from spark_jobs.quality.report import mirror_root

    summaries = sorted((mirror_root("local") / "bronze" / "iot").glob("*/summary.json"))
    latest = json.loads(summaries[-1].read_text())
    assert latest["landing"]["not_ingested_versions"][0]["key"] == "landing/iot/part-0-000001.json"
    page = (summaries[-1].parent / "summary.html").read_text()
    assert 'id="landing-not-ingested"' in page and "landing/iot/part-0-000001.json" in page
    assert os.environ["TENANTLAKE_STATE_DIR"] == str(tmp_path / "state")
