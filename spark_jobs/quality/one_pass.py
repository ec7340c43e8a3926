"""Every count a suite needs, in one Spark job: GX's own expectations, fed from one aggregation of the batch.

Great Expectations 1.24 resolves an expectation's metrics in dependency levels, and bundles the aggregates of
one level and one domain into one Spark job. A suite therefore costs several jobs: the table's row count in
one, the column-map counts (not null, in set, between, regex) in the next, and a job or two of its own for
each expectation whose domain is filtered or whose condition is a window: a column pair with
``ignore_row_if`` (its unexpected count and its filtered row count: gold's ``*_not_below_min`` /
``*_not_above_max``, two jobs each), a uniqueness (a window count, then a filtered count) and a row rule.

Here each expectation of a suite is the stock GX class with one method changed (``folded_class``): its
validation dependencies. Every data metric it asks for (``table.row_count``, ``<map metric>.unexpected_count``,
``filtered_row_count``, ``column.max``, ...) is replaced by a lookup (``VALUE_METRIC``) into one table
metric (``SUITE_METRIC``) that computes them all in one ``agg`` over the batch, grouped by the key first when
the suite checks a uniqueness and the frame has one partition (``validate_layer`` hands GX a small frame so):
one Spark job. On a larger frame GX keeps the uniqueness (its window shuffles the key alone; grouped, every
metric's partial would travel with it), and the rest is still one aggregation. GX's own ``_validate`` and Data Docs renderers then run on the same values, so the results are the
stock ones (``tests/spark_jobs/quality/test_one_pass.py`` runs both on failing and passing rows). A metric
this module does not compute as GX does (a ``row_condition``, a range on a string column, a second
uniqueness, another expectation type, unexpected-value samples beyond ``partial_unexpected_count`` 0) stays
GX's own, with its own Spark job: slower, never different.

The values are computed the way GX computes them on Spark (its ``_spark`` metric functions, 1.24.1): a
column map's unexpected count is ``sum(CASE WHEN <unexpected> THEN 1 ELSE 0 END)`` over the table (NULL on an
empty batch), a pair's, a multicolumn's and a window's a count over the filtered domain (0 when empty).
"""
from __future__ import annotations

import itertools
import json
import threading
from typing import Any

from spark_jobs.quality.suites import rule_condition

SUITE_METRIC = "tenantlake.suite_aggregates"
CONDITION_METRIC = "tenantlake.rows_where_condition.count"  # a row rule's count (runner.row_condition_expectation_class)
VALUE_METRIC = "tenantlake.suite_value"
GROUP_ROWS = "_tenantlake_rows"  # the rows per key in a grouped plan

# Domain kwargs a metric may carry; a row_condition, its parser or a table name must be unset (the aggregate
# reads the whole batch).
_DOMAIN_KEYS = {"batch_id", "table", "column", "column_A", "column_B", "column_list", "ignore_row_if",
                "row_condition", "condition_parser"}
_COMPARABLE_TYPES = ("byte", "short", "int", "bigint", "long", "float", "double", "decimal", "date", "timestamp")

_PLANS: dict[str, "AggregatePlan"] = {}
_ACTIVE = threading.local()
_tokens = itertools.count(1)


