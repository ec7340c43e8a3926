"""``python -m spark_jobs erase``: the request checked before any JVM starts (an object-store lake, the subjects,
the contracts' ``subject_keys`` against the lake's classification), then ``job.erase`` in a session sized from
every version of the lake's objects, inside an OpenLineage run (none for a dry run, which changes nothing)."""
from __future__ import annotations

import argparse
import json
import sys

from spark_jobs.contract.model import available_datasets, load_contract
from spark_jobs.erasure import objects
from spark_jobs.erasure.job import check, check_lake, erase
from spark_jobs.erasure.subjects import read_subjects
from spark_jobs.io.s3 import lake_client
from spark_jobs.lake.config import lake_from_args
from spark_jobs.runs import lineage
from spark_jobs.runs.session import command_session


def run(args: argparse.Namespace) -> int:
    """The command, with the options ``spark_jobs.cli`` parsed: 0 for a dry run or a completed erasure, else 1."""
    lake = lake_from_args(args)
    check_lake(lake)  # before the subjects are read and any JVM starts
    subjects = read_subjects(args.subject, args.subject_file,
                             read_remote=lambda uri: objects.read_uri(lake_client(lake), uri))
    for dataset in args.dataset or available_datasets():
        load_contract(dataset).check_personal_data(lake.data_classification)
    check(subjects, args.dataset)  # before Spark starts: a request that fails it changes nothing
    progress = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    with command_session(lake, "tenantlake-erase", args.jars, reads=[""], versions=True) as spark:  # every version
        # OpenLineage START, then COMPLETE naming the tables changed (never a subject) or FAIL.
        with lineage.tracked(spark, lake, "erase", progress=progress, track=not args.dry_run) as changed:
            receipt = erase(spark, lake, subjects, tenant=args.tenant, datasets=args.dataset, dry_run=args.dry_run,
                            progress=progress)
            changed(lineage.erasure_outputs(lake, receipt))
    if args.json:
        print(json.dumps(receipt, indent=1, sort_keys=True))
    elif args.dry_run:
        print(f"erase {receipt['request_id']}: dry run, nothing changed ({len(receipt['datasets'])} datasets)")
    else:
        print(f"erase {receipt['request_id']}: {receipt['status']}; receipt "
              f"{lake.path('reports', 'erasure', receipt['request_id'], 'receipt.json')}")
    return 0 if args.dry_run or receipt["status"] == "completed" else 1
