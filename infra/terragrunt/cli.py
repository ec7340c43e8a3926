"""Run Terragrunt for a tenant (or all of them), or a small documented fallback when it is not installed.

The command line behind the make targets (``python -m infra.terragrunt <command>``):

    python -m infra.terragrunt plan|apply|destroy|output|validate --tenant T [-- TERRAFORM ARGS]
    python -m infra.terragrunt plan-all|apply-all [--parallelism N]
    python -m infra.terragrunt env            # the variables root.hcl reads, for a bare terragrunt run
    python -m infra.terragrunt force-unlock --tenant T --lock-id ID   # release the lock a killed run left

Every command first validates the tenant file(s) with the rules of ``infra.tenant`` (and that no two
tenants collide); a bad file stops it with one line and nothing runs.  In the ``local`` environment it
then starts or reuses the emulator, creates the state bucket and the tenant's fixture network, and runs
``terragrunt`` when it is on PATH, else the fallback.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Mapping

from infra import tenant as tenant_model
from infra.terragrunt.adoption import ADOPT_FLAG_ENV
from infra.terragrunt.binary import real_terragrunt, terragrunt_binary
from infra.terragrunt.config import TenantRun, check_no_collisions, load_all, load_tenant, tenant_names
from infra.terragrunt.environment import (DEFAULT_TENANTS_DIR, REPO_ROOT, env_name, ensure_state_bucket, rel,
                                          run_env, static_env, work_dir)
from infra.terragrunt.errors import TerragruntError
from infra.terragrunt.fallback import fallback
from infra.terragrunt.fixture_network import ensure_network
from infra.terragrunt.outputs import LAKE_JSON, outputs, write_lake_json
from infra.terragrunt.terraform import Printer

DEFAULT_PARALLELISM = 2
COMMANDS = ("plan", "apply", "destroy", "output", "validate", "force-unlock")


def printer(prefix: str) -> Printer:
    lock = _PRINT_LOCK

    def echo(line: str) -> None:
        with lock:
            print(f"{prefix}{line}", flush=True)

    return echo


_PRINT_LOCK = threading.Lock()


def run_tenant(run: TenantRun, command: str, env: Mapping[str, str], extra: list[str], echo: Printer) -> int:
    """Run one command for one already-validated tenant whose environment is prepared."""
    binary = terragrunt_binary()
    if binary:
        code = real_terragrunt(binary, run, command, env, extra, echo)
    else:
        code = fallback(run, command, env, extra, echo)
    if command == "apply":
        echo(f"wrote {write_lake_json(run.name)}")
    elif command == "force-unlock":
        echo(f"tenant '{run.name}': state lock {extra[0] if extra else '?'} released")
    elif command == "destroy":
        (work_dir(run.name) / LAKE_JSON).unlink(missing_ok=True)
    return code


def prepare(runs: list[TenantRun], command: str, echo: Printer, tenants_dir: Path) -> tuple[list[TenantRun], dict[str, str]]:
    """Start/reuse the emulator, then evaluate the (already validated) tenant files again in that environment."""
    env = run_env()
    os.environ.update(env)  # the fallback's get_env reads the process env, as terragrunt reads its own
    runs = [load_tenant(run.name, tenants_dir) for run in runs]
    if env_name() == "local":
        for run in runs:
            ensure_state_bucket(run.backend_config, env)
        if command in ("plan", "apply"):
            for run in runs:
                ensure_network(run, env, echo)
    return runs, env


def cmd_single(tenant_id: str, command: str, tenants_dir: Path, extra: list[str]) -> int:
    run = load_tenant(tenant_id, tenants_dir)
    others = [load_tenant(n, tenants_dir) for n in tenant_names(tenants_dir) if n != tenant_id]
    check_no_collisions([run, *others])
    if command == "validate":
        print(f"tenant '{tenant_id}': ok (state key {run.state_key}, bucket {run.backend_config['bucket']})")
        return 0
    if command == "output":
        print(json.dumps(outputs(tenant_id, tenants_dir), indent=2, sort_keys=True))
        return 0
    echo = printer("")
    (run,), env = prepare([run], command, echo, tenants_dir)
    return run_tenant(run, command, env, extra, echo)


def cmd_all(command: str, tenants_dir: Path, parallelism: int, extra: list[str]) -> int:
    runs = load_all(tenants_dir)
    if not runs:
        raise TerragruntError(f"no tenants under {rel(tenants_dir)}")
    runs, env = prepare(runs, command, printer("[network] "), tenants_dir)
    failures: list[str] = []
    codes: dict[str, int] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, parallelism)) as pool:
        futures = {pool.submit(run_tenant, run, command, env, extra, printer(f"[{run.name}] ")): run for run in runs}
        for future in concurrent.futures.as_completed(futures):
            name = futures[future].name
            try:
                codes[name] = future.result()
            except TerragruntError as exc:
                failures.append(f"{name}: {exc}")
    for line in failures:
        print(f"error: {line}", file=sys.stderr)
    summary = ", ".join(f"{name}={'failed' if name not in codes else codes[name]}" for name in sorted(r.name for r in runs))
    print(f"{command} {summary}")
    if failures:
        return 1
    return 2 if any(code == 2 for code in codes.values()) else 0


def synth_if_stale() -> int:
    """The before_hook: re-synthesize the module when a source it is built from is newer than it."""
    built = REPO_ROOT / "infra" / "build" / "tenant_lake" / "main.tf.json"
    sources = [*REPO_ROOT.glob("modules/*.py"), *REPO_ROOT.glob("infra/*.py")]
    if os.environ.get("TENANTLAKE_MODULE_SOURCE"):
        return 0  # a module built elsewhere: not ours to rebuild
    if built.is_file() and all(p.stat().st_mtime <= built.stat().st_mtime for p in sources):
        return 0
    print("synth: the tenant module is missing or older than its sources; re-synthesizing (python -m infra.synth)", flush=True)
    return subprocess.run([sys.executable, "-m", "infra.synth"], cwd=REPO_ROOT).returncode


def print_env() -> int:
    env = run_env()
    for key in ("TENANTLAKE_ENV", "TENANTLAKE_STATE_ACCOUNT_ID", "TENANTLAKE_STATE_REGION", "TENANTLAKE_AWS_ENDPOINT",
                "AWS_CA_BUNDLE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "TF_CLI_CONFIG_FILE"):
        value = env.get(key)
        if value:
            print(f"export {key}={value}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        extra, argv = argv[argv.index("--") + 1:], argv[:argv.index("--")]
    parser = argparse.ArgumentParser(prog="python -m infra.terragrunt", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=[*COMMANDS, "plan-all", "apply-all", "env", "synth-if-stale"])
    parser.add_argument("--tenant", default=None, help="tenant directory name under tenants/")
    parser.add_argument("--tenants-dir", default=str(DEFAULT_TENANTS_DIR), help="default: tenants/")
    parser.add_argument("--lock-id", default=None,
                        help="force-unlock: the lock ID a killed run left (printed by the run that found the lock)")
    parser.add_argument("--adopt-orphans", action="store_true",
                        help="TENANTLAKE_ENV=aws: adopt what a killed apply left (only resources tagged with the tenant); "
                             "local runs always adopt")
    parser.add_argument("--parallelism", type=int, default=DEFAULT_PARALLELISM,
                        help=f"tenants run at once by plan-all/apply-all (default {DEFAULT_PARALLELISM})")
    args = parser.parse_args(argv)
    tenants_dir = Path(args.tenants_dir)
    if args.adopt_orphans:
        os.environ[ADOPT_FLAG_ENV] = "1"
    try:
        os.environ.update(static_env())
        if args.command == "synth-if-stale":
            return synth_if_stale()
        if args.command == "env":
            return print_env()
        if args.command in ("plan-all", "apply-all"):
            return cmd_all(args.command.removesuffix("-all"), tenants_dir, args.parallelism, extra)
        if not args.tenant:
            known = ", ".join(tenant_names(tenants_dir))
            raise TerragruntError(f"{args.command} needs a tenant: make {args.command} TENANT=<{known}>")
        if args.command == "force-unlock":
            if not args.lock_id:
                raise TerragruntError("force-unlock needs the lock ID: --lock-id <ID> (the locked run printed it)")
            extra = [args.lock_id]
        return cmd_single(args.tenant, args.command, tenants_dir, extra)
    except (TerragruntError, tenant_model.TenantConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, tenant_model.TenantConfigError) else 1
    except KeyboardInterrupt:
        return 130
