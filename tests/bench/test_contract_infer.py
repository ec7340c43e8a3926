"""bench/contract_infer.py: one file through contract infer, pyarrow's read and DuckDB's SUMMARIZE, as processes."""
from __future__ import annotations

from pathlib import Path

from bench import contract_infer as bench
from spark_jobs.infer.draft import infer


def test_a_file_is_measured_against_pyarrows_read(tmp_path):
    path = bench.write_file(tmp_path / "readings.csv", 3_000)
    row = bench.measure(path, "readings", 3_000, 500, False, tmp_path / "commands.log", repeats=2)
    assert (row["reader"], row["read_all"], row["same_draft"], row["pyarrow_options"]) == ("pyarrow", True, True, "defaults")
    assert len(row["infer_runs_s"]) == len(row["pyarrow_runs_s"]) == 2
    assert row["key"] == "key: [observed_at]"  # one station below 8,760 records
    assert row["ratio_to_pyarrow"] == round(row["infer_s"] / row["pyarrow_read_s"], 2)
    assert row["infer_peak_mb"] > 0 and row["pyarrow_peak_mb"] > 0 and row["duckdb_summarize_s"] > 0


def test_the_fallback_line_it_looks_for_is_the_one_infer_prints(tmp_path, capsys):
    path = tmp_path / "blank_first.csv"
    path.write_text("  \nid,v\n1,2\n3,4\n")
    infer(path)
    assert bench.FALLBACK_LINE in capsys.readouterr().err
