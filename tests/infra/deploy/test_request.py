"""The StartJobRun request: exact fields, valid for the service model the AWS CLI also uses, deterministic."""
from __future__ import annotations

import dataclasses
import datetime
import json
import shlex

import botocore.session
import pytest
from botocore.validate import ParamValidator

from infra.deploy.request import (
    DEFAULT_RELEASE_LABEL, LAYERS, PIPELINE, ArtifactLocation, JobSizing, RequestOptions, RunSpec, build_request,
    client_token, entrypoint_arguments, job_name, run_plan,
)
from infra.deploy.target import DeployError, DeployTarget, flatten_outputs, target_from_outputs

KEY = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
TARGET = DeployTarget(
    tenant_id="acme", region="eu-west-1", bucket="acme-eu-west-1-lake", kms_key_arn=KEY,
    role_arn="arn:aws:iam::123456789012:role/acme-emr-job-execution", virtual_cluster_id="abcdefghijklmnopqrstuvwxy",
    log_group="/tenantlake/acme/emr-jobs", glue_databases=(("gold", "acme_gold"), ("silver", "acme_silver")),
)
LOCATION = ArtifactLocation(
    version="0123456789ab",
    zip_uri="s3://acme-eu-west-1-lake/artifacts/spark_jobs/0123456789ab/spark_jobs.zip",
    entrypoint_uri="s3://acme-eu-west-1-lake/artifacts/spark_jobs/0123456789ab/entrypoint.py",
)
SPEC = RunSpec("iot", "silver", datetime.date(2024, 5, 1), event_date=datetime.date(2024, 5, 1))


def _conf(params: str) -> dict[str, str]:
    tokens = shlex.split(params)
    return dict(tokens[i + 1].split("=", 1) for i, t in enumerate(tokens) if t == "--conf")


def test_request_is_valid_for_the_emr_containers_service_model():
    request = build_request(TARGET, LOCATION, SPEC, "c0ffee")
    model = botocore.session.get_session().get_service_model("emr-containers")
    report = ParamValidator().validate(json.loads(json.dumps(request)), model.operation_model("StartJobRun").input_shape)
    assert not report.has_errors(), report.generate_report()


def test_request_fields():
    request = build_request(TARGET, LOCATION, SPEC, "c0ffee")
    assert request["virtualClusterId"] == TARGET.virtual_cluster_id
    assert request["executionRoleArn"] == TARGET.role_arn
    assert request["releaseLabel"] == DEFAULT_RELEASE_LABEL == "emr-7.5.0-latest"
    driver = request["jobDriver"]["sparkSubmitJobDriver"]
    assert driver["entryPoint"] == LOCATION.entrypoint_uri
    assert driver["entryPointArguments"] == [
        "run", "--dataset", "iot", "--layer", "silver", "--date", "2024-05-01",
        "--lake-uri", "s3://acme-eu-west-1-lake", "--kms-key-arn", KEY, "--region", "eu-west-1",
        "--glue-databases", "gold=acme_gold,silver=acme_silver",
    ]
    params = driver["sparkSubmitParameters"]
    assert shlex.split(params)[:2] == ["--py-files", LOCATION.zip_uri]
    conf = _conf(params)
    assert conf["spark.driver.cores"] == "1" and conf["spark.driver.memory"] == "2g"
    assert conf["spark.executor.instances"] == "2" and conf["spark.executor.cores"] == "2"
    assert conf["spark.executor.memory"] == "4g" and conf["spark.sql.shuffle.partitions"] == "16"
    assert conf["spark.tenantlake.contract"] == "spark_jobs/contracts/iot.yaml"
    assert conf["spark.tenantlake.contract.sha256"] == "c0ffee"
    overrides = request["configurationOverrides"]
    emrfs = next(c for c in overrides["applicationConfiguration"] if c["classification"] == "emrfs-site")
    assert emrfs["properties"] == {"fs.s3.enableServerSideEncryption": "true",
                                   "fs.s3.serverSideEncryption.kms.keyId": KEY}
    monitoring = overrides["monitoringConfiguration"]
    assert monitoring["cloudWatchMonitoringConfiguration"] == {
        "logGroupName": "/tenantlake/acme/emr-jobs", "logStreamNamePrefix": "spark_jobs/iot/silver"}
    assert monitoring["s3MonitoringConfiguration"] == {"logUri": "s3://acme-eu-west-1-lake/logs/", "encryptionKeyArn": KEY}
    assert request["tags"] == {"tenant": "acme", "dataset": "iot", "layer": "silver", "code_version": "0123456789ab",
                               "run_date": "2024-05-01", "event_date": "2024-05-01", "attempt": "0"}
    assert request["name"] == "acme-iot-silver-20240501-01234567"


