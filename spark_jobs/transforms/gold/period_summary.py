"""A gold table for any dataset, configured in its contract: count, min, avg and max of numeric columns
per hour or day of event time (optionally per group), so a new dataset gets gold without code.

Options (``gold_options.period_summary``):
    measures: the numeric silver columns to summarise. @default - [] (row counts per period only)
    period: ``hour`` or ``day``: the event-time bucket. @default - "day"
    group_by: silver columns to group by besides the period, e.g. a station. @default - []
    event_time: the timestamp column an ``hour`` is taken from. @default - the first timestamp column of
        silver (the gold job passes options only, not the contract: name it when there are several)

Columns: ``event_date``, ``period_start`` (the bucket's first instant), the ``group_by`` columns,
``row_count`` (silver rows in the bucket: the reconcile column), and per measure ``<m>_count`` (rows
with a value: nulls, such as ``NA`` in a CSV, are not counted), ``<m>_min``, ``<m>_avg`` (within
[min, max]: see ``_within_min_max``), ``<m>_max``.
Each bucket lies inside one event date, so ``--date`` runs rebuild whole buckets.
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

PARTITION_BY = ("event_date",)
RECONCILE_COLUMN = "row_count"
PERIODS = ("hour", "day")


def build(silver: DataFrame, options: dict[str, Any]) -> DataFrame:
    measures = list(options.get("measures") or [])
    period = options.get("period", "day")
    group_by = list(options.get("group_by") or [])
    if period not in PERIODS:
        raise ValueError(f"gold period_summary: period '{period}' is not one of {', '.join(PERIODS)}")
    missing = [c for c in [*measures, *group_by] if c not in silver.columns]
    if missing:
        raise ValueError(f"gold period_summary: {', '.join(missing)} not in silver (columns: {', '.join(silver.columns)})")
    bucketed = silver.select(
        "event_date",
        F.date_trunc(period, F.col("event_date").cast("timestamp") if period == "day"
                     else _event_time(silver, options.get("event_time"))).alias("period_start"),
        *group_by,
        *measures,
    )
    aggregates = [F.count(F.lit(1)).alias("row_count")]
    for measure in measures:
        aggregates += [
            F.count(measure).alias(f"{measure}_count"),
            F.min(measure).alias(f"{measure}_min"),
            F.avg(measure).alias(f"{measure}_avg"),
            F.max(measure).alias(f"{measure}_max"),
        ]
    summary = bucketed.groupBy("event_date", "period_start", *group_by).agg(*aggregates)
    return summary.select(
        "event_date", "period_start", *group_by, "row_count",
        *[_within_min_max(m, stat) for m in measures for stat in ("count", "min", "avg", "max")],
    )


def _within_min_max(measure: str, stat: str):
    """The average of equal doubles can come out one ulp above their maximum (1015.2 twice averages to
    1015.2000000000001): it is clamped to [min, max], where an exact average always lies."""
    name = f"{measure}_{stat}"
    if stat != "avg":
        return F.col(name)
    return F.least(F.greatest(F.col(name), F.col(f"{measure}_min")), F.col(f"{measure}_max")).alias(name)


def _event_time(silver: DataFrame, name: str | None):
    """The event-time column: ``name``, else the first timestamp column that is not lineage."""
    if name:
        return F.col(name)
    timestamps = [f.name for f in silver.schema.fields if f.dataType.typeName() == "timestamp"
                  and not f.name.startswith("_")]
    if not timestamps:
        raise ValueError("gold period_summary: period 'hour' needs a timestamp column in silver")
    return F.col(timestamps[0])
