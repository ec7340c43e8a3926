"""The StartJobRun request for one run: a pure function of target, artifact and selection.

A run is a dataset's whole pipeline (``run-all --dataset D``: bronze -> silver -> gold in one Spark
application, the default), one layer of it (``run --dataset D --layer L``, ``--per-layer``), an erasure
run (``erase``) or a table maintenance run (``maintain``, from the stable artifact under
``MAINTENANCE_PREFIX`` that the tenant module's schedule also runs: ``scheduled_maintenance_request``). The
tenant's state machine (``modules/pipeline_state_machine.py``) sends, per layer of a dataset, the per-layer
request of the stable pipeline artifact under ``PIPELINE_PREFIX`` (``automation_request``).
The dict it returns is exactly what ``boto3.client("emr-containers").start_job_run(**request)`` sends
and what ``aws emr-containers start-job-run --cli-input-json`` accepts (``--dry-run`` prints it).
"""
from __future__ import annotations

import dataclasses
import datetime
import hashlib
import shlex
from typing import Any

from infra.deploy.job_deps import ALIAS as DEPS_ALIAS
from infra.deploy.job_deps import DEFAULT_RELEASE_LABEL, PYTHONPATH_ENTRY
from infra.deploy.target import DeployError, DeployTarget
from spark_jobs.erasure import INBOX_PREFIX
from spark_jobs.lake import catalog
from spark_jobs.lake.config import LakeConfig

LAYERS: tuple[str, ...] = ("bronze", "silver", "gold")  # dependency order
PIPELINE = "pipeline"  # the "layer" of a run that runs every layer (tags, names, log streams)
ERASE = "erase"  # the "layer" of an erasure run (``spark_jobs erase``, GDPR Art. 17)
MAINTAIN = "maintain"  # the "layer" of a table maintenance run (``spark_jobs maintain``)
ALL_DATASETS = "all"  # the "dataset" of an erasure or maintenance run over every dataset
DATE_FILTERED_LAYERS = ("silver", "gold")  # bronze ingests whatever landed; --date means an event date
MAX_NAME_LENGTH = 64  # StartJobRun name: 1-64 characters
# The stable artifact of maintenance runs: `deploy-jobs --maintain` publishes the code, the entrypoint and
# the dependency archive here, and both its own run and the tenant module's schedule run what is here.
MAINTENANCE_PREFIX = "artifacts/maintenance/current"
MAINTENANCE_FILES = {"zip": "spark_jobs.zip", "entrypoint": "entrypoint.py", "job_deps": "job_deps.tar.gz",
                     "manifest": "manifest.json"}
# The stable artifact of the runs the tenant's state machine starts: a pipeline `deploy-jobs` whose runs all
# completed publishes its code, entrypoint and dependency archive here (same files as the maintenance artifact).
PIPELINE_PREFIX = "artifacts/pipeline/current"
STABLE_PREFIXES = {MAINTAIN: MAINTENANCE_PREFIX, PIPELINE: PIPELINE_PREFIX}
SCHEDULED_VERSION = "current"  # the code version a scheduled run names (whatever was published last)
AUTOMATION_TRIGGER = "state-machine"  # the ``trigger`` tag of a run the tenant's state machine started
# EventBridge Scheduler's universal target for StartJobRun (the service's SDK name and the action, camelCase).
SCHEDULER_TARGET = "arn:{partition}:scheduler:::aws-sdk:emrcontainers:startJobRun"


@dataclasses.dataclass(frozen=True)
class JobSizing:
    """Driver/executor sizing and shuffle partitions of every job run.

    Attributes:
        driver_cores: @default - 1
        driver_memory: @default - "2g"
        executor_instances: @default - 2
        executor_cores: @default - 2
        executor_memory: @default - "4g"
        shuffle_partitions: ``spark.sql.shuffle.partitions``: 4 per executor core (2 x 2). @default - 16
    """

    driver_cores: int = 1
    driver_memory: str = "2g"
    executor_instances: int = 2
    executor_cores: int = 2
    executor_memory: str = "4g"
    shuffle_partitions: int = 16


