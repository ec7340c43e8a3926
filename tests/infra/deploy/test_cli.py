"""`make deploy-jobs TENANT=acme` end to end against moto (the target a user runs), outputs from a file.

Job runs are moved to COMPLETED / FAILED by the test (see conftest: moto keeps them RUNNING forever).
"""
from __future__ import annotations

import json
import shlex
from pathlib import Path

import botocore.session
import pytest
from botocore.validate import ParamValidator

from infra.deploy.artifact import build_artifact
from tests import shell

from .conftest import write_manifest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
REPO = Path(__file__).resolve().parents[3]
DATE = "2024-05-01"


def make_deploy(emu, tmp_path, *args: str, tenant: str = "acme") -> shell.ShellResult:
    return shell.make("deploy-jobs", f"TENANT={tenant}", f"ARGS={shlex.join(args)}", timeout=110,
                      env={**emu.env(), "TENANTLAKE_STATE_DIR": str(tmp_path / "state")})


ORCHESTRATION = {"enabled": True, "metric_namespace": "tenantlake/acme", "event_source": "tenantlake.acme",
                 "state_machine_arn": "arn:aws:states:eu-west-1:123456789012:stateMachine:acme-lake-pipeline"}


def _artifact_keys(emu, bucket: str, prefix: str = "artifacts/") -> list[str]:
    return [o["Key"] for o in emu.client("s3").list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])]


def _validate(requests: list[dict], tenant_outputs: dict) -> None:
    shape = botocore.session.get_session().get_service_model("emr-containers").operation_model("StartJobRun").input_shape
    for request in requests:
        report = ParamValidator().validate(request, shape)
        assert not report.has_errors(), report.generate_report()
        assert request["virtualClusterId"] == tenant_outputs["emr_virtual_cluster_id"]


def test_dry_run_prints_valid_requests_and_submits_nothing(driven_emulator, tmp_path, outputs_file, tenant_outputs,
                                                           job_deps_archive):
    result = make_deploy(driven_emulator, tmp_path, "--outputs-file", str(outputs_file), "--dry-run",
                         "--datasets", "iot,clickstream", "--date", DATE)
    assert result.returncode == 0, result.stderr
    requests = json.loads(result.stdout)
    _validate(requests, tenant_outputs)
    assert [(r["tags"]["dataset"], r["tags"]["layer"]) for r in requests] == [("iot", "pipeline"), ("clickstream", "pipeline")]
    assert [r["jobDriver"]["sparkSubmitJobDriver"]["entryPointArguments"][:3] for r in requests] == [
        ["run-all", "--dataset", "iot"], ["run-all", "--dataset", "clickstream"]]
    deps_uri = job_deps_archive.uri(tenant_outputs["lake_bucket_name"])
    for request in requests:
        assert f"--archives {deps_uri}#deps " in request["jobDriver"]["sparkSubmitJobDriver"]["sparkSubmitParameters"]
    assert f"{job_deps_archive.summary()}: {deps_uri}" in result.stderr
    assert "dry run: 2 request(s), pipeline (bronze -> silver -> gold per run): iot/pipeline, clickstream/pipeline; " \
           "nothing uploaded, nothing submitted" in result.stderr
    assert _artifact_keys(driven_emulator, tenant_outputs["lake_bucket_name"]) == []
    assert driven_emulator.backend().job_runs == {}


def test_per_layer_dry_run_selects_layers(driven_emulator, tmp_path, outputs_file, tenant_outputs, job_deps_archive):
    result = make_deploy(driven_emulator, tmp_path, "--outputs-file", str(outputs_file), "--dry-run", "--per-layer",
                         "--datasets", "iot,clickstream", "--layers", "silver", "--date", DATE)
    assert result.returncode == 0, result.stderr
    requests = json.loads(result.stdout)
    _validate(requests, tenant_outputs)
    assert [(r["tags"]["dataset"], r["tags"]["layer"]) for r in requests] == [("iot", "silver"), ("clickstream", "silver")]
    assert driven_emulator.backend().job_runs == {}


