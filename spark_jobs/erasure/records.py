"""The lake's rows that are a subject's, or that mention one, found in Spark by ``matching``'s rules.

Subjects enter Spark only as DataFrames built from Python rows (``subject_frames``, ``token_frame``,
``keyed_frame``), which are joined: no id is ever a literal in a plan or in SQL text, so none reaches
Spark's logs, its UI or its event log. A row's action:

- ``remove``: its subject column, typed, equals an id (rule 1); or it is malformed (its subject column
  cannot be read) and its text holds an id as a whole token or keyed (rules 2, 3): it may be the
  subject's, and it is unusable anyway;
- ``redact``: another subject's row whose text holds an id as a whole token (another user's URL naming
  the subject): the row stays, every matching token in its text columns becomes ``[erased]``.

Tokens are found with ``regexp_extract_all`` (``matching.TOKEN_RE_JAVA``) and an equi-join with the ids;
the redaction itself (``redact``) is a Python UDF over the few rows to redact, the ids in its closure.
"""
from __future__ import annotations

from typing import Iterable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.contract import Contract, decimal_precision_scale
from spark_jobs.erasure.matching import TOKEN_RE_JAVA, Needles, canonical_number, keyed_re_java
from spark_jobs.erasure.subjects import Subject, applies, typed_value
from spark_jobs.transforms import silver as silver_tx

REMOVE, REDACT = "remove", "redact"
ACTION = "_erase_action"
LINEAGE = ("_source_file", "_record_index")
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
# Text columns never searched: where a record came from, not what it says.
NOT_TEXT = frozenset({"_source_file", "_header", "_run_id"})
_SEPARATOR = "\u0001"  # neither a letter, a digit nor a joiner: no token spans two columns
_NUMBER = T.DecimalType(38, 10)


def _spark_type(type_name: str) -> T.DataType:
    if type_name.startswith("decimal("):
        return T.DecimalType(*decimal_precision_scale(type_name))
    return {"string": T.StringType(), "int": T.IntegerType(), "long": T.LongType()}[type_name]


def subject_frames(spark: SparkSession, contract: Contract, subjects: list[Subject]) -> dict[str, DataFrame]:
    """Per subject-key column of ``contract``: a one-column DataFrame ``_subject_value`` of the ids, typed
    as the column (ids no value of that type can equal are left out)."""
    frames = {}
    for column in sorted({s.column for s in subjects if applies(contract, s)}):
        values = sorted({v for s in subjects if s.column == column
                         for v in [typed_value(contract, s)] if v is not None}, key=str)
        schema = T.StructType([T.StructField("_subject_value", _spark_type(contract.column(column).type))])
        frames[column] = spark.createDataFrame([(v,) for v in values], schema)
    return frames


def token_frame(spark: SparkSession, needles: Needles) -> DataFrame | None:
    if not needles.tokens:
        return None
    return spark.createDataFrame([(t,) for t in sorted(needles.tokens)], "_token string")


def keyed_frame(spark: SparkSession, needles: Needles) -> DataFrame | None:
    """(key name, id text, id as a number) of the keyed ids (rule 3)."""
    rows = [(key, value, canonical_number(value)) for key, values in sorted(needles.keyed.items())
            for value in sorted(values)]
    if not rows:
        return None
    frame = spark.createDataFrame(rows, "_key string, _text string, _number_text string")
    return frame.select("_key", "_text", F.col("_number_text").cast(_NUMBER).alias("_number"))


def text_columns(df: DataFrame) -> list[str]:
    return [f.name for f in df.schema.fields if isinstance(f.dataType, T.StringType) and f.name not in NOT_TEXT]


def with_own(df: DataFrame, frames: dict[str, DataFrame]) -> DataFrame:
    """``df`` with ``_own``: its subject column equals an id (typed equi-joins with broadcast ids)."""
    flags = []
    for index, (column, frame) in enumerate(sorted(frames.items())):
        flag = f"_own_{index}"
        ids = frame.select(F.col("_subject_value").alias(column), F.lit(True).alias(flag)).distinct()
        df = df.join(F.broadcast(ids), on=column, how="left")
        flags.append(F.coalesce(F.col(flag), F.lit(False)))
    own = F.lit(False)
    for flag in flags:
        own = own | flag
    return df.withColumn("_own", own).drop(*[f"_own_{i}" for i in range(len(flags))])


