"""OpenLineage run events for every bronze, silver, gold, maintenance and erasure run.

Each run emits ``START`` when it starts and ``COMPLETE`` or ``FAIL`` when it ends, built with the
``openlineage-python`` client (``openlineage.client.event_v2``):

- **job**: namespace ``tenantlake/<lake bucket or folder>``, name ``<layer>.<dataset>`` (``maintain``,
  ``erase`` for those runs); facets ``jobType`` (BATCH) and ``sourceCodeLocation`` whose ``version`` is the
  run manifest's ``code_version``;
- **run**: ``runId`` a UUID derived from the run id (``uuid5``), so START and COMPLETE agree without state;
  facets ``processing_engine`` (Spark and its version), ``tenantlake_contract`` (the contract's version, a
  hash, and its evolution policy: a layer run's) and, on FAIL, ``errorMessage`` (the job's one line);
- **datasets** named by their place in the lake: namespace ``s3://<bucket>`` (``s3a://`` lakes too: one
  name locally and on EMR) or ``file`` for a folder lake, name ``landing/<ds>``, ``bronze/<ds>``,
  ``silver/<ds>``, ``quarantine/<ds>``, ``gold/<table>``; a table also gets a ``symlinks`` identifier
  (``silver.iot``, and the Glue name ``acme_silver.iot`` when the lake has Glue databases). Outputs carry the
  ``schema`` facet (a table's columns as the manifest recorded them; bronze's columns as the contract makes
  them, ``transforms.bronze.bronze_schema``: the source field, ``_raw`` and lineage, the parsed ``_fields``
  struct, ``_unknown_fields``, ``_fields_id``, CSV's ``_header``), a table also ``tenantlake_icebergTable``
  (the schema id and snapshot id of its commit), ``outputStatistics``
  (rows written) and ``tenantlake_dataQuality`` (the validation's status, whether it blocked the publish,
  and each expectation as an ``Assertion`` of the spec); inputs carry ``dataQualityMetrics`` with the rows
  read. The spec's own ``dataQualityAssertions`` is an *input* facet (for a job that checks a dataset it
  reads); our runs check what they write before publishing it, so the result is a custom dataset facet on
  the output, named with our prefix as the spec asks of custom facets.

An erasure run's events name the tables it changed and nothing of the request: no subject, no request id.

**Where events go.** To the lake by default: one JSON-lines object per event under
``reports/lineage/<YYYY-MM-DD>/`` (written through the job's own file system, so SSE-KMS with the tenant
key). With ``OPENLINEAGE_URL`` set (e.g. ``http://marquez:5000``; ``OPENLINEAGE_ENDPOINT``, default
``api/v1/lineage``; ``OPENLINEAGE_API_KEY`` for a bearer token) they are POSTed there instead; with
``OPENLINEAGE_CONFIG`` or ``OPENLINEAGE__TRANSPORT__*`` the client configures its own transport (Kafka,
file, composite, ...); ``OPENLINEAGE_DISABLED=true`` sends nothing.

**Lineage never fails a run.** Every error building or sending an event becomes one warning line on the
run's progress output (``[lineage] warning: ...``), and the run goes on.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import uuid
from typing import Any, Callable, Iterator
from urllib.parse import urlparse

LINEAGE_PREFIX = "reports/lineage"
PRODUCER = "urn:tenantlake:spark_jobs"
RUN_ID_NAMESPACE = uuid.UUID("6f1d2c1e-1e0a-5b5e-9a43-7d3c1f0b2a11")
HTTP_TIMEOUT_S = 5.0
HTTP_RETRIES = 1

Progress = Callable[[str], None]


def _warn(progress: Progress | None, what: str, exc: BaseException) -> None:
    line = f"[lineage] warning: {what}: {type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]}"
    try:
        (progress or print)(line)
    except Exception:  # noqa: BLE001 - a warning must not fail the run either
        pass


# ------------------------------------------------------------------------------------------- naming
def dataset_name(uri: str) -> tuple[str, str]:
    """(namespace, name) of a lake location: ``s3://bucket`` + the key prefix, or ``file`` + the path."""
    parsed = urlparse(uri)
    if parsed.scheme in ("s3", "s3a", "s3n"):
        return f"s3://{parsed.netloc}", parsed.path.strip("/")
    return "file", (parsed.path if parsed.scheme == "file" else uri).rstrip("/")


