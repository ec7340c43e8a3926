"""bench/report.py: a page per result file, rendered from its JSON with provenance and target marks; the
README lists them; the committed pages are current."""
from __future__ import annotations

import json
import shutil

import pytest

from bench import report
from bench.common import target_line
from bench.common import write_result as write_measured_result


def write_result(name, payload, *, started_at, results_dir):
    """A result file as ``bench.common.write_result`` writes it, with a fixed machine and commit (measuring the
    machine takes seconds: its own test below does it once)."""
    document = {"benchmark": name, "started_at": started_at, "finished_at": started_at,
                "machine": {"cores": 2, "memory_gb": 23.5, "load_average": [1.0, 1.0, 1.0]},
                "git": {"commit": "0123456789abcdef" * 2 + "01234567", "dirty": False}, **payload}
    (results_dir / f"{name}.json").write_text(json.dumps(document))


@pytest.fixture
def results_dir(tmp_path):
    rows = [{"dataset": "iot", "size": 1000, "storage": "local", "layer": "silver", "variant": "tuned",
             "wall_s": 2.5, "rows_in": 1000, "rows_out": 980, "rows_per_s": 400.0}]
    targets = [target_line("silver ours/DuckDB", 0.2, 0.25), target_line("validation overhead", 0.05, 0.10,
                                                                        higher_is_better=False)]
    write_result("pipeline", {"rows": rows, "targets": targets}, started_at="2026-01-01T00:00:00+00:00",
                 results_dir=tmp_path)
    return tmp_path


def test_result_file_records_machine_and_commit(tmp_path):
    write_measured_result("pipeline", {"rows": []}, started_at="2026-01-01T00:00:00+00:00", results_dir=tmp_path)
    result = json.loads((tmp_path / "pipeline.json").read_text())
    assert result["machine"]["cores"] >= 1 and result["machine"]["memory_gb"] > 0
    assert len(result["git"]["commit"]) == 40


def test_a_page_marks_targets_and_names_its_source(results_dir):
    text = report.render_result(results_dir / "pipeline.json")
    assert text.startswith("# Pipeline\n") and "bench/results/pipeline.json" in text
    assert "[bench/README.md](../README.md#pipeline)" in text and "[`pipeline.json`](pipeline.json)" in text
    assert "| iot | 1,000 | local | silver | tuned | 2.5 | 1,000 | 980 | 400.0 |" in text
    assert "**below target**: silver ours/DuckDB: 0.2 (target >= 0.25)" in text
    assert "met: validation overhead: 0.05 (target <= 0.1)" in text
    index = report.render(results_dir)
    assert "| [Pipeline](results/pipeline.md) | 2026-01-01 00:00 –" in index
    assert "No result yet for Infrastructure" in index  # infra.json absent: said so, not an empty table


def test_a_result_of_its_own_run_follows_its_kind(results_dir):
    rows = [{"dataset": "clickstream", "size": 1000, "storage": "s3a", "layer": "gold", "variant": "tuned",
             "wall_s": 1.5, "rows_in": 900, "rows_out": 900, "rows_per_s": 600.0}]
    write_result("pipeline-clickstream", {"rows": rows}, started_at="2026-01-02T00:00:00+00:00",
                 results_dir=results_dir)
    write_result("infra", {"rows": []}, started_at="2026-01-02T00:00:00+00:00", results_dir=results_dir)
    assert [path.name for path in report.pages(results_dir)] == ["pipeline.md", "pipeline-clickstream.md", "infra.md"]
    text = report.render_result(results_dir / "pipeline-clickstream.json")
    assert text.startswith("# Pipeline (clickstream)\n") and "bench/results/pipeline-clickstream.json" in text
    assert "| clickstream | 1,000 | s3a | gold | tuned | 1.5 | 900 | 900 | 600.0 |" in text
    index = report.render(results_dir)
    assert index.index("(results/pipeline.md)") < index.index("(results/pipeline-clickstream.md)") < \
        index.index("(results/infra.md)")


