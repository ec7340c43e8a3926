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
from pydantic import ConfigDict, TypeAdapter, ValidationError, field_validator, model_validator
from pydantic.dataclasses import dataclass
from pydantic.json_schema import SkipJsonSchema, WithJsonSchema
from pydantic_core import ArgsKwargs, PydanticCustomError

from tenant_model import (DEBOUNCE_MINUTES, MAX_FLEXIBLE_WINDOW_MINUTES, MAX_FRESHNESS_MINUTES, MIN_FRESHNESS_MINUTES,
                          PERSONAL_DATA_CLASSIFICATIONS, SCHEDULE_EXPRESSION_RE, TIMEZONE_RE)

# Packaged contracts are read as package resources, not through Path(__file__): on EMR the package
# runs from a zip on --py-files, where there is no real folder.
CONTRACTS_DIR = importlib.resources.files("spark_jobs") / "contracts"
CONTRACTS_DIR_ENV = "TENANTLAKE_CONTRACTS_DIR"  # optional extra folder searched first
LANDING_FORMATS: tuple[str, ...] = ("json_array", "json_lines", "csv", "parquet")
CSV_ESCAPES_OTHER_THAN_QUOTE: tuple[str, ...] = ("\\",)  # besides the quote itself (a doubled quote, RFC 4180)
ENCODINGS: tuple[str, ...] = ("utf-8", "iso-8859-1")
ENCODING_ALIASES = {"utf8": "utf-8", "latin-1": "iso-8859-1", "latin1": "iso-8859-1"}
COLUMN_NAME_RE = r"^[A-Za-z_][A-Za-z0-9_]*$"
COLUMN_TYPES: tuple[str, ...] = ("string", "int", "long", "double", "boolean", "timestamp", "date")
# Besides COLUMN_TYPES: ``decimal(P,S)`` (precision 1-38, scale 0-P), an exact number such as an account id.
DECIMAL_TYPE_RE = r"^decimal\(\s*([0-9]{1,2})\s*,\s*([0-9]{1,2})\s*\)$"
NUMERIC_TYPES: tuple[str, ...] = ("int", "long", "double")  # and every decimal(P,S)
SUBJECT_KEY_TYPES: tuple[str, ...] = ("string", "int", "long")  # and every decimal(P,S)
# Erasure (spark_jobs/erasure): a text id shorter than this is refused, unless a subject key says otherwise. A
# short text id ("ab12") recurs in any text as a whole token, so matching it in reports and logs would hit
# others. A numeric key's id is only ever matched with its key, so any length is accepted (customer 42).
DEFAULT_SUBJECT_ID_MIN_LENGTH = 4
CASES: tuple[str, ...] = ("lower", "upper")
MALFORMED_RULE = "malformed_record"
UNKNOWN_FIELDS_RULE = "unknown_fields"
DATASET_NAME_RE = r"^[a-z][a-z0-9_]{1,39}$"
DEFAULT_TIMESTAMP_FORMAT = "yyyy-MM-dd'T'HH:mm:ss'Z'"
DEFAULT_LATENESS_MINUTES = 30
# Partition granularity of silver, gold and the quarantine (spark_jobs/README.md, "Partition granularity").
PARTITION_GRANULARITIES = ("day", "month")
DEFAULT_PARTITION_GRANULARITY = "day"
# How the dataset's tables may change when the contract changes (spark_jobs/README.md, "Schema evolution"):
# strict: none; additive: new columns and wider types (what no reader's query breaks on); permissive: also
# renames and drops. Every allowed change is metadata-only in Iceberg.
EVOLUTION_POLICIES: tuple[str, ...] = ("strict", "additive", "permissive")
DEFAULT_EVOLUTION = "additive"
CSV_OPTIONS: tuple[str, ...] = ("header", "delimiter", "quote", "escape", "null_values", "encoding")
# Contract attributes the model derives from the file; a file may not set them itself.
DERIVED_ATTRIBUTES: tuple[str, ...] = ("subject_key_rules", "removed_columns")
# Contract attributes that say when the dataset runs and how fresh it must be, not what its data looks like: they
# are left out of ``Contract.version`` (a new schedule is no new version of the tables' contract).
ORCHESTRATION_ATTRIBUTES: tuple[str, ...] = ("trigger", "freshness")


