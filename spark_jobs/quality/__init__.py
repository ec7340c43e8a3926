"""Data-quality hook points called by every layer job: Great Expectations validation and run reports.

Call order inside a layer job (see /work/brief/INTERFACES.md section 6):
1. compute the layer's output DataFrame (and, for silver, the quarantine DataFrame);
2. ``validation = validate_layer(...)``; if ``validation.blocking``: do not publish, record
   ``validation.reason`` in the manifest, write the report, exit non-zero;
3. publish (write) the output;
4. ``publish_report(...)`` with the final manifest: writes validation JSON, summary page, data docs.

Submodules: ``suites`` (contract -> expectation specs), ``runner`` (GX on Spark), ``gating`` (severity,
status, exit codes), ``quarantine`` (links failures to quarantined rows), ``report`` (run folder),
``index`` (tenant index with trend charts), ``storage`` (lake I/O).

``TENANTLAKE_VALIDATION=off`` skips validation (status "skipped", no report): for benchmarks only.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import threading
import time
from typing import Any

from spark_jobs.quality.gating import EXIT_FAIL, EXIT_PASS, EXIT_WARN, exit_code, gate, worst  # noqa: F401

__all__ = ["LayerValidation", "RunValidations", "validate_layer", "publish_report", "prewarm", "run_status",
           "exit_code", "worst",
           "EXIT_PASS", "EXIT_WARN", "EXIT_FAIL", "ReportNotWritten"]


class ReportNotWritten(RuntimeError):
    """A layer run's data-quality report could not be written. The run fails with this one line (exit 1):
    its data is published and its manifest written, but no report says what was validated."""



@dataclasses.dataclass
class LayerValidation:
    """Outcome of validating one layer's output. status: "pass" | "warn" | "fail" | "skipped".

    Attributes:
        status: "pass" | "warn" | "fail" (``gating.gate``), "skipped" when validation is off. @default - "pass"
        blocking: an ``error``-severity expectation failed: do not publish. @default - False
        reason: one line naming the failing expectations and counts. @default - ""
        results: one dict per expectation (name, severity, threshold, observed, unexpected, rule...).
        suite_name: ``<dataset>.<layer>`` (``.<gold name>`` for gold outputs). @default - ""
        gx_result: the GX validation result as a JSON-able dict. @default - {}
        quarantine: ``{"total", "by_rule", "samples"}`` of this run's quarantine. @default - None
        quarantine_location: where the quarantined rows are in the lake. @default - ""
        validated_with_quarantine: silver rule-linked expectations were judged on published + quarantined
            rows (``quarantine.apply_quarantine``). @default - False
        docs_dir / docs_page: the rendered GX Data Docs (local temp folder, page within it). @default - ""
        seconds: wall time spent validating (GX run + quarantine summary). @default - 0.0
        skipped: validation was switched off (``TENANTLAKE_VALIDATION=off``). @default - False
        label: which output of the layer run this is (gold name, ``batch-<n>``), "" for the only one.
        parts: the validations combined into this one (one layer run validating several outputs).
        docs_pending: the Data Docs still being rendered in the background (``validate_layer(background_docs=
            True)``); ``wait_for_docs()`` sets ``docs_dir`` and ``docs_page`` from it. @default - None
    """

    status: str = "pass"
    blocking: bool = False
    reason: str = ""
    results: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    suite_name: str = ""
    gx_result: dict[str, Any] = dataclasses.field(default_factory=dict)
    quarantine: dict[str, Any] | None = None
    quarantine_location: str = ""
    validated_with_quarantine: bool = False
    docs_dir: str = ""
    docs_page: str = ""
    seconds: float = 0.0
    skipped: bool = False
    label: str = ""
    parts: list["LayerValidation"] = dataclasses.field(default_factory=list)
    docs_pending: Any = None

    @property
    def exit_code(self) -> int:
        return exit_code(self.status)

    def wait_for_docs(self) -> None:
        """Wait for Data Docs rendered in the background (a failed build raises here)."""
        pending, self.docs_pending = self.docs_pending, None
        if pending is not None:
            self.docs_dir, self.docs_page = pending.result()


@dataclasses.dataclass
class RunValidations:
    """Every validation of one layer run, so that the run's one report covers all of them (a gold run
    validates each gold output; a bronze run each batch). Owned by the run (``JobRun``): ``validate_layer``
    adds to it, ``publish_report`` combines it. Nothing is kept between runs or in the module."""

    parts: list[LayerValidation] = dataclasses.field(default_factory=list)


def run_status(manifest_validation: dict[str, Any] | None = None) -> str:
    """The combined status of a finished layer run (every output / batch), from its manifest's
    ``validation`` entries, for the CLI's exit code; "pass" when nothing was validated."""
    return worst([v.get("status", "pass") for v in (manifest_validation or {}).values()])


