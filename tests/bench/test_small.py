"""bench/small.py: how it turns run manifests into a breakdown per step, its rows, checks and table. (That every
stage a real silver and gold run records belongs to a step is checked on real runs in
tests/spark_jobs/jobs/test_small_inputs.py.)"""
from __future__ import annotations

from bench import small


def _layer(dataset: str, layer: str, wall: float, stages: list[tuple[str, float, int, int]], **counts) -> dict:
    return {"dataset": dataset, "layer": layer, "wall_s": wall, "cpu_s": wall / 2, "emulator_cpu_s": 0.5,
            "rows_in": 10, "rows_out": counts.get("rows_out", 8), "quarantined": counts.get("quarantined", 1),
            "duplicates": 1, "late": 0, "output_rows": counts.get("output_rows", {}),
            "stages": [{"stage": name, "elapsed_seconds": at, "spark_jobs": jobs, "s3_requests": s3}
                       for name, at, jobs, s3 in stages]}


SILVER = [("lease taken", 0.2, 0, 5), ("start", 0.2, 0, 0), ("inputs listed", 0.5, 1, 10), ("read + parsed", 1.5, 1, 7),
          ("deduped + split", 2.0, 2, 0), ("validated", 3.0, 8, 0), ("committed silver", 4.0, 1, 60),
          ("quarantine written", 5.0, 1, 80), ("published", 5.5, 1, 20), ("done", 6.0, 0, 20),
          ("lease released", 6.1, 0, 4)]
GOLD = [("lease taken", 0.1, 0, 5), ("start", 0.1, 0, 0), ("silver located", 0.3, 0, 11), ("silver read", 0.8, 1, 30),
        ("built iot_hourly", 1.0, 1, 0), ("validated iot_hourly", 2.0, 9, 0), ("published iot_hourly", 3.0, 1, 60),
        ("done", 3.2, 0, 20), ("lease released", 3.3, 0, 4)]


def _round(silver_wall: float, gold_wall: float) -> dict:
    return {"session_s": 5.0, "counts_s": 2.0, "run_all_s": 20.0, "process_s": 25.0, "load_before": [1.0],
            "load_after": [1.2], "counts": [{"dataset": "iot", "layer": "silver", "rows": 8}],
            "layers": [_layer("iot", "bronze", 3.0, [("lease taken", 0.1, 0, 5), ("no new landing files", 2.5, 0, 40),
                                                      ("done", 3.0, 0, 10)], rows_out=0, quarantined=0),
                       _layer("iot", "silver", silver_wall, SILVER),
                       _layer("iot", "gold", gold_wall, GOLD, output_rows={"iot_hourly": 3})]}


def test_stages_are_summed_into_steps():
    steps = small.breakdown({"stages": [{"stage": n, "elapsed_seconds": t, "spark_jobs": j, "s3_requests": s}
                                        for n, t, j, s in SILVER]})
    assert steps["validation (GX)"] == {"seconds": 1.0, "spark_jobs": 8, "s3_requests": 0}
    assert steps["lease"] == {"seconds": 0.3, "spark_jobs": 0, "s3_requests": 9}  # taken and released
    assert steps["Iceberg commit"]["s3_requests"] == 60 and steps["read-back"]["s3_requests"] == 20
    assert steps["listing"]["seconds"] == 0.3 and steps["read + transform"]["spark_jobs"] == 3
    gold = small.breakdown({"stages": [{"stage": n, "elapsed_seconds": t, "spark_jobs": j, "s3_requests": s}
                                       for n, t, j, s in GOLD]})
    assert gold["Iceberg commit"]["s3_requests"] == 60 and gold["validation (GX)"]["spark_jobs"] == 9
    assert "other" not in gold and small.step_of("batch 3") == "bronze batches" and small.step_of("odd") == "other"


def test_rows_take_the_median_rerun_and_checks_compare_with_the_truth():
    rounds = [_round(9.0, 4.0), _round(7.0, 3.0), _round(6.0, 5.0), _round(8.0, 3.5)]
    rows = small.layer_rows(rounds)
    assert [(r["run"], r["layer"], r["wall_s"], r["runs"]) for r in rows] == [
        ("first", "bronze", 3.0, 1), ("first", "silver", 9.0, 1), ("first", "gold", 4.0, 1),
        ("rerun", "bronze", 3.0, 3), ("rerun", "silver", 7.0, 3), ("rerun", "gold", 3.5, 3)]
    silver = rows[4]
    assert (silver["wall_s_min"], silver["wall_s_max"], silver["spark_jobs"], silver["s3_requests"]) == (6.0, 8.0, 15, 206)
    assert silver["step_validation (GX)"] == 1.0
    truth = {"iot": {"valid": 8, "bad": 1, "duplicates": 1, "late": 0}}
    checks = small.checks_of(rounds, truth)
    assert checks and all(c["equal"] for c in checks)
    rounds[2]["layers"][1]["rows_out"] = 7  # a re-run that lost a row
    failed = [c["check"] for c in small.checks_of(rounds, truth) if not c["equal"]]
    assert failed == ["round 2 silver iot equals datagen's truth", "round 2 silver and gold rows equal the first run's"]
    targets = small.targets_of(rows)
    assert [t["met"] for t in targets] == [False, True, True, True]  # first silver 9 s > 8 s
    text = small.format_table(rows, small.run_rows(rounds), targets, checks)
    assert "validation (GX" in text and "BELOW TARGET" in text and "Checks: " in text
