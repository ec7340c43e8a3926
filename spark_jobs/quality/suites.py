"""Expectation suites per dataset and layer, derived from the dataset contract (data, not code paths).

Pure: no Spark and no Great Expectations import, so suite generation is unit-tested in milliseconds.
``runner.py`` turns the ``ExpectationSpec`` list into a GX ``ExpectationSuite``.

Every spec carries the quarantine rule name (``rule``) that B's row-level Spark logic writes into
``_failed_rules``: ``<col>_required``, ``<col>_type``, ``<col>_range``, ``<col>_allowed``, ``<col>_regex``,
``malformed_record`` and each explicit rule's ``name``. The report joins failures to quarantined rows
on that name.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import re
from typing import Any, Iterable, Mapping

LAYERS = ("bronze", "silver", "gold")
SEVERITIES = ("error", "warn")

DEFAULT_MAX_MALFORMED_RATE = 0.01  # bronze: above 1 % unparseable input records the run warns
DEFAULT_FRESHNESS_HOURS = 48       # silver: newest event_time older than this warns
# Silver row rules: share of candidate rows (published + quarantined) that must pass each rule before
# the run fails; below it the bad rows are simply quarantined. A contract entry overrides it per rule.
DEFAULT_ROW_MOSTLY = 0.99
# Ingest metadata every bronze row carries (written by the bronze job; INTERFACES.md section 4).
BRONZE_METADATA_COLUMNS = ("_raw", "_source_file", "_ingested_at", "_batch_id")
# Columns that mark a bronze row as unparseable: boolean flag (true = malformed) or Spark's corrupt-record text.
MALFORMED_FLAG_COLUMN = "_is_malformed"
MALFORMED_TEXT_COLUMN = "_corrupt_record"
# Gold columns that hold how many silver rows an aggregate row covers (referential check).
GOLD_COUNT_COLUMNS = ("event_count", "reading_count", "snapshot_count", "row_count", "events", "count")

SPARK_TYPE_NAMES = {
    "string": "StringType", "double": "DoubleType", "float": "FloatType", "long": "LongType",
    "bigint": "LongType", "int": "IntegerType", "integer": "IntegerType", "short": "ShortType",
    "boolean": "BooleanType", "bool": "BooleanType", "timestamp": "TimestampType", "date": "DateType",
}


# A row rule's query as the suites write it (``silver_specs``): every row of the batch where a condition holds.
# Its count is an aggregate over the batch, which GX can compute with the table's other aggregates
# (quality/runner.row_condition_expectation_class, quality/one_pass.py).
CONDITION_QUERY = re.compile(r"^SELECT \* FROM \{batch\} WHERE (?P<condition>NOT \(.*\))$", re.DOTALL)


def rule_condition(query: str) -> str | None:
    """The condition of a row rule's query ``SELECT * FROM {batch} WHERE NOT (<expr>)``; None for any other query."""
    match = CONDITION_QUERY.match(query.strip())
    return match.group("condition") if match else None


class SuiteError(ValueError):
    """A contract's expectation entry is unusable; ``str(err)`` is one line naming dataset, layer and entry."""


@dataclasses.dataclass(frozen=True)
class ExpectationSpec:
    """One expectation of a suite, in GX terms plus our own gating metadata.

    Attributes:
        name: unique within the suite; what the report shows.
        expectation: GX expectation type in snake case, e.g. ``expect_column_values_to_not_be_null``.
        kwargs: the expectation's arguments (``column``, ``min_value``, ...), without ``mostly``.
        severity: ``error`` blocks publishing; ``warn`` only reports. @default - "error"
        mostly: fraction of rows that must pass (row-level expectations only). @default - None (all rows)
        rule: the quarantine rule name the failure links to ("" when no quarantine rule matches). @default - ""
        source: where the spec came from: ``schema``, ``contract`` (explicit entry) or ``builtin``.
    """

    name: str
    expectation: str
    kwargs: Mapping[str, Any]
    severity: str = "error"
    mostly: float | None = None
    rule: str = ""
    source: str = "builtin"

    def threshold_text(self) -> str:
        """Human-readable threshold for the report, e.g. ``-40 <= temperature <= 85, mostly 0.99``."""
        parts = [f"{k}={_short(v)}" for k, v in self.kwargs.items() if k not in ("column", "batch_id")]
        if self.mostly is not None:
            parts.append(f"mostly={self.mostly}")
        return ", ".join(parts) or "-"