class AggregatePlan:
    """The aggregates of one suite run: ``entries`` by key, each ``(kind, payload)``; ``group`` the columns
    of the one uniqueness it folds (None: a flat aggregation).

    Kinds: ``rows`` (row count), ``flag_sum`` (``sum(CASE WHEN <flag> ...)``, GX's column-map count),
    ``count_where`` (rows where a predicate holds), ``max`` / ``min`` / ``sum`` (of a column),
    ``duplicates`` (rows whose key occurs more than once, over the rows not ``excluded``), ``empty_list``
    (no Spark work: the unexpected-value samples at ``partial_unexpected_count`` 0)."""

    def __init__(self, column_types: dict[str, str], partial_unexpected_count: int, may_group: bool = True):
        self.column_types = column_types
        self.partial_unexpected_count = partial_unexpected_count
        self.may_group = may_group
        self.entries: dict[str, tuple[str, Any]] = {}
        self.group: tuple[str, ...] | None = None
        self.token = f"plan-{next(_tokens)}"

    def key_for(self, metric_name: str, domain: dict[str, Any], value: dict[str, Any]) -> str | None:
        """The key of the aggregate that equals GX's ``metric_name`` on this domain, registered in the plan;
        None when it is not one this plan can compute (GX then computes it itself)."""
        if set(domain) - _DOMAIN_KEYS or domain.get("row_condition") or domain.get("condition_parser") \
                or domain.get("table"):
            return None
        # a filtered row count carries the result format, which does not change the count
        entry = self._entry(metric_name, domain, {k: v for k, v in (value or {}).items() if k != "result_format"})
        if entry is None:
            return None
        key = json.dumps([metric_name, {k: v for k, v in domain.items() if k != "batch_id"}, value or {}],
                         sort_keys=True, default=str)
        self.entries[key] = entry
        return key

    def _entry(self, metric_name: str, domain: dict[str, Any], value: dict[str, Any]) -> tuple[str, Any] | None:
        from pyspark.sql import functions as F

        column = domain.get("column")
        named = [column, domain.get("column_A"), domain.get("column_B"), *(domain.get("column_list") or [])]
        if any(n is not None and (n not in self.column_types or "." in n or "`" in n) for n in named):
            return None  # a missing column GX reports itself; a dotted name GX quotes its own way
        if metric_name == "table.row_count" and column is None and "column_list" not in domain:
            return "rows", None
        if metric_name in ("column.max", "column.min", "column.sum") and column is not None and not value:
            return metric_name.split(".")[1], column
        if metric_name.endswith(".unexpected_values") and self.partial_unexpected_count == 0:
            return "empty_list", None
        if metric_name == CONDITION_METRIC:
            condition = rule_condition(value.get("unexpected_rows_query", ""))
            return ("count_where", F.expr(condition)) if condition else None
        if column is not None:
            return self._column_unexpected(metric_name, column, value)
        if "column_A" in domain and "column_B" in domain:
            return self._pair(metric_name, domain, value)
        if "column_list" in domain:
            return self._multicolumn(metric_name, domain, value)
        return None

    def _column_unexpected(self, metric_name: str, column: str, value: dict[str, Any]):
        from pyspark.sql import functions as F

        col = F.col(column)
        if metric_name == "column_values.nonnull.unexpected_count" and not value:
            return "flag_sum", col.isNull()
        if metric_name == "column_values.null.unexpected_count" and not value:
            return "flag_sum", col.isNotNull()
        if metric_name == "column_values.in_set.unexpected_count" and set(value) <= {"value_set"}:
            value_set = value.get("value_set")
            expected = F.lit(True) if value_set is None else col.isin(list(value_set))
            return "flag_sum", col.isNotNull() & ~expected
        if metric_name == "column_values.match_regex.unexpected_count" and set(value) == {"regex"}:
            return "flag_sum", col.isNotNull() & ~col.rlike(value["regex"])
        if metric_name == "column_values.between.unexpected_count":
            expected = self._between(column, value)
            return None if expected is None else ("flag_sum", col.isNotNull() & ~expected)
        if metric_name == "column_values.unique.unexpected_count" and not value and self._groups_by((column,)):
            return "duplicates", col.isNull()
        return None

    def _between(self, column: str, value: dict[str, Any]):
        """GX's ``column_values.between`` condition, for the plain case: a numeric or date column, numeric or
        date bounds, one at least, in order; anything else (GX raises on it) is left to GX."""
        from pyspark.sql import functions as F

        if set(value) - {"min_value", "max_value", "strict_min", "strict_max"}:
            return None
        low, high = value.get("min_value"), value.get("max_value")
        if (low is None and high is None) or not self.column_types[column].startswith(_COMPARABLE_TYPES):
            return None
        if any(isinstance(bound, (bool, str)) for bound in (low, high)):
            return None
        try:
            if low is not None and high is not None and low > high:
                return None
        except TypeError:
            return None
        col = F.col(column)
        conditions = []
        if low is not None:
            conditions.append(col > F.lit(low) if value.get("strict_min") else col >= F.lit(low))
        if high is not None:
            conditions.append(col < F.lit(high) if value.get("strict_max") else col <= F.lit(high))
        return conditions[0] if len(conditions) == 1 else conditions[0] & conditions[1]

    def _pair(self, metric_name: str, domain: dict[str, Any], value: dict[str, Any]):
        from pyspark.sql import functions as F

        ignore = domain.get("ignore_row_if", "both_values_are_missing")  # both columns known (``_entry``)
        a, b = F.col(domain["column_A"]), F.col(domain["column_B"])
        kept = {"both_values_are_missing": ~(a.isNull() & b.isNull()), "either_value_is_missing": ~(a.isNull() | b.isNull()),
                "neither": F.lit(True)}.get(ignore)
        if kept is None:
            return None
        if metric_name == "column_pair_values.a_greater_than_b.filtered_row_count":
            return "count_where", kept
        if metric_name == "column_pair_values.a_greater_than_b.unexpected_count" and set(value) <= {"or_equal"}:
            expected = (a >= b) | a.eqNullSafe(b) if value.get("or_equal") else a > b
            return "count_where", kept & ~expected
        return None

    def _multicolumn(self, metric_name: str, domain: dict[str, Any], value: dict[str, Any]):
        from functools import reduce

        from pyspark.sql import functions as F

        columns = tuple(domain["column_list"])  # every one known (``_entry``)
        if value:
            return None
        nulls = [F.col(c).isNull() for c in columns]
        ignore = domain.get("ignore_row_if", "all_values_are_missing")
        excluded = {"all_values_are_missing": reduce(lambda x, y: x & y, nulls),
                    "any_value_is_missing": reduce(lambda x, y: x | y, nulls), "never": F.lit(False)}.get(ignore)
        if excluded is None:
            return None
        if metric_name == "compound_columns.unique.filtered_row_count":
            return "count_where", ~excluded
        if metric_name == "compound_columns.unique.unexpected_count" and self._groups_by(columns):
            return "duplicates", excluded
        return None

    def _groups_by(self, columns: tuple[str, ...]) -> bool:
        """One uniqueness per plan is folded (the aggregation groups by its columns), on a frame of one
        partition only (``plan_for``); another, or any on a larger frame, stays GX's own."""
        if not self.may_group:
            return False
        if self.group is None:
            self.group = columns
        return self.group == columns

    def compute(self, df: Any) -> dict[str, Any]:
        """Every entry's value, in one Spark query over ``df``."""
        from great_expectations.util import convert_to_json_serializable
        from pyspark.sql import functions as F

        keys = [k for k, (kind, _) in self.entries.items() if kind != "empty_list"]
        values: dict[str, Any] = {k: [] for k, (kind, _) in self.entries.items() if kind == "empty_list"}
        if not keys:
            return values
        names = {key: f"a{i}" for i, key in enumerate(keys)}
        if self.group is None:
            row = df.agg(*[_flat(*self.entries[k]).alias(names[k]) for k in keys]).first()
        else:
            inner = [F.count(F.lit(1)).alias(GROUP_ROWS)]
            inner += [_flat(kind, payload).alias(names[k]) for k, (kind, payload) in self.entries.items()
                      if k in names and kind != "duplicates"]
            grouped = df.groupBy(*self.group).agg(*inner)
            row = grouped.agg(*[_combined(self.entries[k][0], self.entries[k][1], names[k]).alias(names[k])
                                for k in keys]).first()
        values.update({key: convert_to_json_serializable(data=row[names[key]]) for key in keys})
        return values


