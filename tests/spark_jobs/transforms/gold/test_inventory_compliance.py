import datetime as dt

from spark_jobs.contract.model import load_contract
from spark_jobs.transforms.gold import inventory_compliance
from tests.spark_jobs.conftest import ts

RULES = [
    {"org_id": "*", "rule": "min_free_disk_pct", "kind": "min", "metric": "disk_free_pct", "threshold": 15},
    {"org_id": "*", "rule": "max_cpu_percent", "kind": "max", "metric": "cpu_percent", "threshold": 90},
    {"org_id": "*", "rule": "required_os_version", "kind": "allowed", "metric": "os_release",
     "allowed_values": ["ubuntu 22.04", "windows 11"]},
    {"org_id": "org-02", "rule": "max_cpu_percent", "kind": "max", "metric": "cpu_percent", "threshold": 80},
]


def test_each_broken_rule_of_the_latest_snapshot_is_one_row(spark):
    day = dt.date(2020, 11, 16)
    silver = spark.createDataFrame([
        # h1: an early bad snapshot, then a compliant one: only the latest counts.
        (day, "org-01", "h1", "h1.corp", ts("2020-11-16 08:00:00"), "ubuntu", "20.04", 99.0, 5.0),
        (day, "org-01", "h1", "h1.corp", ts("2020-11-16 09:00:00"), "ubuntu", "22.04", 10.0, 50.0),
        # h2: low disk and an old OS.
        (day, "org-01", "h2", "h2.corp", ts("2020-11-16 09:00:00"), "windows", "10", 50.0, 10.0),
        # h3 in org-02: 85 % CPU breaks org-02's own 80 % limit (overrides the default 90 %).
        (day, "org-02", "h3", "h3.corp", ts("2020-11-16 09:00:00"), "windows", "11", 85.0, 40.0),
        # h4 in org-01: 85 % CPU is fine under the default.
        (day, "org-01", "h4", "h4.corp", ts("2020-11-16 09:00:00"), "windows", "11", 85.0, 40.0),
    ], "event_date date, org_id string, host_id string, hostname string, collected_at timestamp, "
       "os_name string, os_version string, cpu_percent double, disk_free_pct double")
    rows = inventory_compliance.build(silver, {"policy_rules": RULES}).orderBy("host_id", "rule").collect()
    assert [tuple(r) for r in rows] == [
        (day, "org-01", "h2", "h2.corp", ts("2020-11-16 09:00:00"), "min_free_disk_pct", "disk_free_pct", "10.0", ">= 15.0"),
        (day, "org-01", "h2", "h2.corp", ts("2020-11-16 09:00:00"), "required_os_version", "os_release", "windows 10",
         "one of ubuntu 22.04, windows 11"),
        (day, "org-02", "h3", "h3.corp", ts("2020-11-16 09:00:00"), "max_cpu_percent", "cpu_percent", "85.0", "<= 80.0"),
    ]


def test_the_packaged_policy_table_is_well_formed():
    rules = load_contract("inventory").gold_options["inventory_compliance"]["policy_rules"]
    assert {r["kind"] for r in rules} <= {"min", "max", "allowed"}
    assert {r["rule"] for r in rules} == {"min_free_disk_pct", "max_cpu_percent", "required_os_version"}
