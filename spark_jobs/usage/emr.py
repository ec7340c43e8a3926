"""vCPU-hours and GB-hours of the tenant's EMR on EKS job runs in a month, from ``describe_job_run``.

EMR on EKS bills the vCPU and memory its pods request, from the start of the image download until the
pod ends (per second, one minute at least). ``describe_job_run`` of ``emr-containers`` reports no
utilisation figures (its ``JobRun`` shape has none, unlike EMR Serverless'), so each run's figures are
its requested sizing times its duration, both from the run's own description:

- duration: ``finishedAt - createdAt`` (at least one minute): includes the job submitter's start and
  any wait for nodes, so it is an upper bound of the pods' lifetime;
- vCPU: ``spark.driver.cores + spark.executor.instances * spark.executor.cores``;
- GB: driver and executor memory plus Spark's memory overhead on Kubernetes
  (``max(384 MiB, factor * memory)``, factor 0.4 for PySpark jobs, or the request's
  ``spark.driver/executor.memoryOverheadFactor``), from ``sparkSubmitParameters`` (``--conf k=v``, split into
  words by shell rules, so quoted values too) and the ``spark-defaults`` classification; Spark's defaults where
  neither sets a value.

Runs are attributed by their tags (``dataset``; ``layer`` is ``pipeline`` for a pipeline run, ``maintain``
or ``erase``), as ``make deploy-jobs`` tags them. Dynamic allocation would make the executor count vary
during a run: the deploy does not turn it on, and a run that does is costed at its initial count.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import re
import shlex
from typing import Any, Iterable

TERMINAL_STATES = ("COMPLETED", "FAILED", "CANCELLED")
MIN_BILLED_SECONDS = 60
# Spark's own defaults (spark.apache.org/docs/3.5.x/configuration.html and running-on-kubernetes.html).
SPARK_DEFAULTS = {"spark.driver.cores": "1", "spark.driver.memory": "1g", "spark.executor.instances": "2",
                  "spark.executor.cores": "1", "spark.executor.memory": "1g"}
NON_JVM_OVERHEAD_FACTOR = 0.4   # Kubernetes, non-JVM (PySpark) jobs
MIN_OVERHEAD_GB = 384 / 1024


@dataclasses.dataclass
class EmrRow:
    layer: str
    dataset: str
    job_runs: int = 0
    hours: float = 0.0
    vcpu_hours: float = 0.0
    memory_gb_hours: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.layer, "dataset": self.dataset, "job_runs": self.job_runs, "hours": round(self.hours, 4),
                "vcpu_hours": round(self.vcpu_hours, 4), "memory_gb_hours": round(self.memory_gb_hours, 4)}


def memory_gb(text: str) -> float:
    """Spark's memory strings: ``4g``, ``512m``, ``2048`` (MiB) -> GiB."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)b?\s*", str(text).lower())
    if not match:
        raise ValueError(f"not a Spark memory size: {text!r}")
    value, unit = float(match.group(1)), match.group(2) or "m"
    return value * {"k": 1 / 1024 / 1024, "m": 1 / 1024, "g": 1.0, "t": 1024.0}[unit]


def submit_words(parameters: str) -> list[str]:
    """``sparkSubmitParameters`` as spark-submit's words: shell rules, so ``--conf "k=a b"`` is two words, not
    three (a run submitted by hand may quote its values); a string shlex cannot read (an unclosed quote) is
    split on spaces instead."""
    try:
        return shlex.split(parameters)
    except ValueError:
        return parameters.split()


def run_conf(job_run: dict[str, Any]) -> dict[str, str]:
    """The Spark settings a run was submitted with: spark-defaults, then ``--conf`` (which wins)."""
    conf: dict[str, str] = {}
    for classification in (job_run.get("configurationOverrides") or {}).get("applicationConfiguration") or []:
        if classification.get("classification") == "spark-defaults":
            conf.update({str(k): str(v) for k, v in (classification.get("properties") or {}).items()})
    tokens = submit_words(str(((job_run.get("jobDriver") or {}).get("sparkSubmitJobDriver") or {})
                              .get("sparkSubmitParameters") or ""))
    for flag, value in zip(tokens, tokens[1:]):
        if flag == "--conf" and "=" in value:
            key, _, setting = value.partition("=")
            conf[key] = setting
    return conf


def requested(conf: dict[str, str]) -> tuple[float, float]:
    """(vCPU, GB) the run's pods request: driver plus executors, memory overhead included."""
    def get(key: str) -> str:
        return conf.get(key, SPARK_DEFAULTS.get(key, ""))

    def with_overhead(role: str) -> float:
        memory = memory_gb(get(f"spark.{role}.memory"))
        if conf.get(f"spark.{role}.memoryOverhead"):
            return memory + memory_gb(conf[f"spark.{role}.memoryOverhead"])
        factor = float(conf.get(f"spark.{role}.memoryOverheadFactor", NON_JVM_OVERHEAD_FACTOR))
        return memory + max(MIN_OVERHEAD_GB, factor * memory)

    executors = int(get("spark.executor.instances"))
    vcpu = float(get("spark.driver.cores")) + executors * float(get("spark.executor.cores"))
    return vcpu, with_overhead("driver") + executors * with_overhead("executor")


def billed_hours(job_run: dict[str, Any]) -> float:
    created, finished = job_run.get("createdAt"), job_run.get("finishedAt")
    if not (isinstance(created, dt.datetime) and isinstance(finished, dt.datetime)):
        return 0.0
    return max((finished - created).total_seconds(), MIN_BILLED_SECONDS) / 3600


def summarise(job_runs: Iterable[dict[str, Any]]) -> list[EmrRow]:
    rows: dict[tuple[str, str], EmrRow] = {}
    for job_run in job_runs:
        tags = job_run.get("tags") or {}
        row = rows.setdefault((tags.get("layer", "-"), tags.get("dataset", "-")),
                              EmrRow(tags.get("layer", "-"), tags.get("dataset", "-")))
        hours = billed_hours(job_run)
        vcpu, gb = requested(run_conf(job_run))
        row.job_runs += 1
        row.hours += hours
        row.vcpu_hours += vcpu * hours
        row.memory_gb_hours += gb * hours
    return [rows[k] for k in sorted(rows)]


def month_bounds(month: str) -> tuple[dt.datetime, dt.datetime]:
    start = dt.datetime.strptime(month, "%Y-%m").replace(tzinfo=dt.timezone.utc)
    end = (start + dt.timedelta(days=32)).replace(day=1)
    return start, end


def job_runs_of_month(emr, virtual_cluster_id: str, month: str) -> list[dict[str, Any]]:
    """``describe_job_run`` of every terminal run created in ``month`` on the virtual cluster."""
    start, end = month_bounds(month)
    described = []
    paginator = emr.get_paginator("list_job_runs")
    for page in paginator.paginate(virtualClusterId=virtual_cluster_id, createdAfter=start, createdBefore=end,
                                   states=list(TERMINAL_STATES)):
        for item in page.get("jobRuns", []):
            described.append(emr.describe_job_run(virtualClusterId=virtual_cluster_id, id=item["id"])["jobRun"])
    return described
