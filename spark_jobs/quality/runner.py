"""Run an expectation suite with Great Expectations 1.x on the DataFrame a job already holds in memory.

One ephemeral GX context per validation: a Spark data source with a whole-DataFrame batch, the suite
built from ``ExpectationSpec``s, one ``ValidationDefinition.run``. Every metric of the suite is computed
in one aggregation (``one_pass.py``: one Spark job on a small frame); ``result_format=BASIC`` without
unexpected-value samples keeps GX from adding passes of its own.
Data Docs are rendered into a local folder right after the run (the validation result lives only in
the ephemeral context).

GX 1.x cannot return failing rows on Spark (upstream issues 11647, 10922), so row-level quarantine stays
in the Spark jobs; the report links failures to quarantined rows by rule name.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import re
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from spark_jobs.quality import one_pass
from spark_jobs.quality.one_pass import CONDITION_METRIC
from spark_jobs.quality.suites import ExpectationSpec, rule_condition

# Observed values and unexpected counts, but no unexpected-value samples: those cost one more Spark job per
# expectation (1M rows, 22 expectations: 2.5 s -> 1.4 s), and the report shows quarantined sample rows instead.
RESULT_FORMAT = {"result_format": "BASIC", "partial_unexpected_count": 0}
DOCS_SITE_NAME = "tenantlake_run"  # "local_site" is taken by the ephemeral context's defaults

# Great Expectations is used by one thread at a time: a validation waits for the Data Docs build of the
# previous one (GX does not document its renderers and registries as thread-safe).
_GX_LOCK = threading.Lock()
_docs_builder: ThreadPoolExecutor | None = None


def _docs_thread() -> ThreadPoolExecutor:
    global _docs_builder
    if _docs_builder is None:
        _docs_builder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tenantlake-data-docs")
    return _docs_builder


@dataclasses.dataclass
class SuiteRun:
    """What one GX run produced.

    Attributes:
        results: one dict per spec, in suite order (see ``_result_row``).
        gx_result: the GX ``ExpectationSuiteValidationResult`` as JSON-able dict.
        docs_dir: local folder holding the rendered Data Docs site ("" if not built).
        docs_page: path of the run's validation page relative to ``docs_dir``.
        seconds: wall time of the GX run (without Data Docs).
        docs_pending: the Data Docs build still running in the background (``run_suite(background_docs=True)``);
            its result is ``(docs_dir, docs_page)``. @default - None
    """

    results: list[dict[str, Any]]
    gx_result: dict[str, Any]
    docs_dir: str = ""
    docs_page: str = ""
    seconds: float = 0.0
    docs_pending: Future | None = None


def _quiet_gx() -> None:
    for name in ("great_expectations", "great_expectations.core", "py4j"):
        logging.getLogger(name).setLevel(logging.ERROR)


def _camel(snake: str) -> str:
    return "".join(part.capitalize() for part in snake.split("_"))


_ROW_RULE_CLASS: Any = None


def row_rule_expectation_class():
    """``UnexpectedRowsExpectation`` that computes only the unexpected-row count.

    GX 1.24 resolves two metrics for every ``UnexpectedRowsExpectation``: the count, and a table of up to
    200 of the unexpected rows, that is two Spark jobs per row rule; with our ``BASIC`` result format it
    then drops the table. This subclass asks for the count alone (one job per rule) and returns what GX
    returns at ``BASIC``: success and the count as ``observed_value``. The failing rows themselves are in
    the quarantine silver writes (the report links it). Its Data Docs renderers are GX's own (inherited).
    Built once per process: GX registers an expectation class when it is defined."""
    global _ROW_RULE_CLASS
    if _ROW_RULE_CLASS is None:
        import great_expectations.expectations as gxe

        class ExpectNoRowsBreakingRule(gxe.UnexpectedRowsExpectation):
            metric_dependencies = ("unexpected_rows_query.row_count",)

            def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
                count = metrics["unexpected_rows_query.row_count"]
                return {"success": count == 0, "result": {"observed_value": count}}

        _ROW_RULE_CLASS = ExpectNoRowsBreakingRule
    return _ROW_RULE_CLASS


_ROW_CONDITION_CLASS: Any = None


def row_condition_expectation_class():
    """``UnexpectedRowsExpectation`` for a row rule's query of the form ``SELECT * FROM {batch} WHERE <condition>``,
    whose count is an aggregate of the batch: ``count(CASE WHEN <condition> THEN 1 END)``, the rows the query
    would return, counted (a NULL condition is not a match in either).

    GX's own metric runs the query as a Spark job of its own for each rule; this metric is an aggregate
    function of the table domain, so GX computes every rule's count in the one Spark job that also computes
    the row count and the other table aggregates (silver on 2,000 records, 3 rules: 3 jobs fewer). The result
    is the one ``row_rule_expectation_class`` returns; the Data Docs renderers are GX's own (inherited).
    Built once per process: GX registers a metric and an expectation class when they are defined."""
    global _ROW_CONDITION_CLASS
    if _ROW_CONDITION_CLASS is None:
        import great_expectations.expectations as gxe
        from great_expectations.compatibility.pyspark import functions as F
        from great_expectations.core.metric_domain_types import MetricDomainTypes
        from great_expectations.core.metric_function_types import MetricPartialFunctionTypes
        from great_expectations.execution_engine import SparkDFExecutionEngine
        from great_expectations.expectations.metrics.metric_provider import metric_partial
        from great_expectations.expectations.metrics.table_metric_provider import TableMetricProvider

        class RowsWhereConditionCount(TableMetricProvider):
            metric_name = CONDITION_METRIC
            value_keys = ("unexpected_rows_query",)

            @metric_partial(engine=SparkDFExecutionEngine, partial_fn_type=MetricPartialFunctionTypes.AGGREGATE_FN,
                            domain_type=MetricDomainTypes.TABLE)
            def _spark(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs, metrics, runtime_configuration):
                condition = rule_condition(metric_value_kwargs["unexpected_rows_query"])
                return F.count(F.when(F.expr(condition), F.lit(1))), metric_domain_kwargs, {}

        class ExpectNoRowsMatchingCondition(gxe.UnexpectedRowsExpectation):
            metric_dependencies = (CONDITION_METRIC,)

            def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
                count = metrics[CONDITION_METRIC]
                return {"success": count == 0, "result": {"observed_value": count}}

        _ROW_CONDITION_CLASS = ExpectNoRowsMatchingCondition
    return _ROW_CONDITION_CLASS


def _is_expression(spark: Any, condition: str) -> bool:
    """True when Spark parses ``condition`` as one row-level expression: not ``NOT (a) LIMIT (b)``, and no
    subquery (which may name ``{batch}`` again), which an aggregate of the batch could not evaluate."""
    if "{" in condition or re.search(r"\bselect\b", condition, re.IGNORECASE):
        return False
    try:
        spark._jsparkSession.sessionState().sqlParser().parseExpression(condition)
        return True
    except Exception:  # noqa: BLE001 - py4j's ParseException: not a plain condition, keep GX's query
        return False


def to_gx_expectation(spec: ExpectationSpec, spark: Any = None):
    """The GX 1.x expectation object for ``spec`` (severity and our metadata ride along in ``meta``). With
    ``spark``, a row rule whose query is ``SELECT * FROM {batch} WHERE NOT (<expression>)`` is counted as an
    aggregate (``row_condition_expectation_class``); any other row-rule query keeps its own Spark job. With
    ``spark``, every other expectation is its stock class folded (``one_pass.folded_class``): inside
    ``run_suite`` its metrics come from the suite's one aggregation."""
    import great_expectations.expectations as gxe
    from great_expectations.expectations.metadata_types import FailureSeverity

    row_rule = spec.expectation == "unexpected_rows_expectation"
    cls = row_rule_expectation_class() if row_rule else getattr(gxe, _camel(spec.expectation), None)
    if cls is None:
        raise ValueError(f"expectation '{spec.name}': {spec.expectation} is not a Great Expectations 1.x expectation")
    if row_rule and spark is not None:
        condition = rule_condition(str(spec.kwargs.get("unexpected_rows_query", "")))
        if condition is not None and _is_expression(spark, condition):
            cls = row_condition_expectation_class()
    if spark is not None and cls is not row_rule_expectation_class():
        cls = one_pass.folded_class(cls)  # its metrics from the suite's one aggregation (one_pass.py)
    kwargs = dict(spec.kwargs)
    if spec.mostly is not None:
        kwargs["mostly"] = spec.mostly
    meta = {"name": spec.name, "rule": spec.rule, "severity": spec.severity, "source": spec.source}
    severity = FailureSeverity.CRITICAL if spec.severity == "error" else FailureSeverity.WARNING
    extra = {"description": spec.name} if row_rule else {}
    return cls(**kwargs, meta=meta, severity=severity, **extra)