def combine(validations: list[LayerValidation]) -> LayerValidation:
    """One validation for a layer run that validated several outputs (worst status wins)."""
    if len(validations) == 1:
        return validations[0]
    results = []
    for part in validations:
        results += [{**r, "name": f"{part.label}/{r['name']}" if part.label else r["name"]} for r in part.results]
    by_rule: dict[str, int] = {}
    for part in validations:
        for rule, rows in ((part.quarantine or {}).get("by_rule") or {}).items():
            by_rule[rule] = by_rule.get(rule, 0) + rows
    status = worst([p.status for p in validations])
    reason = "; ".join(f"{p.label}: {p.reason}" if p.label else p.reason for p in validations if p.reason)
    return LayerValidation(status=status, blocking=any(p.blocking for p in validations), reason=reason, results=results,
                           suite_name=validations[0].suite_name.rsplit(".", 1)[0] if validations[0].label else
                           validations[0].suite_name,
                           gx_result={"validations": [p.gx_result for p in validations]},
                           quarantine=next((p.quarantine for p in validations if p.quarantine), None),
                           quarantine_location=next((p.quarantine_location for p in validations if p.quarantine_location), ""),
                           validated_with_quarantine=any(p.validated_with_quarantine for p in validations),
                           seconds=sum(p.seconds for p in validations), parts=list(validations))


def validation_enabled() -> bool:
    return os.environ.get("TENANTLAKE_VALIDATION", "on").lower() not in ("off", "0", "false", "no")


_prewarm_started = False


def prewarm() -> None:
    """Import Great Expectations in the background (about 5 CPU s of Python work) while the job's Spark stages
    run in the JVM, so that the validation itself does not pay for it. A layer calls it once it knows it has
    rows to validate (bronze's first batch, silver and gold past their "nothing new" check), so a run with
    nothing new never imports it; importing this package starts nothing. Once per process; no-op when
    validation is off."""
    global _prewarm_started
    if not validation_enabled() or _prewarm_started:
        return
    _prewarm_started = True

    def load() -> None:
        try:
            import great_expectations.expectations  # noqa: F401
        except Exception:  # noqa: BLE001 - the real import in run_suite reports any problem
            pass

    threading.Thread(target=load, name="tenantlake-gx-prewarm", daemon=True).start()


# A frame this small (gold's aggregates, a small silver run) is validated through one partition: each of
# GX's Spark jobs then runs one task per stage instead of one per cached partition, about half the time
# per job on 2 cores (bench/README.md, Pipeline). Larger frames keep their partitions (both cores scan).
SMALL_FRAME_ROWS = 100_000


def _validation_frame(df: Any, rows: int | None) -> Any:
    """``df`` as GX reads it: one partition when the job knows it holds at most ``SMALL_FRAME_ROWS`` rows
    (a narrow coalesce of the cached frame: nothing is recomputed or cached again)."""
    if rows is not None and rows <= SMALL_FRAME_ROWS:
        return df.coalesce(1)
    return df


def reads_a_cache(df: Any) -> bool:
    """True when ``df`` is persisted (by any DataFrame object with its plan) or its plan already reads a
    persisted frame, e.g. bronze's ``cached.drop("_file_problem")``: a second cache would only copy it."""
    level = df.storageLevel
    if level.useMemory or level.useDisk:
        return True
    return "InMemoryRelation" in df._jdf.queryExecution().withCachedData().toString()


