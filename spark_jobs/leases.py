"""Who may write a dataset right now: pipeline and maintenance runs hold leases, an erasure request holds a lock.

- A **lease** (``checkpoints/<ds>/runs/<token>.lease``) is written by every run that writes a dataset's
  layers or tables (bronze, silver, gold, ``maintain``) before it looks for an erasure lock, and removed
  when the run ends. A lease older than ``LEASE_STALE_HOURS`` is a killed run's and no longer counts.
- The **erasure lock** (``checkpoints/<ds>/erasure.lock``) is written by an erase request before it looks
  for leases. Because each side writes first and looks second, at least one of two racing runs sees the
  other: a run refuses while a request holds the lock, a request refuses while a live lease exists.

``held_lease`` is the one way a run takes a lease: it refuses the run (``LeaseRefused``) when an
erasure request other than ``erasure_request`` holds the lock, and always releases the lease.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import socket
import sys
import uuid
from typing import Any, Iterator

from pyspark.sql import SparkSession

from spark_jobs.io import storage, writers
from spark_jobs.jobs.runtime import JobFailed, check_endpoint
from spark_jobs.lake import LakeConfig

# A lease older than this is a killed run's and no longer stops an erasure request.
LEASE_STALE_HOURS = 24


class LeaseRefused(JobFailed):
    """A run may not start: an erasure request holds the dataset. One line saying what to do (exit 1)."""

    def __init__(self, message: str):
        super().__init__(message, 1)


def lock_uri(lake: LakeConfig, dataset: str) -> str:
    return lake.path("checkpoints", dataset, "erasure.lock")


def lease_uri(lake: LakeConfig, dataset: str, token: str) -> str:
    return lake.path("checkpoints", dataset, "runs", f"{token}.lease")


def take_run_lease(spark: SparkSession, lake: LakeConfig, dataset: str, layer: str) -> str:
    """A run's lease on its dataset, written before it looks for an erasure lock (the request writes its
    lock before it looks for leases, so at least one of the two sees the other). Returns its token."""
    token = uuid.uuid4().hex[:16]
    storage.write_text(spark, lease_uri(lake, dataset, token), json.dumps({
        "layer": layer, "host": socket.gethostname(), "pid": os.getpid(),
        "since": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}))
    return token


def release_run_lease(spark: SparkSession, lake: LakeConfig, dataset: str, token: str) -> None:
    writers.delete_path(spark, lease_uri(lake, dataset, token))


def live_leases(spark: SparkSession, lake: LakeConfig, dataset: str,
                now: dt.datetime | None = None) -> list[tuple[str, dict[str, Any]]]:
    """Leases of runs on ``dataset`` younger than ``LEASE_STALE_HOURS``: (uri, lease)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    folder, found = lake.path("checkpoints", dataset, "runs"), []
    if not storage.exists(spark, folder):
        return []
    for name in storage.list_dir(spark, folder):
        if not name.endswith(".lease"):
            continue
        uri = f"{folder}/{name}"
        try:
            lease = json.loads(storage.read_text(spark, uri))
            since = dt.datetime.strptime(lease["since"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
        except (ValueError, KeyError, OSError):
            continue
        if now - since < dt.timedelta(hours=LEASE_STALE_HOURS):
            found.append((uri, lease))
    return found


def lock_holder(spark: SparkSession, lake: LakeConfig, dataset: str) -> dict[str, Any] | None:
    """The erasure lock of the dataset as written (``request_id``, ``subjects_digest``, ``since``), or None."""
    uri = lock_uri(lake, dataset)
    if not storage.exists(spark, uri):
        return None
    try:
        holder = json.loads(storage.read_text(spark, uri))
    except ValueError:
        return {"request_id": "unknown"}
    return holder if isinstance(holder, dict) else {"request_id": "unknown"}


def active_request(spark: SparkSession, lake: LakeConfig, dataset: str) -> str | None:
    """The request id holding the dataset's erasure lock, or None."""
    holder = lock_holder(spark, lake, dataset)
    return None if holder is None else (holder.get("request_id") or "unknown")


@contextlib.contextmanager
def held_lease(spark: SparkSession, lake: LakeConfig, dataset: str, layer: str,
               erasure_request: str | None = None) -> Iterator[str]:
    """Hold a lease on ``dataset`` for a ``layer`` run (``maintain`` for table maintenance) while the block
    runs. Raises ``LeaseRefused`` when an erasure request other than ``erasure_request`` (the request that
    makes this run itself) holds the dataset. The lease is released however the block ends; when that
    fails, a warning says it goes stale after ``LEASE_STALE_HOURS``."""
    check_endpoint(lake)  # before the lock lookup: s3a would retry a dead endpoint for minutes
    token = take_run_lease(spark, lake, dataset, layer)
    try:
        holder = active_request(spark, lake, dataset)
        if holder is not None and holder != erasure_request:
            raise LeaseRefused(f"{layer} {dataset}: erasure request {holder} is in progress on this dataset "
                               f"({lock_uri(lake, dataset)}); runs start again when it completes (if it was "
                               "killed, run its erase command again to finish it)")
        yield token
    finally:
        try:
            check_endpoint(lake)  # fast: after an outage, s3a would retry the delete for minutes
            release_run_lease(spark, lake, dataset, token)
        except Exception as exc:  # noqa: BLE001 - never hide the run's own outcome; the lease goes stale
            print(f"warning: {layer} {dataset}: could not remove the run's lease ({str(exc).splitlines()[0]}); "
                  f"it stops erasure requests on {dataset} until it is {LEASE_STALE_HOURS} h old",
                  file=sys.stderr, flush=True)
