"""Run Terragrunt for the tenants, or a small documented fallback when it is not installed.

One concern per module:

* ``hcl``: the HCL expression subset the fallback evaluates;
* ``config``: Terragrunt semantics (include, locals, inputs, terraform, remote_state, generate);
* ``environment``: paths, the ``local``/``aws`` switch, the process environment, the state bucket;
* ``terraform``: running terraform (streamed output, state-lock diagnosis, ``TF_VAR_*``, backend config);
* ``fallback``: the executor that does what Terragrunt would, with plain terraform;
* ``binary``: the real ``terragrunt`` binary, when it is on PATH;
* ``adoption``: adopting what a killed apply created but never recorded;
* ``fixture_network``: the local stand-in for a tenant's VPC;
* ``outputs``: a tenant's Terraform outputs and ``lake.json``;
* ``cli``: the commands behind ``make plan|apply|destroy|plan-all|apply-all`` (``python -m infra.terragrunt``).

The names below are the package's public API (other code imports them from ``infra.terragrunt``).
"""
from infra.terragrunt.config import TenantRun, check_no_collisions, load_all, load_tenant, tenant_names
from infra.terragrunt.environment import (LOCAL_ACCOUNT_ID, emulator_state, env_name, run_env, state_dir,
                                          static_env, work_dir)
from infra.terragrunt.errors import (StateLockedError, TenantNotAppliedError, TerraformFailed, TerragruntError,
                                     UnsupportedConstruct)
from infra.terragrunt.hcl import EvalContext, evaluate, interpolate
from infra.terragrunt.outputs import LAKE_JSON, outputs, write_lake_json

__all__ = [
    "EvalContext", "LAKE_JSON", "LOCAL_ACCOUNT_ID", "StateLockedError", "TenantNotAppliedError", "TenantRun",
    "TerraformFailed", "TerragruntError", "UnsupportedConstruct", "check_no_collisions", "emulator_state",
    "env_name", "evaluate", "interpolate", "load_all", "load_tenant", "outputs", "run_env", "state_dir",
    "static_env", "tenant_names", "work_dir", "write_lake_json",
]