@dataclasses.dataclass(frozen=True)
class RequestOptions:
    """Options that shape every request of one deploy.

    Attributes:
        release_label: EMR release. @default - "emr-7.5.0-latest" (Spark 3.5.2)
        sizing: see ``JobSizing``. @default - JobSizing()
        job_deps_uri: ``s3://.../job_deps.tar.gz`` with the jobs' third-party packages (``job_deps``):
            ``--archives <uri>#deps`` and ``PYTHONPATH=./deps`` on driver and executors. @default - "" (none)
        python: the interpreter of driver and executors (``spark.pyspark.python``), the one the
            packages were built for. @default - "" (the image's)
        container_image: a custom EMR on EKS image with the dependencies baked in. @default - "" (EMR's)
        allow_warn: pass ``--allow-warn`` to the jobs, so a run whose only failed expectations have warn
            severity ends COMPLETED (exit 0) instead of FAILED (exit 5). @default - False (a warning fails
            the run, and the deploy names the expectations)
    """

    release_label: str = DEFAULT_RELEASE_LABEL
    sizing: JobSizing = JobSizing()
    job_deps_uri: str = ""
    python: str = ""
    container_image: str = ""
    allow_warn: bool = False


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """One job run: a dataset's pipeline (``layer`` = ``PIPELINE``) or one of its layers, identified by
    a run date.

    ``event_date`` (``--date``) restricts silver and gold to that event date and is passed to the job;
    without it the jobs process everything, and ``run_date`` (the deploy's UTC day) only names the run.
    """

    dataset: str
    layer: str
    run_date: datetime.date
    event_date: datetime.date | None = None
    request: str = ""  # an erasure run: the deploy's request token (names the run and its subject file)
    subject_uri: str = ""  # an erasure run: s3://<lake>/checkpoints/_erasure/inbox/<request>.subjects
    erase_datasets: tuple[str, ...] = ()  # an erasure run: only these datasets (default: every one)
    maintain_datasets: tuple[str, ...] = ()  # a maintenance run: only these datasets (default: every one)

    @property
    def is_pipeline(self) -> bool:
        return self.layer == PIPELINE

    @property
    def is_erase(self) -> bool:
        return self.layer == ERASE

    @property
    def is_maintain(self) -> bool:
        return self.layer == MAINTAIN

    @property
    def layers(self) -> tuple[str, ...]:
        """The layers this run runs, in order."""
        return LAYERS if self.is_pipeline else (self.layer,)

    @property
    def event_date_label(self) -> str:
        return self.event_date.isoformat() if self.event_date else "all"

    @property
    def label(self) -> str:
        return f"{self.dataset}/{self.layer}"


@dataclasses.dataclass(frozen=True)
class ArtifactLocation:
    """Where the uploaded artifact is, and what it is."""

    version: str
    zip_uri: str
    entrypoint_uri: str


def job_name(tenant: str, spec: RunSpec, version: str) -> str:
    if spec.is_erase:
        return f"{tenant}-erase-{spec.run_date:%Y%m%d}-{spec.request}"[:MAX_NAME_LENGTH]
    if spec.is_maintain:
        return f"{tenant}-maintain-{spec.run_date:%Y%m%d}-{version[:8]}"[:MAX_NAME_LENGTH]
    name = f"{tenant}-{spec.dataset}-{spec.layer}-{spec.run_date:%Y%m%d}-{version[:8]}"
    return name[:MAX_NAME_LENGTH]


def client_token(tenant: str, spec: RunSpec, version: str, attempt: int = 0) -> str:
    """Deterministic per (tenant, dataset, layer, date, version, attempt): a retried deploy re-sends the
    same token, so EMR returns the existing run instead of starting a second one. ``attempt`` moves on
    only after a run of the same identity ended FAILED or CANCELLED (see ``runner``)."""
    parts = [tenant, spec.dataset, spec.layer, spec.run_date.isoformat(), spec.event_date_label, version, str(attempt)]
    identity = "|".join(parts + ([spec.request] if spec.request else []))
    return hashlib.sha256(identity.encode()).hexdigest()[:32]


def run_tags(tenant: str, spec: RunSpec, version: str, attempt: int = 0) -> dict[str, str]:
    return {
        "tenant": tenant,
        "dataset": spec.dataset,
        "layer": spec.layer,
        "code_version": version,
        "run_date": spec.run_date.isoformat(),
        "event_date": spec.event_date_label,
        "attempt": str(attempt),
        **({"request": spec.request} if spec.request else {}),
    }