class ContractError(ValueError):
    """A contract file breaks a rule; ``str(err)`` is one line naming the dataset, field and rule."""

    def __init__(self, dataset: str, field: str, rule: str):
        super().__init__(f"contract '{dataset}': {field}: {rule}")


def _refuse(rule: str, path: str = "") -> PydanticCustomError:
    """A rule of ours broken inside a validator: ``rule`` is the message, ``path`` where below the
    validator's own place in the file (``key``, ``min/max``; "" for the place itself)."""
    return PydanticCustomError("contract_rule", "{rule}", {"rule": rule, "path": path})


_MODEL = ConfigDict(extra="forbid", use_attribute_docstrings=True)


def is_decimal_type(type_name: str) -> bool:
    return re.match(DECIMAL_TYPE_RE, type_name) is not None


def decimal_precision_scale(type_name: str) -> tuple[int, int]:
    """(precision, scale) of a ``decimal(P,S)`` type name."""
    found = re.match(DECIMAL_TYPE_RE, type_name)
    if found is None:
        raise ValueError(f"{type_name!r} is not decimal(P,S)")
    return int(found.group(1)), int(found.group(2))


def _regex(value: str | None) -> str | None:
    if value is not None:
        try:
            re.compile(value)
        except re.error as exc:
            raise _refuse(f"invalid regular expression ({exc})") from None
    return value


def _strict_bool(value: Any) -> Any:
    if not isinstance(value, bool):
        raise _refuse(f"must be true or false, got {value!r}")
    return value


