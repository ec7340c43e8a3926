"""Incremental silver and gold (spark_jobs/jobs/increment.py) equal a full recompute of the same bronze.

A property test (hypothesis, pinned in requirements/project.in): a sequence of landings on one folder lake, each
followed by a run that may stop part-way, then a catch-up run-all; the lake's silver table, quarantine and gold
tables must equal those that silver and gold compute from scratch (a first run, which is full) over a copy of
the same bronze. The sequences hold:

- new events over five days, many near midnight (so sessions cross it: ``clickstream_user_sessions`` reads the
  day before and after, ``SILVER_DATES``), and two gold tables;
- keys sent again: the same record (a duplicate), another amount (a later version wins), another event time
  (the row moves to another partition, found by looking the key up in silver);
- late records into old partitions;
- quarantined records (malformed, a missing required field, a value out of range) in the partitions of valid ones;
- a run stopped between its steps: after bronze, after silver, or inside silver after its quarantine write and
  before its table commit (its lease taken away: the fence stops it), so the next run takes the batches again;
- an erase of one user between runs, through the erasure's own entry points for the tables (silver rewritten
  with ``tables.replace_dates``, gold recomputed with ``run_layer(..., dates=...)``, then ``iceberg.finish``: a
  manifest rewrite and every older snapshot expired, so the tables' marks survive only beside them).

``TENANTLAKE_INCREMENT_EXAMPLES`` sets how many generated sequences run beside the explicit one that holds every case
(default 1, to keep the suite in its budget: each is about five run-alls, some 55 s here).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from spark_jobs.contract.model import load_contract
from spark_jobs.erasure import iceberg
from spark_jobs.io import storage, tables
from spark_jobs.io.partitioning import silver_partitioning
from spark_jobs.jobs.layer import run_layer
from spark_jobs.lake.config import LakeConfig
from spark_jobs.runs import leases

pytestmark = pytest.mark.integration

DATASET = "visits"
GOLDS = ("visits_clickstream_user_sessions", "visits_clickstream_site_hourly")
CONTRACT = """\
dataset: visits
description: Page events keyed by an id that does not hold the event time, so a key sent again may move.
landing: {format: json_lines}
key: [event_id]
event_time: timestamp
schema:
  - {name: event_id, type: string, required: true}
  - {name: user_id, type: string, required: true}
  - {name: site_id, type: string, required: true}
  - {name: event, type: string, required: true}
  - {name: timestamp, type: timestamp, required: true, format: "yyyy-MM-dd HH:mm:ss"}
  - {name: amount, type: int, min: 0, max: 100}