@pytest.mark.parametrize("mode", ["pipeline", "per-layer"])
def test_deploy_uploads_submits_in_order_and_a_rerun_changes_nothing(driven_emulator, tmp_path, outputs_file,
                                                                     tenant_outputs, job_driver, job_deps_archive, mode):
    built = build_artifact(tmp_path / "expected")
    version = built.version
    # The per-layer deploy as on a tenant with orchestration (issue 54): its runs carry the tenant's metric namespace
    # and event source, and once every run completed it publishes the code for the tenant's state machine.
    orchestrated = mode == "per-layer"
    outputs = tmp_path / "orchestrated-outputs.json"
    outputs.write_text(json.dumps({**tenant_outputs, "orchestration": ORCHESTRATION}))
    args = ("--outputs-file", str(outputs if orchestrated else outputs_file), "--datasets", "iot", "--date", DATE,
            "--poll-seconds", "0.1", *(("--per-layer",) if mode == "per-layer" else ()))
    with job_driver() as driver:
        result = make_deploy(driven_emulator, tmp_path, *args)
    assert result.returncode == 0, result.stderr

    bucket = tenant_outputs["lake_bucket_name"]
    s3 = driven_emulator.client("s3")
    zip_key = f"artifacts/spark_jobs/{version}/spark_jobs.zip"
    published = [f"artifacts/pipeline/current/{name}" for name in
                 ("entrypoint.py", "job_deps.tar.gz", "manifest.json", "spark_jobs.zip")] if orchestrated else []
    assert sorted(_artifact_keys(driven_emulator, bucket)) == sorted(
        [f"artifacts/spark_jobs/{version}/entrypoint.py", zip_key, job_deps_archive.key, *published])
    if orchestrated:
        head = s3.head_object(Bucket=bucket, Key="artifacts/pipeline/current/spark_jobs.zip")
        assert head["Metadata"]["sha256"] == built.sha256 and head["SSEKMSKeyId"] == tenant_outputs["kms_key_arn"]
        assert f"published code version {version} for the tenant's state machine" in result.stderr
    for key in (zip_key, job_deps_archive.key):
        head = s3.head_object(Bucket=bucket, Key=key)
        assert (head["ServerSideEncryption"], head["SSEKMSKeyId"]) == ("aws:kms", tenant_outputs["kms_key_arn"])
    assert s3.head_object(Bucket=bucket, Key=job_deps_archive.key)["Metadata"]["sha256"] == job_deps_archive.sha256

    layers = ["pipeline"] if mode == "pipeline" else ["bronze", "silver", "gold"]
    assert [c["tags"]["layer"] for c in driver.created] == layers
    assert all(set(c["states_before"].values()) <= {"COMPLETED"} for c in driver.created)
    emr = driven_emulator.client("emr-containers")
    for created in driver.created:
        run = emr.describe_job_run(id=created["id"], virtualClusterId=tenant_outputs["emr_virtual_cluster_id"])["jobRun"]
        layer = created["tags"]["layer"]
        assert run["executionRoleArn"] == tenant_outputs["job_execution_role_arn"]
        assert run["releaseLabel"] == "emr-7.5.0-latest"
        driver_spec = run["jobDriver"]["sparkSubmitJobDriver"]
        assert driver_spec["entryPoint"] == f"s3://{bucket}/artifacts/spark_jobs/{version}/entrypoint.py"
        command = ["run-all", "--dataset", "iot"] if layer == "pipeline" else ["run", "--dataset", "iot", "--layer", layer]
        date_args = [] if layer == "bronze" else ["--date", DATE]
        signals = ["--metric-namespace", "tenantlake/acme", "--event-source", "tenantlake.acme"] if orchestrated else []
        assert driver_spec["entryPointArguments"] == [*command, *date_args, "--lake-uri", f"s3://{bucket}",
                                                      "--kms-key-arn", tenant_outputs["kms_key_arn"], "--region", "eu-west-1",
                                                      "--glue-databases", "gold=acme_gold,silver=acme_silver", *signals]
        params = driver_spec["sparkSubmitParameters"]
        assert (f"--py-files s3://{bucket}/{zip_key} --jars local:///usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar "
                f"--archives s3://{bucket}/{job_deps_archive.key}#deps ") in params
        assert "spark.pyspark.python=/usr/bin/python3.11" in params
        monitoring = run["configurationOverrides"]["monitoringConfiguration"]
        assert monitoring["s3MonitoringConfiguration"]["logUri"] == f"s3://{bucket}/logs/"
        assert monitoring["cloudWatchMonitoringConfiguration"]["logGroupName"] == tenant_outputs["log_group_name"]
        assert run["tags"] == {"tenant": "acme", "dataset": "iot", "layer": layer, "code_version": version,
                               "run_date": DATE, "event_date": DATE, "attempt": "0"}
    assert result.stdout.count("COMPLETED") == len(layers)
    assert f"S3 s3://{bucket}/logs/{tenant_outputs['emr_virtual_cluster_id']}/jobs/" in result.stdout
    assert "uploaded" in result.stderr and job_deps_archive.key in result.stderr

    etags = {key: s3.head_object(Bucket=bucket, Key=key)["ETag"] for key in (zip_key, job_deps_archive.key)}
    with job_driver() as driver:
        again = make_deploy(driven_emulator, tmp_path, *args)
    assert again.returncode == 0, again.stderr
    assert "unchanged, not uploaded again" in again.stderr and "uploaded artifacts/" not in again.stderr
    if orchestrated:
        assert f"state machine artifact unchanged (code version {version}): nothing published" in again.stderr
    assert {key: s3.head_object(Bucket=bucket, Key=key)["ETag"] for key in etags} == etags
    assert driver.created == [] and again.stderr.count("already COMPLETED") == len(layers)