def _ensure_cached(df: Any) -> None:
    """GX makes a few passes over the frame: keep it in memory so the job's own publish reuses it too.
    A frame that already reads a cache is left alone: a second copy of a 5M-row bronze batch, never
    unpersisted, once took the execution memory the next layer of ``run-all`` needed."""
    if df is not None and not df.is_cached and not reads_a_cache(df):
        from pyspark import StorageLevel

        df.persist(StorageLevel.MEMORY_AND_DISK)


def validate_layer(spark: Any, *, layer: str, contract: Any, df: Any, context: dict[str, Any],
                   run: RunValidations | None = None, background_docs: bool = False) -> LayerValidation:
    """Validate ``df`` (the in-memory output the job already has) against the contract's suite for ``layer``;
    the outcome is also added to ``run`` (the layer run's validations) when given.

    ``context`` carries at least: run_id, lake_uri, dataset, layer, and for silver ``quarantine_df`` (and
    ``quarantine_rows``, its row count when the job knows it: one Spark job fewer; ``rule_fields``, per rule the
    fields its rows failed on, named in the reason: ``gating.gate``),
    for gold ``silver_count`` (referential checks) and ``gold_name``; ``rows`` (the frame's row count,
    when the job has it) lets a small frame be validated through one partition (``SMALL_FRAME_ROWS``). ``df`` is persisted if the job
    has not cached it (never re-read from storage), unless ``read_from_storage`` says the job wrote it and
    read it back (bronze: each expectation's pass then reads only its columns from Parquet). ``background_docs``:
    the Data Docs are rendered in a background thread (``runner.run_suite``); ``publish_report`` waits for them.
    """
    from spark_jobs.quality import quarantine as quarantine_links
    from spark_jobs.quality.runner import run_suite
    from spark_jobs.quality.suites import DEFAULT_ROW_MOSTLY, SuiteError, build_specs, field

    dataset = context.get("dataset") or field(contract, "dataset", "dataset")
    suite_name = ".".join(p for p in (dataset, layer, context.get("gold_name")) if p)
    if not validation_enabled():
        return LayerValidation(status="skipped", suite_name=suite_name, skipped=True)
    started = time.perf_counter()
    if layer == "gold" and context.get("gold_name") and "count_column" not in context:
        try:  # the gold module says which column reconciles with silver (RECONCILE_COLUMN)
            from spark_jobs.transforms.gold import load_gold

            context = {**context, "count_column": load_gold(context["gold_name"]).reconcile_column}
        except Exception:  # noqa: BLE001 - unknown gold module: fall back to the column-name guess
            pass
    try:
        specs = build_specs(contract, layer, columns=df.columns, context=context)
    except SuiteError as err:
        return LayerValidation(status="fail", blocking=True, reason=f"suite error: {err}", suite_name=suite_name)
    if not context.get("read_from_storage"):  # a frame read straight from Parquet: GX reads only the columns it checks
        _ensure_cached(df)
    docs_dir = tempfile.mkdtemp(prefix=f"tenantlake-dq-{suite_name}-")
    suite_run = run_suite(_validation_frame(df, context.get("rows")), specs, suite_name=suite_name, docs_dir=docs_dir,
                          background_docs=background_docs)
    quarantine_df = context.get("quarantine_df")
    summary = (quarantine_links.summarize(quarantine_df, context.get("run_id"), context.get("quarantine_rows"),
                                         contract=contract)
               if quarantine_df is not None else None)
    with_quarantine = layer == "silver" and summary is not None
    if with_quarantine:
        quarantine_links.apply_quarantine(suite_run.results, summary, DEFAULT_ROW_MOSTLY)
    status, blocking, reason = gate(suite_run.results, summary, context.get("rule_fields"))
    lake_uri = context.get("lake_uri")
    location = f"{lake_uri.rstrip('/')}/quarantine/{dataset}/" if lake_uri and quarantine_df is not None else ""
    label = context.get("gold_name") or (f"batch-{context['batch_id']}" if context.get("batch_id") is not None else "")
    validation = LayerValidation(status=status, blocking=blocking, reason=reason, results=suite_run.results,
                                 suite_name=suite_name, gx_result=suite_run.gx_result, quarantine=summary,
                                 quarantine_location=location, validated_with_quarantine=with_quarantine,
                                 docs_dir=suite_run.docs_dir, docs_page=suite_run.docs_page,
                                 seconds=time.perf_counter() - started, label=label,
                                 docs_pending=suite_run.docs_pending)
    if run is not None:
        run.parts.append(validation)
    return validation