def _flat(kind: str, payload: Any):
    from pyspark.sql import functions as F

    if kind == "rows":
        return F.count(F.lit(1))
    if kind == "flag_sum":
        return F.sum(F.when(payload, 1).otherwise(0))
    if kind == "count_where":
        return F.count(F.when(payload, 1))
    return {"max": F.max, "min": F.min, "sum": F.sum}[kind](payload)


def _combined(kind: str, payload: Any, name: str):
    """The whole batch's value from the per-key partial ``name`` (grouped plan)."""
    from pyspark.sql import functions as F

    if kind in ("rows", "count_where"):
        return F.coalesce(F.sum(name), F.lit(0))
    if kind == "flag_sum":
        return F.sum(name)
    if kind == "duplicates":  # payload: the key's rows are outside the domain (a null key)
        return F.coalesce(F.sum(F.when(~payload & (F.col(GROUP_ROWS) > 1), F.col(GROUP_ROWS)).otherwise(0)), F.lit(0))
    return {"max": F.max, "min": F.min, "sum": F.sum}[kind](name)


class active_plan:
    """``with active_plan(plan):`` the folded expectations of this thread feed ``plan`` (the runner holds
    GX's lock around it)."""

    def __init__(self, plan: AggregatePlan | None):
        self.plan = plan  # None: GX's own metrics

    def __enter__(self) -> AggregatePlan | None:
        if self.plan is not None:
            _PLANS[self.plan.token] = self.plan
        _ACTIVE.plan = self.plan
        return self.plan

    def __exit__(self, *exc: Any) -> None:
        _ACTIVE.plan = None
        if self.plan is not None:
            _PLANS.pop(self.plan.token, None)


