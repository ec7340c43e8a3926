"""``python -m infra.deploy --tenant acme [--dry-run] [--datasets ...] [--per-layer [--layers ...]] [--date ...]``;
``python -m infra.deploy --tenant acme --erase-subject-file FILE [--datasets ...] [--dry-run]`` submits one
erasure run (``spark_jobs erase``) as the tenant's erasure role;
``python -m infra.deploy --tenant acme --maintain [--datasets ...] [--dry-run]`` publishes the stable
maintenance artifact (what the tenant's maintenance schedule runs) and submits one maintenance run
(``spark_jobs maintain``) as the job role.

Order of work, so that a bad deploy submits nothing: build the artifact -> check the selection, the
release label and the architecture -> read the tenant's Terraform outputs -> check bucket, virtual
cluster and role on AWS -> build (or reuse) the job dependency archive -> (``--dry-run``: print the
requests and stop) -> upload artifact and archive -> submit and poll, one run at a time -> (a pipeline deploy whose
runs all completed, on a tenant with orchestration) publish the code as the state machine's stable artifact.

Exit codes: 0 every run COMPLETED (or was already); 1 a run failed, was cancelled or timed out;
2 the deploy was refused before any submission (bad input, tenant not applied, missing cluster,
wrong role, upload failure).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import sys
from typing import Callable, TextIO

from infra.deploy import artifact as artifact_mod
from infra.deploy import job_deps, preflight, runner
from infra.deploy.request import (
    DEFAULT_RELEASE_LABEL, MAINTENANCE_PREFIX, PIPELINE, PIPELINE_PREFIX, ArtifactLocation, JobSizing, RequestOptions,
    RunSpec, build_request, erase_spec, maintenance_location, maintenance_options, maintenance_spec, run_plan,
    subject_key,
)
from infra.deploy.target import DeployError, DeployTarget, resolve_target
from infra.deploy.upload import (
    location_of, publish_maintenance, publish_stable, upload_artifact, upload_job_deps, upload_subjects,
)

EXIT_OK, EXIT_RUN_FAILED, EXIT_REFUSED = 0, 1, 2


def aws_clients(target: DeployTarget) -> Callable[[str], object]:
    """A factory of boto3 clients in the tenant's region (and on the emulator's endpoint in local mode)."""
    import boto3

    session = boto3.Session(region_name=target.region)
    credentials: dict[str, str] = {}
    if target.endpoint_url and session.get_credentials() is None:
        # Local environment with no credentials configured: the emulator accepts any.
        credentials = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
    cache: dict[str, object] = {}

    def client(service: str):
        if service not in cache:
            cache[service] = session.client(
                service, endpoint_url=target.endpoint_url or None, verify=target.ca_bundle or None, **credentials
            )
        return cache[service]

    return client


def _date(value: str) -> datetime.date:
    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{value}' is not a date like 2024-05-01") from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m infra.deploy",
                                description="Package spark_jobs and run it on the tenant's EMR on EKS virtual cluster.")
    p.add_argument("--tenant", required=True, help="tenant id (make deploy-jobs TENANT=...)")
    p.add_argument("--datasets", help="comma-separated datasets (default: every contract in spark_jobs/contracts)")
    p.add_argument("--per-layer", action="store_true",
                   help="one job run per dataset and layer (default: one pipeline run per dataset, bronze -> "
                        "silver -> gold in one Spark application)")
    p.add_argument("--layers", help="with --per-layer: comma-separated layers among bronze,silver,gold "
                                    "(default: all, in that order)")
    p.add_argument("--date", type=_date, default=None,
                   help="event date for silver and gold (passed to the jobs as --date); also names the runs. "
                        "Default: the jobs process every date, and the runs are named after today (UTC)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the StartJobRun requests as a JSON array (each item works with "
                        "`aws emr-containers start-job-run --cli-input-json`); upload and submit nothing")
    p.add_argument("--allow-warn", action="store_true",
                   help="the jobs exit 0 instead of 5 when only warn-severity expectations failed, so such a run "
                        "ends COMPLETED (default: it ends FAILED and the deploy names the expectations)")
    p.add_argument("--rerun", action="store_true", help="run again what already COMPLETED for this code version and date")
    p.add_argument("--erase-subject-file", default="", metavar="FILE",
                   help="submit one erasure run (spark_jobs erase, GDPR Art. 17) for the COLUMN=VALUE lines of FILE "
                        "instead of pipeline runs: the file goes to the lake (SSE-KMS) and the run, as the "
                        "tenant's erasure role, reads it there and deletes it; --datasets limits the datasets")
    p.add_argument("--maintain", action="store_true",
                   help="submit one table maintenance run (spark_jobs maintain: compaction, manifest rewrite, snapshot "
                        "expiry per the tenant's retention_days, orphan removal) instead of pipeline runs, after "
                        f"publishing its code and dependency archive under {MAINTENANCE_PREFIX}/ (what the tenant's "
                        "maintenance schedule runs); --datasets limits the datasets")
    p.add_argument("--release-label", default=DEFAULT_RELEASE_LABEL,
                   help=f"EMR release (default: {DEFAULT_RELEASE_LABEL}); decides the Python the job deps are built for")
    p.add_argument("--arch", default=job_deps.DEFAULT_ARCH, choices=sorted(job_deps.ARCHITECTURES),
                   help=f"CPU architecture of the cluster's nodes (default: {job_deps.DEFAULT_ARCH}; arm64 for Graviton)")
    p.add_argument("--outputs-file", help="JSON printed by `terraform output -json` (default: read the tenant's state)")
    p.add_argument("--endpoint-url", default="", help="AWS endpoint override (default: AWS_ENDPOINT_URL, or the "
                                                      "emulator recorded in the tenant's lake.json in local mode)")
    p.add_argument("--poll-seconds", type=float, default=runner.DEFAULT_POLL_SECONDS,
                   help=f"seconds between describe_job_run calls (default: {runner.DEFAULT_POLL_SECONDS:g})")
    p.add_argument("--timeout-minutes", type=float, default=runner.DEFAULT_TIMEOUT_MINUTES,
                   help=f"give up waiting on one run after this long (default: {runner.DEFAULT_TIMEOUT_MINUTES:g})")
    sizing = JobSizing()
    p.add_argument("--driver-cores", type=int, default=sizing.driver_cores)
    p.add_argument("--driver-memory", default=sizing.driver_memory)
    p.add_argument("--executor-instances", type=int, default=sizing.executor_instances)
    p.add_argument("--executor-cores", type=int, default=sizing.executor_cores)
    p.add_argument("--executor-memory", default=sizing.executor_memory)
    p.add_argument("--shuffle-partitions", type=int, default=sizing.shuffle_partitions)
    p.add_argument("--container-image", default="",
                   help="custom EMR on EKS image with the dependencies baked in (infra/deploy/Dockerfile); "
                        "no dependency archive is built or shipped then")
    p.add_argument("--build-dir", default=str(artifact_mod.DEFAULT_BUILD_DIR), help="where the artifact is built")
    p.add_argument("--job-deps-cache", default=str(job_deps.DEFAULT_CACHE_DIR),
                   help="where dependency archives are built and kept, by input hash")
    return p


def _build_artifact(args: argparse.Namespace, err: TextIO) -> artifact_mod.Artifact:
    built = artifact_mod.build_artifact(args.build_dir)
    err.write(f"artifact: spark_jobs version {built.version} ({len(built.files)} files, sha256 {built.sha256[:16]}...)\n")
    return built


def _options(args: argparse.Namespace, deps_target: job_deps.DepsTarget, allow_warn: bool = False) -> RequestOptions:
    return RequestOptions(
        release_label=args.release_label,
        sizing=JobSizing(args.driver_cores, args.driver_memory, args.executor_instances, args.executor_cores,
                         args.executor_memory, args.shuffle_partitions),
        python=deps_target.interpreter,
        container_image=args.container_image,
        allow_warn=allow_warn,
    )


def _with_job_deps(args: argparse.Namespace, options: RequestOptions, deps_target: job_deps.DepsTarget,
                   target: DeployTarget, err: TextIO) -> tuple[RequestOptions, job_deps.JobDeps | None]:
    """The dependency archive built (or taken from the cache) and wired into the options; none with
    ``--container-image``."""
    if args.container_image:
        return options, None
    deps = job_deps.build_job_deps(deps_target, cache_dir=args.job_deps_cache,
                                   progress=lambda line: (err.write(line + "\n"), err.flush()))
    err.write(f"{deps.summary()}: {deps.uri(target.bucket)}\n")
    return dataclasses.replace(options, job_deps_uri=deps.uri(target.bucket)), deps


def _upload_code(s3, built: artifact_mod.Artifact, deps: job_deps.JobDeps | None, target: DeployTarget,
                 err: TextIO) -> ArtifactLocation:
    """Upload the artifact and the archive (each only when changed) and say which were uploaded."""
    uploaded = upload_artifact(s3, built, target)
    if deps is not None:
        if upload_job_deps(s3, deps, target):
            uploaded = dataclasses.replace(uploaded, uploaded=uploaded.uploaded + (deps.key,))
        else:
            uploaded = dataclasses.replace(uploaded, skipped=uploaded.skipped + (deps.key,))
    if uploaded.uploaded:
        err.write(f"uploaded {', '.join(uploaded.uploaded)} to s3://{target.bucket}/ (SSE-KMS, tenant key)\n")
    if uploaded.skipped:
        err.write(f"unchanged, not uploaded again: {', '.join(uploaded.skipped)}\n")
    return uploaded.location


def _erase_plan(args: argparse.Namespace, target: DeployTarget, available: tuple[str, ...],
                run_date: datetime.date) -> tuple[RunSpec, str]:
    """The erasure run and the subject file's text (normalised lines), or ``DeployError``."""
    import uuid

    from spark_jobs.erasure.subjects import SubjectError, read_subjects

    for flag, given in (("--per-layer", args.per_layer), ("--layers", args.layers), ("--date", args.date),
                        ("--rerun", args.rerun), ("--allow-warn", args.allow_warn)):
        if given:
            raise DeployError(f"tenant '{target.tenant_id}': {flag} does not apply to an erasure run")
    try:
        subjects = read_subjects([], [args.erase_subject_file])
    except SubjectError as exc:
        raise DeployError(f"tenant '{target.tenant_id}': {exc}") from None
    datasets = preflight.check_selection(target.tenant_id, args.datasets, None, available)[0] if args.datasets else []
    text = "".join(f"{s.column}={s.value.strip()}\n" for s in subjects)
    return erase_spec(target, datasets, run_date, uuid.uuid4().hex[:12]), text


