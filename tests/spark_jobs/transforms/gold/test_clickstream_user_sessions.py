import datetime as dt

from spark_jobs.transforms.gold import clickstream_user_sessions
from tests.spark_jobs.conftest import ts


def test_a_gap_over_30_minutes_starts_a_new_session(spark):
    silver = spark.createDataFrame([
        ("user-0001", "site-01", "page_view", ts("2020-11-16 22:00:00")),
        ("user-0001", "site-02", "click", ts("2020-11-16 22:30:00")),      # 30 min exactly: same session
        ("user-0001", "site-01", "page_view", ts("2020-11-16 23:00:01")),  # 30 min 1 s: new session
        ("user-0002", "site-01", "page_view", ts("2020-11-16 23:59:00")),
        ("user-0002", "site-01", "scroll", ts("2020-11-17 00:10:00")),     # crosses midnight, same session
    ], "user_id string, site_id string, event string, timestamp timestamp")
    rows = clickstream_user_sessions.build(silver, {"session_gap_minutes": 30}).orderBy("user_id", "session_start").collect()
    assert [tuple(r) for r in rows] == [
        (dt.date(2020, 11, 16), "user-0001", "user-0001-20201116T220000", ts("2020-11-16 22:00:00"),
         ts("2020-11-16 22:30:00"), 1800, 2, 1, 2),
        (dt.date(2020, 11, 16), "user-0001", "user-0001-20201116T230001", ts("2020-11-16 23:00:01"),
         ts("2020-11-16 23:00:01"), 0, 1, 1, 1),
        (dt.date(2020, 11, 16), "user-0002", "user-0002-20201116T235900", ts("2020-11-16 23:59:00"),
         ts("2020-11-17 00:10:00"), 660, 2, 1, 1),
    ]