def mentioning(df: DataFrame, keys: Iterable[str], tokens: DataFrame | None) -> DataFrame | None:
    """The distinct ``keys`` of rows whose text columns hold an id as a whole token (rule 2)."""
    keys, columns = list(keys), text_columns(df)
    if tokens is None or not columns:
        return None
    text = F.lower(F.concat_ws(_SEPARATOR, *[F.col(c) for c in columns]))
    found = F.array_distinct(F.regexp_extract_all(text, F.lit(TOKEN_RE_JAVA), 0))
    exploded = df.select(*keys, F.explode(found).alias("_token"))
    return exploded.join(F.broadcast(tokens), "_token", "left_semi").select(*keys).distinct()


def keyed_mentioning(df: DataFrame, keys: Iterable[str], keyed: DataFrame | None, names: Iterable[str]) -> DataFrame | None:
    """The distinct ``keys`` of rows whose text holds a keyed id (rule 3): ``<key>: <id>``."""
    keys, columns, names = list(keys), text_columns(df), sorted(set(names))
    if keyed is None or not columns or not names:
        return None
    text = F.concat_ws(_SEPARATOR, *[F.col(c) for c in columns])
    pattern = F.lit(keyed_re_java(names))
    pairs = F.arrays_zip(F.regexp_extract_all(text, pattern, 1).alias("k"),
                         F.regexp_extract_all(text, pattern, 2).alias("v"))
    exploded = df.select(*keys, F.explode(pairs).alias("_pair")).select(
        *keys, F.lower(F.col("_pair.k")).alias("_key"), F.col("_pair.v").alias("_value"))
    is_same_id = (F.lower(F.col("_value")) == F.col("_text")) | (F.col("_value").cast(_NUMBER) == F.col("_number"))
    return (exploded.join(F.broadcast(keyed), "_key", "inner").where(F.coalesce(is_same_id, F.lit(False)))
            .select(*keys).distinct())


def _flag(df: DataFrame, found: DataFrame | None, keys: list[str], name: str) -> DataFrame:
    """``df`` with boolean ``name``: its ``keys`` are among ``found``'s (null-safe)."""
    if found is None:
        return df.withColumn(name, F.lit(False))
    marked = found.select(*[F.col(k).alias(f"_m_{k}") for k in keys], F.lit(True).alias(name))
    condition = None
    for k in keys:
        term = F.col(k).eqNullSafe(F.col(f"_m_{k}"))
        condition = term if condition is None else condition & term
    joined = df.join(F.broadcast(marked), condition, "left").drop(*[f"_m_{k}" for k in keys])
    return joined.withColumn(name, F.coalesce(F.col(name), F.lit(False)))


def key_names(contract: Contract) -> list[str]:
    """The names a subject key is written under in text: its column and its landing field."""
    names = set()
    for column in contract.subject_keys or ():
        spec = contract.column(column)
        names.update({spec.name, spec.landing_name or spec.name})
    return sorted(names)


def bronze_actions(bronze: DataFrame, contract: Contract, frames: dict[str, DataFrame],
                   tokens: DataFrame | None, keyed: DataFrame | None) -> DataFrame:
    """Bronze rows to remove or redact: lineage, ``_batch_id``, ``event_date`` (text) and ``_erase_action``."""
    parsed = with_own(silver_tx.parse_records(bronze, contract), frames)
    keys = list(LINEAGE)
    parsed = _flag(parsed, mentioning(bronze, keys, tokens), keys, "_mention")
    malformed = parsed.where(F.col("_is_malformed"))
    parsed = _flag(parsed, keyed_mentioning(malformed.select(*keys, "_raw"), keys, keyed, key_names(contract)),
                   keys, "_keyed")
    is_malformed_hit = F.col("_is_malformed") & (F.col("_mention") | F.col("_keyed"))
    action = F.when(F.col("_own") | is_malformed_hit, F.lit(REMOVE)).when(F.col("_mention"), F.lit(REDACT))
    return (parsed.select(*keys, "_batch_id", F.to_date(contract.event_time).cast("string").alias("event_date"),
                          action.alias(ACTION))
            .where(F.col(ACTION).isNotNull()))


