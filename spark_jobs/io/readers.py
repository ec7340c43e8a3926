"""Readers: landing files (streaming and batch), and the Parquet layers (bronze, quarantine). Silver and
gold are Iceberg tables: ``spark_jobs.io.tables``."""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs.io import storage

LANDING_GLOB = "*.json*"  # .json and .jsonl; temp files a producer hides as .x or _x are skipped


class MissingInputError(RuntimeError):
    """A layer's input does not exist yet; the message names the command that creates it."""


def _whole_files(reader) -> DataFrame:
    return reader.load().select("value", F.col("_metadata.file_path").alias("_source_file"))


def landing_stream(spark: SparkSession, landing_uri: str, max_files_per_trigger: int) -> DataFrame:
    """A streaming DataFrame of whole landing files: (value, _source_file). The file source's
    checkpoint remembers every file it has handed out, so each file is ingested exactly once."""
    reader = (
        spark.readStream.format("text")
        .option("wholetext", "true")
        .option("recursiveFileLookup", "true")  # Firehose objects sit under YYYY/MM/DD/HH/ (stream_records.py)
        .option("pathGlobFilter", LANDING_GLOB)
        .option("maxFilesPerTrigger", str(max_files_per_trigger))
        .option("path", landing_uri)
    )
    return _whole_files(reader)


def landing_files(spark: SparkSession, landing_uri: str) -> DataFrame:
    """The same (value, _source_file) rows as a batch read, for counts and checks."""
    reader = (
        spark.read.format("text")
        .option("wholetext", "true")
        .option("recursiveFileLookup", "true")
        .option("pathGlobFilter", LANDING_GLOB)
        .option("path", landing_uri)
    )
    return _whole_files(reader)


def read_layer(spark: SparkSession, uri: str, what: str, hint: str) -> DataFrame:
    if not storage.has_data_files(spark, uri):
        raise MissingInputError(f"{what} has no data at {uri}; {hint}")
    return spark.read.parquet(uri)

