"""bench/ingest.py: the wide-span row's ratios against the plain PySpark floor, and its targets (pure, no jobs)."""
from __future__ import annotations

from bench.ingest import WIDE_SPAN_TARGETS, compute_ratios, compute_targets, format_table

TAG = {"format": "csv", "compression": "plain", "size": 1000}


def _rows() -> list[dict]:
    return [
        {**TAG, "layer": "run_all", "wall_s": 300.0, "peak_total_mb": 3100.0,
         "layers_s": {"bronze": 80.0, "silver": 150.0, "gold": 40.0, "counts": 20.0}},
        {**TAG, "layer": "pyspark_floor", "wall_s": 100.0, "steps_s": {"silver": 75.0, "gold": 24.0}},
        {**TAG, "layer": "duckdb_silver", "wall_s": 30.0},
        {**TAG, "layer": "duckdb_gold", "wall_s": 5.0},
        {**TAG, "layer": "duckdb_plain", "wall_s": 10.0},
    ]


def test_run_all_over_the_floor_and_where_the_rest_goes():
    (ratio,) = compute_ratios(_rows())
    assert ratio["run_all_times_floor"] == 3.0
    assert (ratio["floor_times_duckdb_plain"], ratio["run_all_times_duckdb_plain"], ratio["duckdb_mirror_times_plain"]) \
        == (10.0, 30.0, 3.5)
    split = {key: value for key, value in ratio.items() if key.startswith("extra_")}
    assert split == {"extra_bronze_s": 80.0, "extra_silver_s": 75.0, "extra_gold_s": 16.0, "extra_counts_s": 20.0,
                     "extra_other_s": 9.0}
    assert sum(split.values()) == 300.0 - 100.0  # the split accounts for every second between the two


def test_the_floor_and_memory_targets_are_reported_in_their_units():
    rows = _rows()
    targets = {t["label"]: t for t in compute_targets(rows, compute_ratios(rows), WIDE_SPAN_TARGETS)}
    floor = targets["csv plain 1,000: run-all time / the plain PySpark floor's"]
    assert (floor["value"], floor["target"], floor["met"]) == (3.0, 1.5, False)
    rss = targets["peak RSS at 1,000 rows, worst job (csv plain run_all)"]
    assert (rss["target"], rss["unit"], rss["met"]) == (3.0, " GiB", False)  # 3,100 MiB is over 3 GiB
    assert WIDE_SPAN_TARGETS["peak_rss_mb"] * 2**20 == 3_221_225_472


def test_the_ingest_floor_is_shown_against_duckdbs_ingest_and_bronze():
    rows = [{**TAG, "layer": layer, "wall_s": wall, "rows_per_s": int(1000 / wall), "peak_total_mb": 100.0}
            for layer, wall in (("bronze", 40.0), ("duckdb_ingest", 4.0), ("spark_ingest", 10.0))]
    (ratio,) = compute_ratios(rows)
    assert (ratio["bronze_over_duckdb"], ratio["spark_ingest_over_duckdb"], ratio["bronze_over_spark_ingest"]) \
        == (0.1, 0.4, 0.25)
    table = format_table(rows, [ratio], [], [])
    assert "Spark ingest/DuckDB" in table and "0.400x" in table and "0.250x" in table
