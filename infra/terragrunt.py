"""Run Terragrunt for a tenant (or all of them), or a small documented fallback when it is not installed.

Entry point for ``make plan|apply|destroy TENANT=<t>``, ``make plan-all|apply-all``:

    python -m infra.terragrunt plan|apply|destroy|output|validate --tenant T [-- TERRAFORM ARGS]
    python -m infra.terragrunt plan-all|apply-all [--parallelism N]
    python -m infra.terragrunt env            # the variables root.hcl reads, for a bare terragrunt run
    python -m infra.terragrunt force-unlock --tenant T --lock-id ID   # release the lock a killed run left

Every command first validates the tenant file(s) with the rules of ``infra.tenant`` (and that no two
tenants collide); a bad file stops it with one line and nothing runs.  In the ``local`` environment
(``TENANTLAKE_ENV``, default ``local``) it then starts or reuses the emulator recorded in
``$TENANTLAKE_STATE_DIR/emulator.json``, creates the state bucket and the tenant's fixture network,
and runs ``terragrunt`` when it is on PATH, else the fallback.

The fallback reads the same HCL with python-hcl2 and understands exactly this subset of Terragrunt:
``include`` (one level, shallow merge, no ``expose``), ``locals``, ``inputs``, ``terraform { source,
before_hook }``, ``remote_state { backend, generate, config }``, ``generate`` blocks; the functions
``find_in_parent_folders``, ``path_relative_to_include``, ``get_env`` and ``get_repo_root``;
``local.*`` references, string interpolation and heredocs, ``==``/``!=`` and ``cond ? a : b``.
Anything else (another block, function, reference or operator) is refused with the file and attribute
named, never silently skipped.  It copies the module source into the tenant's working directory
``$TENANTLAKE_STATE_DIR/tenants/<tenant>/``, writes the generated files, runs the before hooks, and runs
``terraform init`` with the ``remote_state`` config as ``-backend-config`` and ``plan``/``apply``/
``destroy`` with the inputs as ``TF_VAR_*`` variables, as Terragrunt does.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any, Callable, Mapping

from infra import tenant as tenant_model

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TENANTS_DIR = REPO_ROOT / "tenants"
ROOT_CONFIG_NAME = "root.hcl"
TENANT_CONFIG_NAME = "terragrunt.hcl"
ENVIRONMENTS = ("local", "aws")
LOCAL_ACCOUNT_ID = "123456789012"  # moto's fixed account id
DEFAULT_STATE_REGION = "eu-west-1"
DEFAULT_PARALLELISM = 2
LOCK_TIMEOUT = "120s"  # wait for another run holding the state lock (e.g. two tenants sharing the network)
SUPPORTED_FUNCTIONS = ("find_in_parent_folders", "path_relative_to_include", "get_env", "get_repo_root")
COMMANDS = ("plan", "apply", "destroy", "output", "validate", "force-unlock")
NETWORK_DIR = REPO_ROOT / "infra" / "local" / "network"
LAKE_JSON = "lake.json"
NETWORK_ATTEMPTS = 3  # fixture VPC creation, when another client shifted moto's ids (see ensure_network)


class TerragruntError(RuntimeError):
    """A problem a user can act on; ``str(err)`` is one line."""


class UnsupportedConstruct(TerragruntError):
    """The fallback met a Terragrunt construct it does not implement (install terragrunt or simplify)."""


class TenantNotAppliedError(TerragruntError):
    """The tenant has no Terraform state yet (``make apply TENANT=<t>`` first)."""


class TerraformFailed(TerragruntError):
    """A terraform command exited non-zero; ``output`` holds what it printed."""

    def __init__(self, message: str, output: list[str]):
        super().__init__(message)
        self.output = output


class StateLockedError(TerragruntError):
    """Terraform could not take the state lock: another run holds it, or a killed run left it behind."""

    def __init__(self, message: str, lock: Mapping[str, str]):
        super().__init__(message)
        self.lock = dict(lock)


# ---------------------------------------------------------------------------------------------------
# Paths and the environment switch
# ---------------------------------------------------------------------------------------------------
def state_dir() -> Path:
    """``$TENANTLAKE_STATE_DIR`` (default ``<repo>/.local``): emulator state and tenant working dirs."""
    return Path(os.environ.get("TENANTLAKE_STATE_DIR") or REPO_ROOT / ".local").resolve()


def work_dir(tenant_id: str) -> Path:
    return state_dir() / "tenants" / tenant_id


def env_name() -> str:
    env = os.environ.get("TENANTLAKE_ENV", "local")
    if env not in ENVIRONMENTS:
        raise TerragruntError(f"TENANTLAKE_ENV={env!r} is not one of {', '.join(ENVIRONMENTS)}")
    return env


def terragrunt_binary() -> str | None:
    """Real terragrunt when on PATH, unless ``TENANTLAKE_FORCE_FALLBACK=1``."""
    if os.environ.get("TENANTLAKE_FORCE_FALLBACK") == "1":
        return None
    return shutil.which("terragrunt")


# ---------------------------------------------------------------------------------------------------
# HCL expressions: the small subset the configs use
# ---------------------------------------------------------------------------------------------------
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
    _locals: dict[str, Any] = dataclasses.field(default_factory=dict)
    _evaluating: set[str] = dataclasses.field(default_factory=set)

    def refuse(self, what: str) -> UnsupportedConstruct:
        loc = f"{_rel(self.config_path)}: {self.where}: " if self.where else f"{_rel(self.config_path)}: "
        return UnsupportedConstruct(
            f"{loc}{what} is not supported by the terragrunt fallback (it supports {', '.join(SUPPORTED_FUNCTIONS)}, "
            "local.* references, ==, != and ?:); install terragrunt or simplify the config"
        )

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


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


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
        result = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=folder, capture_output=True, text=True)
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


# ---------------------------------------------------------------------------------------------------
# Reading tenant files
# ---------------------------------------------------------------------------------------------------
ROOT_BLOCKS = {"locals", "inputs", "terraform", "remote_state", "generate"}
CHILD_BLOCKS = {"include", "locals", "inputs"}
TERRAFORM_KEYS = {"source", "before_hook"}
HOOK_KEYS = {"commands", "execute", "working_dir"}
REMOTE_STATE_KEYS = {"backend", "generate", "config"}
GENERATE_KEYS = {"path", "if_exists", "contents"}
INCLUDE_KEYS = {"path"}


@dataclasses.dataclass(frozen=True)
class Hook:
    name: str
    commands: tuple[str, ...]
    execute: tuple[str, ...]
    working_dir: str = ""


@dataclasses.dataclass(frozen=True)
class GeneratedFile:
    name: str
    path: str
    contents: str


@dataclasses.dataclass(frozen=True)
class TenantRun:
    """A tenant file, fully evaluated: what terragrunt would run for it."""

    name: str                      # directory name under tenants/
    config_path: Path
    inputs: dict[str, Any]
    config: tenant_model.TenantConfig
    source: str
    backend: str
    backend_config: dict[str, Any]
    backend_file: GeneratedFile | None
    generate: tuple[GeneratedFile, ...]
    before_hooks: tuple[Hook, ...]

    @property
    def state_key(self) -> str:
        return self.backend_config["key"]


def _load_hcl(path: Path) -> dict[str, Any]:
    import hcl2

    try:
        with open(path) as fh:
            return hcl2.load(fh, serialization_options=hcl2.SerializationOptions(
                strip_string_quotes=True, explicit_blocks=False, with_comments=False))
    except FileNotFoundError:
        raise TerragruntError(f"{_rel(path)} does not exist") from None
    except Exception as exc:  # python-hcl2 raises lark errors with multi-line text
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TerragruntError(f"{_rel(path)}: not valid HCL: {first}") from None


def _check_keys(found: Mapping[str, Any], allowed: set[str], path: Path, where: str) -> None:
    extra = sorted(set(found) - allowed)
    if extra:
        label = f"{where}.{extra[0]}" if where else extra[0]
        raise UnsupportedConstruct(
            f"{_rel(path)}: `{label}` is not supported by the terragrunt fallback (it supports {', '.join(sorted(allowed))}"
            f"{' here' if where else ' as top-level blocks'}); install terragrunt or simplify the config"
        )


def _single(blocks: Any, path: Path, name: str) -> dict[str, Any]:
    if isinstance(blocks, dict):
        return blocks
    if not isinstance(blocks, list) or len(blocks) != 1:
        raise TerragruntError(f"{_rel(path)}: `{name}` must appear once")
    return blocks[0]


def _merge_locals(blocks: Any) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for block in blocks if isinstance(blocks, list) else [blocks]:
        merged.update(block)
    return merged


def _named(blocks: Any, path: Path, kind: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for block in blocks if isinstance(blocks, list) else [blocks]:
        for name, body in block.items():
            if name in out:
                raise TerragruntError(f"{_rel(path)}: {kind} {name!r} is defined twice")
            out[name] = body
    return out


def load_tenant(name: str, tenants_dir: Path | str = DEFAULT_TENANTS_DIR) -> TenantRun:
    """Parse and evaluate ``tenants/<name>/terragrunt.hcl`` (+ its include), then validate the inputs."""
    tenants_dir = Path(tenants_dir)
    known = tenant_names(tenants_dir)
    if name not in known:
        raise TerragruntError(f"unknown tenant {name!r}: no {_rel(tenants_dir / (name or '<empty>') / TENANT_CONFIG_NAME)} "
                              f"(tenants: {', '.join(known) or 'none'})")
    child_path = (tenants_dir / name / TENANT_CONFIG_NAME).resolve()
    child = _load_hcl(child_path)
    _check_keys(child, CHILD_BLOCKS, child_path, "")
    child_ctx = EvalContext(child_path, child_path, None, _merge_locals(child.get("locals", [])))

    includes = _named(child.get("include", []), child_path, "include")
    if len(includes) > 1:
        raise UnsupportedConstruct(f"{_rel(child_path)}: more than one include is not supported by the terragrunt fallback")
    root: dict[str, Any] = {}
    root_ctx: EvalContext | None = None
    root_path: Path | None = None
    for inc_name, inc in includes.items():
        _check_keys(inc, INCLUDE_KEYS, child_path, f"include.{inc_name}")
        child_ctx.where = f"include.{inc_name}.path"
        root_path = Path(evaluate(inc["path"], child_ctx)).resolve()
        root = _load_hcl(root_path)
        _check_keys(root, ROOT_BLOCKS, root_path, "")
        root_ctx = EvalContext(root_path, child_path, root_path.parent, _merge_locals(root.get("locals", [])))

    def eval_in(ctx: EvalContext, where: str, value: Any) -> Any:
        ctx.where = where
        return evaluate(value, ctx)

    # inputs: the root's, then the tenant's on top (Terragrunt's shallow merge).
    inputs: dict[str, Any] = {}
    if root_ctx is not None and "inputs" in root:
        inputs.update(eval_in(root_ctx, "inputs", _single(root["inputs"], root_path, "inputs")))
    if "inputs" in child:
        inputs.update(eval_in(child_ctx, "inputs", _single(child["inputs"], child_path, "inputs")))

    source, hooks, backend, backend_config, backend_file, generated = "", [], "", {}, None, []
    if root_ctx is not None:
        if "terraform" in root:
            tf = _single(root["terraform"], root_path, "terraform")
            _check_keys(tf, TERRAFORM_KEYS, root_path, "terraform")
            source = eval_in(root_ctx, "terraform.source", tf.get("source", ""))
            for hook_name, hook in _named(tf.get("before_hook", []), root_path, "before_hook").items():
                _check_keys(hook, HOOK_KEYS, root_path, f"terraform.before_hook.{hook_name}")
                hook_value = eval_in(root_ctx, f"terraform.before_hook.{hook_name}", hook)
                hooks.append(Hook(hook_name, tuple(hook_value["commands"]), tuple(hook_value["execute"]),
                                  hook_value.get("working_dir", "")))
        if "remote_state" in root:
            rs = _single(root["remote_state"], root_path, "remote_state")
            _check_keys(rs, REMOTE_STATE_KEYS, root_path, "remote_state")
            rs = eval_in(root_ctx, "remote_state", rs)
            backend, backend_config = rs.get("backend", ""), dict(rs.get("config", {}))
            if backend != "s3":
                raise UnsupportedConstruct(f"{_rel(root_path)}: remote_state backend {backend!r}: the fallback supports only s3")
            if "generate" in rs:
                _check_keys(rs["generate"], {"path", "if_exists"}, root_path, "remote_state.generate")
                backend_file = GeneratedFile("backend", rs["generate"]["path"], 'terraform {\n  backend "s3" {}\n}\n')
        for gen_name, gen in _named(root.get("generate", []), root_path, "generate").items():
            _check_keys(gen, GENERATE_KEYS, root_path, f"generate.{gen_name}")
            if gen.get("if_exists", "overwrite_terragrunt") not in ("overwrite", "overwrite_terragrunt"):
                raise UnsupportedConstruct(f"{_rel(root_path)}: generate.{gen_name}.if_exists: only overwrite and "
                                           "overwrite_terragrunt are supported by the terragrunt fallback")
            value = eval_in(root_ctx, f"generate.{gen_name}", gen)
            generated.append(GeneratedFile(gen_name, value["path"], value["contents"]))

    config = tenant_model.from_inputs(inputs, source=name)
    if config.tenant_id != name and config.tenant_id in known:
        raise tenant_model.TenantConfigError(
            config.tenant_id, "tenant_id", f"duplicate tenant id: tenants/{name}/ and tenants/{config.tenant_id}/ both "
            "declare it; each tenant needs its own id, equal to its directory name")
    if config.tenant_id != name:
        raise tenant_model.TenantConfigError(config.tenant_id, "tenant_id",
                                             f"must equal its directory name tenants/{name}/ (it names the state key)")
    return TenantRun(name, child_path, inputs, config, source, backend, backend_config, backend_file,
                     tuple(generated), tuple(hooks))


def tenant_names(tenants_dir: Path | str = DEFAULT_TENANTS_DIR) -> list[str]:
    return sorted(p.parent.name for p in Path(tenants_dir).glob(f"*/{TENANT_CONFIG_NAME}"))


def load_all(tenants_dir: Path | str = DEFAULT_TENANTS_DIR) -> list[TenantRun]:
    """Every tenant, validated, with no two sharing an id, a bucket or a state key."""
    runs = [load_tenant(name, tenants_dir) for name in tenant_names(tenants_dir)]
    check_no_collisions(runs)
    return runs


def check_no_collisions(runs: list[TenantRun]) -> None:
    tenant_model.check_unique([r.config for r in runs])
    seen: dict[str, str] = {}
    for run in runs:
        for kind, value in (("state key", run.state_key), ("lake bucket", run.config.lake_bucket_name),
                            ("KMS alias", run.config.kms_alias)):
            other = seen.get(f"{kind}:{value}")
            if other:
                raise tenant_model.TenantConfigError(run.name, "tenant_id", f"{kind} {value} is also used by tenant '{other}'")
            seen[f"{kind}:{value}"] = run.name


# ---------------------------------------------------------------------------------------------------
# Preparing the environment
# ---------------------------------------------------------------------------------------------------
def _cli_config() -> str:
    """The user's TF_CLI_CONFIG_FILE when it exists, else the repo's (provider from the filesystem mirror)."""
    configured = os.environ.get("TF_CLI_CONFIG_FILE", "")
    return configured if configured and Path(configured).is_file() else str(REPO_ROOT / "infra" / "terraform.rc")


def static_env() -> dict[str, str]:
    """The variables root.hcl reads that do not need the emulator (enough to parse and validate)."""
    env = {
        "TF_CLI_CONFIG_FILE": _cli_config(),
        "TF_IN_AUTOMATION": "1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "TENANTLAKE_ENV": env_name(),
        "TENANTLAKE_STATE_REGION": os.environ.get("TENANTLAKE_STATE_REGION") or DEFAULT_STATE_REGION,
    }
    if env_name() == "local":
        env["TENANTLAKE_STATE_ACCOUNT_ID"] = LOCAL_ACCOUNT_ID
    elif not os.environ.get("TENANTLAKE_STATE_ACCOUNT_ID"):
        raise TerragruntError("TENANTLAKE_ENV=aws needs TENANTLAKE_STATE_ACCOUNT_ID (the account of the state bucket)")
    return env


def emulator_state():
    """The emulator recorded in the state dir when its PID is still our moto server, else a new one.

    A running server is reused without the HTTP health probe of ``emulator.start()``: that probe
    (``/moto-api/data.json``) serializes every backend and can take longer than its timeout once the
    emulator holds a few tenants, and ``start()`` then replaces the busy server, state and all.
    """
    from infra.local import emulator as emu

    state = emu.read_state(state_dir())
    if state is not None and emu.is_our_server(state):
        return state
    return emu.start(state_dir())[0]


def run_env() -> dict[str, str]:
    """Process environment for terragrunt/terraform: ``os.environ`` + ``static_env()`` plus, in ``local``,
    the emulator (started or reused) and its dummy credentials."""
    env = static_env()
    if env_name() == "local":
        from infra.local import emulator as emu

        state = emulator_state()
        env.update(emu.env_vars(state))
        env["TENANTLAKE_AWS_ENDPOINT"] = state.endpoint
        env["AWS_REGION"] = env["TENANTLAKE_STATE_REGION"]
    return {**os.environ, **env}


def _boto_client(service: str, region: str, env: Mapping[str, str]):
    import boto3

    kwargs: dict[str, Any] = {"region_name": region}
    if env.get("TENANTLAKE_AWS_ENDPOINT"):
        kwargs.update(endpoint_url=env["TENANTLAKE_AWS_ENDPOINT"], verify=env.get("AWS_CA_BUNDLE") or None,
                      aws_access_key_id=env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"])
    return boto3.client(service, **kwargs)


_BUCKET_LOCK = threading.Lock()


def ensure_state_bucket(run: TenantRun, env: Mapping[str, str]) -> None:
    """Create the state bucket when missing: versioned, encrypted, private (terragrunt would do the same)."""
    bucket, region = run.backend_config["bucket"], run.backend_config.get("region", DEFAULT_STATE_REGION)
    s3 = _boto_client("s3", region, env)
    with _BUCKET_LOCK:
        try:
            s3.head_bucket(Bucket=bucket)
            return
        except s3.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket", "NotFound"):
                raise TerragruntError(f"state bucket {bucket}: {exc}") from None
        create: dict[str, Any] = {"Bucket": bucket}
        if region != "us-east-1":
            create["CreateBucketConfiguration"] = {"LocationConstraint": region}
        s3.create_bucket(**create)
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
        s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration={
            "BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True, "RestrictPublicBuckets": True})


# ---------------------------------------------------------------------------------------------------
# Running terraform
# ---------------------------------------------------------------------------------------------------
Printer = Callable[[str], None]


def _stream(cmd: list[str], cwd: Path, env: Mapping[str, str], echo: Printer, keep: list[str] | None = None) -> int:
    """Run ``cmd``, echoing its output line by line; ``keep`` collects the lines too."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, bufsize=1)
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip("\n")
        echo(line)
        if keep is not None:
            keep.append(line)
    return proc.wait()


