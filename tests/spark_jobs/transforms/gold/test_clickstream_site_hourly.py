import datetime as dt

from spark_jobs.transforms.gold import clickstream_site_hourly
from tests.spark_jobs.conftest import ts


def test_page_views_users_and_events_per_site_hour(spark):
    silver = spark.createDataFrame([
        ("site-01", "user-0001", "page_view", ts("2020-11-16 22:00:00")),
        ("site-01", "user-0001", "page_view", ts("2020-11-16 22:30:00")),
        ("site-01", "user-0002", "click", ts("2020-11-16 22:59:59")),
        ("site-01", "user-0002", "page_view", ts("2020-11-16 23:00:00")),
        ("site-02", "user-0001", "scroll", ts("2020-11-16 22:10:00")),
    ], "site_id string, user_id string, event string, timestamp timestamp")
    rows = clickstream_site_hourly.build(silver, {}).orderBy("site_id", "event_hour").collect()
    assert [tuple(r) for r in rows] == [
        (dt.date(2020, 11, 16), ts("2020-11-16 22:00:00"), "site-01", 2, 2, 3),
        (dt.date(2020, 11, 16), ts("2020-11-16 23:00:00"), "site-01", 1, 1, 1),
        (dt.date(2020, 11, 16), ts("2020-11-16 22:00:00"), "site-02", 0, 1, 1),
    ]