def deploy_erase(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """One erasure run: check, upload the code, the archive and the subject file, submit, poll."""
    built = _build_artifact(args, err)
    run_date = datetime.datetime.now(datetime.timezone.utc).date()
    target = resolve_target(args.tenant, args.outputs_file, args.endpoint_url)
    spec, subjects_text = _erase_plan(args, target, artifact_mod.datasets_in(built), run_date)
    clients = aws_clients(target)
    preflight.run_all_checks(clients, target, erase=True)
    deps_target = job_deps.target_for_release(args.release_label, args.arch)
    options = _options(args, deps_target)
    emr = clients("emr-containers")
    location = location_of(built, target.bucket)
    build_request(target, location, spec, "", options)  # refuses bad options before any upload
    active = runner.active_erase_runs(emr, target)
    if active:
        raise DeployError(f"tenant '{target.tenant_id}': erasure run {active[0]['id']} ({active[0].get('name')}) is "
                          f"still {active[0].get('state')}; erasure runs go one at a time: wait for it, then deploy again")
    options, deps = _with_job_deps(args, options, deps_target, target, err)
    lines = subjects_text.count("\n")
    if args.dry_run:
        json.dump([build_request(target, location, spec, "", options)], out, indent=2)
        out.write("\n")
        err.write(f"dry run: 1 erasure run for {lines} subject(s) ({spec.dataset}); nothing uploaded, nothing "
                  "submitted\n")
        return EXIT_OK
    code = _upload_code(clients("s3"), built, deps, target, err)
    started = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0) - datetime.timedelta(seconds=1)
    upload_subjects(clients("s3"), target, subject_key(spec.request), subjects_text)
    err.write(f"uploaded the subject file ({lines} subject(s)) to {spec.subject_uri} (SSE-KMS, tenant key); "
              "the run deletes it once they are erased\n")
    try:
        outcomes = runner.run_in_order(emr, target, code, [spec], {spec.dataset: ""}, options,
                                       poll_seconds=args.poll_seconds, timeout_seconds=args.timeout_minutes * 60,
                                       out=err)
    except DeployError as exc:
        err.write(f"error: {exc}\n")
        return EXIT_RUN_FAILED
    outcome = outcomes[0]
    out.write(f"deploy-jobs tenant '{target.tenant_id}', code version {built.version}, erasure request "
              f"{spec.request}:\n  {runner.describe_outcome(outcome)}\n")
    if not outcome.ok:
        err.write(f"error: erasure run {outcome.job_run_id} ended {outcome.state}: {runner.failure_reason(outcome)}; "
                  "deploy the same subject file again to resume it (the job resumes from its journal)\n")
        return EXIT_RUN_FAILED
    for key in _receipts_since(clients("s3"), target, started):
        out.write(f"  receipt: s3://{target.bucket}/{key}\n")
    return EXIT_OK


