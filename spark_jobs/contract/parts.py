"""The parts a dataset contract is made of (``spark_jobs/contract/model.py`` holds the whole ``Contract``, its checks
across parts, and the loading): a column (``ColumnSpec``), a subject key, the landing format (``LandingSpec``), row
rules, derived columns, triggers and freshness, with the constants and the typed validators they share. Each is a
frozen pydantic dataclass; a value that breaks a rule raises ``ContractError``, one line naming the rule.
"""
from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import ConfigDict, TypeAdapter, field_validator, model_validator
from pydantic.dataclasses import dataclass
from pydantic.json_schema import WithJsonSchema
from pydantic_core import ArgsKwargs, PydanticCustomError

from tenant_model import (DEBOUNCE_MINUTES, MAX_FLEXIBLE_WINDOW_MINUTES, MAX_FRESHNESS_MINUTES, MIN_FRESHNESS_MINUTES, SCHEDULE_EXPRESSION_RE, TIMEZONE_RE)


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


def refuse(rule: str, path: str = "") -> PydanticCustomError:
    """A rule of ours broken inside a validator: ``rule`` is the message, ``path`` where below the
    validator's own place in the file (``key``, ``min/max``; "" for the place itself)."""
    return PydanticCustomError("contract_rule", "{rule}", {"rule": rule, "path": path})


MODEL_CONFIG = ConfigDict(extra="forbid", use_attribute_docstrings=True)


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
            raise refuse(f"invalid regular expression ({exc})") from None
    return value


def strict_bool(value: Any) -> Any:
    if not isinstance(value, bool):
        raise refuse(f"must be true or false, got {value!r}")
    return value


