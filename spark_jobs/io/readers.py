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



# Up to this many files, ``row_group_statistics`` reads their footers one by one in the driver; more, and it
# gives up (the caller's Spark job reads them in parallel instead).
MAX_FOOTER_FILES = 32


def _footer(spark: SparkSession, path: str):
    """The Parquet footer of one file (a read of its tail through Hadoop's FileSystem; no Spark job)."""
    jvm = spark.sparkContext._jvm
    return jvm.org.apache.parquet.hadoop.ParquetFileReader.readFooter(
        spark.sparkContext._jsc.hadoopConfiguration(), jvm.org.apache.hadoop.fs.Path(path),
        jvm.org.apache.parquet.format.converter.ParquetMetadataConverter.NO_FILTER)


def row_group_statistics(spark: SparkSession, files: list[str], columns: tuple[str, ...]) -> list[dict] | None:
    """Per row group of the Parquet ``files``, from their footers: ``{column: (min, max, nulls)}`` for each of
    the top-level ``columns`` whose statistics the file holds (a column without them, or with only nulls, is
    left out). None for no files or more than ``MAX_FOOTER_FILES``. Reads each footer (a few requests per
    file), no Spark job."""
    if not files or len(files) > MAX_FOOTER_FILES:
        return None
    groups = []
    for path in files:
        for block in _footer(spark, path).getBlocks():
            found = {}
            for chunk in block.getColumns():
                name = str(chunk.getPath().toDotString())
                stats = chunk.getStatistics()
                if name in columns and stats is not None and not stats.isEmpty() and stats.hasNonNullValue():
                    found[name] = (stats.genericGetMin(), stats.genericGetMax(), int(stats.getNumNulls()))
            groups.append(found)
    return groups


def record_index_type(spark: SparkSession, bronze_uri: str) -> str:
    """How the bronze layer at ``bronze_uri`` stores ``_record_index``: ``long`` (64-bit), or ``int`` in a layer
    written before it was 64-bit. Such a layer keeps 32 bits for every batch after, so that all its partitions
    read alike: Spark 3.5 cannot read a 32-bit Parquet column as 64-bit, nor one column as both. Read from the
    footer of one of its files (a listing that stops at the first file, and one read; no Spark job);
    ``long`` for a layer with no data."""
    first = storage.first_data_file(spark, bronze_uri)
    if first is None:
        return "long"
    schema = _footer(spark, first).getFileMetaData().getSchema()
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