def _receipts_since(s3, target: DeployTarget, since: datetime.datetime) -> list[str]:
    """Receipts written since ``since`` (erasure runs go one at a time, so this run's); [] if unreadable."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=target.bucket, Prefix="reports/erasure/")
        return sorted(o["Key"] for page in pages for o in page.get("Contents", [])
                      if o["Key"].endswith("/receipt.json") and o["LastModified"] >= since)
    except (ClientError, BotoCoreError):
        return []


def deploy_maintain(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """One maintenance run: check, upload the code and the archive, publish them as the stable maintenance
    artifact, submit, poll, and name the report the run wrote."""
    built = _build_artifact(args, err)
    for flag, given in (("--per-layer", args.per_layer), ("--layers", args.layers), ("--date", args.date),
                        ("--allow-warn", args.allow_warn), ("--erase-subject-file", args.erase_subject_file),
                        ("--container-image", args.container_image)):
        if given:
            extra = (": the schedule runs the published dependency archive, so maintenance ships one"
                     if flag == "--container-image" else "")
            raise DeployError(f"tenant '{args.tenant}': {flag} does not apply to a maintenance run{extra}")
    run_date = datetime.datetime.now(datetime.timezone.utc).date()
    target = resolve_target(args.tenant, args.outputs_file, args.endpoint_url)
    datasets = (preflight.check_selection(target.tenant_id, args.datasets, None, artifact_mod.datasets_in(built))[0]
                if args.datasets else [])
    spec = maintenance_spec(datasets, run_date)
    clients = aws_clients(target)
    preflight.run_all_checks(clients, target)
    deps_target = job_deps.target_for_release(args.release_label, args.arch)
    options = _options(args, deps_target)
    location = maintenance_location(target.bucket, built.version)
    run_options = maintenance_options(options, target.bucket)
    build_request(target, location, spec, "", run_options)  # refuses bad options before any upload
    emr = clients("emr-containers")
    if args.release_label != DEFAULT_RELEASE_LABEL:
        err.write(f"note: the tenant's maintenance schedule starts its runs with {DEFAULT_RELEASE_LABEL}; this run "
                  f"uses {args.release_label} (both run Python {deps_target.python_version})\n")
    options, deps = _with_job_deps(args, options, deps_target, target, err)
    if args.dry_run:
        plan = runner.plan_run(emr, target, location, spec, "", run_options, rerun=args.rerun)
        if plan.action != "submit":
            err.write(f"dry run: {spec.label} would {plan.action} job run {plan.existing_id}, not submit\n")
        json.dump([plan.request], out, indent=2)
        out.write("\n")
        err.write(f"dry run: 1 maintenance run ({spec.dataset}), from s3://{target.bucket}/{MAINTENANCE_PREFIX}/; "
                  "nothing uploaded or published, nothing submitted\n")
        return EXIT_OK
    s3 = clients("s3")
    _upload_code(s3, built, deps, target, err)
    published = publish_maintenance(s3, built, deps, target, deps_target.interpreter)
    if published.uploaded:
        err.write(f"published code version {built.version} as the maintenance artifact: "
                  f"{', '.join(published.uploaded)} (SSE-KMS, tenant key)\n")
    else:
        err.write(f"maintenance artifact unchanged (code version {built.version}): nothing published\n")
    started = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0) - datetime.timedelta(seconds=1)
    try:
        outcomes = runner.run_in_order(emr, target, location, [spec], {spec.dataset: ""}, run_options,
                                       rerun=args.rerun, poll_seconds=args.poll_seconds,
                                       timeout_seconds=args.timeout_minutes * 60, out=err)
    except DeployError as exc:
        err.write(f"error: {exc}\n")
        return EXIT_RUN_FAILED
    outcome = outcomes[0]
    out.write(f"deploy-jobs tenant '{target.tenant_id}', code version {built.version}, maintenance run:\n"
              f"  {runner.describe_outcome(outcome)}\n")
    if not outcome.ok:
        err.write(f"error: maintenance run {outcome.job_run_id} ended {outcome.state}: {runner.failure_reason(outcome)}\n")
        return EXIT_RUN_FAILED
    for key in _reports_since(s3, target, started, "reports/maintenance/", "/report.json"):
        out.write(f"  report: s3://{target.bucket}/{key}\n")
    return EXIT_OK


def _reports_since(s3, target: DeployTarget, since: datetime.datetime, prefix: str, suffix: str) -> list[str]:
    """Keys under ``prefix`` ending in ``suffix`` written since ``since``; [] if the deployer may not list them."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=target.bucket, Prefix=prefix)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", [])
                      if o["Key"].endswith(suffix) and o["LastModified"] >= since)
    except (ClientError, BotoCoreError):
        return []


