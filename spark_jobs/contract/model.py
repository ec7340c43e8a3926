"""Dataset contracts: YAML data (``spark_jobs/contracts/<dataset>.yaml``) validated by a typed pydantic model.

A contract says what a dataset looks like (schema, key, event time, landing format), which row rules
decide silver vs quarantine, which gold transformations run, which extra expectations apply per layer,
and how its tables may change (``evolution``). The engine reads only contracts, so adding a dataset is
adding a file (plus, if it needs one, a gold transformation in ``spark_jobs/transforms/gold/<name>.py``).

The model is the grammar: every type below is a frozen pydantic dataclass, so a file that breaks a rule
(a typo in a key, a wrong type, a key column that is not in the schema) is refused with ONE line naming
the dataset, the path of the field and the rule (``ContractError``), and ``contract_json_schema()`` is the
same grammar as a JSON Schema for editors (``python -m spark_jobs contract schema``).

Row-rule names (quarantine reasons, shared with the data-quality reports):
``<col>_required``, ``<col>_type``, ``<col>_range``, ``<col>_allowed``, ``<col>_regex``,
``malformed_record`` (unparseable input), ``unknown_fields`` (a field the schema does not know, when
``allow_extra_fields`` is false) and each explicit rule's ``name``.
"""
from __future__ import annotations

import dataclasses
import difflib
import hashlib
import importlib.resources
import json
import os
import re
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import TypeAdapter, ValidationError, field_validator, model_validator
from pydantic.dataclasses import dataclass
from pydantic.json_schema import SkipJsonSchema, WithJsonSchema

from tenant_model import PERSONAL_DATA_CLASSIFICATIONS
from spark_jobs.contract.parts import (
    CASES, CSV_OPTIONS, DATASET_NAME_RE, DEFAULT_EVOLUTION, DEFAULT_LATENESS_MINUTES, DEFAULT_PARTITION_GRANULARITY,
    DERIVED_ATTRIBUTES, EVOLUTION_POLICIES, LANDING_FORMATS, MODEL_CONFIG, ORCHESTRATION_ATTRIBUTES,
    PARTITION_GRANULARITIES, SUBJECT_KEY_TYPES, ArrivalTrigger, ColumnSpec, ContractError, DerivedColumn, Freshness,
    LandingSpec, RowRule, ScheduleTrigger, SubjectKey, Trigger, is_decimal_type, one_of, refuse, strict_bool,
    subject_keys_json)

# Packaged contracts are read as package resources, not through Path(__file__): on EMR the package
# runs from a zip on --py-files, where there is no real folder.
CONTRACTS_DIR = importlib.resources.files("spark_jobs") / "contracts"
CONTRACTS_DIR_ENV = "TENANTLAKE_CONTRACTS_DIR"  # optional extra folder searched first