LOCK_ERROR = "Error acquiring the state lock"
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")  # terraform colours its diagnostics
_LOCK_FIELD_RE = re.compile(r"^[\s│]*(ID|Path|Operation|Who|Created):\s*(.*?)\s*$")


def lock_info(output: list[str]) -> dict[str, str] | None:
    """The ``Lock Info`` terraform prints when it cannot take the state lock, or None if it did not fail on it."""
    if not any(LOCK_ERROR in line for line in output):
        return None
    info: dict[str, str] = {}
    for line in output:
        match = _LOCK_FIELD_RE.match(_ANSI_RE.sub("", line))
        if match and match.group(1) not in info:
            info[match.group(1)] = match.group(2)
    return info


def locked_message(tenant: str, lock: Mapping[str, str]) -> str:
    """One line: who holds the lock, and the documented way out when that run is dead."""
    lock_id = lock.get("ID", "?")
    return (f"tenant '{tenant}': the state is locked by another run (lock {lock_id} on {lock.get('Path', '?')}, "
            f"{lock.get('Operation', '?')} by {lock.get('Who', '?')} since {lock.get('Created', '?')}); wait for it to "
            f"finish, or if that run was killed: python -m infra.terragrunt force-unlock --tenant {tenant} --lock-id {lock_id}")


