"""``python -m spark_jobs``: land or generate data, draft a contract, run one layer or all, print the counts
table, query and maintain the Iceberg tables.

Lake selection, in order of precedence: ``--lake-uri`` (+ ``--kms-key-arn``, ``--region``,
``--s3-endpoint``, ``--truststore``), else ``--lake-config FILE``, else ``--tenant T`` (reads
``$TENANTLAKE_STATE_DIR/tenants/T/lake.json``). s3a credentials come from the standard AWS env vars
or default chain.

Exit codes: 0 success, 1 job failed, 2 bad arguments or configuration (also a contract change its evolution
policy refuses: README "Schema evolution"), 3 counts invariant violated, 4 validation blocked a publish (an
error-severity expectation failed), 5 only warn-severity expectations failed (0 with --allow-warn). See
README "Data quality". Every error is one line; one that ended a layer run says where its manifest is.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from spark_jobs.contract import ContractError, available_datasets, load_contract
from spark_jobs.lake import LAYERS, LakeConfig, LakeConfigError, resolve_lake

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INVARIANT, EXIT_VALIDATION = 0, 1, 2, 3, 4


def _lake_args(parser: argparse.ArgumentParser, spark: bool = True) -> None:
    """The lake selection options; ``--jars`` too for the commands that start Spark (``spark``, default True)."""
    group = parser.add_argument_group("lake selection (first that is given wins)")
    group.add_argument("--lake-uri", default="", help="s3a://bucket, s3://bucket (EMR) or a local path")
    group.add_argument("--kms-key-arn", default="", help="tenant KMS key: every write is SSE-KMS with it")
    group.add_argument("--region", default="", help="lake region (default: eu-west-1, or the lake config's)")
    group.add_argument("--s3-endpoint", default="", help="S3 endpoint for s3a, e.g. the emulator's https://127.0.0.1:PORT")
    group.add_argument("--truststore", default="", help="PKCS#12 trust store for the endpoint's CA (JVM)")
    group.add_argument("--ca-bundle", default="", help="PEM CA bundle for boto3 (datagen; default $AWS_CA_BUNDLE)")
    group.add_argument("--lake-config", default="", help="a lake.json (terraform outputs + emulator facts)")
    group.add_argument("--tenant", default="", help="tenant id: reads $TENANTLAKE_STATE_DIR/tenants/<T>/lake.json")
    group.add_argument("--glue-databases", default=(), type=_glue_databases, metavar="silver=DB,gold=DB",
                       help="Glue database per table layer, for an s3:// lake's Glue catalog (EMR; the tenant "
                            "output glue_database_names)")
    group.add_argument("--data-classification", default=(), type=_classification, metavar="CLASS[,CLASS]",
                       help="the tenant's data classification (the tenant output data_classification); with pii "
                            "or gdpr every contract must declare subject_keys")
    group.add_argument("--lf-classification-tag", default="", metavar="KEY",
                       help="the tenant's Lake Formation classification tag (the tenant output "
                            "lake_formation.classification_tag): silver and gold runs tag their tables' columns")
    if spark:
        parser.add_argument("--jars", default="", help="comma-separated extra jars for s3a (default: "
                            "$TENANTLAKE_SPARK_JARS or .local/jars/)")


def _glue_databases(text: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in (part for part in text.split(",") if part):
        layer, sep, database = item.partition("=")
        if not (sep and layer and database):
            raise argparse.ArgumentTypeError(f"'{item}' is not LAYER=DATABASE")
        pairs.append((layer, database))
    return tuple(sorted(pairs))


def _classification(text: str) -> tuple[str, ...]:
    from tenant_model import CLASSIFICATIONS

    values = tuple(sorted({part for part in text.split(",") if part}))
    unknown = [v for v in values if v not in CLASSIFICATIONS]
    if unknown:
        raise argparse.ArgumentTypeError(f"'{unknown[0]}' is not one of {', '.join(CLASSIFICATIONS)}")
    return values


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _date(text: str) -> str:
    try:
        time.strptime(text, "%Y-%m-%d")
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a date YYYY-MM-DD") from None
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    commands = parser.add_subparsers(dest="command", required=True,
                                     metavar="{datagen,land,contract,run,run-all,counts,recover,creds,query,maintain,erase,usage,sync-tags}")
    datasets = available_datasets()

    gen = commands.add_parser("datagen", help="write deterministic sample data into landing/<dataset>/",
                              description="Write deterministic sample data (with optional bad and late records) "
                                          "into landing/<dataset>/ of the lake.")
    gen.add_argument("--dataset", required=True, choices=["iot", "clickstream", "inventory"])
    gen.add_argument("--sources", type=_positive_int, default=5, help="sensors / sites / orgs (default: 5)")
    gen.add_argument("--records", type=_positive_int, default=1000, help="records in total (default: 1000)")
    gen.add_argument("--batch-size", type=_positive_int, default=10, help="records per landing file (default: 10)")
    gen.add_argument("--interval", type=float, default=15.0,
                     help="event-time seconds between two landing files (default: 15)")
    gen.add_argument("--bad-rate", type=float, default=0.0, help="share of bad records, 0..1 (default: 0)")
    gen.add_argument("--late-rate", type=float, default=0.0, help="share of late records, 0..1 (default: 0)")
    gen.add_argument("--seed", type=int, default=42, help="random seed (default: 42)")
    gen.add_argument("--users", type=_positive_int, default=59,
                     help="clickstream: distinct users user-0001..user-<N>, at most 9999 (default: 59)")
    gen.add_argument("--start", default="2020-11-16T22:00:00Z", help="event time of the first file (UTC)")
    gen.add_argument("--name-prefix", default="", help="put this in front of every file name (landing writes are "
                     "create-only: data of another seed or options needs names of its own)")
    gen.add_argument("--truth-file", default="", help="also write the ground truth (bad records, valid rows) as JSON here")
    gen.add_argument("--sink", choices=["landing", "kinesis"], default="landing",
                     help="landing: files under landing/<dataset>/ (default); kinesis: put_records into the "
                          "tenant's stream of the dataset (lake.json kinesis_stream_names), partition key per source")
    _lake_args(gen)

    run = commands.add_parser("run", help="run one layer of one dataset",
                              description="Run one layer (bronze, silver or gold) of one dataset and write its "
                                          "run manifest under reports/<layer>/<dataset>/<run_id>/.")
    run.add_argument("--dataset", required=True, choices=datasets)
    run.add_argument("--layer", required=True, choices=LAYERS)
    _run_args(run)

    run_all = commands.add_parser("run-all", help="run bronze, silver and gold in order",
                                  description="Run bronze -> silver -> gold for each dataset, then print row counts.")
    run_all.add_argument("--dataset", action="append", choices=datasets,
                         help="dataset to run (repeatable; default: every dataset with landing data)")
    _run_args(run_all)

    counts = commands.add_parser("counts", help="print the row counts per layer",
                                 description="Read the lake and print row counts per dataset and layer.")
    counts.add_argument("--dataset", action="append", choices=datasets, help="dataset (repeatable; default: all)")
    counts.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _lake_args(counts)

    recover = commands.add_parser(
        "recover", help="rebuild a corrupt bronze checkpoint from what bronze already holds",
        description="Move checkpoints/<dataset>/bronze/ aside and write a new checkpoint that records every "
                    "landing file bronze already holds, so the next bronze run reads only new files (no "
                    "duplicates, nothing lost). Stop every bronze job of the dataset first. See README "
                    "'Pipeline > Recovery'.")
    recover.add_argument("--dataset", required=True, choices=datasets)
    recover.add_argument("--layer", required=True, choices=["bronze"],
                         help="the layer whose state to rebuild (only bronze keeps state: its checkpoint)")
    _lake_args(recover)

    from spark_jobs import creds

    creds_parser = commands.add_parser("creds", help="vend short-lived credentials scoped to one prefix",
                                       description=creds.__doc__.split("\n\n")[0])
    creds.add_arguments(creds_parser)
    _add_land_parser(commands)
    _add_contract_parser(commands)
    _add_query_parser(commands)
    _add_maintain_parser(commands, datasets)
    _add_erase_parser(commands, datasets)
    _add_usage_parser(commands)
    from spark_jobs import lf_tags

    lf_tags.add_parser(commands, datasets, _lake_args)
    return parser


def _month(text: str) -> str:
    try:
        time.strptime(text, "%Y-%m")
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a month YYYY-MM") from None
    return text


def _add_usage_parser(commands) -> None:
    from spark_jobs import usage

    parser = commands.add_parser("usage", help="bytes, runs and an estimated cost per layer and dataset for a month",
                                 description=usage.__doc__.split("\n\n")[0],
                                 epilog="See spark_jobs/usage/README.md for what each figure is and where it comes from.")
    parser.add_argument("--month", type=_month, default=None, help="YYYY-MM (default: the current month, UTC)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    parser.add_argument("--price-region", default="", help="price the month in this region (default: the lake's)")
    parser.add_argument("--prices", default="", help="a price table of your own (default: spark_jobs/usage/prices.json)")
    _lake_args(parser, spark=False)  # boto3 only: no Spark


def _cmd_usage(args: argparse.Namespace) -> int:
    import datetime as dt

    from spark_jobs import usage
    from spark_jobs.lake import read_lake_outputs
    from spark_jobs.quality import index
    from spark_jobs.quality.report import mirror_root
    from spark_jobs.usage import cost, render

    lake = _resolve(args)
    outputs = read_lake_outputs(args.tenant, args.lake_config)[0] if (args.tenant or args.lake_config) and not args.lake_uri else {}
    tenant = args.tenant or str(outputs.get("tenant_id") or lake.bucket or "lake")
    month = args.month or dt.datetime.now(dt.timezone.utc).strftime("%Y-%m")
    report = usage.collect_usage(lake, tenant=tenant, month=month, outputs=outputs,
                                 price_table=cost.load_prices(args.prices or None), price_region=args.price_region,
                                 progress=lambda line: print(line, file=sys.stderr, flush=True))
    mirror = mirror_root(tenant)
    where = usage.write_report(report, lake, mirror)
    index.build_index(tenant, mirror)
    print(json.dumps(report, indent=1, sort_keys=True) if args.json else render.text(report))
    if "lake_error" in where:
        print(f"warning: usage.json not written to the lake ({where['lake_error']})", file=sys.stderr)
    print(f"usage page: {Path(where['page']).resolve().as_uri()}", file=sys.stderr)
    return EXIT_OK


def _add_land_parser(commands) -> None:
    from spark_jobs import land

    land_parser = commands.add_parser("land", help="check local files against a contract and upload them into landing/",
                                      description=land.__doc__.split("\n\n")[0],
                                      epilog="See spark_jobs/README.md, 'Adding a dataset'.")
    land.add_arguments(land_parser)
    _lake_args(land_parser, spark=False)  # land uploads with boto3: no Spark, no jars


def _add_contract_parser(commands) -> None:
    from spark_jobs import contract_infer, contract_plan

    contract_parser = commands.add_parser("contract", help="draft a contract (infer), compare it with the tables "
                                          "(plan), print its JSON Schema (schema)", description="Dataset contract tools.")
    contract_commands = contract_parser.add_subparsers(dest="contract_command", required=True,
                                                       metavar="{infer,plan,schema}")
    infer = contract_commands.add_parser("infer", help="draft a contract YAML from a sample CSV, Parquet or JSON file",
                                         description=contract_infer.__doc__.split("\n\n")[0])
    contract_infer.add_arguments(infer)
    plan = contract_commands.add_parser("plan", help="what the contract changes in the dataset's live tables; exit 2 "
                                        "when its evolution policy refuses a change",
                                        description=contract_plan.__doc__.split("\n\n")[0],
                                        epilog="See spark_jobs/README.md, 'Schema evolution'.")
    contract_plan.add_arguments(plan)
    _lake_args(plan)
    contract_commands.add_parser("schema", help="print the contract file's JSON Schema (for editors)",
                                 description="Print the JSON Schema of a contract file (draft 2020-12).")


def _cmd_land(args: argparse.Namespace) -> int:
    from spark_jobs import land

    contract = load_contract(args.dataset)
    lake = _resolve(args)
    return land.run(args, lake, contract, _lake_selection(args))


def _cmd_contract(args: argparse.Namespace) -> int:
    if args.contract_command == "schema":
        from spark_jobs.contract import contract_json_schema

        print(json.dumps(contract_json_schema(), indent=1))
        return EXIT_OK
    if args.contract_command == "plan":
        from spark_jobs import contract_plan

        load_contract(args.dataset)  # a bad contract: its one line before Spark starts
        lake = _resolve(args)
        spark, created = _open_session(args, lake, "tenantlake-contract-plan", small_inputs=True)
        try:
            return contract_plan.run(args, spark, lake)
        finally:
            if created:
                spark.stop()
    from spark_jobs import contract_infer

    return contract_infer.run(args)


def _add_query_parser(commands) -> None:
    from spark_jobs import query

    parser = commands.add_parser("query", help="run SQL against the tenant's Iceberg tables (silver.*, gold.*)",
                                 description=query.__doc__.split("\n\n")[0],
                                 epilog=query.__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sql", help='e.g. "SELECT count(*) FROM gold.iot_hourly"')
    parser.add_argument("--json", action="store_true", help="print the rows as a JSON list of objects")
    parser.add_argument("--as-of", default="", help="read each table as of a snapshot id or a UTC time "
                        "(2026-11-23T10:00:00Z)")
    parser.add_argument("--max-rows", type=_positive_int, default=query.DEFAULT_MAX_ROWS,
                        help=f"print at most this many rows (default: {query.DEFAULT_MAX_ROWS})")
    _lake_args(parser)


def _add_erase_parser(commands, datasets: list[str]) -> None:
    from spark_jobs.erasure import job

    parser = commands.add_parser("erase", help="erase data subjects from every layer, with a receipt (GDPR Art. 17)",
                                 description=job.__doc__.split("\n\n")[0],
                                 epilog=job.__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subject", action="append", default=[], metavar="COLUMN=VALUE",
                        help="a data subject, e.g. user_id=user-0042 (repeatable)")
    parser.add_argument("--subject-file", action="append", default=[], metavar="FILE",
                        help="a file of COLUMN=VALUE lines (repeatable; # comments allowed), or an s3:// URI "
                             "of one in the lake (how an EMR erase run gets its subjects)")
    parser.add_argument("--dataset", action="append", choices=datasets,
                        help="only these datasets (default: every dataset whose subject_keys has the column)")
    parser.add_argument("--dry-run", action="store_true", help="print what would be touched; change nothing")
    parser.add_argument("--json", action="store_true", help="print the receipt as JSON")
    _lake_args(parser)


def _cmd_erase(args: argparse.Namespace) -> int:
    from spark_jobs.erasure import objects
    from spark_jobs.erasure.job import check, check_lake, erase
    from spark_jobs.erasure.subjects import read_subjects

    lake = _resolve(args)
    check_lake(lake)  # before the subjects are read and any JVM starts
    subjects = read_subjects(args.subject, args.subject_file,
                             read_remote=lambda uri: objects.read_uri(objects.s3_client(lake), uri))
    for dataset in args.dataset or available_datasets():
        load_contract(dataset).check_personal_data(lake.data_classification)
    check(subjects, args.dataset)  # before Spark starts: a request that fails it changes nothing
    spark, created = _open_session(args, lake, "tenantlake-erase", reads=[""], versions=True)  # every version
    try:
        # OpenLineage START, then COMPLETE naming the tables changed (never a subject) or FAIL; a dry run changes nothing.
        with _lineage(spark, lake, "erase", track=not args.dry_run) as changed:
            receipt = erase(spark, lake, subjects, tenant=args.tenant, datasets=args.dataset, dry_run=args.dry_run,
                            progress=lambda line: print(line, file=sys.stderr, flush=True))
            changed(_erasure_outputs(lake, receipt))
    finally:
        if created:
            spark.stop()
    if args.json:
        print(json.dumps(receipt, indent=1, sort_keys=True))
    elif args.dry_run:
        print(f"erase {receipt['request_id']}: dry run, nothing changed ({len(receipt['datasets'])} datasets)")
    else:
        print(f"erase {receipt['request_id']}: {receipt['status']}; receipt "
              f"{lake.path('reports', 'erasure', receipt['request_id'], 'receipt.json')}")
    return EXIT_OK if args.dry_run or receipt["status"] == "completed" else EXIT_FAILED


def _lineage(spark, lake: LakeConfig, job_name: str, track: bool = True):
    """``spark_jobs.lineage.tracked`` for a maintenance or erasure run (nothing for a dry run)."""
    import contextlib

    from spark_jobs import lineage

    if not track:
        return contextlib.nullcontext(lambda outputs: None)
    return lineage.tracked(spark, lake, job_name, progress=lambda line: print(line, file=sys.stderr, flush=True))


def _erasure_outputs(lake: LakeConfig, receipt: dict) -> list:
    from spark_jobs import lineage

    try:
        return lineage.erasure_outputs(lake, receipt)
    except Exception:  # noqa: BLE001 - lineage never fails a run: the event then names no tables
        return []


def _maintenance_outputs(lake: LakeConfig, report: dict) -> list:
    from spark_jobs import lineage

    try:
        return lineage.maintenance_outputs(lake, report)
    except Exception:  # noqa: BLE001 - lineage never fails a run
        return []


def _add_maintain_parser(commands, datasets: list[str]) -> None:
    from spark_jobs import maintain

    parser = commands.add_parser("maintain", help="compact, expire snapshots, remove orphan files of the tables",
                                 description=maintain.__doc__.split("\n\n")[0],
                                 epilog=maintain.__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", action="append", choices=datasets, help="dataset (repeatable; default: all)")
    parser.add_argument("--snapshot-retention-days", type=int, default=None,
                        help="expire snapshots older than this (default: lake config retention_days.snapshots, "
                             f"else {maintain.DEFAULT_SNAPSHOT_RETENTION_DAYS})")
    parser.add_argument("--retain-last", type=_positive_int, default=maintain.DEFAULT_RETAIN_LAST,
                        help=f"snapshots always kept (default: {maintain.DEFAULT_RETAIN_LAST})")
    parser.add_argument("--orphan-age-days", type=int, default=maintain.DEFAULT_ORPHAN_AGE_DAYS,
                        help=f"delete unreferenced files older than this (default: {maintain.DEFAULT_ORPHAN_AGE_DAYS}, "
                             f"at least {maintain.MIN_ORPHAN_AGE_DAYS})")
    parser.add_argument("--rewrite-all", action="store_true", help="rewrite every data file (default: small-file groups)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    _lake_args(parser)


def _run_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--date", type=_date, default=None,
                        help="silver/gold: only this event date (YYYY-MM-DD); default: everything")
    parser.add_argument("--continuous", action="store_true",
                        help="bronze: keep polling landing/ instead of stopping when it is caught up (availableNow)")
    parser.add_argument("--trigger-seconds", type=_positive_int, default=10, help="bronze --continuous poll interval")
    parser.add_argument("--max-runtime", type=float, default=None,
                        help="bronze --continuous: stop after this many seconds (default: run until Ctrl-C)")
    parser.add_argument("--max-files-per-trigger", type=_positive_int, default=200,
                        help="bronze: landing files per micro-batch (default: 200)")
    parser.add_argument("--allow-warn", action="store_true",
                        help="exit 0 instead of 5 when only warn-severity expectations failed")
    _lake_args(parser)


def _resolve(args: argparse.Namespace) -> LakeConfig:
    return resolve_lake(lake_uri=args.lake_uri, kms_key_arn=args.kms_key_arn, region=args.region,
                        s3_endpoint=args.s3_endpoint, truststore=args.truststore, ca_bundle=args.ca_bundle,
                        lake_config=args.lake_config, tenant=args.tenant,
                        glue_databases=getattr(args, "glue_databases", ()),
                        data_classification=getattr(args, "data_classification", ()),
                        lf_classification_tag=getattr(args, "lf_classification_tag", ""))


def _cmd_datagen(args: argparse.Namespace) -> int:
    from spark_jobs.datagen import DatagenConfig, generate
    from spark_jobs.datagen.generate import summary
    from spark_jobs.datagen.sink import write_landing

    lake = _resolve(args)
    config = DatagenConfig(dataset=args.dataset, sources=args.sources, records=args.records,
                           batch_size=args.batch_size, interval_seconds=args.interval, bad_rate=args.bad_rate,
                           late_rate=args.late_rate, seed=args.seed, start=args.start, users=args.users,
                           name_prefix=args.name_prefix)
    data = generate(config)
    if args.sink == "kinesis":
        from spark_jobs.contract import load_contract
        from spark_jobs.producers import kinesis

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
    return EXIT_OK


def _open_session(args: argparse.Namespace, lake: LakeConfig, app: str, small_inputs: bool = False,
                  reads: list[str] | None = None, versions: bool = False):
    """The command's session. ``reads``: the lake folders the command reads (relative to the lake root, ``""``
    for all of it; ``versions``: every version of their objects): a session it starts itself is sized from
    their bytes (``_reads_small_folders``) unless ``small_inputs`` decided already."""
    from spark_jobs.jobs.runtime import session_for

    if reads is not None and not small_inputs:
        small_inputs = _reads_small_folders(lake, reads, versions=versions)
    jars = [j for j in args.jars.split(",") if j] if args.jars else None
    return session_for(lake, app, jars, small_inputs=small_inputs)


# Session sizing has its home in spark_jobs/jobs/sizing.py (the benchmarks size their sessions with it too).
from spark_jobs.jobs.sizing import dataset_folders as _dataset_folders  # noqa: E402
from spark_jobs.jobs.sizing import reads_small_folders as _reads_small_folders  # noqa: E402
from spark_jobs.jobs.sizing import reads_small_inputs as _reads_small_inputs  # noqa: E402
from spark_jobs.jobs.sizing import table_folders as _table_folders  # noqa: E402


def _cmd_run(args: argparse.Namespace) -> int:
    from spark_jobs.leases import held_leases

    lake = _resolve(args)
    if args.command == "run":
        plan = [(args.dataset, args.layer)]
        datasets = [args.dataset]
    else:
        datasets = args.dataset or available_datasets()
        plan = [(d, layer) for d in datasets for layer in LAYERS]
    from spark_jobs import lf_tags

    for dataset in datasets:  # every contract before Spark starts and any layer runs
        load_contract(dataset).check_personal_data(lake.data_classification)
        if lake.lf_classification_tag:
            lf_tags.check_contract(load_contract(dataset))
    # The leases of every layer the command writes, for the whole command, before its JVM starts: a second
    # run of a layer stops here, in one line naming the holder (spark_jobs/leases.py).
    with held_leases(lake, plan, label=args.command if args.command == "run-all" else args.layer,
                     command=args.command) as run_id:
        return _run_plan(args, lake, datasets, plan, run_id)


def _run_plan(args: argparse.Namespace, lake: LakeConfig, datasets: list[str], plan: list[tuple[str, str]],
              run_id: str) -> int:
    """``run``/``run-all`` under their leases: the layers of ``plan`` in order, then (run-all) the counts."""
    from spark_jobs import lf_tags
    from spark_jobs.jobs.layer import run_layer
    from spark_jobs.quality import exit_code, run_status
    from spark_jobs.report import format_counts_table, landing_warnings, layer_counts

    small = _reads_small_inputs(lake, plan, continuous=bool(getattr(args, "continuous", False)))
    spark, created = _open_session(args, lake, f"tenantlake-{args.command}", small_inputs=small)
    try:
        if args.command == "run-all" and not args.dataset:
            from spark_jobs.io import storage

            datasets = [d for d in datasets if storage.has_data_files(spark, lake.landing(d))]
            plan = [(d, layer) for d in datasets for layer in LAYERS]
            if not datasets:
                print(f"error: no landing data under {lake.path('landing')}; run `python -m spark_jobs datagen` first",
                      file=sys.stderr)
                return EXIT_FAILED
        # Every contract change against the live tables before any layer runs: a refused one stops here.
        from spark_jobs.contract_plan import check_datasets

        for checked in check_datasets(spark, lake, sorted({d for d, layer in plan if layer in ("silver", "gold")})):
            steps = sum(len(table.steps) for table in checked.tables)
            if steps:
                print(f"[contract {checked.dataset}] {steps} table change(s) allowed by evolution: {checked.evolution}, "
                      "applied before each write (`contract plan` lists them)", file=sys.stderr, flush=True)
        statuses = []
        silver_dates: dict[str, list[str]] = {}
        for dataset, layer in plan:
            manifest = run_layer(spark, lake, dataset, layer, date=args.date, continuous=args.continuous,
                                 trigger_seconds=args.trigger_seconds, max_runtime=args.max_runtime,
                                 max_files_per_trigger=args.max_files_per_trigger, dates=silver_dates.get(dataset),
                                 lease_held=True, run_id=run_id if args.command == "run" else None)
            if args.command == "run-all" and layer == "silver" and not args.date:
                silver_dates[dataset] = list(manifest.get("event_dates") or [])
            print(f"{layer} {dataset}: rows_in={manifest['rows_in']} rows_out={manifest['rows_out']} "
                  f"quarantined={manifest['quarantined']} duplicates={manifest['duplicates']} "
                  f"late={manifest['late']} ({manifest['duration_seconds']}s) manifest: "
                  f"{lake.report_dir(layer, dataset, manifest['run_id'])}/manifest.json")
            statuses.append(run_status(manifest.get("validation")))
            tagged = lf_tags.tag_after_run(spark, lake, dataset, layer)  # the new tables' columns, for Lake Formation
            if tagged:
                print(tagged)
        if args.command == "run-all":
            rows = layer_counts(spark, lake, datasets)
            print(format_counts_table(rows))
            for line in landing_warnings(rows):
                print(line, file=sys.stderr)
    finally:
        if created:
            spark.stop()
    return exit_code(statuses, allow_warn=args.allow_warn)


def _cmd_counts(args: argparse.Namespace) -> int:
    from spark_jobs.report import format_counts_table, landing_warnings, layer_counts

    lake = _resolve(args)
    datasets = args.dataset or available_datasets()
    spark, created = _open_session(args, lake, "tenantlake-counts", reads=_dataset_folders(datasets))
    try:
        rows = layer_counts(spark, lake, datasets)
    finally:
        if created:
            spark.stop()
    print(json.dumps(rows, indent=2) if args.json else format_counts_table(rows))
    for line in landing_warnings(rows):
        print(line, file=sys.stderr)
    return EXIT_OK


def _cmd_recover(args: argparse.Namespace) -> int:
    from spark_jobs.jobs.checkpoint import recover_checkpoint

    lake = _resolve(args)
    spark, created = _open_session(args, lake, "tenantlake-recover",
                                   reads=[f"bronze/{args.dataset}", f"checkpoints/{args.dataset}"])
    try:
        recovery = recover_checkpoint(spark, lake, args.dataset)
    finally:
        if created:
            spark.stop()
    print(f"recover bronze {args.dataset}: {recovery.summary()}")
    return EXIT_OK


def _cmd_query(args: argparse.Namespace) -> int:
    from spark_jobs import catalog, query

    lake = _resolve(args)
    as_of = query.parse_as_of(args.as_of) if args.as_of else None
    spark, created = _open_session(args, lake, "tenantlake-query", reads=["silver", "gold"])
    try:
        result = query.run_query(spark, catalog.register(spark, lake), args.sql, as_of=as_of, max_rows=args.max_rows,
                                 consumer=catalog.register_consumer_names(spark, lake))
    finally:
        if created:
            spark.stop()
    print(query.format_json(result) if args.json else query.format_result(result))
    return EXIT_OK


def _cmd_maintain(args: argparse.Namespace) -> int:
    from spark_jobs import maintain
    from spark_jobs.lake import read_lake_outputs

    lake = _resolve(args)
    retention = args.snapshot_retention_days
    if retention is None and (args.tenant or args.lake_config) and not args.lake_uri:
        retention = maintain.retention_from_outputs(read_lake_outputs(args.tenant, args.lake_config)[0])
    options = maintain.MaintainOptions(
        snapshot_retention_days=maintain.DEFAULT_SNAPSHOT_RETENTION_DAYS if retention is None else retention,
        retain_last=args.retain_last, orphan_age_days=args.orphan_age_days, rewrite_all=args.rewrite_all)
    options.validate()
    datasets = args.dataset or available_datasets()
    spark, created = _open_session(args, lake, "tenantlake-maintain", reads=_table_folders(datasets))
    try:
        with _lineage(spark, lake, "maintain") as changed:  # OpenLineage START, COMPLETE or FAIL
            report = maintain.run_maintenance(spark, lake, datasets, options,
                                              tenant=args.tenant,
                                              progress=lambda line: print(line, file=sys.stderr, flush=True))
            changed(_maintenance_outputs(lake, report))
    finally:
        if created:
            spark.stop()
    results, total = report["tables"], report["totals"]
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"maintain: {len(results)} tables (snapshot retention {options.snapshot_retention_days} d, "
              f"retain last {options.retain_last}, orphans older than {options.orphan_age_days} d): data files "
              f"{total['before']['data_files']} -> {total['after']['data_files']}, kept in storage "
              f"{total['before']['retained_data_bytes'] / 1e6:.1f} -> {total['after']['retained_data_bytes'] / 1e6:.1f} "
              f"MB; report {report['report']}")
    return EXIT_OK


def _table_command_errors() -> tuple[type, ...]:
    """Errors of the query/maintain commands (and the catalog) that are the user's to fix: exit 2."""
    from spark_jobs.catalog import CatalogError
    from spark_jobs.maintain import MaintainError
    from spark_jobs.erasure.job import ErasureError
    from spark_jobs.erasure.subjects import SubjectError
    from spark_jobs.query import QueryError
    from spark_jobs.usage import UsageError
    from spark_jobs.usage.cost import PriceError
    from spark_jobs.lf_tags import LfTagError

    return CatalogError, MaintainError, QueryError, ErasureError, SubjectError, UsageError, PriceError, LfTagError