@dataclass(frozen=True, config=MODEL_CONFIG)
class Contract:
    """A dataset contract. See ``spark_jobs/contracts/iot.yaml`` for a commented example.

    Attributes:
        dataset: name, also the folder name in every layer.
        landing: the landing format and its options (``LandingSpec``); ``landing_format`` is its format.
        source_field: the per-source field (sensor, site, org): datagen and streams partition by it,
            bronze exposes it as a column. @default - None (a dataset with one source)
        key: the dedupe key; the latest ``_ingested_at`` wins, ties broken by batch, file, position.
        event_time: the timestamp column; ``event_date`` (silver partition) derives from it.
        schema: the silver columns (entries marked ``removed: true`` in the file are not among them).
        lateness_minutes: a record is late when its event time is older than the newest event time in
            its landing file by more than this. @default - 30
        allow_extra_fields: when false, unknown fields fail ``unknown_fields``. @default - False
        gold: gold transformation names (modules in ``spark_jobs/transforms/gold/``). @default - ()
        gold_options: per gold name, a dict passed to its ``build``. @default - {}
        expectations: raw per-layer expectation dicts, interpreted by ``spark_jobs.quality``.
        subject_keys: the columns that identify a data subject (a person): what ``erase --subject
            <column>=<value>`` matches on. ``()`` declares that the dataset holds no personal data. Required
            (may be ``[]``) when the tenant is classified pii or gdpr. In the file an entry is a column name
            or ``{column: C, pattern: REGEX, min_length: N}``. @default - None (not declared)
        subject_key_rules: per subject key, the id rules erasure requests must meet (``SubjectKey``).
            @default - () (one default ``SubjectKey`` per name in ``subject_keys``)
        personal_data: the other columns that hold personal data (documentation for reviewers, and the
            columns the erasure receipt lists). @default - ()
        pseudonymise_gold: gold tables carry a keyed hash (HMAC-SHA256 with the tenant's erasure key)
            instead of each subject key's value, so a consumer never sees raw identifiers. @default - False
        partition_granularity: ``day`` (one partition per event date) or ``month`` (one per event month,
            for a low-volume dataset that would otherwise become hundreds of tiny files a year) for the
            silver table, the gold tables and the quarantine. @default - "day"
        evolution: how the dataset's tables may change when the contract does: ``strict`` (no change),
            ``additive`` (new columns, wider types) or ``permissive`` (also renames and drops).
            @default - "additive" (spark_jobs/README.md, "Schema evolution")
        ignored_fields: landing fields silver reads past (never ``unknown_fields``): the file's own list
            plus the landing field of every schema column marked ``removed: true``. @default - ()
        removed_columns: the columns the file marks ``removed: true`` (schema and derived), dropped on
            purpose. @default - ()
        trigger: what starts the dataset's pipeline on AWS: a ``schedule`` (cron, time zone), ``on_arrival``
            (landing objects, debounced) or both (``Trigger``). @default - None (only deploys run it)
        freshness: the longest acceptable time since the last silver publish (``Freshness``), a CloudWatch
            alarm per dataset. @default - None (no alarm)
    """

    dataset: str
    """The dataset's name, also its folder in every layer."""
    description: str
    """What the data is."""
    landing: LandingSpec
    """The landing format and its options."""
    source_field: str | None
    """The per-source field (sensor, site, org). @default - none (one source)"""
    key: tuple[str, ...]
    """The dedupe key: schema columns."""
    event_time: str
    """The timestamp column event_date derives from."""
    schema: tuple[ColumnSpec, ...]
    """The silver columns."""
    rules: tuple[RowRule, ...] = ()
    """Explicit row rules."""
    derived: tuple[DerivedColumn, ...] = ()
    """Silver enrichment."""
    gold: tuple[str, ...] = ()
    """Gold transformations (modules in spark_jobs/transforms/gold/)."""
    gold_options: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    """Per gold name, the options passed to its build."""
    expectations: dict[str, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)
    """Per layer, extra expectations or overrides (spark_jobs/quality/README.md)."""
    lateness_minutes: int = DEFAULT_LATENESS_MINUTES
    """A record older than its landing file's newest record by more than this is late. @default - 30"""
    allow_extra_fields: bool = False
    """When false, a landing field the contract does not know fails unknown_fields. @default - false"""
    subject_keys: Annotated[tuple[str, ...] | None, WithJsonSchema(subject_keys_json())] = None
    personal_data: tuple[str, ...] = ()
    """The other columns that hold personal data."""
    pseudonymise_gold: bool = False
    """Gold carries a keyed hash of each subject key instead of its value. @default - false"""
    partition_granularity: str = DEFAULT_PARTITION_GRANULARITY
    """day or month: the partitions of silver, gold and the quarantine. @default - day"""
    evolution: str = DEFAULT_EVOLUTION
    """strict, additive or permissive: which table changes a contract change may make. @default - additive"""
    ignored_fields: tuple[str, ...] = ()
    """Landing fields silver reads past (never unknown_fields), besides those of removed columns."""
    trigger: Trigger | None = None
    """What starts the pipeline on AWS: schedule, on_arrival or both. @default - only deploys run it"""
    freshness: Freshness | None = None
    """The longest acceptable time since the last silver publish. @default - no freshness alarm"""
    subject_key_rules: SkipJsonSchema[tuple[SubjectKey, ...]] = ()
    removed_columns: SkipJsonSchema[tuple[str, ...]] = ()

    @model_validator(mode="before")
    @classmethod
    def _file_form(cls, data: Any) -> Any:
        """A file (a mapping) gives ``subject_keys`` as names or ``{column, pattern, min_length}``: they become
        ``subject_keys`` (the names) and ``subject_key_rules``. Empty required fields count as missing."""
        if not isinstance(data, dict):
            return data
        derived = sorted(set(data) & set(DERIVED_ATTRIBUTES))
        if derived:
            raise refuse(f"is not a contract key (derived from {'subject_keys' if derived[0] == 'subject_key_rules' else 'removed: true entries'})",
                          derived[0])
        data = {k: v for k, v in data.items() if not (k in ("landing", "schema", "key", "event_time")
                                                          and v in (None, "", []))}
        data.setdefault("description", "")
        data["description"] = str(data["description"] or "").strip()
        data.setdefault("source_field", None)
        data["source_field"] = data["source_field"] or None
        for name in ("rules", "derived", "gold", "gold_options", "expectations", "personal_data", "ignored_fields"):
            if name in data and data[name] is None:
                data.pop(name)
        if isinstance(data.get("expectations"), dict):
            data["expectations"] = {layer: list(items or []) for layer, items in data["expectations"].items()}
        if "subject_keys" in data:
            keys = data["subject_keys"] if data["subject_keys"] is not None else []
            if not isinstance(keys, list):
                raise refuse("must be a list of schema column names, e.g. [user_id], or []", "subject_keys")
            rules = []
            for index, item in enumerate(keys):
                item = {"column": item} if isinstance(item, str) else item
                if not isinstance(item, dict) or not isinstance(item.get("column"), str):
                    raise refuse("must be a column name or {column: C, pattern: REGEX, min_length: N}",
                                  f"subject_keys[{index}]")
                rules.append(item)
            data["subject_keys"] = [item["column"] for item in rules]
            data["subject_key_rules"] = rules
        return data

    @field_validator("allow_extra_fields", "pseudonymise_gold", mode="before")
    @classmethod
    def _flags(cls, value: Any) -> Any:
        return strict_bool(value)

    @field_validator("lateness_minutes", mode="before")
    @classmethod
    def _lateness(cls, value: Any) -> Any:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise refuse(f"must be a whole number of minutes, at least 0, got {value!r}")
        return value

    @field_validator("partition_granularity")
    @classmethod
    def _granularity(cls, value: str) -> str:
        if value not in PARTITION_GRANULARITIES:
            raise refuse(f"must be one of {', '.join(PARTITION_GRANULARITIES)}, got {value!r}")
        return value

    @field_validator("evolution")
    @classmethod
    def _evolution(cls, value: str) -> str:
        return one_of(value, EVOLUTION_POLICIES)

    @model_validator(mode="after")
    def _contract(self) -> "Contract":
        """The rules across fields, in the order a reader of the file meets them."""
        if any(col.removed for col in self.schema) or any(d.removed for d in self.derived):
            removed_fields = tuple(col.landing_name for col in self.schema if col.removed and col.landing_name)
            object.__setattr__(self, "removed_columns", tuple(dict.fromkeys(
                [*self.removed_columns, *(c.name for c in self.schema if c.removed),
                 *(d.name for d in self.derived if d.removed)])))
            object.__setattr__(self, "ignored_fields", tuple(dict.fromkeys([*self.ignored_fields, *removed_fields])))
            object.__setattr__(self, "schema", tuple(col for col in self.schema if not col.removed))
            object.__setattr__(self, "derived", tuple(d for d in self.derived if not d.removed))
        if not self.schema:
            raise refuse("is required (at least one column that is not removed)", "schema")
        names = [col.name for col in self.schema]
        if len(set(names)) != len(names):
            raise refuse("column names must be unique", "schema")
        sources = self.landing_fields
        if len(set(sources)) != len(sources):
            raise refuse("two columns read the same landing field (`source`)", "schema")
        renamed = [col.renamed_from for col in self.schema if col.renamed_from]
        clash = next((old for old in renamed if old in names or renamed.count(old) > 1), None)
        if clash:
            raise refuse(f"renamed_from '{clash}' is another column's name (or named twice)", "schema")
        for field in self.key:
            if field not in names:
                raise refuse(f"'{field}' is not a schema column" + (" (it is removed)" if field in self.removed_columns
                                                                        else ""), "key")
        if self.event_time not in names or self.column(self.event_time).type != "timestamp":
            raise refuse(f"'{self.event_time}' must be a timestamp column of the schema", "event_time")
        if self.source_field is not None and self.source_field not in names:
            raise refuse(f"'{self.source_field}' is not a schema column", "source_field")
        for name in self.gold_options:
            if name not in self.gold:
                raise refuse("names no gold transformation listed in `gold`", f"gold_options.{name}")
        known = [field for field in self.ignored_fields if field in sources]
        if known:
            raise refuse(f"'{known[0]}' is the landing field of a schema column; a field is read or ignored, not both",
                          "ignored_fields")
        self._check_personal_data_fields(names)
        return self

    def _check_personal_data_fields(self, names: list[str]) -> None:
        types = {col.name: col.type for col in self.schema}
        for index, column in enumerate(self.subject_keys or ()):
            if column not in types:
                raise refuse(f"'{column}' is not a schema column", "subject_keys")
            if types[column] not in SUBJECT_KEY_TYPES and not is_decimal_type(types[column]):
                raise refuse(f"'{column}' is {types[column]}: a subject key is string, int, long or decimal(P,S)",
                              f"subject_keys[{index}]")
        if self.subject_keys is not None and len(set(self.subject_keys)) != len(self.subject_keys):
            raise refuse("names a column twice", "subject_keys")
        for name in self.personal_data:
            if name not in names:
                raise refuse(f"'{name}' is not a schema column", "personal_data")
        if len(set(self.personal_data)) != len(self.personal_data):
            raise refuse("names a column twice", "personal_data")
        if self.pseudonymise_gold and not self.subject_keys:
            raise refuse("needs subject_keys (the columns to replace by a keyed hash)", "pseudonymise_gold")

    def check_personal_data(self, data_classification: tuple[str, ...] | list[str]) -> None:
        """Refuse (one line) a contract that does not declare its subject keys on a tenant that holds
        personal data: without them an erasure request could not be honoured."""
        personal = sorted(set(data_classification) & set(PERSONAL_DATA_CLASSIFICATIONS))
        if personal and self.subject_keys is None:
            raise ContractError(self.dataset, "subject_keys", f"is required for a tenant classified "
                                f"{'/'.join(personal)}: list the columns that identify a data subject, "
                                "e.g. subject_keys: [user_id], or [] if the dataset holds no personal data")

    @property
    def landing_format(self) -> str:
        return self.landing.format

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(col.name for col in self.schema)

    @property
    def landing_fields(self) -> tuple[str, ...]:
        """The landing record's field names this contract knows, in schema order (computed columns have none)."""
        return tuple(col.landing_name for col in self.schema if col.landing_name is not None)

    def column(self, name: str) -> ColumnSpec:
        return next(col for col in self.schema if col.name == name)

    def subject_key(self, column: str) -> SubjectKey:
        """The id rules of one subject key (the defaults when the file gave a bare name)."""
        return next((rule for rule in self.subject_key_rules if rule.column == column), SubjectKey(column))

    @property
    def renames(self) -> dict[str, str]:
        """New column name -> the name it had before (``renamed_from``), for every renamed column."""
        return {col.name: col.renamed_from for col in self.schema if col.renamed_from}

    @property
    def version(self) -> str:
        """The contract's version: ``sha256:`` and 16 hex digits of its normalised content (what the model
        holds, not the file's text: comments and formatting do not change it). Run manifests, lineage
        events and the tables' properties carry it."""
        content = {k: v for k, v in dataclasses.asdict(self).items() if k not in ORCHESTRATION_ATTRIBUTES}
        canonical = json.dumps(content, sort_keys=True, default=str, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()[:16]


_CONTRACT = TypeAdapter(Contract)
_MODELS = {"": Contract, "landing": LandingSpec, "schema": ColumnSpec, "subject_keys": SubjectKey,
           "rules": RowRule, "derived": DerivedColumn, "trigger": Trigger, "freshness": Freshness}
_FILE_KEYS = {Contract: [f.name for f in dataclasses.fields(Contract) if f.name not in DERIVED_ATTRIBUTES]}


def contract_json_schema() -> dict[str, Any]:
    """The contract file's grammar as a JSON Schema (draft 2020-12), for editors (YAML language servers
    read it: ``# yaml-language-server: $schema=<file>``)."""
    schema = _CONTRACT.json_schema(mode="validation")
    for name in ("dataset",):
        schema["properties"][name]["pattern"] = DATASET_NAME_RE
    schema["properties"]["evolution"]["enum"] = list(EVOLUTION_POLICIES)
    schema["properties"]["partition_granularity"]["enum"] = list(PARTITION_GRANULARITIES)
    schema["$defs"]["LandingSpec"]["properties"]["format"]["enum"] = list(LANDING_FORMATS)
    schema["$defs"]["ColumnSpec"]["properties"]["case"]["anyOf"][0]["enum"] = list(CASES)
    schema["required"] = [name for name in schema.get("required", []) if name not in ("description", "source_field")]
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema,
            "title": "tenantlake dataset contract (spark_jobs/contracts/<dataset>.yaml)"}


