"""``python -m spark_jobs``: land or generate data, draft a contract, run one layer or all, print the counts
table, query and maintain the Iceberg tables.

Lake selection, in order of precedence: ``--lake-uri`` (+ ``--kms-key-arn``, ``--region``,
``--s3-endpoint``, ``--truststore``), else ``--lake-config FILE``, else ``--tenant T`` (reads
``$TENANTLAKE_STATE_DIR/tenants/T/lake.json``). s3a credentials come from the standard AWS env vars
or default chain.

Exit codes: 0 success, 1 job failed, 2 bad arguments or configuration (also a contract change its evolution
policy refuses: spark_jobs/README.md "Schema evolution"), 3 counts invariant violated, 4 validation blocked a publish (an
error-severity expectation failed), 5 only warn-severity expectations failed (0 with --allow-warn). See
spark_jobs/quality/README.md "Data quality". Every error is one line; one that ended a layer run says where its manifest is.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Callable

from tenant_model import CLASSIFICATIONS
from spark_jobs import usage
from spark_jobs.cli.errors import exit_code
from spark_jobs.contract.model import available_datasets, contract_json_schema
from spark_jobs.datagen import command as datagen_command
from spark_jobs.erasure import command as erase_command
from spark_jobs.erasure import job as erasure_job
from spark_jobs.infer import draft as contract_infer
from spark_jobs.jobs import pipeline
from spark_jobs.lake.config import LAYERS
from spark_jobs.lake.failures import EXIT_OK
from spark_jobs.landing import creds, land
from spark_jobs.runs import status
from spark_jobs.tables import plan as contract_plan
from spark_jobs.tables import lf_tags, maintain, query
from spark_jobs.usage import command as usage_command


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
    group.add_argument("--metric-namespace", default="", metavar="NS",
                       help="CloudWatch namespace of the freshness metric each publish puts (the tenant output "
                            "orchestration.metric_namespace; default: none, or the lake config's)")
    group.add_argument("--event-source", default="", metavar="SOURCE",
                       help="EventBridge source a blocked publish is emitted under (the tenant output "
                            "orchestration.event_source; default: none, or the lake config's)")
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


def _time_text(pattern: str, what: str) -> Callable[[str], str]:
    """An argument type: the text itself when ``time.strptime`` reads it with ``pattern``, else "is not ``what``"."""
    def check(text: str) -> str:
        try:
            time.strptime(text, pattern)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not {what}") from None
        return text
    return check


_date = _time_text("%Y-%m-%d", "a date YYYY-MM-DD")
_month = _time_text("%Y-%m", "a month YYYY-MM")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    commands = parser.add_subparsers(dest="command", required=True,
                                     metavar="{datagen,land,contract,run,run-all,counts,status,recover,creds,query,maintain,erase,usage,"
                                             "sync-tags}")
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

    status_parser = commands.add_parser("status", help="per dataset: the last run, freshness against its target, "
                                        "open alarms", description=status.__doc__.split("\n\n")[0],
                                        epilog=status.__doc__.split("\n\n", 1)[1],
                                        formatter_class=argparse.RawDescriptionHelpFormatter)
    status.add_arguments(status_parser)
    _lake_args(status_parser, spark=False)  # boto3 only: no Spark

    recover = commands.add_parser(
        "recover", help="rebuild a corrupt bronze checkpoint from what bronze already holds",
        description="Move checkpoints/<dataset>/bronze/ aside and write a new checkpoint that records every "
                    "landing file bronze already holds, so the next bronze run reads only new files (no "
                    "duplicates, nothing lost). Stop every bronze job of the dataset first. See spark_jobs/README.md "
                    "'The pipeline > Recovery'.")
    recover.add_argument("--dataset", required=True, choices=datasets)
    recover.add_argument("--layer", required=True, choices=["bronze"],
                         help="the layer whose state to rebuild (only bronze keeps state: its checkpoint)")
    _lake_args(recover)

    creds_parser = commands.add_parser("creds", help="vend short-lived credentials scoped to one prefix",
                                       description=creds.__doc__.split("\n\n")[0])
    creds.add_arguments(creds_parser)
    _add_land_parser(commands)
    _add_contract_parser(commands)
    _add_query_parser(commands)
    _add_maintain_parser(commands, datasets)
    _add_erase_parser(commands, datasets)
    _add_usage_parser(commands)
    lf_tags.add_parser(commands, datasets, _lake_args)
    return parser


def _run_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--date", type=_date, default=None,
                        help="silver/gold: recompute only this event date (YYYY-MM-DD) from all of its input; "
                             "default: what is new since the last run")
    parser.add_argument("--full", action="store_true",
                        help="silver/gold: recompute every partition from the whole input (a change that must "
                             "reach old rows: `contract plan` says when); default: only what is new")
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


def _add_land_parser(commands) -> None:
    land_parser = commands.add_parser("land", help="check local files against a contract and upload them into landing/",
                                      description=land.__doc__.split("\n\n")[0],
                                      epilog="See spark_jobs/README.md, 'Adding a dataset'.")
    land.add_arguments(land_parser)
    _lake_args(land_parser, spark=False)  # land uploads with boto3: no Spark, no jars


def _add_contract_parser(commands) -> None:
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


def _add_query_parser(commands) -> None:
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
    parser = commands.add_parser("erase", help="erase data subjects from every layer, with a receipt (GDPR Art. 17)",
                                 description=erasure_job.__doc__.split("\n\n")[0],
                                 epilog=erasure_job.__doc__.split("\n\n", 1)[1],
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


def _add_maintain_parser(commands, datasets: list[str]) -> None:
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


def _add_usage_parser(commands) -> None:
    parser = commands.add_parser("usage", help="bytes, runs and an estimated cost per layer and dataset for a month",
                                 description=usage.__doc__.split("\n\n")[0],
                                 epilog="See spark_jobs/usage/README.md for what each figure is and where it comes from.")
    parser.add_argument("--month", type=_month, default=None, help="YYYY-MM (default: the current month, UTC)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    parser.add_argument("--price-region", default="", help="price the month in this region (default: the lake's)")
    parser.add_argument("--prices", default="", help="a price table of your own (default: spark_jobs/usage/prices.json)")
    _lake_args(parser, spark=False)  # boto3 only: no Spark


def _contract(args: argparse.Namespace) -> int:
    if args.contract_command == "schema":
        print(json.dumps(contract_json_schema(), indent=1))
        return EXIT_OK
    return contract_plan.run(args) if args.contract_command == "plan" else contract_infer.run(args)


# Each command's body lives beside what it orchestrates (spark_jobs/README.md, "CLI").
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "datagen": datagen_command.run, "land": land.run, "contract": _contract, "run": pipeline.run,
    "run-all": pipeline.run, "counts": pipeline.counts, "status": status.run, "recover": pipeline.recover,
    "creds": creds.run,
    "query": query.run, "maintain": maintain.run, "erase": erase_command.run, "usage": usage_command.run,
    "sync-tags": lf_tags.run,
}


def main(argv: list[str] | None = None) -> int:
    """Programmatic entry point: returns the exit code (see the module docstring)."""
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except Exception as exc:  # one actionable line, not a JVM stack trace (spark_jobs/cli/errors.py)
        return exit_code(exc, args)


if __name__ == "__main__":
    sys.exit(main())
