"""One layer of one dataset, run as every caller runs it (the CLI's ``run``/``run-all``, the erase job's
catch-up bronze and per-date gold, the benchmarks): under the layer's lease (``spark_jobs.runs.leases``; the CLI
takes its leases itself, before its Spark session starts), inside the run envelope
(``spark_jobs.jobs.runtime.job_run``)."""
from __future__ import annotations

import contextlib
import time

from spark_jobs.contract.model import load_contract
from spark_jobs.lake.config import LakeConfig
from spark_jobs.runs.leases import fence, held_lease


def run_layer(spark, lake: LakeConfig, dataset: str, layer: str, *, date: str | None = None,
              continuous: bool = False, trigger_seconds: int = 10, max_runtime: float | None = None,
              max_files_per_trigger: int = 200, progress=None, erasure_request: str | None = None,
              dates: list[str] | None = None, lease_held: bool = False, run_id: str | None = None,
              full: bool = False) -> dict:
    """Run one layer of one dataset on ``spark``; returns the run manifest (a dict). The layer's lease is
    taken first (``lease_held``: the caller holds it already); a layer another live run holds, or a dataset
    locked by an erasure request, is refused (``leases.LeaseRefused``, exit 1), except for the runs that
    request makes itself (``erasure_request``). ``dates`` (gold only, an erasure's): event dates to recompute
    besides those gold finds changed in silver since its watermark. ``full``: silver and gold recompute
    everything from their whole input (``--full``), not only what is new. Before each commit the run renews its
    lease (``leases.fence``) and stops when it is no longer its own. ``run_id``: the run's id (default: the
    lease's, a new one)."""
    from spark_jobs.jobs.bronze import run_bronze
    from spark_jobs.jobs.counters import RunCounters
    from spark_jobs.jobs.gold import run_gold
    from spark_jobs.jobs.runtime import job_run, print_progress
    from spark_jobs.jobs.silver import run_silver

    contract = load_contract(dataset)
    contract.check_personal_data(lake.data_classification)
    # The run's clock and counters start before its lease, so the manifest's first stage is the lease.
    leased = (time.monotonic(), RunCounters(spark, lake.lake_uri))
    lease = (contextlib.nullcontext(run_id) if lease_held
             else held_lease(spark, lake, dataset, layer, erasure_request=erasure_request, run_id=run_id))
    with lease as lease_run_id:
        with job_run(spark, lake, contract, layer, date=date, progress=progress or print_progress,
                     dates=dates if layer == "gold" else None, leased=leased, run_id=lease_run_id, full=full,
                     fence=lambda what: fence(lake, dataset, layer, what)) as run:
            if layer == "bronze":
                run_bronze(run, continuous=continuous, trigger_seconds=trigger_seconds,
                           max_runtime_seconds=max_runtime, max_files_per_trigger=max_files_per_trigger)
                check_landing(run)
            elif layer == "silver":
                run_silver(run)
            else:
                run_gold(run)
    # The lease is released after the manifest is written: its cost is in the returned manifest only.
    run.manifest.stages.append({"stage": "lease released", "elapsed_seconds": round(time.monotonic() - run.started, 2),
                                **run.counters.step()})
    return run.manifest.to_dict()


def check_landing(run) -> None:
    """After bronze: which landing object versions bronze has read, and which it never will
    (``spark_jobs.jobs.landing_versions``), into the manifest's ``landing`` (the data-quality report's landing
    section), with a warning line naming the versions bronze will never ingest."""
    from spark_jobs.jobs.landing_versions import reconcile_dataset

    reconciled = reconcile_dataset(run.spark, run.lake, run.contract)
    run.manifest.landing = reconciled.summary()
    run.stage("landing reconciled", versions=reconciled.versions, ingested=reconciled.ingested,
              not_ingested=len(reconciled.not_ingested))
    for line in reconciled.warnings(run.contract.dataset, run.lake):
        run.progress(f"[bronze {run.contract.dataset}] warning: {line}")
