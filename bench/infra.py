"""Infrastructure benchmark (issue 8): synthesis, the checkov gate, and plan / plan-all against the emulator.

    .venv/bin/python -m bench.infra                                  # N = 1,5,20 tenants x parallelism 1,2
    .venv/bin/python -m bench.infra --tenants 1,2 --parallelism 1    # a quick check (a few minutes)

Every figure comes from this one run (this machine's timings vary by about +-30% between runs):

1. **Synth, cold and warm.** A fresh Python process imports the CDKTF AWS bindings and synthesizes the
   tenant module (``infra.synth.synthesize`` + ``render``, what ``make synth`` runs): cold = process start
   to the module text.  Then it synthesizes ``--synth-repeats`` more times in the same process: warm =
   their median.  The module it wrote is checked against the committed ``infra/build/tenant_lake``.
2. **checkov, cold and warm.** ``python -m policies.gate <module>`` (what ``make policy`` runs) twice:
   cold = first run (fresh processes, whatever caches the machine has), warm = the second.
3. **Plans.** A dedicated emulator (``infra.local.emulator.start`` in a scratch state dir, stopped by PID
   at the end) and ``max(N)`` synthetic tenants (valid per ``tenant_model/``: unique ids, a mix of
   regions and classifications, gdpr only in the EU, the fixture VPC ids) in a scratch tenants root under
   the ignored ``.local/`` (``get_repo_root()`` in ``tenants/root.hcl`` needs a git work tree).  Their
   fixture networks are created first (the runner's own ``ensure_network``; a row of its own), then
   ``make plan TENANT=bench-t01`` and ``make plan-all PARALLELISM=p`` for each N.  Every plan starts from
   empty tenant working dirs (``terraform init`` included), as on a fresh checkout; state lives in the
   emulator, so the runs do not affect each other.
4. **Synth once.** Every plan uses the module synthesized in step 1 (``TENANTLAKE_MODULE_SOURCE``, the
   documented override; identical to the committed module).  The evidence recorded per run: the module's
   sha256 and mtime before and after, how many tenant working dirs hold a byte-identical copy, how many
   times a synthesis ran (the before_hook prints a line when it re-synthesizes), and the marginal wall
   time per added tenant next to the synth time.

Writes ``bench/results/infra.json`` (``bench.common.write_result``: machine, git commit, timestamps) and
prints the table.  Raw logs of every command go to ``bench/results/raw/infra/`` (ignored by git).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterable

from bench.common import REPO_ROOT, RESULTS_DIR, PeakRss, utc_now, write_result
from infra.local import terraform_config

PYTHON = str(REPO_ROOT / ".venv" / "bin" / "python")
COMMITTED_MODULE = REPO_ROOT / "infra" / "build" / "tenant_lake" / "main.tf.json"
MODULE_FILE = "main.tf.json"
RAW_DIR = RESULTS_DIR / "raw" / "infra"
TENANT_PREFIX = "bench-t"
# (region, data_classification) cycled over the synthetic tenants: EU and non-EU, gdpr only in the EU.
TENANT_MIX: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("eu-west-1", ("gdpr",)),
    ("us-east-1", ("internal",)),
    ("eu-central-1", ("gdpr", "pii")),
    ("us-west-2", ("confidential",)),
    ("ap-southeast-2", ("internal", "public")),
)
RESYNTH_MARK = "re-synthesizing"          # printed by `infra.terragrunt synth-if-stale` when it synthesizes
NETWORK_SKIP_MARK = "is up to date (applied by this emulator); skipped"
PLAN_LINE_RE = re.compile(r"Plan: (\d+) to add, (\d+) to change, (\d+) to destroy")
PREFIX_RE = re.compile(r"^\[([a-z][a-z0-9-]*)\] ")
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
TERRAFORM_ENV = {"TF_CLI_CONFIG_FILE": terraform_config.cli_config(), "TF_IN_AUTOMATION": "1",
                 "AWS_EC2_METADATA_DISABLED": "true", "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}


# ---------------------------------------------------------------------------------------------------
# Synthetic tenants
# ---------------------------------------------------------------------------------------------------
def tenant_ids(count: int) -> list[str]:
    return [f"{TENANT_PREFIX}{i:02d}" for i in range(1, count + 1)]


def tenant_file(tenant_id: str, index: int) -> str:
    """A tenant file in the style of tenants/<t>/terragrunt.hcl: include root + inputs only."""
    from infra.local.network import fixture_ids

    region, classes = TENANT_MIX[index % len(TENANT_MIX)]
    return (f'include "root" {{\n  path = find_in_parent_folders("root.hcl")\n}}\n\n'
            f"inputs = {{\n"
            f'  tenant_id           = "{tenant_id}"\n'
            f'  region              = "{region}"\n'
            f"  data_classification = [{', '.join(json.dumps(c) for c in classes)}]\n"
            f'  account_id          = "123456789012"\n'
            f'  vpc_ids             = ["{fixture_ids.fixture_vpc_id(tenant_id)}"]\n'
            f'  tags = {{\n    owner    = "{tenant_id}-team"\n    workload = "bench"\n  }}\n'
            f"}}\n")


def write_tenants_root(folder: Path, count: int) -> Path:
    """``folder`` becomes a tenants root (the repo's root.hcl + ``count`` tenant dirs)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO_ROOT / "tenants" / "root.hcl", folder / "root.hcl")
    for index, tenant_id in enumerate(tenant_ids(count)):
        (folder / tenant_id).mkdir(exist_ok=True)
        (folder / tenant_id / "terragrunt.hcl").write_text(tenant_file(tenant_id, index))
    return folder


def validate_tenants_root(folder: Path) -> list[Any]:
    """Parse and validate every tenant the way the runner does (tenant_model rules + no collisions)."""
    from infra import terragrunt as tg

    saved = dict(os.environ)
    os.environ.update(tg.static_env())  # what the runner exports before it evaluates root.hcl
    try:
        return tg.load_all(folder)
    finally:
        os.environ.clear()
        os.environ.update(saved)


# ---------------------------------------------------------------------------------------------------
# Running commands with time-stamped output
# ---------------------------------------------------------------------------------------------------
def run_logged(cmd: list[str], env: dict[str, str], log: Path, cwd: Path = REPO_ROOT,
               timeout: float = 3600) -> dict[str, Any]:
    """Run ``cmd``; every output line is stamped with its time since start. Returns wall, code, lines, RSS.
    Past ``timeout`` seconds the command is killed (its code is then -9)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    lines: list[tuple[float, str]] = []
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, bufsize=1)
    assert proc.stdout is not None
    timer = threading.Timer(timeout, proc.kill)  # a hung step ends the bench with its log, not never
    timer.daemon = True
    timer.start()
    try:
        with PeakRss(pid=proc.pid, interval=0.5) as rss, open(log, "w") as out:
            for line in proc.stdout:
                stamp = time.monotonic() - started
                text = ANSI_RE.sub("", line.rstrip("\n"))
                lines.append((stamp, text))
                out.write(f"{stamp:8.2f} {text}\n")
            code = proc.wait()
    finally:
        timer.cancel()
    return {"wall_s": time.monotonic() - started, "code": code, "lines": lines,
            "peak_tree_mb": round(rss.peak_total_mb, 1)}


def clean_env(extra: dict[str, str]) -> dict[str, str]:
    """The process env for a child: no make flags of a parent `make bench` (-jN would set PARALLELISM)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    return {**env, **TERRAFORM_ENV, **extra}


def summarize_plan_output(lines: Iterable[tuple[float, str]], tenants: list[str]) -> dict[str, Any]:
    """What a plan / plan-all printed: phases, per-tenant spans, plans made, syntheses run, networks skipped.

    plan-all prefixes the fixture-network step with ``[network] `` and each tenant's lines with
    ``[<tenant>] ``; a single ``plan`` has no prefixes (then every line counts for its one tenant).
    """
    lines = list(lines)
    spans: dict[str, list[float]] = {}
    planned: dict[str, int] = {}
    first_tenant_line: float | None = None
    last_network_line = 0.0
    for stamp, text in lines:
        match = PREFIX_RE.match(text)
        owner = match.group(1) if match else (tenants[0] if len(tenants) == 1 else None)
        body = text[match.end():] if match else text
        if owner == "network":
            last_network_line = stamp
            continue
        if owner in tenants:
            if match and first_tenant_line is None:
                first_tenant_line = stamp
            span = spans.setdefault(owner, [stamp, stamp])
            span[1] = stamp
            plan = PLAN_LINE_RE.search(body)
            if plan:
                planned[owner] = int(plan.group(1))
    texts = [text for _, text in lines]
    return {
        "network_phase_s": round(first_tenant_line if first_tenant_line is not None else last_network_line, 2),
        "tenant_span_s": {t: round(b - a, 2) for t, (a, b) in sorted(spans.items())},
        "planned_tenants": len(planned),
        "resources_to_add": sorted(set(planned.values())),
        "synth_invocations": sum(RESYNTH_MARK in text for text in texts),
        "networks_skipped": sum(NETWORK_SKIP_MARK in text for text in texts),
    }


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def module_fingerprint(path: Path) -> dict[str, Any]:
    return {"sha256": sha256(path), "mtime_ns": path.stat().st_mtime_ns}


def work_dir_copies(state_dir: Path, tenants: list[str], module_sha: str) -> int:
    """How many of the tenants' working dirs hold a byte-identical copy of the one synthesized module."""
    return sum((state_dir / "tenants" / t / MODULE_FILE).is_file()
               and sha256(state_dir / "tenants" / t / MODULE_FILE) == module_sha for t in tenants)


# ---------------------------------------------------------------------------------------------------
# 1. Synth (cold / warm) and 2. checkov (cold / warm)
# ---------------------------------------------------------------------------------------------------
def synth_probe(out_dir: Path, repeats: int) -> int:
    """Child process: import the bindings, synthesize once (written to out_dir), then ``repeats`` more."""
    t_start = time.monotonic()
    from infra import synth
    import infra.app  # noqa: F401 - the CDKTF AWS bindings: the bulk of a cold synth

    t_imported = time.monotonic()
    text = synth.render(synth.synthesize())
    t_first = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / MODULE_FILE).write_text(text)
    warm, identical = [], True
    for _ in range(repeats):
        started = time.monotonic()
        identical = identical and synth.render(synth.synthesize()) == text
        warm.append(time.monotonic() - started)
    print(json.dumps({"t_start": t_start, "t_imported": t_imported, "t_first_synth": t_first, "warm_s": warm,
                      "identical": identical}))
    return 0


