"""``python -m spark_jobs.quality index --tenant T``: rebuild a tenant's data-quality index, print its URL.

First the tenant's ``reports/`` are pulled from its lake (``$TENANTLAKE_STATE_DIR/tenants/<T>/lake.json``)
into the local mirror ``$TENANTLAKE_STATE_DIR/dq/<tenant>/reports`` that every job run also writes;
if the lake cannot be reached the mirror alone is used (one line on stderr says so).
``--reports-dir DIR`` indexes another ``reports/`` folder instead, without syncing.
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
    build.add_argument("--no-sync", action="store_true", help="do not pull reports from the lake first")
    args = parser.parse_args(argv)
    root = Path(args.reports_dir) if args.reports_dir else report.mirror_root(args.tenant)
    if not args.reports_dir and not args.no_sync:
        from spark_jobs.quality.sync import sync_from_lake

        try:
            copied = sync_from_lake(args.tenant, root)
            print(f"dq-report: pulled {copied} new report files from the lake of '{args.tenant}'", file=sys.stderr)
        except FileNotFoundError:
            pass  # no applied lake: the mirror is all there is
        except Exception as err:  # noqa: BLE001 - an unreachable lake must not hide the local reports
            print(f"dq-report: lake not reachable ({type(err).__name__}: {str(err).splitlines()[0][:160]}); "
                  f"indexing the local mirror only", file=sys.stderr)
    if not root.is_dir():
        print(f"no data-quality reports for tenant '{args.tenant}' in {root}: run the pipeline first "
              f"(make demo, or python -m spark_jobs run-all --tenant {args.tenant})", file=sys.stderr)
        return 2
    target = index.build_index(args.tenant, root)
    print(target.resolve().as_uri())
    return 0


if __name__ == "__main__":
    sys.exit(main())