def entrypoint_arguments(target: DeployTarget, spec: RunSpec, lake_uri: str | None = None,
                         allow_warn: bool = False) -> list[str]:
    """Arguments of ``spark_jobs.cli.main`` for one run (``lake_uri`` overrides the target's for local runs;
    ``allow_warn`` adds ``--allow-warn``)."""
    if spec.is_erase:
        # The subjects travel as a file in the lake, never as arguments: EMR keeps a run's arguments in
        # its job-run description, and they would be personal data.
        args = ["erase", "--subject-file", spec.subject_uri]
        for dataset in spec.erase_datasets:
            args += ["--dataset", dataset]
    elif spec.is_maintain:
        # Snapshot retention: the tenant's retention_days["snapshots"]; orphan files: maintain's own margin
        # (3 days, Iceberg's default), so a running write's files are never taken for orphans.
        args = ["maintain"]
        for dataset in spec.maintain_datasets:
            args += ["--dataset", dataset]
        args += ["--snapshot-retention-days", str(snapshot_retention_days(target))]
    elif spec.is_pipeline:
        args = ["run-all", "--dataset", spec.dataset]
    else:
        args = ["run", "--dataset", spec.dataset, "--layer", spec.layer]
    if spec.event_date and any(layer in DATE_FILTERED_LAYERS for layer in spec.layers):
        args += ["--date", spec.event_date.isoformat()]
    if allow_warn:
        args.append("--allow-warn")
    args += ["--lake-uri", lake_uri or target.lake_uri, "--kms-key-arn", target.kms_key_arn, "--region", target.region]
    if target.glue_databases:
        args += ["--glue-databases", ",".join(f"{layer}={db}" for layer, db in target.glue_databases)]
    if target.data_classification:
        args += ["--data-classification", ",".join(target.data_classification)]
    if target.lf_classification_tag and set(spec.layers) & {"silver", "gold"}:
        args += ["--lf-classification-tag", target.lf_classification_tag]  # the runs tag their tables' columns
    if target.metric_namespace and not (spec.is_erase or spec.is_maintain):
        # A tenant with orchestration: each publish puts its freshness metric, a blocked publish its event.
        args += ["--metric-namespace", target.metric_namespace, "--event-source", target.event_source]
    return args


def snapshot_retention_days(target: DeployTarget) -> int:
    """The snapshot retention of a maintenance run: the tenant's ``retention_days["snapshots"]``, else the
    module's default (a tenant applied before the output existed has that default)."""
    if target.snapshot_retention_days is not None:
        return target.snapshot_retention_days
    from tenant_model import DEFAULT_RETENTION_DAYS

    return DEFAULT_RETENTION_DAYS["snapshots"]


def catalog_settings(target: DeployTarget) -> catalog.CatalogSettings:
    """The tenant's Iceberg catalog on EMR: Glue, with the tenant's databases, S3FileIO writing SSE-KMS
    with the tenant key (``spark_jobs.lake.catalog``, the same function the job calls at run time)."""
    lake = LakeConfig(lake_uri=target.lake_uri, kms_key_arn=target.kms_key_arn, region=target.region,
                      glue_databases=target.glue_databases)
    try:
        settings = catalog.catalog_settings(lake, kind="glue")
    except catalog.CatalogError as exc:
        raise DeployError(f"tenant '{target.tenant_id}': {exc}") from exc
    return dataclasses.replace(settings, name=target.catalog_name) if target.catalog_name else settings


