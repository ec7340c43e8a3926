"""``python -m spark_jobs.quality index --tenant T``: rebuild a tenant's data-quality index, print its URL.

Sources, in order: ``--reports-dir DIR`` (a ``reports/`` folder, e.g. synced from the lake), else the
local mirror ``$TENANTLAKE_STATE_DIR/dq/<tenant>/reports`` that every job run writes.
Exit codes: 0 index written, 2 bad arguments or no reports found.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spark_jobs.quality import index, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs.quality", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("index", help="rebuild the tenant index and print its file:// URL")
    build.add_argument("--tenant", required=True, help="tenant id, e.g. acme")
    build.add_argument("--reports-dir", default="", help="a reports/ folder (default: the local mirror)")
    args = parser.parse_args(argv)
    root = Path(args.reports_dir) if args.reports_dir else report.mirror_root(args.tenant)
    if not root.is_dir():
        print(f"no data-quality reports for tenant '{args.tenant}' in {root}: run the pipeline first "
              f"(make demo, or python -m spark_jobs run-all --tenant {args.tenant})", file=sys.stderr)
        return 2
    target = index.build_index(args.tenant, root)
    print(target.resolve().as_uri())
    return 0


if __name__ == "__main__":
    sys.exit(main())
