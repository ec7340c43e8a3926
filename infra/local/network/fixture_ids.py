"""VPC ids for the local fixture network of tenants that bring their own VPC.

A tenant file names its VPCs by id (``vpc_ids``); in the ``local`` environment those VPCs must exist in
the emulator with exactly those ids.  The emulator (``infra/local/moto_server.py``) creates a VPC with the
id given in its ``tenantlake:fixture-vpc-id`` tag, so any well-formed id works; ``fixture_vpc_id`` only
suggests a stable one per tenant that no other tenant picks by accident.

CLI: ``python -m infra.local.network.fixture_ids id TENANT [INDEX]`` prints the suggested id.
"""
from __future__ import annotations

import argparse
import hashlib
import sys


def fixture_vpc_id(tenant_id: str, index: int = 0) -> str:
    """A well-formed VPC id derived from ``(tenant_id, index)``, stable across runs and machines."""
    return "vpc-" + hashlib.sha256(f"tenantlake-fixture-vpc/{tenant_id}/{index}".encode()).hexdigest()[:17]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.local.network.fixture_ids", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ident = sub.add_parser("id", help="print a fixture VPC id for a tenant file (local env)")
    ident.add_argument("tenant")
    ident.add_argument("index", type=int, nargs="?", default=0)
    args = parser.parse_args(argv)
    print(fixture_vpc_id(args.tenant, args.index))
    return 0


if __name__ == "__main__":
    sys.exit(main())