def spark_submit_parameters(artifact: ArtifactLocation, spec: RunSpec, contract_sha256: str,
                            options: RequestOptions, jars: str = "") -> str:
    sizing = options.sizing
    conf = {
        "spark.driver.cores": str(sizing.driver_cores),
        "spark.driver.memory": sizing.driver_memory,
        "spark.executor.instances": str(sizing.executor_instances),
        "spark.executor.cores": str(sizing.executor_cores),
        "spark.executor.memory": sizing.executor_memory,
        "spark.sql.shuffle.partitions": str(sizing.shuffle_partitions),
        "spark.tenantlake.code_version": artifact.version,
    }
    if not (spec.is_erase or spec.is_maintain):
        # The contract travels inside the zip; these record which one (and which bytes) the run used. A run of the
        # stable artifact (the state machine's) records no checksum: its bytes are whatever was published last.
        conf.update({"spark.tenantlake.dataset": spec.dataset,
                     "spark.tenantlake.contract": f"spark_jobs/contracts/{spec.dataset}.yaml"})
        if contract_sha256:
            conf["spark.tenantlake.contract.sha256"] = contract_sha256
    args = ["--py-files", artifact.zip_uri] + (["--jars", jars] if jars else [])
    if options.job_deps_uri:
        # Spark unpacks the archive as ./deps in the driver's working dir (Kubernetes cluster mode,
        # SPARK-33748) and in each executor's; PYTHONPATH puts it on the Python path of both.
        args += ["--archives", f"{options.job_deps_uri}#{DEPS_ALIAS}"]
        conf["spark.kubernetes.driverEnv.PYTHONPATH"] = PYTHONPATH_ENTRY
        conf["spark.executorEnv.PYTHONPATH"] = PYTHONPATH_ENTRY
    if options.python:
        conf["spark.pyspark.python"] = options.python
        conf["spark.pyspark.driver.python"] = options.python
    if options.container_image:
        conf["spark.kubernetes.container.image"] = options.container_image
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    # The field is one string that is split back into words (shlex rules: what spark-submit's shell and
    # spark_jobs.usage.emr read). EMR documents no quoting for it, so a word that would need quoting (a
    # space, a quote, a backslash) is refused rather than quoted: each word must read back as itself.
    for token in args:
        if not _one_shell_word(token):
            raise DeployError(f"sparkSubmitParameters: '{token}' must not be empty or contain spaces or quotes")
    return " ".join(args)


def _one_shell_word(token: str) -> bool:
    try:
        return shlex.split(token) == [token]
    except ValueError:  # an unclosed quote
        return False


def iceberg_conf(target: DeployTarget) -> tuple[str, dict[str, str]]:
    """(``--jars`` value, spark-defaults) of the tenant's Iceberg catalog: ``spark_jobs.lake.catalog.submit_conf``.
    The jar is EMR's own, in the release's image (``local://``): no jar is uploaded."""
    conf = catalog.submit_conf(catalog_settings(target))
    return conf.pop("spark.jars"), conf


# An erase run keeps no copy of its plans outside the lake: no persistent App UI (EMR would keep the
# event log, with every SQL text and plan, outside the bucket) and no Spark event log at all. Its driver
# and executor logs still go to logs/ and CloudWatch; the job writes no id into them (spark_jobs/erasure).
ERASE_SPARK_DEFAULTS = {"spark.eventLog.enabled": "false"}


def configuration_overrides(target: DeployTarget, spec: RunSpec) -> dict[str, Any]:
    iceberg = iceberg_conf(target)[1]
    return {
        "applicationConfiguration": [
            {
                # EMRFS (s3://) writes every object SSE-KMS with the tenant key: the bucket policy
                # denies puts without it.
                "classification": "emrfs-site",
                "properties": {
                    "fs.s3.enableServerSideEncryption": "true",
                    "fs.s3.serverSideEncryption.kms.keyId": target.kms_key_arn,
                },
            },
            {
                # Same rule for any s3a:// path, UTC for event dates, and the tenant's Iceberg catalog
                # (Glue databases, S3FileIO with the tenant key); the job registers the same settings.
                "classification": "spark-defaults",
                "properties": {
                    "spark.hadoop.fs.s3a.encryption.algorithm": "SSE-KMS",
                    "spark.hadoop.fs.s3a.encryption.key": target.kms_key_arn,
                    "spark.sql.session.timeZone": "UTC",
                    **iceberg,
                    **(ERASE_SPARK_DEFAULTS if spec.is_erase else {}),
                },
            },
        ],
        "monitoringConfiguration": {
            "persistentAppUI": "DISABLED" if spec.is_erase else "ENABLED",
            "cloudWatchMonitoringConfiguration": {
                "logGroupName": target.log_group,
                "logStreamNamePrefix": log_stream_prefix(spec),
            },
            # EMR uploads the job's logs to logs/ as the job role; the lake's bucket policy denies any
            # put that does not name the tenant key, so the uploads are SSE-KMS with it.
            "s3MonitoringConfiguration": {"logUri": target.logs_uri, "encryptionKeyArn": target.kms_key_arn},
        },
    }


def log_stream_prefix(spec: RunSpec) -> str:
    return f"spark_jobs/{spec.dataset}/{spec.layer}"