def one_of(value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise refuse(f"'{value}' is not one of {', '.join(choices)}")
    return value


COLUMN_TYPE_JSON = {"anyOf": [{"enum": [*COLUMN_TYPES, "integer"]}, {"type": "string", "pattern": DECIMAL_TYPE_RE}],
                    "description": "a column type, or decimal(P,S)"}


@dataclass(frozen=True, config=MODEL_CONFIG)
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
            raise refuse(f"must match {COLUMN_NAME_RE} (name the landing field in `source` when it has other "
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
                raise refuse(f"'{value}': precision must be 1-38 and scale at most the precision")
            return value
        if value not in COLUMN_TYPES:
            raise refuse(f"'{value}' is not one of {', '.join(COLUMN_TYPES)} or decimal(P,S)")
        return value

    @field_validator("required", "removed", mode="before")
    @classmethod
    def _flags(cls, value: Any) -> Any:
        return strict_bool(value)

    @field_validator("min", "max", mode="before")
    @classmethod
    def _bound(cls, value: Any) -> Any:
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise refuse(f"must be a number, got {value!r}")
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
        return value if value is None else one_of(value, CASES)

    @field_validator("source", "renamed_from")
    @classmethod
    def _field_name(cls, value: str | None) -> str | None:
        if value is not None and not value:
            raise refuse("must be a non-empty string (a field or column name)")
        return value

    @field_validator("computed")
    @classmethod
    def _computed(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise refuse("must be a Spark SQL expression (text)")
        return value.strip() if value else value

    @model_validator(mode="after")
    def _column(self) -> "ColumnSpec":
        if self.source is not None and self.computed is not None:
            raise refuse("takes `source` or `computed`, not both")
        if (self.min is not None or self.max is not None) and not self.is_numeric:
            raise refuse("only numeric columns take a range", "min/max")
        if self.renamed_from == self.name:
            raise refuse("names the column itself; give the old name", "renamed_from")
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


@dataclass(frozen=True, config=MODEL_CONFIG)
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
            raise refuse(f"must be a whole number of at least 1, got {value!r}")
        return value


@dataclass(frozen=True, config=MODEL_CONFIG)
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
            raise refuse(f"'{given['format']}' is not one of {', '.join(LANDING_FORMATS)}", "format")
        unknown = sorted(set(given) - {"format", *CSV_OPTIONS})
        if unknown:  # before the CSV-only check: a typo is named as such
            raise refuse(f"is not a landing option ({', '.join(CSV_OPTIONS)})", unknown[0])
        options = sorted(set(given) & set(CSV_OPTIONS))
        if options and given.get("format") != "csv":
            raise refuse(f"applies to format csv only, not {given.get('format')}", options[0])
        if isinstance(data, dict) and "escape" not in data and "quote" in data:
            data = {**data, "escape": data["quote"]}  # the quote escapes itself unless told otherwise
        return data

    @field_validator("header", mode="before")
    @classmethod
    def _header(cls, value: Any) -> Any:
        return strict_bool(value)

    @field_validator("delimiter", "quote", "escape", mode="before")
    @classmethod
    def _one_char(cls, value: Any) -> Any:
        if not isinstance(value, str) or len(value) != 1 or value in "\r\n":
            raise refuse(f"must be one character other than a line break, got {value!r}")
        return value

    @field_validator("null_values", mode="before")
    @classmethod
    def _null_values(cls, value: Any) -> Any:
        if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise refuse("must be a list of texts, e.g. [\"\", NA]")
        return tuple(value)

    @field_validator("encoding", mode="before")
    @classmethod
    def _encoding(cls, value: Any) -> Any:
        encoding = str(value).lower().replace("_", "-")
        encoding = ENCODING_ALIASES.get(encoding, encoding)
        if encoding not in ENCODINGS:
            raise refuse(f"'{value}' is not one of {', '.join(ENCODINGS)}")
        return encoding

    @model_validator(mode="after")
    def _csv(self) -> "LandingSpec":
        if self.delimiter == self.quote:
            raise refuse("must differ from the quote character", "delimiter")
        if self.escape != self.quote and self.escape not in CSV_ESCAPES_OTHER_THAN_QUOTE:
            raise refuse(f"must be the quote ({self.quote!r}) or a backslash, got {self.escape!r}", "escape")
        if self.escape == self.delimiter:
            raise refuse("must differ from the delimiter", "escape")
        return self

    @property
    def is_text(self) -> bool:
        """Landing files are text (JSON or CSV), read line by line; Parquet is read by its own reader."""
        return self.format != "parquet"


@dataclass(frozen=True, config=MODEL_CONFIG)
class RowRule:
    """An explicit row rule: a Spark SQL boolean over the typed columns; true (or null) means valid."""

    name: str
    """The rule's name: the quarantine reason of a row that breaks it."""
    expr: str
    """Spark SQL boolean over the typed columns; true or null means valid."""


@dataclass(frozen=True, config=MODEL_CONFIG)
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
        return strict_bool(value)


def _whole_number(value: Any, low: int, high: int, unit: str) -> Any:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise refuse(f"must be a whole number of {unit} from {low} to {high}, got {value!r}")
    return value


@dataclass(frozen=True, config=MODEL_CONFIG)
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
            raise refuse(f"must be cron(...) or rate(...), got {value!r}")
        return value

    @field_validator("timezone", mode="before")
    @classmethod
    def _timezone(cls, value: Any) -> Any:
        if not isinstance(value, str) or not re.match(TIMEZONE_RE, value):
            raise refuse(f"must be an IANA time zone name like UTC or Europe/Dublin, got {value!r}")
        return value

    @field_validator("flexible_window_minutes", mode="before")
    @classmethod
    def _window(cls, value: Any) -> Any:
        return _whole_number(value, 0, MAX_FLEXIBLE_WINDOW_MINUTES, "minutes")


@dataclass(frozen=True, config=MODEL_CONFIG)
class ArrivalTrigger:
    """Run the dataset's pipeline when files land under ``landing/<dataset>/`` (S3 -> EventBridge), once per
    debounce window: every object created in one window starts one run, after the window has closed."""

    debounce_minutes: int = 10
    """The window, a divisor of 60 (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60). @default - 10"""

    @field_validator("debounce_minutes", mode="before")
    @classmethod
    def _debounce(cls, value: Any) -> Any:
        if value not in DEBOUNCE_MINUTES or isinstance(value, bool):
            raise refuse(f"must be a divisor of 60 ({', '.join(map(str, DEBOUNCE_MINUTES))}), got {value!r}")
        return value


@dataclass(frozen=True, config=MODEL_CONFIG)
class Trigger:
    """What starts the dataset's pipeline on AWS (the tenant's state machine): a schedule, new landing data, or both."""

    schedule: ScheduleTrigger | None = None
    """A schedule (cron in a time zone). @default - none"""
    on_arrival: ArrivalTrigger | None = None
    """New objects under landing/<dataset>/, debounced. @default - none"""

    @model_validator(mode="after")
    def _one(self) -> "Trigger":
        if self.schedule is None and self.on_arrival is None:
            raise refuse("names no trigger: give schedule, on_arrival or both")
        return self


@dataclass(frozen=True, config=MODEL_CONFIG)
class Freshness:
    """How stale the dataset may get before someone is paged (a CloudWatch alarm per dataset)."""

    max_minutes_since_publish: int
    """The longest acceptable time since the last silver publish, in minutes (5 to 10080, 7 days)."""

    @field_validator("max_minutes_since_publish", mode="before")
    @classmethod
    def _target(cls, value: Any) -> Any:
        return _whole_number(value, MIN_FRESHNESS_MINUTES, MAX_FRESHNESS_MINUTES, "minutes")


def subject_keys_json() -> dict:
    entry = TypeAdapter(SubjectKey).json_schema()
    return {"anyOf": [{"type": "array", "items": {"anyOf": [{"type": "string"}, entry]}},
                      {"type": "null"}],
            "description": "The columns that identify a data subject (a person), as names or "
                           "{column, pattern, min_length}; [] declares that the dataset holds no personal data."}