gold: [clickstream_user_sessions, clickstream_site_hourly]
"""
FIRST_DAY = dt.datetime(2024, 3, 1)
DAYS, USERS, SITES = 5, ("u1", "u2", "u3"), ("s1", "s2")
EXAMPLES = int(os.environ.get("TENANTLAKE_INCREMENT_EXAMPLES", "1"))


@pytest.fixture(scope="module")
def contracts(tmp_path_factory):
    folder = tmp_path_factory.mktemp("contracts")
    (folder / f"{DATASET}.yaml").write_text(CONTRACT)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TENANTLAKE_CONTRACTS_DIR", str(folder))
        patch.setenv("TENANTLAKE_VALIDATION", "off")
        patch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path_factory.mktemp("state")))
        yield folder


# ---------------------------------------------------------------------------------------------- the data
@st.composite
def event_times(draw) -> dt.datetime:
    """A time in the five days, a third of them within a quarter of an hour of a midnight."""
    day = draw(st.integers(0, DAYS - 1))
    second = draw(st.one_of(st.integers(0, 86_399), st.integers(86_400 - 900, 86_399), st.integers(0, 900)))
    return FIRST_DAY + dt.timedelta(days=day, seconds=second)


@st.composite
def new_events(draw) -> dict:
    return {"user_id": draw(st.sampled_from(USERS)), "site_id": draw(st.sampled_from(SITES)),
            "event": draw(st.sampled_from(("page_view", "click"))), "timestamp": draw(event_times()),
            "amount": draw(st.integers(0, 100))}


@st.composite
def steps(draw) -> dict:
    return {
        "new": draw(st.lists(new_events(), min_size=1, max_size=6)),
        # (which earlier event, how it comes again, its new time or amount)
        "again": draw(st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(("same", "amount", "moved")),
                                         event_times(), st.integers(0, 100)), max_size=3)),
        "late": draw(st.lists(new_events(), max_size=2)),
        "bad": draw(st.lists(st.sampled_from(("malformed", "no_user", "amount_range")), max_size=2)),
        "ending": draw(st.sampled_from(("run-all", "run-all", "bronze", "bronze+silver", "silver loses its lease"))),
    }


@dataclasses.dataclass
class Landed:
    """What the test landed so far: every event (by id, as last sent) and the files per user."""

    events: dict[str, dict] = dataclasses.field(default_factory=dict)
    files: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    ids: int = 0  # event ids handed out (an erased user's ids are not handed out again)

    def new_id(self) -> str:
        self.ids += 1
        return f"e{self.ids - 1}"


def _line(event: dict) -> str:
    return json.dumps({**event, "timestamp": event["timestamp"].strftime("%Y-%m-%d %H:%M:%S")})


def _land(lake_dir: Path, number: int, step: dict, landed: Landed) -> None:
    """The step's records as JSON-lines files, one per user (an erased user's records are in its files
    alone) and one for records without a user."""
    by_user: dict[str, list[str]] = {}
    for event in step["new"]:
        event_id = landed.new_id()
        landed.events[event_id] = {"event_id": event_id, **event}
        by_user.setdefault(event["user_id"], []).append(_line(landed.events[event_id]))
    ids = sorted(landed.events, key=lambda i: int(i[1:]))
    for pick, how, when, amount in step["again"]:
        again = dict(landed.events[ids[pick % len(ids)]])
        if how == "amount":
            again["amount"] = amount
        elif how == "moved":
            again["timestamp"] = when
        landed.events[again["event_id"]] = again
        by_user.setdefault(again["user_id"], []).append(_line(again))
    for event in step["late"]:  # late: an early time, after the step's newest records in the same file
        event_id = landed.new_id()
        late = {"event_id": event_id, **event, "timestamp": FIRST_DAY + dt.timedelta(seconds=event["amount"] * 60)}
        landed.events[event_id] = late
        by_user.setdefault(late["user_id"], []).append(_line(late))
    nobody = []
    for n, kind in enumerate(step["bad"]):
        bad_id = f"bad{number}-{n}"
        if kind == "malformed":
            nobody.append('{"event_id": "' + bad_id + '", "user_id": ')
        elif kind == "no_user":
            nobody.append(json.dumps({"event_id": bad_id, "site_id": "s1", "event": "click",
                                      "timestamp": "2024-03-02 12:00:00", "amount": 1}))
        else:
            user = USERS[n % len(USERS)]
            by_user.setdefault(user, []).append(json.dumps({"event_id": bad_id, "user_id": user, "site_id": "s2",
                                                            "event": "click", "timestamp": "2024-03-03 08:00:00",
                                                            "amount": 150}))
    folder = lake_dir / "landing" / DATASET
    folder.mkdir(parents=True, exist_ok=True)
    for user, lines in by_user.items():
        name = f"step{number:02d}-{user}.jsonl"
        (folder / name).write_text("\n".join(lines) + "\n")
        landed.files.setdefault(user, []).append(name)
    if nobody:
        (folder / f"step{number:02d}-bad.jsonl").write_text("\n".join(nobody) + "\n")


# ---------------------------------------------------------------------------------------------- the runs
def _run(spark, lake: LakeConfig, layers, progress=None) -> list[dict]:
    return [run_layer(spark, lake, DATASET, layer, progress=progress or (lambda line: None)) for layer in layers]


def take_lease_after(lake_dir: Path, layer: str, stage: str, dataset: str = DATASET):
    """A progress hook that, once the run prints ``stage``, replaces the run's ``layer`` lease by another run's
    (a takeover while this run was silent): the run's next fence must stop it."""
    def hook(line: str) -> None:
        if stage in line:
            lease = lake_dir / "checkpoints" / dataset / "runs" / f"{layer}.lease"
            lease.write_text(json.dumps({"run_id": "20260101T000000Z-0th3rrun", "layer": layer, "command": "run-all",
                                         "host": "another-host", "pid": 4242, "since": "2026-01-01T00:00:00Z",
                                         "heartbeat_seconds": leases.LEASE_HEARTBEAT_SECONDS}))
    return hook


