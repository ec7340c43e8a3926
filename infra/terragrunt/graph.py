"""The order units run in: a unit after the units its ``dependency`` blocks point at (``plan-all``,
``apply-all``), and destroyed before them (``destroy-all``), as ``terragrunt run --all`` orders a stack."""
from __future__ import annotations

from typing import Iterable

from infra.terragrunt.config import UnitRun
from infra.terragrunt.errors import TerragruntError


def dependencies_of(run: UnitRun) -> list[str]:
    return sorted({d.unit for d in run.dependencies})


def levels(runs: Iterable[UnitRun]) -> list[list[UnitRun]]:
    """The units in waves: each wave depends only on earlier ones (sorted by name within a wave).

    A dependency on a unit that is not among ``runs`` is not waited for (it is not part of this run).
    A cycle is a one-line error naming it."""
    by_name = {r.name: r for r in runs}
    _check_acyclic(by_name)
    placed: dict[str, int] = {}

    def depth(name: str) -> int:
        if name not in placed:
            deps = [d for d in dependencies_of(by_name[name]) if d in by_name]
            placed[name] = 1 + max((depth(d) for d in deps), default=-1)
        return placed[name]

    waves: dict[int, list[UnitRun]] = {}
    for name in sorted(by_name):
        waves.setdefault(depth(name), []).append(by_name[name])
    return [waves[i] for i in sorted(waves)]


def closure(name: str, runs: Iterable[UnitRun]) -> list[str]:
    """``name``'s dependencies, transitively, in the order they must be applied (``name`` not included)."""
    by_name = {r.name: r for r in runs}
    _check_acyclic(by_name)
    order: list[str] = []

    def visit(unit: str) -> None:
        for dep in dependencies_of(by_name[unit]) if unit in by_name else []:
            if dep not in order:
                visit(dep)
                order.append(dep)

    visit(name)
    return order


def dependents(name: str, runs: Iterable[UnitRun]) -> list[str]:
    """The units that depend on ``name`` directly."""
    return sorted(r.name for r in runs if name in dependencies_of(r))


def _check_acyclic(by_name: dict[str, UnitRun]) -> None:
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == "done" or name not in by_name:
            return
        if state.get(name) == "visiting":
            cycle = path[path.index(name):] + [name]
            raise TerragruntError(f"dependency cycle: {' -> '.join(cycle)}; a unit cannot depend on itself, directly "
                                  "or through others")
        state[name] = "visiting"
        for dep in dependencies_of(by_name[name]):
            visit(dep, [*path, name])
        state[name] = "done"

    for name in sorted(by_name):
        visit(name, [])
