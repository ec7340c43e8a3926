"""Run Terragrunt for a tenant (or all units), or a small documented fallback when it is not installed.

The command line behind the make targets (``python -m infra.terragrunt <command>``):

    python -m infra.terragrunt plan|apply|destroy|output|validate --tenant T [-- TERRAFORM ARGS]
    python -m infra.terragrunt plan|apply|destroy|output|validate --unit _platform/network
    python -m infra.terragrunt plan-all|apply-all|destroy-all [--parallelism N]
    python -m infra.terragrunt env            # the variables root.hcl reads, for a bare terragrunt run
    python -m infra.terragrunt force-unlock --tenant T --lock-id ID   # release the lock a killed run left

Every command first reads and validates every unit (the tenants with the rules of ``tenant_model``, the
platform units with those of ``infra.platform`` and ``infra.platform_lake_formation``, no two tenants colliding,
the dependency graph acyclic, the layout checks of ``infra.terragrunt.layout`` and
``infra.terragrunt.lake_formation``); a bad file stops it with one line and nothing runs.  In
the ``local`` environment it then starts or reuses the emulator, creates the state bucket and the fixture
VPCs of tenants that bring their own, and runs ``terragrunt`` when it is on PATH, else the fallback.
Units run after the units their ``dependency`` blocks name (``*-all``: in waves; ``destroy-all``: in
reverse); a local ``apply`` of one unit first applies its dependencies that are not applied or changed.  A
tenant's apply is refused where its account's Lake Formation settings still give new databases and tables to
``IAM_ALLOWED_PRINCIPALS`` (``infra.terragrunt.lake_formation``).
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

from infra import platform as platform_model
import tenant_model
from infra.terragrunt import freshness, graph, lake_formation, layout
from infra.terragrunt.adoption import ADOPT_FLAG_ENV, adoption_allowed
from infra.terragrunt.binary import real_terragrunt, terragrunt_binary
from infra.terragrunt.config import (UnitRun, check_no_collisions, load_tenant, load_unit, load_units,
                                     tenant_names, unit_names)
from infra.terragrunt.environment import (DEFAULT_TENANTS_DIR, REPO_ROOT, env_name, ensure_state_bucket, rel,
                                          run_env, static_env, work_dir)
from infra.terragrunt.errors import TerragruntError
from infra.terragrunt.fallback import fallback
from infra.terragrunt.fixture_network import ensure_network
from infra.terragrunt.outputs import LAKE_JSON, outputs, write_lake_json
from infra.terragrunt.terraform import Printer

DEFAULT_PARALLELISM = 2
COMMANDS = ("plan", "apply", "destroy", "output", "validate", "force-unlock")
ALL_COMMANDS = ("plan-all", "apply-all", "destroy-all")


def printer(prefix: str) -> Printer:
    lock = _PRINT_LOCK

    def echo(line: str) -> None:
        with lock:
            print(f"{prefix}{line}", flush=True)

    return echo


_PRINT_LOCK = threading.Lock()


def load_layout(tenants_dir: Path) -> list[UnitRun]:
    """Every unit, validated (dependencies' mock_outputs standing in), acyclic, and with a sound layout."""
    runs = load_units(tenants_dir)
    check_no_collisions(runs)
    graph.levels(runs)
    layout.check_layout(runs)
    lake_formation.check_layout(runs)
    return runs


def resolve(run: UnitRun, command: str, tenants_dir: Path, env: Mapping[str, str], by_name: Mapping[str, UnitRun],
            echo: Printer) -> UnitRun:
    """``run`` evaluated again with its dependencies' real outputs (read from their state), or their
    mock_outputs where the dependency is not applied and Terragrunt would allow them for ``command``."""
    if not run.dependencies:
        return run
    resolved = load_unit(run.name, tenants_dir, command,
                         outputs_of=lambda dep: layout.state_outputs(by_name[dep.unit], env))
    if resolved.mocked:
        echo(f"{run.name}: dependency {', '.join(resolved.mocked)} is not applied; {command} reads its mock_outputs")
    for dep in resolved.dependencies:
        network = by_name[dep.unit]
        if dep.name in resolved.mocked or network.kind != "network" or not run.is_tenant:
            continue
        served = (layout.state_outputs(network, env) or {}).get("tenants") or []
        if run.name not in served:
            raise TerragruntError(f"tenant '{run.name}': the applied shared network {network.name} does not serve it yet "
                                  f"(it serves: {', '.join(served) or 'none'}); apply it first: make apply UNIT={network.name}")
    return resolved


def run_unit(run: UnitRun, command: str, env: Mapping[str, str], extra: list[str], echo: Printer) -> int:
    """Run one command for one resolved unit whose environment is prepared."""
    binary = terragrunt_binary()
    if command == "apply" and run.is_tenant:
        lake_formation.check_default_permissions(run, env)  # no tenant where new tables would be IAM's alone
    imports = layout.endpoint_orphans(run, env) if command == "apply" and not binary and adoption_allowed() else []
    if command in ("plan", "apply"):
        layout.check_gateway_routes(run, env, adopting={i["id"] for i in imports})
    if command == "destroy" and not layout.is_applied(run, env):
        echo(f"unit '{run.name}': not applied (its state holds no resources); nothing to destroy")
        freshness.forget(run)
        (work_dir(run.name) / LAKE_JSON).unlink(missing_ok=True)
        return 0
    if binary:
        code = real_terragrunt(binary, run, command, env, extra, echo)
    else:
        code = fallback(run, command, env, extra, echo, imports)
    if command == "apply":
        if env_name() == "local":
            freshness.record_applied(run, env)
        stray = layout.untracked_endpoints(run, env)
        if stray:
            echo(f"unit '{run.name}': VPC endpoints in its VPCs, tagged as its own, that its state does not hold: "
                 f"{', '.join(stray)}; a create was carried out twice (a retried request, or a killed apply): "
                 "check and delete them (ec2 delete-vpc-endpoints)")
        if run.is_tenant:
            echo(f"wrote {write_lake_json(run.name)}")
    elif command == "force-unlock":
        echo(f"{'tenant' if run.is_tenant else 'unit'} '{run.name}': state lock {extra[0] if extra else '?'} released")
    elif command == "destroy":
        freshness.forget(run)
        (work_dir(run.name) / LAKE_JSON).unlink(missing_ok=True)
    return code


def prepare(runs: list[UnitRun], command: str, echo: Printer, tenants_dir: Path) -> tuple[list[UnitRun], dict[str, str]]:
    """Start/reuse the emulator, then evaluate the (already validated) unit files again in that environment;
    locally, create the state bucket and the fixture VPCs of tenants that bring their own."""
    env = run_env()
    os.environ.update(env)  # the fallback's get_env reads the process env, as terragrunt reads its own
    runs = [load_unit(run.name, tenants_dir) for run in runs]
    if env_name() == "local":
        for run in runs:
            ensure_state_bucket(run.backend_config, env)
        if command in ("plan", "apply"):
            for run in runs:
                if run.is_tenant and run.config.vpc_ids:
                    ensure_network(run, env, echo)
    return runs, env


def refuse_destroy_under_dependents(run: UnitRun, runs: list[UnitRun], env: Mapping[str, str]) -> None:
    by_name = {r.name: r for r in runs}
    applied = [name for name in graph.dependents(run.name, runs) if layout.is_applied(by_name[name], env)]
    if applied:
        raise TerragruntError(f"unit '{run.name}': {', '.join(applied)} still depend on it and are applied; destroy them "
                              "first (make destroy-all destroys every unit, dependents first)")


def cmd_single(name: str, command: str, tenants_dir: Path, extra: list[str], kind: str = "tenant") -> int:
    if kind == "tenant":
        load_tenant(name, tenants_dir)  # "unknown tenant ..." before anything else
    runs = load_layout(tenants_dir)
    by_name = {r.name: r for r in runs}
    if name not in by_name:
        raise TerragruntError(f"unknown unit {name!r} (units: {', '.join(unit_names(tenants_dir))})")
    run = by_name[name]
    if command == "validate":
        print(f"{'tenant' if run.is_tenant else 'unit'} '{name}': ok (state key {run.state_key}, "
              f"bucket {run.backend_config['bucket']})")
        return 0
    if command == "output":
        print(json.dumps(outputs(name, tenants_dir), indent=2, sort_keys=True))
        return 0
    echo = printer("")
    needed = [by_name[n] for n in graph.closure(name, runs)] if command == "apply" else []
    prepared, env = prepare([*needed, run], command, echo, tenants_dir)
    by_name.update({r.name: r for r in prepared})
    run = by_name[name]
    if command == "destroy" and not run.is_tenant:
        refuse_destroy_under_dependents(run, runs, env)
    for dep in needed:
        dep_run = resolve(by_name[dep.name], "apply", tenants_dir, env, by_name, printer(f"[{dep.name}] "))
        if env_name() != "local":
            if layout.state_outputs(dep_run, env) is None:
                raise TerragruntError(f"unit '{name}': its dependency {dep.name} is not applied; apply it first: "
                                      f"make apply UNIT={dep.name} (or make apply-all)")
            continue
        if freshness.is_up_to_date(dep_run, env):
            echo(f"dependency {dep.name} is up to date (applied by this emulator); skipped")
            continue
        echo(f"dependency {dep.name} is not applied here, or changed: applying it first")
        run_unit(dep_run, "apply", env, [], printer(f"[{dep.name}] "))
    run = resolve(run, command, tenants_dir, env, by_name, echo)
    return run_unit(run, command, env, extra, echo)


def cmd_all(command: str, tenants_dir: Path, parallelism: int, extra: list[str]) -> int:
    """plan-all / apply-all / destroy-all: every unit, in dependency waves (reversed for destroy)."""
    runs = load_layout(tenants_dir)
    if not runs:
        raise TerragruntError(f"no units under {rel(tenants_dir)}")
    runs, env = prepare(runs, command, printer("[network] "), tenants_dir)
    by_name = {r.name: r for r in runs}
    waves = graph.levels(runs)
    if command == "destroy":
        waves.reverse()
    blocked_by = ((lambda n: graph.dependents(n, runs)) if command == "destroy"
                  else (lambda n: graph.dependencies_of(by_name[n])))
    codes: dict[str, int | str] = {}
    failures: list[str] = []

    def one(run: UnitRun) -> int:
        echo = printer(f"[{run.name}] ")
        return run_unit(resolve(run, command, tenants_dir, env, by_name, echo), command, env, extra, echo)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, parallelism)) as pool:
        for wave in waves:
            futures = {}
            for run in wave:
                failed = [n for n in blocked_by(run.name) if codes.get(n) in ("failed", "skipped")]
                if failed:
                    codes[run.name] = "skipped"
                    failures.append(f"{run.name}: skipped: {'dependent' if command == 'destroy' else 'dependency'} "
                                    f"{', '.join(failed)} did not succeed")
                    continue
                futures[pool.submit(one, run)] = run
            for future in concurrent.futures.as_completed(futures):
                name = futures[future].name
                try:
                    codes[name] = future.result()
                except TerragruntError as exc:
                    codes[name] = "failed"
                    failures.append(f"{name}: {exc}")
    for line in failures:
        print(f"error: {line}", file=sys.stderr)
    print(f"{command} " + ", ".join(f"{name}={codes[name]}" for name in sorted(codes)))
    if failures:
        return 1
    return 2 if any(code == 2 for code in codes.values()) else 0