def test_a_failing_job_exits_non_zero_with_the_reason(driven_emulator, tmp_path, outputs_file, job_driver,
                                                       job_deps_archive):
    def fail_silver(run):
        if run.tags["layer"] == "silver":
            return "FAILED", "USER_ERROR", "Job failed: quality gate blocked silver iot"
        return "COMPLETED", "", ""

    with job_driver(fail_silver) as driver:
        result = make_deploy(driven_emulator, tmp_path, "--outputs-file", str(outputs_file), "--datasets", "iot",
                             "--date", DATE, "--poll-seconds", "0.1", "--per-layer")
    assert result.returncode != 0 and "deploy-jobs] Error 1" in result.stderr  # make exits 2; the CLI said 1
    assert "error: iot/silver ended FAILED: Job failed: quality gate blocked silver iot [failureReason USER_ERROR]" in result.stderr
    assert "not submitted (an earlier run did not complete): iot/gold" in result.stdout
    assert [c["tags"]["layer"] for c in driver.created] == ["bronze", "silver"]


def test_a_failing_pipeline_run_names_the_layer_that_failed(driven_emulator, tmp_path, outputs_file, tenant_outputs,
                                                            job_driver, job_deps_archive):
    bucket = tenant_outputs["lake_bucket_name"]
    error = "JobFailed: silver iot: validation blocked the publish: temperature_range failed for 3 rows"

    def silver_fails_inside_the_pipeline(run):
        if run.tags["dataset"] == "iot":
            write_manifest(driven_emulator, bucket, "iot", "bronze", date=DATE)
            write_manifest(driven_emulator, bucket, "iot", "silver", "failed", error=error, date=DATE)
            return "FAILED", "USER_ERROR", "Job failed"
        return "COMPLETED", "", ""

    # A tenant with orchestration (issue 54): a deploy that did not complete publishes nothing for its state machine.
    outputs = tmp_path / "orchestrated-outputs.json"
    outputs.write_text(json.dumps({**tenant_outputs, "orchestration": ORCHESTRATION}))
    with job_driver(silver_fails_inside_the_pipeline) as driver:
        result = make_deploy(driven_emulator, tmp_path, "--outputs-file", str(outputs), "--datasets",
                             "iot,clickstream", "--date", DATE, "--poll-seconds", "0.1")
    assert result.returncode != 0 and "deploy-jobs] Error 1" in result.stderr
    assert _artifact_keys(driven_emulator, bucket, "artifacts/pipeline/") == []
    (run_id,) = [c["id"] for c in driver.created]
    assert f"[1/2] iot/silver: FAILED in pipeline run {run_id}, bronze succeeded: silver failed" in result.stderr
    error_line = next(line for line in result.stderr.splitlines() if line.startswith("error: "))
    assert error_line.startswith(f"error: iot/silver ended FAILED (pipeline run {run_id}): Job failed "
                                 "[failureReason USER_ERROR]; silver failed (run ")
    assert error_line.endswith(error)
    assert f"  iot/silver: FAILED (job run {run_id}, pipeline run of iot): " in result.stdout
    assert "not submitted (an earlier run did not complete): clickstream/pipeline" in result.stdout


@pytest.mark.parametrize("case", ["unknown dataset", "wrong role", "missing cluster", "outputs of another tenant",
                                  "unknown release", "layers without --per-layer"])
