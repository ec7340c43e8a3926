"""Checks that run before anything is uploaded or submitted, so a bad deploy submits nothing.

Each check raises ``DeployError`` with one line naming the tenant, the thing and what to do.
"""
from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError

from infra.deploy.request import LAYERS
from infra.deploy.target import DeployError, DeployTarget

ROLE_TENANT_TAG = "tenant"


def _split(values: str | list[str] | None) -> list[str]:
    if values is None:
        return []
    items = values.split(",") if isinstance(values, str) else [v for value in values for v in value.split(",")]
    return [item.strip() for item in items if item.strip()]


def check_selection(tenant: str, datasets: str | list[str] | None, layers: str | list[str] | None,
                    available: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The datasets and layers to run (default: all), in a stable order; unknown names are errors."""
    if not available:
        raise DeployError(f"tenant '{tenant}': the artifact carries no dataset contracts (spark_jobs/contracts/*.yaml)")
    chosen = _split(datasets) or list(available)
    for dataset in chosen:
        if dataset not in available:
            raise DeployError(f"tenant '{tenant}': --datasets: unknown dataset '{dataset}' (known: {', '.join(available)})")
    chosen_layers = _split(layers) or list(LAYERS)
    for layer in chosen_layers:
        if layer not in LAYERS:
            raise DeployError(f"tenant '{tenant}': --layers: unknown layer '{layer}' (known: {', '.join(LAYERS)})")
    return list(dict.fromkeys(chosen)), [layer for layer in LAYERS if layer in chosen_layers]


def _aws_error(exc: Exception) -> tuple[str, str]:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return str(error.get("Code", "")), str(error.get("Message", exc))
    return "", str(exc)


def check_virtual_cluster(emr, target: DeployTarget) -> dict:
    """The virtual cluster must exist and be RUNNING."""
    try:
        cluster = emr.describe_virtual_cluster(id=target.virtual_cluster_id)["virtualCluster"]
    except (ClientError, BotoCoreError) as exc:
        code, message = _aws_error(exc)
        if code in ("ResourceNotFoundException", "ValidationException"):
            raise DeployError(
                f"tenant '{target.tenant_id}': EMR virtual cluster '{target.virtual_cluster_id}' does not exist; "
                "re-apply the tenant (make apply TENANT=%s)" % target.tenant_id
            ) from exc
        raise DeployError(f"tenant '{target.tenant_id}': cannot describe EMR virtual cluster "
                          f"'{target.virtual_cluster_id}': {code or 'error'}: {message}") from exc
    if cluster.get("state") != "RUNNING":
        raise DeployError(
            f"tenant '{target.tenant_id}': EMR virtual cluster '{target.virtual_cluster_id}' is {cluster.get('state')}, "
            "not RUNNING; re-apply the tenant to recreate it"
        )
    return cluster


def check_role(iam, target: DeployTarget, arn: str = "", what: str = "job execution role",
               output: str = "job_execution_role_arn") -> dict:
    """The execution role (``arn``, default the job role) must exist with exactly that ARN and belong to
    the tenant (``tenant`` tag)."""
    arn = arn or target.role_arn
    if ":role/" not in arn:
        raise DeployError(f"tenant '{target.tenant_id}': {output} '{arn}' is not an IAM role ARN")
    name = arn.rsplit("/", 1)[-1]
    try:
        role = iam.get_role(RoleName=name)["Role"]
    except (ClientError, BotoCoreError) as exc:
        code, message = _aws_error(exc)
        if code == "NoSuchEntity":
            raise DeployError(f"tenant '{target.tenant_id}': {what} {arn} does not exist; "
                              "re-apply the tenant (make apply TENANT=%s)" % target.tenant_id) from exc
        raise DeployError(f"tenant '{target.tenant_id}': cannot read {what} {arn}: "
                          f"{code or 'error'}: {message}") from exc
    if role.get("Arn") != arn:
        raise DeployError(f"tenant '{target.tenant_id}': {what} {arn} does not exist "
                          f"(a role named '{name}' exists as {role.get('Arn')})")
    tags = role.get("Tags")
    if tags is None:  # GetRole omits tags on some partitions; ListRoleTags always has them
        tags = iam.list_role_tags(RoleName=name).get("Tags", [])
    owner = {t["Key"]: t["Value"] for t in tags}.get(ROLE_TENANT_TAG)
    # The tenant tag decides; an untagged role counts only when the tenant's naming prefix marks it.
    if owner != target.tenant_id and not (owner is None and name.startswith(f"{target.tenant_id}-")):
        found = f"tagged tenant={owner}" if owner else "has no tenant tag and no tenant name prefix"
        raise DeployError(f"tenant '{target.tenant_id}': {what} {arn} is not this tenant's role ({found})")
    return role


def check_bucket(s3, target: DeployTarget) -> None:
    try:
        s3.head_bucket(Bucket=target.bucket)
    except (ClientError, BotoCoreError) as exc:
        code, message = _aws_error(exc)
        raise DeployError(f"tenant '{target.tenant_id}': lake bucket '{target.bucket}' is not reachable "
                          f"({code or 'error'}: {message}); re-apply the tenant") from exc


def run_all_checks(clients, target: DeployTarget, erase: bool = False) -> None:
    """Bucket, virtual cluster, and the role the runs use: the job role, or with ``erase`` the erasure role."""
    check_bucket(clients("s3"), target)
    check_virtual_cluster(clients("emr-containers"), target)
    if erase:
        check_role(clients("iam"), target, target.erasure_role_arn, "erasure role", "erasure_role_arn")
    else:
        check_role(clients("iam"), target)