def _short(value: Any) -> str:
    text = value.isoformat() if isinstance(value, (dt.date, dt.datetime)) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def field(obj: Any, name: str, default: Any = None) -> Any:
    """Read ``name`` from a contract (B's frozen dataclass), a column object or a plain dict."""
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _columns(contract: Any) -> list[Any]:
    return list(field(contract, "schema", None) or field(contract, "columns", None) or [])


def _explicit_entries(contract: Any, layer: str) -> list[Mapping[str, Any]]:
    expectations = field(contract, "expectations", None) or {}
    entries = field(expectations, layer, None) or []
    return [dict(entry) for entry in entries]


def explicit_specs(contract: Any, layer: str) -> tuple[list[ExpectationSpec], dict[str, dict[str, Any]]]:
    """The contract's own ``expectations.<layer>`` entries, checked and normalised.

    An entry with ``expectation`` adds an expectation. An entry without one overrides ``severity`` and/or
    ``mostly`` of the derived expectation it names (``name``), e.g. ``{name: temperature_range, severity: warn}``.
    Returns ``(added specs, overrides by name)``.
    """
    dataset = field(contract, "dataset", "?")
    specs, overrides = [], {}
    for index, entry in enumerate(_explicit_entries(contract, layer)):
        where = f"dataset '{dataset}': expectations.{layer}[{index}]"
        expectation = entry.get("expectation")
        if expectation is None:
            if not entry.get("name"):
                raise SuiteError(f"{where}: needs 'expectation' (to add one) or 'name' (to override a derived one)")
            _check_gating(where, entry)
            overrides[str(entry["name"])] = {k: entry[k] for k in ("severity", "mostly") if k in entry}
            continue
        if not isinstance(expectation, str) or not expectation.startswith("expect_"):
            if expectation != "unexpected_rows_expectation":
                raise SuiteError(f"{where}: 'expectation' must be a GX expectation name like expect_column_values_to_not_be_null")
        _check_gating(where, entry)
        severity, mostly = entry.get("severity", "error"), entry.get("mostly")
        kwargs = dict(entry.get("kwargs") or {})
        kwargs.pop("mostly", None)
        column = kwargs.get("column") or ",".join(kwargs.get("column_list", [])) or "table"
        name = entry.get("name") or f"{expectation.removeprefix('expect_')}:{column}"
        specs.append(ExpectationSpec(
            name=name, expectation=expectation, kwargs=kwargs, severity=severity,
            mostly=None if mostly is None else float(mostly), rule=entry.get("rule", entry.get("name", "")),
            source="contract"))
    return specs, overrides


def _check_gating(where: str, entry: Mapping[str, Any]) -> None:
    severity = entry.get("severity", "error")
    if severity not in SEVERITIES:
        raise SuiteError(f"{where}: severity must be one of {', '.join(SEVERITIES)}, got {severity!r}")
    mostly = entry.get("mostly")
    if mostly is not None and (isinstance(mostly, bool) or not isinstance(mostly, (int, float))
                               or not 0 < float(mostly) <= 1):
        raise SuiteError(f"{where}: mostly must be a number in (0, 1], got {mostly!r}")


def bronze_specs(contract: Any, columns: Iterable[str]) -> list[ExpectationSpec]:
    """Structure, ingest metadata present, malformed rate (warn above the contract's threshold); an empty
    batch warns."""
    present = list(columns)
    # warn, not error: a micro-batch of empty files has no rows. Blocking it would fail the batch before
    # the checkpoint commits it, and every later run would replay the same empty batch and fail again.
    specs = [ExpectationSpec("row_count", "expect_table_row_count_to_be_between", {"min_value": 1}, severity="warn")]
    for meta_column in BRONZE_METADATA_COLUMNS:
        if meta_column in present:
            specs.append(ExpectationSpec(f"{meta_column}_present", "expect_column_values_to_not_be_null",
                                         {"column": meta_column}))
        else:
            specs.append(ExpectationSpec(f"{meta_column}_present", "expect_column_to_exist", {"column": meta_column}))
    source_field = field(contract, "source_field", None)
    if source_field:
        specs.append(ExpectationSpec(f"{source_field}_present", "expect_column_to_exist", {"column": source_field}))
    max_rate = float(field(contract, "max_malformed_rate", None) or DEFAULT_MAX_MALFORMED_RATE)
    if MALFORMED_FLAG_COLUMN in present:
        specs.append(ExpectationSpec("malformed_rate", "expect_column_values_to_be_in_set",
                                     {"column": MALFORMED_FLAG_COLUMN, "value_set": [False]},
                                     severity="warn", mostly=round(1 - max_rate, 6), rule="malformed_record"))
    elif MALFORMED_TEXT_COLUMN in present:
        specs.append(ExpectationSpec("malformed_rate", "expect_column_values_to_be_null", {"column": MALFORMED_TEXT_COLUMN},
                                     severity="warn", mostly=round(1 - max_rate, 6), rule="malformed_record"))
    return specs