def _terraform(args: list[str], cwd: Path, env: Mapping[str, str], echo: Printer, what: str,
               ok_codes: tuple[int, ...] = (0,), tenant: str | None = None) -> int:
    output: list[str] = []
    code = _stream(["terraform", *args], cwd, env, echo, keep=output)
    if code not in ok_codes:
        lock = lock_info(output)
        if lock is not None:
            raise StateLockedError(locked_message(tenant or cwd.name, lock), lock)
        raise TerraformFailed(f"terraform {what} failed with exit code {code} (in {cwd})", output)
    return code


# ---------------------------------------------------------------------------------------------------
# Adopting what a killed apply created but never recorded
# ---------------------------------------------------------------------------------------------------
# Terraform persists the state of a running apply at most every 20 s; a run killed in between leaves
# resources it created but never wrote to the state.  The next apply then fails creating them again
# ("already exists").  Every such resource has a deterministic, tenant-named identity, so the runner
# imports them (Terraform import blocks) and applies once more.  Only these types are adopted.
ADOPTABLE_TYPES = ("aws_iam_role", "aws_s3_bucket", "aws_cloudwatch_log_group", "aws_kms_alias", "aws_kinesis_stream",
                   "aws_security_group", "aws_vpc_security_group_ingress_rule", "aws_emrcontainers_virtual_cluster",
                   "aws_kinesis_firehose_delivery_stream")
