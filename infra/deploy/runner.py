"""Submit job runs one at a time in dependency order and poll each until it is terminal.

A run is a dataset's pipeline (bronze -> silver -> gold in one Spark application, the default) or one
layer (``--per-layer``). Before each submission the runner looks for runs of the same identity (name
and tags: tenant, dataset, layer or "pipeline", run date, event date, code version) on the virtual
cluster:

* one still PENDING/SUBMITTED/RUNNING: it is attached to and polled, not submitted again (a deploy
  that was interrupted and retried does not double-submit, even after EMR's idempotency window);
* one COMPLETED: the run is skipped (``rerun=True`` submits a new attempt);
* only FAILED/CANCELLED ones: a new attempt is submitted, with the next deterministic ``clientToken``.

The first run that does not complete stops the deploy: later runs are not submitted. Its layer (the
one that failed inside a pipeline run) and the job's own error line come from the run manifests the
jobs wrote to the lake (``run_manifests``).
"""
from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any, Callable, TextIO

from botocore.exceptions import BotoCoreError, ClientError

from infra.deploy.request import ERASE, ArtifactLocation, RequestOptions, RunSpec, build_request, log_stream_prefix
from infra.deploy.run_manifests import read_run_result
from infra.deploy.target import DeployError, DeployTarget

ACTIVE_STATES = frozenset({"PENDING", "SUBMITTED", "RUNNING", "CANCEL_PENDING"})
FAILED_STATES = frozenset({"FAILED", "CANCELLED"})
SUCCESS_STATE = "COMPLETED"
IDENTITY_TAGS = ("tenant", "dataset", "layer", "run_date", "event_date", "code_version", "request")
DEFAULT_POLL_SECONDS = 10.0
DEFAULT_TIMEOUT_MINUTES = 120.0
HEARTBEAT_SECONDS = 60.0


@dataclasses.dataclass
class PlannedRun:
    """What the runner will do for one spec. action: "submit" | "attach" | "skip"."""

    spec: RunSpec
    request: dict[str, Any]
    action: str
    existing_id: str = ""
    attempt: int = 0


@dataclasses.dataclass
class RunOutcome:
    spec: RunSpec
    action: str
    job_run_id: str
    state: str
    state_details: str = ""
    failure_reason: str = ""
    cloudwatch: str = ""
    s3_logs: str = ""
    failed_layer: str = ""   # the layer the run manifests blame ("" when unknown or completed)
    layer_report: str = ""   # their one-line explanation

    @property
    def ok(self) -> bool:
        return self.state == SUCCESS_STATE

    @property
    def label(self) -> str:
        """``dataset/layer``: for a failed pipeline run, the layer that failed."""
        return f"{self.spec.dataset}/{self.failed_layer}" if self.failed_layer else self.spec.label


def log_locations(target: DeployTarget, spec: RunSpec, job_run_id: str) -> tuple[str, str]:
    """Where EMR on EKS writes this run's driver/executor logs (CloudWatch streams, S3 prefix)."""
    path = f"{target.virtual_cluster_id}/jobs/{job_run_id}/"
    cloudwatch = f"log group {target.log_group}, streams {log_stream_prefix(spec)}/{path}"
    return cloudwatch, f"{target.logs_uri}{path}"


def previous_runs(emr, target: DeployTarget, request: dict[str, Any]) -> list[dict[str, Any]]:
    """Runs on the virtual cluster with this request's name and identity tags, newest first."""
    runs: list[dict[str, Any]] = []
    paginator = emr.get_paginator("list_job_runs")
    for page in paginator.paginate(virtualClusterId=target.virtual_cluster_id, name=request["name"]):
        for run in page.get("jobRuns", []):
            tags = run.get("tags") or {}
            if run.get("name") == request["name"] and all(tags.get(k) == request["tags"].get(k) for k in IDENTITY_TAGS):
                runs.append(run)
    return sorted(runs, key=lambda r: str(r.get("createdAt", "")), reverse=True)


