"""The lake's rows that are a subject's, or that mention one, found in Spark by ``matching``'s rules.

Subjects enter Spark only as a broadcast variable the executors read (``text_hits``): no id is ever a
literal in a plan or in SQL text, so none reaches Spark's logs, its UI or its event log. Which rows hold an
id is decided by the verification's own function (``scan.batch_hits``), run on the executors through
``mapInArrow`` over every column it reads: the rows the erase matches are the rows the verification would
find. A row's action:

- ``remove``: a column named like one of its dataset's subject keys holds an id by the key's type (rule 1:
  silver's typed subject column, bronze's row parsed as silver parses it, a CSV record's field under its
  header); or its text holds an id (rules 2 to 4) and its subject columns cannot be read (a malformed
  record, or a subject column silver cannot type, such as ``1042.0`` for an int): it may be the subject's,
  and it is unusable anyway;
- ``redact``: another subject's row whose text holds an id (another user's URL naming the subject): the
  row stays, every matching id in its text columns becomes ``[erased]`` (``redact``, ``Needles.redact``),
  after which ``batch_hits`` finds nothing in it.
"""
from __future__ import annotations

import functools
import operator
from typing import Iterable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.contract.model import Contract
from spark_jobs.erasure.matching import Needles
from spark_jobs.transforms import silver as silver_tx

REMOVE, REDACT = "remove", "redact"
ACTION = "_erase_action"
LINEAGE = ("_source_file", "_record_index")
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
TEXT_HIT, VALUE_HIT = "_text_hit", "_value_hit"


def _holds_text(kind: T.DataType) -> bool:
    if isinstance(kind, (T.StringType, T.BinaryType)):
        return True
    if isinstance(kind, T.ArrayType):
        return _holds_text(kind.elementType)
    if isinstance(kind, T.MapType):
        return _holds_text(kind.keyType) or _holds_text(kind.valueType)
    if isinstance(kind, T.StructType):
        return any(_holds_text(f.dataType) for f in kind.fields)
    return False


def text_hits(df: DataFrame, keys: Iterable[str], shared) -> DataFrame:
    """The distinct ``keys`` of the rows in which ``scan.batch_hits`` finds a subject, with ``_text_hit``
    (rules 2 to 4) and ``_value_hit`` (a column named like a subject key, by value: rule 1): every column the
    verification reads (strings and binary at any depth, columns named like a subject key, bronze's CSV
    ``_raw``), on the executors. ``shared``: a broadcast variable holding the request's ``Needles``."""
    keys = list(keys)
    needles: Needles = shared.value
    read = [f.name for f in df.schema.fields
            if f.name in keys or _holds_text(f.dataType) or needles.rules_for(f.name)]
    schema = T.StructType([df.schema[k] for k in keys] + [T.StructField(TEXT_HIT, T.BooleanType()),
                                                          T.StructField(VALUE_HIT, T.BooleanType())])

    def found(batches):
        import numpy as np
        import pyarrow as pa

        from spark_jobs.erasure.scan import Matcher, batch_hits

        matcher = Matcher(shared.value)
        for batch in batches:
            text, value = batch_hits(batch, matcher)
            rows = np.flatnonzero(text | value)
            if len(rows):
                picked = pa.array(rows)
                columns = [batch.column(batch.schema.names.index(k)).take(picked) for k in keys]
                yield pa.RecordBatch.from_arrays(columns + [pa.array(text[rows]), pa.array(value[rows])],
                                                 names=[*keys, TEXT_HIT, VALUE_HIT])

    return df.select(*read).mapInArrow(found, schema).distinct()


def join_on_keys(df: DataFrame, marks: DataFrame, keys: list[str]) -> DataFrame:
    """``df`` left-joined with the small ``marks`` (broadcast) on ``keys``, null-safe (a null key part matches a
    null one, as the table's keys may hold nulls): ``df``'s columns, then ``marks``' other columns (null
    where no row of ``marks`` matches)."""
    marked = marks.select(*[F.col(k).alias(f"_m_{k}") for k in keys], *[c for c in marks.columns if c not in keys])
    condition = functools.reduce(operator.and_, [F.col(k).eqNullSafe(F.col(f"_m_{k}")) for k in keys])
    return df.join(F.broadcast(marked), condition, "left").drop(*[f"_m_{k}" for k in keys])


def _with_hits(df: DataFrame, hits: DataFrame, keys: list[str]) -> DataFrame:
    """``df`` with ``_text_hit`` and ``_value_hit`` from ``text_hits`` (False where it found nothing),
    joined on ``keys`` (null-safe)."""
    joined = join_on_keys(df, hits.select(*keys, TEXT_HIT, VALUE_HIT), keys)
    return (joined.withColumn(TEXT_HIT, F.coalesce(F.col(TEXT_HIT), F.lit(False)))
            .withColumn(VALUE_HIT, F.coalesce(F.col(VALUE_HIT), F.lit(False))))


