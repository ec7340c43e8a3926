"""Terragrunt semantics: what a unit's ``terragrunt.hcl`` means once its include is merged.

``load_tenant`` reads ``tenants/<tenant>/terragrunt.hcl`` and the root file it includes, evaluates them
(``infra.terragrunt.hcl``) the way Terragrunt would (the included root is evaluated in the child's
context; inputs are shallow-merged, the child's winning), validates the inputs with ``infra.tenant`` and
returns what terragrunt would run: module source, generated files, backend config, hooks and inputs.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping

from infra import tenant as tenant_model
from infra.terragrunt.environment import DEFAULT_TENANTS_DIR
from infra.terragrunt.environment import rel as _rel
from infra.terragrunt.errors import TerragruntError, UnsupportedConstruct
from infra.terragrunt.hcl import EvalContext, evaluate

ROOT_CONFIG_NAME = "root.hcl"
TENANT_CONFIG_NAME = "terragrunt.hcl"
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


