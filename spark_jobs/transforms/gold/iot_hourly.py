"""Per-sensor hourly min/avg/max/count, and counts of readings outside the normal operating range.

Readings outside the contract's hard range are already quarantined; ``normal_ranges`` (gold options)
is the softer operating range: such readings are valid but worth counting.
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

PARTITION_BY = ("event_date",)
RECONCILE_COLUMN = "reading_count"
COLUMNS = (
    "event_date", "event_hour", "sensor_id", "reading_count",
    "temperature_min", "temperature_avg", "temperature_max",
    "humidity_min", "humidity_avg", "humidity_max", "battery_min",
    "temperature_out_of_range", "humidity_out_of_range",
)


def _outside(metric: str, bounds: list[float] | None) -> Column:
    if not bounds:
        return F.lit(0)
    low, high = bounds
    is_outside = F.col(metric).isNotNull() & ((F.col(metric) < F.lit(low)) | (F.col(metric) > F.lit(high)))
    return F.when(is_outside, 1).otherwise(0)


def build(silver: DataFrame, options: dict[str, Any]) -> DataFrame:
    ranges = options.get("normal_ranges", {})
    readings = silver.select(
        "sensor_id",
        F.date_trunc("hour", F.col("event_ts")).alias("event_hour"),
        "temperature", "humidity", "battery",
        _outside("temperature", ranges.get("temperature")).alias("temperature_outside"),
        _outside("humidity", ranges.get("humidity")).alias("humidity_outside"),
    )
    hourly = readings.groupBy("sensor_id", "event_hour").agg(
        F.count(F.lit(1)).alias("reading_count"),
        F.min("temperature").alias("temperature_min"),
        F.avg("temperature").alias("temperature_avg"),
        F.max("temperature").alias("temperature_max"),
        F.min("humidity").alias("humidity_min"),
        F.avg("humidity").alias("humidity_avg"),
        F.max("humidity").alias("humidity_max"),
        F.min("battery").alias("battery_min"),
        F.sum("temperature_outside").cast("long").alias("temperature_out_of_range"),
        F.sum("humidity_outside").cast("long").alias("humidity_out_of_range"),
    )
    return hourly.withColumn("event_date", F.to_date("event_hour")).select(*COLUMNS)