def build_request(target: DeployTarget, artifact: ArtifactLocation, spec: RunSpec, contract_sha256: str,
                  options: RequestOptions = RequestOptions(), attempt: int = 0) -> dict[str, Any]:
    """The StartJobRun request for ``spec``."""
    tenant = target.tenant_id
    return {
        "name": job_name(tenant, spec, artifact.version),
        "virtualClusterId": target.virtual_cluster_id,
        "clientToken": client_token(tenant, spec, artifact.version, attempt),
        "executionRoleArn": target.erasure_role_arn if spec.is_erase else target.role_arn,
        "releaseLabel": options.release_label,
        "jobDriver": {
            "sparkSubmitJobDriver": {
                "entryPoint": artifact.entrypoint_uri,
                "entryPointArguments": entrypoint_arguments(target, spec, allow_warn=options.allow_warn),
                "sparkSubmitParameters": spark_submit_parameters(artifact, spec, contract_sha256, options,
                                                                 jars=iceberg_conf(target)[0]),
            }
        },
        "configurationOverrides": configuration_overrides(target, spec),
        "tags": run_tags(tenant, spec, artifact.version, attempt),
    }


def erase_spec(target: DeployTarget, datasets: list[str], run_date: datetime.date, request: str) -> RunSpec:
    """The one run of an erasure deploy: ``spark_jobs erase`` as the tenant's erasure role, its subjects
    in ``checkpoints/_erasure/inbox/<request>.subjects`` (``upload.upload_subjects``)."""
    if not target.erasure_role_arn:
        raise DeployError(f"tenant '{target.tenant_id}': terraform output 'erasure_role_arn' (the role of erase "
                          f"runs) is missing; re-apply the tenant (make apply TENANT={target.tenant_id})")
    return RunSpec(ALL_DATASETS if not datasets else "+".join(datasets), ERASE, run_date, request=request,
                   subject_uri=f"{target.lake_uri}/{subject_key(request)}", erase_datasets=tuple(datasets))


def maintenance_spec(datasets: list[str], run_date: datetime.date) -> RunSpec:
    """The one run of a maintenance deploy: ``spark_jobs maintain`` over ``datasets`` (default: every one)."""
    return RunSpec(ALL_DATASETS if not datasets else "+".join(datasets), MAINTAIN, run_date,
                   maintain_datasets=tuple(datasets))


def stable_key(kind: str, part: str) -> str:
    """The key of one file (``MAINTENANCE_FILES``) of a stable artifact: ``kind`` ``MAINTAIN`` or ``PIPELINE``."""
    return f"{STABLE_PREFIXES[kind]}/{MAINTENANCE_FILES[part]}"


def stable_location(kind: str, bucket: str, version: str) -> ArtifactLocation:
    """Where the runs of a stable artifact take their code, named after the code ``version`` it holds."""
    return ArtifactLocation(version=version, zip_uri=f"s3://{bucket}/{stable_key(kind, 'zip')}",
                            entrypoint_uri=f"s3://{bucket}/{stable_key(kind, 'entrypoint')}")


def stable_options(kind: str, options: RequestOptions, bucket: str) -> RequestOptions:
    """``options`` with the dependency archive taken from a stable artifact."""
    return dataclasses.replace(options, job_deps_uri=f"s3://{bucket}/{stable_key(kind, 'job_deps')}")


def maintenance_key(part: str) -> str:
    """The key of one file of the stable maintenance artifact (``MAINTENANCE_FILES``)."""
    return stable_key(MAINTAIN, part)


def maintenance_location(bucket: str, version: str) -> ArtifactLocation:
    """Where maintenance runs take their code: the stable artifact, named after the code ``version`` it holds."""
    return stable_location(MAINTAIN, bucket, version)


def maintenance_options(options: RequestOptions, bucket: str) -> RequestOptions:
    """``options`` with the dependency archive taken from the stable maintenance artifact."""
    return stable_options(MAINTAIN, options, bucket)


