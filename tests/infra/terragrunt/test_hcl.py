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
    ('${dependency.vpc.inputs.region}', "reference `dependency.vpc.inputs.region`"),
    ('${include.root.locals.env}', "reference `include.root.locals.env`"),
    ('${[for v in local.a : v]}', "expression"),
    ('${local.a + 1}', "expression"),
    ('%{ if true }x%{ endif }', "template directives"),
])
def test_unsupported_expressions_are_refused(expression, refused):
    with pytest.raises(UnsupportedConstruct, match=refused.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[")):
        hcl.interpolate(expression, _ctx({"a": "x", "b": "y"}))


def test_dependency_outputs_are_read_by_name_and_key():
    ctx = _ctx()
    ctx.dependency_outputs = {"network": {"gateway_endpoint_ids": {"vpc-1": "vpce-1"}, "region": "eu-west-1"}}
    assert hcl.interpolate("${dependency.network.outputs.gateway_endpoint_ids}", ctx) == {"vpc-1": "vpce-1"}
    assert hcl.interpolate("${dependency.network.outputs}", ctx)["region"] == "eu-west-1"
    assert hcl.interpolate("in ${dependency.network.outputs.region}", ctx) == "in eu-west-1"
    with pytest.raises(TerragruntError, match=r"dependency.network.outputs has no 'vpc_ids' \(it has: "
                                              r"gateway_endpoint_ids, region\)"):
        hcl.interpolate("${dependency.network.outputs.vpc_ids}", ctx)
    with pytest.raises(TerragruntError, match="no dependency 'vpc' is declared in this file"):
        hcl.interpolate("${dependency.vpc.outputs.id}", ctx)