def _jsonable(value: Any) -> Any:
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _result_row(spec: ExpectationSpec, gx_row: Any) -> dict[str, Any]:
    result = dict(gx_row.result or {})
    exception = gx_row.exception_info or {}
    raised = bool(exception.get("raised_exception")) if isinstance(exception, dict) else False
    observed = result.get("observed_value")
    if observed is None and "unexpected_count" in result:
        observed = f"{result['unexpected_count']} unexpected of {result.get('element_count', '?')}"
    return {
        "name": spec.name,
        "expectation": spec.expectation,
        "column": spec.kwargs.get("column") or ",".join(spec.kwargs.get("column_list", [])) or None,
        "kwargs": _jsonable(dict(spec.kwargs)),
        "threshold": spec.threshold_text(),
        "severity": spec.severity,
        "mostly": spec.mostly,
        "rule": spec.rule,
        "source": spec.source,
        "success": bool(gx_row.success) and not raised,
        "observed_value": _jsonable(observed),
        "element_count": result.get("element_count"),
        "unexpected_count": result.get("unexpected_count"),
        "unexpected_percent": result.get("unexpected_percent"),
        "partial_unexpected_list": _jsonable((result.get("partial_unexpected_list") or [])[:5]),
        "exception": (exception.get("exception_message") if raised else None),
    }