def _lose_silver_lease(spark, lake: LakeConfig, lake_dir: Path) -> None:
    with pytest.raises(leases.LeaseLost, match=r"this run no longer holds the silver lease of visits .*stopped "
                                               r"before committing silver\.visits"):
        _run(spark, lake, ["silver"], take_lease_after(lake_dir, "silver", "quarantine written"))
    (lake_dir / "checkpoints" / DATASET / "runs" / "silver.lease").unlink()  # the other run has ended


def _erase(spark, lake: LakeConfig, lake_dir: Path, user: str, landed: Landed) -> None:
    """What an erasure does to the layers, through the erasure's entry points for the tables: bronze and
    quarantine rewritten without the user's files' rows, silver's dates rewritten with ``replace_dates``,
    gold's recomputed with ``run_layer(dates=...)``, the user's landing files deleted, then ``iceberg.finish``."""
    its_file = F.element_at(F.split("_source_file", "/"), -1).isin(sorted(landed.files.get(user, [])))
    contract = load_contract(DATASET)
    tbls = [tables.table(spark, lake, "silver", DATASET)] + [tables.table(spark, lake, "gold", g) for g in GOLDS]
    before = {t.display: iceberg.snapshot_ids(spark, t) for t in tbls}
    for layer in ("bronze", "quarantine"):
        root = lake_dir / layer / DATASET
        for folder in sorted(p for p in root.iterdir() if p.is_dir() and "=" in p.name) if root.exists() else []:
            rows = spark.read.parquet(str(folder))
            if rows.where(its_file).limit(1).count():
                staged = lake_dir / "erase-staging" / layer / folder.name
                rows.where(~its_file).write.mode("overwrite").parquet(str(staged))
                shutil.rmtree(folder)
                shutil.move(str(staged), str(folder))
    silver = tbls[0]
    mine = tables.read(spark, silver).where(F.col("user_id") == user)
    dates = sorted({str(r[0]) for r in mine.select("event_date").distinct().collect()})
    if dates:
        partitioning = silver_partitioning(contract)
        kept = (tables.read(spark, silver).where(F.expr(partitioning.rows(dates, False)))
                .where(F.col("user_id") != user).persist())
        kept.count()
        tables.replace_dates(kept, silver, partitioning, dates, False, f"erase-{user}")
        kept.unpersist()
        run_layer(spark, lake, DATASET, "gold", dates=dates, progress=lambda line: None)
    for name in landed.files.pop(user, []):
        (lake_dir / "landing" / DATASET / name).unlink()
    for event_id in [i for i, e in landed.events.items() if e["user_id"] == user]:
        del landed.events[event_id]
    for tbl in tbls:
        iceberg.finish(spark, tbl, before[tbl.display])


# ---------------------------------------------------------------------------------------------- the tables
def _rows(frame) -> list[tuple]:
    return sorted(tuple(r) for r in frame.collect())