def test_refused_deploys_submit_and_upload_nothing(driven_emulator, tmp_path, tenant_outputs, case):
    outputs = dict(tenant_outputs)
    args = ["--date", DATE]
    expected = {
        "unknown dataset": "unknown dataset 'weather'",
        "wrong role": "job execution role arn:aws:iam::123456789012:role/acme-missing does not exist",
        "missing cluster": "terraform output 'emr_virtual_cluster_id' (the EMR on EKS virtual cluster) is missing",
        "outputs of another tenant": "the outputs belong to tenant 'globex'",
        "unknown release": "--release-label emr-6.15.0-latest: not a release the jobs can run on (known: emr-7.1.0,",
        "layers without --per-layer": "--layers silver,gold: a pipeline run runs bronze, silver, gold; add --per-layer",
    }[case]
    if case == "unknown dataset":
        args += ["--datasets", "iot,weather"]
    elif case == "unknown release":
        args += ["--release-label", "emr-6.15.0-latest"]
    elif case == "layers without --per-layer":
        args += ["--layers", "silver,gold"]
    elif case == "wrong role":
        outputs["job_execution_role_arn"] = "arn:aws:iam::123456789012:role/acme-missing"
    elif case == "missing cluster":
        outputs.pop("emr_virtual_cluster_id")
    else:
        outputs["tenant_id"] = "globex"
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    result = make_deploy(driven_emulator, tmp_path, "--outputs-file", str(path), *args)
    assert result.returncode != 0 and "deploy-jobs] Error 2" in result.stderr  # the CLI's "refused" code
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(error_lines) == 1 and expected in error_lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert _artifact_keys(driven_emulator, tenant_outputs["lake_bucket_name"]) == []
    assert driven_emulator.backend().job_runs == {}


def test_a_tenant_that_is_not_applied_is_refused(driven_emulator, tmp_path):
    result = make_deploy(driven_emulator, tmp_path, "--date", DATE, tenant="initech")
    assert result.returncode != 0 and "deploy-jobs] Error 2" in result.stderr
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(error_lines) == 1 and error_lines[0].startswith("error: tenant 'initech' is not applied here")
    assert "make apply TENANT=initech" in result.stderr and "Traceback" not in result.stderr


def test_bad_sizing_is_refused_before_anything_is_uploaded(driven_emulator, tmp_path, outputs_file, tenant_outputs):
    # Refused before the dependency archive is even looked at: an empty cache must not be filled.
    result = make_deploy(driven_emulator, tmp_path, "--outputs-file", str(outputs_file), "--datasets", "iot",
                         "--executor-memory", "4 g", "--job-deps-cache", str(tmp_path / "empty-cache"))
    assert result.returncode != 0 and "deploy-jobs] Error 2" in result.stderr
    assert "spark.executor.memory=4 g" in result.stderr and "Traceback" not in result.stderr
    assert _artifact_keys(driven_emulator, tenant_outputs["lake_bucket_name"]) == []
    assert not (tmp_path / "empty-cache").exists()


# ---- erasure runs (--erase-subject-file) ----------------------------------------------------------
SUBJECT_ID = "User-0042"


def _inbox(emu, bucket: str) -> list[str]:
    return [o["Key"] for o in emu.client("s3").list_objects_v2(
        Bucket=bucket, Prefix="checkpoints/_erasure/inbox/").get("Contents", [])]


