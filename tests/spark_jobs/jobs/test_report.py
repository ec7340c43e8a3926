"""The counts table `run-all` ends with (spark_jobs/jobs/report.py): datasets counted side by side give the rows
counted one after the other, in the order asked, and silver and gold rows equal Spark's count of each table."""
from __future__ import annotations

import pytest

from spark_jobs import cli
from spark_jobs.contract.model import load_contract
from spark_jobs.io import tables
from spark_jobs.jobs import report
from spark_jobs.jobs.layer import run_layer
from spark_jobs.lake.config import LakeConfig, gold_table_name

pytestmark = pytest.mark.integration
DATASETS = ["iot", "inventory"]


def test_counts_of_several_datasets_equal_their_counts_one_by_one(spark, tmp_path, monkeypatch):
    monkeypatch.setenv("TENANTLAKE_VALIDATION", "off")
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    lake = LakeConfig(lake_uri=str(tmp_path / "lake"))
    for dataset in DATASETS:
        assert cli.main(["datagen", "--dataset", dataset, "--records", "200", "--bad-rate", "0.02",
                         "--lake-uri", lake.lake_uri]) == 0
        for layer in ("bronze", "silver", "gold"):
            run_layer(spark, lake, dataset, layer, progress=lambda _: None)
    together = report.layer_counts(spark, lake, list(reversed(DATASETS)))
    one_by_one = [row for dataset in reversed(DATASETS) for row in report._dataset_counts(spark, lake, dataset)]
    # The same counts; the second pass counts no file again: each file's rows come from the ledger the first wrote.
    def without_counted(rows):
        return [{k: v for k, v in row.items() if k != "counted_files"} for row in rows]

    assert without_counted(together) == without_counted(one_by_one)
    assert all(row.get("counted_files", 0) == 0 for row in one_by_one)
    assert {row["layer"]: row["counted_files"] for row in together if row["dataset"] == "inventory"
            and "counted_files" in row}["landing (records)"] == 21
    assert [row["dataset"] for row in together][:1] == ["inventory"]
    by_layer = {(row["dataset"], row["layer"]): row["rows"] for row in together}
    for dataset in DATASETS:
        assert by_layer[(dataset, "landing (records)")] == by_layer[(dataset, "bronze")] == 200
        silver = tables.table(spark, lake, "silver", dataset)
        assert by_layer[(dataset, "silver")] == tables.read(spark, silver).count() > 0
        for name in load_contract(dataset).gold:
            gold = tables.table(spark, lake, "gold", gold_table_name(dataset, name))
            assert by_layer[(dataset, f"gold {name}")] == tables.read(spark, gold).count()
