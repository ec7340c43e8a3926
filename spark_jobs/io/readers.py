"""Readers of the parquet layers (landing files: ``spark_jobs/io/landing.py``)."""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from spark_jobs.io import storage


class MissingInputError(RuntimeError):
    """A layer's input does not exist yet; the message names the command that creates it."""


def read_layer(spark: SparkSession, uri: str, what: str, hint: str) -> DataFrame:
    if not storage.has_data_files(spark, uri):
        raise MissingInputError(f"{what} has no data at {uri}; {hint}")
    return spark.read.parquet(uri)


def read_partitions(spark: SparkSession, uri: str, column: str, values: list[str]) -> DataFrame:
    """Rows of the given partitions only (``uri`` as the base path, so the column is kept)."""
    existing = [f"{uri}/{column}={v}" for v in values if storage.exists(spark, f"{uri}/{column}={v}")]
    if not existing:
        return spark.read.parquet(uri).limit(0) if storage.has_data_files(spark, uri) else None
    return spark.read.option("basePath", uri).parquet(*existing)