def test_documented_sizing_defaults():
    assert JobSizing() == JobSizing(driver_cores=1, driver_memory="2g", executor_instances=2, executor_cores=2,
                                    executor_memory="4g", shuffle_partitions=16)


def test_client_token_is_deterministic_and_changes_with_identity():
    token = client_token("acme", SPEC, "0123456789ab")
    assert token == client_token("acme", SPEC, "0123456789ab") == build_request(TARGET, LOCATION, SPEC, "x")["clientToken"]
    others = {
        client_token("other", SPEC, "0123456789ab"),
        client_token("acme", RunSpec("clickstream", "silver", SPEC.run_date), "0123456789ab"),
        client_token("acme", RunSpec("iot", "gold", SPEC.run_date), "0123456789ab"),
        client_token("acme", RunSpec("iot", "silver", datetime.date(2024, 5, 2)), "0123456789ab"),
        client_token("acme", SPEC, "ba9876543210"),  # pragma: allowlist secret - dummy or public value
        client_token("acme", SPEC, "0123456789ab", attempt=1),
        client_token("acme", RunSpec("iot", "silver", SPEC.run_date), "0123456789ab"),  # no event-date filter
    }
    assert token not in others and len(others) == 7


def test_job_deps_archive_and_interpreter_are_wired_for_driver_and_executors():
    uri = "s3://acme-eu-west-1-lake/artifacts/job_deps/0123456789ab/job_deps.tar.gz"
    options = RequestOptions(release_label="emr-7.2.0-latest", job_deps_uri=uri, python="/usr/bin/python3.11")
    request = build_request(TARGET, LOCATION, SPEC, "c0ffee", options)
    params = request["jobDriver"]["sparkSubmitJobDriver"]["sparkSubmitParameters"]
    assert request["releaseLabel"] == "emr-7.2.0-latest"
    tokens = shlex.split(params)
    assert tokens[tokens.index("--archives") + 1] == f"{uri}#deps"
    conf = _conf(params)
    assert conf["spark.kubernetes.driverEnv.PYTHONPATH"] == conf["spark.executorEnv.PYTHONPATH"] == "./deps"
    assert conf["spark.pyspark.python"] == conf["spark.pyspark.driver.python"] == "/usr/bin/python3.11"
    assert "spark.kubernetes.container.image" not in conf


def test_container_image_instead_of_the_archive():
    image = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/tenantlake-jobs:emr-7.5.0"
    request = build_request(TARGET, LOCATION, SPEC, "c0ffee", RequestOptions(container_image=image))
    params = request["jobDriver"]["sparkSubmitJobDriver"]["sparkSubmitParameters"]
    assert _conf(params)["spark.kubernetes.container.image"] == image
    assert "--archives" not in params and "PYTHONPATH" not in params


def test_a_pipeline_run_runs_every_layer_of_one_dataset():
    day = datetime.date(2024, 5, 1)
    specs = run_plan(["iot", "clickstream"], list(LAYERS), day, event_date=day)
    assert [(s.dataset, s.layer, s.layers) for s in specs] == [("iot", PIPELINE, LAYERS), ("clickstream", PIPELINE, LAYERS)]
    request = build_request(TARGET, LOCATION, specs[0], "c0ffee")
    assert request["jobDriver"]["sparkSubmitJobDriver"]["entryPointArguments"] == [
        "run-all", "--dataset", "iot", "--date", "2024-05-01",
        "--lake-uri", "s3://acme-eu-west-1-lake", "--kms-key-arn", KEY, "--region", "eu-west-1",
        "--glue-databases", "gold=acme_gold,silver=acme_silver"]
    assert request["name"] == "acme-iot-pipeline-20240501-01234567"
    assert request["tags"]["layer"] == PIPELINE
    monitoring = request["configurationOverrides"]["monitoringConfiguration"]
    assert monitoring["cloudWatchMonitoringConfiguration"]["logStreamNamePrefix"] == "spark_jobs/iot/pipeline"
    # Its own identity: neither the per-layer runs' token nor another date's.
    per_layer = {client_token("acme", s, "0123456789ab") for s in run_plan(["iot"], list(LAYERS), day, day, per_layer=True)}
    assert request["clientToken"] not in per_layer
    assert request["clientToken"] != build_request(TARGET, LOCATION, RunSpec("iot", PIPELINE, day), "c0ffee")["clientToken"]


