"""Landing readers, by the contract's landing format: whole text files (JSON, CSV) or Parquet files.

Text files are read whole (``wholetext``), so a record's position in its file is known; Hadoop
decompresses a file whose name ends in ``.gz``. Parquet files are listed by the stream (path and size
only, never their bytes) and read by Spark's Parquet reader, file by file when their schemas differ.
"""
from __future__ import annotations

import fnmatch
import re

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs.contract import LandingSpec

# Temp files a producer hides as .x or _x are skipped (Spark skips names starting with "." or "_").
LANDING_GLOBS: dict[str, tuple[str, ...]] = {
    "json_array": ("*.json*",),          # .json, .jsonl and their .gz
    "json_lines": ("*.json*",),
    "csv": ("*.csv", "*.tsv", "*.txt", "*.csv.gz", "*.tsv.gz", "*.txt.gz"),
    "parquet": ("*.parquet",),
}
_BINARY_FILE_SCHEMA = "path string, modificationTime timestamp, length long, content binary"


def landing_glob(landing_format: str) -> str:
    """The Hadoop glob (``pathGlobFilter``) of the landing files of a format."""
    globs = LANDING_GLOBS[landing_format]
    return globs[0] if len(globs) == 1 else "*.{" + ",".join(g[2:] for g in globs) + "}"


def is_landing_file(name: str, landing_format: str | None = None) -> bool:
    """True when a file name is read as landing data (of ``landing_format``, or of any format)."""
    formats = [landing_format] if landing_format else list(LANDING_GLOBS)
    return not name.startswith((".", "_")) and any(
        fnmatch.fnmatch(name, glob) for fmt in formats for glob in LANDING_GLOBS[fmt])


def _text_reader(reader, landing_uri: str, landing: LandingSpec):
    return (
        reader.format("text")
        .option("wholetext", "true")
        .option("recursiveFileLookup", "true")  # Firehose objects sit under YYYY/MM/DD/HH/ (stream_records.py)
        .option("pathGlobFilter", landing_glob(landing.format))
        .option("path", landing_uri)
    )


def landing_stream(spark: SparkSession, landing_uri: str, landing: LandingSpec, max_files_per_trigger: int) -> DataFrame:
    """A streaming DataFrame of landing files whose checkpoint remembers every file it handed out, so
    each file is ingested exactly once: ``(value, _source_file)`` of whole text files, or, for Parquet,
    ``(_source_file, length)`` (the job reads the files itself)."""
    if landing.is_text:
        reader = _text_reader(spark.readStream, landing_uri, landing).option("maxFilesPerTrigger", str(max_files_per_trigger))
        return reader.load().select("value", F.col("_metadata.file_path").alias("_source_file"))
    reader = (
        spark.readStream.format("binaryFile").schema(_BINARY_FILE_SCHEMA)
        .option("recursiveFileLookup", "true")
        .option("pathGlobFilter", landing_glob(landing.format))
        .option("maxFilesPerTrigger", str(max_files_per_trigger))
        .option("path", landing_uri)
    )
    # Only path and length are selected, so the binary source never reads the files' bytes.
    return reader.load().select(F.col("path").alias("_source_file"), "length")


def landing_text_files(spark: SparkSession, landing_uri: str, landing: LandingSpec) -> DataFrame:
    """The same ``(value, _source_file)`` rows as a batch read of text landing files, for counts."""
    return _text_reader(spark.read, landing_uri, landing).load().select(
        "value", F.col("_metadata.file_path").alias("_source_file"))


def parquet_landing_paths(spark: SparkSession, landing_uri: str) -> list[str]:
    """Every non-empty Parquet landing file under ``landing_uri`` (for counts)."""
    files = (spark.read.format("binaryFile").option("recursiveFileLookup", "true")
             .option("pathGlobFilter", landing_glob("parquet")).load(landing_uri))
    return [r[0] for r in files.where(F.col("length") > 0).select("path").collect()]


def read_parquet_files(spark: SparkSession, paths: list[str]) -> tuple[list[DataFrame], list[tuple[str, str]]]:
    """The rows of landing Parquet files with ``_source_file`` and ``_record_index`` (the row's position
    in its file), as one DataFrame per distinct file schema; or, when some files cannot be read as
    Parquet, ``([], [(path, reason), ...])`` for those files. 0-byte files hold no rows: leave them out.

    One read with ``mergeSchema`` serves files whose schemas merge (columns missing in some files come
    back null); files whose schemas conflict (a column stored as text in one, as a number in another)
    are read per schema instead, so each row keeps its own types for silver to judge.
    """
    if not paths:
        return [], []

    def with_lineage(frame: DataFrame) -> DataFrame:
        return frame.select("*", F.col("_metadata.file_path").alias("_source_file"),
                            F.col("_metadata.row_index").alias("_record_index"))

    try:
        return [with_lineage(spark.read.option("mergeSchema", "true").parquet(*paths))], []
    except Exception:  # noqa: BLE001 - one file is not Parquet or the schemas conflict: find out which, per file
        pass
    by_schema: dict[str, list[str]] = {}
    problems = []
    for path in paths:
        try:
            schema = spark.read.parquet(path).schema
        except Exception as exc:  # noqa: BLE001 - reported per file, in one line
            problems.append((path, unreadable_parquet_reason(exc)))
            continue
        by_schema.setdefault(schema.json(), []).append(path)
    if problems:
        return [], problems
    return [with_lineage(spark.read.parquet(*group)) for group in by_schema.values()], []


def unreadable_parquet_reason(exc: BaseException) -> str:
    from spark_jobs.jobs.runtime import describe_error

    _, first_line = describe_error(exc)
    if "TIMESTAMP(NANOS" in first_line:
        return ("has nanosecond timestamps, which Spark 3.5 cannot read; write them in microseconds "
                "(pyarrow: coerce_timestamps='us'; pandas: df.to_parquet(..., coerce_timestamps='us'))")
    return f"is not a readable Parquet file ({first_line[:200]})"


def failed_file(exc: BaseException) -> list[str]:
    """The file named in Spark's "Encountered error while reading file <path>. Details:" (or none)."""
    match = re.search(r"Encountered error while reading file (\S+?)\.? Details", str(exc))
    return [match.group(1)] if match else []


def unreadable_text_files(spark: SparkSession, paths: list[str]) -> list[tuple[str, str]]:
    """After a batch of text files failed to read: which ``.gz`` files are not gzip data or are damaged
    (Hadoop decompresses by the name), as ``(path, reason)``."""
    from spark_jobs.jobs.runtime import describe_error

    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    problems = []
    for path in paths:
        if not path.endswith(".gz"):
            continue
        hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
        stream = hadoop_path.getFileSystem(conf).open(hadoop_path)
        try:
            magic = [stream.read(), stream.read()]
            if magic != [0x1F, 0x8B]:
                problems.append((path, "is named .gz but is not gzip data"))
                continue
            stream.seek(0)
            gzip = jvm.java.util.zip.GZIPInputStream(stream)
            jvm.org.apache.commons.io.IOUtils.copy(gzip, jvm.org.apache.commons.io.output.NullOutputStream.NULL_OUTPUT_STREAM)
        except Exception as exc:  # noqa: BLE001 - the reason is the JVM's first line
            problems.append((path, f"is a damaged gzip file ({describe_error(exc)[1][:200]})"))
        finally:
            stream.close()
    return problems
