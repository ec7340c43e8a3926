"""Per organisation and day: hosts seen, average CPU use and average disk use."""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

PARTITION_BY = ("event_date",)
RECONCILE_COLUMN = "snapshot_count"
COLUMNS = ("event_date", "org_id", "host_count", "snapshot_count", "avg_cpu_percent", "avg_disk_used_pct")


def build(silver: DataFrame, options: dict[str, Any]) -> DataFrame:
    return (
        silver
        .groupBy("event_date", "org_id")
        .agg(
            F.countDistinct("host_id").alias("host_count"),
            F.count(F.lit(1)).alias("snapshot_count"),
            F.avg("cpu_percent").alias("avg_cpu_percent"),
            F.avg("disk_used_pct").alias("avg_disk_used_pct"),
        )
        .select(*COLUMNS)
    )
