"""Per site and hour: page views, distinct users and all events."""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

PARTITION_BY = ("event_date",)
RECONCILE_COLUMN = "event_count"
COLUMNS = ("event_date", "event_hour", "site_id", "page_views", "users", "event_count")


def build(silver: DataFrame, options: dict[str, Any]) -> DataFrame:
    is_page_view = F.col("event") == "page_view"
    events = silver.select(
        "site_id", "user_id",
        F.date_trunc("hour", F.col("timestamp")).alias("event_hour"),
        F.when(is_page_view, 1).otherwise(0).alias("is_page_view"),
    )
    hourly = events.groupBy("site_id", "event_hour").agg(
        F.sum("is_page_view").cast("long").alias("page_views"),
        F.countDistinct("user_id").alias("users"),
        F.count(F.lit(1)).alias("event_count"),
    )
    return hourly.withColumn("event_date", F.to_date("event_hour")).select(*COLUMNS)
