"""``python -m spark_jobs usage``: a month's usage report of the tenant, printed and written to the lake and to
the local report mirror (its page, ``usage.html``, is linked from the mirror's index)."""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

from spark_jobs.lake.config import lake_from_args, read_lake_outputs
from spark_jobs.quality import index
from spark_jobs.quality.report import mirror_root
from spark_jobs.usage import collect_usage, cost, render, write_report


def run(args: argparse.Namespace) -> int:
    """The command, with the options ``spark_jobs.cli`` parsed; 0 when the report was built (errors raise:
    ``UsageError``, ``PriceError``)."""
    lake = lake_from_args(args)
    outputs = read_lake_outputs(args.tenant, args.lake_config)[0] if (args.tenant or args.lake_config) and not args.lake_uri else {}
    tenant = args.tenant or str(outputs.get("tenant_id") or lake.bucket or "lake")
    month = args.month or dt.datetime.now(dt.timezone.utc).strftime("%Y-%m")
    report = collect_usage(lake, tenant=tenant, month=month, outputs=outputs,
                           price_table=cost.load_prices(args.prices or None), price_region=args.price_region,
                           progress=lambda line: print(line, file=sys.stderr, flush=True))
    mirror = mirror_root(tenant)
    where = write_report(report, lake, mirror)
    index.build_index(tenant, mirror)
    print(json.dumps(report, indent=1, sort_keys=True) if args.json else render.text(report))
    if "lake_error" in where:
        print(f"warning: usage.json not written to the lake ({where['lake_error']})", file=sys.stderr)
    print(f"usage page: {Path(where['page']).resolve().as_uri()}", file=sys.stderr)
    return 0