ALREADY_EXISTS_MARKERS = ("already exists", "AlreadyExists", "AlreadyOwnedByYou", "Duplicate", "ResourceInUseException")
IMPORTS_FILE = "adopted_imports.tf.json"
ADOPTION_ROUNDS = 3  # adopt-and-apply rounds after the first apply failed on orphans
_CREATE_ERROR_RE = re.compile(r"Error: creating [A-Za-z0-9 ]+?(?: \(([^)]+)\))?(?::|$)")
_WITH_RE = re.compile(r"^[\s│]*with ([A-Za-z0-9_]+\.[A-Za-z0-9_]+(?:\[[^\]]*\])?),\s*$")


def orphans_in(output: list[str]) -> list[tuple[str, str]]:
    """``(address, name)`` of every resource terraform failed to create because it already exists
    (``name`` is "" when terraform's message names none, e.g. a security group rule)."""
    found: list[tuple[str, str]] = []
    block: dict | None = None  # the current "Error: creating ..." diagnostic: name, address, exists

    def close() -> None:
        if block and block["address"] and block["exists"]:
            found.append((block["address"], block["name"]))

    for raw in output:
        line = _ANSI_RE.sub("", raw)
        match = _CREATE_ERROR_RE.search(line)
        if match or "Error:" in line or line.startswith("╵"):
            close()
            block = {"name": match.group(1) or "", "address": None, "exists": False} if match else None
        if block is None:
            continue
        block["exists"] = block["exists"] or any(marker in line for marker in ALREADY_EXISTS_MARKERS)
        with_match = _WITH_RE.match(line)
        if with_match and block["address"] is None:
            block["address"] = with_match.group(1)
    close()
    return found


