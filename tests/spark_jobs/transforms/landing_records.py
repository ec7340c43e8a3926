"""Tests' way into the live bronze path for a few small files held as text: the files are cut into lines as
Spark's line reader cuts them (``io/landing.read_lines``), then turned into records by
``bronze.records_from_lines`` (what the bronze job calls), a broken ``json_array`` file kept whole by
``bronze.whole_file_records``, as the job does."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_jobs.contract.parts import LandingSpec
from spark_jobs.transforms import bronze, landing_text


def text_lines(body: bytes) -> list[bytes]:
    """A file's lines as Spark's line reader (``lineSep`` ``\\n``) gives them: no line after a final ``\\n``."""
    if not body:
        return []
    lines = body.split(b"\n")
    return lines[:-1] if body.endswith(b"\n") else lines


def split_landing_records(landing_files: DataFrame, landing: LandingSpec | str,
                          field_names: tuple[str, ...] | int | None = None, streams: bool = False) -> DataFrame:
    """``(value: a file's whole text, _source_file)`` -> the records of ``bronze.records_from_lines``. A broken
    ``json_array`` file becomes its one whole-file malformed row; problem rows stay (``_file_problem`` set).
    ``field_names`` may be a field count (names ``_c0``, ``_c1``, ...); ``streams``: files under Firehose's
    time prefix are stream objects (JSON datasets)."""
    landing = bronze.landing_spec(landing)
    if isinstance(field_names, int):
        field_names = tuple(f"_c{i}" for i in range(field_names))
    spark = landing_files.sparkSession
    files = [(bytes(r[0]), r[1]) for r in landing_files.select(F.col("value").cast("binary"), "_source_file").collect()]
    lines = [(line, path) for body, path in files for line in text_lines(body)]
    frame = spark.createDataFrame(lines, "_line binary, _source_file string").coalesce(1)
    records = bronze.records_from_lines(frame, landing, tuple(field_names or ()), streams)
    broken = {r[0] for r in records.where(F.col("_kind") == F.lit(landing_text.KIND_BROKEN_ARRAY))
              .select("_source_file").collect()}
    kept = records.where((F.col("_kind") != F.lit(landing_text.KIND_BROKEN_ARRAY))
                         & ~F.col("_source_file").isin(list(broken)))
    if not broken:
        return kept
    whole = spark.createDataFrame([(body, path) for body, path in files if path in broken], "value binary, _source_file string")
    return kept.unionByName(bronze.whole_file_records(whole, kept.columns, kept.schema))