def synth_if_stale() -> int:
    """The before_hook: re-synthesize the modules when a source they are built from is newer than one of them."""
    from infra import synth

    built = [synth.BUILD_DIR / name / synth.MODULE_FILE for name in synth.MODULES]
    sources = [*REPO_ROOT.glob("modules/*.py"), *REPO_ROOT.glob("infra/*.py")]
    if os.environ.get("TENANTLAKE_MODULE_SOURCE"):
        return 0  # a module built elsewhere: not ours to rebuild
    newest = max(p.stat().st_mtime for p in sources)
    if all(b.is_file() and newest <= b.stat().st_mtime for b in built):
        return 0
    print("synth: a module is missing or older than its sources; re-synthesizing (python -m infra.synth)", flush=True)
    return subprocess.run([sys.executable, "-m", "infra.synth"], cwd=REPO_ROOT, timeout=600).returncode


CREDENTIAL_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


def print_env() -> int:
    """Print the variables root.hcl reads as ``export`` lines. Credentials only locally, where they are the
    emulator's dummy ones; never real credentials (in aws mode they stay in your environment or profile)."""
    env = run_env()
    local = env_name() == "local"
    keys = ["TENANTLAKE_ENV", "TENANTLAKE_STATE_ACCOUNT_ID", "TENANTLAKE_STATE_REGION", "TENANTLAKE_AWS_ENDPOINT",
            "AWS_CA_BUNDLE", "TF_CLI_CONFIG_FILE", *(CREDENTIAL_KEYS if local else ())]
    for key in keys:
        value = env.get(key)
        if value:
            print(f"export {key}={value}")
    if not local:
        print("# AWS credentials: not printed; terragrunt uses your environment or profile as it is")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        extra, argv = argv[argv.index("--") + 1:], argv[:argv.index("--")]
    parser = argparse.ArgumentParser(prog="python -m infra.terragrunt", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=[*COMMANDS, *ALL_COMMANDS, "env", "synth-if-stale"])
    parser.add_argument("--tenant", default=None, help="tenant directory name under tenants/")
    parser.add_argument("--unit", default=None, help="any unit, by its path under tenants/ (e.g. _platform/network)")
    parser.add_argument("--tenants-dir", default=str(DEFAULT_TENANTS_DIR), help="default: tenants/")
    parser.add_argument("--lock-id", default=None,
                        help="force-unlock: the lock ID a killed run left (printed by the run that found the lock)")
    parser.add_argument("--adopt-orphans", action="store_true",
                        help="TENANTLAKE_ENV=aws: adopt what a killed apply left (only resources tagged with the tenant); "
                             "local runs always adopt")
    parser.add_argument("--parallelism", type=int, default=DEFAULT_PARALLELISM,
                        help=f"units run at once by the *-all commands (default {DEFAULT_PARALLELISM})")
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
        if args.command in ALL_COMMANDS:
            return cmd_all(args.command.removesuffix("-all"), tenants_dir, args.parallelism, extra)
        if not args.tenant and not args.unit:
            known = ", ".join(tenant_names(tenants_dir))
            raise TerragruntError(f"{args.command} needs a tenant: make {args.command} TENANT=<{known}> "
                                  "(or a unit: UNIT=_platform/<name>)")
        if args.command == "force-unlock":
            if not args.lock_id:
                raise TerragruntError("force-unlock needs the lock ID: --lock-id <ID> (the locked run printed it)")
            extra = [args.lock_id]
        if args.unit:
            return cmd_single(args.unit.strip("/"), args.command, tenants_dir, extra, kind="unit")
        return cmd_single(args.tenant, args.command, tenants_dir, extra)
    except (TerragruntError, tenant_model.TenantConfigError, platform_model.PlatformConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, (tenant_model.TenantConfigError, platform_model.PlatformConfigError)) else 1
    except KeyboardInterrupt:
        return 130