def test_single_layers_need_per_layer():
    day = datetime.date(2024, 5, 1)
    with pytest.raises(DeployError, match="--layers silver: a pipeline run runs bronze, silver, gold; add --per-layer"):
        run_plan(["iot"], ["silver"], day)
    assert [s.layer for s in run_plan(["iot"], ["silver"], day, per_layer=True)] == ["silver"]


def test_per_layer_run_plan_is_in_dependency_order():
    plan = run_plan(["iot", "clickstream"], ["gold", "bronze", "silver"], SPEC.run_date, per_layer=True)
    assert [(s.layer, s.dataset) for s in plan] == [
        ("bronze", "iot"), ("bronze", "clickstream"), ("silver", "iot"), ("silver", "clickstream"),
        ("gold", "iot"), ("gold", "clickstream")]
    assert LAYERS == ("bronze", "silver", "gold")


def test_job_name_fits_for_the_longest_tenant_id():
    for layer in ("silver", PIPELINE):
        name = job_name("a" * 24, RunSpec("clickstream", layer, SPEC.run_date), "0123456789ab")
        assert len(name) <= 64 and name.endswith("-01234567"), name


def test_outputs_from_terraform_output_json_shape():
    raw = {"tenant_id": {"value": "acme", "type": "string", "sensitive": False},
           "gateway_endpoint_ids": {"value": {"vpc-1": "vpce-1"}, "type": ["map", "string"], "sensitive": False}}
    assert flatten_outputs(raw) == {"tenant_id": "acme", "gateway_endpoint_ids": {"vpc-1": "vpce-1"}}


def test_missing_virtual_cluster_output_is_named():
    outputs = {"tenant_id": "acme", "region": "eu-west-1", "lake_bucket_name": "b", "kms_key_arn": KEY,
               "job_execution_role_arn": TARGET.role_arn, "emr_virtual_cluster_id": "", "log_group_name": "g",
               "glue_database_names": {"silver": "acme_silver", "gold": "acme_gold"}}
    with pytest.raises(DeployError, match="emr_virtual_cluster_id.*missing or empty.*no EMR on EKS virtual cluster"):
        target_from_outputs("acme", outputs)
    with pytest.raises(DeployError, match="belong to tenant 'acme'"):
        target_from_outputs("other", {**outputs, "emr_virtual_cluster_id": "x"})


def test_date_goes_to_silver_and_gold_only_and_no_date_means_everything():
    day = datetime.date(2024, 5, 1)
    args = {s.layer: build_request(TARGET, LOCATION, s, "x")["jobDriver"]["sparkSubmitJobDriver"]["entryPointArguments"]
            for s in run_plan(["iot"], list(LAYERS), day, event_date=day, per_layer=True)}
    assert "--date" not in args["bronze"]
    assert args["silver"][args["silver"].index("--date") + 1] == "2024-05-01" and "--date" in args["gold"]
    undated = run_plan(["iot"], ["silver"], day, per_layer=True)[0]
    request = build_request(TARGET, LOCATION, undated, "x")
    assert "--date" not in request["jobDriver"]["sparkSubmitJobDriver"]["entryPointArguments"]
    assert request["tags"]["event_date"] == "all" and request["tags"]["run_date"] == "2024-05-01"


def test_submit_parameters_read_back_as_shell_words_and_a_value_that_needs_quoting_is_refused():
    """The string is split back into words by shell rules (spark-submit, spark_jobs.usage.emr): each word the
    deploy writes reads back as itself, the archive's ``#deps`` included; a quote or backslash is refused."""
    options = RequestOptions(job_deps_uri="s3://acme-eu-west-1-lake/artifacts/job_deps/0123/job_deps.tar.gz",
                             python="/usr/bin/python3.11")
    params = build_request(TARGET, LOCATION, SPEC, "c0ffee", options)["jobDriver"]["sparkSubmitJobDriver"][
        "sparkSubmitParameters"]
    assert shlex.split(params) == params.split(" ")
    assert f"{options.job_deps_uri}#deps" in shlex.split(params)
    for memory in ("4 g", "4g'", '"4g"', "4\\g"):
        options = RequestOptions(sizing=JobSizing(executor_memory=memory))
        with pytest.raises(DeployError, match=r"sparkSubmitParameters: 'spark.executor.memory=.*' must not be empty or "
                                              r"contain spaces or quotes"):
            build_request(TARGET, LOCATION, SPEC, "c0ffee", options)


