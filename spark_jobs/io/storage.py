"""Small-file access through Hadoop's FileSystem API: the same code on s3a, EMRFS (s3://) and local paths,
with the session's encryption settings (no boto3 in the jobs)."""
from __future__ import annotations

from pyspark.sql import SparkSession


def _fs_and_path(spark: SparkSession, uri: str):
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def write_text(spark: SparkSession, uri: str, text: str) -> None:
    """Write (overwrite) one small object. On S3 a single PUT: readers see the old or the new text."""
    fs, path = _fs_and_path(spark, uri)
    stream = fs.create(path, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()


def read_text(spark: SparkSession, uri: str) -> str:
    fs, path = _fs_and_path(spark, uri)
    stream = fs.open(path)
    try:
        return spark.sparkContext._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
    finally:
        stream.close()


def exists(spark: SparkSession, uri: str) -> bool:
    fs, path = _fs_and_path(spark, uri)
    return bool(fs.exists(path))


def has_data_files(spark: SparkSession, uri: str) -> bool:
    """True when ``uri`` holds at least one visible (not ``_``/``.``-prefixed) file, at any depth."""
    fs, path = _fs_and_path(spark, uri)
    if not fs.exists(path):
        return False
    files = fs.listFiles(path, True)
    while files.hasNext():
        name = files.next().getPath().getName()
        if not name.startswith(("_", ".")):
            return True
    return False


def list_dir(spark: SparkSession, uri: str) -> list[str]:
    """Names directly under ``uri`` (empty when it does not exist)."""
    fs, path = _fs_and_path(spark, uri)
    if not fs.exists(path):
        return []
    return sorted(status.getPath().getName() for status in fs.listStatus(path))
