"""Terragrunt semantics: what a unit's ``terragrunt.hcl`` means once its include is merged.

``load_tenant`` reads ``tenants/<tenant>/terragrunt.hcl`` and the root file it includes, evaluates them
(``infra.terragrunt.hcl``) the way Terragrunt would (the included root is evaluated in the child's
context; inputs are shallow-merged, the child's winning), validates the inputs with ``tenant_model`` and
returns what terragrunt would run: module source, generated files, backend config, hooks and inputs.
"""
from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any, Callable, Mapping

from infra import platform as platform_model
from infra import platform_lake_formation
import tenant_model
from infra.terragrunt.environment import DEFAULT_TENANTS_DIR
from infra.terragrunt.environment import rel as _rel
from infra.terragrunt.errors import TerragruntError, UnsupportedConstruct
from infra.terragrunt.hcl import EvalContext, evaluate

ROOT_CONFIG_NAME = "root.hcl"
TENANT_CONFIG_NAME = "terragrunt.hcl"
ROOT_BLOCKS = {"locals", "inputs", "terraform", "remote_state", "generate"}
CHILD_BLOCKS = {"include", "locals", "inputs", "dependency", "terraform"}
DEPENDENCY_KEYS = {"config_path", "mock_outputs", "mock_outputs_allowed_terraform_commands"}
PLATFORM_DIR = "_platform"  # tenants/_platform/<name>/terragrunt.hcl: platform units, never tenants
# A platform unit's kind is the start of its directory name (<kind> or <kind>-<anything>), and names its inputs'
# model: the shared cluster network (infra/platform.py), one account's Lake Formation settings in one region
# (infra/platform_lake_formation.py).
PLATFORM_KINDS: dict[str, Callable[[Mapping[str, Any], str], Any]] = {
    "network": platform_model.from_inputs,
    platform_lake_formation.UNIT_KIND: platform_lake_formation.from_inputs,
}
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
class Dependency:
    """A ``dependency "<name>"`` block: the unit whose outputs ``dependency.<name>.outputs.*`` read."""

    name: str                                  # the block label
    unit: str                                  # the unit it points at, relative to the tenants dir
    config_path: Path                          # that unit's directory
    mock_outputs: dict[str, Any] | None = None
    mock_commands: tuple[str, ...] | None = None  # mock_outputs_allowed_terraform_commands; None: unset

    def mocks_allowed(self, command: str) -> bool:
        """Terragrunt's rule: mocks stand in when the unit has no outputs, for the listed commands (any when unset)."""
        return self.mock_outputs is not None and (self.mock_commands is None or command in self.mock_commands)


@dataclasses.dataclass(frozen=True)
class UnitRun:
    """A unit's file, fully evaluated: what terragrunt would run for it.  A unit is a tenant
    (``tenants/<tenant>/``) or a platform unit (``tenants/_platform/<name>/``)."""

    name: str                      # path under tenants/: "acme", "_platform/network"
    config_path: Path
    inputs: dict[str, Any]
    config: Any                    # tenant_model.TenantConfig, or the platform unit's config (PLATFORM_KINDS)
    source: str
    backend: str
    backend_config: dict[str, Any]
    backend_file: GeneratedFile | None
    generate: tuple[GeneratedFile, ...]
    before_hooks: tuple[Hook, ...]
    dependencies: tuple[Dependency, ...] = ()
    mocked: tuple[str, ...] = ()   # dependencies whose mock_outputs stood in for their outputs

    @property
    def state_key(self) -> str:
        return self.backend_config["key"]

    @property
    def is_tenant(self) -> bool:
        return not self.name.startswith(PLATFORM_DIR + "/")

    @property
    def kind(self) -> str:
        """``tenant``, or the platform unit's kind (``PLATFORM_KINDS``: ``network``, ``lake-formation``)."""
        return "tenant" if self.is_tenant else platform_kind(self.name)


def platform_kind(name: str) -> str:
    """The kind of the platform unit ``_platform/<dir>``: the key of ``PLATFORM_KINDS`` its directory is named after
    (``<kind>`` or ``<kind>-...``); another name is a one-line error."""
    folder = name.split("/", 1)[1] if "/" in name else name
    for kind in PLATFORM_KINDS:
        if folder == kind or folder.startswith(kind + "-"):
            return kind
    raise TerragruntError(f"unit '{name}': a platform unit's directory is named after its kind, one of "
                          f"{', '.join(PLATFORM_KINDS)} (e.g. _platform/network, _platform/lake-formation-eu-west-1); "
                          "rename it (tenants/README.md)")


TenantRun = UnitRun  # the name other code and the tests use for a tenant's unit

# What a dependency's outputs are when they are read: a dict, or None when the unit has none (not applied).
OutputsOf = Callable[[Dependency], "dict[str, Any] | None"]


# python-hcl2 parses with one module-level Lark parser and transformer, which are not thread-safe: two units
# resolved at once by plan-all/apply-all/destroy-all workers could get each other's half-parsed trees (seen as an
# include path left as the literal text `find_in_parent_folders("root.hcl")`). One parse at a time.
_HCL_LOCK = threading.Lock()


