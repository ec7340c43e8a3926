"""Run IAM policy simulations with ``@cloud-copilot/iam-simulate`` (node), one process per batch.

The simulator is an npm package pinned in ``policies/simulator/package.json`` (+ the committed
``package-lock.json``) and installed by ``make setup`` into ``policies/simulator/node_modules/``
(ignored by git). It is AGPL-3.0-or-later: a test-time tool that is installed, never vendored or
shipped with the platform. ``simulate.mjs`` reads ``{"simulations": [{"id", "simulation"}]}`` on
stdin and prints one JSON document with a result per simulation. It completes one gap of iam-simulate
0.1.173: KMS encryption-context condition keys (``kms:EncryptionContext:aws:s3:arn``), which its request
validation drops, are put back, and so are an IAM OIDC provider's own keys (``<issuer>:sub``, ``:aud``)
for ``sts:AssumeRoleWithWebIdentity`` from that provider (see the script's header;
``completed_context_keys`` names them).
"""
from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path
from typing import Iterable

SIMULATOR_DIR = Path(__file__).resolve().parent / "simulator"
SCRIPT = SIMULATOR_DIR / "simulate.mjs"
PACKAGE = "@cloud-copilot/iam-simulate"
PINNED_VERSION = json.loads((SIMULATOR_DIR / "package.json").read_text())["dependencies"][PACKAGE]
DEFAULT_TIMEOUT = 300.0


class SimulatorError(RuntimeError):
    """The simulator is missing, failed, or rejected a request; ``str(err)`` says which and what to do."""


@dataclasses.dataclass(frozen=True)
class Decisive:
    """A statement (or a policy type without an Allow) that decided a request."""

    policy_type: str  # identity, resource, vpce, scp, rcp, pb
    effect: str  # Allow, Deny, or NoAllow (an implicit deny: this policy type granted nothing)
    sid: str = ""
    policy: str = ""

    def label(self) -> str:
        where = self.policy_type + (f" {self.policy}" if self.policy else "")
        if self.effect == "NoAllow":
            return f"{where}: no Allow"
        return f"{where}: {self.effect} {self.sid or '(statement without Sid)'}"


@dataclasses.dataclass(frozen=True)
class SimulationResult:
    id: str
    result: str  # Allowed, ExplicitlyDenied, ImplicitlyDenied
    decisive: tuple[Decisive, ...]
    ignored_context_keys: tuple[str, ...] = ()
    # Keys iam-simulate 0.1.173 drops but simulate.mjs put back (``kms:EncryptionContext:<key>``,
    # ``<oidc issuer>:sub``/``:aud``).
    completed_context_keys: tuple[str, ...] = ()

    def sids(self, effect: str) -> list[str]:
        return [d.sid for d in self.decisive if d.effect == effect and d.sid]

    def decisive_label(self) -> str:
        return "; ".join(d.label() for d in self.decisive) or "-"


def installed_version() -> str:
    """The installed simulator's version; raise ``SimulatorError`` if it is not installed."""
    package_json = SIMULATOR_DIR / "node_modules" / "@cloud-copilot" / "iam-simulate" / "package.json"
    if not package_json.is_file():
        raise SimulatorError(f"the IAM policy simulator ({PACKAGE}) is not installed in "
                             f"{SIMULATOR_DIR.relative_to(SIMULATOR_DIR.parents[1])}/node_modules: run `make setup`")
    return json.loads(package_json.read_text())["version"]


def run(simulations: Iterable[tuple[str, dict]], timeout: float = DEFAULT_TIMEOUT) -> list[SimulationResult]:
    """Evaluate ``(id, simulation)`` pairs in one node process; results in the same order.

    Raises ``SimulatorError`` if node or the package is missing, the process fails or times out, or the
    simulator rejects a request (the error names the id and iam-simulate's message).
    """
    batch = [{"id": sid, "simulation": simulation} for sid, simulation in simulations]
    version = installed_version()
    if version != PINNED_VERSION:
        raise SimulatorError(f"{PACKAGE} {version} is installed but {PINNED_VERSION} is pinned: run `make setup`")
    node = shutil.which("node")
    if node is None:
        raise SimulatorError("node is not on PATH (Node.js 20 runs the IAM policy simulator)")
    try:
        proc = subprocess.run([node, str(SCRIPT)], input=json.dumps({"simulations": batch}), cwd=SIMULATOR_DIR,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise SimulatorError(f"the simulator did not finish {len(batch)} simulations in {timeout:.0f} s") from exc
    if proc.returncode != 0:
        raise SimulatorError(f"the simulator exited {proc.returncode}: {proc.stderr.strip()[-800:]}")
    results = json.loads(proc.stdout)["results"]
    out = []
    for item in results:
        if item["result"] == "Error":
            raise SimulatorError(f"the simulator rejected {item['id']}: "
                                 f"{json.dumps(item['errors'], sort_keys=True)[:800]}")
        out.append(SimulationResult(
            id=item["id"], result=item["result"],
            decisive=tuple(Decisive(policy_type=d["policyType"], effect=d["effect"], sid=d.get("sid") or "",
                                    policy=d.get("policy") or "") for d in item["decisive"]),
            ignored_context_keys=tuple(item.get("ignoredContextKeys") or ()),
            completed_context_keys=tuple(item.get("completedContextKeys") or ())))
    if [r.id for r in out] != [b["id"] for b in batch]:
        raise SimulatorError("the simulator returned results out of order or incomplete")
    return out


def run_one(simulation: dict, timeout: float = DEFAULT_TIMEOUT) -> SimulationResult:
    return run([("request", simulation)], timeout=timeout)[0]
