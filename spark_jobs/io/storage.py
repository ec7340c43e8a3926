"""Small-file access through Hadoop's FileSystem API: the same code on s3a, EMRFS (s3://) and local paths,
with the session's encryption settings (no boto3 in the jobs); and ``file_key``, one name for a file however a
lister spells its path (the bronze checkpoint, the ingest ledger and the landing check compare by it)."""
from __future__ import annotations

from urllib.parse import unquote, urlparse

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
    return first_data_file(spark, uri) is not None


def first_data_file(spark: SparkSession, uri: str) -> str | None:
    """The first visible (not ``_``/``.``-prefixed) file under ``uri`` at any depth, as Hadoop names it; None
    when there is none."""
    fs, path = _fs_and_path(spark, uri)
    if not fs.exists(path):
        return None
    files = fs.listFiles(path, True)
    while files.hasNext():
        found = files.next().getPath()
        if not found.getName().startswith(("_", ".")):
            return str(found.toString())
    return None


def list_dir(spark: SparkSession, uri: str) -> list[str]:
    """Names directly under ``uri`` (empty when it does not exist)."""
    fs, path = _fs_and_path(spark, uri)
    if not fs.exists(path):
        return []
    return sorted(status.getPath().getName() for status in fs.listStatus(path))


def list_files(spark: SparkSession, uri: str) -> list[tuple[str, str, int]]:
    """Every visible file under ``uri`` at any depth, as ``(path, uri_form, modified_ms)``: ``path`` is
    Hadoop's ``Path.toString()`` (what Spark's ``_metadata.file_path`` holds), ``uri_form`` its
    ``toUri()`` string (what the streaming file source records in its checkpoint)."""
    fs, path = _fs_and_path(spark, uri)
    if not fs.exists(path):
        return []
    found = []
    files = fs.listFiles(path, True)
    while files.hasNext():
        status = files.next()
        file_path = status.getPath()
        if not file_path.getName().startswith(("_", ".")):
            found.append((file_path.toString(), file_path.toUri().toString(), int(status.getModificationTime())))
    return found


def list_sized_files(spark: SparkSession, uri: str) -> list[tuple[str, int, int]]:
    """Every visible file under ``uri`` at any depth (a folder whose name starts with ``_`` or ``.``, such as a
    write's staging folder, skipped too), as ``(path, size in bytes, modified_ms)``; one listing."""
    fs, path = _fs_and_path(spark, uri)
    if not fs.exists(path):
        return []
    root = str(path.toUri().getPath()).rstrip("/")
    found = []
    files = fs.listFiles(path, True)
    while files.hasNext():
        status = files.next()
        file_path = status.getPath()
        below = str(file_path.toUri().getPath())[len(root):].strip("/").split("/")
        if not any(part.startswith(("_", ".")) and "=" not in part for part in below):
            found.append((file_path.toString(), int(status.getLen()), int(status.getModificationTime())))
    return found


def make_dirs(spark: SparkSession, uri: str) -> None:
    """Create the folder ``uri`` and its parents (a no-op when it exists; on S3 a marker object)."""
    fs, path = _fs_and_path(spark, uri)
    fs.mkdirs(path)


def rename(spark: SparkSession, source_uri: str, target_uri: str) -> None:
    """Move a file or folder (on S3 a copy and a delete per object); fails if ``target_uri`` exists."""
    fs, source = _fs_and_path(spark, source_uri)
    _, target = _fs_and_path(spark, target_uri)
    if fs.exists(target):
        raise FileExistsError(f"{target_uri} already exists")
    if not fs.rename(source, target):
        raise OSError(f"could not move {source_uri} to {target_uri}")


# Spark's commit protocol stages a write here (dynamic partition overwrite / plain overwrite). A job
# killed before its commit leaves them behind: Spark's readers skip them, but a glob such as
# ``**/*.parquet`` (DuckDB, Athena crawlers, a user's script) would read half a run.
WRITE_LEFTOVER_PREFIXES = (".spark-staging-", "_temporary")


def remove_write_leftovers(spark: SparkSession, uri: str) -> list[str]:
    """Delete the staging folders a killed write left directly under ``uri``; returns their names.
    Call it only while no other job writes ``uri`` (a layer job owns its outputs)."""
    fs, path = _fs_and_path(spark, uri)
    if not fs.exists(path):
        return []
    removed = []
    for status in fs.listStatus(path):
        name = status.getPath().getName()
        if name.startswith(WRITE_LEFTOVER_PREFIXES):
            fs.delete(status.getPath(), True)
            removed.append(name)
    return sorted(removed)


def file_key(path: str) -> tuple[str, str, str]:
    """``file:/a``, ``file:///a`` and ``/a`` name the same file; so may an escaped and an unescaped path."""
    parsed = urlparse(path)
    return parsed.scheme or "file", parsed.netloc, unquote(parsed.path)
