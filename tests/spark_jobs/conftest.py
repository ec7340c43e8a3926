"""Fixtures for the spark_jobs tests: ONE local Spark session for the whole pytest run.

``spark_jobs.runs.session.build_session`` ends in ``getOrCreate()``, so any other package's session
fixture built the same way gets this same JVM. The end-to-end test on the emulator runs the real CLI
in a subprocess (its own JVM with the s3a jars), so this session needs no s3a settings.
"""
from __future__ import annotations

import datetime as dt

import pytest


@pytest.fixture(scope="session")
def spark():
    from spark_jobs.runs.session import build_session

    # Tests run small inputs: C1 only, as `run`/`run-all` choose for them (spark_jobs/README.md, "Small inputs";
    # every package's fixture says the same, as the first one built is the one all of them get).
    return build_session("tenantlake-spark-jobs-tests", driver_memory="1g", small_inputs=True)


def ts(text: str) -> dt.datetime:
    """A naive UTC datetime, as Spark returns timestamps with session time zone UTC."""
    return dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
