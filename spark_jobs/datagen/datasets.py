"""Per-dataset record factories and bad-record mutations for the generator."""
from __future__ import annotations

import datetime as dt
import random
from typing import Any, Callable

DELETE = object()
ISO_Z = "%Y-%m-%dT%H:%M:%SZ"
SPACED = "%Y-%m-%d %H:%M:%S"


def _iot_record(rng: random.Random, source: int, seq: int, ts: dt.datetime) -> dict[str, Any]:
    status = rng.choices(["ok", "warn", "fault"], weights=[85, 10, 5])[0]
    return {
        "event_id": f"{rng.getrandbits(64):016x}-{seq:07d}",
        "sensor_id": f"sensor-{source + 1:03d}",
        "event_ts": ts.strftime(ISO_Z),
        "temperature": round(max(-40.0, min(85.0, rng.gauss(22.0, 12.0))), 2),
        "humidity": round(rng.uniform(5.0, 95.0), 1),
        "battery": round(rng.uniform(5.0, 99.9), 1),
        "status": status,
    }


def _iot_cosmetic(rng: random.Random, record: dict[str, Any]) -> dict[str, Any]:
    """What producers really send: sometimes upper-case status (silver normalises it)."""
    raw = dict(record)
    if rng.random() < 0.05:
        raw["status"] = raw["status"].upper()
    return raw


EVENTS = ["page_view", "click", "scroll", "purchase"]


def _click_record(rng: random.Random, source: int, seq: int, ts: dt.datetime, users: int = 59) -> dict[str, Any]:
    site = f"site-{source + 1:02d}"
    return {
        "timestamp": ts.strftime(SPACED),
        "event": rng.choices(EVENTS, weights=[60, 25, 10, 5])[0],
        "user_id": f"user-{rng.randrange(1, users + 1):04d}",
        "site_id": site,
        "url": f"https://{site}.example.com/p/{rng.randrange(1, 40)}",
        "on_site_seconds": rng.randrange(0, 900),
        "viewed_percent": rng.randrange(0, 101),
    }


def _click_cosmetic(rng: random.Random, record: dict[str, Any]) -> dict[str, Any]:
    raw = dict(record)
    if rng.random() < 0.05:
        raw["event"] = raw["event"].upper()
    return raw


OS_RELEASES = [("ubuntu", "22.04"), ("ubuntu", "24.04"), ("ubuntu", "20.04"), ("windows", "11"),
               ("windows", "10"), ("macos", "14"), ("macos", "15"), ("macos", "13")]


def _inventory_record(rng: random.Random, source: int, seq: int, ts: dt.datetime, host: int) -> dict[str, Any]:
    org = f"org-{source + 1:02d}"
    os_name, os_version = rng.choices(OS_RELEASES, weights=[30, 25, 5, 20, 5, 8, 5, 2])[0]
    total = float(rng.choice([256, 512, 1024]))
    return {
        "org_id": org,
        "host_id": f"{org}-host-{host:03d}",
        "hostname": f"{org}-host-{host:03d}.corp.example",
        "collected_at": ts.strftime(ISO_Z),
        "os_name": os_name,
        "os_version": os_version,
        "cpu_percent": round(max(0.0, min(100.0, rng.gauss(45.0, 25.0))), 1),
        "disk_free_gb": round(total * rng.uniform(0.03, 0.9), 1),
        "disk_total_gb": total,
        "agent_version": f"3.{rng.randrange(0, 6)}.{rng.randrange(0, 10)}",
    }


def _inventory_cosmetic(rng: random.Random, record: dict[str, Any]) -> dict[str, Any]:
    raw = dict(record)
    if rng.random() < 0.05:
        raw["hostname"] = raw["hostname"].upper()
    return raw


# dataset -> mutation kind -> (field, bad value or DELETE, expected rule name)
MUTATIONS: dict[str, dict[str, tuple[str, Any, str]]] = {
    "iot": {
        "wrong_type": ("temperature", "hot", "temperature_type"),
        "missing_key": ("sensor_id", DELETE, "sensor_id_required"),
        "out_of_range": ("temperature", 150.0, "temperature_range"),
        "unknown_field": ("firmware", "v1.2.3", "unknown_fields"),
    },
    "clickstream": {
        "wrong_type": ("on_site_seconds", "ten", "on_site_seconds_type"),
        "missing_key": ("user_id", DELETE, "user_id_required"),
        "out_of_range": ("viewed_percent", 140, "viewed_percent_range"),
        "unknown_field": ("referrer", "https://search.example/", "unknown_fields"),
    },
    "inventory": {
        "wrong_type": ("cpu_percent", "high", "cpu_percent_type"),
        "missing_key": ("os_name", DELETE, "os_name_required"),
        "out_of_range": ("cpu_percent", 180.0, "cpu_percent_range"),
        "unknown_field": ("bios_serial", "XJ-42", "unknown_fields"),
    },
}
COSMETIC: dict[str, Callable[[random.Random, dict], dict]] = {
    "iot": _iot_cosmetic, "clickstream": _click_cosmetic, "inventory": _inventory_cosmetic,
}
