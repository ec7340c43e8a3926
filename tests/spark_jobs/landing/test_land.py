"""`land`: every file checked before anything is uploaded, content-addressed names, nothing landed twice.

A local-folder lake here (no Spark, no emulator); the emulator path (SSE-KMS with the tenant key,
conditional puts) is exercised end to end in tests/spark_jobs/landing/test_land_real_data.py.
"""
from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from spark_jobs import cli
from spark_jobs.contract.model import parse_contract
from spark_jobs.landing.files import check_file

CONTRACT = parse_contract({
    "dataset": "readings", "landing": {"format": "csv", "null_values": ["", "NA"]}, "key": ["id"], "event_time": "ts",
    "schema": [{"name": "id", "type": "string", "required": True}, {"name": "ts", "type": "timestamp", "required": True},
               {"name": "v", "type": "double"}],
})
GOOD = b"id,ts,v\n1,2024-01-01T00:00:00Z,NA\n2,2024-01-01T01:00:00Z,2.5\n"


@pytest.fixture
def contracts(tmp_path, monkeypatch):
    folder = tmp_path / "contracts"
    folder.mkdir()
    (folder / "readings.yaml").write_text(json.dumps({
        "dataset": "readings", "landing": {"format": "csv", "null_values": ["", "NA"]}, "key": ["id"],
        "event_time": "ts", "schema": [{"name": "id", "type": "string", "required": True},
                                       {"name": "ts", "type": "timestamp", "required": True},
                                       {"name": "v", "type": "double"}]}))
    monkeypatch.setenv("TENANTLAKE_CONTRACTS_DIR", str(folder))
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    return folder


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _landing(lake: Path) -> dict[str, bytes]:
    folder = lake / "landing" / "readings"
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())} if folder.is_dir() else {}


def test_a_folder_lands_under_content_names_and_a_second_land_writes_nothing(tmp_path, contracts, capsys):
    inbox = tmp_path / "inbox"
    _write(inbox / "a.csv", GOOD)
    _write(inbox / "sub" / "b.csv.gz", gzip.compress(b"id,ts,v\n3,2024-01-02T00:00:00Z,1\n"))
    _write(inbox / "copy-of-a.csv", GOOD)
    _write(inbox / "notes.md", b"not data")
    _write(inbox / ".hidden.csv", b"\x00")
    _write(inbox / "empty.csv", b"")
    lake = tmp_path / "lake"
    assert cli.main(["land", "--lake-uri", str(lake), "--dataset", "readings", str(inbox)]) == 0
    out, err = capsys.readouterr()
    sha_a = hashlib.sha256(GOOD).hexdigest()
    landed = _landing(lake)
    assert set(landed) == {f"{sha_a}.csv", f"{hashlib.sha256((inbox / 'sub' / 'b.csv.gz').read_bytes()).hexdigest()}.csv.gz"}
    assert landed[f"{sha_a}.csv"] == GOOD
    assert f"land readings: landed 2 file(s)" in out
    assert "1 file(s) repeat another's content: landed once" in out and "1 empty file(s) skipped" in out
    assert "1 file(s) in the folders are not csv by name, not landed:" in out and "notes.md" in out
    assert f"next: python -m spark_jobs run-all --lake-uri {lake} --dataset readings" in out
    assert "[land readings] [1/2] landed" in err and "[land readings] [2/2] landed" in err

    assert cli.main(["land", "--lake-uri", str(lake), "--dataset", "readings", str(inbox / "a.csv")]) == 0
    out, _ = capsys.readouterr()
    assert "landed 0 file(s)" in out and "1 file(s) already landed (same content), not written again" in out
    assert set(_landing(lake)) == set(landed)


