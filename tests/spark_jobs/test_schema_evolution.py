"""Schema evolution end to end on one dataset: Iceberg on s3a, the applied initech tenant (spark_jobs/README.md,
"Schema evolution").

``weather`` lands CSV readings (three stations, hourly). Contract v1 is landed and published (run-all). Contract
v2 (``evolution: permissive``) adds ``humidity`` (a field the v2 files bring), widens ``wind_dir`` from int to
long, renames ``temp`` to ``temperature`` (``renamed_from``; upstream still sends ``temp``) and removes ``dewp``
(``removed: true``: the v2 files still carry it, now ignored); its gold, ``period_summary``, follows: its
``temp_*`` columns become ``temperature_*``, ``wind_dir_min``/``_max`` widen, ``humidity_*`` appear. Then:

1. ``contract plan`` lists each change, metadata-only and allowed, and what it does to gold (exit 0);
2. ``run-all --date <v2 day>`` applies them and writes the new day: the v1 days' data files are the same
   files, their rows read null in ``humidity``, their ``temp`` as ``temperature``, ``wind_dir`` as long; a
   time-travel query to the v1 snapshot reads the v1 schema and rows;
3. a contract that narrows ``wind_dir`` back to int: ``contract plan`` exits 2 and ``run-all`` stops before
   any work in one line; no snapshot, schema or metadata file was added;
4. a file whose records carry a field no contract knows (``visibility``): ``land`` refuses it, naming the
   field; written into landing/ by a producer that bypasses ``land``, every row of its day is quarantined,
   and the error names the rule, the count and the field, and where the details are.

Every command runs through ``spark_jobs.cli.main`` in ONE process (``tests/spark_jobs/cli_steps.py``): one
Spark JVM for the whole scenario. ``TENANTLAKE_EVOLUTION_LAKE=/some/folder`` runs it on a folder lake instead
(no emulator), to debug it.
"""
from __future__ import annotations

import csv
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO_ROOT, TEST_STATE_DIR

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

TENANT = "initech"
DATASET = "weather"
STATIONS = ("ws-0001", "ws-0002", "ws-0003")
V1_DAYS, V2_DAY, UNKNOWN_DAY = ("2024-05-01", "2024-05-02"), "2024-05-03", "2024-05-04"
ROWS_PER_DAY = 24 * len(STATIONS)

V1 = {
    "dataset": DATASET, "description": "Hourly weather-station readings (CSV).",
    "landing": {"format": "csv", "header": True},
    "source_field": "station", "key": ["station", "observed_at"], "event_time": "observed_at",
    "lateness_minutes": 2880, "subject_keys": [],
    "schema": [
        {"name": "station", "type": "string", "required": True, "regex": "^ws-[0-9]{4}$"},
        {"name": "observed_at", "type": "timestamp", "required": True, "format": "yyyy-MM-dd HH:mm"},
        {"name": "temp", "type": "double", "min": -60, "max": 60},
        {"name": "dewp", "type": "double"},
        {"name": "wind_dir", "type": "int", "min": 0, "max": 359},
        {"name": "pressure", "type": "double"},
    ],
    "gold": ["period_summary"],
    "gold_options": {"period_summary": {"period": "day", "measures": ["temp", "wind_dir"], "group_by": ["station"]}},
}


def contract_v2() -> dict:
    v2 = json.loads(json.dumps(V1))
    v2["evolution"] = "permissive"
    schema = {c["name"]: c for c in v2["schema"]}
    schema["temp"].update(name="temperature", source="temp", renamed_from="temp")
    schema["dewp"]["removed"] = True
    schema["wind_dir"]["type"] = "long"
    v2["schema"].append({"name": "humidity", "type": "double", "min": 0, "max": 100})
    v2["gold_options"]["period_summary"]["measures"] = ["temperature", "wind_dir", "humidity"]
    return v2


def contract_v3_narrowing() -> dict:
    v3 = contract_v2()
    next(c for c in v3["schema"] if c["name"] == "wind_dir")["type"] = "int"
    return v3


def write_csv(path: Path, days: tuple[str, ...], fields: list[str], seed: int) -> None:
    rng = random.Random(seed)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(fields)
        for day in days:
            for hour in range(24):
                for station in STATIONS:
                    values = {"station": station, "observed_at": f"{day} {hour:02d}:00",
                              "temp": round(rng.uniform(5, 30), 1), "dewp": round(rng.uniform(0, 15), 1),
                              "wind_dir": rng.randint(0, 359), "pressure": round(rng.uniform(990, 1030), 1),
                              "humidity": rng.randint(20, 100), "visibility": rng.randint(1, 10)}
                    writer.writerow([values[name] for name in fields])


