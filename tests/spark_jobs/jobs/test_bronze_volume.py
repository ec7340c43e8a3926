"""Bronze at volume and at shape, for correctness (timing is bench/ingest.py's): a 50,000-row CSV and JSON-lines
export land and reach gold equal to DuckDB reading the same file; gzip input gives the same bronze; a large CSV
with a quoted multi-line field, a malformed record and a byte-order mark near its end keeps every record; one
file spanning hundreds of month partitions reaches gold equal to DuckDB.

The files come from bench/ingest_data.py (15 columns, ``NA`` for null, quoted fields with delimiters,
quotes and line breaks, a few rule breakers) and the contracts from bench/contracts/. One Spark session
(the package's ``spark`` fixture), local-folder lakes, validation off (this is about counts).
"""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from bench import duckdb_reference as ref
from bench.ingest_data import CONTRACTS_DIR, DATASETS, WIDE_DATASETS, write_file, write_wide_span_file
from spark_jobs import cli
from spark_jobs.contract.model import load_contract
from spark_jobs.io import landing as landing_io
from spark_jobs.jobs.report import layer_counts
from spark_jobs.lake.config import LakeConfig, resolve_lake
from spark_jobs.transforms import bronze as bronze_tx

pytestmark = pytest.mark.integration

ROWS = 50_000


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    work = tmp_path_factory.mktemp("bronze-volume")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TENANTLAKE_CONTRACTS_DIR", str(CONTRACTS_DIR))
        patch.setenv("TENANTLAKE_STATE_DIR", str(work / "state"))
        patch.setenv("TENANTLAKE_VALIDATION", "off")
        yield work


@pytest.fixture(scope="module")
def files(env):
    """The 50,000-row exports, plain and gzip (the same bytes inside)."""
    out = {}
    for landing_format in DATASETS:
        plain = write_file(env / "data" / f"stations.{'csv' if landing_format == 'csv' else 'jsonl'}", ROWS, landing_format)
        packed = plain.with_name(plain.name + ".gz")
        packed.write_bytes(gzip.compress(plain.read_bytes(), compresslevel=1))
        out[landing_format] = {"plain": plain, "gzip": packed}
    return out


def _land_and_run(lake: Path, dataset: str, path: Path, layers: tuple[str, ...]) -> None:
    assert cli.main(["land", "--lake-uri", str(lake), "--dataset", dataset, str(path)]) == 0
    if layers == ("bronze", "silver", "gold"):
        assert cli.main(["run-all", "--lake-uri", str(lake), "--dataset", dataset]) == 0
        return
    for layer in layers:
        assert cli.main(["run", "--lake-uri", str(lake), "--dataset", dataset, "--layer", layer]) == 0


@pytest.fixture(scope="module")
def plain_runs(env, files):
    """Each 50,000-row file landed into a lake of its own and taken to gold with run-all."""
    lakes = {}
    for landing_format, dataset in DATASETS.items():
        lake = env / f"lake-{landing_format}"
        _land_and_run(lake, dataset, files[landing_format]["plain"], ("bronze", "silver", "gold"))
        lakes[landing_format] = lake
    return lakes


def _bronze(spark, lake: Path, dataset: str):
    return spark.read.parquet(str(lake / "bronze" / dataset))


@pytest.mark.parametrize("landing_format", list(DATASETS))
def test_a_50k_row_export_reaches_gold_equal_to_duckdb(spark, env, files, plain_runs, landing_format):
    dataset = DATASETS[landing_format]
    contract = load_contract(dataset)
    lake = plain_runs[landing_format]
    bronze = _bronze(spark, lake, dataset)
    assert bronze.count() == ROWS and bronze.where("_is_malformed").count() == 0
    reference = env / f"duckdb-{landing_format}"
    con = ref.connect(2)
    try:
        counts = ref.run_silver_from_file(con, contract, files[landing_format]["plain"], reference)
        ref.run_gold(con, contract, reference / "silver", reference)
    finally:
        con.close()
    assert counts["rows_in"] == ROWS and counts["quarantined"] > 0 and counts["late"] == 0
    checks = ref.compare_all(contract, lake, reference)
    assert {c["check"] for c in checks} >= {"silver_rows", "quarantine_rows", "quarantine_by_rule", "silver_checksum",
                                            "gold_period_summary"}
    assert [c for c in checks if not c["equal"]] == []


@pytest.mark.parametrize("landing_format", list(DATASETS))
def test_gzip_input_gives_the_same_bronze_records(spark, env, files, plain_runs, landing_format):
    dataset = DATASETS[landing_format]
    lake = env / f"lake-{landing_format}-gzip"
    _land_and_run(lake, dataset, files[landing_format]["gzip"], ("bronze",))
    landed = list((lake / "landing" / dataset).iterdir())
    assert [p.name.endswith(".gz") for p in landed] == [True]

    def records(frame):  # what a record is, whatever file it came from
        return frame.select("_raw", "_record_index", "_is_malformed", F.to_json("_fields").alias("_fields"))

    gz = records(_bronze(spark, lake, dataset))
    plain = records(_bronze(spark, plain_runs[landing_format], dataset))
    assert gz.count() == ROWS
    assert gz.exceptAll(plain).count() == 0 and plain.exceptAll(gz).count() == 0


