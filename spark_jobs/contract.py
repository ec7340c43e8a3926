"""Dataset contracts: YAML data (``spark_jobs/contracts/<dataset>.yaml``) loaded into frozen dataclasses.

A contract says what a dataset looks like (schema, key, event time, landing format), which row rules
decide silver vs quarantine, which gold transformations run, and which extra expectations apply per
layer. The engine reads only contracts, so adding a dataset is adding a file (plus, if it needs one,
a gold transformation in ``spark_jobs/transforms/gold/<name>.py``).

Row-rule names (quarantine reasons, shared with the data-quality reports):
``<col>_required``, ``<col>_type``, ``<col>_range``, ``<col>_allowed``, ``<col>_regex``,
``malformed_record`` (unparseable input), ``unknown_fields`` (a field the schema does not know, when
``allow_extra_fields`` is false) and each explicit rule's ``name``.
"""
from __future__ import annotations

import dataclasses
import importlib.resources
import os
import re
from pathlib import Path
from typing import Any

import yaml

from tenant_model import PERSONAL_DATA_CLASSIFICATIONS

# Packaged contracts are read as package resources, not through Path(__file__): on EMR the package
# runs from a zip on --py-files, where there is no real folder.
CONTRACTS_DIR = importlib.resources.files("spark_jobs") / "contracts"
CONTRACTS_DIR_ENV = "TENANTLAKE_CONTRACTS_DIR"  # optional extra folder searched first
LANDING_FORMATS: tuple[str, ...] = ("json_array", "json_lines", "csv", "parquet")
CSV_ESCAPES_OTHER_THAN_QUOTE: tuple[str, ...] = ("\\",)  # besides the quote itself (a doubled quote, RFC 4180)
ENCODINGS: tuple[str, ...] = ("utf-8", "iso-8859-1")
COLUMN_NAME_RE = r"^[A-Za-z_][A-Za-z0-9_]*$"
COLUMN_TYPES: tuple[str, ...] = ("string", "int", "long", "double", "boolean", "timestamp", "date")
# Besides COLUMN_TYPES: ``decimal(P,S)`` (precision 1-38, scale 0-P), an exact number such as an account id.
DECIMAL_TYPE_RE = r"^decimal\(\s*([0-9]{1,2})\s*,\s*([0-9]{1,2})\s*\)$"
NUMERIC_TYPES: tuple[str, ...] = ("int", "long", "double")  # and every decimal(P,S)
# Erasure (spark_jobs/erasure): an id shorter than this is refused, unless a subject key says otherwise. A
# short id ("42") recurs in any text as a whole token, so matching it in reports and logs would hit others.
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


class ContractError(ValueError):
    """A contract file breaks a rule; ``str(err)`` is one line naming the dataset, field and rule."""

    def __init__(self, dataset: str, field: str, rule: str):
        super().__init__(f"contract '{dataset}': {field}: {rule}")


@dataclasses.dataclass(frozen=True)
class ColumnSpec:
    """One silver column. ``min``/``max``/``allowed``/``regex`` each yield a row rule of that name.

    ``source`` is the field's name in the landing record (CSV header, JSON key, Parquet column) when it
    differs from ``name`` (e.g. ``Solar.R``); ``computed`` builds the column's text from the landing
    text of other columns instead (a Spark SQL expression over their names, e.g.
    ``concat(date, ' ', time)``); such a column has no landing field of its own.
    """

    name: str
    type: str
    required: bool = False
    min: float | None = None
    max: float | None = None
    allowed: tuple[str, ...] | None = None
    regex: str | None = None
    format: str | None = None  # timestamp/date parse pattern; @default - ISO-8601 UTC "...'T'HH:mm:ss'Z'"
    case: str | None = None    # normalise strings to lower/upper case before rules run; @default - none
    source: str | None = None  # the landing field's name; @default - ``name``
    computed: str | None = None  # Spark SQL over other columns' landing text; @default - none (a landing field)

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


def is_decimal_type(type_name: str) -> bool:
    return re.match(DECIMAL_TYPE_RE, type_name) is not None


