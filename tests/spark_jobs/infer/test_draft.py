"""`contract infer`: a draft that the contract loader accepts, from real sample files."""
from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest
import yaml

from spark_jobs import cli
from spark_jobs.contract.model import parse_contract
from spark_jobs.infer.draft import infer


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


def test_the_reservoir_keeps_what_a_record_at_a_time_reservoir_keeps():
    """The sample is algorithm R with random.Random(42).randint(0, count) per record, whatever the batches: draws
    made a run at a time from the generator's own words (past 2^k boundaries, runs cut mid-batch), and
    getrandbits of more than one word (the path for files past 4 billion records) as CPython makes it."""
    import random

    from spark_jobs.infer.stats import Reservoir, _Draws

    expected, draws = [], random.Random(42)
    for count in range(70_000):
        if len(expected) < 100:
            expected.append(count)
        elif (slot := draws.randint(0, count)) < 100:
            expected[slot] = count
    reservoir, start = Reservoir(100), 0
    for size in [1, 7, 92, 3, 4096, 16_383, 1, 30_000, 19_417]:
        chosen = reservoir.offer(size)
        reservoir.store(chosen, (start + i for i in chosen.values()))
        start += size
    assert (reservoir.count, reservoir.items) == (70_000, expected)
    ours, theirs = _Draws(7), random.Random(7)
    assert [ours.getrandbits(k) for k in (1, 31, 32, 33, 64, 65, 100, 5)] == \
        [theirs.getrandbits(k) for k in (1, 31, 32, 33, 64, 65, 100, 5)]


def _csv(path: Path, header: list[str], rows: list[list[str]], **kwargs) -> Path:
    import csv

    with path.open("w", newline="", encoding=kwargs.pop("encoding", "utf-8")) as handle:
        writer = csv.writer(handle, **kwargs)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_values_are_read_as_python_reads_them(tmp_path):
    """pyarrow's casts read a narrower grammar than int() and float(), and hexadecimal besides: the draft types
    a value as Python would, whatever reads it."""
    rows = [[f"+{i}", str(10 ** 20 + i), f"0x{i:x}", f"{i}_000.5", "NAN" if i % 50 == 0 else f"{i}.25", f" {i} ",
             ["tRuE", "FALSE", " true "][i % 3], "N/A" if i % 10 == 0 else str(i)] for i in range(3000)]
    path = _csv(tmp_path / "values.csv", ["plus", "huge", "hex", "under", "upper_nan", "padded", "flag", "na"], rows)
    text = infer(path)
    assert "- {name: plus, type: int, required: true}   # file: 0 to 2999" in text
    assert "- {name: huge, type: long, required: true}   # file: 100000000000000000000 to 100000000000000000000" in text
    assert "- {name: hex, type: string, required: true}" in text
    assert "- {name: under, type: double, required: true}   # file: 0.5 to 2.999e+06" in text
    assert "- {name: upper_nan, type: double, required: true}   # file: 1.25 to 2999.25" in text  # NAN: a number
    assert "- {name: padded, type: int, required: true}   # file: 0 to 2999" in text
    assert "- {name: flag, type: boolean, required: true}" in text
    assert "- {name: na, type: int}   # file: 1 to 2999; 300 missing" in text
    assert parse_contract(yaml.safe_load(text)).landing.null_values == ("", "N/A")


def _dialect_files(folder: Path) -> list[Path]:
    """CSV files that test the readers' dialect: each a case Python's csv module reads in its own way."""
    import gzip

    rows = [[f"r{i}", f"2024-01-{1 + i % 28:02d} {i % 24:02d}:{i % 60:02d}:00", str(i % 1000), f"{i / 7:.3f}",
             ["a", "b, c", 'q"uote', "two\nlines", "  pad  ", "é", "NA"][i % 7]] for i in range(6000)]
    header = ["id", "at", "n", "x", "txt"]
    files = [_csv(folder / "semicolon.csv", header, rows, delimiter=";"),
             _csv(folder / "tab.tsv", header, rows, delimiter="\t", lineterminator="\r\n")]
    (folder / "plain.csv.gz").write_bytes(gzip.compress(_csv(folder / "plain.csv", header, rows).read_bytes()))
    files.append(folder / "plain.csv.gz")
    (folder / "no_header.csv").write_text("".join(f"{i},{i * 3},x{i}\n" for i in range(2000)))
    ragged = "".join(f"{i},{i * 2},x{i}\n" + ("\n" if i % 100 == 0 else "") + ("   \n" if i % 150 == 0 else "")
                     + ('""\n' if i % 170 == 0 else "") + (f"{i},{i}\n" if i % 97 == 0 else "")
                     + (f"{i},{i},{i},{i}\n" if i % 89 == 0 else "") for i in range(5000))
    (folder / "ragged.csv").write_text("a,b,c\n" + ragged + '"open,7\n8,9\n')
    (folder / "one_column.csv").write_text("v\n" + "".join(f"{i}\n" + ("  \n" if i % 10 == 0 else "") for i in range(3000)))
    (folder / "bom_cr.csv").write_bytes("\ufeffname,v\r".encode() + "".join(f"n{i},{i}\r" for i in range(3000)).encode())
    # UTF-8 over the first MiB, ISO-8859-1 after it: read again as ISO-8859-1
    (folder / "latin_late.csv").write_bytes(("id,txt\n" + "".join(f"{i},ascii text\n" for i in range(65_000))).encode()
                                            + "".join(f"{i},café\n" for i in range(65_000, 66_000)).encode("iso-8859-1"))
    return files + [folder / n for n in ("no_header.csv", "ragged.csv", "one_column.csv", "bom_cr.csv", "latin_late.csv")]


def test_pyarrows_reader_makes_the_draft_pythons_csv_module_makes(tmp_path, capsys, monkeypatch):
    """Each dialect case through pyarrow's reader (no fallback line) and through Python's csv module alone: the
    same draft, with the sample small enough that records replace each other in it."""
    from spark_jobs.infer import read as infer_read

    for path in _dialect_files(tmp_path):
        native = infer(path, dataset="cases", rows=50)
        assert capsys.readouterr().err == "", path.name
        with monkeypatch.context() as patch:
            patch.setattr(infer_read, "CSV_READERS", (infer_read.PythonCsv,))
            assert infer(path, dataset="cases", rows=50) == native, path.name
    ragged = infer(tmp_path / "ragged.csv")
    assert "# 110 records have another field count than the header: silver will quarantine them" in ragged
    assert "5,000 records read" in ragged
    assert "  encoding: iso-8859-1" in infer(tmp_path / "latin_late.csv")


def test_a_file_pyarrow_reads_otherwise_is_read_by_pythons_csv_module_with_one_line(tmp_path, capsys):
    """A blank first line before the header: pyarrow takes it for the header; Python's csv module skips it."""
    path = tmp_path / "blank_first.csv"
    path.write_text("   \nid,v\n" + "".join(f"{i},{i * 2}\n" for i in range(3000)))
    contract = parse_contract(yaml.safe_load(infer(path)))
    assert contract.key == ("id",) and [c.name for c in contract.schema[:2]] == ["id", "v"]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pyarrow's CSV reader cannot read it as Python's csv module does" in err
    assert "reading it with Python's csv module instead (slower)" in err