def test_a_large_csv_keeps_every_record_near_its_end(spark, env, files):
    """Near the end of a 50,000-row export: a quoted field over three lines, a record with a field too many,
    and a second export appended with its byte-order mark (as `cat a.csv b.csv` makes it): every record is
    in bronze, each special one whole and judged as a record on its own."""
    body = files["csv"]["plain"].read_bytes()
    row = b"ws-9999,2024-03-01 00:00:00,1.0,0.0,50.0,1000.0,1.0,90,NA,10.0,0.0,NA,4,NA,"
    multi_line = row.replace(b"ws-9999", b"ws-9998") + b'"first line\nsecond, with a comma\nthird ""quoted"""'
    too_many = row.replace(b"ws-9999", b"ws-9997") + b"ok,extra"
    bommed = b"\xef\xbb\xbf" + row.replace(b"ws-9999", b"ws-9996") + b"ok"
    last = row + b"last"
    path = env / "data" / "edge.csv"
    path.write_bytes(body + b"\n".join([multi_line, too_many, bommed, last]) + b"\n")
    lake = env / "lake-edge"
    _land_and_run(lake, DATASETS["csv"], path, ("bronze",))
    contract = load_contract(DATASETS["csv"])
    landed = landing_io.landing_files(spark, str(lake / "landing" / DATASETS["csv"]), contract.landing)
    splits, whole = landing_io.csv_split_plan(spark, landed, bronze_tx.line_options(contract.landing, contract.landing_fields))
    assert len(splits) == 2 and not whole  # read by two tasks, each from where its records start
    bronze = _bronze(spark, lake, DATASETS["csv"])
    assert bronze.count() == ROWS + 4
    # The counts table's landing row takes this file's records from the plan's pass (no second pass over it).
    assert sum(split.made for split in splits.values()) == ROWS + 4
    counts = {row["layer"]: row["rows"] for row in layer_counts(spark, resolve_lake(lake_uri=str(lake)), [DATASETS["csv"]])}
    assert counts["landing (records)"] == counts["bronze"] == ROWS + 4
    assert bronze.select(F.countDistinct("_record_index")).first()[0] == ROWS + 4
    # The header is record 0 and the export's records 1 .. ROWS (some over two lines): the new ones follow.
    appended = {r["_raw"]: r for r in bronze.where(F.col("_record_index") > ROWS).collect()}
    assert sorted(r["_record_index"] for r in appended.values()) == [ROWS + 1, ROWS + 2, ROWS + 3, ROWS + 4]
    assert set(appended) == {text.decode("utf-8") for text in (multi_line, too_many, bommed, last)}
    kept = appended[multi_line.decode()]
    assert kept["_is_malformed"] is False
    assert kept["_fields"]["remarks"] == 'first line\nsecond, with a comma\nthird "quoted"'
    assert appended[too_many.decode()]["_is_malformed"] is True and appended[too_many.decode()]["_fields"] is None
    # A byte-order mark inside the file is text of the record it starts (only a file's first one is dropped).
    bom_record = appended[bommed.decode("utf-8")]
    assert bom_record["_is_malformed"] is False and bom_record["station_id"] == "\ufeffws-9996"
    assert appended[last.decode()]["_fields"]["remarks"] == "last"


def test_a_file_spanning_hundreds_of_months_reaches_gold_equal_to_duckdb(spark, env):
    """One CSV export of 4,000 readings over 32 years (``partition_granularity: month``): silver, its quarantine
    and gold hold what DuckDB computes from the same file, and each table has a partition per month."""
    dataset = WIDE_DATASETS["csv"]
    contract = load_contract(dataset)
    path = write_wide_span_file(env / "data" / "wide-span.csv", 4_000, "csv", stations=10)
    lake = env / "lake-wide-span"
    _land_and_run(lake, dataset, path, ("bronze", "silver", "gold"))
    reference = env / "duckdb-wide-span"
    con = ref.connect(2)
    try:
        counts = ref.run_silver_from_file(con, contract, path, reference)
        ref.run_gold(con, contract, reference / "silver", reference)
    finally:
        con.close()
    assert counts["rows_in"] == 4_000 and counts["quarantined"] > 0
    assert [c for c in ref.compare_all(contract, lake, reference) if not c["equal"]] == []
    silver_months = [p.name for p in (lake / "silver" / dataset / "data").iterdir()]
    gold_months = [p.name for p in (lake / "gold" / f"{dataset}_period_summary" / "data").iterdir()]
    assert len(silver_months) >= 370 and len(gold_months) == len(silver_months)
    assert all(name.startswith("observed_at_month=") for name in silver_months)
    assert {p.name.split("=")[0] for p in (lake / "quarantine" / dataset).iterdir()} == {"event_month"}