def _contracts(root: Path, name: str, contract: dict) -> str:
    folder = root / "contracts" / name
    folder.mkdir(parents=True)
    (folder / f"{DATASET}.yaml").write_text(yaml.safe_dump(contract, sort_keys=False))
    return str(folder)


def _query(sql: str, *extra: str) -> list[str]:
    return ["query", *LAKE_ARGS, "--json", "--max-rows", "1000", *extra, sql]


LAKE_ARGS: list[str] = []


@pytest.fixture(scope="module")
def scenario(request, tmp_path_factory):
    work = tmp_path_factory.mktemp("evolution")
    folder_lake = os.environ.get("TENANTLAKE_EVOLUTION_LAKE")
    env = {**os.environ, "TENANTLAKE_STATE_DIR": str(TEST_STATE_DIR), "SPARK_LOCAL_IP": "127.0.0.1"}
    if folder_lake:
        LAKE_ARGS[:] = ["--lake-uri", folder_lake]
        spec = {"lake_uri": folder_lake}
    else:
        from infra.local.s3a_jars import ensure_jars

        request.getfixturevalue("applied_tenant")(TENANT)
        env.update(request.getfixturevalue("aws_env"))
        env["TENANTLAKE_SPARK_JARS"] = ",".join(str(j) for j in ensure_jars())
        LAKE_ARGS[:] = ["--tenant", TENANT]
        spec = {"tenant": TENANT}
    files = {name: work / "files" / name for name in ("v1", "v2", "v4")}
    for path in files.values():
        path.mkdir(parents=True)
    write_csv(files["v1"] / "v1.csv", V1_DAYS, ["station", "observed_at", "temp", "dewp", "wind_dir", "pressure"], 1)
    write_csv(files["v2"] / "v2.csv", (V2_DAY,), ["station", "observed_at", "temp", "dewp", "wind_dir", "pressure",
                                                  "humidity"], 2)
    write_csv(files["v4"] / "v4.csv", (UNKNOWN_DAY,), ["station", "observed_at", "temp", "dewp", "wind_dir",
                                                       "pressure", "humidity", "visibility"], 4)
    v1, v2, v3 = (_contracts(work, "v1", V1), _contracts(work, "v2", contract_v2()),
                  _contracts(work, "v3", contract_v3_narrowing()))
    silver, gold = "silver.weather", "gold.weather_period_summary"

    def state(when: str) -> list[tuple[str, dict]]:
        """What a refused run must leave as it was: snapshots, metadata files (a schema change is one), files."""
        return [(f"{when} silver snapshots", {"argv": _query(f"SELECT snapshot_id FROM {silver}.snapshots")}),
                (f"{when} gold snapshots", {"argv": _query(f"SELECT snapshot_id FROM {gold}.snapshots")}),
                (f"{when} silver metadata", {"argv": _query(f"SELECT file FROM {silver}.metadata_log_entries")}),
                (f"{when} gold metadata", {"argv": _query(f"SELECT file FROM {gold}.metadata_log_entries")}),
                (f"{when} silver files", {"argv": _query(f"SELECT file_path FROM {silver}.files")})]

    plan = ["contract", "plan", *LAKE_ARGS, "--dataset", DATASET]
    steps = [
        ("land v1", {"env": {"TENANTLAKE_CONTRACTS_DIR": v1}, "argv": ["land", *LAKE_ARGS, "--dataset", DATASET,
                                                                         str(files["v1"])]}),
        # Validation is off until the last run (its blocked publish is the point there): GX's suites are tested
        # elsewhere and cost a minute here.
        ("run-all v1", {"env": {"TENANTLAKE_VALIDATION": "off"},
                        "argv": ["run-all", *LAKE_ARGS, "--dataset", DATASET, "--allow-warn"]}),
        *state("v1"),
        ("v1 published", {"mark": "v1"}),
        ("plan v2", {"env": {"TENANTLAKE_CONTRACTS_DIR": v2}, "argv": plan}),
        ("plan v2 json", {"argv": [*plan, "--json"]}),
        ("land v2", {"argv": ["land", *LAKE_ARGS, "--dataset", DATASET, str(files["v2"])]}),
        ("run-all v2", {"argv": ["run-all", *LAKE_ARGS, "--dataset", DATASET, "--date", V2_DAY, "--allow-warn"]}),
        *state("v2"),
        ("silver v2", {"argv": _query(f"SELECT * FROM {silver} ORDER BY observed_at, station")}),
        ("gold v2", {"argv": _query(f"SELECT * FROM {gold} ORDER BY event_date, station")}),
        ("silver as of v1", {"argv": _query(f"SELECT * FROM {silver} ORDER BY observed_at, station", "--as-of",
                                            "{mark:v1}")}),
        ("gold as of v1", {"argv": _query(f"SELECT * FROM {gold} ORDER BY event_date, station", "--as-of",
                                          "{mark:v1}")}),
        ("plan v2 again", {"argv": plan}),
        ("plan v3", {"env": {"TENANTLAKE_CONTRACTS_DIR": v3}, "argv": plan}),
        ("run-all v3", {"argv": ["run-all", *LAKE_ARGS, "--dataset", DATASET, "--allow-warn"]}),
        *state("v3"),
        ("land refuses the unknown field", {"env": {"TENANTLAKE_CONTRACTS_DIR": v2},
                                            "argv": ["land", *LAKE_ARGS, "--dataset", DATASET, str(files["v4"])]}),
        # A producer that writes into landing/ itself (an S3 copy, a stream) is not checked by `land`.
        ("put unknown field", {"put": str(files["v4"] / "v4.csv"), "key": f"landing/{DATASET}/upstream-v4.csv"}),
        ("run-all unknown field", {"env": {"TENANTLAKE_VALIDATION": "on"},
                                   "argv": ["run-all", *LAKE_ARGS, "--dataset", DATASET, "--date", UNKNOWN_DAY,
                                            "--allow-warn"]}),
    ]
    steps_file = work / "steps.json"
    steps_file.write_text(json.dumps({**spec, "steps": [step for _, step in steps]}))
    done = subprocess.run([sys.executable, "-m", "tests.spark_jobs.cli_steps", str(steps_file)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=1700)
    assert done.returncode == 0, done.stderr[-4000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    (work / "results.json").write_text(json.dumps(dict(zip([name for name, _ in steps], results)), indent=1))
    yield dict(zip([name for name, _ in steps], results))


def _rows(result: dict) -> list[dict]:
    assert result["exit"] == 0, f"{result['argv']}: exit {result['exit']}\n{result['stderr'][-3000:]}"
    return json.loads(result["stdout"])


def _ok(result: dict, code: int = 0) -> dict:
    assert result["exit"] == code, f"{result['argv']}: exit {result['exit']}\n{result['stdout'][-2000:]}\n{result['stderr'][-3000:]}"
    return result


def test_v1_is_landed_and_published(scenario):
    _ok(scenario["land v1"])
    run = _ok(scenario["run-all v1"])
    assert f"silver {DATASET}: rows_in={2 * ROWS_PER_DAY} rows_out={2 * ROWS_PER_DAY} quarantined=0" in run["stdout"]


def test_the_plan_lists_each_change_its_cost_and_its_effect_on_gold(scenario):
    text = _ok(scenario["plan v2"])["stdout"]
    assert "contract plan weather: evolution permissive, contract sha256:" in text
    for line in ("rename temp -> temperature", "widen wind_dir int -> bigint", "add humidity double",
                 "drop dewp double"):
        assert any(row.strip().startswith(line) and "metadata only" in row and row.rstrip().endswith("allowed")
                   for row in text.splitlines()), (line, text)
    assert "effect: gold.weather_period_summary: rename temp_count -> temperature_count" in text
    plan = json.loads(_ok(scenario["plan v2 json"])["stdout"])
    assert plan["refused"] == 0 and plan["evolution"] == "permissive"
    silver, gold = plan["tables"]
    assert {c["kind"] for c in silver["changes"]} == {"rename", "widen", "add", "drop"}
    assert all(c["metadata_only"] and c["allowed"] for c in silver["changes"])
    assert next(c for c in silver["changes"] if c["kind"] == "add")["sql"] == "ADD COLUMN `humidity` double AFTER `pressure`"
    gold_kinds = {(c["kind"], c["column"]) for c in gold["changes"]}
    assert {("rename", "temperature_avg"), ("widen", "wind_dir_max"), ("add", "humidity_avg")} <= gold_kinds
    assert not {c["kind"] for c in gold["changes"]} & {"drop", "narrow", "retype"}


def test_run_all_applies_the_changes_without_rewriting_data_files(scenario):
    _ok(scenario["run-all v2"])
    before_files = {r["file_path"] for r in _rows(scenario["v1 silver files"])}
    after_files = {r["file_path"] for r in _rows(scenario["v2 silver files"])}
    assert before_files < after_files  # the v1 days' files are the same files; the v2 day added its own
    v1_snapshots = [r["snapshot_id"] for r in _rows(scenario["v1 silver snapshots"])]
    v2_snapshots = [r["snapshot_id"] for r in _rows(scenario["v2 silver snapshots"])]
    assert v2_snapshots[:len(v1_snapshots)] == v1_snapshots and len(v2_snapshots) == len(v1_snapshots) + 1
    # The evolution made no snapshot (the run's data commit is the one new snapshot), only metadata commits.
    assert len(_rows(scenario["v2 silver metadata"])) >= len(_rows(scenario["v1 silver metadata"])) + 2
    assert "[contract weather] 14 table change(s) allowed by evolution: permissive" in scenario["run-all v2"]["stderr"]
    assert "[silver weather] evolved silver.weather" in scenario["run-all v2"]["stderr"]
    assert "[gold weather] evolved gold.weather_period_summary" in scenario["run-all v2"]["stderr"]


def test_old_rows_read_null_in_the_new_column_and_keep_their_values_under_new_names(scenario):
    rows = _rows(scenario["silver v2"])
    assert len(rows) == 3 * ROWS_PER_DAY
    assert set(rows[0]) >= {"temperature", "humidity", "wind_dir"} and not {"temp", "dewp"} & set(rows[0])
    old = [r for r in rows if r["event_date"] in V1_DAYS]
    new = [r for r in rows if r["event_date"] == V2_DAY]
    assert len(old) == 2 * ROWS_PER_DAY and all(r["humidity"] is None for r in old)
    assert all(r["temperature"] is not None and r["wind_dir"] is not None for r in old)
    assert all(r["humidity"] is not None for r in new)
    gold = _rows(scenario["gold v2"])
    assert {r["event_date"] for r in gold} == {*V1_DAYS, V2_DAY}
    assert all(r["humidity_count"] is None for r in gold if r["event_date"] in V1_DAYS)
    assert all(r["temperature_avg"] is not None for r in gold)  # v1's temp_avg, renamed in place


def test_time_travel_to_v1_reads_the_v1_schema_and_rows(scenario):
    silver_v1, gold_v1 = _rows(scenario["silver as of v1"]), _rows(scenario["gold as of v1"])
    assert len(silver_v1) == 2 * ROWS_PER_DAY
    assert {"temp", "dewp", "wind_dir"} <= set(silver_v1[0]) and not {"temperature", "humidity"} & set(silver_v1[0])
    now = {(r["station"], r["observed_at"]): r for r in _rows(scenario["silver v2"])}
    assert all(now[(r["station"], r["observed_at"])]["temperature"] == r["temp"] for r in silver_v1)
    assert {r["event_date"] for r in gold_v1} == set(V1_DAYS) and "temp_avg" in gold_v1[0]
    again = _ok(scenario["plan v2 again"])["stdout"]
    # v2 applied: no schema change left. Silver's rows follow v2 (a rename, a removal, a widening and a plain column
    # need no rebuild); gold's measures changed and v2 ran with --date, so its other dates wait for --full.
    assert "silver.weather (schema 1): no change" in again and "nothing to change" in again
    assert "gold.weather_period_summary (schema 1):\n  rows computed by another contract (options)" in again


def test_a_refused_narrowing_stops_before_any_work_and_changes_nothing(scenario):
    plan = _ok(scenario["plan v3"], 2)
    assert "narrow wind_dir bigint -> int" in plan["stdout"] and "REFUSED" in plan["stdout"]
    run = _ok(scenario["run-all v3"], 2)
    errors = [line for line in run["stderr"].splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(
        "error: contract 'weather': silver.weather column wind_dir: narrow wind_dir bigint -> int is refused: "
        "narrowing bigint -> int would rewrite every data file")
    assert "keep `wind_dir` as long in the contract" in errors[0]
    # gold's wind_dir_min and wind_dir_max narrow with it: counted, listed by the plan
    assert errors[0].endswith("; nothing was run (2 more refused: `python -m spark_jobs contract plan --dataset weather` "
                              "lists them)")
    assert "[bronze weather]" not in run["stderr"]  # no layer started
    for what in ("silver snapshots", "gold snapshots", "silver metadata", "gold metadata", "silver files"):
        assert _rows(scenario[f"v2 {what}"]) == _rows(scenario[f"v3 {what}"]), what


def test_an_all_quarantined_day_names_the_rule_the_count_and_the_field(scenario):
    refused = _ok(scenario["land refuses the unknown field"], 2)
    assert "has header column(s) the contract does not know: visibility" in refused["stderr"]
    run = _ok(scenario["run-all unknown field"], 4)
    error = next(line for line in run["stderr"].splitlines() if line.startswith("error:"))
    assert error.startswith("error: silver weather: validation blocked the publish: error-severity expectations "
                            "failed: row_count (no row left to publish)")
    assert f"quarantined {ROWS_PER_DAY:,} rows: {ROWS_PER_DAY:,} rows failed unknown_fields (visibility)" in error
    assert "(details: " in error and error.endswith("/manifest.json)")