def test_readme_states_the_defaults_the_code_uses():
    from pathlib import Path

    from infra.deploy import job_deps, run_manifests, runner

    readme = (Path(__file__).resolve().parents[3] / "infra" / "deploy" / "README.md").read_text()
    sizing = JobSizing()
    releases = list(job_deps.EMR_RELEASE_PYTHON)
    (python,) = set(job_deps.EMR_RELEASE_PYTHON.values())
    target = job_deps.target_for_release(DEFAULT_RELEASE_LABEL)
    for fact in (f"**`{DEFAULT_RELEASE_LABEL}`**", f"spark.driver.cores={sizing.driver_cores}",
                 f"spark.driver.memory={sizing.driver_memory}", f"spark.executor.instances={sizing.executor_instances}",
                 f"spark.executor.cores={sizing.executor_cores}", f"spark.executor.memory={sizing.executor_memory}",
                 f"spark.sql.shuffle.partitions={sizing.shuffle_partitions}",
                 f"`--poll-seconds`, default {runner.DEFAULT_POLL_SECONDS:g}",
                 f"`--timeout-minutes`, default {runner.DEFAULT_TIMEOUT_MINUTES:g}",
                 "first 12 hex digits", "first 32 hex digits", "logStreamNamePrefix=spark_jobs/<dataset>/<layer>",
                 f"**{releases[0]} to {releases[-1]}, all Python {python}**", f"`{target.interpreter}`",
                 f"`--platform manylinux_2_{max(job_deps.GLIBC_MINORS)}_<machine>` down to "
                 f"`manylinux_2_{min(job_deps.GLIBC_MINORS)}_<machine>`",
                 f"pip gets {job_deps.PIP_TIMEOUT_SECONDS} s", f"gzip (level {job_deps.GZIP_LEVEL})",
                 f"first {job_deps.VERSION_LENGTH} hex digits of a SHA-256 over the pins file",
                 f"({len(job_deps.read_pins())} today)", f"at most {run_manifests.CLOCK_SKEW_SECONDS} s before",
                 f"{job_deps.ARCHIVE_NAME}#{job_deps.ALIAS}`", f"PYTHONPATH={job_deps.PYTHONPATH_ENTRY}",
                 f"spark/{job_deps.release_of(DEFAULT_RELEASE_LABEL)}:latest"):
        assert " ".join(fact.split()) in " ".join(readme.split()), fact


def test_the_root_readme_points_to_the_deploy_reference():
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    root = (repo / "README.md").read_text()
    assert "[infra/deploy/README.md](infra/deploy/README.md)" in root and (repo / "infra" / "deploy" / "README.md").is_file()


def test_allow_warn_reaches_the_job_only_when_asked():
    day = datetime.date(2024, 5, 1)
    spec = run_plan(["iot"], list(LAYERS), day, event_date=day)[0]
    default = build_request(TARGET, LOCATION, spec, "c0ffee")["jobDriver"]["sparkSubmitJobDriver"]
    assert "--allow-warn" not in default["entryPointArguments"]
    allowed = build_request(TARGET, LOCATION, spec, "c0ffee", RequestOptions(allow_warn=True))
    arguments = allowed["jobDriver"]["sparkSubmitJobDriver"]["entryPointArguments"]
    assert arguments[:6] == ["run-all", "--dataset", "iot", "--date", "2024-05-01", "--allow-warn"]
    # The jobs' own parser takes the arguments as the cluster passes them.
    from spark_jobs.cli import build_parser
    assert build_parser().parse_args(arguments).allow_warn is True


