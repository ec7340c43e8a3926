"""Synthesize the tenant-lake module ONCE into ``infra/build/tenant_lake/main.tf.json``.

``python -m infra.synth`` (``make synth``) writes the module; ``--check`` exits 1 if the file on disk
differs from a fresh synthesis (stale).  The output is deterministic (sorted keys, no absolute paths):
CDKTF's provider block and its local backend (an absolute path) are stripped, because Terragrunt
generates ``provider.tf`` and ``backend.tf`` next to the module, and so is the top-level metadata.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
MODULE_DIR = REPO_ROOT / "infra" / "build" / "tenant_lake"
MODULE_FILE = "main.tf.json"


def synthesize() -> dict:
    """The module as a dict (imports the AWS bindings: ~18 s the first time in a process)."""
    from infra.app import STACK_NAME, build

    with tempfile.TemporaryDirectory(prefix="tenantlake-synth-") as outdir:
        build(outdir).synth()
        stack = json.loads((Path(outdir) / "stacks" / STACK_NAME / "cdk.tf.json").read_text())
    return strip(stack)


def strip(stack: dict) -> dict:
    """Drop what a reusable module must not carry: provider, backend, CDKTF's stack metadata."""
    module = {k: v for k, v in stack.items() if k not in ("provider", "//")}
    module["terraform"] = {k: v for k, v in module["terraform"].items() if k != "backend"}
    return module


def render(module: dict) -> str:
    return json.dumps(module, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.synth", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=MODULE_DIR, help=f"module directory (default: {MODULE_DIR})")
    parser.add_argument("--check", action="store_true", help="exit 1 if the module on disk is stale; write nothing")
    args = parser.parse_args(argv)
    text = render(synthesize())
    target = args.out / MODULE_FILE
    if args.check:
        current = target.read_text() if target.exists() else ""
        if current != text:
            print(f"synth: {target} is stale; run `make synth` and commit it", file=sys.stderr)
            return 1
        print(f"synth: {target} is up to date")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    module = json.loads(text)
    count = sum(len(v) for v in module.get("resource", {}).values())
    print(f"synth: wrote {target.relative_to(REPO_ROOT) if target.is_relative_to(REPO_ROOT) else target} "
          f"({count} resources, {len(module.get('variable', {}))} variables, {len(module.get('output', {}))} outputs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
