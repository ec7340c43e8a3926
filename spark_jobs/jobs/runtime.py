"""What every layer job shares: progress lines and the run envelope (manifest written on success and on failure,
invariant checked, quality hook called). The Spark session for a lake is ``spark_jobs.runs.session.session_for``."""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import sys
import time
from typing import Any, Callable, Iterator

from pyspark.sql import SparkSession

from spark_jobs import quality
from spark_jobs.contract.model import Contract
from spark_jobs.io import storage
from spark_jobs.jobs.counters import RunCounters
from spark_jobs.lake.config import LakeConfig
from spark_jobs.lake.failures import DETAILS_ATTRIBUTE, JobFailed, check_endpoint, error_text, one_line
from spark_jobs.runs import lineage, session, signals
from spark_jobs.runs.manifest import RunManifest, code_version, new_run_id

Progress = Callable[[str], None]


def print_progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclasses.dataclass
class JobRun:
    """One layer run of one dataset: its manifest, timing, progress output and validations."""

    spark: SparkSession
    lake: LakeConfig
    contract: Contract
    layer: str
    manifest: RunManifest
    progress: Progress
    started: float = dataclasses.field(default_factory=time.monotonic)
    # Gold: event dates to recompute besides those its silver watermark finds changed (an erasure's).
    dates: list[str] | None = None
    # Recompute everything from the whole input (``--full``), not only what is new since the watermark.
    full: bool = False
    # Called with what is about to be committed, right before each commit: ``run_layer`` renews the run's
    # lease there (``spark_jobs.runs.leases.fence``), and a run that lost it stops before the commit.
    fence_hook: Callable[[str], None] | None = None
    validations: quality.RunValidations = dataclasses.field(default_factory=quality.RunValidations)
    # Spark jobs and S3 requests per stage (spark_jobs/jobs/counters.py); None: not counted.
    counters: RunCounters | None = None
    # Session settings this run changed (size_for_input) and their values before, restored when it ends.
    _changed_conf: dict[str, str | None] = dataclasses.field(default_factory=dict)

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    def fence(self, what: str) -> None:
        """Right before a commit of ``what``: stop unless the run still holds its lease (``fence_hook``)."""
        if self.fence_hook is not None:
            self.fence_hook(what)

    def stage(self, name: str, **counts: Any) -> None:
        """One progress line and one ``stages`` entry of the manifest: the elapsed seconds since the run
        started, the step's own counts, and the Spark jobs and S3 requests since the previous stage."""
        elapsed = time.monotonic() - self.started
        cost = self.counters.step() if self.counters is not None else {}
        self.manifest.stages.append({"stage": name, "elapsed_seconds": round(elapsed, 2), **counts, **cost})
        detail = " ".join(f"{k}={v}" for k, v in counts.items())
        spent = " ".join(f"{label}={cost[key]}" for key, label in (("spark_jobs", "jobs"), ("s3_requests", "s3"))
                         if key in cost)
        self.progress(f"[{self.layer} {self.contract.dataset}] {name:<22} {detail}{' [' + spent + ']' if spent else ''} "
                      f"({elapsed:.1f}s)")

    def size_for_input(self, input_bytes: int | None) -> bool:
        """Plan this run's remaining queries for a small input when its input holds at most
        ``SMALL_INPUT_BYTES``: adaptive query execution off and one shuffle partition (``SMALL_INPUT_CONF``).

        On a few thousand rows each adaptive stage is a Spark job of its own and every shuffle runs
        ``spark.sql.shuffle.partitions`` near-empty tasks, so a layer ran about twice the jobs its
        queries need (silver on 2,000 records: 31 jobs, 18 with this). Adaptive execution would coalesce
        such a shuffle into one partition anyway; the results do not depend on either setting. The
        session's values come back when the run ends (``restore_conf``), so the next layer of
        ``run-all`` decides for its own input. Returns True when the run is planned as small."""
        if input_bytes is None or input_bytes > session.SMALL_INPUT_BYTES:
            return False
        for key, value in session.SMALL_INPUT_CONF.items():
            if key not in self._changed_conf:
                self._changed_conf[key] = self.spark.conf.get(key, None)
            self.spark.conf.set(key, value)
        return True

    def restore_conf(self) -> None:
        for key, value in self._changed_conf.items():
            if value is None:
                self.spark.conf.unset(key)
            else:
                self.spark.conf.set(key, value)
        self._changed_conf.clear()

    def context(self, **extra: Any) -> dict[str, Any]:
        return {"run_id": self.run_id, "lake_uri": self.lake.lake_uri, "dataset": self.contract.dataset,
                "layer": self.layer, "report_dir": self.report_dir, **extra}

    @property
    def report_dir(self) -> str:
        return self.lake.report_dir(self.layer, self.contract.dataset, self.run_id)

    def validate(self, df, **context: Any) -> quality.LayerValidation:
        """Call the quality hook before publishing; a blocking outcome stops the run (exit 4)."""
        validation = quality.validate_layer(self.spark, layer=self.layer, contract=self.contract, df=df,
                                            context=self.context(**context), run=self.validations,
                                            background_docs=True)
        name = context.get("gold_name") or self.layer
        self.manifest.validation[name] = {"status": validation.status, "blocking": validation.blocking,
                                          "reason": validation.reason}
        self._last_validation = validation
        if validation.blocking:
            signals.publish_blocked(self, validation)  # the tenant's alert; never fails the run
            raise JobFailed(f"{self.layer} {self.contract.dataset}: validation blocked the publish: {validation.reason}", 4)
        return validation