def test_missing_glue_databases_are_named():
    outputs = {"tenant_id": "acme", "region": "eu-west-1", "lake_bucket_name": "b", "kms_key_arn": KEY,
               "job_execution_role_arn": TARGET.role_arn, "emr_virtual_cluster_id": "x", "log_group_name": "g"}
    for databases in (None, {"silver": "acme_silver"}, {"silver": "acme_silver", "gold": ""}):
        with pytest.raises(DeployError, match="glue_database_names.*must map silver, gold to names.*re-apply"):
            target_from_outputs("acme", {**outputs, **({"glue_database_names": databases} if databases else {})})
    target = target_from_outputs("acme", {**outputs, "glue_database_names": {"silver": "acme_silver", "gold": "acme_gold"}})
    assert target.glue_databases == (("gold", "acme_gold"), ("silver", "acme_silver"))


def test_the_request_carries_the_glue_catalog_and_emrs_iceberg():
    """The job gets the Glue databases as an argument; spark-defaults carry the same catalog the job registers
    (Glue, S3FileIO writing SSE-KMS with the tenant key), and the jar is the release's own."""
    from spark_jobs.cli import build_parser
    from spark_jobs.lake import catalog
    from spark_jobs.lake.config import resolve_lake

    request = build_request(TARGET, LOCATION, SPEC, "x")
    driver = request["jobDriver"]["sparkSubmitJobDriver"]
    args = driver["entryPointArguments"]
    assert args[args.index("--glue-databases") + 1] == "gold=acme_gold,silver=acme_silver"
    params = shlex.split(driver["sparkSubmitParameters"])
    assert params[params.index("--jars") + 1] == "local:///usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar"
    defaults = next(c for c in request["configurationOverrides"]["applicationConfiguration"]
                    if c["classification"] == "spark-defaults")["properties"]
    # What the job computes from its own arguments is exactly what the request carries.
    parsed = build_parser().parse_args(args)
    lake = resolve_lake(lake_uri=parsed.lake_uri, kms_key_arn=parsed.kms_key_arn, region=parsed.region,
                        glue_databases=parsed.glue_databases)
    settings = catalog.catalog_settings(lake)
    assert settings.kind == "glue" and dict(settings.namespaces) == {"silver": "acme_silver", "gold": "acme_gold"}
    expected = catalog.catalog_conf(settings)
    assert {k: defaults[k] for k in expected} == expected
    prefix = f"spark.sql.catalog.{settings.name}"
    assert defaults[f"{prefix}.catalog-impl"] == "org.apache.iceberg.aws.glue.GlueCatalog"
    assert defaults[f"{prefix}.io-impl"] == "org.apache.iceberg.aws.s3.S3FileIO"
    assert (defaults[f"{prefix}.s3.sse.type"], defaults[f"{prefix}.s3.sse.key"]) == ("kms", KEY)
    assert defaults["spark.sql.extensions"] == catalog.ICEBERG_EXTENSIONS
    assert settings.qualified("gold", "iot_hourly") == f"{settings.name}.acme_gold.iot_hourly"
    assert settings.location("gold", "iot_hourly") == "s3://acme-eu-west-1-lake/gold/iot_hourly"


def test_a_personal_data_tenants_classification_reaches_the_job():
    """A gdpr tenant's runs carry --data-classification, which the job parses into the lake it checks
    contracts against (every contract must then declare subject_keys)."""
    import dataclasses

    from spark_jobs.cli import build_parser
    from spark_jobs.lake.config import lake_from_args

    outputs = {"tenant_id": "acme", "region": "eu-west-1", "lake_bucket_name": "b", "kms_key_arn": KEY,
               "job_execution_role_arn": TARGET.role_arn, "emr_virtual_cluster_id": "x", "log_group_name": "g",
               "glue_database_names": {"silver": "acme_silver", "gold": "acme_gold"},
               "data_classification": ["pii", "gdpr"]}
    target = target_from_outputs("acme", outputs)
    assert target.data_classification == ("gdpr", "pii")
    args = build_request(target, LOCATION, SPEC, "x")["jobDriver"]["sparkSubmitJobDriver"]["entryPointArguments"]
    assert args[args.index("--data-classification") + 1] == "gdpr,pii"
    assert lake_from_args(build_parser().parse_args(args)).data_classification == ("gdpr", "pii")
    without = build_request(dataclasses.replace(target, data_classification=()), LOCATION, SPEC, "x")
    assert "--data-classification" not in without["jobDriver"]["sparkSubmitJobDriver"]["entryPointArguments"]


