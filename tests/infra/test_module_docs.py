"""infra/module_docs.py: modules/README.md's generated inputs/outputs tables match the synthesized modules."""
from __future__ import annotations

import copy
import json
import shutil

from infra import module_docs
from tests.conftest import REPO_ROOT


def test_the_readme_tables_match_the_synthesized_modules():
    text = module_docs.README.read_text()
    modules = [m["module"] for m in module_docs.BLOCK_RE.finditer(text)]
    assert "tenant_lake" in modules
    assert sorted(modules) == sorted({p.parent.name for p in module_docs.BUILD_DIR.glob("*/main.tf.json")}), \
        "every synthesized module has a block in modules/README.md, and every block a module"
    assert module_docs.main(["--check"]) == 0


def test_a_changed_variable_or_output_makes_the_tables_stale(tmp_path):
    build = tmp_path / "build"
    shutil.copytree(module_docs.BUILD_DIR, build)
    module = json.loads((build / "tenant_lake" / "main.tf.json").read_text())
    text = module_docs.README.read_text()
    assert module_docs.update(text, build)[1] == []

    changed = copy.deepcopy(module)
    changed["variable"]["owner_email"] = {"type": "string", "description": "Who to call."}
    del changed["output"][next(iter(changed["output"]))]
    (build / "tenant_lake" / "main.tf.json").write_text(json.dumps(changed))
    new, stale = module_docs.update(text, build)
    assert stale == ["tenant_lake"]
    assert "| `owner_email` | `string` | required | Who to call. |" in new


def test_every_variable_and_output_is_in_the_table():
    module = module_docs.load_module("tenant_lake")
    table = module_docs.render(module)
    for name in [*module["variable"], *module["output"]]:
        assert f"| `{name}` |" in table
    assert (REPO_ROOT / "modules" / "README.md").read_text().count("<!-- BEGIN module-docs tenant_lake -->") == 1