def plan_for(df: Any, partial_unexpected_count: int) -> AggregatePlan:
    """An empty plan for a validation of ``df``: its column types decide which ranges it may compute, and its
    partitions whether it folds a uniqueness. On one partition (``validate_layer`` hands GX a small frame so)
    grouping by the key needs no exchange; on more, it would shuffle every row with a partial aggregate of
    each metric beside its key, where GX's window shuffles the key alone, so there GX keeps the uniqueness."""
    return AggregatePlan({f.name: f.dataType.simpleString() for f in df.schema.fields}, partial_unexpected_count,
                         may_group=_one_partition(df))


def _one_partition(df: Any) -> bool:
    """True when ``df``'s physical plan says it has one partition (planning only, no Spark job; under adaptive
    execution, the plan it starts from)."""
    try:
        plan = df._jdf.queryExecution().executedPlan()
        if plan.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
            plan = plan.inputPlan()
        return int(plan.outputPartitioning().numPartitions()) == 1
    except Exception:  # noqa: BLE001 - unknown: treat as large
        return False


_METRICS_REGISTERED = False
_FOLDED: dict[type, type] = {}


def _register_metrics() -> None:
    global _METRICS_REGISTERED
    if _METRICS_REGISTERED:
        return
    from great_expectations.execution_engine import SparkDFExecutionEngine
    from great_expectations.expectations.metrics.metric_provider import metric_value
    from great_expectations.expectations.metrics.table_metric_provider import TableMetricProvider
    from great_expectations.validator.metric_configuration import MetricConfiguration

    class SuiteAggregates(TableMetricProvider):
        metric_name = SUITE_METRIC
        value_keys = ("plan",)

        @metric_value(engine=SparkDFExecutionEngine)
        def _spark(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs, metrics, runtime_configuration):
            df = execution_engine.get_domain_records(domain_kwargs=metric_domain_kwargs)
            return _PLANS[metric_value_kwargs["plan"]].compute(df)

    class SuiteValue(TableMetricProvider):
        metric_name = VALUE_METRIC
        value_keys = ("plan", "key")

        @metric_value(engine=SparkDFExecutionEngine)
        def _spark(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs, metrics, runtime_configuration):
            return metrics[SUITE_METRIC][metric_value_kwargs["key"]]

        @classmethod
        def _get_evaluation_dependencies(cls, metric, configuration=None, execution_engine=None,
                                         runtime_configuration=None):
            return {SUITE_METRIC: MetricConfiguration(SUITE_METRIC, dict(metric.metric_domain_kwargs),
                                                      {"plan": metric.metric_value_kwargs["plan"]})}

    _METRICS_REGISTERED = True


def folded_class(stock: type) -> type:
    """``stock`` (a GX expectation class) whose data metrics come from the active plan's one aggregation
    (``SUITE_METRIC``); outside a plan, or for a metric the plan cannot compute, GX's own. Its ``_validate``
    and renderers are the stock class's, and so is its expectation type. Built once per class and process."""
    if stock in _FOLDED:
        return _FOLDED[stock]
    _register_metrics()
    from great_expectations.validator.metric_configuration import MetricConfiguration

    def get_validation_dependencies(self, execution_engine=None, runtime_configuration=None, **kwargs):
        dependencies = stock.get_validation_dependencies(self, execution_engine=execution_engine,
                                                         runtime_configuration=runtime_configuration, **kwargs)
        plan = getattr(_ACTIVE, "plan", None)
        if plan is None:
            return dependencies
        for name in dependencies.get_metric_names():
            config = dependencies.get_metric_configuration(name)
            key = plan.key_for(config.metric_name, dict(config.metric_domain_kwargs or {}),
                               dict(config.metric_value_kwargs or {}))
            if key is not None:
                batch = {"batch_id": (config.metric_domain_kwargs or {}).get("batch_id")}
                dependencies.set_metric_configuration(name, MetricConfiguration(
                    VALUE_METRIC, batch, {"plan": plan.token, "key": key}))
        return dependencies

    # The stock class's name: GX registers the folded class under the stock expectation type (it then builds
    # this class from a configuration of that type), so the validation result, its JSON and the Data Docs
    # name the stock expectation; outside a plan the folded class is the stock one.
    folded = type(stock)(stock.__name__, (stock,), {
        "get_validation_dependencies": get_validation_dependencies, "__module__": __name__,
        "__doc__": f"{stock.__name__}, its metrics computed in the suite's one aggregation (spark_jobs.quality.one_pass)."})
    _FOLDED[stock] = folded
    return folded
