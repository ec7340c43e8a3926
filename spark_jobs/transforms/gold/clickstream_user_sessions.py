"""Per-user sessions: a new session starts after ``session_gap_minutes`` of inactivity (default 30).

A session's row is in the partition of the date it starts on. Sessions are built over the silver rows the job
reads: a gold run limited to one ``--date`` cuts sessions that cross midnight at the day boundary; a full run
does not, and neither does an incremental one: the sessions of date D are rebuilt from silver's D-1 (whether
D's first event continues a session of the evening before), D and D+1 (a session running past midnight), so
a session must last less than a day for an incremental run to build it as a full one does.
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

PARTITION_BY = ("event_date",)
RECONCILE_COLUMN = "event_count"
SILVER_DATES = (-1, 1)  # the evening before and the morning after (gold/__init__.py)
DEFAULT_SESSION_GAP_MINUTES = 30
COLUMNS = (
    "event_date", "user_id", "session_id", "session_start", "session_end", "duration_seconds",
    "event_count", "page_views", "sites",
)
# Personal columns (Lake Formation tags them pii, spark_jobs/tables/lf_tags.py): the user id, and the session id built
# from it (``user-0016-20201116T220000``).
PERSONAL_COLUMNS = ("user_id", "session_id")


def build(silver: DataFrame, options: dict[str, Any]) -> DataFrame:
    gap_seconds = 60 * int(options.get("session_gap_minutes", DEFAULT_SESSION_GAP_MINUTES))
    by_user_in_time = Window.partitionBy("user_id").orderBy("timestamp")
    events = silver.select("user_id", "site_id", "event", "timestamp")
    seconds_since_previous = (
        F.col("timestamp").cast("long") - F.lag("timestamp").over(by_user_in_time).cast("long")
    )
    starts_session = seconds_since_previous.isNull() | (seconds_since_previous > gap_seconds)
    numbered = (
        events
        .withColumn("starts_session", F.when(starts_session, 1).otherwise(0))
        .withColumn(
            "session_number",
            F.sum("starts_session").over(by_user_in_time.rowsBetween(Window.unboundedPreceding, Window.currentRow)),
        )
    )
    sessions = numbered.groupBy("user_id", "session_number").agg(
        F.min("timestamp").alias("session_start"),
        F.max("timestamp").alias("session_end"),
        F.count(F.lit(1)).alias("event_count"),
        F.sum(F.when(F.col("event") == "page_view", 1).otherwise(0)).cast("long").alias("page_views"),
        F.countDistinct("site_id").alias("sites"),
    )
    return (
        sessions
        .withColumn("session_id", F.concat_ws("-", "user_id", F.date_format("session_start", "yyyyMMdd'T'HHmmss")))
        .withColumn("duration_seconds", F.col("session_end").cast("long") - F.col("session_start").cast("long"))
        .withColumn("event_date", F.to_date("session_start"))
        .select(*COLUMNS)
    )
