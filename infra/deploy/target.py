"""Where jobs go: the tenant's Terraform outputs, read (never hand-copied) and checked for completeness.

Outputs come from ``infra.terragrunt.outputs(tenant)`` (``terraform output -json`` in the tenant's
working dir), or from a file holding what ``terraform output -json`` printed (``--outputs-file``).
In the local environment the tenant's ``lake.json`` (written by apply) also names the emulator's
endpoint and CA bundle, which the AWS clients then use; on AWS there is no such entry.
"""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any, Mapping

REPO_ROOT = Path(__file__).resolve().parents[2]

# Output name -> what it is for (named in the error when missing).
REQUIRED_OUTPUTS: dict[str, str] = {
    "tenant_id": "the tenant id",
    "region": "the lake's region",
    "lake_bucket_name": "where the artifact and the logs go",
    "kms_key_arn": "the tenant key for SSE-KMS",
    "job_execution_role_arn": "the job execution role",
    "emr_virtual_cluster_id": "the EMR on EKS virtual cluster",
    "log_group_name": "the CloudWatch log group for job logs",
}
# Map outputs: name -> (the keys it must have, what it is for).
REQUIRED_MAP_OUTPUTS: dict[str, tuple[tuple[str, ...], str]] = {
    "glue_database_names": (("silver", "gold"), "the Glue database per table layer (the jobs' Iceberg catalog)"),
}


class DeployError(RuntimeError):
    """Anything that stops a deploy, as one line a user can act on (the CLI prints it, no traceback)."""


@dataclasses.dataclass(frozen=True)
class DeployTarget:
    """The tenant's deploy target, taken from its Terraform outputs.

    Attributes:
        tenant_id: the tenant.
        region: AWS region of the lake and the virtual cluster.
        bucket: the lake bucket (artifacts under ``artifacts/``, job logs under ``logs/``).
        kms_key_arn: the tenant key; every object the deploy or the jobs write is SSE-KMS with it.
        role_arn: the job execution role.
        virtual_cluster_id: the EMR on EKS virtual cluster.
        log_group: the CloudWatch log group for job logs.
        glue_databases: (layer, Glue database) pairs of the tenant's table layers.
        data_classification: the tenant's classification (passed to the jobs, which then require
            ``subject_keys`` in every contract of a pii/gdpr tenant). @default - ()
        erasure_role_arn: the role of erase runs, the only tenant role that may delete object versions
            (output ``erasure_role_arn``; a tenant applied before it existed has none). @default - ""
        snapshot_retention_days: how long table maintenance keeps Iceberg snapshots, the tenant's
            ``retention_days["snapshots"]`` (output ``retention_days``; a tenant applied before it existed has
            none). @default - None (the maintain job's default, ``tenant_model.DEFAULT_RETENTION_DAYS``)
        catalog_name: the Spark name of the tenant's Iceberg catalog in the request's spark-defaults.
            @default - "" (``spark_jobs.lake.catalog.catalog_name`` of the lake URI, what the job derives)
        lf_classification_tag: the tenant's Lake Formation classification tag key (output
            ``lake_formation.classification_tag``): the jobs tag their tables' columns with it. @default - "" (a
            tenant applied before the module had Lake Formation: no tagging)
        metric_namespace, event_source: where pipeline runs put their freshness metric (CloudWatch namespace) and
            emit their events (EventBridge source), from the output ``orchestration`` of a tenant whose
            orchestration is enabled. @default - "" (the runs put and emit nothing)
        state_machine_arn: the tenant's pipeline state machine (output ``orchestration.state_machine_arn``): a
            pipeline deploy whose runs all completed publishes the code the state machine runs. @default - ""
        endpoint_url: AWS endpoint override (the emulator in the local environment). @default - ""
        ca_bundle: CA bundle for ``endpoint_url``. @default - ""
    """

    tenant_id: str
    region: str
    bucket: str
    kms_key_arn: str
    role_arn: str
    virtual_cluster_id: str
    log_group: str
    glue_databases: tuple[tuple[str, str], ...]
    data_classification: tuple[str, ...] = ()
    erasure_role_arn: str = ""
    snapshot_retention_days: int | None = None
    catalog_name: str = ""
    lf_classification_tag: str = ""
    metric_namespace: str = ""
    event_source: str = ""
    state_machine_arn: str = ""
    endpoint_url: str = ""
    ca_bundle: str = ""

    @property
    def lake_uri(self) -> str:
        return f"s3://{self.bucket}"

    @property
    def logs_uri(self) -> str:
        return f"s3://{self.bucket}/logs/"