def deploy(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    if args.maintain:
        return deploy_maintain(args, out, err)
    if args.erase_subject_file:
        return deploy_erase(args, out, err)
    tenant = args.tenant
    built = _build_artifact(args, err)
    datasets, layers = preflight.check_selection(tenant, args.datasets, args.layers, artifact_mod.datasets_in(built))
    run_date = args.date or datetime.datetime.now(datetime.timezone.utc).date()
    specs = run_plan(datasets, layers, run_date, event_date=args.date, per_layer=args.per_layer)
    deps_target = job_deps.target_for_release(args.release_label, args.arch)
    target = resolve_target(tenant, args.outputs_file, args.endpoint_url)
    clients = aws_clients(target)
    preflight.run_all_checks(clients, target)
    options = _options(args, deps_target, allow_warn=args.allow_warn)
    hashes = {d: artifact_mod.contract_sha256(built, d) for d in datasets}
    emr = clients("emr-containers")
    location = location_of(built, target.bucket)
    for spec in specs:  # pure: refuses bad options (e.g. a space in --executor-memory) before any upload
        build_request(target, location, spec, hashes[spec.dataset], options)
    options, deps = _with_job_deps(args, options, deps_target, target, err)
    mode = "per layer" if args.per_layer else "pipeline (bronze -> silver -> gold per run)"
    if args.dry_run:
        plans = [runner.plan_run(emr, target, location, s, hashes[s.dataset], options, rerun=args.rerun) for s in specs]
        for plan in plans:
            if plan.action != "submit":
                err.write(f"dry run: {plan.spec.label} would {plan.action} job run {plan.existing_id}, not submit\n")
        json.dump([plan.request for plan in plans], out, indent=2)
        out.write("\n")
        err.write(f"dry run: {len(plans)} request(s), {mode}: {', '.join(s.label for s in specs)}; "
                  "nothing uploaded, nothing submitted\n")
        return EXIT_OK
    code = _upload_code(clients("s3"), built, deps, target, err)
    err.write(f"runs, {mode}: {', '.join(s.label for s in specs)}\n")
    try:
        outcomes = runner.run_in_order(emr, target, code, specs, hashes, options, rerun=args.rerun,
                                       poll_seconds=args.poll_seconds, timeout_seconds=args.timeout_minutes * 60,
                                       out=err, s3=clients("s3"))
    except DeployError as exc:  # after submissions began: a run-time failure, not a refusal
        err.write(f"error: {exc}\n")
        return EXIT_RUN_FAILED
    out.write(f"deploy-jobs tenant '{tenant}', code version {built.version}, run date {run_date}, "
              f"event date {specs[0].event_date_label if specs else 'all'}:\n")
    for outcome in outcomes:
        out.write("  " + runner.describe_outcome(outcome) + "\n")
    not_run = specs[len(outcomes):]
    if not_run:
        out.write(f"  not submitted (an earlier run did not complete): {', '.join(s.label for s in not_run)}\n")
    failed = [o for o in outcomes if not o.ok]
    if failed:
        first = failed[0]
        where = f" (pipeline run {first.job_run_id})" if first.spec.is_pipeline else ""
        err.write(f"error: {first.label} ended {first.state}{where}: {runner.failure_reason(first)}\n")
        return EXIT_RUN_FAILED
    if not_run:
        return EXIT_OK
    _publish_for_state_machine(clients("s3"), built, deps, target, deps_target.interpreter, err)
    return EXIT_OK


def _publish_for_state_machine(s3, built: artifact_mod.Artifact, deps: job_deps.JobDeps | None, target: DeployTarget,
                               python: str, err: TextIO) -> None:
    """After every run of a pipeline deploy completed: the code it ran becomes the stable pipeline artifact the
    tenant's state machine runs (``PIPELINE_PREFIX``), when the tenant has one."""
    if not target.state_machine_arn:
        return
    if deps is None:
        err.write(f"not published for the state machine: it runs the dependency archive under {PIPELINE_PREFIX}/, "
                  "and --container-image ships none\n")
        return
    published = publish_stable(s3, built, deps, target, python, PIPELINE)
    if published.uploaded:
        err.write(f"published code version {built.version} for the tenant's state machine: "
                  f"{', '.join(published.uploaded)} (SSE-KMS, tenant key)\n")
    else:
        err.write(f"state machine artifact unchanged (code version {built.version}): nothing published\n")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return deploy(args)
    except (DeployError, artifact_mod.ArtifactError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except KeyboardInterrupt:
        print("interrupted: submitted runs keep running; re-run the same command to attach to them", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
