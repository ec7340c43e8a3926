"""infra/terragrunt/hcl.py: the expression subset the configs use, and a one-line refusal of the rest."""
from __future__ import annotations

from pathlib import Path

import pytest

from infra.terragrunt import hcl
from infra.terragrunt.errors import TerragruntError, UnsupportedConstruct
from tests.infra.terragrunt.conftest import REPO, TENANTS


def _ctx(locals_: dict | None = None, child: Path = TENANTS / "acme" / "terragrunt.hcl", include_dir=TENANTS):
    return hcl.EvalContext(child, child, include_dir, locals_ or {})


def test_expressions_the_configs_use(monkeypatch):
    monkeypatch.setenv("TG_TEST_VAR", "set")
    ctx = _ctx({"env": '${get_env("TG_TEST_MISSING", "local")}', "is_local": '${local.env == "local"}'})
    assert hcl.interpolate('${local.is_local ? "a" : "b"}', ctx) == "a"
    assert hcl.interpolate('${local.env != "local"}', ctx) is False
    assert hcl.interpolate('x-${get_env("TG_TEST_VAR")}-${path_relative_to_include()}', ctx) == "x-set-acme"
    assert hcl.interpolate('${find_in_parent_folders("root.hcl")}', ctx) == str(TENANTS / "root.hcl")
    assert hcl.interpolate("${get_repo_root()}", ctx) == str(REPO)
    assert hcl.interpolate("<<-EOT\n    a = \"${local.env}\"\n      b\n  EOT", ctx) == 'a = "local"\n  b\n'
    assert hcl.interpolate("$${literal}", ctx) == "${literal}"


def test_get_env_without_default_fails_when_unset():
    with pytest.raises(TerragruntError, match="TG_TEST_MISSING is not set"):
        hcl.interpolate('${get_env("TG_TEST_MISSING")}', _ctx())


@pytest.mark.parametrize("expression, refused", [
    ('${merge(local.a, local.b)}', "function merge()"),
    ('${get_aws_account_id()}', "function get_aws_account_id()"),
    ('${dependency.vpc.outputs.id}', "reference `dependency.vpc.outputs.id`"),
    ('${include.root.locals.env}', "reference `include.root.locals.env`"),
    ('${[for v in local.a : v]}', "expression"),
    ('${local.a + 1}', "expression"),
    ('%{ if true }x%{ endif }', "template directives"),
])
def test_unsupported_expressions_are_refused(expression, refused):
    with pytest.raises(UnsupportedConstruct, match=refused.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[")):
        hcl.interpolate(expression, _ctx({"a": "x", "b": "y"}))
