"""Readers of the Parquet layers: bronze and quarantine (landing files: ``spark_jobs/io/landing.py``; silver
and gold are Iceberg tables: ``spark_jobs/io/tables.py``)."""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from spark_jobs.io import storage


class MissingInputError(RuntimeError):
    """A layer's input does not exist yet; the message names the command that creates it."""


def read_layer(spark: SparkSession, uri: str, what: str, hint: str, schema: StructType | None = None) -> DataFrame:
    """The Parquet layer at ``uri``; with ``schema`` (bronze: ``transforms.bronze.bronze_schema``), files that
    lack one of its columns read it as null."""
    if not storage.has_data_files(spark, uri):
        raise MissingInputError(f"{what} has no data at {uri}; {hint}")
    reader = spark.read.schema(schema) if schema is not None else spark.read
    return reader.parquet(uri)



def record_index_type(spark: SparkSession, bronze_uri: str) -> str:
    """How the bronze layer at ``bronze_uri`` stores ``_record_index``: ``long`` (64-bit), or ``int`` in a layer
    written before it was 64-bit. Such a layer keeps 32 bits for every batch after, so that all its partitions
    read alike: Spark 3.5 cannot read a 32-bit Parquet column as 64-bit, nor one column as both. Read from the
    footer of one of its files (a listing that stops at the first file, and one read; no Spark job);
    ``long`` for a layer with no data."""
    first = storage.first_data_file(spark, bronze_uri)
    if first is None:
        return "long"
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(first)
    footer = jvm.org.apache.parquet.hadoop.ParquetFileReader.readFooter(
        spark.sparkContext._jsc.hadoopConfiguration(), path, jvm.org.apache.parquet.format.converter
        .ParquetMetadataConverter.NO_FILTER)
    schema = footer.getFileMetaData().getSchema()
    if not schema.containsField("_record_index"):
        return "long"
    kind = str(schema.getType("_record_index").asPrimitiveType().getPrimitiveTypeName().name())
    return "int" if kind == "INT32" else "long"


def planned_bytes(df: DataFrame) -> int | None:
    """The bytes ``df``'s plan reads as Spark estimates them: for files (a Parquet layer), the listed files'
    sizes. Asks the query plan only: no Spark job, no request. None when Spark gives no estimate."""
    try:
        size = df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()  # a Scala BigInt
        return int(size if isinstance(size, int) else size.longValue())  # py4j converts it to int
    except Exception:  # noqa: BLE001 - an estimate only; None means "not known to be small"
        return None
