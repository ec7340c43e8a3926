"""The HCL expression subset the fallback evaluates, in the strings python-hcl2 leaves behind.

python-hcl2 parses the file structure; expressions stay as ``"${...}"`` strings.  This module evaluates
exactly: string literals and ``${...}`` interpolation, heredocs (``<<EOT``, ``<<-EOT``), numbers,
``true``/``false``/``null``, ``local.<name>``, ``dependency.<name>.outputs[.<key>...]``, ``==``, ``!=``,
``cond ? a : b``, parentheses, and the functions in ``SUPPORTED_FUNCTIONS``.  Anything else raises ``UnsupportedConstruct`` naming the file and
attribute, never a silent skip.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import textwrap
from pathlib import Path
from typing import Any, Mapping

from infra.terragrunt.environment import rel as _rel
from infra.terragrunt.errors import TerragruntError, UnsupportedConstruct

SUPPORTED_FUNCTIONS = ("find_in_parent_folders", "path_relative_to_include", "get_env", "get_repo_root")

_TOKEN_RE = re.compile(
    r"""\s*(?:
        (?P<string>"(?:[^"\\]|\\.)*")
      | (?P<number>-?[0-9]+(?:\.[0-9]+)?)
      | (?P<op>==|!=|\?|:|\(|\)|,)
      | (?P<ident>[A-Za-z_][A-Za-z0-9_\-]*(?:\.[A-Za-z_][A-Za-z0-9_\-]*)*)
    )""",
    re.VERBOSE,
)


@dataclasses.dataclass
class EvalContext:
    """What an expression can see: the file being evaluated, its locals, and the including child."""

    config_path: Path          # the file whose expression this is (root.hcl or the tenant file)
    child_path: Path           # the tenant file (Terragrunt evaluates included files in its context)
    include_dir: Path | None   # directory of the included root file, when evaluating through an include
    raw_locals: Mapping[str, Any]
    where: str = ""
    dependency_outputs: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # name -> outputs map
    _locals: dict[str, Any] = dataclasses.field(default_factory=dict)
    _evaluating: set[str] = dataclasses.field(default_factory=set)

    def refuse(self, what: str) -> UnsupportedConstruct:
        loc = f"{_rel(self.config_path)}: {self.where}: " if self.where else f"{_rel(self.config_path)}: "
        return UnsupportedConstruct(
            f"{loc}{what} is not supported by the terragrunt fallback (it supports {', '.join(SUPPORTED_FUNCTIONS)}, "
            "local.* and dependency.*.outputs references, ==, != and ?:); install terragrunt or simplify the config"
        )

    def dependency(self, name: str, keys: list[str], reference: str) -> Any:
        """``dependency.<name>.outputs`` followed by ``keys`` (map attributes)."""
        where = f"{_rel(self.config_path)}: {self.where}: " if self.where else f"{_rel(self.config_path)}: "
        if name not in self.dependency_outputs:
            if self.config_path != self.child_path:
                raise self.refuse(f"the reference `{reference}` in an included file")
            raise TerragruntError(f"{where}{reference}: no dependency {name!r} is declared in this file")
        value = self.dependency_outputs[name]
        if getattr(value, "message", None):
            raise TerragruntError(f"{where}{reference}: {value.message}")
        for depth, key in enumerate(keys):
            if not isinstance(value, Mapping) or key not in value:
                known = ", ".join(sorted(value)) if isinstance(value, Mapping) else "none"
                raise TerragruntError(f"{where}{reference}: dependency.{name}.outputs"
                                      f"{''.join('.' + k for k in keys[:depth])} has no {key!r} (it has: {known})")
            value = value[key]
        return value

    def local(self, name: str) -> Any:
        if name in self._locals:
            return self._locals[name]
        if name not in self.raw_locals:
            raise TerragruntError(f"{_rel(self.config_path)}: {self.where}: local.{name} is not defined")
        if name in self._evaluating:
            raise TerragruntError(f"{_rel(self.config_path)}: local.{name} refers to itself")
        self._evaluating.add(name)
        where, self.where = self.where, f"locals.{name}"
        try:
            value = evaluate(self.raw_locals[name], self)
        finally:
            self.where = where
            self._evaluating.discard(name)
        self._locals[name] = value
        return value


def _call(name: str, args: list[Any], ctx: EvalContext) -> Any:
    if name == "get_env":
        if len(args) not in (1, 2) or not all(isinstance(a, str) for a in args):
            raise TerragruntError(f"{_rel(ctx.config_path)}: {ctx.where}: get_env takes a name and an optional default")
        value = os.environ.get(args[0])
        if value is None:
            if len(args) == 1:
                raise TerragruntError(f"{_rel(ctx.config_path)}: {ctx.where}: environment variable {args[0]} is not set")
            return args[1]
        return value
    if name == "get_repo_root":
        if args:
            raise TerragruntError(f"{_rel(ctx.config_path)}: {ctx.where}: get_repo_root takes no arguments")
        return _git_toplevel(ctx.child_path.parent)
    if name == "find_in_parent_folders":
        if len(args) != 1 or not isinstance(args[0], str):
            raise ctx.refuse("find_in_parent_folders without exactly one file name")
        for folder in ctx.child_path.parent.resolve().parents:
            candidate = folder / args[0]
            if candidate.is_file():
                return str(candidate)
        raise TerragruntError(f"{_rel(ctx.child_path)}: find_in_parent_folders: no {args[0]} in any parent folder")
    if name == "path_relative_to_include":
        if args:
            raise ctx.refuse("path_relative_to_include with an include name")
        if ctx.include_dir is None:
            return "."
        return os.path.relpath(ctx.child_path.parent.resolve(), ctx.include_dir.resolve())
    raise ctx.refuse(f"function {name}()")


_TOPLEVEL_CACHE: dict[Path, str] = {}


def _git_toplevel(folder: Path) -> str:
    folder = folder.resolve()
    if folder not in _TOPLEVEL_CACHE:
        try:
            result = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=folder, capture_output=True,
                                    text=True, timeout=60)
        except subprocess.TimeoutExpired:
            raise TerragruntError(f"get_repo_root: git rev-parse in {folder} did not finish within 60 s") from None
        if result.returncode != 0:
            raise TerragruntError(f"get_repo_root: {folder} is not inside a git repository")
        _TOPLEVEL_CACHE[folder] = result.stdout.strip()
    return _TOPLEVEL_CACHE[folder]


class _Parser:
    """Recursive descent over: cond := eq ['?' cond ':' cond]; eq := primary [('=='|'!=') primary]."""

    def __init__(self, text: str, ctx: EvalContext):
        self.ctx, self.text, self.pos = ctx, text, 0
        for name in re.findall(r"(?<![\w.])([A-Za-z_][A-Za-z0-9_]*)\s*\(", text):
            if name not in SUPPORTED_FUNCTIONS:
                raise ctx.refuse(f"function {name}()")
        self.tokens: list[tuple[str, str]] = []
        while self.pos < len(text):
            if not text[self.pos:].strip():
                break
            match = _TOKEN_RE.match(text, self.pos)
            if not match:
                raise ctx.refuse(f"the expression `{text.strip()}`")
            kind = match.lastgroup or ""
            self.tokens.append((kind, match.group(kind)))
            self.pos = match.end()
        self.i = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token is None or (value is not None and token[1] != value):
            raise self.ctx.refuse(f"the expression `{self.text.strip()}`")
        self.i += 1
        return token

    def parse(self) -> Any:
        value = self.cond()
        if self.peek() is not None:
            raise self.ctx.refuse(f"the expression `{self.text.strip()}`")
        return value

    def cond(self) -> Any:
        test = self.eq()
        if self.peek() == ("op", "?"):
            self.take("?")
            then = self.cond()
            self.take(":")
            other = self.cond()
            if not isinstance(test, bool):
                raise TerragruntError(f"{_rel(self.ctx.config_path)}: {self.ctx.where}: condition is not a bool: {test!r}")
            return then if test else other
        return test

    def eq(self) -> Any:
        left = self.primary()
        token = self.peek()
        if token in (("op", "=="), ("op", "!=")):
            self.take()
            right = self.primary()
            return (left == right) if token[1] == "==" else (left != right)
        return left

    def primary(self) -> Any:
        kind, value = self.take()
        if kind == "string":
            return interpolate(json.loads(value), self.ctx)
        if kind == "number":
            return float(value) if "." in value else int(value)
        if kind == "op" and value == "(":
            inner = self.cond()
            self.take(")")
            return inner
        if kind == "ident":
            if value in ("true", "false"):
                return value == "true"
            if value == "null":
                return None
            if self.peek() == ("op", "("):
                self.take("(")
                args: list[Any] = []
                while self.peek() != ("op", ")"):
                    args.append(self.cond())
                    if self.peek() == ("op", ","):
                        self.take(",")
                self.take(")")
                return _call(value, args, self.ctx)
            parts = value.split(".")
            if parts[0] == "local" and len(parts) == 2:
                return self.ctx.local(parts[1])
            if parts[0] == "dependency" and len(parts) >= 3 and parts[2] == "outputs":
                return self.ctx.dependency(parts[1], parts[3:], value)
            raise self.ctx.refuse(f"the reference `{value}`")
        raise self.ctx.refuse(f"the expression `{self.text.strip()}`")


def _split_template(text: str) -> list[tuple[bool, str]]:
    """Split a template string into (is_expression, text) parts at ``${ ... }`` (quote/brace aware)."""
    parts: list[tuple[bool, str]] = []
    i, literal = 0, []
    while i < len(text):
        if text.startswith("$${", i):
            literal.append("${")
            i += 3
            continue
        if text.startswith("%{", i) and not text.startswith("%%{", i):
            raise UnsupportedConstruct("template directives (%{ ... }) are not supported by the terragrunt fallback")
        if text.startswith("${", i):
            depth, j, in_string = 1, i + 2, False
            while j < len(text) and depth:
                ch = text[j]
                if in_string:
                    if ch == "\\":
                        j += 1
                    elif ch == '"':
                        in_string = False
                elif ch == '"':
                    in_string = True
                elif ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                j += 1
            if depth:
                raise UnsupportedConstruct(f"unterminated interpolation in {text!r}")
            if literal:
                parts.append((False, "".join(literal)))
                literal = []
            parts.append((True, text[i + 2:j - 1]))
            i = j
            continue
        literal.append(text[i])
        i += 1
    if literal:
        parts.append((False, "".join(literal)))
    return parts


def _heredoc_body(text: str) -> str | None:
    match = re.match(r"^<<(-?)([A-Za-z_][A-Za-z0-9_]*)\n(.*?)\n?[ \t]*\2\s*$", text, re.DOTALL)
    if not match:
        return None
    body = match.group(3) + "\n"
    return textwrap.dedent(body) if match.group(1) == "-" else body


def interpolate(text: str, ctx: EvalContext) -> Any:
    """Evaluate a string from python-hcl2: plain text, ``"${expr}"`` (the value itself), a template or a heredoc."""
    heredoc = _heredoc_body(text)
    if heredoc is not None:
        text = heredoc
    parts = _split_template(text)
    if len(parts) == 1 and parts[0][0] and heredoc is None:
        return _Parser(parts[0][1], ctx).parse()
    out = []
    for is_expr, part in parts:
        if not is_expr:
            out.append(part)
            continue
        value = _Parser(part, ctx).parse()
        if isinstance(value, bool):
            value = "true" if value else "false"
        if not isinstance(value, (str, int, float)):
            raise TerragruntError(f"{_rel(ctx.config_path)}: {ctx.where}: cannot interpolate {value!r} into a string")
        out.append(str(value))
    return "".join(out)


def evaluate(value: Any, ctx: EvalContext) -> Any:
    if isinstance(value, str):
        return interpolate(value, ctx)
    if isinstance(value, list):
        return [evaluate(v, ctx) for v in value]
    if isinstance(value, dict):
        return {k: evaluate(v, ctx) for k, v in value.items()}
    return value


