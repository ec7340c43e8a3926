"""Lookups into the synthesized tenant module (a dict), for resource-by-resource assertions."""
from __future__ import annotations

import json
import re
from typing import Any


def resource(module: dict, type_: str, name: str) -> dict:
    return module["resource"][type_][name]


def data(module: dict, type_: str, name: str) -> dict:
    return module["data"][type_][name]


def document_statements(module: dict, name: str) -> dict[str, dict]:
    """Statements of an ``aws_iam_policy_document`` data source, by sid."""
    return {s["sid"]: s for s in data(module, "aws_iam_policy_document", name)["statement"]}


def json_policy_statements(text: str) -> dict[str, dict]:
    """Statements of a JSON policy string, by Sid; an unquoted ``${jsonencode(X)}`` becomes ``["list:X"]``."""
    text = re.sub(r"\$\{jsonencode\((.*?)\)\}", lambda m: json.dumps([f"list:{m.group(1)}"]), text)
    return {s["Sid"]: s for s in json.loads(text)["Statement"]}


def condition(statement: dict, test: str, variable: str) -> Any:
    """Values of a condition in either rendering (data document or JSON)."""
    if "condition" in statement:
        for c in statement["condition"]:
            if c["test"] == test and c["variable"] == variable:
                return c["values"]
        raise KeyError((test, variable))
    return statement["Condition"][test][variable]