def test_the_lake_formation_tag_reaches_pipeline_runs_which_tag_their_tables():
    """The tenant output lake_formation.classification_tag becomes --lf-classification-tag of the runs that create
    tables (spark_jobs/tables/lf_tags.py tags their columns as the job role); a maintenance run creates none."""
    import dataclasses

    from spark_jobs.cli import build_parser
    from spark_jobs.lake.config import lake_from_args

    outputs = {"tenant_id": "acme", "region": "eu-west-1", "lake_bucket_name": "b", "kms_key_arn": KEY,
               "job_execution_role_arn": TARGET.role_arn, "emr_virtual_cluster_id": "x", "log_group_name": "g",
               "glue_database_names": {"silver": "acme_silver", "gold": "acme_gold"},
               "lake_formation": {"classification_tag": "acme-classification", "layer_tag": "acme-layer"}}
    target = target_from_outputs("acme", outputs)
    assert target.lf_classification_tag == "acme-classification"
    args = build_request(target, LOCATION, SPEC, "x")["jobDriver"]["sparkSubmitJobDriver"]["entryPointArguments"]
    assert args[args.index("--lf-classification-tag") + 1] == "acme-classification"
    assert lake_from_args(build_parser().parse_args(args)).lf_classification_tag == "acme-classification"
    bronze = dataclasses.replace(SPEC, layer="bronze")
    assert "--lf-classification-tag" not in entrypoint_arguments(target, bronze)
    older = target_from_outputs("acme", {k: v for k, v in outputs.items() if k != "lake_formation"})
    assert "--lf-classification-tag" not in entrypoint_arguments(older, SPEC)


def test_an_erasure_run_is_the_erase_job_as_the_erasure_role_with_its_subjects_in_the_lake():
    """``--erase-subject-file``: one run of ``spark_jobs erase`` whose subjects are a file in the lake, so
    no id reaches EMR's job-run description (arguments, name, tags); the run uses the erasure role, the
    only tenant role that may delete object versions, and the job's CLI parses the arguments."""
    import dataclasses

    from infra.deploy.request import ERASE, erase_spec
    from spark_jobs.cli import build_parser

    erasure_role = "arn:aws:iam::123456789012:role/acme-emr-erasure"
    with pytest.raises(DeployError, match="erasure_role_arn.*re-apply the tenant"):
        erase_spec(TARGET, [], datetime.date(2024, 5, 1), "0123456789ab")
    target = dataclasses.replace(TARGET, erasure_role_arn=erasure_role, data_classification=("gdpr",))
    spec = erase_spec(target, ["clickstream"], datetime.date(2024, 5, 1), "0123456789ab")
    request = build_request(target, LOCATION, spec, "")
    model = botocore.session.get_session().get_service_model("emr-containers")
    report = ParamValidator().validate(json.loads(json.dumps(request)), model.operation_model("StartJobRun").input_shape)
    assert not report.has_errors(), report.generate_report()
    assert request["executionRoleArn"] == erasure_role
    args = request["jobDriver"]["sparkSubmitJobDriver"]["entryPointArguments"]
    subject_uri = "s3://acme-eu-west-1-lake/checkpoints/_erasure/inbox/0123456789ab.subjects"
    assert args[:5] == ["erase", "--subject-file", subject_uri, "--dataset", "clickstream"]
    parsed = build_parser().parse_args(args)
    assert (parsed.command, parsed.subject_file, parsed.dataset) == ("erase", [subject_uri], ["clickstream"])
    assert "user_id" not in json.dumps(request)
    assert request["tags"]["layer"] == ERASE and request["tags"]["request"] == "0123456789ab"
    assert request["name"] == "acme-erase-20240501-0123456789ab"
    conf = _conf(request["jobDriver"]["sparkSubmitJobDriver"]["sparkSubmitParameters"])
    assert "spark.tenantlake.contract" not in conf and conf["spark.tenantlake.code_version"] == LOCATION.version
    # No copy of its plans outside the lake: no persistent App UI, no event log; logs stay where they were.
    overrides = request["configurationOverrides"]
    defaults = next(c for c in overrides["applicationConfiguration"] if c["classification"] == "spark-defaults")
    assert overrides["monitoringConfiguration"]["persistentAppUI"] == "DISABLED"
    assert defaults["properties"]["spark.eventLog.enabled"] == "false"
    assert overrides["monitoringConfiguration"]["s3MonitoringConfiguration"]["logUri"] == "s3://acme-eu-west-1-lake/logs/"
    pipeline = build_request(target, LOCATION, SPEC, "c0ffee")["configurationOverrides"]
    assert pipeline["monitoringConfiguration"]["persistentAppUI"] == "ENABLED"
    assert "spark.eventLog.enabled" not in json.dumps(pipeline)
    # Another request token is another run identity (a new request is never taken for a finished one).
    other = erase_spec(target, ["clickstream"], datetime.date(2024, 5, 1), "ba9876543210")
    assert build_request(target, LOCATION, other, "")["clientToken"] != request["clientToken"]
    # Pipeline runs keep the job role and their identity.
    assert build_request(target, LOCATION, SPEC, "c0ffee")["executionRoleArn"] == TARGET.role_arn
    assert "request" not in build_request(target, LOCATION, SPEC, "c0ffee")["tags"]