def _load_hcl(path: Path) -> dict[str, Any]:
    import hcl2

    try:
        with open(path) as fh, _HCL_LOCK:
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


def load_tenant(name: str, tenants_dir: Path | str = DEFAULT_TENANTS_DIR, command: str = "validate",
                outputs_of: OutputsOf | None = None) -> UnitRun:
    """Parse and evaluate ``tenants/<name>/terragrunt.hcl`` (+ its include), then validate the inputs."""
    tenants_dir = Path(tenants_dir)
    known = tenant_names(tenants_dir)
    if name not in known:
        raise TerragruntError(f"unknown tenant {name!r}: no {_rel(tenants_dir / (name or '<empty>') / TENANT_CONFIG_NAME)} "
                              f"(tenants: {', '.join(known) or 'none'})")
    return load_unit(name, tenants_dir, command, outputs_of)


def load_unit(name: str, tenants_dir: Path | str = DEFAULT_TENANTS_DIR, command: str = "validate",
              outputs_of: OutputsOf | None = None) -> UnitRun:
    """Parse and evaluate the unit ``tenants/<name>/terragrunt.hcl`` (+ its include) and validate its inputs.

    ``dependency.<d>.outputs.*`` read ``outputs_of(dependency)``; without ``outputs_of`` (validating before
    anything runs) or when it returns None (the dependency is not applied), the dependency's
    ``mock_outputs`` stand in if they are allowed for ``command``, as Terragrunt does; otherwise reading
    them is a one-line error."""
    tenants_dir = Path(tenants_dir)
    units = unit_names(tenants_dir)
    if name not in units:
        raise TerragruntError(f"unknown unit {name!r}: no {_rel(tenants_dir / (name or '<empty>') / TENANT_CONFIG_NAME)} "
                              f"(units: {', '.join(units) or 'none'})")
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

    # dependency blocks: their config_path first (the run order needs only those), then their outputs.
    dependencies, mocked = [], []
    for dep_name, block in _named(child.get("dependency", []), child_path, "dependency").items():
        _check_keys(block, DEPENDENCY_KEYS, child_path, f"dependency.{dep_name}")
        if "config_path" not in block:
            raise TerragruntError(f"{_rel(child_path)}: dependency.{dep_name}: config_path is required")
        value = eval_in(child_ctx, f"dependency.{dep_name}", block)
        folder = (child_path.parent / str(value["config_path"])).resolve()
        try:
            unit = str(folder.relative_to(tenants_dir.resolve()))
        except ValueError:
            unit = ""
        if unit not in units or unit == name:
            raise TerragruntError(f"{_rel(child_path)}: dependency.{dep_name}.config_path {value['config_path']}: no "
                                  f"other unit there (units: {', '.join(u for u in units if u != name)})")
        mock_commands = value.get("mock_outputs_allowed_terraform_commands")
        if mock_commands is not None and not (isinstance(mock_commands, list) and all(isinstance(c, str) for c in mock_commands)):
            raise TerragruntError(f"{_rel(child_path)}: dependency.{dep_name}.mock_outputs_allowed_terraform_commands: "
                                  "must be a list of command names")
        mocks = value.get("mock_outputs")
        if mocks is not None and not isinstance(mocks, dict):
            raise TerragruntError(f"{_rel(child_path)}: dependency.{dep_name}.mock_outputs: must be a map")
        dependencies.append(Dependency(dep_name, unit, folder, mocks, tuple(mock_commands) if mock_commands is not None else None))
    resolved: dict[str, Any] = {}
    for dep in dependencies:
        values = outputs_of(dep) if outputs_of is not None else None
        if values is None and dep.mocks_allowed(command):
            values = dep.mock_outputs
            mocked.append(dep.name)
        resolved[dep.name] = values if values is not None else _not_available(dep, command, outputs_of is None)
    child_ctx.dependency_outputs = resolved

    # inputs: the root's, then the unit's on top (Terragrunt's shallow merge).
    inputs: dict[str, Any] = {}
    if root_ctx is not None and "inputs" in root:
        inputs.update(eval_in(root_ctx, "inputs", _single(root["inputs"], root_path, "inputs")))
    if "inputs" in child:
        inputs.update(eval_in(child_ctx, "inputs", _single(child["inputs"], child_path, "inputs")))

    source, hooks, backend, backend_config, backend_file, generated = "", [], "", {}, None, []
    # A terraform block in the unit replaces the root's (shallow merge): a platform unit's own module source.
    tf_file, tf_ctx, tf_block = ((child_path, child_ctx, child["terraform"]) if "terraform" in child else
                                 (root_path, root_ctx, root.get("terraform")) if root_ctx is not None else (None, None, None))
    if tf_block is not None:
        tf = _single(tf_block, tf_file, "terraform")
        _check_keys(tf, TERRAFORM_KEYS, tf_file, "terraform")
        source = eval_in(tf_ctx, "terraform.source", tf.get("source", ""))
        check_local_source(source, tf_file)
        for hook_name, hook in _named(tf.get("before_hook", []), tf_file, "before_hook").items():
            _check_keys(hook, HOOK_KEYS, tf_file, f"terraform.before_hook.{hook_name}")
            hook_value = eval_in(tf_ctx, f"terraform.before_hook.{hook_name}", hook)
            hooks.append(Hook(hook_name, tuple(hook_value["commands"]), tuple(hook_value["execute"]),
                              hook_value.get("working_dir", "")))
    if root_ctx is not None:
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

    if name.startswith(PLATFORM_DIR + "/"):
        config = PLATFORM_KINDS[platform_kind(name)](inputs, name)
    else:
        config = tenant_model.from_inputs(inputs, source=name)
        known = tenant_names(tenants_dir)
        if config.tenant_id != name and config.tenant_id in known:
            raise tenant_model.TenantConfigError(
                config.tenant_id, "tenant_id", f"duplicate tenant id: tenants/{name}/ and tenants/{config.tenant_id}/ "
                "both declare it; each tenant needs its own id, equal to its directory name")
        if config.tenant_id != name:
            raise tenant_model.TenantConfigError(config.tenant_id, "tenant_id",
                                                 f"must equal its directory name tenants/{name}/ (it names the state key)")
    return UnitRun(name, child_path, inputs, config, source, backend, backend_config, backend_file,
                   tuple(generated), tuple(hooks), tuple(dependencies), tuple(mocked))


