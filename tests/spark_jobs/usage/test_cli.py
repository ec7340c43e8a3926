"""``python -m spark_jobs usage`` on a folder lake: the default month, the table, --json, and one-line refusals."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from spark_jobs import cli
from spark_jobs.runs.manifest import RunManifest


@pytest.fixture
def folder_lake(tmp_path, monkeypatch):
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    lake = tmp_path / "lake"
    run_id = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-0000abcd"
    manifest = RunManifest(run_id=run_id, dataset="iot", layer="silver", lake_uri=str(lake), started_at="x",
                           code_version="v", status="succeeded", duration_seconds=12.0, rows_in=10, rows_out=9)
    (lake / "reports/silver/iot" / run_id).mkdir(parents=True)
    (lake / "reports/silver/iot" / run_id / "manifest.json").write_text(manifest.to_json())
    (lake / "silver/iot/data").mkdir(parents=True)
    (lake / "silver/iot/data/f.parquet").write_bytes(b"x" * 2048)
    return lake


def test_the_current_month_by_default_as_a_table_and_as_json(folder_lake, capsys, tmp_path):
    assert cli.main(["usage", "--tenant", "acme", "--lake-uri", str(folder_lake)]) == 0
    out, err = capsys.readouterr()
    month = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m")
    assert f"usage of tenant acme in {month}" in out and "estimated cost for the month (eu-west-1, USD" in out
    silver = next(line for line in out.splitlines() if line.startswith("silver "))
    assert "2.0 KB" in silver and " 1 " in silver and "12.0 s" in silver and silver.split()[-1] == "-"  # no EMR
    assert "hypothetical, not in the total: 1 runs made without EMR on EKS" in out
    assert err.strip().splitlines()[-1].startswith("usage page: file://")
    assert (tmp_path / "state/dq/acme/reports/usage" / month / "usage.html").is_file()
    assert cli.main(["usage", "--tenant", "acme", "--lake-uri", str(folder_lake), "--json",
                     "--price-region", "us-east-1"]) == 0
    usage = json.loads(capsys.readouterr().out)
    assert usage["month"] == month and usage["cost"]["region"] == "us-east-1"
    assert usage["runs"]["rows"] == [{"layer": "silver", "dataset": "iot", "runs": 1, "succeeded": 1, "failed": 0,
                                      "seconds": 12.0, "rows_in": 10, "rows_out": 9}]


@pytest.mark.parametrize("args, message", [
    (["--month", "2026-13"], "argument --month: '2026-13' is not a month YYYY-MM"),
    (["--price-region", "ap-south-1"], "error: no prices for region ap-south-1 in the price table"),
])
def test_bad_options_are_one_line_and_exit_2(folder_lake, capsys, args, message):
    with pytest.raises(SystemExit) if "--month" in args else _no_raise() as stop:
        code = cli.main(["usage", "--tenant", "acme", "--lake-uri", str(folder_lake), *args])
    assert (stop.value.code if stop else code) == 2
    assert message in capsys.readouterr().err


class _no_raise:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