def job_namespace(lake) -> str:
    return f"tenantlake/{lake.bucket or dataset_name(lake.lake_uri)[1].strip('/').replace('/', '_')}"


def run_uuid(lake_uri: str, run_id: str) -> str:
    return str(uuid.uuid5(RUN_ID_NAMESPACE, f"{lake_uri.rstrip('/')}#{run_id}"))


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# ------------------------------------------------------------------------------------------- transport
def _lake_transport(spark, lake):
    from openlineage.client.serde import Serde
    from openlineage.client.transport import Transport

    class LakeTransport(Transport):
        """One JSON-lines object per event under reports/lineage/<day>/, through the job's file system."""

        kind = "tenantlake-lake"

        def emit(self, event):
            from spark_jobs.io import storage

            day = event.eventTime[:10]
            # <event time to the ms>-<run id>-<type>: a listing of a day is in event order.
            name = f"{event.eventTime.replace(':', '').replace('-', '')}-{event.run.runId}-{event.eventType.value}.jsonl"
            storage.write_text(spark, lake.path(LINEAGE_PREFIX, day, name), Serde.to_json(event) + "\n")

    return LakeTransport()


def destination() -> str:
    """Where events go in this process: ``lake``, ``http <url>``, ``client`` (its own config) or ``off``."""
    if os.environ.get("OPENLINEAGE_DISABLED", "").lower() in ("true", "1", "yes"):
        return "off"
    if os.environ.get("OPENLINEAGE_URL"):
        return f"http {os.environ['OPENLINEAGE_URL']}"
    if os.environ.get("OPENLINEAGE_CONFIG") or any(k.startswith("OPENLINEAGE__TRANSPORT") for k in os.environ):
        return "client"
    return "lake"


@contextlib.contextmanager
def _environment_kept():
    """The client's constructor aliases ``OPENLINEAGE_URL`` into ``OPENLINEAGE__TRANSPORT__...`` variables of
    this process (openlineage-python 1.54 ``_alias_env_vars``); left there, every later run in the process
    (a test session, maintain then erase) would take them for a client configuration of the user's."""
    before = dict(os.environ)
    try:
        yield
    finally:
        for name in set(os.environ) - set(before):
            del os.environ[name]
        os.environ.update({k: v for k, v in before.items() if os.environ.get(k) != v})


def _client(spark, lake):
    with _environment_kept():
        return _new_client(spark, lake)


def _new_client(spark, lake):
    from openlineage.client import OpenLineageClient

    where = destination()
    if where == "off":
        return None
    if where == "client":
        return OpenLineageClient()
    if where.startswith("http "):
        from openlineage.client.transport.http import HttpConfig, HttpTransport

        config = {"url": os.environ["OPENLINEAGE_URL"], "endpoint": os.environ.get("OPENLINEAGE_ENDPOINT", "api/v1/lineage"),
                  "timeout": HTTP_TIMEOUT_S, "retry": {"total": HTTP_RETRIES, "connect": HTTP_RETRIES, "read": HTTP_RETRIES}}
        if os.environ.get("OPENLINEAGE_API_KEY"):
            config["auth"] = {"type": "api_key", "apiKey": os.environ["OPENLINEAGE_API_KEY"]}
        return OpenLineageClient(transport=HttpTransport(HttpConfig.from_dict(config)))
    return OpenLineageClient(transport=_lake_transport(spark, lake))