def decimal_precision_scale(type_name: str) -> tuple[int, int]:
    """(precision, scale) of a ``decimal(P,S)`` type name."""
    found = re.match(DECIMAL_TYPE_RE, type_name)
    if found is None:
        raise ValueError(f"{type_name!r} is not decimal(P,S)")
    return int(found.group(1)), int(found.group(2))


@dataclasses.dataclass(frozen=True)
class SubjectKey:
    """How erasure requests name data subjects by one column (an entry of the contract's ``subject_keys``).

    Attributes:
        column: a schema column of type string, int, long or decimal(P,S).
        pattern: a regular expression every id must match in full (after normalisation), else the
            request is refused before anything changes. @default - None (any id)
        min_length: ids shorter than this (in characters, after normalisation) are refused.
            @default - 4 (``DEFAULT_SUBJECT_ID_MIN_LENGTH``)
    """

    column: str
    pattern: str | None = None
    min_length: int = DEFAULT_SUBJECT_ID_MIN_LENGTH


@dataclasses.dataclass(frozen=True)
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
    header: bool = True
    delimiter: str = ","
    quote: str = '"'
    escape: str = '"'
    null_values: tuple[str, ...] = ("",)
    encoding: str = "utf-8"

    @property
    def is_text(self) -> bool:
        """Landing files are text (JSON or CSV), read line by line; Parquet is read by its own reader."""
        return self.format != "parquet"


CSV_OPTIONS: tuple[str, ...] = ("header", "delimiter", "quote", "escape", "null_values", "encoding")


@dataclasses.dataclass(frozen=True)
class RowRule:
    """An explicit row rule: a Spark SQL boolean over the typed columns; true (or null) means valid."""

    name: str
    expr: str


@dataclasses.dataclass(frozen=True)
class DerivedColumn:
    """Silver enrichment: a Spark SQL expression over the validated columns."""

    name: str
    expr: str


@dataclasses.dataclass(frozen=True)
class Contract:
    """A dataset contract. See ``spark_jobs/contracts/iot.yaml`` for a commented example.

    Attributes:
        dataset: name, also the folder name in every layer.
        landing: the landing format and its options (``LandingSpec``); ``landing_format`` is its format.
        source_field: the per-source field (sensor, site, org): datagen and streams partition by it,
            bronze exposes it as a column. @default - None (a dataset with one source)
        key: the dedupe key; the latest ``_ingested_at`` wins, ties broken by batch, file, position.
        event_time: the timestamp column; ``event_date`` (silver partition) derives from it.
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
    """

    dataset: str
    description: str
    landing: LandingSpec
    source_field: str | None
    key: tuple[str, ...]
    event_time: str
    schema: tuple[ColumnSpec, ...]
    rules: tuple[RowRule, ...] = ()
    derived: tuple[DerivedColumn, ...] = ()
    gold: tuple[str, ...] = ()
    gold_options: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    expectations: dict[str, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)
    lateness_minutes: int = DEFAULT_LATENESS_MINUTES
    allow_extra_fields: bool = False
    subject_keys: tuple[str, ...] | None = None
    subject_key_rules: tuple[SubjectKey, ...] = ()
    personal_data: tuple[str, ...] = ()
    pseudonymise_gold: bool = False
    partition_granularity: str = DEFAULT_PARTITION_GRANULARITY

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


def load_contract(name: str) -> Contract:
    """Load ``<name>.yaml`` from ``$TENANTLAKE_CONTRACTS_DIR`` (if set) or the packaged contracts."""
    for folder in contract_dirs():
        path = folder / f"{name}.yaml"
        if path.is_file():
            return parse_contract(yaml.safe_load(path.read_text()), source=str(path))
    raise ContractError(name, "dataset", f"no contract file {name}.yaml; known datasets: {', '.join(available_datasets())}")