def _subject_unreadable(contract: Contract) -> F.Column:
    """A parsed row whose subject columns cannot all be read: malformed, or a subject column's text that
    silver cannot type (``1042.0`` for an int)."""
    unreadable = F.col("_is_malformed")
    for column in contract.subject_keys or ():
        text = F.col(silver_tx._raw_name(column))
        untyped = text.isNotNull() & (F.trim(text) != "") & F.col(column).isNull()
        unreadable = unreadable | F.coalesce(untyped, F.lit(False))
    return unreadable


# The columns parse_records makes of every bronze row (bronze's other columns are kept beside them).
_PARSED = ("_raw", "_is_malformed", "_unknown_fields", *silver_tx.LINEAGE_COLUMNS)


def bronze_actions(bronze: DataFrame, contract: Contract, shared) -> DataFrame:
    """Bronze rows to remove or redact: lineage, ``_batch_id``, ``event_date`` (text) and ``_erase_action``.
    ``shared``: a broadcast variable holding the request's ``Needles`` for this dataset."""
    keys = list(LINEAGE)
    # bronze's other columns ride along, but for its source field (``site_id``): a contract column of that name
    # holds it, typed
    made = {*_PARSED, *contract.column_names}
    parsed = silver_tx.parse_records(bronze, contract, keep=tuple(c for c in bronze.columns if c not in made))
    subject_columns = [c for c in contract.subject_keys or () if c not in bronze.columns]
    hits = text_hits(parsed.select(*bronze.columns, *subject_columns), keys, shared)  # the row as read, and typed
    classified = _with_hits(parsed, hits, keys)
    is_theirs = F.col(VALUE_HIT) | (F.col(TEXT_HIT) & _subject_unreadable(contract))
    action = F.when(is_theirs, F.lit(REMOVE)).when(F.col(TEXT_HIT), F.lit(REDACT))
    return (classified.select(*keys, "_batch_id", F.to_date(contract.event_time).cast("string").alias("event_date"),
                              action.alias(ACTION))
            .where(F.col(ACTION).isNotNull()))


def quarantine_actions(quarantine: DataFrame, partition_column: str, bronze: DataFrame | None, shared) -> DataFrame:
    """Quarantined rows to remove or redact: a row takes its bronze row's action; one whose bronze row
    is gone (or untouched) is removed when ``text_hits`` finds an id in it."""
    keys = list(LINEAGE)
    rows = quarantine.select(*keys, F.coalesce(F.col(partition_column).cast("string"), F.lit(HIVE_NULL)).alias("_partition"))
    rows = _with_hits(rows, text_hits(quarantine, keys, shared), keys)
    if bronze is not None:
        rows = rows.join(bronze.select(*keys, F.col(ACTION).alias("_bronze_action")), keys, "left")
    else:
        rows = rows.withColumn("_bronze_action", F.lit(None).cast("string"))
    action = F.coalesce(F.col("_bronze_action"), F.when(F.col(TEXT_HIT) | F.col(VALUE_HIT), F.lit(REMOVE)))
    return rows.select(*keys, "_partition", action.alias(ACTION)).where(F.col(ACTION).isNotNull())


def silver_actions(silver: DataFrame, contract: Contract, shared) -> DataFrame:
    """Silver rows to delete (a subject's: its typed subject column holds an id) or redact (another's that
    mentions one), every column kept."""
    keys = list(contract.key)
    classified = _with_hits(silver, text_hits(silver, keys, shared), keys)
    action = F.when(F.col(VALUE_HIT), F.lit(REMOVE)).when(F.col(TEXT_HIT), F.lit(REDACT))
    return classified.withColumn(ACTION, action).where(F.col(ACTION).isNotNull()).drop(TEXT_HIT, VALUE_HIT)


def redact(df: DataFrame, needles: Needles) -> DataFrame:
    """``df`` with every id in its text (``Needles.redact``: tokens and keyed ids, raw or behind escapes)
    replaced by ``[erased]``, in every string column and one level down (a struct of strings such as
    bronze's parsed ``_fields``, which silver reads instead of ``_raw``; a list of strings such as
    ``_unknown_fields``). A Python UDF: apply it to the rows to redact only; the ids travel in its closure,
    never in the plan."""
    def redacted(text: str | None) -> str | None:
        return None if text is None else needles.redact(text)[0]

    def redacted_all(values: list | None) -> list | None:
        return None if values is None else [redacted(value) for value in values]

    udf = F.udf(redacted, T.StringType())
    array_udf = F.udf(redacted_all, T.ArrayType(T.StringType()))
    for field in df.schema.fields:
        kind = field.dataType
        if isinstance(kind, T.StringType):
            df = df.withColumn(field.name, udf(F.col(field.name)))
        elif isinstance(kind, T.StructType) and kind.fields and all(isinstance(f.dataType, T.StringType) for f in kind.fields):
            rebuilt = F.struct(*[udf(F.col(field.name)[f.name]).alias(f.name) for f in kind.fields])
            df = df.withColumn(field.name, F.when(F.col(field.name).isNull(), F.lit(None).cast(kind)).otherwise(rebuilt))
        elif isinstance(kind, T.ArrayType) and isinstance(kind.elementType, T.StringType):
            df = df.withColumn(field.name, array_udf(F.col(field.name)))
    return df
