"""Inputs and outputs tables of the synthesized Terraform modules, generated into modules/README.md.

Each module under ``infra/build/<module>/main.tf.json`` gets a block in ``modules/README.md`` between
``<!-- BEGIN module-docs <module> -->`` and ``<!-- END module-docs <module> -->``: one table of its
variables (name, type, default or "required", description) and one of its outputs (name, description),
read from the synthesized JSON, so the tables say what ``terraform`` reads.

``python -m infra.module_docs`` rewrites the blocks (``make synth`` runs it); ``--check`` changes
nothing and exits 1 with one line per stale block (``tests/infra/test_module_docs.py`` runs it).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
BUILD_DIR = REPO_ROOT / "infra" / "build"
README = REPO_ROOT / "modules" / "README.md"
BLOCK_RE = re.compile(r"(<!-- BEGIN module-docs (?P<module>[a-z_]+) -->\n)(?P<body>.*?)(<!-- END module-docs (?P=module) -->)",
                      re.S)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def _default(variable: dict[str, Any]) -> str:
    if "default" not in variable:
        return "required"
    value = variable["default"]
    if isinstance(value, str) and value in ("[]", "{}"):
        return f"`{value}`"
    return f"`{json.dumps(value)}`"


def render(module_json: dict[str, Any]) -> str:
    """The markdown of one module's inputs and outputs tables."""
    lines = ["| input | type | default | description |", "|---|---|---|---|"]
    for name, variable in sorted(module_json.get("variable", {}).items()):
        rules = len(variable.get("validation", []))
        checked = f" ({rules} validation rule{'s' if rules != 1 else ''})" if rules else ""
        lines.append(f"| `{name}` | `{_cell(variable.get('type', 'any'))}` | {_cell(_default(variable))} | "
                     f"{_cell(variable.get('description', ''))}{checked} |")
    lines += ["", "| output | description |", "|---|---|"]
    for name, output in sorted(module_json.get("output", {}).items()):
        lines.append(f"| `{name}` | {_cell(output.get('description', ''))} |")
    return "\n".join(lines) + "\n"


def load_module(module: str, build_dir: Path = BUILD_DIR) -> dict[str, Any]:
    path = Path(build_dir) / module / "main.tf.json"
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise SystemExit(f"module-docs: {path} not readable ({exc.strerror}); run `make synth` first") from exc


def update(text: str, build_dir: Path = BUILD_DIR) -> tuple[str, list[str]]:
    """``(new text, stale modules)``: every block re-rendered from its module."""
    stale: list[str] = []

    def replace(match: re.Match) -> str:
        body = render(load_module(match["module"], build_dir))
        if body != match["body"]:
            stale.append(match["module"])
        return match.group(1) + body + match.group(4)

    return BLOCK_RE.sub(replace, text), stale


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = README.read_text()
    if not BLOCK_RE.search(text):
        print(f"module-docs: no `<!-- BEGIN module-docs <module> -->` block in {README}", file=sys.stderr)
        return 1
    new, stale = update(text)
    if "--check" in args:
        for module in stale:
            print(f"module-docs: the {module} tables in {README.relative_to(REPO_ROOT)} differ from "
                  f"infra/build/{module}/main.tf.json; run `python -m infra.module_docs`", file=sys.stderr)
        return 1 if stale else 0
    if stale:
        README.write_text(new)
    print(f"module-docs: {', '.join(stale) or 'nothing'} updated in {README.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