def test_a_maintenance_run_maintains_from_the_stable_artifact_with_the_tenants_retention():
    """``--maintain``: ``spark_jobs maintain`` as the job role, its code, entrypoint and archive from the stable
    maintenance artifact, the snapshot retention from the tenant's retention_days; valid for the model, and
    the job's CLI parses its arguments."""
    import dataclasses

    from infra.deploy.request import (
        MAINTAIN, MAINTENANCE_PREFIX, maintenance_location, maintenance_options, maintenance_spec,
    )
    from spark_jobs.cli import build_parser

    target = dataclasses.replace(TARGET, snapshot_retention_days=30)
    spec = maintenance_spec(["iot", "clickstream"], datetime.date(2024, 5, 1))
    location = maintenance_location(target.bucket, "0123456789ab")
    options = maintenance_options(RequestOptions(python="/usr/bin/python3.11"), target.bucket)
    request = build_request(target, location, spec, "", options)
    model = botocore.session.get_session().get_service_model("emr-containers")
    report = ParamValidator().validate(json.loads(json.dumps(request)), model.operation_model("StartJobRun").input_shape)
    assert not report.has_errors(), report.generate_report()
    assert request["executionRoleArn"] == TARGET.role_arn and request["name"] == "acme-maintain-20240501-01234567"
    assert request["tags"]["layer"] == MAINTAIN and request["tags"]["dataset"] == "iot+clickstream"
    driver = request["jobDriver"]["sparkSubmitJobDriver"]
    stable = f"s3://acme-eu-west-1-lake/{MAINTENANCE_PREFIX}"
    assert driver["entryPoint"] == f"{stable}/entrypoint.py"
    params = shlex.split(driver["sparkSubmitParameters"])
    assert params[params.index("--py-files") + 1] == f"{stable}/spark_jobs.zip"
    assert params[params.index("--archives") + 1] == f"{stable}/job_deps.tar.gz#deps"
    assert "spark.tenantlake.contract" not in _conf(driver["sparkSubmitParameters"])
    args = driver["entryPointArguments"]
    assert args[:6] == ["maintain", "--dataset", "iot", "--dataset", "clickstream", "--snapshot-retention-days"]
    parsed = build_parser().parse_args(args)
    assert (parsed.command, parsed.dataset, parsed.snapshot_retention_days) == ("maintain", ["iot", "clickstream"], 30)
    assert parsed.orphan_age_days == 3  # Iceberg's own margin: a running write's files are not orphans yet
    # A tenant applied before retention_days was an output: the module's default (7).
    old = build_request(TARGET, location, maintenance_spec([], datetime.date(2024, 5, 1)), "", options)
    old_args = old["jobDriver"]["sparkSubmitJobDriver"]["entryPointArguments"]
    assert old_args[:3] == ["maintain", "--snapshot-retention-days", "7"]