@contextlib.contextmanager
def job_run(spark: SparkSession, lake: LakeConfig, contract: Contract, layer: str, *, date: str | None = None,
            progress: Progress = print_progress, run_id: str | None = None,
            dates: list[str] | None = None, leased: tuple[float, RunCounters] | None = None,
            full: bool = False, fence: Callable[[str], None] | None = None) -> Iterator[JobRun]:
    """Wrap a layer job: the manifest is written whatever happens, then the report hook runs.

    ``leased``: (monotonic start, counters) of a caller that took the run's lease first
    (``jobs.layer.run_layer``): the run's clock and counts then start there, and its first stage is
    ``lease taken``."""
    manifest = RunManifest(
        run_id=run_id or new_run_id(), dataset=contract.dataset, layer=layer, lake_uri=lake.lake_uri,
        started_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), code_version=code_version(),
        date=date, contract_version=contract.version, mode="date" if date else ("full" if full else "incremental"),
    )
    # Per layer, not only per session: in run-all the endpoint may go away between two layers, and s3a
    # would retry for minutes (the manifest write included) instead of failing.
    check_endpoint(lake)
    run = JobRun(spark=spark, lake=lake, contract=contract, layer=layer, manifest=manifest, progress=progress,
                 dates=dates, full=full, fence_hook=fence)
    if leased is not None:
        run.started, run.counters = leased
        run.stage("lease taken")
    else:
        run.counters = RunCounters(spark, lake.lake_uri)
    run.stage("start", run_id=manifest.run_id)
    lineage.run_started(run)  # OpenLineage START (spark_jobs/runs/lineage.py); never fails the run
    try:
        _remove_write_leftovers(run)
        yield run
    except BaseException as exc:
        manifest.finish("failed", run.started, time.monotonic(), error=one_line(exc), error_detail=error_text(exc))
        try:
            setattr(exc, DETAILS_ATTRIBUTE, f"{run.report_dir}/manifest.json")
        except Exception:  # noqa: BLE001 - an exception that takes no attributes: the CLI names no details
            pass
        try:
            _write_manifest(run)
        except quality.ReportNotWritten as write_error:  # the manifest is written; the job's own error wins
            run.progress(f"[{layer} {contract.dataset}] {write_error}")
        except Exception as write_error:  # noqa: BLE001 - never hide the job's own error
            run.progress(f"[{layer} {contract.dataset}] manifest not written: {type(write_error).__name__}")
        raise
    finally:
        run.restore_conf()
    manifest.finish("succeeded", run.started, time.monotonic())
    _write_manifest(run)
    signals.layer_published(run)  # the freshness metric, when the lake names its namespace; never fails the run
    run.stage("done", rows_in=manifest.rows_in, rows_out=manifest.rows_out, quarantined=manifest.quarantined,
              duplicates=manifest.duplicates)


def output_locations(lake: LakeConfig, contract: Contract, layer: str) -> list[str]:
    """Where a layer job of this dataset writes its data."""
    if layer == "bronze":
        return [lake.bronze(contract.dataset)]
    if layer == "silver":
        return [lake.silver(contract.dataset), lake.quarantine(contract.dataset)]
    return [lake.gold(contract.dataset, name) for name in contract.gold]


def _remove_write_leftovers(run: JobRun) -> None:
    """A job killed during its write (SIGKILL, a lost node) leaves Spark's staging folder behind; Spark's
    readers skip it, other engines' globs may not. The next run of the same layer removes it first."""
    for uri in output_locations(run.lake, run.contract, run.layer):
        removed = storage.remove_write_leftovers(run.spark, uri)
        if removed:
            run.stage("removed leftovers", location=uri, folders=",".join(removed))


def _write_manifest(run: JobRun) -> None:
    lineage.run_finished(run)  # OpenLineage COMPLETE or FAIL from the finished manifest; never fails the run
    uri = f"{run.report_dir}/manifest.json"
    storage.write_text(run.spark, uri, run.manifest.to_json())
    validation = getattr(run, "_last_validation", None) or quality.LayerValidation()
    quality.publish_report(run.spark, layer=run.layer, contract=run.contract, validation=validation,
                           manifest=run.manifest.to_dict(), context=run.context(manifest_uri=uri), run=run.validations)