def test_new_rows_and_new_figures_flow_through_to_the_page(results_dir):
    """A row with keys the kind's columns do not name (a new variant, a new figure) shows them as columns of
    their own; the detail the JSON keeps (DETAIL_KEYS) stays out; a kind report.py does not know gets a page."""
    rows = [{"format": "csv", "compression": "plain", "size": 1000, "layer": "bronze", "wall_s": 2.0, "process_s": 9.0},
            {"format": "csv", "compression": "plain", "size": 1000, "layer": "run-all", "variant": "wide-span",
             "wall_s": 30.0, "months": 384}]
    write_result("ingest", {"rows": rows, "ratios": [{"format": "csv", "size": 1000, "bronze_over_duckdb": 0.5,
                                                      "spill_over_duckdb": 0.125}]},
                 started_at="2026-01-04T00:00:00+00:00", results_dir=results_dir)
    text = report.render_result(results_dir / "ingest.json")
    assert "| format | compression | rows | job | wall s | variant | months |" in text
    assert "| csv | plain | 1,000 | run-all | 30.0 | wide-span | 384 |" in text
    assert "| csv | plain | 1,000 | bronze | 2.0 | – | – |" in text and "process" not in text
    assert "| csv | 1,000 | 0.500 | 0.125 |" in text and "spill over duckdb" in text
    write_result("wide", {"rows": [{"case": "a", "wall_s": 1.25}]}, started_at="2026-01-05T00:00:00+00:00",
                 results_dir=results_dir)
    assert "| case | wall s |\n|---|---|\n| a | 1.2 |" in report.render_result(results_dir / "wide.json")
    assert "[Wide](results/wide.md)" in report.render(results_dir)


def test_a_result_laid_out_in_its_own_way_shows_its_records_and_values(results_dir):
    """No ``rows`` (bench/land.py writes ``results``): each list of records a table, each plain value a line."""
    write_result("land", {"results": [{"variant": "folder", "wall_s": 26.9, "stdout": ["x"]},
                                      {"variant": "emulator", "wall_s": 63.8, "emulator_VmHWM": 392.5}],
                          "file_bytes": 985760192, "ok": True}, started_at="2026-01-06T00:00:00+00:00",
                 results_dir=results_dir)
    text = report.render_result(results_dir / "land.json")
    assert text.startswith("# Land\n") and "(../README.md#land)" in text
    assert "Results:\n\n| variant | wall s | emulator VmHWM |\n|---|---|---|\n| folder | 26.9 | – |\n" in text
    assert "- file bytes: 985,760,192\n- ok: yes" in text and "\n\n\n" not in text


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
             "load": "0.5 -> 0.9", "session_cpu_s": 4.0}]
    write_result("small", {"rows": rows, "runs": runs, "checks": [{"check": "round 0 silver iot", "equal": True}],
                           "targets": [target_line("rerun iot silver", 7.5, 8.0, higher_is_better=False, unit=" s")]},
                 started_at="2026-01-03T00:00:00+00:00", results_dir=results_dir)
    text = report.render_result(results_dir / "small.json")
    assert text.startswith("# Small inputs\n") and "bench/results/small.json" in text
    assert "| rerun | iot | silver | 7.5 | 3 | 0.3 | 1.2 | 2.0 | 15 | 210 |" in text
    assert "| 0 | first | 6.0 | 30.0 | 3.0 | 39.0 | 0.5 -> 0.9 |" in text
    assert "met: rerun iot silver: 7.5 s (target <= 8 s)" in text and "round 0 silver iot yes" in text


def test_the_committed_pages_and_the_readme_list_are_current():
    """bench/results/<name>.md beside every result, as bench/report.py renders it, no page without a result,
    and the README's list of them: what `python -m bench.report --check` checks."""
    assert sorted(p.stem for p in report.RESULTS_DIR.glob("*.md")) == sorted(p.stem for p in report.RESULTS_DIR.glob("*.json"))
    assert report.stale() == []
    assert report.main(["--check"]) == 0


def test_a_changed_result_makes_its_page_and_the_list_stale(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(report.RESULTS_DIR, results)
    readme = tmp_path / "README.md"
    readme.write_text(report.README.read_text())
    assert report.stale(results, readme) == []
    result = json.loads((results / "maintenance.json").read_text())
    result["rows"][0]["maintain_s"] = 1.0
    (results / "maintenance.json").write_text(json.dumps(result))
    (results / "gone.md").write_text("a page whose result was removed\n")
    shutil.copy(results / "export.json", results / "export-again.json")
    assert report.stale(results, readme) == [str(results / "maintenance.md"), str(results / "export-again.md"),
                                              str(results / "gone.md"), "README.md (the list of results)"]
    report.write(results, readme)
    assert report.stale(results, readme) == [] and not (results / "gone.md").exists()
    assert "| 1.0 |" in (results / "maintenance.md").read_text() and "(results/export-again.md)" in readme.read_text()


def test_the_readme_is_short_and_shows_where_the_targets_stand_first():
    text = report.README.read_text()
    assert len(text.encode()) <= 30 * 1024
    first_screen = text.splitlines()[:12]
    assert "## Where the targets stand" in first_screen and "| target | measured | met? |" in first_screen
