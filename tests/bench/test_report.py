"""bench/report.py: the README table is rendered from result files, with provenance and target marks."""
from __future__ import annotations

import json

import pytest

from bench import report
from bench.common import target_line, write_result


@pytest.fixture
def results_dir(tmp_path):
    rows = [{"dataset": "iot", "size": 1000, "storage": "local", "layer": "silver", "variant": "tuned",
             "wall_s": 2.5, "rows_in": 1000, "rows_out": 980, "rows_per_s": 400.0}]
    targets = [target_line("silver ours/DuckDB", 0.2, 0.25), target_line("validation overhead", 0.05, 0.10,
                                                                        higher_is_better=False)]
    write_result("pipeline", {"rows": rows, "targets": targets}, started_at="2026-01-01T00:00:00+00:00",
                 results_dir=tmp_path)
    return tmp_path


def test_result_file_records_machine_and_commit(results_dir):
    result = json.loads((results_dir / "pipeline.json").read_text())
    assert result["machine"]["cores"] >= 1 and result["machine"]["memory_gb"] > 0
    assert len(result["git"]["commit"]) == 40


def test_render_marks_targets_and_names_its_source(results_dir):
    text = report.render(results_dir)
    assert "bench/results/pipeline.json" in text
    assert "| iot | 1,000 | local | silver | tuned | 2.5 | 1,000 | 980 | 400.0 |" in text
    assert "**below target**: silver ours/DuckDB: 0.2 (target >= 0.25)" in text
    assert "met: validation overhead: 0.05 (target <= 0.1)" in text
    assert "No result yet" in text  # infra.json absent: said so, not an empty table


def test_a_result_of_its_own_run_follows_its_kind(results_dir):
    rows = [{"dataset": "clickstream", "size": 1000, "storage": "s3a", "layer": "gold", "variant": "tuned",
             "wall_s": 1.5, "rows_in": 900, "rows_out": 900, "rows_per_s": 600.0}]
    write_result("pipeline-clickstream", {"rows": rows}, started_at="2026-01-02T00:00:00+00:00",
                 results_dir=results_dir)
    text = report.render(results_dir)
    assert text.index("### Pipeline\n") < text.index("### Pipeline (clickstream)") < text.index("### Infrastructure")
    assert "bench/results/pipeline-clickstream.json" in text
    assert "| clickstream | 1,000 | s3a | gold | tuned | 1.5 | 900 | 900 | 600.0 |" in text


def test_update_replaces_only_the_generated_block(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{report.BEGIN}\nold table\n{report.END}\nmethod\n")
    report.update_readme("new table\n", readme)
    assert readme.read_text() == f"intro\n{report.BEGIN}\nnew table\n{report.END}\nmethod\n"
    readme.write_text("no markers\n")
    with pytest.raises(SystemExit, match="lacks the"):
        report.update_readme("x\n", readme)


def test_the_small_inputs_result_shows_its_steps_and_its_runs(results_dir):
    rows = [{"run": "rerun", "dataset": "iot", "layer": "silver", "wall_s": 7.5, "runs": 3, "step_lease": 0.3,
             "step_validation (GX)": 1.2, "step_Iceberg commit": 2.0, "spark_jobs": 15, "s3_requests": 210}]
    runs = [{"round": 0, "run": "first", "session_s": 6.0, "layers_s": 30.0, "counts_s": 3.0, "run_all_s": 39.0,
             "load": "0.5 -> 0.9"}]
    write_result("small", {"rows": rows, "runs": runs, "checks": [{"check": "round 0 silver iot", "equal": True}],
                           "targets": [target_line("rerun iot silver", 7.5, 8.0, higher_is_better=False, unit=" s")]},
                 started_at="2026-01-03T00:00:00+00:00", results_dir=results_dir)
    text = report.render(results_dir)
    assert "### Small inputs" in text and "bench/results/small.json" in text
    assert "| rerun | iot | silver | 7.5 | 3 | 0.3 | 1.2 | 2.0 | 15 | 210 |" in text
    assert "| 0 | first | 6.0 | 30.0 | 3.0 | 39.0 | 0.5 -> 0.9 |" in text
    assert "met: rerun iot silver: 7.5 s (target <= 8 s)" in text and "round 0 silver iot yes" in text
