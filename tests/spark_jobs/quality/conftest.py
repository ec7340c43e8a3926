"""Fixtures for the data-quality tests: a small contract of the documented shape, a local Spark session."""
from __future__ import annotations

import datetime as dt

import pytest

CONTRACT = {
    "dataset": "iot",
    "landing": {"format": "json_array"},
    "source_field": "sensor_id",
    "key": ["event_id"],
    "event_time": "event_ts",
    "schema": [
        {"name": "event_id", "type": "string", "required": True},
        {"name": "sensor_id", "type": "string", "required": True, "regex": "^sensor-[0-9]{3}$"},
        {"name": "event_ts", "type": "timestamp", "required": True},
        {"name": "temperature", "type": "double", "min": -40, "max": 85},
        {"name": "status", "type": "string", "allowed": ["ok", "warn", "fault"]},
    ],
    "rules": [{"name": "fault_has_no_full_battery", "expr": "NOT (status = 'fault' AND temperature > 80)"}],
    "gold": ["iot_hourly"],
    "expectations": {"bronze": [], "silver": [], "gold": []},
}

SILVER_DDL = "event_id string, sensor_id string, event_ts timestamp, temperature double, status string"
NOW = dt.datetime(2026, 11, 21, 12, 0, 0)


@pytest.fixture
def contract():
    import copy

    return copy.deepcopy(CONTRACT)


@pytest.fixture(scope="session")
def spark():
    from spark_jobs.runs.session import build_session

    session = build_session("tenantlake-dq-tests", driver_memory="1g", small_inputs=True)
    yield session


@pytest.fixture
def state_dir(tmp_path, monkeypatch):
    """Reports mirror into a per-test state dir, never the user's .local."""
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def silver_rows(n: int = 20, *, bad_regex: int = 0, hot: int = 0) -> list[tuple]:
    """n good silver rows; the first ``bad_regex`` get a malformed sensor id, the next ``hot`` are out of range."""
    rows = []
    for i in range(n):
        sensor = f"sensor-{i % 7:03d}" if i >= bad_regex else f"SENSOR{i}"
        temperature = 99.0 if bad_regex <= i < bad_regex + hot else 20.0 + i % 5
        rows.append((f"e{i}", sensor, NOW - dt.timedelta(minutes=i), temperature, "ok"))
    return rows