def test_one_bad_file_refuses_the_whole_batch_with_one_line_per_file(tmp_path, contracts, capsys):
    inbox = tmp_path / "inbox"
    _write(inbox / "good.csv", GOOD)
    _write(inbox / "latin1.csv", "id,ts,v\n1,2024-01-01T00:00:00Z,caf\xe9\n".encode("iso-8859-1"))
    _write(inbox / "renamed.csv", b"id,time,v\n1,2024-01-01T00:00:00Z,1\n")
    _write(inbox / "semicolons.csv", b"id;ts;v\n1;2024-01-01T00:00:00Z;1\n")
    _write(inbox / "fake.csv.gz", b"id,ts,v\n")
    lake = tmp_path / "lake"
    code = cli.main(["land", "--lake-uri", str(lake), "--dataset", "readings", str(inbox), str(tmp_path / "missing.csv")])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and _landing(lake) == {}
    errors = [line for line in err if line.startswith("error: ")]
    assert errors == [
        f"error: land readings: {tmp_path / 'missing.csv'}: no such file or folder",
        f"error: land readings: {inbox / 'latin1.csv'} is not UTF-8 text (byte 0xe9 at offset 34, line 2); save it as "
        "UTF-8, or set landing.encoding in the contract",
        f"error: land readings: {inbox / 'renamed.csv'} has no column ts in its header (header: id, time, v)",
        f"error: land readings: {inbox / 'semicolons.csv'} has no column id, ts in its header (it looks ';'-delimited, "
        "the contract says ','; header: id;ts;v)",
        "error: land readings: nothing was landed (4 of 6 refused)",  # fake.csv.gz is plain CSV: it would land as .csv
    ]


@pytest.mark.parametrize("name, data, problem", [
    ("p.csv", b"PAR1\x00\x00PAR1", "is a Parquet file, not CSV"),
    ("n.csv", b"id,ts,v\n1,\x00,2\n", "holds NUL bytes: binary data, not CSV text"),
    ("z.csv.gz", b"\x1f\x8b\x08\x00broken", "is a damaged gzip file"),
    ("d.csv", b"id,ts,v,id\n", "has a header that repeats 'id'"),
    ("x.csv", b"id,ts,v,extra\n", "has header column(s) the contract does not know: extra"),
])
def test_check_file_problems(tmp_path, name, data, problem):
    check = check_file(_write(tmp_path / name, data), CONTRACT)
    assert check.problem is not None and check.problem.startswith(problem), check.problem


def test_a_gzip_file_lands_as_gz_whatever_its_name(tmp_path):
    check = check_file(_write(tmp_path / "plain-name.csv", gzip.compress(GOOD)), CONTRACT)
    assert check.problem is None and check.gzip and check.object_name("csv").endswith(".csv.gz")


def test_dry_run_uploads_nothing(tmp_path, contracts, capsys):
    lake = tmp_path / "lake"
    assert cli.main(["land", "--lake-uri", str(lake), "--dataset", "readings", "--dry-run",
                     str(_write(tmp_path / "a.csv", GOOD))]) == 0
    assert "would land 1 file(s)" in capsys.readouterr().out and _landing(lake) == {}


def test_parquet_checks(tmp_path):
    import duckdb

    contract = parse_contract({"dataset": "pq", "landing": {"format": "parquet"},
                               "key": ["id"], "event_time": "ts",
                               "schema": [{"name": "id", "type": "string", "required": True},
                                          {"name": "ts", "type": "timestamp", "required": True}]})
    good, nanos, lacking = tmp_path / "good.parquet", tmp_path / "nanos.parquet", tmp_path / "lacking.parquet"
    duckdb.sql(f"COPY (SELECT 'a' AS id, TIMESTAMP '2024-01-01 00:00:00' AS ts) TO '{good}' (FORMAT parquet)")
    duckdb.sql(f"COPY (SELECT 'a' AS id, TIMESTAMP_NS '2024-01-01 00:00:00' AS ts) TO '{nanos}' (FORMAT parquet)")
    duckdb.sql(f"COPY (SELECT 'a' AS id) TO '{lacking}' (FORMAT parquet)")
    assert check_file(good, contract).problem is None
    assert check_file(nanos, contract).problem.startswith("has nanosecond timestamps (ts), which Spark 3.5 cannot read")
    assert check_file(lacking, contract).problem == "has no column ts in its schema (schema: id)"
    assert check_file(_write(tmp_path / "c.parquet", GOOD), contract).problem.startswith("is not a Parquet file")


def test_land_help_shows_no_spark_options(capsys):
    import pytest as _pytest

    from spark_jobs.cli import main as cli_main

    with _pytest.raises(SystemExit):
        cli_main(["land", "--help"])
    out = capsys.readouterr().out
    assert "--tenant" in out and "--jars" not in out