def _import_id(run: TenantRun, address: str, name: str, env: Mapping[str, str]) -> str | None:
    kind, region = address.split(".", 1)[0], run.config.region
    if kind in ("aws_iam_role", "aws_s3_bucket", "aws_cloudwatch_log_group", "aws_kms_alias", "aws_kinesis_stream"):
        return name
    if kind == "aws_security_group":
        vpc = re.search(r'\["(vpc-[0-9a-f]+)"\]', address)
        filters = [{"Name": "group-name", "Values": [name]}, *([{"Name": "vpc-id", "Values": [vpc.group(1)]}] if vpc else [])]
        groups = _boto_client("ec2", region, env).describe_security_groups(Filters=filters)["SecurityGroups"]
        return groups[0]["GroupId"] if len(groups) == 1 else None
    if kind == "aws_vpc_security_group_ingress_rule":
        # The tenant's (tagged) security group in that VPC, and its one ingress rule.
        vpc = re.search(r'\["(vpc-[0-9a-f]+)"\]', address)
        ec2 = _boto_client("ec2", region, env)
        groups = ec2.describe_security_groups(Filters=[
            {"Name": "tag:tenant", "Values": [run.config.tenant_id]},
            *([{"Name": "vpc-id", "Values": [vpc.group(1)]}] if vpc else [])])["SecurityGroups"]
        if len(groups) != 1:
            return None
        rules = [r for r in ec2.describe_security_group_rules(Filters=[
            {"Name": "group-id", "Values": [groups[0]["GroupId"]]}])["SecurityGroupRules"] if not r["IsEgress"]]
        return rules[0]["SecurityGroupRuleId"] if len(rules) == 1 else None
    if kind == "aws_emrcontainers_virtual_cluster":
        clusters = _boto_client("emr-containers", region, env).list_virtual_clusters(states=["RUNNING"])["virtualClusters"]
        ids = [c["id"] for c in clusters if c["name"] == name]
        return ids[0] if len(ids) == 1 else None
    if kind == "aws_kinesis_firehose_delivery_stream":
        return _boto_client("firehose", region, env).describe_delivery_stream(
            DeliveryStreamName=name)["DeliveryStreamDescription"]["DeliveryStreamARN"]
    return None


def untracked_leftovers(run: TenantRun, env: Mapping[str, str]) -> list[str]:
    """VPC endpoints and KMS keys tagged with the tenant that its state does not hold (a killed apply's)."""
    values = outputs(run.name)
    tracked = {*values.get("gateway_endpoint_ids", {}).values(), *values.get("interface_endpoint_ids", {}).values(),
               values.get("kms_key_arn")}
    tenant_tag = {"Name": "tag:tenant", "Values": [run.config.tenant_id]}
    ec2 = _boto_client("ec2", run.config.region, env)
    found = [e["VpcEndpointId"] for e in ec2.describe_vpc_endpoints(Filters=[
        tenant_tag, {"Name": "vpc-id", "Values": list(run.config.vpc_ids)}])["VpcEndpoints"]
        if e["VpcEndpointId"] not in tracked and e["State"].lower() not in ("deleting", "deleted")]
    kms = _boto_client("kms", run.config.region, env)
    for page in kms.get_paginator("list_keys").paginate():
        for key in page["Keys"]:
            if key["KeyArn"] in tracked:
                continue
            tags = kms.list_resource_tags(KeyId=key["KeyArn"]).get("Tags", [])
            if {"TagKey": "tenant", "TagValue": run.config.tenant_id} in tags and \
                    kms.describe_key(KeyId=key["KeyArn"])["KeyMetadata"]["KeyState"] not in ("PendingDeletion",):
                found.append(key["KeyArn"])
    return found


def adopt_orphans(run: TenantRun, folder: Path, output: list[str], env: Mapping[str, str], echo: Printer) -> int:
    """Write import blocks for the tenant's orphaned resources; returns how many (0: nothing to adopt).

    Raises a one-line error when an "already exists" failure is not one the runner can adopt safely (a type
    it does not know, a name without the tenant id, or an id it cannot look up)."""
    orphans = orphans_in(output)
    imports, refused = [], []
    for address, name in orphans:
        import_id = None
        if address.split(".", 1)[0] in ADOPTABLE_TYPES and (name == "" or run.config.tenant_id in name):
            import_id = _import_id(run, address, name, env)
        if import_id is None:
            refused.append(f"{address} ({name})")
        else:
            imports.append({"to": address, "id": import_id})
    if refused:
        raise TerragruntError(f"tenant '{run.name}': already exists but not in the state, and not adoptable: "
                              f"{', '.join(refused)}; import it by hand (terraform import in {folder}) or delete it")
    if imports:
        (folder / IMPORTS_FILE).write_text(json.dumps({"import": imports}, indent=2) + "\n")
        echo(f"tenant '{run.name}': adopting {len(imports)} resource(s) an interrupted apply created but never "
             f"recorded: {', '.join(i['to'] for i in imports)}")
    return len(imports)


def _tf_vars(inputs: Mapping[str, Any]) -> dict[str, str]:
    # Terragrunt passes inputs as TF_VAR_<name>: strings raw, everything else JSON-encoded.
    return {f"TF_VAR_{k}": v if isinstance(v, str) else json.dumps(v) for k, v in inputs.items()}


def _backend_hcl(config: Mapping[str, Any]) -> str:
    lines = []
    for key, value in config.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items())
            lines.append(f"{key} = {{ {inner} }}")
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def _module_dir(source: str) -> Path:
    if "::" in source or source.startswith(("git@", "http://", "https://", "s3::", "tfr://")):
        raise UnsupportedConstruct(f"terraform.source {source!r}: the terragrunt fallback supports local paths only")
    folder = Path(source.replace("//", "/"))
    if not (folder.is_dir() and any(folder.glob("*.tf*"))):
        raise TerragruntError(f"terraform.source {source}: no Terraform module there (run `make synth`)")
    return folder


