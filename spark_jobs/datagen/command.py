"""``python -m spark_jobs datagen``: generate a dataset's sample data and write it into landing/<dataset>/
(create-only, ``datagen.sink``) or put it into the tenant's Kinesis stream of the dataset; optionally write
the ground truth beside it."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from spark_jobs.contract.model import load_contract
from spark_jobs.datagen.generate import DatagenConfig, generate, summary
from spark_jobs.datagen.sink import write_landing
from spark_jobs.lake.config import lake_from_args
from spark_jobs.producers import kinesis


def run(args: argparse.Namespace) -> int:
    """The command, with the options ``spark_jobs.cli`` parsed; 0 when written (errors raise: ``DatagenError``,
    ``ProducerError``)."""
    lake = lake_from_args(args)
    config = DatagenConfig(dataset=args.dataset, sources=args.sources, records=args.records,
                           batch_size=args.batch_size, interval_seconds=args.interval, bad_rate=args.bad_rate,
                           late_rate=args.late_rate, seed=args.seed, start=args.start, users=args.users,
                           name_prefix=args.name_prefix)
    data = generate(config)
    if args.sink == "kinesis":
        contract = load_contract(args.dataset)
        stream, outputs = kinesis.stream_for(args.dataset, tenant=args.tenant, lake_config=args.lake_config)
        records = kinesis.records_from_files(data.files, contract.landing_format, contract.source_field)
        result = kinesis.put_records(kinesis.kinesis_client(outputs, args.ca_bundle), stream, records)
        where = f"kinesis {stream} ({result.records} records, {result.batches} batches)"
    else:
        where = write_landing(lake, args.dataset, data.files)
    if args.truth_file:
        Path(args.truth_file).parent.mkdir(parents=True, exist_ok=True)
        Path(args.truth_file).write_text(json.dumps(data.truth(), indent=1))
    print(f"datagen {summary(data)} -> {where}")
    return 0
