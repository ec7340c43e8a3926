import datetime as dt

from spark_jobs.transforms.gold import inventory_org_usage


def test_average_cpu_and_disk_use_per_org_and_day(spark):
    day = dt.date(2020, 11, 16)
    silver = spark.createDataFrame([
        (day, "org-01", "h1", 10.0, 50.0),
        (day, "org-01", "h1", 30.0, 70.0),
        (day, "org-01", "h2", 50.0, 30.0),
        (day, "org-02", "h9", 90.0, 10.0),
    ], "event_date date, org_id string, host_id string, cpu_percent double, disk_used_pct double")
    rows = inventory_org_usage.build(silver, {}).orderBy("org_id").collect()
    assert [tuple(r) for r in rows] == [(day, "org-01", 2, 3, 30.0, 50.0), (day, "org-02", 1, 1, 90.0, 10.0)]