def emit(spark, lake, events: list, progress: Progress | None = None) -> None:
    """Send ``events``; every failure is one warning line (lineage never fails a run)."""
    try:
        client = _client(spark, lake)
    except Exception as exc:  # noqa: BLE001
        _warn(progress, f"no OpenLineage client ({destination()})", exc)
        return
    for event in events if client is not None else []:
        try:
            client.emit(event)
        except Exception as exc:  # noqa: BLE001
            _warn(progress, f"{event.eventType.value} event of {event.job.name} not sent ({destination()})", exc)


# ------------------------------------------------------------------------------------------- events
def _facets_module():
    from openlineage.client import event_v2
    from openlineage.client.generated import (
        data_quality_assertions_dataset, data_quality_metrics_input_dataset, error_message_run, job_type_job,
        output_statistics_output_dataset, processing_engine_run, schema_dataset, source_code_location_job,
        symlinks_dataset,
    )
    return (event_v2, data_quality_assertions_dataset, data_quality_metrics_input_dataset, error_message_run,
            job_type_job, output_statistics_output_dataset, processing_engine_run, schema_dataset,
            source_code_location_job, symlinks_dataset)


_DQ_FACET: list = []
_CUSTOM_FACETS: dict = {}


def contract_facet_class():
    """``tenantlake_contract``: a custom run facet, the contract a layer run ran with (its version, a hash of
    the contract as the model holds it, and its evolution policy)."""
    if "contract" not in _CUSTOM_FACETS:
        import attr
        from openlineage.client.generated.base import RunFacet

        @attr.define
        class TenantlakeContractRunFacet(RunFacet):
            dataset: str
            version: str
            evolution: str

            @staticmethod
            def _get_schema() -> str:
                return "urn:tenantlake:facets:1-0-0:TenantlakeContractRunFacet"

        _CUSTOM_FACETS["contract"] = TenantlakeContractRunFacet
    return _CUSTOM_FACETS["contract"]


def iceberg_table_facet_class():
    """``tenantlake_icebergTable``: a custom dataset facet, the Iceberg schema id and snapshot id a run's
    commit left the table at."""
    if "table" not in _CUSTOM_FACETS:
        import attr
        from openlineage.client.generated.base import DatasetFacet

        @attr.define
        class TenantlakeIcebergTableDatasetFacet(DatasetFacet):
            schemaId: int | None = None  # noqa: N815 - OpenLineage's camelCase
            snapshotId: int | None = None  # noqa: N815

            @staticmethod
            def _get_schema() -> str:
                return "urn:tenantlake:facets:1-0-0:TenantlakeIcebergTableDatasetFacet"

        _CUSTOM_FACETS["table"] = TenantlakeIcebergTableDatasetFacet
    return _CUSTOM_FACETS["table"]


def data_quality_facet_class():
    """``tenantlake_dataQuality``: a custom dataset facet (spec: custom facets carry the producer's prefix
    and their own ``_schemaURL``) holding the validation's status, blocking flag and assertions."""
    if not _DQ_FACET:
        import attr
        from openlineage.client.generated.base import DatasetFacet
        from openlineage.client.generated.data_quality_assertions_dataset import Assertion

        @attr.define
        class TenantlakeDataQualityDatasetFacet(DatasetFacet):
            status: str
            blocking: bool
            assertions: list[Assertion] = attr.field(factory=list)

            @staticmethod
            def _get_schema() -> str:
                return "urn:tenantlake:facets:1-0-0:TenantlakeDataQualityDatasetFacet"

        globals()["Assertion"] = Assertion  # the annotations above are strings (PEP 563), resolved in this module
        _DQ_FACET.append(TenantlakeDataQualityDatasetFacet)
    return _DQ_FACET[0]


def _schema(columns) -> Any:
    schema_dataset = _facets_module()[7]
    return schema_dataset.SchemaDatasetFacet(fields=[
        schema_dataset.SchemaDatasetFacetFields(name=str(name), type=str(kind) if kind else None, ordinal_position=i + 1)
        for i, (name, kind) in enumerate(columns)])


