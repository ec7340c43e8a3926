"""The local fixture network: a stand-in for a tenant's VPC in the emulator (``TENANTLAKE_ENV=local`` only).

Before a tenant's first plan or apply, the runner applies ``infra/local/network/`` (Terraform, state key
``network/<vpc id>/terraform.tfstate`` in the state bucket) for each of the tenant's ``vpc_ids``.  An
unchanged network that this emulator applied is skipped (``applied.json``).
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any, Mapping

from infra.terragrunt.config import TenantRun
from infra.terragrunt.environment import DEFAULT_STATE_REGION, REPO_ROOT, state_dir
from infra.terragrunt.environment import boto_client as _boto_client
from infra.terragrunt.terraform import LOCK_TIMEOUT, Printer, backend_hcl, terraform, tf_vars

NETWORK_DIR = REPO_ROOT / "infra" / "local" / "network"


def ensure_network(run: TenantRun, env: Mapping[str, str], echo: Printer) -> None:
    """Create the tenant's fixture VPC(s) in the emulator, with the exact ids the tenant file lists."""
    for vpc_id in run.config.vpc_ids:
        folder = state_dir() / "network" / vpc_id
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(NETWORK_DIR / "main.tf", folder / "main.tf")
        backend = {**run.backend_config, "key": f"network/{vpc_id}/terraform.tfstate"}
        (folder / "backend.hcl").write_text(backend_hcl(backend))
        variables = tf_vars({
            "tenant_id": run.config.tenant_id, "region": run.config.region, "vpc_id": vpc_id,
            "endpoint": env["TENANTLAKE_AWS_ENDPOINT"], "ca_bundle": env["AWS_CA_BUNDLE"]})
        tf_env = {**env, **variables}
        fingerprint = _network_fingerprint(variables)
        if _network_up_to_date(folder, fingerprint, run.config.region, vpc_id, backend, env):
            echo(f"fixture network of {run.name}: {vpc_id} is up to date (applied by this emulator); skipped")
            continue
        (folder / NETWORK_MARKER).unlink(missing_ok=True)
        terraform(["init", "-input=false", "-reconfigure", "-backend-config=backend.hcl"], folder, tf_env, echo,
                  "init (fixture network)")
        terraform(["apply", "-input=false", "-auto-approve", f"-lock-timeout={LOCK_TIMEOUT}"], folder, tf_env, echo,
                  "apply (fixture network)")
        marker = {**fingerprint, "state_etag": _state_etag(backend, env)}
        (folder / NETWORK_MARKER).write_text(json.dumps(marker, indent=2, sort_keys=True) + "\n")


# An unchanged fixture network is not applied again: a no-op `terraform apply` costs ~25 s per tenant
# (provider start-up, refresh), run one tenant at a time, which dominated `make plan-all` for many tenants.
NETWORK_MARKER = "applied.json"  # in $TENANTLAKE_STATE_DIR/network/<vpc id>/, written after a successful apply


def _network_fingerprint(variables: Mapping[str, str]) -> dict[str, Any]:
    """What an applied fixture network depends on: the emulator process holding it, its config and its inputs."""
    from infra.local import emulator as emu

    state = emu.read_state(state_dir())
    return {"emulator": [state.pid, state.started_at] if state else None,
            "config_sha256": hashlib.sha256((NETWORK_DIR / "main.tf").read_bytes()).hexdigest(),
            "inputs": dict(sorted(variables.items()))}


def _state_etag(backend: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    s3 = _boto_client("s3", backend.get("region", DEFAULT_STATE_REGION), env)
    try:
        return s3.head_object(Bucket=backend["bucket"], Key=backend["key"])["ETag"]
    except s3.exceptions.ClientError:
        return None


def _network_up_to_date(folder: Path, fingerprint: Mapping[str, Any], region: str, vpc_id: str,
                        backend: Mapping[str, Any], env: Mapping[str, str]) -> bool:
    """True when this emulator applied this network config with these inputs, nothing rewrote its state
    since, and the VPC still exists (a moto reset or a hand-deleted VPC means apply again)."""
    try:
        marker = json.loads((folder / NETWORK_MARKER).read_text())
    except (OSError, ValueError):
        return False
    if fingerprint["emulator"] is None or {k: marker.get(k) for k in fingerprint} != dict(fingerprint):
        return False
    if marker.get("state_etag") is None or _state_etag(backend, env) != marker["state_etag"]:
        return False
    ec2 = _boto_client("ec2", region, env)
    try:
        return [v["VpcId"] for v in ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"]] == [vpc_id]
    except ec2.exceptions.ClientError:
        return False


