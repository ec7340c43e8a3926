"""Synthesize the Terraform modules ONCE: the tenant lake into ``infra/build/tenant_lake/main.tf.json``, the
platform network (a shared cluster's VPC endpoints) into ``infra/build/platform_network/main.tf.json`` and the
platform Lake Formation settings (one account and region) into ``infra/build/platform_lake_formation/main.tf.json``.

``python -m infra.synth`` (``make synth``) writes all three; ``--check`` exits 1 if a file on disk differs
from a fresh synthesis (stale).  The output is deterministic (sorted keys, no absolute paths):
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
BUILD_DIR = REPO_ROOT / "infra" / "build"
MODULE_DIR = BUILD_DIR / "tenant_lake"
MODULE_FILE = "main.tf.json"
MODULES = ("tenant_lake", "platform_network", "platform_lake_formation")  # stack name = directory under infra/build/


def synthesize(name: str = "tenant_lake") -> dict:
    """The module ``name`` as a dict (imports the AWS bindings: ~18 s the first time in a process)."""
    if name == "tenant_lake":
        from infra.app import STACK_NAME, build
    elif name == "platform_network":
        from infra.platform_app import STACK_NAME, build
    elif name == "platform_lake_formation":
        from infra.platform_lake_formation_app import STACK_NAME, build
    else:
        raise ValueError(f"unknown module {name!r} (known: {', '.join(MODULES)})")
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
    parser.add_argument("--out", type=Path, default=BUILD_DIR,
                        help=f"build directory; each module goes to <out>/<module>/ (default: {BUILD_DIR})")
    parser.add_argument("--module", choices=MODULES, action="append",
                        help="synthesize only this module (repeatable; default: all)")
    parser.add_argument("--check", action="store_true", help="exit 1 if a module on disk is stale; write nothing")
    args = parser.parse_args(argv)
    stale = 0
    for name in args.module or MODULES:
        text = render(synthesize(name))
        folder = args.out / name
        target = folder / MODULE_FILE
        shown = target.relative_to(REPO_ROOT) if target.is_relative_to(REPO_ROOT) else target
        if args.check:
            current = target.read_text() if target.exists() else ""
            if current != text:
                print(f"synth: {target} is stale; run `make synth` and commit it", file=sys.stderr)
                stale = 1
            else:
                print(f"synth: {target} is up to date")
            continue
        folder.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        module = json.loads(text)
        count = sum(len(v) for v in module.get("resource", {}).values())
        print(f"synth: wrote {shown} ({count} resources, {len(module.get('variable', {}))} variables, "
              f"{len(module.get('output', {}))} outputs)")
    return stale


if __name__ == "__main__":
    sys.exit(main())
