"""Landing readers: which files a batch holds (the stream lists them), their lines, their Parquet rows.

The bronze stream only LISTS landing files (``binaryFile`` with path and length selected, never their
bytes): its checkpoint's offset log is the batch's file list, which is what makes bronze exactly once.
The job then reads the batch's files itself:

- text formats (CSV, JSON) with Spark's line reader (``read_lines``): lines in file order, never a whole
  file as one value, so time is linear in the file and memory bounded by a line (a record), not by the
  file; Hadoop decompresses a file whose name ends in ``.gz`` as it streams. A CSV or JSON-array file
  is never split across tasks (a record or an element may run over lines); a JSON-lines file larger
  than the batch's bytes per core is (its lines are numbered across the splits by a count per split:
  ``split_line_offsets``), and small files are packed into about one task per core.
  ``transforms/landing_lines.py`` turns the lines into records.
- Parquet with Spark's Parquet reader, file by file when their schemas differ (``read_parquet_files``).
- A ``json_array`` file that turns out not to be one JSON array is read whole (``read_whole_files``),
  to be kept as ONE malformed record, as it always was.
"""
from __future__ import annotations

import fnmatch
import functools
import re
import urllib.parse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs.contract.parts import LandingSpec
from spark_jobs.transforms.landing_csv import CsvSplit, SUMMARY_SCHEMA, csv_split_summaries, plan_csv_file
from spark_jobs.transforms.landing_text import LineOptions

# Temp files a producer hides as .x or _x are skipped (Spark skips names starting with "." or "_").
LANDING_GLOBS: dict[str, tuple[str, ...]] = {
    "json_array": ("*.json*",),          # .json, .jsonl and their .gz
    "json_lines": ("*.json*",),
    "csv": ("*.csv", "*.tsv", "*.txt", "*.csv.gz", "*.tsv.gz", "*.txt.gz"),
    "parquet": ("*.parquet",),
}
_BINARY_FILE_SCHEMA = "path string, modificationTime timestamp, length long, content binary"
_OPEN_COST_BYTES = 4 * 1024 * 1024  # Spark's spark.sql.files.openCostInBytes default


def landing_glob(landing_format: str) -> str:
    """The Hadoop glob (``pathGlobFilter``) of the landing files of a format."""
    globs = LANDING_GLOBS[landing_format]
    return globs[0] if len(globs) == 1 else "*.{" + ",".join(g[2:] for g in globs) + "}"


def is_landing_file(name: str, landing_format: str | None = None) -> bool:
    """True when a file name is read as landing data (of ``landing_format``, or of any format)."""
    formats = [landing_format] if landing_format else list(LANDING_GLOBS)
    return not name.startswith((".", "_")) and any(
        fnmatch.fnmatch(name, glob) for fmt in formats for glob in LANDING_GLOBS[fmt])


def _listing(reader, landing_uri: str, landing: LandingSpec):
    return (
        reader.format("binaryFile").schema(_BINARY_FILE_SCHEMA)
        .option("recursiveFileLookup", "true")  # Firehose objects sit under YYYY/MM/DD/HH/ (stream_records.py)
        .option("pathGlobFilter", landing_glob(landing.format))
    )


# How long the stream remembers a file name it handed out (Spark's ``maxFileAge``, counted back from the newest
# file listed; Spark's default is 7 days, after which it forgets the name, so new bytes under it, or content
# landed again under its name once the landing lifecycle expired the object, were ingested a second time):
# 100 years, so a name bronze has read is never read again for the life of the lake.
REMEMBER_NAMES_FOR = "36500d"


def landing_stream(spark: SparkSession, landing_uri: str, landing: LandingSpec, max_files_per_trigger: int) -> DataFrame:
    """A streaming DataFrame of landing files, ``(_source_file, length)``, whose checkpoint remembers every
    file it handed out, so each file is ingested exactly once, however old (``REMEMBER_NAMES_FOR``). Only path
    and length are selected, so the binary source never reads the files' bytes: the job reads each batch's
    files itself."""
    reader = (_listing(spark.readStream, landing_uri, landing).option("maxFilesPerTrigger", str(max_files_per_trigger))
              .option("maxFileAge", REMEMBER_NAMES_FOR))
    return reader.load(landing_uri).select(F.col("path").alias("_source_file"), "length")


def landing_files(spark: SparkSession, landing_uri: str, landing: LandingSpec) -> list[tuple[str, int]]:
    """Every landing file of the format under ``landing_uri``, ``(path, length)``, 0-byte ones included."""
    listed = _listing(spark.read, landing_uri, landing).load(landing_uri)
    return [(r[0], int(r[1])) for r in listed.select("path", "length").collect()]


def landing_paths(spark: SparkSession, landing_uri: str, landing: LandingSpec) -> list[str]:
    """The URIs of ``landing_files``, as the stream's file source records them (``FileStatus`` path as a URI),
    from the driver's listing alone: no Spark job."""
    return list(_listing(spark.read, landing_uri, landing).load(landing_uri).inputFiles())


