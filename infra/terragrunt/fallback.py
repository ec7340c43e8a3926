"""The fallback executor: what Terragrunt does for one unit and command, with plain terraform.

It copies the module source into the unit's working directory ``$TENANTLAKE_STATE_DIR/tenants/<unit>/``,
writes the ``generate`` files and ``backend.tf``, runs the ``before_hook``s, runs ``terraform init`` with
the ``remote_state`` config as ``-backend-config=backend.hcl``, and ``plan``/``apply``/``destroy`` with the
inputs as ``TF_VAR_*``.  After an apply that failed on resources a killed run left behind, it adopts them
(``infra.terragrunt.adoption``) and applies again.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Mapping

from infra.terragrunt.adoption import ADOPTION_ROUNDS, IMPORTS_FILE, adopt_orphans, untracked_leftovers
from infra.terragrunt.config import TenantRun, check_local_source
from infra.terragrunt.environment import work_dir
from infra.terragrunt.errors import TerraformFailed, TerragruntError
from infra.terragrunt.terraform import LOCK_TIMEOUT, Printer, backend_hcl, stream, terraform, tf_vars


def module_dir(source: str) -> Path:
    check_local_source(source, None)
    folder = Path(source.replace("//", "/"))
    if not (folder.is_dir() and any(folder.glob("*.tf*"))):
        raise TerragruntError(f"terraform.source {source}: no Terraform module there (run `make synth`)")
    return folder


def prepare_work_dir(run: TenantRun) -> Path:
    """Copy the module into the tenant's working dir and write the generated files (no terraform yet)."""
    folder = work_dir(run.name)
    folder.mkdir(parents=True, exist_ok=True)
    module = module_dir(run.source)
    for old in folder.glob("*.tf*"):
        if old.is_file() and old.suffix in (".tf", ".json"):
            old.unlink()
    for item in module.iterdir():
        if item.is_file() and (item.suffix == ".tf" or item.name.endswith(".tf.json")):
            shutil.copy2(item, folder / item.name)
    for gen in (*run.generate, *((run.backend_file,) if run.backend_file else ())):
        (folder / gen.path).write_text(gen.contents)
    (folder / "backend.hcl").write_text(backend_hcl(run.backend_config))
    return folder


def run_hooks(run: TenantRun, command: str, env: Mapping[str, str], echo: Printer) -> None:
    for hook in run.before_hooks:
        if command in hook.commands:
            # Terragrunt runs hooks in the module's working dir unless the hook names one.
            work_dir(run.name).mkdir(parents=True, exist_ok=True)
            code = stream(list(hook.execute), Path(hook.working_dir or work_dir(run.name)), env, echo)
            if code != 0:
                raise TerragruntError(f"before_hook {hook.name} failed with exit code {code}")


def fallback(run: TenantRun, command: str, env: Mapping[str, str], extra: list[str], echo: Printer,
             imports: list[dict[str, str]] = ()) -> int:
    """What terragrunt would do for ``command`` on this unit, with plain terraform.  ``imports``: Terraform
    import blocks (``to``, ``id``) of the unit's own resources to adopt before an apply."""
    env = {**env, **tf_vars(run.inputs)}
    run_hooks(run, "init", env, echo)
    folder = prepare_work_dir(run)
    if imports and command == "apply":
        (folder / IMPORTS_FILE).write_text(json.dumps({"import": list(imports)}, indent=2) + "\n")
        echo(f"unit '{run.name}': adopting {len(imports)} resource(s) an interrupted apply created but never "
             f"recorded: {', '.join(i['to'] for i in imports)}")
    terraform(["init", "-input=false", "-reconfigure", "-backend-config=backend.hcl"], folder, env, echo, "init")
    if command != "init":
        run_hooks(run, command, env, echo)
    lock = [f"-lock-timeout={LOCK_TIMEOUT}"]
    if command == "plan":
        return terraform(["plan", "-input=false", *lock, *extra], folder, env, echo, "plan",
                          ok_codes=(0, 2) if "-detailed-exitcode" in extra else (0,), tenant=run.name)
    if command in ("apply", "destroy"):
        args = [command, "-input=false", "-auto-approve", *lock, *extra]
        adopted = len(imports) if command == "apply" else 0
        for attempt in range(ADOPTION_ROUNDS + 1):
            try:
                code = terraform(args, folder, env, echo, command, tenant=run.name)
            except TerraformFailed as failed:
                if command != "apply" or attempt == ADOPTION_ROUNDS or not run.is_tenant:
                    raise
                # An adopted resource can reveal the next one (a security group, then its rule): repeat.
                found = adopt_orphans(run, folder, failed.output, env, echo)
                if not found:
                    raise
                adopted += found
                continue
            if adopted:
                leftovers = untracked_leftovers(run, env)
                if leftovers:
                    echo(f"tenant '{run.name}': left behind by the interrupted apply and not tracked (no unique name "
                         f"to adopt): {', '.join(leftovers)}; check and delete them (ec2 delete-vpc-endpoints, "
                         "kms schedule-key-deletion)")
            return code
        raise AssertionError("unreachable: every round returns or raises")
    if command == "force-unlock":
        return terraform(["force-unlock", "-force", *extra], folder, env, echo, "force-unlock", tenant=run.name)
    raise TerragruntError(f"unknown command {command}")

