"""How a ``python -m spark_jobs`` command ends when it raises: one line on stderr and an exit code.

Exit codes (``spark_jobs.cli``): 0 success, 1 job failed, 2 bad arguments or configuration (the user's to fix:
``USER_ERRORS``), 3 counts invariant violated; 4 and 5 come from a run's validation status
(``spark_jobs.quality.exit_code``), and a job's own failure carries its code (``JobFailed``,
``CheckpointCorruptError``). Never a JVM stack trace: a Java error is named by its own exception and first line;
an error that ended a layer run says where its manifest is.
"""
from __future__ import annotations

import argparse
import sys

from py4j.protocol import Py4JNetworkError

from spark_jobs.contract.parts import ContractError
from spark_jobs.datagen.generate import DatagenError
from spark_jobs.erasure import ErasureError
from spark_jobs.erasure.subjects import SubjectError
from spark_jobs.io.readers import MissingInputError
from spark_jobs.jobs.checkpoint import CheckpointCorruptError
from spark_jobs.jobs.pseudonyms import ErasureKeyMissing
from spark_jobs.lake.catalog import CatalogError
from spark_jobs.lake.config import LakeConfigError, lake_from_args, lake_selection
from spark_jobs.lake.failures import (DETAILS_ATTRIBUTE, EXIT_FAILED, EXIT_INVARIANT, EXIT_USAGE, JobFailed,
                                 describe_error, error_text, one_line, unreachable_message)
from spark_jobs.producers.kinesis import ProducerError
from spark_jobs.quality import ReportNotWritten
from spark_jobs.runs.manifest import InvariantViolation
from spark_jobs.runs.session import DRIVER_MEMORY_ENV, driver_heap
from spark_jobs.tables.lf_tags import LfTagError
from spark_jobs.tables.maintain import MaintainError
from spark_jobs.tables.query import QueryError
from spark_jobs.usage import UsageError
from spark_jobs.usage.cost import PriceError

# Errors that are the user's to fix (a lake, contract, request or price table to correct): exit 2.
USER_ERRORS: tuple[type[Exception], ...] = (
    LakeConfigError, ContractError, DatagenError, ProducerError, CatalogError, MaintainError, QueryError,
    ErasureError, SubjectError, ErasureKeyMissing, UsageError, PriceError, LfTagError)


def exit_code(exc: Exception, args: argparse.Namespace) -> int:
    """Print ``exc`` as one ``error: ...`` line on stderr; returns the command's exit code. ``args``: the
    command line (its lake options are repeated in a suggested command, its endpoint named)."""
    if isinstance(exc, USER_ERRORS):
        return _say(f"{exc}{details(exc)}", EXIT_USAGE)
    if isinstance(exc, InvariantViolation):
        return _say(f"counts invariant violated: {exc}{details(exc)}", EXIT_INVARIANT)
    if isinstance(exc, CheckpointCorruptError):
        return _say(exc.message(lake_selection(args)), exc.exit_code)
    if isinstance(exc, JobFailed):
        return _say(f"{exc}{details(exc)}", exc.exit_code)
    if isinstance(exc, ReportNotWritten):
        return _say(str(exc), EXIT_FAILED)
    if isinstance(exc, MissingInputError):
        return _say(f"{exc}{details(exc)}", EXIT_FAILED)
    if driver_gone(exc):
        return _say(f"the Spark driver stopped during the run ({type(exc).__name__}); if the log above shows "
                    f"java.lang.OutOfMemoryError, give it more heap: {DRIVER_MEMORY_ENV}=<size> (this run: "
                    f"{driver_heap()}), then run it again (a table commit is all or nothing)", EXIT_FAILED)
    if connection_refused(exc) and getattr(args, "lake_uri", None) is not None:
        try:
            endpoint = lake_from_args(args).s3_endpoint or "(AWS default)"
        except (LakeConfigError, OSError):
            endpoint = "(unknown)"
        return _say(unreachable_message(endpoint, "connection refused"), EXIT_FAILED)
    name, first_line = describe_error(exc)
    whole = error_text(exc)  # the causes too: Iceberg's catalog wraps s3a's error in its own
    if "UnknownStoreException" in name or "NoSuchBucket" in first_line or "UnknownStoreException" in whole:
        tenant = getattr(args, "tenant", "") or "<tenant>"
        return _say(f"the lake bucket does not exist ({first_line}); if the emulator was restarted, its "
                    f"in-memory state is gone: run `make apply TENANT={tenant}` again", EXIT_FAILED)
    return _say(f"{one_line(exc)}{details(exc)}", EXIT_FAILED)


def _say(message: str, code: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def details(exc: BaseException) -> str:
    """`` (details: <manifest>)`` for an error that ended a layer run (its manifest holds the whole text and the
    run's stages; the data-quality report is beside it), else ""."""
    where = getattr(exc, DETAILS_ATTRIBUTE, None)
    return f" (details: {where})" if where else ""


def connection_refused(exc: BaseException) -> bool:
    """s3a gave up on an endpoint that went away during the run (checked at start by failures.check_endpoint)."""
    text = str(exc)
    return "Connection refused" in text or "ConnectException" in text


def driver_gone(exc: BaseException) -> bool:
    """The driver JVM itself went away, not a service the job talks to: most often an OutOfMemoryError, whose
    handler stops the JVM (the error above this line says so). Judged by the JVM's process, which this Python
    started (pyspark keeps it as the gateway's ``proc``), because the error Python sees depends on what it was
    doing when the JVM died: py4j's network error, or a Py4JError whose cause is a plain ConnectionRefusedError
    (a call in flight, or a JVM class looked up afterwards). A refused connection from boto3 (an emulator gone)
    leaves the JVM running, so it does not read as this."""
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            break
        if isinstance(seen, Py4JNetworkError):
            return True
        seen = seen.__cause__ or seen.__context__
    return _driver_process_exited()


def _driver_process_exited() -> bool:
    """The JVM pyspark launched for this process has exited (False when no JVM was started)."""
    if "pyspark" not in sys.modules:
        return False
    from pyspark import SparkContext  # only once pyspark is loaded: a command without Spark never imports it

    proc = getattr(SparkContext._gateway, "proc", None)
    return proc is not None and proc.poll() is not None
