"""infra/terragrunt/graph.py: units run after their dependencies, are destroyed before them, and a cycle
is refused in one line."""
from __future__ import annotations

import dataclasses

import pytest

from infra import terragrunt as tg
from infra.terragrunt import graph
from infra.terragrunt.config import Dependency
from tests.infra.terragrunt.conftest import TENANTS


def _layout():
    return tg.config.load_units(TENANTS)


LF_WEST, LF_CENTRAL = "_platform/lake-formation-eu-west-1", "_platform/lake-formation-eu-central-1"


def test_the_sample_layout_applies_the_platform_units_first():
    waves = [[r.name for r in wave] for wave in graph.levels(_layout())]
    assert waves == [[LF_CENTRAL, LF_WEST, "_platform/network"], ["acme", "globex", "initech"]]
    assert graph.closure("acme", _layout()) == [LF_WEST, "_platform/network"]
    assert graph.closure("initech", _layout()) == [LF_CENTRAL]
    assert graph.dependents("_platform/network", _layout()) == ["acme", "globex"]
    assert graph.dependents(LF_WEST, _layout()) == ["acme", "globex"]


def test_a_chain_orders_every_level_and_the_closure_is_in_apply_order():
    runs = {r.name: r for r in _layout()}
    # initech -> acme -> network: three waves; acme's closure is the network, initech's both, dependencies first.
    runs["initech"] = dataclasses.replace(runs["initech"], dependencies=(
        Dependency("lake", "acme", TENANTS / "acme"),))
    waves = [[r.name for r in wave] for wave in graph.levels(runs.values())]
    assert waves == [[LF_CENTRAL, LF_WEST, "_platform/network"], ["acme", "globex"], ["initech"]]
    assert graph.closure("initech", runs.values()) == [LF_WEST, "_platform/network", "acme"]


def test_a_cycle_is_refused_in_one_line():
    runs = {r.name: r for r in _layout()}
    runs["_platform/network"] = dataclasses.replace(runs["_platform/network"], dependencies=(
        Dependency("back", "acme", TENANTS / "acme"),))
    with pytest.raises(tg.TerragruntError) as err:
        graph.levels(runs.values())
    assert str(err.value).startswith("dependency cycle: _platform/network -> acme -> _platform/network;")