def parse_contract(raw: Any, source: str = "<memory>") -> Contract:
    """Validate a contract mapping and build the dataclass; every error names the field and rule."""
    if not isinstance(raw, dict):
        raise ContractError(source, "(file)", "must be a YAML mapping")
    dataset = str(raw.get("dataset", ""))
    if not re.match(DATASET_NAME_RE, dataset):
        raise ContractError(dataset or source, "dataset", f"must match {DATASET_NAME_RE}")

    def need(field: str) -> Any:
        if field not in raw or raw[field] in (None, "", []):
            raise ContractError(dataset, field, "is required")
        return raw[field]

    landing = parse_landing(dataset, need("landing"))
    schema = tuple(_parse_column(dataset, i, item) for i, item in enumerate(need("schema")))
    names = [col.name for col in schema]
    if len(set(names)) != len(names):
        raise ContractError(dataset, "schema", "column names must be unique")
    sources = [col.landing_name for col in schema if col.landing_name is not None]
    if len(set(sources)) != len(sources):
        raise ContractError(dataset, "schema", "two columns read the same landing field (`source`)")
    key = tuple(need("key"))
    for field in key:
        if field not in names:
            raise ContractError(dataset, "key", f"'{field}' is not a schema column")
    event_time = need("event_time")
    if event_time not in names or schema[names.index(event_time)].type != "timestamp":
        raise ContractError(dataset, "event_time", f"'{event_time}' must be a timestamp column of the schema")
    source_field = raw.get("source_field") or None
    if source_field is not None and source_field not in names:
        raise ContractError(dataset, "source_field", f"'{source_field}' is not a schema column")
    rules = tuple(RowRule(name=str(r["name"]), expr=str(r["expr"])) for r in raw.get("rules") or [])
    derived = tuple(DerivedColumn(name=str(d["name"]), expr=str(d["expr"])) for d in raw.get("derived") or [])
    gold = tuple(raw.get("gold") or [])
    gold_options = dict(raw.get("gold_options") or {})
    for name in gold_options:
        if name not in gold:
            raise ContractError(dataset, f"gold_options.{name}", "names no gold transformation listed in `gold`")
    expectations = {layer: list(items or []) for layer, items in (raw.get("expectations") or {}).items()}
    subject_key_rules = _subject_keys(dataset, raw, schema) if "subject_keys" in raw else None
    subject_keys = None if subject_key_rules is None else tuple(rule.column for rule in subject_key_rules)
    personal_data = _column_list(dataset, raw, "personal_data", names) if "personal_data" in raw else ()
    pseudonymise_gold = raw.get("pseudonymise_gold", False)
    if not isinstance(pseudonymise_gold, bool):
        raise ContractError(dataset, "pseudonymise_gold", f"must be true or false, got {pseudonymise_gold!r}")
    if pseudonymise_gold and not subject_keys:
        raise ContractError(dataset, "pseudonymise_gold", "needs subject_keys (the columns to replace by a keyed hash)")
    granularity = raw.get("partition_granularity", DEFAULT_PARTITION_GRANULARITY)
    if granularity not in PARTITION_GRANULARITIES:
        raise ContractError(dataset, "partition_granularity",
                            f"must be one of {', '.join(PARTITION_GRANULARITIES)}, got {granularity!r}")
    return Contract(
        dataset=dataset,
        description=str(raw.get("description", "")).strip(),
        landing=landing,
        source_field=source_field,
        key=key,
        event_time=event_time,
        schema=schema,
        rules=rules,
        derived=derived,
        gold=gold,
        gold_options=gold_options,
        expectations=expectations,
        lateness_minutes=int(raw.get("lateness_minutes", DEFAULT_LATENESS_MINUTES)),
        allow_extra_fields=bool(raw.get("allow_extra_fields", False)),
        subject_keys=subject_keys,
        subject_key_rules=subject_key_rules or (),
        personal_data=personal_data,
        pseudonymise_gold=pseudonymise_gold,
        partition_granularity=granularity,
    )


def _column_list(dataset: str, raw: dict, field: str, names: list[str]) -> tuple[str, ...]:
    """A list of schema column names (``[]`` allowed: it declares none)."""
    value = raw[field]
    if value is None:
        value = []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ContractError(dataset, field, "must be a list of schema column names, e.g. [user_id], or []")
    for name in value:
        if name not in names:
            raise ContractError(dataset, field, f"'{name}' is not a schema column")
    if len(set(value)) != len(value):
        raise ContractError(dataset, field, "names a column twice")
    return tuple(value)