def bench_synth(module_dir: Path, repeats: int) -> dict[str, Any]:
    env = clean_env({})
    spawned = time.monotonic()  # CLOCK_MONOTONIC is system-wide on Linux: comparable with the child's stamps
    run = run_logged([PYTHON, "-m", "bench.infra", "--synth-probe", str(module_dir), "--synth-repeats", str(repeats)],
                     env, RAW_DIR / "synth.log")
    if run["code"] != 0:
        raise SystemExit(f"bench.infra: the synth probe failed (exit {run['code']}); see {RAW_DIR / 'synth.log'}")
    probe = json.loads(next(t for _, t in reversed(run["lines"]) if t.startswith("{")))
    text = (module_dir / MODULE_FILE).read_text()
    module = json.loads(text)
    return {
        "cold_s": probe["t_first_synth"] - spawned,
        "interpreter_start_s": probe["t_start"] - spawned,
        "import_bindings_s": probe["t_imported"] - probe["t_start"],
        "first_synth_s": probe["t_first_synth"] - probe["t_imported"],
        "warm_s": statistics.median(probe["warm_s"]),
        "warm_all_s": [round(x, 3) for x in probe["warm_s"]],
        "deterministic": probe["identical"],
        "peak_rss_mb": run["peak_tree_mb"],
        "resources": sum(len(v) for v in module.get("resource", {}).values()),
        "matches_committed_module": COMMITTED_MODULE.is_file() and COMMITTED_MODULE.read_text() == text,
    }