def quarantine_actions(quarantine: DataFrame, partition_column: str, bronze: DataFrame | None,
                       tokens: DataFrame | None, keyed: DataFrame | None, contract: Contract) -> DataFrame:
    """Quarantined rows to remove or redact: a row takes its bronze row's action; one whose bronze row
    is gone is removed when its text holds an id."""
    keys = list(LINEAGE)
    rows = quarantine.select(*keys, F.coalesce(F.col(partition_column).cast("string"), F.lit(HIVE_NULL)).alias("_partition"))
    rows = _flag(rows, mentioning(quarantine, keys, tokens), keys, "_mention")
    rows = _flag(rows, keyed_mentioning(quarantine, keys, keyed, key_names(contract)), keys, "_keyed")
    if bronze is not None:
        rows = rows.join(bronze.select(*keys, F.col(ACTION).alias("_bronze_action")), keys, "left")
    else:
        rows = rows.withColumn("_bronze_action", F.lit(None).cast("string"))
    action = F.coalesce(F.col("_bronze_action"), F.when(F.col("_mention") | F.col("_keyed"), F.lit(REMOVE)))
    return rows.select(*keys, "_partition", action.alias(ACTION)).where(F.col(ACTION).isNotNull())


def silver_actions(silver: DataFrame, contract: Contract, frames: dict[str, DataFrame],
                   tokens: DataFrame | None) -> DataFrame:
    """Silver rows to delete (a subject's) or redact (another's that mentions one), every column kept."""
    keys = list(contract.key)
    classified = _flag(with_own(silver, frames), mentioning(silver, keys, tokens), keys, "_mention")
    action = F.when(F.col("_own"), F.lit(REMOVE)).when(F.col("_mention"), F.lit(REDACT))
    return classified.withColumn(ACTION, action).where(F.col(ACTION).isNotNull()).drop("_own", "_mention")


def redact(df: DataFrame, needles: Needles, columns: Iterable[str] | None = None) -> DataFrame:
    """``df`` with every id token (and keyed id) in its text columns replaced by ``[erased]`` (a Python UDF:
    apply it to the rows to redact only; the ids travel in its closure, never in the plan)."""
    def redacted(text: str | None) -> str | None:
        return None if text is None else needles.redact(text)[0]

    def redacted_all(values: list | None) -> list | None:
        return None if values is None else [redacted(value) for value in values]

    udf = F.udf(redacted, T.StringType())
    for column in (text_columns(df) if columns is None else columns):
        df = df.withColumn(column, udf(F.col(column)))
    if columns is not None:
        return df
    # Text one level down: bronze's parsed fields (``_fields``, a struct of strings, which silver reads instead
    # of ``_raw``) and lists of strings (``_unknown_fields``). Left alone, a redacted ``_raw`` would keep the
    # id in its parsed copy.
    array_udf = F.udf(redacted_all, T.ArrayType(T.StringType()))
    for field in df.schema.fields:
        kind = field.dataType
        if field.name in NOT_TEXT:
            continue
        if isinstance(kind, T.StructType) and kind.fields and all(isinstance(f.dataType, T.StringType) for f in kind.fields):
            rebuilt = F.struct(*[udf(F.col(field.name)[f.name]).alias(f.name) for f in kind.fields])
            df = df.withColumn(field.name, F.when(F.col(field.name).isNull(), F.lit(None).cast(kind)).otherwise(rebuilt))
        elif isinstance(kind, T.ArrayType) and isinstance(kind.elementType, T.StringType):
            df = df.withColumn(field.name, array_udf(F.col(field.name)))
    return df