def silver_specs(contract: Any, now: dt.datetime | None = None) -> list[ExpectationSpec]:
    """Not-null, unique key, types, ranges, allowed values, regexes, freshness: all from the schema."""
    now = now or dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    columns = _columns(contract)
    names = [field(c, "name") for c in columns]
    specs = [ExpectationSpec("row_count", "expect_table_row_count_to_be_between", {"min_value": 1}),
             ExpectationSpec("columns_match_contract", "expect_table_columns_to_match_set",
                             {"column_set": names, "exact_match": False})]
    key = list(field(contract, "key", None) or [])
    for column in columns:
        name = field(column, "name")
        if field(column, "required", False) or name in key:
            specs.append(ExpectationSpec(f"{name}_required", "expect_column_values_to_not_be_null", {"column": name},
                                         rule=f"{name}_required", source="schema"))
        type_name = str(field(column, "type", "string")).lower()
        spark_type = SPARK_TYPE_NAMES.get(type_name)
        if spark_type is None and type_name.startswith("decimal"):
            spark_type = "DecimalType"
        if spark_type:
            specs.append(ExpectationSpec(f"{name}_type", "expect_column_values_to_be_of_type",
                                         {"column": name, "type_": spark_type},
                                         rule=f"{name}_type" if type_name != "string" else "", source="schema"))
        low, high = field(column, "min", None), field(column, "max", None)
        if low is not None or high is not None:
            specs.append(ExpectationSpec(f"{name}_range", "expect_column_values_to_be_between",
                                         {"column": name, "min_value": low, "max_value": high},
                                         rule=f"{name}_range", source="schema"))
        allowed = field(column, "allowed", None)
        if allowed:
            specs.append(ExpectationSpec(f"{name}_allowed", "expect_column_values_to_be_in_set",
                                         {"column": name, "value_set": list(allowed)},
                                         rule=f"{name}_allowed", source="schema"))
        regex = field(column, "regex", None)
        if regex:
            specs.append(ExpectationSpec(f"{name}_regex", "expect_column_values_to_match_regex",
                                         {"column": name, "regex": regex},
                                         rule=f"{name}_regex", source="schema"))
    if len(key) == 1:
        specs.append(ExpectationSpec("key_unique", "expect_column_values_to_be_unique", {"column": key[0]},
                                     source="schema"))
    elif len(key) > 1:
        specs.append(ExpectationSpec("key_unique", "expect_compound_columns_to_be_unique", {"column_list": key},
                                     source="schema"))
    event_time = field(contract, "event_time", None)
    if event_time:
        hours = float(field(contract, "freshness_hours", None) or DEFAULT_FRESHNESS_HOURS)
        specs.append(ExpectationSpec(f"{event_time}_freshness", "expect_column_max_to_be_between",
                                     {"column": event_time, "min_value": now - dt.timedelta(hours=hours)},
                                     severity="warn", source="schema"))
    for rule in field(contract, "rules", None) or []:
        rule_name, expr = field(rule, "name"), field(rule, "expr")
        specs.append(ExpectationSpec(rule_name, "unexpected_rows_expectation",
                                     {"unexpected_rows_query": f"SELECT * FROM {{batch}} WHERE NOT ({expr})"},
                                     field(rule, "severity", None) or "error", rule=rule_name, source="contract"))
    return specs