def prepare_work_dir(run: TenantRun) -> Path:
    """Copy the module into the tenant's working dir and write the generated files (no terraform yet)."""
    folder = work_dir(run.name)
    folder.mkdir(parents=True, exist_ok=True)
    module = _module_dir(run.source)
    for old in folder.glob("*.tf*"):
        if old.is_file() and old.suffix in (".tf", ".json"):
            old.unlink()
    for item in module.iterdir():
        if item.is_file() and (item.suffix == ".tf" or item.name.endswith(".tf.json")):
            shutil.copy2(item, folder / item.name)
    for gen in (*run.generate, *((run.backend_file,) if run.backend_file else ())):
        (folder / gen.path).write_text(gen.contents)
    (folder / "backend.hcl").write_text(_backend_hcl(run.backend_config))
    return folder


def _run_hooks(run: TenantRun, command: str, env: Mapping[str, str], echo: Printer) -> None:
    for hook in run.before_hooks:
        if command in hook.commands:
            # Terragrunt runs hooks in the module's working dir unless the hook names one.
            work_dir(run.name).mkdir(parents=True, exist_ok=True)
            code = _stream(list(hook.execute), Path(hook.working_dir or work_dir(run.name)), env, echo)
            if code != 0:
                raise TerragruntError(f"before_hook {hook.name} failed with exit code {code}")


def fallback(run: TenantRun, command: str, env: Mapping[str, str], extra: list[str], echo: Printer) -> int:
    """What terragrunt would do for ``command`` on this tenant, with plain terraform."""
    env = {**env, **_tf_vars(run.inputs)}
    _run_hooks(run, "init", env, echo)
    folder = prepare_work_dir(run)
    _terraform(["init", "-input=false", "-reconfigure", "-backend-config=backend.hcl"], folder, env, echo, "init")
    if command != "init":
        _run_hooks(run, command, env, echo)
    lock = [f"-lock-timeout={LOCK_TIMEOUT}"]
    if command == "plan":
        return _terraform(["plan", "-input=false", *lock, *extra], folder, env, echo, "plan",
                          ok_codes=(0, 2) if "-detailed-exitcode" in extra else (0,), tenant=run.name)
    if command in ("apply", "destroy"):
        args = [command, "-input=false", "-auto-approve", *lock, *extra]
        adopted = 0
        for attempt in range(ADOPTION_ROUNDS + 1):
            try:
                code = _terraform(args, folder, env, echo, command, tenant=run.name)
            except TerraformFailed as failed:
                if command != "apply" or attempt == ADOPTION_ROUNDS:
                    raise
                # An adopted resource can reveal the next one (a security group, then its rule): repeat.
                found = adopt_orphans(run, folder, failed.output, env, echo)
                if not found:
                    raise
                adopted += found
                continue
            if adopted:
                leftovers = untracked_leftovers(run, env)
                if leftovers:
                    echo(f"tenant '{run.name}': left behind by the interrupted apply and not tracked (no unique name "
                         f"to adopt): {', '.join(leftovers)}; check and delete them (ec2 delete-vpc-endpoints, "
                         "kms schedule-key-deletion)")
            return code
        raise AssertionError("unreachable: every round returns or raises")
    if command == "force-unlock":
        return _terraform(["force-unlock", "-force", *extra], folder, env, echo, "force-unlock", tenant=run.name)
    raise TerragruntError(f"unknown command {command}")


def real_terragrunt(binary: str, run: TenantRun, command: str, env: Mapping[str, str], extra: list[str],
                    echo: Printer) -> int:
    env = {**env, "TG_DOWNLOAD_DIR": str(work_dir(run.name) / ".terragrunt-cache"),
           "TERRAGRUNT_DOWNLOAD": str(work_dir(run.name) / ".terragrunt-cache"), "TG_NON_INTERACTIVE": "true"}
    args = [binary, command, "--non-interactive"]
    if command in ("apply", "destroy", "force-unlock"):
        args.append("-force" if command == "force-unlock" else "-auto-approve")
    args += [*([] if command == "force-unlock" else [f"-lock-timeout={LOCK_TIMEOUT}"]), *extra]
    output: list[str] = []
    code = _stream(args, run.config_path.parent, env, echo, keep=output)
    if code not in ((0, 2) if command == "plan" and "-detailed-exitcode" in extra else (0,)):
        lock = lock_info(output)
        if lock is not None:
            raise StateLockedError(locked_message(run.name, lock), lock)
        raise TerragruntError(f"terragrunt {command} failed with exit code {code}")
    return code


# ---------------------------------------------------------------------------------------------------
# The fixture network (local only)
# ---------------------------------------------------------------------------------------------------
def ensure_network(run: TenantRun, env: Mapping[str, str], echo: Printer) -> None:
    """Create the tenant's fixture VPC(s) in the emulator, with the exact ids the tenant file lists."""
    from infra.local.network import fixture_ids

    for index, vpc_id in enumerate(run.config.vpc_ids):
        expected = fixture_ids.fixture_vpc_id(run.config.tenant_id, index)
        if vpc_id != expected:
            raise TerragruntError(
                f"tenant '{run.name}': vpc_ids[{index}] {vpc_id} is not a local fixture VPC; in TENANTLAKE_ENV=local "
                f"it must be {expected} (python -m infra.local.network.fixture_ids id {run.config.tenant_id} {index})")
        folder = state_dir() / "network" / vpc_id
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(NETWORK_DIR / "main.tf", folder / "main.tf")
        backend = {**run.backend_config, "key": f"network/{vpc_id}/terraform.tfstate"}
        (folder / "backend.hcl").write_text(_backend_hcl(backend))
        tf_vars = _tf_vars({
            "tenant_id": run.config.tenant_id, "region": run.config.region, "vpc_id": vpc_id,
            "id_seed": fixture_ids.fixture_seed(run.config.tenant_id, index),
            "endpoint": env["TENANTLAKE_AWS_ENDPOINT"], "ca_bundle": env["AWS_CA_BUNDLE"],
            "python": sys.executable, "repo_root": str(REPO_ROOT)})
        tf_env = {**env, **tf_vars}
        fingerprint = _network_fingerprint(tf_vars)
        if _network_up_to_date(folder, fingerprint, run.config.region, vpc_id, backend, env):
            echo(f"fixture network of {run.name}: {vpc_id} is up to date (applied by this emulator); skipped")
            continue
        (folder / NETWORK_MARKER).unlink(missing_ok=True)
        _terraform(["init", "-input=false", "-reconfigure", "-backend-config=backend.hcl"], folder, tf_env, echo,
                   "init (fixture network)")
        # One operation at a time: nothing may draw moto ids between the reseed and CreateVpc.  Every
        # moto response draws a request id from the same generator, so a concurrent client can still
        # shift it; the postcondition then fails, and the VPC is destroyed and created once more.
        apply = ["apply", "-input=false", "-auto-approve", "-parallelism=1", f"-lock-timeout={LOCK_TIMEOUT}"]
        for attempt in range(1, NETWORK_ATTEMPTS + 1):
            try:
                _terraform(apply, folder, tf_env, echo, "apply (fixture network)")
                break
            except TerragruntError:
                if attempt == NETWORK_ATTEMPTS:
                    raise
                echo(f"fixture network of {run.name}: retrying ({attempt}/{NETWORK_ATTEMPTS - 1}) after a clean destroy")
                _terraform(["destroy", *apply[1:]], folder, tf_env, echo, "destroy (fixture network)")
        marker = {**fingerprint, "state_etag": _state_etag(backend, env)}
        (folder / NETWORK_MARKER).write_text(json.dumps(marker, indent=2, sort_keys=True) + "\n")