def automation_request(target: DeployTarget, dataset: str, layer: str,
                       options: RequestOptions = RequestOptions()) -> dict[str, Any]:
    """The StartJobRun request the tenant's state machine sends for one layer of one dataset: the request of
    ``deploy-jobs --per-layer`` (``build_request``) from the stable pipeline artifact (``PIPELINE_PREFIX``, code
    version ``current``), named ``<tenant>-<dataset>-<layer>-auto``, with the tag ``trigger=state-machine``, no
    ``clientToken`` (the integration fills one in per call) and no contract checksum (the published zip's
    contract is whatever it holds). ``target`` may hold Terraform references (the module renders it)."""
    spec = RunSpec(dataset, layer, datetime.date(2000, 1, 1))
    request = build_request(target, stable_location(PIPELINE, target.bucket, SCHEDULED_VERSION), spec, "",
                            stable_options(PIPELINE, options, target.bucket))
    del request["clientToken"]
    request["name"] = f"{target.tenant_id}-{dataset}-{layer}-auto"[:MAX_NAME_LENGTH]
    request["tags"] = {"tenant": target.tenant_id, "dataset": dataset, "layer": layer,
                       "code_version": SCHEDULED_VERSION, "trigger": AUTOMATION_TRIGGER}
    return request


def scheduled_maintenance_request(target: DeployTarget, options: RequestOptions = RequestOptions()) -> dict[str, Any]:
    """The StartJobRun request of the tenant module's maintenance schedule: the request of
    ``deploy-jobs --maintain`` over every dataset, with the stable artifact's code version (``current``),
    a fixed name, the tags ``trigger=schedule`` and no ``clientToken`` (the caller's SDK fills one in per
    call, as for any idempotency token). ``target`` may hold Terraform references (the module renders it)."""
    spec = maintenance_spec([], datetime.date(2000, 1, 1))
    request = build_request(target, maintenance_location(target.bucket, SCHEDULED_VERSION), spec, "",
                            maintenance_options(options, target.bucket))
    del request["clientToken"]
    request["name"] = f"{target.tenant_id}-maintain-scheduled"
    request["tags"] = {"tenant": target.tenant_id, "dataset": ALL_DATASETS, "layer": MAINTAIN,
                       "code_version": SCHEDULED_VERSION, "trigger": "schedule"}
    return request


def universal_target_input(request: dict[str, Any]) -> dict[str, Any]:
    """A StartJobRun request as EventBridge Scheduler's universal target takes it: the API's parameters with
    the service model's member names capitalised (``VirtualClusterId``, ``JobDriver.SparkSubmitJobDriver``),
    as for AWS SDK integrations; map keys (Spark settings, tags) stay as they are."""
    return _recase(request, _start_job_run_shape(), True)


def request_from_universal_input(data: dict[str, Any]) -> dict[str, Any]:
    """The inverse of ``universal_target_input``: the request in boto3's (the model's) member names."""
    return _recase(data, _start_job_run_shape(), False)


def _start_job_run_shape():
    import botocore.session

    return botocore.session.get_session().get_service_model("emr-containers").operation_model("StartJobRun").input_shape


def _recase(value: Any, shape, to_universal: bool) -> Any:
    if shape.type_name == "structure":
        members = {}
        for name, member in shape.members.items():
            universal = name[0].upper() + name[1:]
            source, target = (name, universal) if to_universal else (universal, name)
            members[source] = (target, member)
        out = {}
        for key, item in value.items():
            if key not in members:
                raise DeployError(f"StartJobRun ({shape.name}) has no parameter '{key}'")
            target, member = members[key]
            out[target] = _recase(item, member, to_universal)
        return out
    if shape.type_name == "map":
        return {key: _recase(item, shape.value, to_universal) for key, item in value.items()}
    if shape.type_name == "list":
        return [_recase(item, shape.member, to_universal) for item in value]
    return value


def subject_key(request: str) -> str:
    """Where an erasure run's subject file waits (``spark_jobs.erasure.job.INBOX_PREFIX``)."""
    return f"{INBOX_PREFIX}{request}.subjects"


def run_plan(datasets: list[str], layers: list[str], run_date: datetime.date,
             event_date: datetime.date | None = None, per_layer: bool = False) -> list[RunSpec]:
    """The runs of a deploy, in dependency order.

    Pipeline mode (the default): one run per dataset, each running every layer; ``layers`` must be all
    of them. ``per_layer``: every dataset's bronze, then silver, then gold, one run each.
    """
    if not per_layer:
        if set(layers) != set(LAYERS):
            raise DeployError(f"--layers {','.join(layers)}: a pipeline run runs {', '.join(LAYERS)}; "
                              "add --per-layer to run single layers")
        return [RunSpec(dataset, PIPELINE, run_date, event_date) for dataset in datasets]
    ordered_layers = [layer for layer in LAYERS if layer in layers]
    return [RunSpec(dataset, layer, run_date, event_date) for layer in ordered_layers for dataset in datasets]
