"""Row counts per layer, read back from the lake: what ``make demo`` prints at the end.

Silver and gold come from their Iceberg tables' current snapshots (the summary's record count: no data read;
``SELECT count(*) FROM gold.iot_hourly`` gives the same number). Landing, bronze and quarantine are counted
per file, and each file only once: their files are never changed in place, so the counts of the files a
count has seen are remembered beside the layer (``spark_jobs/io/counted.py``) and a later count lists the
layer and reads only the files it has not counted (a run's new batch, today's landing files).
Landing is also counted by object version against what bronze read (``spark_jobs.jobs.landing_versions``):
``landing (object versions)`` and ``landing versions ingested`` on every dataset, ``landing versions NOT
ingested`` and ``landing versions pending`` (not read by bronze yet) when there are any; the versions never
ingested are named by ``landing_warnings``, so such a gap never hides behind totals that look alike.
"""
from __future__ import annotations

from pyspark.sql import SparkSession

from spark_jobs.contract.model import load_contract
from spark_jobs.io import landing as landing_io
from spark_jobs.io import counted, storage, tables
from spark_jobs.lake.config import LakeConfig, gold_table_name


# Datasets counted at once: each count mostly waits (listings, table lookups, a small Spark job), and Spark
# runs jobs from several threads side by side, so the datasets' waits overlap instead of adding up.
PARALLEL_DATASETS = 4


def layer_counts(spark: SparkSession, lake: LakeConfig, datasets: list[str]) -> list[dict]:
    """One row per (dataset, layer or gold table): ``{"dataset", "layer", "rows", "location"}`` (silver and
    gold rows also name their ``table``); rows is None when the location holds no data yet. Datasets are
    counted concurrently (``PARALLEL_DATASETS``); the rows come in the order of ``datasets``."""
    if len(datasets) <= 1:
        return [row for dataset in datasets for row in _dataset_counts(spark, lake, dataset)]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(PARALLEL_DATASETS, len(datasets)), thread_name_prefix="counts") as pool:
        counted = [pool.submit(_dataset_counts, spark, lake, dataset) for dataset in datasets]
        return [row for rows in counted for row in rows.result()]


def _dataset_counts(spark: SparkSession, lake: LakeConfig, dataset: str) -> list[dict]:
    contract = load_contract(dataset)
    landing = lake.landing(dataset)
    landing_files = [f for f in storage.list_sized_files(spark, landing)
                     if landing_io.is_landing_file(f[0].rsplit("/", 1)[-1], contract.landing.format)]
    landing_rows = counted.count_files(spark, lake, dataset, "landing", landing_files,
                                       lambda files: _landing_records(spark, files, contract))
    table = [{"dataset": dataset, "layer": "landing (records)", "rows": landing_rows.rows if landing_files else None,
              "location": landing, "counted_files": landing_rows.counted_now},
             *_version_counts(spark, lake, contract, landing),
             _parquet_count(spark, lake, dataset, "bronze", lake.bronze(dataset)),
             _table_count(spark, lake, dataset, "silver", "silver", dataset),
             _parquet_count(spark, lake, dataset, "quarantine", lake.quarantine(dataset))]
    return table + [_table_count(spark, lake, dataset, f"gold {name}", "gold", gold_table_name(dataset, name))
                    for name in contract.gold]


def _version_counts(spark: SparkSession, lake: LakeConfig, contract, landing: str) -> list[dict]:
    """The landing versions against what bronze read: versions, ingested, and (when any) not ingested and
    pending. The ``landing (object versions)`` row carries the whole ``reconciliation`` (its summary)."""
    from spark_jobs.jobs.landing_versions import reconcile_dataset

    dataset = contract.dataset
    try:
        reconciled = reconcile_dataset(spark, lake, contract)
    except ValueError as exc:  # an unreadable checkpoint entry: bronze itself says what to do about it
        return [{"dataset": dataset, "layer": "landing (object versions)", "rows": None, "location": landing,
                 "reconciliation": {"error": str(exc)}}]
    empty = not reconciled.versions  # no landing data yet: "-", as the other layers show it
    rows = [{"dataset": dataset, "layer": "landing (object versions)", "rows": None if empty else reconciled.versions,
             "location": landing, "reconciliation": reconciled.summary()},
            {"dataset": dataset, "layer": "landing versions ingested", "rows": None if empty else reconciled.ingested,
             "location": lake.checkpoint(dataset)}]
    if reconciled.not_ingested:
        rows.append({"dataset": dataset, "layer": "landing versions NOT ingested", "rows": len(reconciled.not_ingested),
                     "location": landing, "warnings": reconciled.warnings(dataset, lake)})
    if reconciled.pending:
        rows.append({"dataset": dataset, "layer": "landing versions pending", "rows": len(reconciled.pending),
                     "location": landing})
    return rows


