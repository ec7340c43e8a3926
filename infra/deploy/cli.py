"""``python -m infra.deploy --tenant acme [--dry-run] [--datasets ...] [--layers ...] [--date ...]``.

Order of work, so that a bad deploy submits nothing: build the artifact -> check the selection ->
read the tenant's Terraform outputs -> check bucket, virtual cluster and role on AWS -> (``--dry-run``:
print the requests and stop) -> upload the artifact -> submit and poll, one run at a time.

Exit codes: 0 every run COMPLETED (or was already); 1 a run failed, was cancelled or timed out;
2 the deploy was refused before any submission (bad input, tenant not applied, missing cluster,
wrong role, upload failure).
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from typing import Callable, TextIO

from infra.deploy import artifact as artifact_mod
from infra.deploy import preflight, runner
from infra.deploy.request import DEFAULT_RELEASE_LABEL, JobSizing, RequestOptions, build_request, run_plan
from infra.deploy.target import DeployError, DeployTarget, resolve_target
from infra.deploy.upload import location_of, upload_artifact

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
    p.add_argument("--layers", help="comma-separated layers among bronze,silver,gold (default: all, in that order)")
    p.add_argument("--date", type=_date, default=None,
                   help="event date for silver and gold (passed to the jobs as --date); also names the runs. "
                        "Default: the jobs process every date, and the runs are named after today (UTC)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the StartJobRun requests as a JSON array (each item works with "
                        "`aws emr-containers start-job-run --cli-input-json`); upload and submit nothing")
    p.add_argument("--rerun", action="store_true", help="run again what already COMPLETED for this code version and date")
    p.add_argument("--release-label", default=DEFAULT_RELEASE_LABEL, help=f"EMR release (default: {DEFAULT_RELEASE_LABEL})")
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
    p.add_argument("--python-env-archive", default="",
                   help="s3:// URI of a venv-pack archive with the jobs' dependencies (see README)")
    p.add_argument("--container-image", default="", help="custom EMR on EKS image with the dependencies baked in")
    p.add_argument("--build-dir", default=str(artifact_mod.DEFAULT_BUILD_DIR), help="where the artifact is built")
    return p


def deploy(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    tenant = args.tenant
    built = artifact_mod.build_artifact(args.build_dir)
    err.write(f"artifact: spark_jobs version {built.version} ({len(built.files)} files, sha256 {built.sha256[:16]}...)\n")
    datasets, layers = preflight.check_selection(tenant, args.datasets, args.layers, artifact_mod.datasets_in(built))
    target = resolve_target(tenant, args.outputs_file, args.endpoint_url)
    clients = aws_clients(target)
    preflight.run_all_checks(clients, target)
    options = RequestOptions(
        release_label=args.release_label,
        sizing=JobSizing(args.driver_cores, args.driver_memory, args.executor_instances, args.executor_cores,
                         args.executor_memory, args.shuffle_partitions),
        python_env_archive=args.python_env_archive,
        container_image=args.container_image,
    )
    run_date = args.date or datetime.datetime.now(datetime.timezone.utc).date()
    specs = run_plan(datasets, layers, run_date, event_date=args.date)
    hashes = {d: artifact_mod.contract_sha256(built, d) for d in datasets}
    emr = clients("emr-containers")
    location = location_of(built, target.bucket)
    for spec in specs:  # pure: refuses bad options (e.g. a space in --executor-memory) before any upload
        build_request(target, location, spec, hashes[spec.dataset], options)
    if args.dry_run:
        plans = [runner.plan_run(emr, target, location, s, hashes[s.dataset], options, rerun=args.rerun) for s in specs]
        for plan in plans:
            if plan.action != "submit":
                err.write(f"dry run: {plan.spec.label} would {plan.action} job run {plan.existing_id}, not submit\n")
        json.dump([plan.request for plan in plans], out, indent=2)
        out.write("\n")
        err.write(f"dry run: {len(plans)} request(s) printed; nothing uploaded, nothing submitted\n")
        return EXIT_OK
    uploaded = upload_artifact(clients("s3"), built, target)
    if uploaded.uploaded:
        err.write(f"uploaded {', '.join(uploaded.uploaded)} to s3://{target.bucket}/ (SSE-KMS, tenant key)\n")
    if uploaded.skipped:
        err.write(f"unchanged, not uploaded again: {', '.join(uploaded.skipped)}\n")
    try:
        outcomes = runner.run_in_order(emr, target, uploaded.location, specs, hashes, options, rerun=args.rerun,
                                       poll_seconds=args.poll_seconds, timeout_seconds=args.timeout_minutes * 60,
                                       out=err)
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
        err.write(f"error: {first.spec.label} ended {first.state}: {first.state_details or 'no details'}"
                  + (f" [failureReason {first.failure_reason}]" if first.failure_reason else "") + "\n")
        return EXIT_RUN_FAILED
    return EXIT_OK


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