def _table_symlinks(lake, layer: str, table: str, namespace: str):
    symlinks = _facets_module()[9]
    identifiers = [symlinks.Identifier(namespace=namespace, name=f"{layer}.{table}", type="TABLE")]
    glue = dict(lake.glue_databases)
    if layer in glue:
        identifiers.append(symlinks.Identifier(namespace=f"glue:{lake.region}", name=f"{glue[layer]}.{table}", type="TABLE"))
    return symlinks.SymlinksDatasetFacet(identifiers=identifiers)


def _run_event(event_type: str, lake, job_name: str, run_id: str, *, code_version: str, event_time: str | None = None,
               inputs: list | None = None, outputs: list | None = None, error: str | None = None, spark=None,
               contract=None):
    (event_v2, _, _, error_message_run, job_type_job, _, processing_engine_run, _, source_code_location_job,
     _) = _facets_module()
    from openlineage.client import __version__ as client_version  # noqa: N811

    run_facets: dict[str, Any] = {}
    if spark is not None:
        run_facets["processing_engine"] = processing_engine_run.ProcessingEngineRunFacet(
            version=str(spark.version), name="spark", openlineageAdapterVersion=str(client_version))
    if contract is not None:
        run_facets["tenantlake_contract"] = contract_facet_class()(dataset=contract.dataset, version=contract.version,
                                                                   evolution=contract.evolution)
    if error:
        run_facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(message=error, programmingLanguage="python")
    job_facets = {
        "jobType": job_type_job.JobTypeJobFacet(processingType="BATCH", integration="TENANTLAKE", jobType="JOB"),
        "sourceCodeLocation": source_code_location_job.SourceCodeLocationJobFacet(
            type="python-package", url=PRODUCER, version=code_version),
    }
    return event_v2.RunEvent(
        eventType=getattr(event_v2.RunState, event_type), eventTime=event_time or _now(),
        run=event_v2.Run(runId=run_uuid(lake.lake_uri, run_id), facets=run_facets),
        job=event_v2.Job(namespace=job_namespace(lake), name=job_name, facets=job_facets),
        inputs=inputs or [], outputs=outputs or [], producer=PRODUCER)


def _layer_io(lake, contract, layer: str, manifest: dict[str, Any] | None) -> tuple[list, list]:
    """Input and output datasets of a layer run; with its manifest, with schema, counts and quality facets."""
    (event_v2, dq_assertions, dq_metrics, _, _, output_statistics, _, _, _, _) = _facets_module()
    from spark_jobs.lake.config import gold_table_name

    dataset = contract.dataset
    manifest = manifest or {}
    if layer == "bronze":
        sources, targets = [lake.landing(dataset)], {"bronze": lake.bronze(dataset)}
    elif layer == "silver":
        sources, targets = [lake.bronze(dataset)], {"silver": lake.silver(dataset), "quarantine": lake.quarantine(dataset)}
    else:
        sources, targets = [lake.silver(dataset)], {name: lake.gold(dataset, name) for name in contract.gold}
    inputs = []
    for uri in sources:
        namespace, name = dataset_name(uri)
        facets = {"dataQualityMetrics": dq_metrics.DataQualityMetricsInputDatasetFacet(
            rowCount=int(manifest["rows_in"]), columnMetrics={})} if manifest else {}
        dataset_facets = {"symlinks": _table_symlinks(lake, "silver", dataset, namespace)} if layer == "gold" else {}
        inputs.append(event_v2.InputDataset(namespace=namespace, name=name, facets=dataset_facets, inputFacets=facets))
    outputs = []
    validation = manifest.get("validation") or {}
    assertions = [dq_assertions.Assertion(assertion=str(r.get("name")), success=bool(r.get("success")),
                                          column=r.get("column"), severity=r.get("severity"))
                  for r in manifest.get("_expectations", [])]
    for output, uri in targets.items():
        namespace, name = dataset_name(uri)
        facets: dict[str, Any] = {}
        table_record = (manifest.get("tables") or {}).get(output) or {}
        if layer == "bronze":
            from spark_jobs.transforms.bronze import bronze_schema

            facets["schema"] = _schema([(f.name, f.dataType.simpleString()) for f in bronze_schema(contract).fields])
        elif table_record.get("columns"):
            facets["schema"] = _schema(table_record["columns"])
            facets["tenantlake_icebergTable"] = iceberg_table_facet_class()(
                schemaId=table_record.get("schema_id"), snapshotId=table_record.get("snapshot_id"))
        if output != "quarantine" and layer in ("silver", "gold"):
            table = dataset if layer == "silver" else gold_table_name(dataset, output)
            facets["symlinks"] = _table_symlinks(lake, layer, table, namespace)
        checked = validation.get(output) or validation.get(layer)
        if checked and output != "quarantine":
            several = layer == "gold" and len(targets) > 1  # each gold output's results carry its name first
            mine = [a for a in assertions if not several or a.assertion.startswith(f"{output}/")]
            facets["tenantlake_dataQuality"] = data_quality_facet_class()(
                status=str(checked.get("status", "")), blocking=bool(checked.get("blocking")), assertions=mine)
        output_facets = {}
        rows = (manifest.get("output_rows") or {}).get(output, manifest.get("rows_out") if output == "bronze" else None)
        if manifest and rows is not None:
            output_facets["outputStatistics"] = output_statistics.OutputStatisticsOutputDatasetFacet(rowCount=int(rows))
        outputs.append(event_v2.OutputDataset(namespace=namespace, name=name, facets=facets, outputFacets=output_facets))
    return inputs, outputs


