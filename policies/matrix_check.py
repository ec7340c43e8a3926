"""Evaluate every cell of the access matrix against applied tenants, and say which failed and why.

``check(matrix, builder)`` builds each cell's request (``policies.matrix_requests``), evaluates them
all in one simulator run (``policies.simulate``), and returns one ``Outcome`` per cell. A cell fails
when the decision differs from ``expect``, or when ``because`` names a statement that is not among
the decisive ones. ``Outcome.report()`` is one line with the principal, action, key, context,
expected and got decisions, and the decisive statements. ``readable`` asks the same of many object keys at once
(which objects of a lake a principal may get: tests/policies/test_access_matrix.py scans the consumer's).
"""
from __future__ import annotations

import dataclasses
import json

from policies import simulate
from policies.access_matrix import Cell, Matrix
from policies.matrix_requests import RequestBuilder


@dataclasses.dataclass(frozen=True)
class Outcome:
    cell: Cell
    request: dict
    result: simulate.SimulationResult

    @property
    def decision_ok(self) -> bool:
        return self.result.result == self.cell.expect

    @property
    def because_ok(self) -> bool:
        if not self.cell.because:
            return True
        effect = "Deny" if self.cell.expect == "ExplicitlyDenied" else "Allow"
        return self.cell.because in self.result.sids(effect)

    @property
    def ok(self) -> bool:
        return self.decision_ok and self.because_ok

    def report(self) -> str:
        request = self.request["request"]
        principal = request["principal"]
        principal = principal if isinstance(principal, str) else "anonymous"
        context = json.dumps(request["contextVariables"], sort_keys=True)
        expected = self.cell.expect + (f" by {self.cell.because}" if self.cell.because else "")
        return (f"{self.cell.id}: principal {self.cell.principal} ({principal}), action {request['action']}, "
                f"resource {request['resource']['resource']}, context {context}: expected {expected}, "
                f"got {self.result.result} (decisive: {self.result.decisive_label()})")


def check(matrix: Matrix, builder: RequestBuilder, timeout: float = simulate.DEFAULT_TIMEOUT) -> list[Outcome]:
    """One ``Outcome`` per cell, in file order (one node process for the whole matrix)."""
    requests = [(cell.id, builder.simulation(cell)) for cell in matrix.cells]
    results = simulate.run(requests, timeout=timeout)
    return [Outcome(cell, request, result) for cell, (_, request), result in zip(matrix.cells, requests, results)]


def readable(builder: RequestBuilder, template: Cell, keys: list[str], timeout: float = simulate.DEFAULT_TIMEOUT) -> list[str]:
    """The ``keys`` the principal of ``template`` (a cell, its key ignored) may get with the template's context: one
    simulator run over every key, as ``check`` does for the cells."""
    cells = [dataclasses.replace(template, id=f"{template.id}:{key}", key=key) for key in keys]
    results = simulate.run([(cell.id, builder.simulation(cell)) for cell in cells], timeout=timeout)
    return [cell.key for cell, result in zip(cells, results) if result.result == "Allowed"]