def landing_warnings(rows: list[dict]) -> list[str]:
    """The lines that name the landing versions bronze never ingested, per dataset of a counts table."""
    return [f"warning: {row['dataset']}: {line}" for row in rows for line in row.get("warnings") or []]


def _parquet_count(spark: SparkSession, lake: LakeConfig, dataset: str, label: str, uri: str) -> dict:
    """A Parquet layer's rows: its files listed, those not counted before counted (``counted.count_files``)."""
    files = [f for f in storage.list_sized_files(spark, uri) if f[0].endswith(".parquet")]
    found = counted.count_files(spark, lake, dataset, label, files, lambda new: counted.parquet_rows(spark, uri, new))
    return {"dataset": dataset, "layer": label, "rows": found.rows if files else None, "location": uri,
            "counted_files": found.counted_now}


def _table_count(spark: SparkSession, lake: LakeConfig, dataset: str, label: str, layer: str, name: str) -> dict:
    """Rows of the table's current snapshot (None: no table, or no snapshot yet): its summary's record count
    when it has no delete files (what ``count(*)`` answers from the same metadata), else counted by Spark.
    The table is looked up once."""
    tbl = tables.table(spark, lake, layer, name)
    loaded = tables.load(spark, tbl)
    snapshot = tables.snapshot_now(loaded)
    rows = None
    if snapshot is not None:
        rows = tables.snapshot_rows(loaded)
        if rows is None:
            rows = tables.read(spark, tbl, snapshot["snapshot_id"]).count()
    location = lake.path(layer, name)  # the table's folder: silver/<dataset>, gold/<table>
    return {"dataset": dataset, "layer": label, "rows": rows, "location": location, "table": tbl.display}


def _landing_records(spark: SparkSession, files: list[tuple[str, int]], contract) -> dict[str, int] | None:
    """Records per landing file, as bronze would count them (None when a file cannot be read)."""
    if contract.landing.is_text:
        from pyspark.sql import functions as F

        from spark_jobs.transforms import bronze as bronze_tx
        from spark_jobs.transforms import landing_text

        options = bronze_tx.line_options(contract.landing, contract.landing_fields)
        # A CSV file read in splits is counted by the split plan's pass; the workers count the other files.
        lines, offsets, splits = landing_io.landing_lines(spark, files, options, counted_by_plan=True)
        counted_lines = bronze_tx.record_counts(lines, contract.landing, contract.landing_fields, offsets=offsets)
        try:
            per_file = counted_lines.groupBy("_source_file", "_kind").agg(F.sum("_records").alias("n")).collect()
        except Exception:  # noqa: BLE001 - a file Hadoop cannot read (a .gz that is not gzip): no count
            return None
        if any(r["_kind"] == landing_text.KIND_PROBLEM for r in per_file):
            return None
        records: dict[str, int] = {}
        # A broken JSON array is one record (the whole file), whatever elements came before the break.
        broken = {r["_source_file"] for r in per_file if r["_kind"] == landing_text.KIND_BROKEN_ARRAY}
        for path in broken:
            records[path] = 1
        for r in per_file:
            if r["_kind"] == landing_text.KIND_RECORD and r["_source_file"] not in broken:
                records[r["_source_file"]] = records.get(r["_source_file"], 0) + int(r["n"])
        for (path, _), split in splits.items():
            records[path] = records.get(path, 0) + split.made
        return records
    paths = [path for path, length in files if length > 0]
    frames, problems = landing_io.read_parquet_files(spark, paths)
    if problems:
        return None
    records: dict[str, int] = {}
    for frame in frames:
        for row in frame.groupBy("_source_file").count().collect():
            records[row["_source_file"]] = records.get(row["_source_file"], 0) + int(row["count"])
    return records


def format_counts_table(rows: list[dict]) -> str:
    header = ("dataset", "layer", "rows", "location")
    cells = [[str(r["dataset"]), str(r["layer"]), "-" if r["rows"] is None else str(r["rows"]), str(r["location"])]
             for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) if i != 2 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths)))]
    lines.append("  ".join("-" * w for w in widths))
    for c in cells:
        lines.append("  ".join(v.ljust(w) if i != 2 else v.rjust(w) for i, (v, w) in enumerate(zip(c, widths))))
    return "\n".join(lines)