# ------------------------------------------------------------------------------------------- hooks
def run_started(run) -> None:
    """The run envelope's first call (``spark_jobs.jobs.runtime.job_run``): START of a layer run."""
    try:
        inputs, outputs = _layer_io(run.lake, run.contract, run.layer, None)
        event = _run_event("START", run.lake, f"{run.layer}.{run.contract.dataset}", run.run_id,
                           code_version=run.manifest.code_version, inputs=inputs, outputs=outputs, spark=run.spark,
                           contract=run.contract)
    except Exception as exc:  # noqa: BLE001
        _warn(run.progress, "START event not built", exc)
        return
    emit(run.spark, run.lake, [event], run.progress)


def run_finished(run) -> None:
    """The run envelope's last call, on success and on failure: COMPLETE or FAIL from the run manifest."""
    try:
        manifest = run.manifest.to_dict()
        validation = getattr(run, "_last_validation", None)
        parts = list(getattr(run.validations, "parts", []) or ([validation] if validation is not None else []))
        manifest["_expectations"] = [
            {**r, "name": f"{p.label}/{r['name']}" if getattr(p, "label", "") else r.get("name")}
            for p in parts for r in (getattr(p, "results", None) or [])]
        inputs, outputs = _layer_io(run.lake, run.contract, run.layer, manifest)
        failed = manifest.get("status") != "succeeded"
        event = _run_event("FAIL" if failed else "COMPLETE", run.lake, f"{run.layer}.{run.contract.dataset}",
                           run.run_id, code_version=run.manifest.code_version, inputs=inputs,
                           outputs=[] if failed and not manifest.get("published") else outputs,
                           error=manifest.get("error") if failed else None, spark=run.spark, contract=run.contract)
    except Exception as exc:  # noqa: BLE001
        _warn(run.progress, "end event not built", exc)
        return
    emit(run.spark, run.lake, [event], run.progress)


def _table_outputs(lake, layers_by_dataset: dict[str, list[str]]) -> list:
    """Output datasets of maintenance and erasure runs: per dataset, the layers they changed."""
    event_v2 = _facets_module()[0]
    from spark_jobs.contract.model import load_contract
    from spark_jobs.lake.config import gold_table_name

    outputs = []
    for dataset, layers in sorted(layers_by_dataset.items()):
        for layer in layers:
            if layer == "gold":
                uris = [(lake.gold(dataset, name), gold_table_name(dataset, name)) for name in load_contract(dataset).gold]
            elif layer in ("landing", "bronze", "silver", "quarantine"):
                uris = [(getattr(lake, layer)(dataset), dataset)]
            else:
                continue
            for uri, table in uris:
                namespace, name = dataset_name(uri)
                facets = {"symlinks": _table_symlinks(lake, layer, table, namespace)} if layer in ("silver", "gold") else {}
                outputs.append(event_v2.OutputDataset(namespace=namespace, name=name, facets=facets))
    return outputs


