"""A tenant's Terraform outputs, and ``lake.json`` (the outputs plus, locally, the emulator's endpoint
and CA), which the pipeline (``spark_jobs --tenant``), the deploy and the tests read."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from infra.terragrunt.binary import terragrunt_binary
from infra.terragrunt.environment import DEFAULT_TENANTS_DIR, env_name, run_env, state_dir, work_dir
from infra.terragrunt.errors import TenantNotAppliedError, TerragruntError

LAKE_JSON = "lake.json"
OUTPUT_TIMEOUT_S = 300  # terraform output reads the state (S3): seconds, unless something hangs


def outputs(tenant_id: str, tenants_dir: Path | str = DEFAULT_TENANTS_DIR) -> dict[str, Any]:
    """The tenant's Terraform outputs (name -> value); ``TenantNotAppliedError`` when it has no state."""
    folder = work_dir(tenant_id)
    binary = terragrunt_binary()
    if not binary and not (folder / ".terraform").is_dir():
        raise TenantNotAppliedError(f"tenant '{tenant_id}' is not applied here (no {folder}); run make apply TENANT={tenant_id}")
    if env_name() == "local":
        from infra.local import emulator as emu

        state = emu.read_state(state_dir())
        if state is None or not emu.is_our_server(state):
            raise TenantNotAppliedError(f"tenant '{tenant_id}' is not applied here: no emulator runs for {state_dir()} "
                                        f"(its state went with it); run make apply TENANT={tenant_id}")
    env = run_env()
    if binary:
        env["TG_DOWNLOAD_DIR"] = env["TERRAGRUNT_DOWNLOAD"] = str(folder / ".terragrunt-cache")
        cmd, cwd = [binary, "output", "-json", "--non-interactive"], Path(tenants_dir) / tenant_id
    else:
        cmd, cwd = ["terraform", "output", "-json"], folder
    try:
        result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=OUTPUT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise TerragruntError(f"terraform output for tenant '{tenant_id}' did not finish within "
                              f"{OUTPUT_TIMEOUT_S:g} s") from None
    if result.returncode != 0:
        lines = [line.strip(" │╷╵") for line in result.stderr.splitlines() if "Error" in line] or ["no message"]
        raise TerragruntError(f"terraform output for tenant '{tenant_id}' failed: {lines[0]}")
    values = {name: item["value"] for name, item in json.loads(result.stdout or "{}").items()}
    if not values:
        raise TenantNotAppliedError(f"tenant '{tenant_id}' has no outputs (not applied, or destroyed); "
                                    f"run make apply TENANT={tenant_id}")
    return values


def write_lake_json(tenant_id: str) -> Path:
    values = outputs(tenant_id)
    if env_name() == "local":
        from infra.local import emulator as emu

        state = emu.read_state(state_dir())
        if state is not None:
            values.update(s3_endpoint=state.endpoint, ca_bundle=state.ca_bundle, truststore=state.truststore)
    path = work_dir(tenant_id) / LAKE_JSON
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(values, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
    return path