# An unchanged fixture network is not applied again: a no-op `terraform apply` costs ~25 s per tenant
# (provider start-up, refresh), run one tenant at a time, which dominated `make plan-all` for many tenants.
NETWORK_MARKER = "applied.json"  # in $TENANTLAKE_STATE_DIR/network/<vpc id>/, written after a successful apply


def _network_fingerprint(tf_vars: Mapping[str, str]) -> dict[str, Any]:
    """What an applied fixture network depends on: the emulator process holding it, its config and its inputs."""
    from infra.local import emulator as emu

    state = emu.read_state(state_dir())
    return {"emulator": [state.pid, state.started_at] if state else None,
            "config_sha256": hashlib.sha256((NETWORK_DIR / "main.tf").read_bytes()).hexdigest(),
            "inputs": dict(sorted(tf_vars.items()))}


def _state_etag(backend: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    s3 = _boto_client("s3", backend.get("region", DEFAULT_STATE_REGION), env)
    try:
        return s3.head_object(Bucket=backend["bucket"], Key=backend["key"])["ETag"]
    except s3.exceptions.ClientError:
        return None


def _network_up_to_date(folder: Path, fingerprint: Mapping[str, Any], region: str, vpc_id: str,
                        backend: Mapping[str, Any], env: Mapping[str, str]) -> bool:
    """True when this emulator applied this network config with these inputs, nothing rewrote its state
    since, and the VPC still exists (a moto reset or a hand-deleted VPC means apply again)."""
    try:
        marker = json.loads((folder / NETWORK_MARKER).read_text())
    except (OSError, ValueError):
        return False
    if fingerprint["emulator"] is None or {k: marker.get(k) for k in fingerprint} != dict(fingerprint):
        return False
    if marker.get("state_etag") is None or _state_etag(backend, env) != marker["state_etag"]:
        return False
    ec2 = _boto_client("ec2", region, env)
    try:
        return [v["VpcId"] for v in ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"]] == [vpc_id]
    except ec2.exceptions.ClientError:
        return False


# ---------------------------------------------------------------------------------------------------
# Outputs and lake.json
# ---------------------------------------------------------------------------------------------------
def outputs(tenant_id: str, tenants_dir: Path | str = DEFAULT_TENANTS_DIR) -> dict[str, Any]:
    """The tenant's Terraform outputs (name -> value); ``TenantNotAppliedError`` when it has no state."""
    folder = work_dir(tenant_id)
    binary = terragrunt_binary()
    if not binary and not (folder / ".terraform").is_dir():
        raise TenantNotAppliedError(f"tenant '{tenant_id}' is not applied here (no {folder}); run make apply TENANT={tenant_id}")
    if env_name() == "local":
        from infra.local import emulator as emu

        state = emu.read_state(state_dir())
        if state is None or not emu.is_our_server(state):
            raise TenantNotAppliedError(f"tenant '{tenant_id}' is not applied here: no emulator runs for {state_dir()} "
                                        f"(its state went with it); run make apply TENANT={tenant_id}")
    env = run_env()
    if binary:
        env["TG_DOWNLOAD_DIR"] = env["TERRAGRUNT_DOWNLOAD"] = str(folder / ".terragrunt-cache")
        cmd, cwd = [binary, "output", "-json", "--non-interactive"], Path(tenants_dir) / tenant_id
    else:
        cmd, cwd = ["terraform", "output", "-json"], folder
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        lines = [line.strip(" │╷╵") for line in result.stderr.splitlines() if "Error" in line] or ["no message"]
        raise TerragruntError(f"terraform output for tenant '{tenant_id}' failed: {lines[0]}")
    values = {name: item["value"] for name, item in json.loads(result.stdout or "{}").items()}
    if not values:
        raise TenantNotAppliedError(f"tenant '{tenant_id}' has no outputs (not applied, or destroyed); "
                                    f"run make apply TENANT={tenant_id}")
    return values


def write_lake_json(tenant_id: str) -> Path:
    values = outputs(tenant_id)
    if env_name() == "local":
        from infra.local import emulator as emu

        state = emu.read_state(state_dir())
        if state is not None:
            values.update(s3_endpoint=state.endpoint, ca_bundle=state.ca_bundle, truststore=state.truststore)
    path = work_dir(tenant_id) / LAKE_JSON
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(values, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
    return path


# ---------------------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------------------
def _printer(prefix: str) -> Printer:
    lock = _PRINT_LOCK

    def echo(line: str) -> None:
        with lock:
            print(f"{prefix}{line}", flush=True)

    return echo


_PRINT_LOCK = threading.Lock()


def run_tenant(run: TenantRun, command: str, env: Mapping[str, str], extra: list[str], echo: Printer) -> int:
    """Run one command for one already-validated tenant whose environment is prepared."""
    binary = terragrunt_binary()
    if binary:
        code = real_terragrunt(binary, run, command, env, extra, echo)
    else:
        code = fallback(run, command, env, extra, echo)
    if command == "apply":
        echo(f"wrote {write_lake_json(run.name)}")
    elif command == "force-unlock":
        echo(f"tenant '{run.name}': state lock {extra[0] if extra else '?'} released")
    elif command == "destroy":
        (work_dir(run.name) / LAKE_JSON).unlink(missing_ok=True)
    return code


def _prepare(runs: list[TenantRun], command: str, echo: Printer, tenants_dir: Path) -> tuple[list[TenantRun], dict[str, str]]:
    """Start/reuse the emulator, then evaluate the (already validated) tenant files again in that environment."""
    env = run_env()
    os.environ.update(env)  # the fallback's get_env reads the process env, as terragrunt reads its own
    runs = [load_tenant(run.name, tenants_dir) for run in runs]
    if env_name() == "local":
        for run in runs:
            ensure_state_bucket(run, env)
        if command in ("plan", "apply"):
            for run in runs:
                ensure_network(run, env, echo)
    return runs, env


def cmd_single(tenant_id: str, command: str, tenants_dir: Path, extra: list[str]) -> int:
    run = load_tenant(tenant_id, tenants_dir)
    others = [load_tenant(n, tenants_dir) for n in tenant_names(tenants_dir) if n != tenant_id]
    check_no_collisions([run, *others])
    if command == "validate":
        print(f"tenant '{tenant_id}': ok (state key {run.state_key}, bucket {run.backend_config['bucket']})")
        return 0
    if command == "output":
        print(json.dumps(outputs(tenant_id, tenants_dir), indent=2, sort_keys=True))
        return 0
    echo = _printer("")
    (run,), env = _prepare([run], command, echo, tenants_dir)
    return run_tenant(run, command, env, extra, echo)


def cmd_all(command: str, tenants_dir: Path, parallelism: int, extra: list[str]) -> int:
    runs = load_all(tenants_dir)
    if not runs:
        raise TerragruntError(f"no tenants under {_rel(tenants_dir)}")
    runs, env = _prepare(runs, command, _printer("[network] "), tenants_dir)
    failures: list[str] = []
    codes: dict[str, int] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, parallelism)) as pool:
        futures = {pool.submit(run_tenant, run, command, env, extra, _printer(f"[{run.name}] ")): run for run in runs}
        for future in concurrent.futures.as_completed(futures):
            name = futures[future].name
            try:
                codes[name] = future.result()
            except TerragruntError as exc:
                failures.append(f"{name}: {exc}")
    for line in failures:
        print(f"error: {line}", file=sys.stderr)
    summary = ", ".join(f"{name}={'failed' if name not in codes else codes[name]}" for name in sorted(r.name for r in runs))
    print(f"{command} {summary}")
    if failures:
        return 1
    return 2 if any(code == 2 for code in codes.values()) else 0


def synth_if_stale() -> int:
    """The before_hook: re-synthesize the module when a source it is built from is newer than it."""
    built = REPO_ROOT / "infra" / "build" / "tenant_lake" / "main.tf.json"
    sources = [*REPO_ROOT.glob("modules/*.py"), *REPO_ROOT.glob("infra/*.py")]
    sources = [p for p in sources if p.name != "terragrunt.py"]
    if os.environ.get("TENANTLAKE_MODULE_SOURCE"):
        return 0  # a module built elsewhere: not ours to rebuild
    if built.is_file() and all(p.stat().st_mtime <= built.stat().st_mtime for p in sources):
        return 0
    print("synth: the tenant module is missing or older than its sources; re-synthesizing (python -m infra.synth)", flush=True)
    return subprocess.run([sys.executable, "-m", "infra.synth"], cwd=REPO_ROOT).returncode


def print_env() -> int:
    env = run_env()
    for key in ("TENANTLAKE_ENV", "TENANTLAKE_STATE_ACCOUNT_ID", "TENANTLAKE_STATE_REGION", "TENANTLAKE_AWS_ENDPOINT",
                "AWS_CA_BUNDLE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "TF_CLI_CONFIG_FILE"):
        value = env.get(key)
        if value:
            print(f"export {key}={value}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        extra, argv = argv[argv.index("--") + 1:], argv[:argv.index("--")]
    parser = argparse.ArgumentParser(prog="python -m infra.terragrunt", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=[*COMMANDS, "plan-all", "apply-all", "env", "synth-if-stale"])
    parser.add_argument("--tenant", default=None, help="tenant directory name under tenants/")
    parser.add_argument("--tenants-dir", default=str(DEFAULT_TENANTS_DIR), help="default: tenants/")
    parser.add_argument("--lock-id", default=None,
                        help="force-unlock: the lock ID a killed run left (printed by the run that found the lock)")
    parser.add_argument("--parallelism", type=int, default=DEFAULT_PARALLELISM,
                        help=f"tenants run at once by plan-all/apply-all (default {DEFAULT_PARALLELISM})")
    args = parser.parse_args(argv)
    tenants_dir = Path(args.tenants_dir)
    try:
        os.environ.update(static_env())
        if args.command == "synth-if-stale":
            return synth_if_stale()
        if args.command == "env":
            return print_env()
        if args.command in ("plan-all", "apply-all"):
            return cmd_all(args.command.removesuffix("-all"), tenants_dir, args.parallelism, extra)
        if not args.tenant:
            known = ", ".join(tenant_names(tenants_dir))
            raise TerragruntError(f"{args.command} needs a tenant: make {args.command} TENANT=<{known}>")
        if args.command == "force-unlock":
            if not args.lock_id:
                raise TerragruntError("force-unlock needs the lock ID: --lock-id <ID> (the locked run printed it)")
            extra = [args.lock_id]
        return cmd_single(args.tenant, args.command, tenants_dir, extra)
    except (TerragruntError, tenant_model.TenantConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, tenant_model.TenantConfigError) else 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
