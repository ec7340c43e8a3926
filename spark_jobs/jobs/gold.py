"""Gold job: silver/<dataset>/ -> gold/<dataset>/<gold_name>/event_date=.../ for each gold in the contract.

Every output is computed (and reconciled) before any is written; each is then written with dynamic
partition overwrite over the event dates read, so re-runs are idempotent. Counts: rows_in = silver
rows read; rows_out = silver rows the aggregates account for (the sum of each gold's
``RECONCILE_COLUMN``, which must equal rows_in for every gold that declares one).
"""
from __future__ import annotations

from pyspark.sql import functions as F

from spark_jobs.io import readers, writers
from spark_jobs.jobs.runtime import JobRun
from spark_jobs.manifest import InvariantViolation
from spark_jobs.transforms.gold import load_gold


def run_gold(run: JobRun) -> None:
    spark, lake, contract, manifest = run.spark, run.lake, run.contract, run.manifest
    dataset = contract.dataset
    silver_uri = lake.silver(dataset)
    manifest.inputs = [silver_uri]
    silver = readers.read_layer(spark, silver_uri, f"silver {dataset}",
                                f"run `python -m spark_jobs run --dataset {dataset} --layer silver` first")
    if manifest.date:
        silver = silver.where(F.col("event_date") == F.lit(manifest.date).cast("date"))
    silver = silver.persist()
    manifest.rows_in = silver.count()
    covered_dates = sorted(str(r[0]) for r in silver.select("event_date").distinct().collect())
    run.stage("silver read", rows_in=manifest.rows_in, event_dates=len(covered_dates))

    built = []
    accounted: int | None = None
    for name in contract.gold:
        spec = load_gold(name)
        output = spec.build(silver, dict(contract.gold_options.get(name, {}))).persist()
        rows = output.count()
        manifest.output_rows[name] = rows
        manifest.outputs[name] = lake.gold(dataset, name)
        if spec.reconcile_column:
            total = int(output.agg(F.sum(spec.reconcile_column)).first()[0] or 0)
            if total != manifest.rows_in:
                raise InvariantViolation(f"gold {dataset}.{name}: sum({spec.reconcile_column}) = {total} but "
                                         f"{manifest.rows_in} silver rows were read")
            accounted = total
        run.stage(f"built {name}", rows=rows)
        built.append((spec, output))
    manifest.rows_out = manifest.rows_in if accounted is None else accounted
    manifest.check_invariant()

    for spec, output in built:
        run.validate(output, gold_name=spec.name, silver_count=manifest.rows_in)
    for spec, output in built:
        writers.replace_partitions(output, lake.gold(dataset, spec.name), list(spec.partition_by),
                                   covered=covered_dates if list(spec.partition_by) == ["event_date"] else None)
        run.stage(f"published {spec.name}", rows=manifest.output_rows[spec.name])
        output.unpersist()
    manifest.published = True
    silver.unpersist()