class _Unavailable(dict):
    """The outputs of a dependency that has none and no mocks for this command: reading one is an error."""

    def __init__(self, message: str):
        super().__init__()
        self.message = message


def _not_available(dep: Dependency, command: str, validating: bool) -> _Unavailable:
    if validating:
        return _Unavailable(f"dependency {dep.name} ({dep.unit}) has no mock_outputs allowed for validate, and the "
                            "runner validates every unit before anything runs; add mock_outputs (and \"validate\" to "
                            "mock_outputs_allowed_terraform_commands)")
    return _Unavailable(f"dependency {dep.name} ({dep.unit}) is not applied, and its mock_outputs are not allowed for "
                        f"{command}: apply it first (make apply UNIT={dep.unit}, or make apply-all)")


def check_local_source(source: str, path: Path | None) -> None:
    """The fallback runs local module sources only."""
    if "::" in source or source.startswith(("git@", "http://", "https://", "s3::", "tfr://")):
        where = f"{_rel(path)}: " if path else ""
        raise UnsupportedConstruct(f"{where}terraform.source {source!r}: the terragrunt fallback supports local paths only")


def tenant_names(tenants_dir: Path | str = DEFAULT_TENANTS_DIR) -> list[str]:
    """The tenants: ``tenants/<tenant>/terragrunt.hcl`` (directories starting with ``_`` hold no tenant)."""
    return sorted(p.parent.name for p in Path(tenants_dir).glob(f"*/{TENANT_CONFIG_NAME}")
                  if not p.parent.name.startswith("_"))


def platform_unit_names(tenants_dir: Path | str = DEFAULT_TENANTS_DIR) -> list[str]:
    """The platform units: ``tenants/_platform/<name>/terragrunt.hcl``."""
    return sorted(f"{PLATFORM_DIR}/{p.parent.name}" for p in Path(tenants_dir).glob(f"{PLATFORM_DIR}/*/{TENANT_CONFIG_NAME}"))


def unit_names(tenants_dir: Path | str = DEFAULT_TENANTS_DIR) -> list[str]:
    """Every unit: the platform units, then the tenants."""
    return [*platform_unit_names(tenants_dir), *tenant_names(tenants_dir)]


def load_all(tenants_dir: Path | str = DEFAULT_TENANTS_DIR) -> list[UnitRun]:
    """Every tenant, validated, with no two sharing an id, a bucket or a state key."""
    runs = [load_tenant(name, tenants_dir) for name in tenant_names(tenants_dir)]
    check_no_collisions(runs)
    return runs


def load_units(tenants_dir: Path | str = DEFAULT_TENANTS_DIR) -> list[UnitRun]:
    """Every unit (platform units first, then tenants), validated; no two tenants collide."""
    units = [load_unit(name, tenants_dir) for name in platform_unit_names(tenants_dir)]
    return [*units, *load_all(tenants_dir)]


def check_no_collisions(runs: list[UnitRun]) -> None:
    tenants = [r for r in runs if r.is_tenant]
    tenant_model.check_unique([r.config for r in tenants])
    seen: dict[str, str] = {}
    for run in runs:
        keys = [("state key", run.state_key)]
        if run.is_tenant:
            keys += [("lake bucket", run.config.lake_bucket_name), ("KMS alias", run.config.kms_alias)]
        for kind, value in keys:
            other = seen.get(f"{kind}:{value}")
            if other:
                owner = "tenant" if not other.startswith(PLATFORM_DIR + "/") else "unit"
                raise tenant_model.TenantConfigError(run.name, "tenant_id", f"{kind} {value} is also used by {owner} '{other}'")
            seen[f"{kind}:{value}"] = run.name
