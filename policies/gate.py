"""The checkov gate: built-in AWS checks + tenantlake's custom checks, zero failures allowed.

``python -m policies.gate [DIR ...]`` (``make policy``) scans Terraform JSON (default: the synthesized
tenant module) with ``.venv-checkov/bin/checkov --framework terraform_json --skip-download
--external-checks-dir policies/checks`` and exits 1 on any failed check.

checkov 3.3's ``terraform_json`` runner ignores inline skip comments, so the gate applies them: a
failed check is accepted as skipped only when the failing resource's ``"//"`` comment block says
``{"checkov": {"skip": {"<check id>": "<reason>"}}}`` (written by ``modules.skips.skip_check``), and
the whole scan may use at most ``MAX_SKIPS`` of them.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CHECKS_DIR = REPO_ROOT / "policies" / "checks"
DEFAULT_TARGET = REPO_ROOT / "infra" / "build" / "tenant_lake"
MAX_SKIPS = 3


class GateError(RuntimeError):
    """checkov could not run or its output could not be read."""


def checkov_bin() -> Path:
    venv_bin = os.environ.get("CHECKOV_VENV_BIN") or str(REPO_ROOT / ".venv-checkov" / "bin")
    return Path(venv_bin) / "checkov"


@dataclasses.dataclass(frozen=True)
class Finding:
    check_id: str
    resource: str
    file: str
    reason: str = ""

    def line(self) -> str:
        suffix = f" ({self.reason})" if self.reason else ""
        return f"{self.check_id} {self.resource} {self.file}{suffix}"


@dataclasses.dataclass
class GateResult:
    passed: int
    failed: list[Finding]
    skipped: list[Finding]
    passed_checks: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (check id, resource)

    @property
    def ok(self) -> bool:
        return not self.failed and len(self.skipped) <= MAX_SKIPS


def run_checkov(directory: Path, framework: str = "terraform_json", checks: list[str] | None = None,
                external: bool = True) -> list[dict]:
    """Raw checkov JSON reports (one per framework) for ``directory``."""
    cmd = [str(checkov_bin()), "-d", str(directory), "--framework", framework, "--skip-download",
           "--compact", "-o", "json"]
    if external:
        cmd += ["--external-checks-dir", str(CHECKS_DIR)]
    if checks:
        cmd += ["--check", ",".join(checks)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "BC_SKIP_MAPPING": "TRUE", "CHECKOV_RUN_SCA_PACKAGE_SCAN_V2": "false",
                               # the custom checks import the stdlib-only tenant_model package from the repo
                               "PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p)})
    out = proc.stdout.strip()
    if not out:
        raise GateError(f"checkov printed nothing (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    try:
        data = json.loads(out)
    except ValueError as exc:
        raise GateError(f"checkov output is not JSON ({exc}): {out[:300]}") from exc
    reports = data if isinstance(data, list) else [data]
    # An empty scan prints a summary dict without "results".
    return [r for r in reports if isinstance(r, dict)]


def declared_skips(directory: Path) -> dict[str, dict[str, str]]:
    """Resource name -> {check id: reason}, from the ``"//"`` blocks of every *.tf.json in ``directory``."""
    skips: dict[str, dict[str, str]] = {}
    for path in sorted(directory.glob("*.tf.json")):
        module = json.loads(path.read_text())
        for kind in ("resource", "data"):
            for _type, blocks in module.get(kind, {}).items():
                for name, body in blocks.items():
                    reasons = ((body.get("//") or {}).get("checkov") or {}).get("skip") or {}
                    if reasons:
                        skips[name] = dict(reasons)
    return skips


def evaluate(directory: Path, reports: list[dict]) -> GateResult:
    skips = declared_skips(directory)
    passed, failed, skipped, passed_checks = 0, [], [], []
    for report in reports:
        results = report.get("results") or {}
        passed += len(results.get("passed_checks") or [])
        passed_checks += [(rec.get("check_id", "?"), rec.get("resource", "?")) for rec in results.get("passed_checks") or []]
        for rec in results.get("failed_checks") or []:
            name = str(rec.get("resource", "")).split(".")[-1]
            reason = skips.get(name, {}).get(rec.get("check_id", ""))
            finding = Finding(rec.get("check_id", "?"), rec.get("resource", "?"), rec.get("file_path", "?"),
                              reason or "")
            (skipped if reason else failed).append(finding)
    return GateResult(passed, failed, skipped, passed_checks)


def gate(directory: Path = DEFAULT_TARGET) -> GateResult:
    return evaluate(directory, run_checkov(directory))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m policies.gate", description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="*", type=Path, default=[DEFAULT_TARGET])
    args = parser.parse_args(argv)
    ok = True
    for directory in args.dirs:
        if not directory.is_dir():
            print(f"policy: {directory} is not a directory (run `make synth` first?)", file=sys.stderr)
            return 2
        try:
            result = gate(directory)
        except GateError as exc:
            print(f"policy: {exc}", file=sys.stderr)
            return 2
        for f in result.skipped:
            print(f"policy: skipped {f.line()}")
        for f in result.failed:
            print(f"policy: FAILED {f.line()}")
        verdict = "ok" if result.ok else "FAILED"
        print(f"policy: {directory}: {verdict}: {result.passed} passed, {len(result.failed)} failed, "
              f"{len(result.skipped)} skipped (max {MAX_SKIPS})")
        if len(result.skipped) > MAX_SKIPS:
            print(f"policy: too many skips: {len(result.skipped)} > {MAX_SKIPS}", file=sys.stderr)
        ok = ok and result.ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