def tenant_of(context: dict[str, Any]) -> str:
    """Whose mirror a report goes to: ``context["tenant"]``, else ``$TENANTLAKE_TENANT``, else the tenant whose
    ``$TENANTLAKE_STATE_DIR/tenants/<T>/lake.json`` names the lake's bucket, else "local"."""
    explicit = context.get("tenant") or os.environ.get("TENANTLAKE_TENANT")
    if explicit:
        return explicit
    lake_uri = context.get("lake_uri") or ""
    if "://" in lake_uri:
        import json

        from spark_jobs.quality.report import state_dir

        bucket = lake_uri.split("://", 1)[1].split("/", 1)[0]
        for lake_file in sorted((state_dir() / "tenants").glob("*/lake.json")):
            try:
                if json.loads(lake_file.read_text()).get("lake_bucket_name") == bucket:
                    return lake_file.parent.name
            except (OSError, ValueError):
                continue
    return "local"


def publish_report(spark: Any, *, layer: str, contract: Any, validation: LayerValidation,
                   manifest: dict[str, Any], context: dict[str, Any], run: RunValidations | None = None) -> str | None:
    """Write the per-run report next to the manifest (lake + local mirror) and refresh the mirror's index.
    With ``run``, the report covers every validation of the layer run, else ``validation`` alone.

    Returns the report folder (lake URI, or the mirror path when there is no lake). A report that cannot
    be written raises ``ReportNotWritten`` (the CLI prints it in one line and exits 1).
    """
    from spark_jobs.quality import index, report
    from spark_jobs.quality.suites import field

    if validation.skipped:
        return None
    dataset = context.get("dataset") or field(contract, "dataset", "dataset")
    run_id = context.get("run_id") or manifest.get("run_id") or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    parts = (run.parts if run is not None else None) or [validation]
    try:
        for part in parts:
            part.wait_for_docs()
    except Exception as err:  # noqa: BLE001 - the run must not pass without its report
        for part in parts:
            if part.docs_dir:
                shutil.rmtree(part.docs_dir, ignore_errors=True)
        raise ReportNotWritten(f"{layer} {dataset}: data published and manifest written, but the Data Docs of run "
                               f"{run_id} were not rendered: {type(err).__name__}: {str(err).strip()[:300]}") from err
    validation = combine(parts)
    if not validation.suite_name and manifest.get("status") == "failed":
        # The job stopped before it validated anything: the report says so instead of "pass".
        validation = dataclasses.replace(validation, status="fail", blocking=True, suite_name=f"{dataset}.{layer}",
                                         reason=f"job failed before validation: {manifest.get('error') or 'see manifest'}")
    tenant, lake_uri = tenant_of(context), context.get("lake_uri")
    try:
        mirror = report.mirror_root(tenant)
        previous = report.previous_run_id(spark, lake_uri, mirror, layer, dataset, run_id)
        published = bool(manifest.get("published", not validation.blocking))
        summary = report.build_summary(tenant=tenant, layer=layer, dataset=dataset, run_id=run_id,
                                       validation=validation, manifest=manifest, previous=previous,
                                       exit_code=validation.exit_code, published=published)
        lake_folder, mirror_folder = report.write_run_report(spark, lake_uri=lake_uri, tenant=tenant, summary=summary,
                                                             validation=validation, manifest=manifest,
                                                             report_dir=context.get("report_dir"))
        index.build_index(tenant, mirror)
    except Exception as err:  # noqa: BLE001 - any failure: the run must not pass without its report
        first_line = (str(err).strip().splitlines() or [""])[0][:300]
        raise ReportNotWritten(f"{layer} {dataset}: data published and manifest written, but the data-quality "
                               f"report of run {run_id} was not written: {type(err).__name__}: {first_line}") from err
    finally:
        for part in validation.parts or [validation]:  # the rendered Data Docs now live in the report folder
            if part.docs_dir:
                shutil.rmtree(part.docs_dir, ignore_errors=True)
    return lake_folder or str(mirror_folder)
