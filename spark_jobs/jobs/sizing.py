"""A command's Spark session (``command_session``), and whether one it starts itself can be one for small
inputs: the bytes stored under the lake folders it will read, listed before the JVM starts
(``io.lake_bytes.stored_bytes``, stopped once past the limit).

Every command that starts a session asks this (``run``/``run-all`` from the layers' inputs, ``counts``,
``maintain``, ``erase``, ``query`` from the folders they read); the benchmarks ask it the same way, so they
size their sessions as the commands they measure do.
"""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator

from pyspark.sql import SparkSession

from spark_jobs.contract import load_contract
from spark_jobs.failures import check_endpoint
from spark_jobs.io.lake_bytes import stored_bytes
from spark_jobs.jobs import runtime
from spark_jobs.lake import LakeConfig, gold_table_name
from spark_jobs.session import JIT_ENV, launched_by_spark_submit

# What each layer reads, relative to the lake root: the bytes a run will read (sizing its session).
LAYER_INPUTS = {"bronze": "landing", "silver": "bronze", "gold": "silver"}


def reads_small_inputs(lake: LakeConfig, plan: list[tuple[str, str]], continuous: bool = False) -> bool:
    """Whether every layer of ``plan`` reads small inputs: the bytes stored under their inputs (landing,
    bronze, the silver table) at most ``jobs.runtime.SMALL_INPUT_BYTES`` together; a continuous ingest reads
    without end, so it never is small (``reads_small_folders`` says when the question is asked at all)."""
    folders = sorted({f"{LAYER_INPUTS[layer]}/{dataset}" for dataset, layer in plan})
    return reads_small_folders(lake, folders, continuous=continuous)


def dataset_folders(datasets: list[str]) -> list[str]:
    """Every folder a dataset's data lives in, relative to the lake root: landing, bronze, silver, the
    quarantine and each gold table of its contract (what `counts` reads)."""
    folders = []
    for dataset in datasets:
        folders += [f"{layer}/{dataset}" for layer in ("landing", "bronze", "silver", "quarantine")]
        folders += [f"gold/{gold_table_name(dataset, name)}" for name in load_contract(dataset).gold]
    return folders


def table_folders(datasets: list[str]) -> list[str]:
    """The Iceberg tables' folders of the datasets (silver and each gold table): what `maintain` reads."""
    return [f for f in dataset_folders(datasets) if f.startswith(("silver/", "gold/"))]


def reads_small_folders(lake: LakeConfig, folders: list[str], versions: bool = False,
                        continuous: bool = False) -> bool:
    """Whether ``folders`` (relative to the lake root; ``versions``: every version of their objects) hold at
    most ``jobs.runtime.SMALL_INPUT_BYTES`` together, so the command's session can be one for small inputs.
    Only asked for a session this command starts itself (not under spark-submit, not in a running session)
    and when ``$TENANTLAKE_JIT`` does not decide already."""
    if launched_by_spark_submit() or SparkSession.getActiveSession():
        return False
    runtime.check_local_settings()  # a bad setting or a stopped emulator: its one line, before any listing
    check_endpoint(lake)
    if continuous or os.environ.get(JIT_ENV):
        return False
    size = stored_bytes(lake, folders, runtime.SMALL_INPUT_BYTES, versions=versions)
    if size is None or size > runtime.SMALL_INPUT_BYTES:
        return False
    amount = f"{size / 2**20:.1f} MB" if size >= 2**20 else f"{size / 2**10:.0f} KB"
    print(f"session: {amount} of input: a session for small inputs ({JIT_ENV}=full to change)",
          file=sys.stderr, flush=True)
    return True


@contextlib.contextmanager
def command_session(lake: LakeConfig, app: str, jars: str = "", small_inputs: bool = False,
                    reads: list[str] | None = None, versions: bool = False) -> Iterator[SparkSession]:
    """A command's session, stopped at the end when the command started it (``jobs.runtime.session_for``:
    the running one of a test or of spark-submit is kept). ``jars``: ``--jars`` (comma-separated).
    ``reads``: the lake folders the command reads (relative to the lake root, ``""`` for all of it;
    ``versions``: every version of their objects): a session it starts itself is sized from their bytes
    (``reads_small_folders``) unless ``small_inputs`` decided already."""
    if reads is not None and not small_inputs:
        small_inputs = reads_small_folders(lake, reads, versions=versions)
    spark, created = runtime.session_for(lake, app, [j for j in jars.split(",") if j] or None, small_inputs=small_inputs)
    try:
        yield spark
    finally:
        if created:
            spark.stop()