def active_erase_runs(emr, target: DeployTarget) -> list[dict[str, Any]]:
    """The tenant's erasure runs on the virtual cluster that are not yet terminal (tag ``layer=erase``)."""
    found: list[dict[str, Any]] = []
    try:
        for page in emr.get_paginator("list_job_runs").paginate(virtualClusterId=target.virtual_cluster_id,
                                                                states=sorted(ACTIVE_STATES)):
            found += [run for run in page.get("jobRuns", []) if run.get("state") in ACTIVE_STATES
                      and (run.get("tags") or {}).get("layer") == ERASE
                      and (run.get("tags") or {}).get("tenant") == target.tenant_id]
    except (ClientError, BotoCoreError) as exc:
        raise DeployError(f"tenant '{target.tenant_id}': cannot list job runs on virtual cluster "
                          f"'{target.virtual_cluster_id}': {exc}") from exc
    return found


def plan_run(emr, target: DeployTarget, location: ArtifactLocation, spec: RunSpec, contract_sha256: str,
             options: RequestOptions, rerun: bool = False) -> PlannedRun:
    base = build_request(target, location, spec, contract_sha256, options)
    try:
        previous = previous_runs(emr, target, base)
    except (ClientError, BotoCoreError) as exc:
        raise DeployError(f"tenant '{target.tenant_id}': cannot list job runs on virtual cluster "
                          f"'{target.virtual_cluster_id}': {exc}") from exc
    active = [r for r in previous if r.get("state") in ACTIVE_STATES]
    if active:
        return PlannedRun(spec, base, "attach", existing_id=active[0]["id"])
    done = [r for r in previous if r.get("state") == SUCCESS_STATE]
    if done and not rerun:
        return PlannedRun(spec, base, "skip", existing_id=done[0]["id"])
    attempt = len(previous)
    request = build_request(target, location, spec, contract_sha256, options, attempt=attempt)
    return PlannedRun(spec, request, "submit", attempt=attempt)


