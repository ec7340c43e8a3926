"""The run manifest: one JSON per job run at ``reports/<layer>/<dataset>/<run_id>/manifest.json``.

Every run checks ``rows_in = rows_out + quarantined + duplicates`` before it publishes anything; a run
that breaks it raises ``InvariantViolation`` (exit code 3), and its manifest says so. Silver and gold
runs record, per table they committed to, the Iceberg snapshot the publish created and the table's schema
id (``tables``), and gold records the silver snapshot it read (``input_snapshots``). Every run records the
version of the contract it ran with (``contract_version``, a hash: ``Contract.version``), and silver and
gold runs what their table's schema evolution did before the write (``evolution``).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import importlib.resources
import json
import secrets
from typing import Any

# A resource traversal, not Path(__file__): on EMR the package is a zip on --py-files.
PACKAGE_DIR = importlib.resources.files("spark_jobs")
CODE_VERSION_PREFIX = "spark_jobs-"


class InvariantViolation(RuntimeError):
    """rows_in != rows_out + quarantined + duplicates, or a written output does not read back the same."""


def new_run_id(now: dt.datetime | None = None) -> str:
    """``YYYYMMDDTHHMMSSZ-<8 hex>``: sortable by time, unique across concurrent runs."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(4)}"


def _code_files(folder: Any, prefix: str) -> list[tuple[str, Any]]:
    files = []
    for entry in folder.iterdir():
        if entry.name == "__pycache__":
            continue
        relative = f"{prefix}{entry.name}"
        if entry.is_dir():
            files.extend(_code_files(entry, relative + "/"))
        elif entry.name.endswith((".py", ".yaml")):
            files.append((relative, entry))
    return files


def code_version() -> str:
    """The package version and a digest of its code and contracts: identical code, identical version,
    with no git needed (the package runs on EMR as a zip)."""
    from spark_jobs import __version__

    digest = hashlib.sha256()
    for relative, entry in sorted(_code_files(PACKAGE_DIR, "")):
        digest.update(relative.encode())
        digest.update(entry.read_bytes())
    return f"{CODE_VERSION_PREFIX}{__version__}+{digest.hexdigest()[:12]}"


@dataclasses.dataclass
class RunManifest:
    run_id: str
    dataset: str
    layer: str
    lake_uri: str
    started_at: str
    code_version: str
    date: str | None = None
    contract_version: str = ""         # Contract.version: sha256 of the contract as the model holds it
    # silver/gold: ``incremental`` (what is new since the table's watermark), ``full`` (--full, or a first run)
    # or ``date`` (--date); bronze is always incremental (its checkpoint)
    mode: str = "incremental"
    status: str = "running"           # running | succeeded | failed
    finished_at: str | None = None
    duration_seconds: float | None = None
    rows_in: int = 0
    rows_out: int = 0
    quarantined: int = 0
    duplicates: int = 0
    late: int = 0
    malformed: int = 0
    invariant_holds: bool | None = None
    published: bool = False            # the outputs were written, or were up to date (false when a check stopped the run)
    inputs: list[str] = dataclasses.field(default_factory=list)
    outputs: dict[str, str] = dataclasses.field(default_factory=dict)
    # output name -> {table, location, catalog, snapshot_id, parent_id, operation, committed_at, run_id,
    # added_records, deleted_records, total_records, columns, partitioning, schema_id} (spark_jobs.io.tables)
    tables: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    input_snapshots: dict[str, int] = dataclasses.field(default_factory=dict)  # table read -> snapshot id
    output_rows: dict[str, int] = dataclasses.field(default_factory=dict)
    event_dates: list[str] = dataclasses.field(default_factory=list)  # silver/gold: the dates the run replaced
    batches: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    # bronze: landing object versions against what bronze read (spark_jobs/jobs/landing_versions.py)
    landing: dict[str, Any] = dataclasses.field(default_factory=dict)
    stages: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    validation: dict[str, Any] = dataclasses.field(default_factory=dict)
    # output name -> {schema_id_before, schema_id, changes, sql, snapshot_unchanged} (spark_jobs.tables.plan)
    evolution: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    # silver/gold: what the run read and rewrote (watermarks before and after, new input rows, rows of the
    # partitions it rewrote read back, partitions touched, why it ran full): spark_jobs/README.md, "What a run
    # reads and rewrites"
    increment: dict[str, Any] = dataclasses.field(default_factory=dict)
    error: str | None = None          # one line (spark_jobs.lake.failures.one_line)
    error_detail: str | None = None   # the error's whole text, a JVM exception's message with its causes

    def check_invariant(self) -> None:
        accounted = self.rows_out + self.quarantined + self.duplicates
        self.invariant_holds = self.rows_in == accounted
        if not self.invariant_holds:
            raise InvariantViolation(
                f"{self.layer} {self.dataset} run {self.run_id}: rows_in={self.rows_in} but rows_out={self.rows_out} "
                f"+ quarantined={self.quarantined} + duplicates={self.duplicates} = {accounted}"
            )

    def finish(self, status: str, started_monotonic: float, now_monotonic: float, error: str | None = None,
               error_detail: str | None = None) -> None:
        self.status = status
        self.error = error
        self.error_detail = error_detail
        self.finished_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        self.duration_seconds = round(now_monotonic - started_monotonic, 3)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True, default=str)