GATE_LINE_RE = re.compile(r"(\d+) passed, (\d+) failed, (\d+) skipped")


def bench_checkov(module_dir: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label in ("cold", "warm"):
        run = run_logged([PYTHON, "-m", "policies.gate", str(module_dir)], clean_env({}), RAW_DIR / f"checkov-{label}.log")
        counts = next((GATE_LINE_RE.search(t) for _, t in reversed(run["lines"]) if GATE_LINE_RE.search(t)), None)
        out[label] = {"wall_s": run["wall_s"], "exit": run["code"], "peak_rss_mb": run["peak_tree_mb"],
                      "passed_failed_skipped": [int(x) for x in counts.groups()] if counts else None}
    return out


# ---------------------------------------------------------------------------------------------------
# 3. Plans against a dedicated emulator
# ---------------------------------------------------------------------------------------------------
NETWORK_SNIPPET = """
import json, sys, time
from pathlib import Path
from infra import terragrunt as tg
from infra.terragrunt import cli
import os
os.environ.update(tg.static_env())
folder = Path(sys.argv[1])
runs = tg.load_all(folder)
started = time.monotonic()
cli.prepare(runs, "plan", cli.printer("[network] "), folder)
print(json.dumps({"seconds": time.monotonic() - started, "tenants": len(runs)}))
"""


def ensure_networks(tenants_root: Path, env: dict[str, str], label: str) -> dict[str, Any]:
    """The runner's own preparation for a plan (state bucket + fixture networks), timed in a child."""
    run = run_logged([PYTHON, "-c", NETWORK_SNIPPET, str(tenants_root)], env, RAW_DIR / f"{label}.log")
    if run["code"] != 0:
        raise SystemExit(f"bench.infra: {label} failed (exit {run['code']}); see {RAW_DIR / (label + '.log')}")
    texts = [t for _, t in run["lines"]]
    return {"wall_s": run["wall_s"], "prepare_s": json.loads(texts[-1])["seconds"],
            "created": sum("Apply complete! Resources: 8 added" in t for t in texts),
            "applied_unchanged": sum("Apply complete! Resources: 0 added, 0 changed" in t for t in texts),
            "skipped": sum(NETWORK_SKIP_MARK in t for t in texts)}


def make_plan(args: list[str], env: dict[str, str], tenants: list[str], log_name: str, state_dir: Path,
              module: Path, module_sha: str) -> dict[str, Any]:
    shutil.rmtree(state_dir / "tenants", ignore_errors=True)  # empty working dirs: init is part of every plan
    before = module_fingerprint(module)
    # -o: never (re)install the venv inside a measurement, even if requirements/ changed meanwhile.
    run = run_logged(["make", "-s", "-o", ".venv/.installed", *args], env, RAW_DIR / log_name)
    after = module_fingerprint(module)
    summary = summarize_plan_output(run["lines"], tenants)
    result = {"wall_s": run["wall_s"], "exit": run["code"], "peak_tree_mb": run["peak_tree_mb"], **summary,
              "module_unchanged": before == after, "work_dirs_with_identical_module": work_dir_copies(
                  state_dir, tenants, module_sha)}
    if run["code"] != 0 or summary["planned_tenants"] != len(tenants):
        tail = "\n".join(t for _, t in run["lines"][-15:])
        raise SystemExit(f"bench.infra: make {' '.join(args)} failed (exit {run['code']}, "
                         f"{summary['planned_tenants']}/{len(tenants)} planned); see {RAW_DIR / log_name}\n{tail}")
    return result


def bench_plans(workspace: Path, counts: list[int], parallelisms: list[int], module_dir: Path,
                module_sha: str) -> dict[str, Any]:
    from infra.local import emulator

    state_dir = workspace / "state"
    roots = {n: write_tenants_root(workspace / f"tenants-{n}", n) for n in sorted(set(counts) | {1})}
    largest = roots[max(roots)]
    configs = validate_tenants_root(largest)
    for n, root in roots.items():
        validate_tenants_root(root)
    mix = sorted({f"{c.config.region}:{'+'.join(c.config.data_classification)}" for c in configs})
    env = clean_env({"TENANTLAKE_STATE_DIR": str(state_dir), "TENANTLAKE_ENV": "local",
                     "TENANTLAKE_MODULE_SOURCE": str(module_dir)})
    module = module_dir / MODULE_FILE
    out: dict[str, Any] = {"tenant_mix": mix, "tenants_root": str(largest.relative_to(REPO_ROOT))}
    state, _ = emulator.start(state_dir)
    out["emulator_pid"] = state.pid
    try:
        out["network_create"] = ensure_networks(largest, env, "network-create")
        out["network_check"] = ensure_networks(largest, env, "network-check")
        # What the skip saves: one tenant's network applied again although nothing changed.
        from infra.terragrunt import fixture_network

        (state_dir / "network" / configs[0].config.vpc_ids[0] / fixture_network.NETWORK_MARKER).unlink(missing_ok=True)
        out["network_reapply_one"] = ensure_networks(roots[1], env, "network-reapply")
        one = tenant_ids(1)
        out["plan_one"] = make_plan(["plan", f"TENANT={one[0]}", f"TENANTS_DIR={roots[1]}"], env, one, "plan-one.log",
                                    state_dir, module, module_sha)
        print(f"  plan one tenant: {out['plan_one']['wall_s']:.1f}s", flush=True)
        runs = []
        for i, n in enumerate(sorted(counts)):
            # Alternate the order (1,2 then 2,1): a machine whose load drifts favours neither parallelism.
            for p in (parallelisms if i % 2 == 0 else list(reversed(parallelisms))):
                tenants = tenant_ids(n)
                result = make_plan(["plan-all", f"PARALLELISM={p}", f"TENANTS_DIR={roots[n]}"], env, tenants,
                                   f"plan-all-n{n}-p{p}.log", state_dir, module, module_sha)
                runs.append({"n_tenants": n, "parallelism": p, **result})
                print(f"  plan-all N={n} parallelism={p}: {result['wall_s']:.1f}s", flush=True)
        out["plan_all"] = runs
        out["provider_install"] = provider_install(state_dir)
    finally:
        out["emulator_stop"] = emulator.stop(state_dir)
    return out


def provider_install(state_dir: Path) -> dict[str, Any]:
    """Whether `terraform init` copied the ~600 MB AWS provider into a working dir or linked the mirror."""
    for folder in sorted((state_dir / "network").glob("*/.terraform/providers")):
        binaries = [p for p in folder.rglob("linux_amd64")]
        if binaries:
            link = binaries[0]
            size = sum(f.stat().st_size for f in folder.parent.rglob("*") if f.is_file() and not f.is_symlink())
            return {"linked_to_mirror": link.is_symlink(), "target": os.readlink(link) if link.is_symlink() else None,
                    "dot_terraform_own_bytes": size}
    return {"linked_to_mirror": None}


# ---------------------------------------------------------------------------------------------------
# Result rows
# ---------------------------------------------------------------------------------------------------
def _row(measure: str, wall: float, n: int | None = None, p: int | None = None, per_tenant: float | None = None,
         note: str = "", **extra: Any) -> dict[str, Any]:
    return {"measure": measure, "n_tenants": n, "parallelism": p, "wall_s": round(wall, 2),
            "per_tenant_s": None if per_tenant is None else round(per_tenant, 2), "note": note, **extra}


def build_rows(synth: dict[str, Any], checkov: dict[str, Any], plans: dict[str, Any] | None) -> list[dict[str, Any]]:
    rows = [
        _row("synth, cold (new process: import AWS bindings + synthesize)", synth["cold_s"],
             note=f"import {synth['import_bindings_s']:.1f}s, first synth {synth['first_synth_s']:.1f}s; "
                  f"once for any number of tenants"),
        _row("synth, warm (same process, again)", synth["warm_s"],
             note=f"median of {len(synth['warm_all_s'])}; {synth['resources']} resources"),
    ]
    for label in ("cold", "warm"):
        c = checkov[label]
        counts = c["passed_failed_skipped"]
        rows.append(_row(f"checkov gate, {label} (make policy)", c["wall_s"],
                         note=(f"{counts[0]} passed, {counts[1]} failed, {counts[2]} skipped" if counts else "no counts")
                         + f"; exit {c['exit']}"))
    if not plans:
        return rows
    create, check, reapply = plans["network_create"], plans["network_check"], plans["network_reapply_one"]
    n_max = create["created"] + create["applied_unchanged"] + create["skipped"]
    rows += [
        _row("fixture networks, create (local only)", create["prepare_s"], n_max, None, create["prepare_s"] / max(n_max, 1),
             note=f"{create['created']} created, one at a time; once per tenant per emulator"),
        _row("fixture networks, check unchanged (skip)", check["prepare_s"], n_max, None, check["prepare_s"] / max(n_max, 1),
             note=f"{check['skipped']} skipped: what every plan-all does before planning"),
        _row("fixture network, re-apply unchanged (what the skip saves)", reapply["prepare_s"], 1, None,
             reapply["prepare_s"], note=f"{reapply['applied_unchanged']} no-op terraform apply"),
    ]
    one = plans["plan_one"]
    rows.append(_row("plan one tenant (make plan)", one["wall_s"], 1, None, one["wall_s"],
                     note=f"{'/'.join(map(str, one['resources_to_add']))} resources to add; "
                          f"synths run: {one['synth_invocations']}"))
    by_key = {(r["n_tenants"], r["parallelism"]): r for r in plans["plan_all"]}
    for (n, p), r in sorted(by_key.items()):
        rows.append(_row("plan-all (make plan-all)", r["wall_s"], n, p, r["wall_s"] / n,
                         note=f"networks checked {r['network_phase_s']:.1f}s; synths run: {r['synth_invocations']}; "
                              f"module copies identical: {r['work_dirs_with_identical_module']}/{n}",
                         synth_invocations=r["synth_invocations"]))
    counts = sorted({n for n, _ in by_key})
    if len(counts) >= 2:
        lo, hi = counts[-2], counts[-1]
        for p in sorted({p for _, p in by_key}):
            if (lo, p) in by_key and (hi, p) in by_key:
                marginal = (by_key[(hi, p)]["wall_s"] - by_key[(lo, p)]["wall_s"]) / (hi - lo)
                rows.append(_row(f"plan-all, marginal per added tenant (N {lo} -> {hi})", marginal * (hi - lo), hi, p,
                                 marginal, note=f"init + plan of one more tenant, no synthesis (synth step: "
                                                f"{synth['cold_s']:.1f}s once, for every N)"))
    return rows


def synth_once_evidence(synth: dict[str, Any], plans: dict[str, Any] | None, module_before: dict[str, Any],
                        module_after: dict[str, Any]) -> dict[str, Any]:
    runs = ([plans["plan_one"], *plans["plan_all"]] if plans else [])
    return {
        "module_synthesized_in_this_run": 1,
        "module_sha256": module_before["sha256"],
        "module_matches_committed": synth["matches_committed_module"],
        "module_unchanged_across_all_plans": module_before == module_after and all(r["module_unchanged"] for r in runs),
        "synth_invocations_during_plans": sum(r["synth_invocations"] for r in runs),
        "tenant_plans": sum(r["planned_tenants"] for r in runs),
        "work_dirs_with_identical_module": sum(r["work_dirs_with_identical_module"] for r in runs),
        "synth_cold_s": round(synth["cold_s"], 2),
        "per_run": [{"n_tenants": r.get("n_tenants", 1), "parallelism": r.get("parallelism"),
                     "synth_invocations": r["synth_invocations"], "planned": r["planned_tenants"],
                     "identical_module_copies": r["work_dirs_with_identical_module"],
                     "module_unchanged": r["module_unchanged"]} for r in runs],
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    header = f"{'measure':<62} {'N':>3} {'p':>2} {'wall s':>8} {'s/tenant':>9}  note"
    print(header)
    print("-" * len(header))
    for r in rows:
        n = "" if r["n_tenants"] is None else str(r["n_tenants"])
        p = "" if r["parallelism"] is None else str(r["parallelism"])
        per = "" if r["per_tenant_s"] is None else f"{r['per_tenant_s']:.2f}"
        print(f"{r['measure']:<62} {n:>3} {p:>2} {r['wall_s']:>8.2f} {per:>9}  {r['note']}")


def _int_list(text: str) -> list[int]:
    values = [int(x) for x in text.split(",") if x.strip()]
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: give positive integers separated by commas, e.g. 1,5,20")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.infra", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tenants", type=_int_list, default=[1, 5, 20], help="tenant counts N for plan-all (default 1,5,20)")
    parser.add_argument("--parallelism", type=_int_list, default=[1, 2], help="plan-all parallelism values (default 1,2)")
    parser.add_argument("--synth-repeats", type=int, default=3, help="warm syntheses in the probe process (default 3)")
    parser.add_argument("--skip-plans", action="store_true", help="synth and checkov only (no emulator, no terraform)")
    parser.add_argument("--out", default="infra", help="result name: bench/results/<out>.json (default infra)")
    parser.add_argument("--synth-probe", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.synth_probe:
        return synth_probe(args.synth_probe, args.synth_repeats)

    started_at, load_start, t0 = utc_now(), [round(x, 2) for x in os.getloadavg()], time.monotonic()
    shutil.rmtree(RAW_DIR, ignore_errors=True)
    (REPO_ROOT / ".local").mkdir(exist_ok=True)
    # Under the repo's ignored .local/: root.hcl's get_repo_root() needs a git work tree.
    workspace = Path(tempfile.mkdtemp(prefix="bench-infra-", dir=REPO_ROOT / ".local"))
    try:
        module_dir = workspace / "module"
        print("synth (cold, then warm) ...", flush=True)
        synth = bench_synth(module_dir, args.synth_repeats)
        module_before = module_fingerprint(module_dir / MODULE_FILE)
        print(f"  cold {synth['cold_s']:.1f}s, warm {synth['warm_s']:.2f}s", flush=True)
        print("checkov gate (cold, then warm) ...", flush=True)
        checkov = bench_checkov(module_dir)
        plans = None
        if not args.skip_plans:
            print(f"plans: N = {args.tenants}, parallelism = {args.parallelism} ...", flush=True)
            plans = bench_plans(workspace, args.tenants, args.parallelism, module_dir, module_before["sha256"])
        module_after = module_fingerprint(module_dir / MODULE_FILE)
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    rows = build_rows(synth, checkov, plans)
    evidence = synth_once_evidence(synth, plans, module_before, module_after)
    runtime = time.monotonic() - t0
    notes = [
        "One run; timings on this machine vary about ±30% between runs, so compare within the table. "
        f"Load average (1, 5, 15 min) at start {load_start}, at end {[round(x, 2) for x in os.getloadavg()]}: "
        "other jobs shared the 2 cores.",
        f"Synth once: the module was synthesized once in this run and every plan used it; "
        f"{evidence['tenant_plans']} tenant plans ran {evidence['synth_invocations_during_plans']} syntheses, "
        f"{evidence['work_dirs_with_identical_module']} working dirs held a byte-identical copy, the module file "
        f"({evidence['module_sha256'][:12]}, {'same as' if evidence['module_matches_committed'] else 'DIFFERENT from'} "
        f"the committed one) was {'never' if evidence['module_unchanged_across_all_plans'] else 'CHANGED'} rewritten.",
        "Each plan starts from empty tenant working dirs (terraform init included); the AWS provider is "
        "symlinked from the mirror, not copied." if plans and plans["provider_install"].get("linked_to_mirror")
        else "Provider install: see evidence.",
        f"Whole benchmark: {runtime / 60:.1f} min.",
    ]
    payload = {"runtime_s": round(runtime, 1), "load_average_start": load_start,
               "load_average_end": [round(x, 2) for x in os.getloadavg()],
               "parameters": {"tenants": args.tenants, "parallelism": args.parallelism,
                              "synth_repeats": args.synth_repeats, "skip_plans": args.skip_plans},
               "rows": rows, "notes": notes, "synth_once": evidence,
               "synth": synth, "checkov": checkov, "plans": plans}
    path = write_result(args.out, payload, started_at=started_at)
    print()
    print_table(rows)
    print()
    for note in notes:
        print(f"- {note}")
    print(f"\nwrote {path.relative_to(REPO_ROOT)} ({runtime / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
