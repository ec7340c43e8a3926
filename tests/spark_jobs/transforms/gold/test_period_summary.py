"""period_summary: count/min/avg/max per period, nulls not counted, every silver row accounted for."""
from __future__ import annotations

import datetime as dt

import pytest

from spark_jobs.transforms.gold import load_gold
from tests.spark_jobs.conftest import ts


def _silver(spark):
    rows = [(ts("2024-05-01 10:05:00"), "a", 1015.2, None), (ts("2024-05-01 10:40:00"), "a", 1015.2, 2.0),
            (ts("2024-05-01 11:00:00"), "b", 1000.0, 4.0), (ts("2024-05-02 09:00:00"), "a", None, None)]
    return spark.createDataFrame(rows, "observed_at timestamp, station string, pressure double, wind double") \
        .selectExpr("*", "to_date(observed_at) AS event_date")


def test_hourly_per_station(spark):
    spec = load_gold("period_summary")
    gold = spec.build(_silver(spark), {"period": "hour", "group_by": ["station"], "measures": ["pressure", "wind"]})
    rows = [tuple(r) for r in gold.orderBy("period_start", "station").collect()]
    assert gold.columns == ["event_date", "period_start", "station", "row_count",
                            "pressure_count", "pressure_min", "pressure_avg", "pressure_max",
                            "wind_count", "wind_min", "wind_avg", "wind_max"]
    assert rows == [
        # the average of two equal doubles is clamped to their maximum (no 1-ulp drift above it)
        (dt.date(2024, 5, 1), ts("2024-05-01 10:00:00"), "a", 2, 2, 1015.2, 1015.2, 1015.2, 1, 2.0, 2.0, 2.0),
        (dt.date(2024, 5, 1), ts("2024-05-01 11:00:00"), "b", 1, 1, 1000.0, 1000.0, 1000.0, 1, 4.0, 4.0, 4.0),
        (dt.date(2024, 5, 2), ts("2024-05-02 09:00:00"), "a", 1, 0, None, None, None, 0, None, None, None),
    ]
    assert spec.reconcile_column == "row_count" and sum(r[3] for r in rows) == 4


def test_daily_is_the_default_period(spark):
    gold = load_gold("period_summary").build(_silver(spark), {"measures": ["wind"]})
    assert [(r["period_start"], r["row_count"], r["wind_count"], r["wind_avg"]) for r in gold.orderBy("period_start").collect()] == [
        (ts("2024-05-01 00:00:00"), 3, 2, 3.0), (ts("2024-05-02 00:00:00"), 1, 0, None)]


def test_without_measures_it_counts_rows_per_period(spark):
    """What `contract infer` proposes for a file without numeric columns: a gold all the same."""
    gold = load_gold("period_summary").build(_silver(spark), {})
    assert gold.columns == ["event_date", "period_start", "row_count"]
    assert [r["row_count"] for r in gold.orderBy("period_start").collect()] == [3, 1]


@pytest.mark.parametrize("options, message", [
    ({"measures": ["wind"], "period": "week"}, "period 'week' is not one of hour, day"),
    ({"measures": ["gust"]}, "gust not in silver"),
])
def test_option_errors(spark, options, message):
    with pytest.raises(ValueError, match=message):
        load_gold("period_summary").build(_silver(spark), options)