def _subject_keys(dataset: str, raw: dict, schema: tuple[ColumnSpec, ...]) -> tuple[SubjectKey, ...]:
    """``subject_keys``: column names, or mappings ``{column, pattern, min_length}`` (``SubjectKey``)."""
    value = raw["subject_keys"] if raw["subject_keys"] is not None else []
    if not isinstance(value, list):
        raise ContractError(dataset, "subject_keys", "must be a list of schema column names, e.g. [user_id], or []")
    types = {col.name: col.type for col in schema}
    rules = []
    for index, item in enumerate(value):
        where = f"subject_keys[{index}]"
        if isinstance(item, str):
            item = {"column": item}
        if not isinstance(item, dict) or not isinstance(item.get("column"), str):
            raise ContractError(dataset, where, "must be a column name or {column: C, pattern: REGEX, min_length: N}")
        unknown = sorted(set(item) - {"column", "pattern", "min_length"})
        if unknown:
            raise ContractError(dataset, where, f"unknown field '{unknown[0]}' (column, pattern, min_length)")
        column = item["column"]
        if column not in types:
            raise ContractError(dataset, "subject_keys", f"'{column}' is not a schema column")
        if types[column] not in ("string", "int", "long") and not is_decimal_type(types[column]):
            raise ContractError(dataset, where, f"'{column}' is {types[column]}: a subject key is string, int, long "
                                                "or decimal(P,S)")
        pattern = item.get("pattern")
        if pattern is not None:
            try:
                re.compile(str(pattern))
            except re.error as exc:
                raise ContractError(dataset, f"{where}.pattern", f"invalid regular expression ({exc})") from None
        min_length = item.get("min_length", DEFAULT_SUBJECT_ID_MIN_LENGTH)
        if not isinstance(min_length, int) or isinstance(min_length, bool) or min_length < 1:
            raise ContractError(dataset, f"{where}.min_length", f"must be a whole number of at least 1, got {min_length!r}")
        rules.append(SubjectKey(column, None if pattern is None else str(pattern), min_length))
    if len({rule.column for rule in rules}) != len(rules):
        raise ContractError(dataset, "subject_keys", "names a column twice")
    return tuple(rules)


def _parse_column(dataset: str, index: int, item: Any) -> ColumnSpec:
    where = f"schema[{index}]"
    if not isinstance(item, dict) or not item.get("name"):
        raise ContractError(dataset, where, "needs at least `name` and `type`")
    where = f"schema[{index}] ({item['name']})"
    if not re.match(COLUMN_NAME_RE, str(item["name"])):
        raise ContractError(dataset, f"{where}.name", f"must match {COLUMN_NAME_RE} (name the landing field in "
                                                      "`source` when it has other characters)")
    source, computed = item.get("source"), item.get("computed")
    if source is not None and (not isinstance(source, str) or not source):
        raise ContractError(dataset, f"{where}.source", "must be a non-empty string (the landing field's name)")
    if computed is not None and (not isinstance(computed, str) or not computed.strip()):
        raise ContractError(dataset, f"{where}.computed", "must be a Spark SQL expression (text)")
    if source is not None and computed is not None:
        raise ContractError(dataset, where, "takes `source` or `computed`, not both")
    col_type = item.get("type", "")
    if col_type == "integer":
        col_type = "int"
    if isinstance(col_type, str) and is_decimal_type(col_type.strip().lower()):
        col_type = re.sub(r"\s+", "", col_type.lower())
        precision, scale = decimal_precision_scale(col_type)
        if not 1 <= precision <= 38 or scale > precision:
            raise ContractError(dataset, f"{where}.type", f"'{col_type}': precision must be 1-38 and scale at most "
                                                          "the precision")
    elif col_type not in COLUMN_TYPES:
        raise ContractError(dataset, f"{where}.type", f"'{col_type}' is not one of {', '.join(COLUMN_TYPES)} "
                                                      "or decimal(P,S)")
    case = item.get("case")
    if case is not None and case not in CASES:
        raise ContractError(dataset, f"{where}.case", f"'{case}' is not one of {', '.join(CASES)}")
    if (item.get("min") is not None or item.get("max") is not None) and not (col_type in NUMERIC_TYPES
                                                                               or is_decimal_type(col_type)):
        raise ContractError(dataset, f"{where}.min/max", "only numeric columns take a range")
    regex = item.get("regex")
    if regex is not None:
        try:
            re.compile(regex)
        except re.error as exc:
            raise ContractError(dataset, f"{where}.regex", f"invalid regular expression ({exc})") from None
    allowed = item.get("allowed")
    return ColumnSpec(
        name=str(item["name"]),
        type=col_type,
        required=bool(item.get("required", False)),
        min=None if item.get("min") is None else float(item["min"]),
        max=None if item.get("max") is None else float(item["max"]),
        allowed=None if allowed is None else tuple(str(v) for v in allowed),
        regex=regex,
        format=item.get("format") or (DEFAULT_TIMESTAMP_FORMAT if col_type == "timestamp" else None),
        case=case,
        source=source,
        computed=computed.strip() if computed else None,
    )