def contract_dirs() -> list[Any]:
    """Folders searched for ``<dataset>.yaml``: ``$TENANTLAKE_CONTRACTS_DIR`` first, then the packaged
    contracts (a ``Traversable``: a real folder, or a folder inside the zip on EMR)."""
    extra = os.environ.get(CONTRACTS_DIR_ENV, "")
    return ([Path(extra)] if extra else []) + [CONTRACTS_DIR]


def available_datasets() -> list[str]:
    names: set[str] = set()
    for folder in contract_dirs():
        if folder.is_dir():
            names.update(entry.name[: -len(".yaml")] for entry in folder.iterdir() if entry.name.endswith(".yaml"))
    return sorted(names)


def packaged_contracts() -> list[Contract]:
    """The contracts shipped in the package (``spark_jobs/contracts/``, never ``$TENANTLAKE_CONTRACTS_DIR``), by name:
    what the tenant module's orchestration is synthesized from (``infra/orchestration.py``)."""
    files = sorted((entry for entry in CONTRACTS_DIR.iterdir() if entry.name.endswith(".yaml")), key=lambda e: e.name)
    return [parse_contract(yaml.safe_load(entry.read_text()), source=str(entry)) for entry in files]


def contract_path(name: str) -> Any:
    """Where ``<name>.yaml`` is read from (``contract_dirs``), or None."""
    return next((folder / f"{name}.yaml" for folder in contract_dirs() if (folder / f"{name}.yaml").is_file()), None)


