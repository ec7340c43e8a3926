"""How a failure reads, below every command and job: ``JobFailed`` (a job that stopped on purpose, with its exit
code), the exit codes of ``python -m spark_jobs``, any exception as one line (``one_line``; the JVM's own
exception, not py4j's wrapper) and as its whole text, and the check that the lake's S3 endpoint answers before a
JVM starts. ``spark_jobs/cli/errors.py`` turns an exception into a command's last line with these; the layers, the
landing reader, the leases and the checkpoint raise and describe with them.
"""
from __future__ import annotations

import re
import socket
from urllib.parse import urlparse

from spark_jobs.lake.config import LakeConfig

# Exit codes of ``python -m spark_jobs`` (spark_jobs/README.md "CLI"); 4 and 5 come from a run's validation
# status (``spark_jobs.quality.exit_code``).
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INVARIANT, EXIT_VALIDATION = 0, 1, 2, 3, 4
ENDPOINT_CONNECT_TIMEOUT_S = 5.0  # a TCP connect to the S3 endpoint before the JVM starts


class JobFailed(RuntimeError):
    """A job stopped on purpose (bad input, blocking validation); ``exit_code`` says which."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


def describe_error(exc: BaseException) -> tuple[str, str]:
    """(exception name, first line of its message); for a JVM error, the Java exception's own, not
    py4j's "An error occurred while calling o67.exists"."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            name, _, message = str(java.toString()).partition(": ")
            return name.rsplit(".", 1)[-1], (message.strip().splitlines() or [""])[0]
        except Exception:  # noqa: BLE001 - the gateway may be gone; fall back to the Python text
            pass
    return type(exc).__name__, (str(exc).strip().splitlines() or [""])[0]


# The longest error line printed; the whole text is in the run manifest's ``error_detail``.
ERROR_LINE_CHARS = 600
DETAILS_ATTRIBUTE = "tenantlake_details"  # set on an exception that ended a run: where its manifest is


def error_text(exc: BaseException) -> str:
    """The error's whole text: a JVM exception's own ``toString`` and its causes' (not py4j's wrapper), else
    the Python exception's name and message."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            parts, cause = [], java
            while cause is not None and len(parts) < 5:
                parts.append(str(cause.toString()))
                cause = cause.getCause()
            return "\nCaused by: ".join(parts)
        except Exception:  # noqa: BLE001 - the gateway may be gone; fall back to the Python text
            pass
    return f"{type(exc).__name__}: {str(exc).strip()}"


def one_line(exc: BaseException, limit: int = ERROR_LINE_CHARS) -> str:
    """The error as ONE line that is never cut mid-thought: ``Name: message`` with its lines joined (a JVM
    exception's stack frames left out). Iceberg's "Cannot write incompatible dataset" (a table schema, the
    data's schema, then the problems, over many lines) becomes its problems alone, and its "Field x not found
    in source schema" says which column the table lacks; both say where to look next."""
    name, _ = describe_error(exc)
    text = error_text(exc)
    message = text.split(": ", 1)[1] if ": " in text.split("\n", 1)[0] else text
    lines = [ln.strip() for ln in message.splitlines() if ln.strip() and not ln.strip().startswith("at ")]
    joined = " ".join(" ".join(lines).split())
    problems = None
    if lines and lines[0].startswith("Cannot write incompatible dataset") and "Problems:" in lines:
        problems = "; ".join(ln.lstrip("* ") for ln in lines[lines.index("Problems:") + 1:] if ln.startswith("*"))
    elif re.fullmatch(r"Field \S+ not found in source schema", joined):  # a column the table does not have
        problems = f"column {joined.split()[1]} is not in the table"
    if problems is not None:
        return (f"{name}: the data does not match the table's schema: {problems} (the table was not changed; "
                "`python -m spark_jobs contract plan` shows how the contract and the table differ)")
    if len(joined) > limit:
        joined = joined[:limit].rsplit(" ", 1)[0] + " [...]"
    return f"{name}: {joined}" if joined else name


class EndpointUnreachable(JobFailed):
    """The lake's S3 endpoint does not accept connections (the emulator is down, a wrong port)."""


def unreachable_message(endpoint: str, reason: str) -> str:
    host = urlparse(endpoint).hostname or ""
    hint = " - is the emulator running? `make emulator-up`" if host in ("127.0.0.1", "localhost", "::1") else ""
    return f"cannot reach S3 endpoint {endpoint}: {reason}{hint}"


def check_endpoint(lake: LakeConfig, timeout_s: float = ENDPOINT_CONNECT_TIMEOUT_S) -> None:
    """One TCP connect to the lake's explicit S3 endpoint: a job against a stopped emulator fails at
    once with one line naming it, instead of s3a retrying for minutes and ending in a JVM stack trace."""
    if not (lake.is_object_store and lake.s3_endpoint):
        return
    parsed = urlparse(lake.s3_endpoint)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.hostname or "", port), timeout=timeout_s):
            pass
    except OSError as exc:
        reason = (exc.strerror or str(exc) or type(exc).__name__).lower()
        raise EndpointUnreachable(unreachable_message(lake.s3_endpoint, reason), 1) from None
