"""Stable VPC ids for the local fixture network, because moto 5.2.5 cannot take a chosen VPC id.

Tenant files name their VPCs by id (``vpc_ids``), and in the ``local`` environment those VPCs must
exist in the emulator with exactly those ids.  Moto honours a ``_custom_id_`` tag only for resources
whose ids come from ``moto.utilities.id_generator`` (API Gateway, Secrets Manager, ...); EC2 VPCs,
subnets and route tables use ``moto.ec2.utils.random_vpc_id()`` and ignore it.

What moto does offer is its documented seed endpoint (``POST /moto-api/seed?a=N``), which reseeds
the one random generator every id comes from.  So the fixture network seeds moto right before it
creates each VPC, and the VPC id is then a pure function of the seed:
``"vpc-" + 17 x random.Random(seed).choice(hex)``.  The seed of a tenant's n-th fixture VPC is
derived from ``(tenant_id, n)``, so ``fixture_vpc_id("acme", 0)`` is what ``tenants/acme`` lists,
and ``tests/infra/terragrunt/test_config.py`` checks every tenant file against it.  The network config
also asserts (a Terraform postcondition) that the created VPC got the expected id.

Nothing else may create EC2 resources in the emulator between the seed and the CreateVpc call;
the runner creates fixture VPCs one at a time, before any tenant apply.

CLI (run by the network config's ``local-exec``):
``python -m infra.local.network.fixture_ids seed --region R --seed N`` (endpoint and CA from the
``AWS_ENDPOINT_URL`` / ``AWS_CA_BUNDLE`` environment), and
``python -m infra.local.network.fixture_ids id TENANT [INDEX]`` to print the id a new tenant lists.
"""
from __future__ import annotations

import argparse
import os
import random
import ssl
import sys
import urllib.request
import zlib

_HEX = "0123456789abcdef"
_VPC_ID_LENGTH = 17  # moto.ec2.utils.random_id(size=17)


def fixture_seed(tenant_id: str, index: int = 0) -> int:
    """The moto seed for the ``index``-th fixture VPC of ``tenant_id`` (stable across runs and machines)."""
    return zlib.crc32(f"tenantlake-fixture-vpc/{tenant_id}/{index}".encode())


def vpc_id_for_seed(seed: int) -> str:
    """The id moto 5.2.5 gives the first VPC created after ``POST /moto-api/seed?a=<seed>``."""
    rng = random.Random(seed)
    return "vpc-" + "".join(rng.choice(_HEX) for _ in range(_VPC_ID_LENGTH))


def fixture_vpc_id(tenant_id: str, index: int = 0) -> str:
    return vpc_id_for_seed(fixture_seed(tenant_id, index))


def seed_emulator(endpoint: str, ca_bundle: str, region: str, seed: int) -> None:
    """Touch ``region``'s EC2 backend (moto builds it, with its default VPC, on first use), then reseed."""
    import boto3

    ec2 = boto3.client("ec2", region_name=region, endpoint_url=endpoint, verify=ca_bundle or None,
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    ec2.describe_vpcs()
    context = ssl.create_default_context(cafile=ca_bundle or None)
    request = urllib.request.Request(f"{endpoint}/moto-api/seed?a={seed}", method="POST", data=b"")
    with urllib.request.urlopen(request, timeout=10, context=context) as resp:
        if resp.status != 200:
            raise RuntimeError(f"moto seed endpoint answered {resp.status}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.local.network.fixture_ids", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    seed = sub.add_parser("seed", help="reseed the emulator right before a fixture VPC is created")
    seed.add_argument("--region", required=True)
    seed.add_argument("--seed", type=int, required=True)
    ident = sub.add_parser("id", help="print the fixture VPC id a tenant file lists in the local env")
    ident.add_argument("tenant")
    ident.add_argument("index", type=int, nargs="?", default=0)
    args = parser.parse_args(argv)
    if args.command == "id":
        print(fixture_vpc_id(args.tenant, args.index))
        return 0
    endpoint = os.environ.get("AWS_ENDPOINT_URL", "")
    if not endpoint:
        print("error: AWS_ENDPOINT_URL is not set; the fixture network only exists in the local emulator", file=sys.stderr)
        return 1
    seed_emulator(endpoint, os.environ.get("AWS_CA_BUNDLE", ""), args.region, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
