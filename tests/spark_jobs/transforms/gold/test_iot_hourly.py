import datetime as dt

from spark_jobs.transforms.gold import iot_hourly, load_gold
from tests.spark_jobs.conftest import ts


def test_hourly_min_avg_max_count_and_out_of_range(spark):
    silver = spark.createDataFrame([
        ("sensor-001", ts("2020-11-16 22:05:00"), 20.0, 50.0, 80.0),
        ("sensor-001", ts("2020-11-16 22:55:00"), 50.0, 95.0, 79.0),
        ("sensor-001", ts("2020-11-16 23:01:00"), -5.0, None, 78.0),
        ("sensor-002", ts("2020-11-16 22:10:00"), 10.0, 30.0, None),
    ], "sensor_id string, event_ts timestamp, temperature double, humidity double, battery double")
    options = {"normal_ranges": {"temperature": [0, 45], "humidity": [10, 90]}}
    rows = iot_hourly.build(silver, options).orderBy("sensor_id", "event_hour").collect()
    assert [tuple(r) for r in rows] == [
        (dt.date(2020, 11, 16), ts("2020-11-16 22:00:00"), "sensor-001", 2, 20.0, 35.0, 50.0, 50.0, 72.5, 95.0, 79.0, 1, 1),
        (dt.date(2020, 11, 16), ts("2020-11-16 23:00:00"), "sensor-001", 1, -5.0, -5.0, -5.0, None, None, None, 78.0, 1, 0),
        (dt.date(2020, 11, 16), ts("2020-11-16 22:00:00"), "sensor-002", 1, 10.0, 10.0, 10.0, 30.0, 30.0, 30.0, None, 0, 0),
    ]
    assert list(rows[0].asDict()) == list(iot_hourly.COLUMNS)


def test_registry_describes_the_module():
    spec = load_gold("iot_hourly")
    assert (spec.partition_by, spec.reconcile_column) == (("event_date",), "reading_count")