def test_an_erasure_deploy_puts_the_subjects_in_the_lake_and_runs_erase_as_the_erasure_role(
        driven_emulator, tmp_path, outputs_file, tenant_outputs, job_driver, job_deps_archive):
    subjects = tmp_path / "subjects.txt"
    subjects.write_text(f"# ticket 1234\nuser_id = {SUBJECT_ID}\n\nuser_id={SUBJECT_ID}\n")
    bucket = tenant_outputs["lake_bucket_name"]
    args = ("--outputs-file", str(outputs_file), "--erase-subject-file", str(subjects), "--datasets", "clickstream")

    dry = make_deploy(driven_emulator, tmp_path, *args, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    (request,) = json.loads(dry.stdout)
    _validate([request], tenant_outputs)
    assert request["executionRoleArn"] == tenant_outputs["erasure_role_arn"]
    assert "dry run: 1 erasure run for 1 subject(s) (clickstream); nothing uploaded, nothing submitted" in dry.stderr
    assert SUBJECT_ID.lower() not in (dry.stdout + dry.stderr).lower()
    assert _artifact_keys(driven_emulator, bucket) == [] and _inbox(driven_emulator, bucket) == []
    assert driven_emulator.backend().job_runs == {}

    with job_driver() as driver:
        result = make_deploy(driven_emulator, tmp_path, *args, "--poll-seconds", "0.1")
    assert result.returncode == 0, result.stderr
    (created,) = driver.created
    assert created["tags"]["layer"] == "erase" and created["tags"]["dataset"] == "clickstream"
    run = driven_emulator.client("emr-containers").describe_job_run(
        id=created["id"], virtualClusterId=tenant_outputs["emr_virtual_cluster_id"])["jobRun"]
    assert run["executionRoleArn"] == tenant_outputs["erasure_role_arn"]
    arguments = run["jobDriver"]["sparkSubmitJobDriver"]["entryPointArguments"]
    (key,) = _inbox(driven_emulator, bucket)
    assert arguments[:5] == ["erase", "--subject-file", f"s3://{bucket}/{key}", "--dataset", "clickstream"]
    assert SUBJECT_ID.lower() not in json.dumps(run, default=str).lower()  # EMR keeps no id
    s3 = driven_emulator.client("s3")
    head = s3.head_object(Bucket=bucket, Key=key)
    assert (head["ServerSideEncryption"], head["SSEKMSKeyId"]) == ("aws:kms", tenant_outputs["kms_key_arn"])
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode() == f"user_id={SUBJECT_ID}\n"
    assert "COMPLETED" in result.stdout and SUBJECT_ID.lower() not in (result.stdout + result.stderr).lower()

    # An erasure run still active: the next erasure deploy is refused, and uploads nothing.
    emr = driven_emulator.client("emr-containers")
    emr.start_job_run(**{**request, "clientToken": "active-erase", "name": "acme-erase-active"})
    again = make_deploy(driven_emulator, tmp_path, *args)
    assert again.returncode != 0 and "deploy-jobs] Error 2" in again.stderr
    assert "erasure runs go one at a time" in again.stderr and _inbox(driven_emulator, bucket) == [key]


@pytest.mark.parametrize("case", ["no erasure role output", "erasure role of another tenant", "bad subject line",
                                  "per-layer"])
def test_refused_erasure_deploys_upload_and_submit_nothing(driven_emulator, tmp_path, tenant_outputs, case):
    outputs = dict(tenant_outputs)
    subjects = tmp_path / "subjects.txt"
    subjects.write_text(f"user_id={SUBJECT_ID}\n")
    args = ["--erase-subject-file", str(subjects)]
    expected = {
        "no erasure role output": "terraform output 'erasure_role_arn' (the role of erase runs) is missing; re-apply",
        "erasure role of another tenant": "erasure role arn:aws:iam::123456789012:role/acme-emr-job-execution is not "
                                          "this tenant's role",
        "bad subject line": "line 2: a subject of 14 characters is not COLUMN=VALUE",
        "per-layer": "--per-layer does not apply to an erasure run",
    }[case]
    if case == "no erasure role output":
        outputs.pop("erasure_role_arn")
    elif case == "erasure role of another tenant":
        iam = driven_emulator.client("iam")
        iam.tag_role(RoleName="acme-emr-job-execution", Tags=[{"Key": "tenant", "Value": "globex"}])
        outputs["erasure_role_arn"] = outputs["job_execution_role_arn"]
    elif case == "bad subject line":
        subjects.write_text(f"user_id={SUBJECT_ID}\nno-equals-sign\n")
    else:
        args.append("--per-layer")
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    result = make_deploy(driven_emulator, tmp_path, "--outputs-file", str(path), *args)
    assert result.returncode != 0 and "deploy-jobs] Error 2" in result.stderr
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(error_lines) == 1 and expected in error_lines[0], result.stderr
    assert "Traceback" not in result.stderr and SUBJECT_ID not in result.stderr and "no-equals-sign" not in result.stderr
    assert _artifact_keys(driven_emulator, tenant_outputs["lake_bucket_name"]) == []
    assert _inbox(driven_emulator, tenant_outputs["lake_bucket_name"]) == []
    assert driven_emulator.backend().job_runs == {}


def _maintenance_keys(emu, bucket: str) -> list[str]:
    return sorted(o["Key"] for o in emu.client("s3").list_objects_v2(
        Bucket=bucket, Prefix="artifacts/maintenance/").get("Contents", []))


def test_a_maintenance_deploy_publishes_the_stable_artifact_and_runs_maintain(
        driven_emulator, tmp_path, tenant_outputs, job_driver, job_deps_archive):
    """``--maintain``: a dry run prints one valid request and changes nothing; the deploy uploads the code,
    publishes it with the archive as the stable maintenance artifact (what the schedule runs), runs
    ``maintain`` as the job role with the tenant's snapshot retention, and names the report the run wrote;
    a second deploy publishes nothing and skips the completed run."""
    bucket = tenant_outputs["lake_bucket_name"]
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({**tenant_outputs, "retention_days": {"snapshots": 30, "logs": 90}}))
    args = ("--outputs-file", str(outputs), "--maintain", "--datasets", "iot")

    dry = make_deploy(driven_emulator, tmp_path, *args, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    (request,) = json.loads(dry.stdout)
    _validate([request], tenant_outputs)
    assert request["executionRoleArn"] == tenant_outputs["job_execution_role_arn"]
    assert request["jobDriver"]["sparkSubmitJobDriver"]["entryPointArguments"][:5] == [
        "maintain", "--dataset", "iot", "--snapshot-retention-days", "30"]
    assert request["jobDriver"]["sparkSubmitJobDriver"]["entryPoint"] == \
        f"s3://{bucket}/artifacts/maintenance/current/entrypoint.py"
    assert "dry run: 1 maintenance run (iot), from s3://acme-eu-west-1-lake/artifacts/maintenance/current/; " \
           "nothing uploaded or published, nothing submitted" in dry.stderr
    assert _artifact_keys(driven_emulator, bucket) == [] and driven_emulator.backend().job_runs == {}

    s3 = driven_emulator.client("s3")

    def complete_with_a_report(run):
        # What the job writes when it ends (spark_jobs.tables.maintain.run_maintenance), so the deploy can name it.
        s3.put_object(Bucket=bucket, Key="reports/maintenance/20240501T000000Z-0000aaaa/report.json", Body=b"{}",
                      ServerSideEncryption="aws:kms", SSEKMSKeyId=tenant_outputs["kms_key_arn"])
        return "COMPLETED", "", ""

    with job_driver(complete_with_a_report) as driver:
        result = make_deploy(driven_emulator, tmp_path, *args, "--poll-seconds", "0.1")
    assert result.returncode == 0, result.stderr
    published = _maintenance_keys(driven_emulator, bucket)
    assert published == [f"artifacts/maintenance/current/{name}" for name in
                         ("entrypoint.py", "job_deps.tar.gz", "manifest.json", "spark_jobs.zip")]
    built = build_artifact(tmp_path / "build")
    zip_head = s3.head_object(Bucket=bucket, Key="artifacts/maintenance/current/spark_jobs.zip")
    assert (zip_head["ServerSideEncryption"], zip_head["SSEKMSKeyId"]) == ("aws:kms", tenant_outputs["kms_key_arn"])
    assert zip_head["Metadata"]["sha256"] == built.sha256
    manifest = json.loads(s3.get_object(Bucket=bucket, Key="artifacts/maintenance/current/manifest.json")["Body"].read())
    assert manifest["code_version"] == built.version and manifest["job_deps_version"] == job_deps_archive.version
    (created,) = driver.created
    assert created["tags"]["layer"] == "maintain" and created["tags"]["dataset"] == "iot"
    assert "published code version" in result.stderr and "COMPLETED" in result.stdout
    assert f"report: s3://{bucket}/reports/maintenance/20240501T000000Z-0000aaaa/report.json" in result.stdout

    again = make_deploy(driven_emulator, tmp_path, *args, "--poll-seconds", "0.1")
    assert again.returncode == 0, again.stderr
    assert "maintenance artifact unchanged" in again.stderr and "already COMPLETED" in again.stderr
    assert len(driven_emulator.backend().job_runs) == 1


@pytest.mark.parametrize("flag", ["--per-layer", "--container-image", "--date"])
def test_refused_maintenance_deploys_upload_and_submit_nothing(driven_emulator, tmp_path, outputs_file,
                                                               tenant_outputs, flag):
    extra = {"--per-layer": [], "--container-image": ["1.dkr.ecr.eu-west-1.amazonaws.com/emr:1"],
             "--date": [DATE]}[flag]
    result = make_deploy(driven_emulator, tmp_path, "--outputs-file", str(outputs_file), "--maintain", flag, *extra)
    assert result.returncode != 0 and "deploy-jobs] Error 2" in result.stderr
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(error_lines) == 1 and f"{flag} does not apply to a maintenance run" in error_lines[0], result.stderr
    assert _artifact_keys(driven_emulator, tenant_outputs["lake_bucket_name"]) == []
    assert driven_emulator.backend().job_runs == {}