@contextlib.contextmanager
def tracked(spark, lake, job_name: str, progress: Progress | None = None,
            track: bool = True) -> Iterator[Callable[[list], None]]:
    """START now; COMPLETE (with the outputs handed to the yielded function) or FAIL (with the error) at the end.
    For the maintenance and erasure commands: ``with tracked(...) as outputs: report = ...; outputs(...)``.
    ``track=False`` (an erasure's dry run, which changes nothing): no event at all."""
    if not track:
        yield lambda outputs: None
        return
    from spark_jobs.runs.manifest import code_version, new_run_id

    run_id, changed = new_run_id(), []
    try:
        version = code_version()
        emit(spark, lake, [_run_event("START", lake, job_name, run_id, code_version=version, spark=spark)], progress)
    except Exception as exc:  # noqa: BLE001
        _warn(progress, "START event not built", exc)
        version = ""
    try:
        yield changed.extend
    except BaseException as exc:
        try:
            error = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:500]}"
            emit(spark, lake, [_run_event("FAIL", lake, job_name, run_id, code_version=version, error=error,
                                          outputs=changed, spark=spark)], progress)
        except Exception as build_error:  # noqa: BLE001
            _warn(progress, "FAIL event not built", build_error)
        raise
    try:
        emit(spark, lake, [_run_event("COMPLETE", lake, job_name, run_id, code_version=version, outputs=changed,
                                      spark=spark)], progress)
    except Exception as exc:  # noqa: BLE001
        _warn(progress, "COMPLETE event not built", exc)


def _never_failing(outputs: Callable[..., list]) -> Callable[..., list]:
    """``outputs`` returning [] when it fails: lineage never fails a run (the event then names no tables)."""
    @functools.wraps(outputs)
    def guarded(*args: Any) -> list:
        try:
            return outputs(*args)
        except Exception:  # noqa: BLE001
            return []

    return guarded


@_never_failing
def maintenance_outputs(lake, report: dict[str, Any]) -> list:
    """The tables a maintenance report says it maintained (``silver.iot``, ``gold.iot_hourly``); [] when they
    cannot be built (lineage never fails a run)."""
    event_v2 = _facets_module()[0]
    outputs = []
    for result in report.get("tables") or []:
        layer, _, table = str(result.get("table", "")).partition(".")
        uri = lake.path(layer, table)
        namespace, name = dataset_name(uri)
        outputs.append(event_v2.OutputDataset(namespace=namespace, name=name,
                                              facets={"symlinks": _table_symlinks(lake, layer, table, namespace)}))
    return outputs


def _changed(facts: Any) -> bool:
    """A receipt's facts of one layer say it changed: a count above 0, a non-empty list (rows removed, dates
    recomputed, objects deleted)."""
    if isinstance(facts, dict):
        return any(_changed(v) for v in facts.values())
    if isinstance(facts, (list, tuple)):
        return len(facts) > 0
    if isinstance(facts, bool):
        return facts
    return isinstance(facts, (int, float)) and facts > 0


@_never_failing
def erasure_outputs(lake, receipt: dict[str, Any]) -> list:
    """What an erasure receipt says it changed, per dataset and layer, as datasets: never a subject; [] when they
    cannot be built (lineage never fails a run)."""
    layers = {}
    for dataset, touched in (receipt.get("datasets") or {}).items():
        names = [layer for layer in ("landing", "bronze", "quarantine", "silver", "gold")
                 if isinstance(touched, dict) and _changed(touched.get(layer))]
        if names:
            layers[dataset] = names
    return _table_outputs(lake, layers)
