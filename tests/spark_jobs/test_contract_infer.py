"""`contract infer`: a draft that the contract loader accepts, from real sample files."""
from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest
import yaml

from spark_jobs import cli
from spark_jobs.contract import parse_contract
from spark_jobs.contract_infer import infer


def great_tables_file(name: str) -> Path:
    """A data file of the pinned great-tables wheel (requirements/project.txt), without importing the package."""
    return Path(importlib.metadata.distribution("great-tables").locate_file(f"great_tables/data/{name}"))


def test_airquality_draft(capsys):
    assert cli.main(["contract", "infer", "--from", str(great_tables_file("x-airquality.csv")), "--dataset", "airquality"]) == 0
    text = capsys.readouterr().out
    contract = parse_contract(yaml.safe_load(text))
    assert contract.landing.null_values == ("", "NA") and contract.landing.header is True
    assert [(c.name, c.source, c.type, c.required) for c in contract.schema[:3]] == [
        ("ozone", "Ozone", "int", False), ("solar_r", "Solar_R", "int", False), ("wind", "Wind", "double", True)]
    assert contract.key == ("month", "day")
    # No date column: the draft says so and its event time stops silver until it is edited.
    assert "# TODO: no date or time column was found" in text
    assert "raise_error('edit the contract" in contract.column("event_time").computed


def test_gibraltar_draft_joins_date_and_time():
    contract = parse_contract(yaml.safe_load(infer(great_tables_file("11-gibraltar.csv"))))
    event = contract.column(contract.event_time)
    assert (event.computed, event.format) == ("concat(date, ' ', time)", "yyyy-MM-dd HH:mm")
    assert contract.key == ("event_time",) and contract.lateness_minutes > 30
    assert contract.gold == ("period_summary",)
    assert contract.gold_options["period_summary"]["period"] == "hour"
    assert "temp" in contract.gold_options["period_summary"]["measures"]


def test_parquet_and_json_drafts(tmp_path):
    import duckdb

    parquet = tmp_path / "readings.parquet"
    duckdb.sql(f"COPY (SELECT i AS reading_id, TIMESTAMP '2024-01-01 00:00:00' + INTERVAL (i) HOUR AS measured_at, "
               f"i * 1.5 AS value FROM range(5) t(i)) TO '{parquet}' (FORMAT parquet)")
    contract = parse_contract(yaml.safe_load(infer(parquet)))
    assert (contract.landing_format, contract.key, contract.event_time) == ("parquet", ("reading_id",), "measured_at")
    assert contract.column("measured_at").format == "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'"  # how bronze writes Parquet timestamps
    lines = tmp_path / "events.jsonl"
    lines.write_text("".join(json.dumps({"id": f"e{i}", "at": f"2024-01-01 0{i}:00:00", "n": i}) + "\n" for i in range(3)))
    contract = parse_contract(yaml.safe_load(infer(lines)))
    assert (contract.landing_format, contract.event_time, contract.column("n").type) == ("json_lines", "at", "int")


def test_output_is_never_overwritten(tmp_path, capsys):
    target = tmp_path / "draft.yaml"
    target.write_text("mine")
    assert cli.main(["contract", "infer", "--from", str(great_tables_file("x-airquality.csv")), "-o", str(target)]) == 2
    assert "exists; the draft is never written over a file" in capsys.readouterr().err and target.read_text() == "mine"


def test_unreadable_samples_fail_in_one_line(tmp_path, capsys):
    (tmp_path / "x.bin").write_bytes(b"??")
    assert cli.main(["contract", "infer", "--from", str(tmp_path / "x.bin")]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


def _year_of_readings(path: Path, rows: int) -> None:
    """Hourly readings of a year at two stations, in time order: the file's head is January only, and its
    ``reading_id`` starts again halfway (unique in any head, not over the file)."""
    import csv
    import datetime as dt

    start = dt.datetime(2023, 1, 1)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["reading_id", "station", "observed_at", "month", "temp"])
        for i in range(rows):
            at = start + dt.timedelta(hours=(i // 2) * 8760 * 2 // rows)
            writer.writerow([i % (rows // 2), f"ws-{i % 2}", at.strftime("%Y-%m-%d %H:%M:%S"), at.month,
                             "NA" if i % 97 == 0 else round(10 + (i % 300) / 10, 1)])


def test_a_large_file_is_read_whole_sampled_across_and_its_key_checked_over_every_record(tmp_path):
    """The issue's case at a test's size: 40,000 records with a 500-record sample. The ranges, missing counts and
    time span are the whole file's, the key is the smallest unique over every record (not reading_id, unique in
    the head), and there is a gold."""
    path = tmp_path / "readings.csv"
    _year_of_readings(path, 40_000)
    text = infer(path, rows=500)
    contract = parse_contract(yaml.safe_load(text))
    assert "40,000 records read, types and ranges over all of them, 500 sampled across the file" in text
    assert "- {name: month, type: int, required: true}   # file: 1 to 12" in text
    assert "- {name: temp, type: double}   # file: 10 to 39.9; 413 missing" in text
    assert contract.landing.null_values == ("", "NA")
    # reading_id alone repeats after 20,000 records: the smallest keys are pairs, ids first
    assert contract.key == ("reading_id", "observed_at")
    assert "# other keys unique over the whole file: reading_id, month" in text
    assert contract.event_time == "observed_at" and contract.lateness_minutes > 360 * 24 * 60
    assert contract.gold == ("period_summary",) and "temp" in contract.gold_options["period_summary"]["measures"]


def test_a_file_without_a_unique_key_says_so_and_a_json_array_streams_across_chunks(tmp_path):
    rows = [{"site": f"s{i % 3}", "at": "2024-01-01 00:00:00", "text": "x" * 60} for i in range(30_000)]
    array_file = tmp_path / "events.json"
    array_file.write_text("[\n" + ",\n".join(json.dumps(r) for r in rows) + "\n]\n")  # about 3.5 MB: 4 chunks of 1 MiB
    text = infer(array_file, rows=100)
    assert "30,000 records read" in text and "# TODO: no column, pair or triple of columns is unique" in text
    contract = parse_contract(yaml.safe_load(text))
    assert contract.key == ("site", "at", "text") and contract.gold == ("period_summary",)
    assert contract.gold_options["period_summary"]["measures"] == []  # no numeric column: row counts per period