def run_suite(df: Any, specs: list[ExpectationSpec], *, suite_name: str, docs_dir: str | Path | None = None,
              background_docs: bool = False, one_aggregation: bool = True) -> SuiteRun:
    """Validate ``df`` (not re-read, not re-computed by us: cache it in the job) against ``specs``.

    ``background_docs``: render the Data Docs in a background thread and return at once (``docs_pending``):
    rendering is about a second of Python (GX compiles its page templates for every context) that then
    overlaps the job's commit instead of delaying it. The results do not depend on the docs.

    ``one_aggregation``: the suite's metrics in one Spark job (``one_pass``); False runs GX's stock
    expectations (the tests compare both)."""
    with _GX_LOCK:
        run, context = _validate(df, specs, suite_name, one_aggregation)
    if docs_dir is not None:
        if background_docs:
            run.docs_dir, run.docs_pending = str(docs_dir), _docs_thread().submit(_locked_docs, context, Path(docs_dir))
        else:
            run.docs_dir, run.docs_page = _locked_docs(context, Path(docs_dir))
    return run


def _locked_docs(context: Any, docs_dir: Path) -> tuple[str, str]:
    with _GX_LOCK:
        return _build_docs(context, docs_dir)


def _validate(df: Any, specs: list[ExpectationSpec], suite_name: str, one_aggregation: bool = True) -> tuple[SuiteRun, Any]:
    import great_expectations as gx
    from great_expectations.core import ValidationDefinition
    from great_expectations.core.expectation_suite import ExpectationSuite
    from great_expectations.data_context.types.base import ProgressBarsConfig

    _quiet_gx()
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    asset_name = suite_name.replace(".", "_")
    # persist=False: GX would persist every frame it validates and never unpersist it (a second copy of a
    # bronze batch for each batch). The job owns the cache (quality._ensure_cached) and releases it.
    batch = (context.data_sources.add_spark(name="tenantlake", persist=False)
             .add_dataframe_asset(name=asset_name)
             .add_batch_definition_whole_dataframe("whole_dataframe"))
    suite = ExpectationSuite(name=suite_name)
    for spec in specs:
        suite.add_expectation(to_gx_expectation(spec, df.sparkSession if one_aggregation else None))
    suite = context.suites.add(suite)
    validation = context.validation_definitions.add(
        ValidationDefinition(name=f"{suite_name}.validation", data=batch, suite=suite))
    started = time.perf_counter()
    with one_pass.active_plan(one_pass.plan_for(df, RESULT_FORMAT["partial_unexpected_count"]) if one_aggregation else None):
        outcome = validation.run(batch_parameters={"dataframe": df}, result_format=RESULT_FORMAT)
    seconds = time.perf_counter() - started
    spec_by_name = {spec.name: spec for spec in specs}
    rows_by_name = {}
    for gx_row in outcome.results:  # GX groups results by domain, not suite order: match on our meta name
        spec = spec_by_name[(gx_row.expectation_config.meta or {})["name"]]
        rows_by_name[spec.name] = _result_row(spec, gx_row)
    results = [rows_by_name[s.name] for s in specs if s.name in rows_by_name]
    return SuiteRun(results=results, gx_result=_jsonable(outcome.to_json_dict()), seconds=seconds), context


def _build_docs(context: Any, docs_dir: Path) -> tuple[str, str]:
    """Render the Data Docs site (HTML only; GX's pages load their CSS/JS from public CDNs)."""
    docs_dir.mkdir(parents=True, exist_ok=True)
    context.add_data_docs_site(site_name=DOCS_SITE_NAME, site_config={
        "class_name": "SiteBuilder",
        "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(docs_dir)},
        "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
    })
    context.build_data_docs(site_names=[DOCS_SITE_NAME])
    pages = sorted(p.relative_to(docs_dir).as_posix() for p in (docs_dir / "validations").rglob("*.html"))
    return str(docs_dir), (pages[-1] if pages else "index.html")