def _lake_selection(args: argparse.Namespace) -> str:
    """The lake options of this command line, to repeat in a suggested command."""
    if getattr(args, "lake_uri", ""):
        options = [("--lake-uri", args.lake_uri), ("--kms-key-arn", args.kms_key_arn), ("--region", args.region),
                   ("--s3-endpoint", args.s3_endpoint), ("--truststore", args.truststore)]
        return " ".join(f"{flag} {value}" for flag, value in options if value)
    if getattr(args, "lake_config", ""):
        return f"--lake-config {args.lake_config}"
    return f"--tenant {args.tenant}" if getattr(args, "tenant", "") else ""


def _connection_refused(exc: BaseException) -> bool:
    """s3a gave up on an endpoint that went away during the run (checked at start by runtime.check_endpoint)."""
    text = str(exc)
    return "Connection refused" in text or "ConnectException" in text


def _driver_gone(exc: BaseException) -> bool:
    """The driver JVM itself went away, not a service the job talks to: most often an OutOfMemoryError, whose
    handler stops the JVM (the error above this line says so). Judged by the JVM's process, which this Python
    started (pyspark keeps it as the gateway's ``proc``), because the error Python sees depends on what it was
    doing when the JVM died: py4j's network error, or a Py4JError whose cause is a plain ConnectionRefusedError
    (a call in flight, or a JVM class looked up afterwards). A refused connection from boto3 (an emulator gone)
    leaves the JVM running, so it does not read as this."""
    from py4j.protocol import Py4JNetworkError

    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            break
        if isinstance(seen, Py4JNetworkError):
            return True
        seen = seen.__cause__ or seen.__context__
    return _driver_process_exited()