class Progress:
    """One status line per run: rewritten in place on a terminal, a line per change otherwise."""

    def __init__(self, stream: TextIO = sys.stderr, clock: Callable[[], float] = time.monotonic):
        self.stream = stream
        self.clock = clock
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self._last: tuple[str, str] | None = None
        self._last_print = 0.0

    def update(self, index: int, total: int, label: str, job_run_id: str, state: str, elapsed: float) -> None:
        minutes, seconds = divmod(int(elapsed), 60)
        line = f"[{index}/{total}] {label:<24} {state:<10} {minutes:02d}:{seconds:02d}  (job run {job_run_id})"
        now = self.clock()
        changed = self._last != (job_run_id, state)
        if self.tty:
            self.stream.write("\r" + line.ljust(100))
        elif changed or now - self._last_print >= HEARTBEAT_SECONDS:
            self.stream.write(line + "\n")
            self._last_print = now
        self.stream.flush()
        self._last = (job_run_id, state)

    def done(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
        self._last = None


def wait_for(emr, target: DeployTarget, spec: RunSpec, job_run_id: str, progress: Progress, index: int, total: int,
             poll_seconds: float, timeout_seconds: float,
             sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> dict[str, Any]:
    """Poll ``describe_job_run`` until the run is terminal (or the timeout passes); return the last jobRun."""
    started = clock()
    while True:
        try:
            run = emr.describe_job_run(id=job_run_id, virtualClusterId=target.virtual_cluster_id)["jobRun"]
        except (ClientError, BotoCoreError) as exc:
            raise DeployError(f"tenant '{target.tenant_id}': cannot describe job run {job_run_id} ({spec.label}): {exc}") from exc
        elapsed = clock() - started
        progress.update(index, total, spec.label, job_run_id, run.get("state", "?"), elapsed)
        if run.get("state") not in ACTIVE_STATES:
            progress.done()
            return run
        if elapsed >= timeout_seconds:
            progress.done()
            return {**run, "state": "TIMEOUT", "stateDetails": f"still {run.get('state')} after {elapsed / 60:.1f} min"
                    " (not cancelled; re-run the same deploy to attach to it)"}
        sleep(poll_seconds)


def run_in_order(emr, target: DeployTarget, location: ArtifactLocation, specs: list[RunSpec],
                 contract_hashes: dict[str, str], options: RequestOptions, *, rerun: bool = False,
                 poll_seconds: float = DEFAULT_POLL_SECONDS, timeout_seconds: float = DEFAULT_TIMEOUT_MINUTES * 60,
                 out: TextIO = sys.stderr, progress: Progress | None = None,
                 sleep: Callable[[float], None] = time.sleep, s3=None) -> list[RunOutcome]:
    """Run ``specs`` one after the other; stop at the first that does not complete.

    ``s3`` (a client for the lake) lets the runner name the layer that failed from the run manifests;
    without it a failed pipeline run is reported as a whole."""
    progress = progress or Progress(out)
    outcomes: list[RunOutcome] = []
    total = len(specs)
    for index, spec in enumerate(specs, start=1):
        plan = plan_run(emr, target, location, spec, contract_hashes[spec.dataset], options, rerun=rerun)
        if plan.action == "skip":
            cloudwatch, s3_logs = log_locations(target, spec, plan.existing_id)
            out.write(f"[{index}/{total}] {spec.label}: already COMPLETED as job run {plan.existing_id} "
                      "for this code version and date; skipped (--rerun runs it again)\n")
            outcomes.append(RunOutcome(spec, "skip", plan.existing_id, SUCCESS_STATE, cloudwatch=cloudwatch, s3_logs=s3_logs))
            continue
        if plan.action == "attach":
            job_run_id = plan.existing_id
            out.write(f"[{index}/{total}] {spec.label}: job run {job_run_id} of this code version and date is still "
                      "active; attaching instead of submitting again\n")
        else:
            try:
                job_run_id = emr.start_job_run(**plan.request)["id"]
            except (ClientError, BotoCoreError) as exc:
                raise DeployError(f"tenant '{target.tenant_id}': start_job_run for {spec.label} was refused: {exc}") from exc
            out.write(f"[{index}/{total}] {spec.label}: submitted job run {job_run_id} ({plan.request['name']}, "
                      f"attempt {plan.attempt})\n")
        out.flush()
        run = wait_for(emr, target, spec, job_run_id, progress, index, total, poll_seconds, timeout_seconds, sleep=sleep)
        cloudwatch, s3_logs = log_locations(target, spec, job_run_id)
        outcome = RunOutcome(spec, plan.action, job_run_id, run.get("state", "?"), str(run.get("stateDetails") or ""),
                             str(run.get("failureReason") or ""), cloudwatch, s3_logs)
        outcomes.append(outcome)
        if not outcome.ok:
            if s3 is not None and outcome.state in FAILED_STATES and not (spec.is_erase or spec.is_maintain):
                result = read_run_result(s3, target, spec, run.get("createdAt"))
                outcome.failed_layer, outcome.layer_report = result.failed_layer, result.explain()
                if spec.is_pipeline:
                    passed = f", {'+'.join(result.succeeded)} succeeded" if result.succeeded else ""
                    out.write(f"[{index}/{total}] {outcome.label}: {outcome.state} in pipeline run {job_run_id}"
                              f"{passed}: {outcome.layer_report}\n")
            break
    return outcomes


def failure_reason(outcome: RunOutcome) -> str:
    """EMR's account of a failed run, then the run manifests' (which layer, the job's own error)."""
    reason = outcome.state_details or "no details from describe_job_run"
    if outcome.failure_reason:
        reason += f" [failureReason {outcome.failure_reason}]"
    if outcome.layer_report:
        reason += f"; {outcome.layer_report}"
    return reason


def describe_outcome(outcome: RunOutcome) -> str:
    line = f"{outcome.label}: {outcome.state} (job run {outcome.job_run_id}"
    line += f", pipeline run of {outcome.spec.dataset})" if outcome.spec.is_pipeline and outcome.failed_layer else ")"
    if not outcome.ok:
        line += f": {failure_reason(outcome)}"
    return f"{line}\n    logs: CloudWatch {outcome.cloudwatch}\n          S3 {outcome.s3_logs}"
