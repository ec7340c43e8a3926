"""Check OpenLineage events against the model the ``openlineage-python`` client ships.

The client's wheel (1.54.0) does not ship the spec's JSON schema files (``OpenLineage.json``, the facet
schemas): its ``openlineage.client.generated`` classes are generated from them (datamodel-code-generator)
and carry the schema's required fields, types, enums and format validators. ``validate(event)`` structures
an event's JSON into those classes: a missing required field, a wrong type, an unknown key outside the
facets' additional properties, a facet of an unknown name (ours, ``tenantlake_dataQuality``, ``tenantlake_contract`` and
``tenantlake_icebergTable``, are checked against their classes in
``spark_jobs.runs.lineage``), or a value the client's validators refuse
(event time, run id as a UUID, URIs) fails with the path of the offending value.
"""
from __future__ import annotations

import enum
import typing
from typing import Any

import attr

from openlineage.client import event_v2
from spark_jobs.runs.lineage import contract_facet_class, data_quality_facet_class, iceberg_table_facet_class
from openlineage.client.generated import (
    base, data_quality_assertions_dataset, data_quality_metrics_input_dataset, error_message_run, job_type_job,
    environment_variables_run, output_statistics_output_dataset, processing_engine_run, schema_dataset,
    source_code_location_job, symlinks_dataset, tags_job, tags_run,
)

FACETS = {
    "schema": schema_dataset.SchemaDatasetFacet,
    "symlinks": symlinks_dataset.SymlinksDatasetFacet,
    "dataQualityAssertions": data_quality_assertions_dataset.DataQualityAssertionsDatasetFacet,
    "tenantlake_dataQuality": data_quality_facet_class(),
    "tenantlake_contract": contract_facet_class(),
    "tenantlake_icebergTable": iceberg_table_facet_class(),
    "dataQualityMetrics": data_quality_metrics_input_dataset.DataQualityMetricsInputDatasetFacet,
    "outputStatistics": output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet,
    "processing_engine": processing_engine_run.ProcessingEngineRunFacet,
    "errorMessage": error_message_run.ErrorMessageRunFacet,
    "jobType": job_type_job.JobTypeJobFacet,
    "sourceCodeLocation": source_code_location_job.SourceCodeLocationJobFacet,
    # added by the client itself when it emits (OpenLineageClient.emit: tags and environment facets)
    "tags": (tags_run.TagsRunFacet, tags_job.TagsJobFacet),
    "environmentVariables": environment_variables_run.EnvironmentVariablesRunFacet,
}


class InvalidEvent(AssertionError):
    pass


def validate(event: dict[str, Any]) -> event_v2.RunEvent:
    if "eventType" not in event or event.get("schemaURL", "").split("#")[0] != base.BaseEvent._get_schema().split("#")[0]:
        raise InvalidEvent(f"not a RunEvent of the client's spec version: {event.get('schemaURL')}")
    return _structure(event_v2.RunEvent, event, "$")


def _structure(kind: Any, value: Any, path: str) -> Any:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return value
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        if value is None and type(None) in args:
            return None
        errors = []
        for option in (a for a in args if a is not type(None)):
            try:
                return _structure(option, value, path)
            except InvalidEvent as exc:
                errors.append(str(exc))
        raise InvalidEvent("; ".join(errors))
    if origin is list:
        if not isinstance(value, list):
            raise InvalidEvent(f"{path}: expected a list, got {type(value).__name__}")
        return [_structure(args[0], v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise InvalidEvent(f"{path}: expected an object")
        facet_base = args[1] if len(args) > 1 else Any
        if isinstance(facet_base, type) and issubclass(facet_base, base.BaseFacet):
            out = {}
            for name, facet in value.items():
                kinds = [k for k in (FACETS.get(name) if isinstance(FACETS.get(name), tuple) else (FACETS.get(name),))
                         if k is not None and issubclass(k, facet_base)]
                if not kinds:
                    raise InvalidEvent(f"{path}.{name}: not a {facet_base.__name__} the client knows")
                out[name] = _structure(kinds[0], facet, f"{path}.{name}")
            return out
        return {k: _structure(facet_base, v, f"{path}.{k}") for k, v in value.items()}
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        try:
            return kind(value)
        except ValueError:
            raise InvalidEvent(f"{path}: {value!r} is not one of {[m.value for m in kind]}") from None
    if isinstance(kind, type) and attr.has(kind):
        return _structure_attrs(kind, value, path)
    simple = {str: str, int: int, float: (int, float), bool: bool}
    if kind in simple:
        if not isinstance(value, simple[kind]) or (kind is int and isinstance(value, bool)):
            raise InvalidEvent(f"{path}: expected {kind.__name__}, got {value!r}")
        return value
    raise InvalidEvent(f"{path}: cannot check type {kind}")


def _structure_attrs(kind: type, value: Any, path: str) -> Any:
    if not isinstance(value, dict):
        raise InvalidEvent(f"{path}: expected an object for {kind.__name__}")
    hints = typing.get_type_hints(kind)
    fields = {f.name: f for f in attr.fields(kind)}
    is_facet = issubclass(kind, base.BaseFacet)
    if is_facet:
        for required in ("_producer", "_schemaURL"):
            if not isinstance(value.get(required), str) or not value[required]:
                raise InvalidEvent(f"{path}: a facet needs {required}")
    unknown = [k for k in value if k not in fields]
    if unknown and not is_facet:  # facets allow additional properties; the core objects here use none
        raise InvalidEvent(f"{path}: unknown keys {unknown} for {kind.__name__}")
    kwargs = {}
    for name, field in fields.items():
        if name not in value:
            if field.default is attr.NOTHING and field.init:
                raise InvalidEvent(f"{path}: {kind.__name__} requires {name}")
            continue
        checked = _structure(hints.get(name, Any), value[name], f"{path}.{name}")
        if field.init:
            kwargs[field.alias or name.lstrip("_")] = checked
    try:
        return kind(**kwargs)  # the client's own validators run here
    except (ValueError, TypeError) as exc:
        raise InvalidEvent(f"{path}: {kind.__name__} refused by the client: {exc}") from None