def flatten_outputs(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Accept ``terraform output -json`` shape ({name: {value, type, sensitive}}) or a flat map."""
    flat: dict[str, Any] = {}
    for name, value in raw.items():
        if isinstance(value, Mapping) and "value" in value and set(value) <= {"value", "type", "sensitive"}:
            flat[name] = value["value"]
        else:
            flat[name] = value
    return flat


def target_from_outputs(tenant: str, outputs: Mapping[str, Any], endpoint_url: str = "",
                        ca_bundle: str = "") -> DeployTarget:
    """Check the outputs a deploy needs and return the target, or raise ``DeployError`` naming the gap."""
    flat = flatten_outputs(outputs)
    for name, purpose in REQUIRED_OUTPUTS.items():
        value = flat.get(name)
        if not isinstance(value, str) or not value.strip():
            hint = ("the tenant has no EMR on EKS virtual cluster; apply a module that creates one"
                    if name == "emr_virtual_cluster_id" else "re-apply the tenant (make apply TENANT=%s)" % tenant)
            raise DeployError(f"tenant '{tenant}': terraform output '{name}' ({purpose}) is missing or empty; {hint}")
    for name, (keys, purpose) in REQUIRED_MAP_OUTPUTS.items():
        value = flat.get(name)
        if not isinstance(value, Mapping) or any(not isinstance(value.get(k), str) or not value[k] for k in keys):
            raise DeployError(f"tenant '{tenant}': terraform output '{name}' ({purpose}) must map "
                              f"{', '.join(keys)} to names; re-apply the tenant (make apply TENANT={tenant})")
    if flat["tenant_id"] != tenant:
        raise DeployError(
            f"tenant '{tenant}': the outputs belong to tenant '{flat['tenant_id']}'; check --outputs-file / the working dir"
        )
    return DeployTarget(
        tenant_id=tenant,
        region=flat["region"],
        bucket=flat["lake_bucket_name"],
        kms_key_arn=flat["kms_key_arn"],
        role_arn=flat["job_execution_role_arn"],
        virtual_cluster_id=flat["emr_virtual_cluster_id"],
        log_group=flat["log_group_name"],
        glue_databases=tuple(sorted((k, v) for k, v in flat["glue_database_names"].items())),
        data_classification=tuple(sorted(flat.get("data_classification") or ())),
        erasure_role_arn=str(flat.get("erasure_role_arn") or ""),
        snapshot_retention_days=_snapshot_retention(tenant, flat.get("retention_days")),
        lf_classification_tag=str((flat.get("lake_formation") or {}).get("classification_tag") or ""),
        **orchestration_fields(flat.get("orchestration")),
        endpoint_url=endpoint_url,
        ca_bundle=ca_bundle,
    )


def orchestration_fields(orchestration: Any) -> dict[str, str]:
    """``metric_namespace``, ``event_source`` and ``state_machine_arn`` of the output ``orchestration`` ("" each for
    a tenant without it, or with it disabled)."""
    values = orchestration if isinstance(orchestration, Mapping) else {}
    return {name: str(values.get(name) or "") for name in ("metric_namespace", "event_source", "state_machine_arn")}


def _snapshot_retention(tenant: str, retention: Any) -> int | None:
    """``retention_days["snapshots"]`` of the outputs, when the tenant's module has it."""
    if retention is None:
        return None
    value = retention.get("snapshots") if isinstance(retention, Mapping) else None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or int(value) != value:
        raise DeployError(f"tenant '{tenant}': terraform output 'retention_days' has snapshots={value!r}, "
                          "not a whole number of days")
    return int(value)


def state_dir() -> Path:
    return Path(os.environ.get("TENANTLAKE_STATE_DIR") or REPO_ROOT / ".local")


def local_environment(tenant: str, ask_terragrunt: bool = True) -> tuple[str, str]:
    """(endpoint, ca_bundle) of the emulator in the local environment, else ("", "").

    The tenant's ``lake.json`` (written by apply) names it; failing that, and when the outputs came
    from the tenant's state, the emulator the terragrunt fallback runs terraform against.
    """
    path = state_dir() / "tenants" / tenant / "lake.json"
    try:
        lake = json.loads(path.read_text())
        if lake.get("s3_endpoint"):
            return str(lake["s3_endpoint"]), str(lake.get("ca_bundle") or "")
    except (OSError, ValueError):
        pass
    if ask_terragrunt:
        try:
            from infra import terragrunt
        except ImportError:
            return "", ""
        if terragrunt.env_name() == "local":
            emulator = terragrunt.emulator_state()
            return emulator.endpoint, emulator.ca_bundle
    return "", ""


def read_outputs(tenant: str, outputs_file: str | None = None) -> dict[str, Any]:
    """The tenant's Terraform outputs: from ``outputs_file`` when given, else from its Terraform state."""
    if outputs_file:
        try:
            return flatten_outputs(json.loads(Path(outputs_file).read_text()))
        except OSError as exc:
            raise DeployError(f"--outputs-file {outputs_file}: cannot read it ({exc.strerror})") from exc
        except ValueError as exc:
            raise DeployError(f"--outputs-file {outputs_file}: not JSON from `terraform output -json` ({exc})") from exc
    try:
        from infra import terragrunt
    except ImportError as exc:  # the terragrunt fallback is a separate workstream
        raise DeployError(f"tenant '{tenant}': cannot read Terraform outputs (infra.terragrunt unavailable: {exc}); "
                          "pass --outputs-file with `terraform output -json`") from exc
    try:
        return flatten_outputs(terragrunt.outputs(tenant))
    except terragrunt.TerragruntError as exc:  # incl. TenantNotAppliedError: "tenant 'x' is not applied here ..."
        raise DeployError(str(exc)) from exc


def resolve_target(tenant: str, outputs_file: str | None = None, endpoint_url: str = "") -> DeployTarget:
    """Outputs + endpoint: explicit ``endpoint_url``, else ``AWS_ENDPOINT_URL``, else the local emulator."""
    outputs = read_outputs(tenant, outputs_file)
    endpoint = endpoint_url or os.environ.get("AWS_ENDPOINT_URL", "")
    ca_bundle = os.environ.get("AWS_CA_BUNDLE", "")
    if not endpoint:
        endpoint, local_ca = local_environment(tenant, ask_terragrunt=not outputs_file)
        ca_bundle = local_ca or ca_bundle
    return target_from_outputs(tenant, outputs, endpoint_url=endpoint, ca_bundle=ca_bundle)
