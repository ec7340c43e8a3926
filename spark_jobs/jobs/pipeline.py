"""The pipeline commands of ``python -m spark_jobs``: ``run`` (one layer of one dataset), ``run-all`` (bronze,
silver and gold of each dataset, then the counts), ``counts`` and ``recover``.

A ``run``/``run-all`` checks every contract before Spark starts (personal data against the lake's
classification; the Lake Formation declarations when the lake tags its tables), takes the leases of every
layer it writes for the whole command before its JVM starts (``spark_jobs/runs/leases.py``), checks every contract
change against the live tables before any layer runs (``contract_plan.check_datasets``), then runs the layers
in order. A lake whose tables Lake Formation guards is checked first for Glue databases that would hand new tables
to ``IAM_ALLOWED_PRINCIPALS`` (``lf_tags.check_default_permissions``); each silver or gold layer is preceded by
the columns its tables already have and the contract now calls personal tagged ``pii`` (``lf_tags.tag_before_run``)
and followed by its tag step (``lf_tags.tag_after_run``). Its exit code is the worst validation
status of its layers (``quality.exit_code``).
"""
from __future__ import annotations

import argparse
import json
import sys

from spark_jobs.contract.model import available_datasets, load_contract
from spark_jobs.io import storage
from spark_jobs.jobs.checkpoint import recover_checkpoint
from spark_jobs.jobs.layer import run_layer
from spark_jobs.jobs.report import format_counts_table, landing_warnings, layer_counts
from spark_jobs.lake.config import LAYERS, LakeConfig, lake_from_args
from spark_jobs.lake.failures import EXIT_FAILED, EXIT_OK
from spark_jobs.quality import exit_code, run_status
from spark_jobs.runs.leases import fence, held_lease, held_leases
from spark_jobs.runs.session import command_session, dataset_folders, reads_small_inputs
from spark_jobs.tables import lf_tags
from spark_jobs.tables.plan import check_datasets, rebuild_note


def run(args: argparse.Namespace) -> int:
    """``run`` or ``run-all`` (``args.command``), with the options ``spark_jobs.cli`` parsed."""
    lake = lake_from_args(args)
    if args.command == "run":
        plan = [(args.dataset, args.layer)]
        datasets = [args.dataset]
    else:
        datasets = args.dataset or available_datasets()
        plan = [(d, layer) for d in datasets for layer in LAYERS]
    for dataset in datasets:  # every contract before Spark starts and any layer runs
        load_contract(dataset).check_personal_data(lake.data_classification)
        if lake.lf_classification_tag:
            lf_tags.check_contract(load_contract(dataset))
    if any(layer in ("silver", "gold") for _, layer in plan):
        lf_tags.check_default_permissions(lake)  # no table of this run may be left to IAM alone
    # The leases of every layer the command writes, for the whole command, before its JVM starts: a second
    # run of a layer stops here, in one line naming the holder (spark_jobs/runs/leases.py).
    with held_leases(lake, plan, label=args.command if args.command == "run-all" else args.layer,
                     command=args.command) as run_id:
        return _run_plan(args, lake, datasets, plan, run_id)


def _run_plan(args: argparse.Namespace, lake: LakeConfig, datasets: list[str], plan: list[tuple[str, str]],
              run_id: str) -> int:
    """``run``/``run-all`` under their leases: the layers of ``plan`` in order, then (run-all) the counts."""
    small = reads_small_inputs(lake, plan, continuous=bool(getattr(args, "continuous", False)))
    statuses = []
    with command_session(lake, f"tenantlake-{args.command}", args.jars, small_inputs=small) as spark:
        if args.command == "run-all" and not args.dataset:
            datasets = [d for d in datasets if storage.has_data_files(spark, lake.landing(d))]
            plan = [(d, layer) for d in datasets for layer in LAYERS]
            if not datasets:
                print(f"error: no landing data under {lake.path('landing')}; run `python -m spark_jobs datagen` first",
                      file=sys.stderr)
                return EXIT_FAILED
        # Every contract change against the live tables before any layer runs: a refused one stops here.
        for checked in check_datasets(spark, lake, sorted({d for d, layer in plan if layer in ("silver", "gold")})):
            steps = sum(len(table.steps) for table in checked.tables)
            if steps:
                print(f"[contract {checked.dataset}] {steps} table change(s) allowed by evolution: {checked.evolution}, "
                      "applied before each write (`contract plan` lists them)", file=sys.stderr, flush=True)
            if not args.full and not args.date:
                for table in (t for t in checked.tables if t.rebuild):
                    print(f"[contract {checked.dataset}] {table.table}: {rebuild_note(table)}", file=sys.stderr, flush=True)
        for dataset, layer in plan:
            closed = lf_tags.tag_before_run(spark, lake, dataset, layer)  # a column now personal: closed before it is written
            if closed:
                print(closed, file=sys.stderr, flush=True)
            manifest = run_layer(spark, lake, dataset, layer, date=args.date, continuous=args.continuous,
                                 trigger_seconds=args.trigger_seconds, max_runtime=args.max_runtime,
                                 max_files_per_trigger=args.max_files_per_trigger, full=args.full,
                                 lease_held=True, run_id=run_id if args.command == "run" else None)
            mode = f" mode={manifest['mode']}" if layer != "bronze" else ""
            print(f"{layer} {dataset}: rows_in={manifest['rows_in']} rows_out={manifest['rows_out']} "
                  f"quarantined={manifest['quarantined']} duplicates={manifest['duplicates']} "
                  f"late={manifest['late']}{mode} ({manifest['duration_seconds']}s) manifest: "
                  f"{lake.report_dir(layer, dataset, manifest['run_id'])}/manifest.json")
            statuses.append(run_status(manifest.get("validation")))
            tagged = lf_tags.tag_after_run(spark, lake, dataset, layer)  # the new tables' columns, for Lake Formation
            if tagged:
                print(tagged)
        if args.command == "run-all":
            _print_counts(layer_counts(spark, lake, datasets))
    return exit_code(statuses, allow_warn=args.allow_warn)


def counts(args: argparse.Namespace) -> int:
    """``counts``: the row counts per dataset and layer, as a table or JSON."""
    lake = lake_from_args(args)
    datasets = args.dataset or available_datasets()
    with command_session(lake, "tenantlake-counts", args.jars, reads=dataset_folders(datasets)) as spark:
        rows = layer_counts(spark, lake, datasets)
    _print_counts(rows, as_json=args.json)
    return EXIT_OK


def _print_counts(rows: list[dict], as_json: bool = False) -> None:
    """The counts table (or JSON) on stdout; the landing versions bronze never ingests on stderr."""
    print(json.dumps(rows, indent=2) if as_json else format_counts_table(rows))
    for line in landing_warnings(rows):
        print(line, file=sys.stderr)


def recover(args: argparse.Namespace) -> int:
    """``recover``: a new bronze checkpoint from what bronze already holds (``jobs.checkpoint``), under the
    bronze lease (a live bronze run refuses it; the checkpoint is written only while the lease is its own)."""
    lake = lake_from_args(args)
    with held_lease(None, lake, args.dataset, "bronze"), command_session(
            lake, "tenantlake-recover", args.jars, reads=[f"bronze/{args.dataset}", f"checkpoints/{args.dataset}"]) as spark:
        fence(lake, args.dataset, "bronze", f"a new bronze checkpoint of {args.dataset}")
        recovery = recover_checkpoint(spark, lake, args.dataset)
    print(f"recover bronze {args.dataset}: {recovery.summary()}")
    return EXIT_OK