def _aggregate_triplets(columns: list[str]) -> list[tuple[str, str, str]]:
    """(avg, min, max) column triplets by naming convention ``avg_x``/``min_x``/``max_x`` or ``x_avg``/..."""
    triplets = []
    for column in columns:
        for avg_prefix, build in (("avg_", lambda s, b: f"{s}_{b}"), ("_avg", lambda s, b: f"{b}_{s}")):
            if avg_prefix.startswith("_") and column.endswith(avg_prefix):
                base = column[: -len(avg_prefix)]
                low, high = f"{base}_min", f"{base}_max"
            elif not avg_prefix.startswith("_") and column.startswith(avg_prefix):
                base = column[len(avg_prefix):]
                low, high = f"min_{base}", f"max_{base}"
            else:
                continue
            if low in columns and high in columns:
                triplets.append((column, low, high))
    return triplets


def gold_specs(contract: Any, columns: Iterable[str], silver_count: int | None,
               count_column: str | None = "") -> list[ExpectationSpec]:
    """Row counts, aggregate sanity (avg between min and max) and referential checks against silver.

    ``count_column``: the gold column whose sum must equal the silver rows read (the gold module's
    ``RECONCILE_COLUMN``); None = the table has none; "" = guess from ``GOLD_COUNT_COLUMNS``.
    """
    present = list(columns)
    if count_column == "":
        count_column = next((c for c in GOLD_COUNT_COLUMNS if c in present), None)
    if count_column and silver_count is not None:
        # Each gold row aggregates at least one silver row: 1 <= rows <= silver rows (none if silver is empty).
        row_bounds = {"min_value": min(1, int(silver_count)), "max_value": int(silver_count)}
    else:
        row_bounds = {"min_value": 0}  # e.g. a violations table may rightly be empty: report the count only
    specs = [ExpectationSpec("row_count", "expect_table_row_count_to_be_between", row_bounds)]
    for avg_col, min_col, max_col in _aggregate_triplets(present):
        specs.append(ExpectationSpec(f"{avg_col}_not_below_min", "expect_column_pair_values_a_to_be_greater_than_b",
                                     {"column_A": avg_col, "column_B": min_col, "or_equal": True,
                                      "ignore_row_if": "either_value_is_missing"}))
        specs.append(ExpectationSpec(f"{avg_col}_not_above_max", "expect_column_pair_values_a_to_be_greater_than_b",
                                     {"column_A": max_col, "column_B": avg_col, "or_equal": True,
                                      "ignore_row_if": "either_value_is_missing"}))
    if count_column and silver_count is not None:
        specs.append(ExpectationSpec("covers_every_silver_row", "expect_column_sum_to_be_between",
                                     {"column": count_column, "min_value": int(silver_count),
                                      "max_value": int(silver_count)}))
    return specs


def build_specs(contract: Any, layer: str, *, columns: Iterable[str] = (), context: Mapping[str, Any] | None = None,
                now: dt.datetime | None = None) -> list[ExpectationSpec]:
    """The whole suite for ``layer``: derived specs first, then the contract's explicit entries.

    ``columns`` are the validated DataFrame's columns (bronze and gold checks adapt to them);
    ``context["silver_count"]`` feeds gold's referential checks.
    """
    if layer not in LAYERS:
        raise SuiteError(f"layer must be one of {', '.join(LAYERS)}, got {layer!r}")
    context = context or {}
    if layer == "bronze":
        specs = bronze_specs(contract, columns)
    elif layer == "silver":
        specs = silver_specs(contract, now=now)
    else:
        specs = gold_specs(contract, columns, context.get("silver_count"), context.get("count_column", ""))
    added, overrides = explicit_specs(contract, layer)
    known = {spec.name for spec in specs}
    for name in overrides:
        if name not in known:
            raise SuiteError(f"dataset '{field(contract, 'dataset', '?')}': expectations.{layer}: '{name}' overrides no "
                             f"derived expectation; known: {', '.join(sorted(known))}")
    specs = [dataclasses.replace(spec, severity=overrides[spec.name].get("severity", spec.severity),
                                 mostly=(float(overrides[spec.name]["mostly"]) if "mostly" in overrides[spec.name]
                                         else spec.mostly)) if spec.name in overrides else spec
             for spec in specs] + added
    seen: set[str] = set()
    unique = []
    for spec in specs:
        name, n = spec.name, 2
        while name in seen:
            name, n = f"{spec.name}#{n}", n + 1
        seen.add(name)
        unique.append(dataclasses.replace(spec, name=name))
    return unique