def _driver_process_exited() -> bool:
    """The JVM pyspark launched for this process has exited (False when no JVM was started)."""
    if "pyspark" not in sys.modules:
        return False
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)
    return proc is not None and proc.poll() is not None


def _producer_error() -> type:
    from spark_jobs.producers.kinesis import ProducerError

    return ProducerError


def main(argv: list[str] | None = None) -> int:
    """Programmatic entry point: returns the exit code (see the module docstring)."""
    from spark_jobs.datagen.generate import DatagenError
    from spark_jobs.manifest import InvariantViolation

    args = build_parser().parse_args(argv)
    try:
        if args.command == "datagen":
            return _cmd_datagen(args)
        if args.command == "counts":
            return _cmd_counts(args)
        if args.command == "creds":
            from spark_jobs import creds

            return creds.run(args)
        if args.command == "recover":
            return _cmd_recover(args)
        if args.command == "land":
            return _cmd_land(args)
        if args.command == "contract":
            return _cmd_contract(args)
        if args.command == "query":
            return _cmd_query(args)
        if args.command == "maintain":
            return _cmd_maintain(args)
        if args.command == "erase":
            return _cmd_erase(args)
        if args.command == "usage":
            return _cmd_usage(args)
        if args.command == "sync-tags":
            from spark_jobs import lf_tags

            return lf_tags.run(args, _resolve, _open_session)
        return _cmd_run(args)
    except (LakeConfigError, ContractError, DatagenError, _producer_error(), *_table_command_errors()) as exc:
        print(f"error: {exc}{_details(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except InvariantViolation as exc:
        print(f"error: counts invariant violated: {exc}{_details(exc)}", file=sys.stderr)
        return EXIT_INVARIANT
    except Exception as exc:  # one actionable line, not a JVM stack trace
        from spark_jobs.io.readers import MissingInputError
        from spark_jobs.jobs.checkpoint import CheckpointCorruptError
        from spark_jobs.jobs.runtime import JobFailed, describe_error, error_text, unreachable_message

        if isinstance(exc, CheckpointCorruptError):
            print(f"error: {exc.message(_lake_selection(args))}", file=sys.stderr)
            return exc.exit_code
        if isinstance(exc, JobFailed):
            print(f"error: {exc}{_details(exc)}", file=sys.stderr)
            return exc.exit_code
        from spark_jobs.quality import ReportNotWritten

        if isinstance(exc, ReportNotWritten):
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_FAILED
        if isinstance(exc, MissingInputError):
            print(f"error: {exc}{_details(exc)}", file=sys.stderr)
            return EXIT_FAILED
        if _driver_gone(exc):
            from spark_jobs.session import DRIVER_MEMORY_ENV, driver_heap

            print(f"error: the Spark driver stopped during the run ({type(exc).__name__}); if the log above shows "
                  f"java.lang.OutOfMemoryError, give it more heap: {DRIVER_MEMORY_ENV}=<size> (this run: "
                  f"{driver_heap()}), then run it again (a table commit is all or nothing)", file=sys.stderr)
            return EXIT_FAILED
        if _connection_refused(exc) and getattr(args, "lake_uri", None) is not None:
            try:
                endpoint = _resolve(args).s3_endpoint or "(AWS default)"
            except (LakeConfigError, OSError):
                endpoint = "(unknown)"
            print(f"error: {unreachable_message(endpoint, 'connection refused')}", file=sys.stderr)
            return EXIT_FAILED
        name, first_line = describe_error(exc)
        whole = error_text(exc)  # the causes too: Iceberg's catalog wraps s3a's error in its own
        if "UnknownStoreException" in name or "NoSuchBucket" in first_line or "UnknownStoreException" in whole:
            tenant = getattr(args, "tenant", "") or "<tenant>"
            print(f"error: the lake bucket does not exist ({first_line}); if the emulator was restarted, its "
                  f"in-memory state is gone: run `make apply TENANT={tenant}` again", file=sys.stderr)
            return EXIT_FAILED
        from spark_jobs.jobs.runtime import one_line

        print(f"error: {one_line(exc)}{_details(exc)}", file=sys.stderr)
        return EXIT_FAILED


def _details(exc: BaseException) -> str:
    """`` (details: <manifest>)`` for an error that ended a layer run (its manifest holds the whole text and the
    run's stages; the data-quality report is beside it), else ""."""
    from spark_jobs.jobs.runtime import DETAILS_ATTRIBUTE

    where = getattr(exc, DETAILS_ATTRIBUTE, None)
    return f" (details: {where})" if where else ""


if __name__ == "__main__":
    sys.exit(main())