def parse_landing(dataset: str, raw: Any) -> LandingSpec:
    """Validate the contract's ``landing`` mapping; CSV options are refused for the other formats."""
    if not isinstance(raw, dict):
        raise ContractError(dataset, "landing", "must be a mapping such as {format: csv}")
    landing_format = raw.get("format", "")
    if landing_format not in LANDING_FORMATS:
        raise ContractError(dataset, "landing.format", f"'{landing_format}' is not one of {', '.join(LANDING_FORMATS)}")
    unknown = sorted(set(raw) - {"format", *CSV_OPTIONS})
    if unknown:
        raise ContractError(dataset, f"landing.{unknown[0]}", f"is not a landing option ({', '.join(CSV_OPTIONS)})")
    given = sorted(set(raw) & set(CSV_OPTIONS))
    if given and landing_format != "csv":
        raise ContractError(dataset, f"landing.{given[0]}", f"applies to format csv only, not {landing_format}")
    if landing_format != "csv":
        return LandingSpec(format=landing_format)

    def one_char(option: str, default: str) -> str:
        value = raw.get(option, default)
        if not isinstance(value, str) or len(value) != 1 or value in "\r\n":
            raise ContractError(dataset, f"landing.{option}", f"must be one character other than a line break, got {value!r}")
        return value

    header = raw.get("header", True)
    if not isinstance(header, bool):
        raise ContractError(dataset, "landing.header", f"must be true or false, got {header!r}")
    delimiter, quote = one_char("delimiter", ","), one_char("quote", '"')
    escape = one_char("escape", quote)
    if delimiter == quote:
        raise ContractError(dataset, "landing.delimiter", "must differ from the quote character")
    if escape != quote and escape not in CSV_ESCAPES_OTHER_THAN_QUOTE:
        raise ContractError(dataset, "landing.escape", f"must be the quote ({quote!r}) or a backslash, got {escape!r}")
    if escape == delimiter:
        raise ContractError(dataset, "landing.escape", "must differ from the delimiter")
    nulls = raw.get("null_values", [""])
    if isinstance(nulls, str) or not isinstance(nulls, list) or not all(isinstance(v, str) for v in nulls):
        raise ContractError(dataset, "landing.null_values", "must be a list of texts, e.g. [\"\", NA]")
    encoding = str(raw.get("encoding", "utf-8")).lower().replace("_", "-")
    encoding = {"utf8": "utf-8", "latin-1": "iso-8859-1", "latin1": "iso-8859-1"}.get(encoding, encoding)
    if encoding not in ENCODINGS:
        raise ContractError(dataset, "landing.encoding", f"'{raw.get('encoding')}' is not one of {', '.join(ENCODINGS)}")
    return LandingSpec(format="csv", header=header, delimiter=delimiter, quote=quote, escape=escape,
                       null_values=tuple(nulls), encoding=encoding)