def load_contract(name: str) -> Contract:
    """Load ``<name>.yaml`` from ``$TENANTLAKE_CONTRACTS_DIR`` (if set) or the packaged contracts."""
    path = contract_path(name)
    if path is None:
        raise ContractError(name, "dataset", f"no contract file {name}.yaml; known datasets: "
                                             f"{', '.join(available_datasets())}")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise ContractError(name, "(file)", f"{path} is not valid YAML: {where}{getattr(exc, 'problem', None) or exc}"
                            ) from None
    return parse_contract(raw, source=str(path))


def parse_contract(raw: Any, source: str = "<memory>") -> Contract:
    """Validate a contract mapping and build the model; every error names the dataset, the field's path
    and the rule, in one line (``ContractError``)."""
    if not isinstance(raw, dict):
        raise ContractError(source, "(file)", "must be a YAML mapping")
    dataset = str(raw.get("dataset", ""))
    if not re.match(DATASET_NAME_RE, dataset):
        raise ContractError(dataset or source, "dataset", f"must match {DATASET_NAME_RE}")
    try:
        return _CONTRACT.validate_python(raw)
    except ValidationError as exc:
        raise _contract_error(dataset, raw, exc) from None


# ---------------------------------------------------------------------------- one line per refused file
def _contract_error(dataset: str, raw: dict, exc: ValidationError) -> ContractError:
    """The first error pydantic found, as ``contract '<ds>': <path>: <rule>`` (plus how many more)."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc = list(first["loc"])
    ctx = first.get("ctx") or {}
    extra_path = str(ctx.get("path") or "")
    if extra_path:
        loc += _split_path(extra_path)
    if first["type"] in ("extra_forbidden", "unexpected_keyword_argument") and loc:
        rule = _unknown_key(loc)
    else:
        rule = _rule_text(first)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return ContractError(dataset, _path_text(loc, raw), rule + more)


def _split_path(path: str) -> list:
    parts: list = []
    for piece in path.split("."):
        found = re.fullmatch(r"([^\[]+)\[(\d+)\]", piece)
        parts += [found.group(1), int(found.group(2))] if found else [piece]
    return parts


def _path_text(loc: list, raw: dict) -> str:
    """``schema[3] (temp).type``: list indexes in brackets, a schema entry named by its ``name``."""
    loc = ["subject_keys" if part == "subject_key_rules" and index + 1 < len(loc) else part
           for index, part in enumerate(loc)]
    text, node = "", raw
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
            node = node[part] if isinstance(node, list) and part < len(node) else None
            if isinstance(node, dict) and node.get("name"):
                text += f" ({node['name']})"
        else:
            text += f".{part}" if text else str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return text or "(file)"


def _unknown_key(loc: list) -> str:
    """A key the model does not know (a typo): which keys it knows, and the closest one."""
    key, owner = str(loc[-1]), [p for p in loc[:-1] if isinstance(p, str)]
    top = "subject_keys" if owner and owner[0] in ("subject_key_rules", "subject_keys") else (owner[0] if owner else "")
    model = _MODELS.get(top, Contract)
    known = _FILE_KEYS.get(model) or [f.name for f in dataclasses.fields(model)]
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.7)
    hint = f"did you mean `{close[0]}`? " if close else ""
    if model is LandingSpec:
        return f"is not a landing option ({hint}{', '.join(CSV_OPTIONS)})"
    if model is Trigger and len(owner) > 1:  # a key inside trigger.schedule or trigger.on_arrival
        model = ScheduleTrigger if owner[1] == "schedule" else ArrivalTrigger
        known = [f.name for f in dataclasses.fields(model)]
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.7)
        hint = f"did you mean `{close[0]}`? " if close else ""
    what = {Contract: "contract key", ColumnSpec: "column key", SubjectKey: "subject key field",
            RowRule: "rule key", DerivedColumn: "derived-column key", Trigger: "trigger (schedule, on_arrival)",
            ScheduleTrigger: "schedule key", ArrivalTrigger: "on_arrival key", Freshness: "freshness key"}[model]
    return f"is not a {what} ({hint}known: {', '.join(known)})"


def _rule_text(error: dict) -> str:
    kind, value = error["type"], error.get("input")
    ctx = error.get("ctx") or {}
    if kind == "contract_rule":
        return str(ctx["rule"])
    if kind == "missing":
        return "is required"
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    if kind.startswith("bool"):
        return f"must be true or false, got {value!r}"
    if kind.startswith("int"):
        return f"must be a whole number, got {value!r}"
    if kind.startswith("float"):
        return f"must be a number, got {value!r}"
    if kind.startswith("string"):
        return f"must be text, got {value!r}"
    if kind in ("list_type", "tuple_type"):
        return f"must be a list, got {value!r}"
    if kind in ("dict_type", "dataclass_type", "model_type", "dataclass_exact_type"):
        return f"must be a mapping, got {value!r}"
    return error["msg"]