def test_the_scheduled_request_is_the_deploys_but_for_name_token_and_tags():
    """The schedule starts what ``deploy-jobs --maintain`` over every dataset starts: only the name, the tags,
    the code version it names and the token (the SDK fills one in per call) differ. As the universal target
    takes it, member names are capitalised and it converts back to the same request."""
    from infra.deploy.request import (
        maintenance_location, maintenance_options, maintenance_spec, request_from_universal_input,
        scheduled_maintenance_request, universal_target_input,
    )

    options = RequestOptions(python="/usr/bin/python3.11")
    scheduled = scheduled_maintenance_request(TARGET, options)
    deployed = build_request(TARGET, maintenance_location(TARGET.bucket, "0123456789ab"),
                             maintenance_spec([], datetime.date(2024, 5, 1)), "",
                             maintenance_options(options, TARGET.bucket))
    different = {k for k in deployed if deployed[k] != scheduled.get(k)}
    assert different == {"name", "clientToken", "tags", "jobDriver"}
    assert "clientToken" not in scheduled and scheduled["tags"]["trigger"] == "schedule"
    assert scheduled["jobDriver"]["sparkSubmitJobDriver"]["sparkSubmitParameters"].replace(
        "code_version=current", "code_version=0123456789ab") == \
        deployed["jobDriver"]["sparkSubmitJobDriver"]["sparkSubmitParameters"]
    universal = universal_target_input(scheduled)
    assert set(universal) == {"Name", "VirtualClusterId", "ExecutionRoleArn", "ReleaseLabel", "JobDriver",
                              "ConfigurationOverrides", "Tags"}
    assert "SparkSubmitJobDriver" in universal["JobDriver"] and "tenant" in universal["Tags"]
    assert request_from_universal_input(universal) == scheduled
    with pytest.raises(DeployError, match="has no parameter 'Bogus'"):
        request_from_universal_input({**universal, "Bogus": 1})


def test_the_state_machines_request_is_the_per_layer_deploys_from_the_stable_pipeline_artifact():
    """What the tenant's state machine sends for one layer (modules/pipeline_state_machine.py) is what
    ``deploy-jobs --per-layer`` sends for it, from ``artifacts/pipeline/current/``: only the name, the tags, the
    token (filled in per call) and the contract's checksum (whatever the published zip holds) differ."""
    from infra.deploy.request import (
        PIPELINE, PIPELINE_PREFIX, RunSpec, automation_request, request_from_universal_input, stable_location,
        stable_options, universal_target_input,
    )

    target = dataclasses.replace(TARGET, metric_namespace="tenantlake/acme", event_source="tenantlake.acme")
    options = RequestOptions(python="/usr/bin/python3.11")
    for layer in ("bronze", "silver", "gold"):
        automated = automation_request(target, "iot", layer, options)
        deployed = build_request(target, stable_location(PIPELINE, target.bucket, "0123456789ab"),
                                 RunSpec("iot", layer, datetime.date(2024, 5, 1)), "f" * 64,
                                 stable_options(PIPELINE, options, target.bucket))
        assert {k for k in deployed if deployed[k] != automated.get(k)} == {"name", "clientToken", "tags", "jobDriver"}
        assert automated["name"] == f"acme-iot-{layer}-auto" and "clientToken" not in automated
        assert automated["tags"] == {"tenant": "acme", "dataset": "iot", "layer": layer, "code_version": "current",
                                     "trigger": "state-machine"}
        driver = automated["jobDriver"]["sparkSubmitJobDriver"]
        assert driver["entryPoint"] == f"s3://acme-eu-west-1-lake/{PIPELINE_PREFIX}/entrypoint.py"
        assert driver["entryPointArguments"] == deployed["jobDriver"]["sparkSubmitJobDriver"]["entryPointArguments"]
        assert driver["entryPointArguments"][-4:] == ["--metric-namespace", "tenantlake/acme", "--event-source",
                                                      "tenantlake.acme"]
        assert "spark.tenantlake.contract.sha256" not in driver["sparkSubmitParameters"]
        assert f"--archives s3://acme-eu-west-1-lake/{PIPELINE_PREFIX}/job_deps.tar.gz#deps" in driver["sparkSubmitParameters"]
        assert request_from_universal_input(universal_target_input(automated)) == automated


def test_signals_reach_pipeline_runs_only_of_a_tenant_with_orchestration():
    from infra.deploy.request import RunSpec, entrypoint_arguments, erase_spec, maintenance_spec

    day = datetime.date(2024, 5, 1)
    assert "--metric-namespace" not in entrypoint_arguments(TARGET, RunSpec("iot", "pipeline", day))
    target = dataclasses.replace(TARGET, metric_namespace="tenantlake/acme", event_source="tenantlake.acme",
                                 erasure_role_arn="arn:aws:iam::123456789012:role/acme-emr-erasure")
    assert entrypoint_arguments(target, RunSpec("iot", "pipeline", day))[-4:] == [
        "--metric-namespace", "tenantlake/acme", "--event-source", "tenantlake.acme"]
    for spec in (maintenance_spec([], day), erase_spec(target, [], day, "req")):
        assert "--metric-namespace" not in entrypoint_arguments(target, spec)