def _one_of(value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise _refuse(f"'{value}' is not one of {', '.join(choices)}")
    return value


COLUMN_TYPE_JSON = {"anyOf": [{"enum": [*COLUMN_TYPES, "integer"]}, {"type": "string", "pattern": DECIMAL_TYPE_RE}],
                    "description": "a column type, or decimal(P,S)"}


@dataclass(frozen=True, config=_MODEL)
class ColumnSpec:
    """One silver column. ``min``/``max``/``allowed``/``regex`` each yield a row rule of that name.

    ``source`` is the field's name in the landing record (CSV header, JSON key, Parquet column) when it
    differs from ``name`` (e.g. ``Solar.R``); ``computed`` builds the column's text from the landing
    text of other columns instead (a Spark SQL expression over their names, e.g.
    ``concat(date, ' ', time)``); such a column has no landing field of its own.
    """

    name: str
    """The silver column, ^[A-Za-z_][A-Za-z0-9_]*$."""
    type: Annotated[str, WithJsonSchema(COLUMN_TYPE_JSON)]
    """string, int (or integer), long, double, boolean, timestamp, date or decimal(P,S)."""
    required: bool = False
    """A missing value fails <name>_required. @default - false"""
    min: float | None = None
    """Numeric columns: a smaller value fails <name>_range."""
    max: float | None = None
    """Numeric columns: a larger value fails <name>_range."""
    allowed: tuple[str, ...] | None = None
    """The only values allowed (<name>_allowed)."""
    regex: str | None = None
    """A value that does not match fails <name>_regex."""
    format: str | None = None
    """timestamp/date parse pattern (Spark). @default - ISO-8601 UTC "yyyy-MM-dd'T'HH:mm:ss'Z'" for timestamps"""
    case: str | None = None
    """Normalise strings to lower or upper case before the rules run. @default - none"""
    source: str | None = None
    """The landing field's name. @default - the column's name"""
    computed: str | None = None
    """Spark SQL over other columns' landing text; the column has no landing field. @default - none"""
    renamed_from: str | None = None
    """The column's name in the live tables before a rename (evolution: permissive); Iceberg renames it in place."""
    removed: bool = False
    """Removed on purpose: not a silver column any more; its landing field is ignored, never unknown_fields."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not re.match(COLUMN_NAME_RE, value):
            raise _refuse(f"must match {COLUMN_NAME_RE} (name the landing field in `source` when it has other "
                          "characters)")
        return value

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, value: Any) -> Any:
        if value == "integer":
            return "int"
        if isinstance(value, str) and is_decimal_type(value.strip().lower()):
            value = re.sub(r"\s+", "", value.lower())
            precision, scale = decimal_precision_scale(value)
            if not 1 <= precision <= 38 or scale > precision:
                raise _refuse(f"'{value}': precision must be 1-38 and scale at most the precision")
            return value
        if value not in COLUMN_TYPES:
            raise _refuse(f"'{value}' is not one of {', '.join(COLUMN_TYPES)} or decimal(P,S)")
        return value

    @field_validator("required", "removed", mode="before")
    @classmethod
    def _flags(cls, value: Any) -> Any:
        return _strict_bool(value)

    @field_validator("min", "max", mode="before")
    @classmethod
    def _bound(cls, value: Any) -> Any:
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise _refuse(f"must be a number, got {value!r}")
        return value

    @field_validator("allowed", mode="before")
    @classmethod
    def _allowed(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return tuple(str(v) for v in value)
        return value

    @field_validator("regex")
    @classmethod
    def _valid_regex(cls, value: str | None) -> str | None:
        return _regex(value)

    @field_validator("case")
    @classmethod
    def _case(cls, value: str | None) -> str | None:
        return value if value is None else _one_of(value, CASES)

    @field_validator("source", "renamed_from")
    @classmethod
    def _field_name(cls, value: str | None) -> str | None:
        if value is not None and not value:
            raise _refuse("must be a non-empty string (a field or column name)")
        return value

    @field_validator("computed")
    @classmethod
    def _computed(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise _refuse("must be a Spark SQL expression (text)")
        return value.strip() if value else value

    @model_validator(mode="after")
    def _column(self) -> "ColumnSpec":
        if self.source is not None and self.computed is not None:
            raise _refuse("takes `source` or `computed`, not both")
        if (self.min is not None or self.max is not None) and not self.is_numeric:
            raise _refuse("only numeric columns take a range", "min/max")
        if self.renamed_from == self.name:
            raise _refuse("names the column itself; give the old name", "renamed_from")
        if self.format is None and self.type == "timestamp":
            object.__setattr__(self, "format", DEFAULT_TIMESTAMP_FORMAT)
        return self

    @property
    def landing_name(self) -> str | None:
        """The field this column is read from in a landing record (None for a computed column)."""
        return None if self.computed else (self.source or self.name)

    @property
    def is_decimal(self) -> bool:
        return is_decimal_type(self.type)

    @property
    def is_numeric(self) -> bool:
        return self.type in NUMERIC_TYPES or self.is_decimal


@dataclass(frozen=True, config=_MODEL)
class SubjectKey:
    """How erasure requests name data subjects by one column (an entry of the contract's ``subject_keys``).

    Attributes:
        column: a schema column of type string, int, long or decimal(P,S).
        pattern: a regular expression every id must match in full (after normalisation), else the
            request is refused before anything changes. @default - None (any id)
        min_length: text ids shorter than this (in characters, after normalisation) are refused; a numeric
            key (int, long, decimal) accepts an id of any length. @default - 4 (``DEFAULT_SUBJECT_ID_MIN_LENGTH``)
    """

    column: str
    """A schema column of type string, int, long or decimal(P,S)."""
    pattern: str | None = None
    """A regular expression every id must match in full. @default - any id"""
    min_length: int = DEFAULT_SUBJECT_ID_MIN_LENGTH
    """Text ids shorter than this are refused (a numeric key accepts any length). @default - 4"""

    @field_validator("pattern", mode="before")
    @classmethod
    def _pattern(cls, value: Any) -> Any:
        return _regex(None if value is None else str(value))

    @field_validator("min_length", mode="before")
    @classmethod
    def _min_length(cls, value: Any) -> Any:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise _refuse(f"must be a whole number of at least 1, got {value!r}")
        return value


@dataclass(frozen=True, config=_MODEL)
class LandingSpec:
    """How landing files of a dataset are written (the contract's ``landing`` mapping).

    Attributes:
        format: ``json_array`` (one JSON array per file), ``json_lines``, ``csv`` or ``parquet``.
        header: csv: the first record of every file names the fields. @default - True
        delimiter: csv: the field separator, one character. @default - ","
        quote: csv: the quote character, one character. @default - '"'
        escape: csv: the character that escapes a quote inside a quoted field: the quote itself (a
            doubled quote, RFC 4180) or a backslash. @default - the quote
        null_values: csv: field texts that mean null (compared after unquoting). @default - [""]
        encoding: csv: ``utf-8`` or ``iso-8859-1``. @default - "utf-8"

    Gzip needs no setting: a file named ``*.gz`` is decompressed (``land`` names objects after their content).
    """

    format: str
    """json_array, json_lines, csv or parquet."""
    header: bool = True
    """csv: the first record of every file names the fields. @default - true"""
    delimiter: str = ","
    """csv: the field separator, one character. @default - ","."""
    quote: str = '"'
    """csv: the quote character. @default - '"'"""
    escape: str = '"'
    """csv: the quote itself (a doubled quote, RFC 4180) or a backslash. @default - the quote"""
    null_values: tuple[str, ...] = ("",)
    """csv: field texts that mean null. @default - [""]"""
    encoding: str = "utf-8"
    """csv: utf-8 or iso-8859-1 (latin-1). @default - utf-8"""

    @model_validator(mode="before")
    @classmethod
    def _options(cls, data: Any) -> Any:
        given = data if isinstance(data, dict) else (data.kwargs or {}) if isinstance(data, ArgsKwargs) else None
        if given is None:
            return data
        if "format" not in given:
            return data  # pydantic names the missing field
        if given["format"] not in LANDING_FORMATS:
            raise _refuse(f"'{given['format']}' is not one of {', '.join(LANDING_FORMATS)}", "format")
        unknown = sorted(set(given) - {"format", *CSV_OPTIONS})
        if unknown:  # before the CSV-only check: a typo is named as such
            raise _refuse(f"is not a landing option ({', '.join(CSV_OPTIONS)})", unknown[0])
        options = sorted(set(given) & set(CSV_OPTIONS))
        if options and given.get("format") != "csv":
            raise _refuse(f"applies to format csv only, not {given.get('format')}", options[0])
        if isinstance(data, dict) and "escape" not in data and "quote" in data:
            data = {**data, "escape": data["quote"]}  # the quote escapes itself unless told otherwise
        return data

    @field_validator("header", mode="before")
    @classmethod
    def _header(cls, value: Any) -> Any:
        return _strict_bool(value)

    @field_validator("delimiter", "quote", "escape", mode="before")
    @classmethod
    def _one_char(cls, value: Any) -> Any:
        if not isinstance(value, str) or len(value) != 1 or value in "\r\n":
            raise _refuse(f"must be one character other than a line break, got {value!r}")
        return value

    @field_validator("null_values", mode="before")
    @classmethod
    def _null_values(cls, value: Any) -> Any:
        if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise _refuse("must be a list of texts, e.g. [\"\", NA]")
        return tuple(value)

    @field_validator("encoding", mode="before")
    @classmethod
    def _encoding(cls, value: Any) -> Any:
        encoding = str(value).lower().replace("_", "-")
        encoding = ENCODING_ALIASES.get(encoding, encoding)
        if encoding not in ENCODINGS:
            raise _refuse(f"'{value}' is not one of {', '.join(ENCODINGS)}")
        return encoding

    @model_validator(mode="after")
    def _csv(self) -> "LandingSpec":
        if self.delimiter == self.quote:
            raise _refuse("must differ from the quote character", "delimiter")
        if self.escape != self.quote and self.escape not in CSV_ESCAPES_OTHER_THAN_QUOTE:
            raise _refuse(f"must be the quote ({self.quote!r}) or a backslash, got {self.escape!r}", "escape")
        if self.escape == self.delimiter:
            raise _refuse("must differ from the delimiter", "escape")
        return self

    @property
    def is_text(self) -> bool:
        """Landing files are text (JSON or CSV), read line by line; Parquet is read by its own reader."""
        return self.format != "parquet"


@dataclass(frozen=True, config=_MODEL)
class RowRule:
    """An explicit row rule: a Spark SQL boolean over the typed columns; true (or null) means valid."""

    name: str
    """The rule's name: the quarantine reason of a row that breaks it."""
    expr: str
    """Spark SQL boolean over the typed columns; true or null means valid."""


@dataclass(frozen=True, config=_MODEL)
class DerivedColumn:
    """Silver enrichment: a Spark SQL expression over the validated columns."""

    name: str
    """The silver column it adds."""
    expr: str
    """Spark SQL over the validated columns."""
    removed: bool = False
    """Removed on purpose: no longer computed (its column is dropped under evolution: permissive)."""

    @field_validator("removed", mode="before")
    @classmethod
    def _removed(cls, value: Any) -> Any:
        return _strict_bool(value)


def _whole_number(value: Any, low: int, high: int, unit: str) -> Any:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise _refuse(f"must be a whole number of {unit} from {low} to {high}, got {value!r}")
    return value


@dataclass(frozen=True, config=_MODEL)
class ScheduleTrigger:
    """Run the dataset's pipeline on a schedule (EventBridge Scheduler, ``modules/pipeline_triggers.py``)."""

    cron: str
    """An EventBridge Scheduler expression, cron(...) or rate(...), e.g. cron(15 * * * ? *)."""
    timezone: str = "UTC"
    """The IANA time zone the cron expression is read in, e.g. Europe/Dublin. @default - UTC"""
    flexible_window_minutes: int = 0
    """Start within this many minutes after the time (0: exactly on time). @default - 0"""

    @field_validator("cron", mode="before")
    @classmethod
    def _cron(cls, value: Any) -> Any:
        if not isinstance(value, str) or not re.match(SCHEDULE_EXPRESSION_RE, value):
            raise _refuse(f"must be cron(...) or rate(...), got {value!r}")
        return value

    @field_validator("timezone", mode="before")
    @classmethod
    def _timezone(cls, value: Any) -> Any:
        if not isinstance(value, str) or not re.match(TIMEZONE_RE, value):
            raise _refuse(f"must be an IANA time zone name like UTC or Europe/Dublin, got {value!r}")
        return value

    @field_validator("flexible_window_minutes", mode="before")
    @classmethod
    def _window(cls, value: Any) -> Any:
        return _whole_number(value, 0, MAX_FLEXIBLE_WINDOW_MINUTES, "minutes")


@dataclass(frozen=True, config=_MODEL)
class ArrivalTrigger:
    """Run the dataset's pipeline when files land under ``landing/<dataset>/`` (S3 -> EventBridge), once per
    debounce window: every object created in one window starts one run, after the window has closed."""

    debounce_minutes: int = 10
    """The window, a divisor of 60 (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60). @default - 10"""

    @field_validator("debounce_minutes", mode="before")
    @classmethod
    def _debounce(cls, value: Any) -> Any:
        if value not in DEBOUNCE_MINUTES or isinstance(value, bool):
            raise _refuse(f"must be a divisor of 60 ({', '.join(map(str, DEBOUNCE_MINUTES))}), got {value!r}")
        return value


@dataclass(frozen=True, config=_MODEL)
class Trigger:
    """What starts the dataset's pipeline on AWS (the tenant's state machine): a schedule, new landing data, or both."""

    schedule: ScheduleTrigger | None = None
    """A schedule (cron in a time zone). @default - none"""
    on_arrival: ArrivalTrigger | None = None
    """New objects under landing/<dataset>/, debounced. @default - none"""

    @model_validator(mode="after")
    def _one(self) -> "Trigger":
        if self.schedule is None and self.on_arrival is None:
            raise _refuse("names no trigger: give schedule, on_arrival or both")
        return self


@dataclass(frozen=True, config=_MODEL)
class Freshness:
    """How stale the dataset may get before someone is paged (a CloudWatch alarm per dataset)."""

    max_minutes_since_publish: int
    """The longest acceptable time since the last silver publish, in minutes (5 to 10080, 7 days)."""

    @field_validator("max_minutes_since_publish", mode="before")
    @classmethod
    def _target(cls, value: Any) -> Any:
        return _whole_number(value, MIN_FRESHNESS_MINUTES, MAX_FRESHNESS_MINUTES, "minutes")


def _subject_keys_json() -> dict:
    entry = TypeAdapter(SubjectKey).json_schema()
    return {"anyOf": [{"type": "array", "items": {"anyOf": [{"type": "string"}, entry]}},
                      {"type": "null"}],
            "description": "The columns that identify a data subject (a person), as names or "
                           "{column, pattern, min_length}; [] declares that the dataset holds no personal data."}


@dataclass(frozen=True, config=_MODEL)
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
    subject_keys: Annotated[tuple[str, ...] | None, WithJsonSchema(_subject_keys_json())] = None
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
            raise _refuse(f"is not a contract key (derived from {'subject_keys' if derived[0] == 'subject_key_rules' else 'removed: true entries'})",
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
                raise _refuse("must be a list of schema column names, e.g. [user_id], or []", "subject_keys")
            rules = []
            for index, item in enumerate(keys):
                item = {"column": item} if isinstance(item, str) else item
                if not isinstance(item, dict) or not isinstance(item.get("column"), str):
                    raise _refuse("must be a column name or {column: C, pattern: REGEX, min_length: N}",
                                  f"subject_keys[{index}]")
                rules.append(item)
            data["subject_keys"] = [item["column"] for item in rules]
            data["subject_key_rules"] = rules
        return data

    @field_validator("allow_extra_fields", "pseudonymise_gold", mode="before")
    @classmethod
    def _flags(cls, value: Any) -> Any:
        return _strict_bool(value)

    @field_validator("lateness_minutes", mode="before")
    @classmethod
    def _lateness(cls, value: Any) -> Any:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise _refuse(f"must be a whole number of minutes, at least 0, got {value!r}")
        return value

    @field_validator("partition_granularity")
    @classmethod
    def _granularity(cls, value: str) -> str:
        if value not in PARTITION_GRANULARITIES:
            raise _refuse(f"must be one of {', '.join(PARTITION_GRANULARITIES)}, got {value!r}")
        return value

    @field_validator("evolution")
    @classmethod
    def _evolution(cls, value: str) -> str:
        return _one_of(value, EVOLUTION_POLICIES)

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
            raise _refuse("is required (at least one column that is not removed)", "schema")
        names = [col.name for col in self.schema]
        if len(set(names)) != len(names):
            raise _refuse("column names must be unique", "schema")
        sources = self.landing_fields
        if len(set(sources)) != len(sources):
            raise _refuse("two columns read the same landing field (`source`)", "schema")
        renamed = [col.renamed_from for col in self.schema if col.renamed_from]
        clash = next((old for old in renamed if old in names or renamed.count(old) > 1), None)
        if clash:
            raise _refuse(f"renamed_from '{clash}' is another column's name (or named twice)", "schema")
        for field in self.key:
            if field not in names:
                raise _refuse(f"'{field}' is not a schema column" + (" (it is removed)" if field in self.removed_columns
                                                                        else ""), "key")
        if self.event_time not in names or self.column(self.event_time).type != "timestamp":
            raise _refuse(f"'{self.event_time}' must be a timestamp column of the schema", "event_time")
        if self.source_field is not None and self.source_field not in names:
            raise _refuse(f"'{self.source_field}' is not a schema column", "source_field")
        for name in self.gold_options:
            if name not in self.gold:
                raise _refuse("names no gold transformation listed in `gold`", f"gold_options.{name}")
        known = [field for field in self.ignored_fields if field in sources]
        if known:
            raise _refuse(f"'{known[0]}' is the landing field of a schema column; a field is read or ignored, not both",
                          "ignored_fields")
        self._check_personal_data_fields(names)
        return self

    def _check_personal_data_fields(self, names: list[str]) -> None:
        types = {col.name: col.type for col in self.schema}
        for index, column in enumerate(self.subject_keys or ()):
            if column not in types:
                raise _refuse(f"'{column}' is not a schema column", "subject_keys")
            if types[column] not in SUBJECT_KEY_TYPES and not is_decimal_type(types[column]):
                raise _refuse(f"'{column}' is {types[column]}: a subject key is string, int, long or decimal(P,S)",
                              f"subject_keys[{index}]")
        if self.subject_keys is not None and len(set(self.subject_keys)) != len(self.subject_keys):
            raise _refuse("names a column twice", "subject_keys")
        for name in self.personal_data:
            if name not in names:
                raise _refuse(f"'{name}' is not a schema column", "personal_data")
        if len(set(self.personal_data)) != len(self.personal_data):
            raise _refuse("names a column twice", "personal_data")
        if self.pseudonymise_gold and not self.subject_keys:
            raise _refuse("needs subject_keys (the columns to replace by a keyed hash)", "pseudonymise_gold")

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
