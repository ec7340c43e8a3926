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