MAX_SPLIT_BYTES = 128 * 1024 * 1024  # Spark's spark.sql.files.maxPartitionBytes default


def _per_core(spark: SparkSession, files: list[tuple[str, int]]) -> int:
    """The bytes of ``files`` per core (each file counted with Spark's open cost), at least 4 MiB."""
    parallelism = max(1, spark.sparkContext.defaultParallelism)
    total = sum(length + _OPEN_COST_BYTES for _, length in files)
    return max(-(-total // parallelism), _OPEN_COST_BYTES)


def split_bytes(spark: SparkSession, files: list[tuple[str, int]], splittable: bool) -> int:
    """The most bytes one task reads. Files that may be split: the batch's bytes per core (at most 128 MiB,
    at least 4 MiB), so one large file keeps every core busy. Files that may not: at least the largest file
    (none is split), and the batch's bytes per core (small files packed into about one task per core)."""
    per_core = _per_core(spark, files)
    if splittable:
        return min(MAX_SPLIT_BYTES, per_core)
    return max(per_core, max((length for _, length in files), default=0))


def whole_file_groups(spark: SparkSession, files: list[tuple[str, int]]) -> list[tuple[int, int, list[tuple[str, int]]]]:
    """Files that must each be read by one task, as ``(split bytes, open cost, files)`` reads: the files larger
    than the batch's bytes per core each in a task of its own (split bytes and open cost: the largest of them,
    so no two share a task), and the others packed into about one task per core by their own bytes per core.
    One split size for all would be the largest file's, which packed every other file of the batch into a
    few tasks next to it."""
    per_core = _per_core(spark, files)
    large = [f for f in files if f[1] > per_core]
    small = [f for f in files if f[1] <= per_core]
    groups = []
    if large:
        largest = max(length for _, length in large)
        groups.append((largest, largest, large))
    if small:
        groups.append((split_bytes(spark, small, False), _OPEN_COST_BYTES, small))
    return groups


def reader_session(spark: SparkSession, max_split_bytes: int, open_cost: int = _OPEN_COST_BYTES) -> SparkSession:
    """A session (same SparkContext, its own SQL conf) whose file scans read at most ``max_split_bytes``
    per task (``spark.sql.files.maxPartitionBytes``, with ``minPartitionNum`` 1 so that Spark does not
    shrink it): a file is split only where it is larger. ``open_cost`` (``openCostInBytes``): what each
    file counts for besides its bytes when files are packed into tasks (``max_split_bytes``: one a task)."""
    session = spark.newSession()
    session.conf.set("spark.sql.files.maxPartitionBytes", str(max_split_bytes))
    session.conf.set("spark.sql.files.openCostInBytes", str(open_cost))
    session.conf.set("spark.sql.files.minPartitionNum", "1")
    return session


def read_lines(spark: SparkSession, files: list[tuple[str, int]], splittable: bool = False,
               whole: frozenset[str] | set[str] = frozenset()) -> DataFrame:
    """``(_line binary, _source_file, _split_start)``: every line of ``files`` (``(path, length)``), in file
    order within each task. A line is the bytes between two ``\n`` (a ``\r`` before it stays, so CRLF and
    quoted line breaks survive as they were); the text is decoded later, per record. Without
    ``splittable`` each file is read by one task (``_split_start`` 0); with it, a file larger than the
    split size (``split_bytes``; never a ``.gz``, which Hadoop cannot split) is read by several tasks,
    each from ``_split_start`` (a byte offset: Hadoop's line reader starts a split at the line after it),
    except the files in ``whole``."""
    files = [(path, length) for path, length in files if length > 0]
    if not files:
        return spark.createDataFrame([], "_line binary, _source_file string, _split_start long")
    split = [f for f in files if splittable and f[0] not in whole]
    groups = [(split_bytes(spark, files, True), _OPEN_COST_BYTES, split)] if split else []
    groups += whole_file_groups(spark, [f for f in files if not splittable or f[0] in whole])
    frames = []
    for limit, open_cost, group in groups:
        lines = reader_session(spark, limit, open_cost).read.format("text").option("lineSep", "\n").load([path for path, _ in group])
        frames.append(lines.select(F.col("value").cast("binary").alias("_line"),
                                   F.col("_metadata.file_path").alias("_source_file"),
                                   F.col("_metadata.file_block_start").alias("_split_start")))
    return functools.reduce(DataFrame.union, frames)


def landing_lines(spark: SparkSession, files: list[tuple[str, int]], options: LineOptions, counted_by_plan: bool = False
                  ) -> tuple[DataFrame, dict[tuple[str, int], int], dict[tuple[str, int], CsvSplit]]:
    """A batch's text files as ``read_lines`` gives them, with what ``transforms.landing_lines.lines_to_records``
    needs to read the files split across tasks: ``(lines, offsets, splits)``. JSON lines: a large file is
    split, its lines numbered on across splits (``split_line_offsets``). CSV: a large file is split when the
    split plan (``csv_split_plan``) finds where each split's records start, else read whole. JSON arrays:
    whole files (an element may run over lines, and a split cannot tell which bracket it is in).
    ``counted_by_plan`` (the counts table): the CSV files read in splits are left out of ``lines``, as the
    plan's pass has counted their records already (``CsvSplit.made`` of each split); the other files whole."""
    if options.format == "json_lines":
        return read_lines(spark, files, True), split_line_offsets(spark, files, True), {}
    if options.format == "csv":
        splits, whole = csv_split_plan(spark, files, options)
        if counted_by_plan:
            planned = {urllib.parse.unquote(path) for path, _ in splits}  # the lines' paths are URIs
            return read_lines(spark, [f for f in files if urllib.parse.unquote(f[0]) not in planned]), {}, splits
        return read_lines(spark, files, True, whole), {}, splits
    return read_lines(spark, files), {}, {}


def csv_split_plan(spark: SparkSession, files: list[tuple[str, int]], options: LineOptions
                   ) -> tuple[dict[tuple[str, int], CsvSplit], set[str]]:
    """For the CSV files ``read_lines`` would split: how each split is read (``{(path, split start):
    CsvSplit}``), and the files that must be read whole instead (``plan_csv_file`` says when). One pass over
    those files' lines (the JVM reads them, the Python workers count their records twice per split, as if a
    record or a quoted field started there); nothing when no file is split. The same split size makes the
    same splits. The plan's paths are the lines' own (``_metadata.file_path``, a URI); ``whole`` holds the
    listed paths, as ``read_lines`` is given them."""
    limit = split_bytes(spark, files, True)
    large = [path for path, length in files if length > limit and not path.endswith(".gz")]
    if not large:
        return {}, set()
    from pyspark.sql.pandas.types import from_arrow_schema

    lines = reader_session(spark, limit).read.format("text").option("lineSep", "\n").load(large)
    lines = lines.select(F.col("value").cast("binary").alias("_line"), F.col("_metadata.file_path").alias("_source_file"),
                         F.col("_metadata.file_block_start").alias("_split_start"))
    summaries = lines.mapInArrow(csv_split_summaries(options), from_arrow_schema(SUMMARY_SCHEMA)).collect()
    by_file: dict[str, list[dict]] = {}
    for row in summaries:
        by_file.setdefault(row["_source_file"], []).append(row.asDict())
    splits: dict[tuple[str, int], CsvSplit] = {}
    whole: set[str] = set()
    listed = {urllib.parse.unquote(path): path for path in large}  # file_path is a URI: "a b.csv" is "a%20b.csv"
    for path, rows in by_file.items():
        plan = plan_csv_file(rows, options.header)
        if plan is None:
            whole.add(listed.get(urllib.parse.unquote(path), path))
        else:
            splits.update({(path, start): split for start, split in plan.items()})
    return splits, whole


def split_line_offsets(spark: SparkSession, files: list[tuple[str, int]], splittable: bool) -> dict[tuple[str, int], int]:
    """For the files ``read_lines`` splits: the number of lines before each split, ``{(path, split start):
    lines}`` (a split's first line is line number ``lines`` of its file), so every line keeps its number in
    its file. One extra read of those files' lines, counted in the JVM (no Python); nothing when no file
    is split. The same split size makes the same splits (Spark cuts a file at multiples of it)."""
    limit = split_bytes(spark, files, splittable)
    large = [path for path, length in files if splittable and length > limit and not path.endswith(".gz")]
    if not large:
        return {}
    lines = reader_session(spark, limit).read.format("text").option("lineSep", "\n").load(large)
    per_split = (lines.groupBy(F.col("_metadata.file_path").alias("path"), F.col("_metadata.file_block_start").alias("start"))
                 .agg(F.count(F.lit(1)).alias("lines")).collect())
    by_file: dict[str, list[tuple[int, int]]] = {}
    for row in per_split:
        by_file.setdefault(row["path"], []).append((int(row["start"]), int(row["lines"])))
    offsets: dict[tuple[str, int], int] = {}
    for path, splits in by_file.items():
        before = 0
        for start, count in sorted(splits):
            offsets[(path, start)] = before
            before += count
    return offsets


def read_whole_files(spark: SparkSession, paths: list[str]) -> DataFrame:
    """``(value, _source_file)``: each file's whole text as one value (a Java string: under 2 GB, and in
    memory). Only for the rare file that must be kept whole (a broken ``json_array`` file)."""
    text = spark.read.format("text").option("wholetext", "true").load(paths)
    return text.select("value", F.col("_metadata.file_path").alias("_source_file"))


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
    from spark_jobs.lake.failures import describe_error

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
    from spark_jobs.lake.failures import describe_error

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