def layers_of(spark, lake: LakeConfig, lake_dir: Path) -> dict[str, list[tuple]]:
    """Silver, the quarantine (without the run id) and each gold table, as sorted rows."""
    found = {"silver": _rows(tables.read(spark, tables.table(spark, lake, "silver", DATASET)))}
    quarantine = lake_dir / "quarantine" / DATASET
    held = storage.has_data_files(spark, str(quarantine))
    found["quarantine"] = _rows(spark.read.parquet(str(quarantine)).drop("_run_id")) if held else []
    for name in GOLDS:
        found[name] = _rows(tables.read(spark, tables.table(spark, lake, "gold", name)))
    return found


def recomputed(spark, lake_dir: Path, scratch: Path) -> dict[str, list[tuple]]:
    """Silver and gold computed from scratch (first runs: full) over a copy of the lake's bronze."""
    fresh = scratch / "recomputed"
    shutil.copytree(lake_dir / "bronze" / DATASET, fresh / "bronze" / DATASET)
    lake = LakeConfig(str(fresh))
    manifests = _run(spark, lake, ["silver", "gold"])
    assert [m["mode"] for m in manifests] == ["full", "full"]
    return layers_of(spark, lake, fresh)


def _at(day: int, hour: int, minute: int = 0) -> dt.datetime:
    return FIRST_DAY + dt.timedelta(days=day, hours=hour, minutes=minute)


def _ev(user: str, day: int, hour: int, minute: int = 0, site: str = "s1", amount: int = 5) -> dict:
    return {"user_id": user, "site_id": site, "event": "page_view", "timestamp": _at(day, hour, minute), "amount": amount}


# Every case at least once, in an order that makes each matter: sessions across midnights, every kind of resend
# (e0 moved to another day, e3 a later amount), late and bad records, every way a run stops, then an erase.
EVERY_CASE = [
    {"new": [_ev("u1", 0, 23, 50), _ev("u1", 1, 0, 10), _ev("u2", 1, 12), _ev("u3", 2, 23, 55)], "again": [],
     "late": [], "bad": ["malformed"], "ending": "run-all"},
    {"new": [_ev("u2", 2, 0, 5), _ev("u1", 3, 9)], "again": [(0, "moved", _at(3, 9, 10), 0), (3, "same", _at(0, 0), 0)],
     "late": [_ev("u3", 0, 1)], "bad": ["amount_range", "no_user"], "ending": "silver loses its lease"},
    {"new": [_ev("u1", 1, 23, 59, site="s2")], "again": [(3, "amount", _at(0, 0), 77), (1, "same", _at(0, 0), 0)],
     "late": [], "bad": [], "ending": "bronze+silver"},
    {"new": [_ev("u3", 4, 0, 1)], "again": [(2, "moved", _at(0, 23, 58), 0)], "late": [], "bad": ["malformed"],
     "ending": "bronze"},
]


@given(st.lists(steps(), min_size=2, max_size=4), st.one_of(st.none(), st.integers(0, 3)),
       st.sampled_from(USERS))
@example(EVERY_CASE, 2, "u1")
# No shrinking: each example is minutes of Spark; a failure reports the sequence as generated.
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
def test_any_sequence_of_batches_gives_what_a_full_recompute_gives(spark, contracts, sequence, erase_after, erased):
    with tempfile.TemporaryDirectory(prefix="increment-") as scratch:
        lake_dir = Path(scratch) / "lake"
        lake, landed = LakeConfig(str(lake_dir)), Landed()
        modes = []
        for number, step in enumerate(sequence):
            _land(lake_dir, number, step, landed)
            ending = step["ending"] if number else "run-all"  # the first run builds the tables
            if ending == "run-all":
                modes += [m["mode"] for m in _run(spark, lake, ["bronze", "silver", "gold"])[1:]]
            elif ending == "bronze":
                _run(spark, lake, ["bronze"])
            elif ending == "bronze+silver":
                _run(spark, lake, ["bronze", "silver"])
            else:
                _run(spark, lake, ["bronze"])
                _lose_silver_lease(spark, lake, lake_dir)
            if erase_after == number and tables.current_snapshot(spark, tables.table(spark, lake, "gold", GOLDS[0])):
                _run(spark, lake, ["bronze", "silver", "gold"])  # the erasure's catch-up, then the erase
                _erase(spark, lake, lake_dir, erased, landed)
        final = _run(spark, lake, ["bronze", "silver", "gold"])
        assert [m["mode"] for m in final[1:]] == ["incremental", "incremental"]
        assert modes[:2] == ["full", "full"] and set(modes[2:]) <= {"incremental"}
        assert layers_of(spark, lake, lake_dir) == recomputed(spark, lake_dir, Path(scratch))


def _manifest(lake_dir: Path, layer: str) -> dict:
    runs = sorted((lake_dir / "reports" / layer / "iot").iterdir(), key=lambda run: run.stat().st_mtime_ns)
    return json.loads((runs[-1] / "manifest.json").read_text())


def test_a_grown_lake_reads_its_new_month_only_and_a_run_that_lost_its_lease_commits_nothing(
        spark, contracts, tmp_path, monkeypatch, capsys):
    """The issue's lake: 24,000 rows over 24 months. 100 new rows in a new month: silver and gold read about those
    rows (``rows_in`` at most 2,000), not the lake's history. Before that, a silver run whose lease another run
    takes while it validates stops before its commit, in one line, and the table is as it was."""
    from spark_jobs import cli
    from spark_jobs.jobs import runtime

    lake_dir = tmp_path / "lake"
    lake_args = ["--lake-uri", str(lake_dir), "--dataset", "iot"]
    gen = ["datagen", "--dataset", "iot", "--lake-uri", str(lake_dir)]
    assert cli.main([*gen, "--records", "24000", "--batch-size", "1000", "--interval", str(30 * 86_400),
                     "--start", "2022-01-01T00:00:00Z"]) == 0
    assert cli.main(["run-all", *lake_args]) == 0
    first = _manifest(lake_dir, "silver")
    assert first["mode"] == "full" and first["rows_in"] == 24_000 and len({d[:7] for d in first["event_dates"]}) == 24

    assert cli.main([*gen, "--records", "100", "--batch-size", "100", "--start", "2024-03-10T00:00:00Z",
                     "--seed", "7", "--name-prefix", "month-25-"]) == 0
    assert cli.main(["run", "--layer", "bronze", *lake_args]) == 0
    silver = tables.table(spark, LakeConfig(str(lake_dir)), "silver", "iot")
    before = tables.current_snapshot(spark, silver)["snapshot_id"]
    hook = take_lease_after(lake_dir, "silver", "] validated", "iot")
    monkeypatch.setattr(runtime, "print_progress", lambda line: (hook(line), print(line, file=sys.stderr)))
    capsys.readouterr()
    assert cli.main(["run", "--layer", "silver", *lake_args]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(
        "error: silver iot: this run no longer holds the silver lease of iot (another run took it over; it is now "
        "held by run 20260101T000000Z-0th3rrun")
    assert "stopped before committing" in errors[0] and "(details: " in errors[0]
    assert tables.current_snapshot(spark, silver)["snapshot_id"] == before
    assert _manifest(lake_dir, "silver")["status"] == "failed"
    (lake_dir / "checkpoints" / "iot" / "runs" / "silver.lease").unlink()  # the other run has ended
    monkeypatch.undo()

    assert cli.main(["run-all", *lake_args]) == 0
    silver_run, gold_run = _manifest(lake_dir, "silver"), _manifest(lake_dir, "gold")
    assert silver_run["mode"] == gold_run["mode"] == "incremental"
    assert silver_run["rows_in"] <= 2_000 and gold_run["rows_in"] <= 2_000, (silver_run["rows_in"], gold_run["rows_in"])
    assert silver_run["increment"]["bronze_rows"] == 100
    assert {d[:7] for d in silver_run["event_dates"]} == {"2024-03"}
    assert tables.snapshot_rows(tables.load(spark, silver)) == first["rows_out"] + silver_run["rows_out"]
