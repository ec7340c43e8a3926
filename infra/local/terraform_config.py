"""Which Terraform CLI config file (``TF_CLI_CONFIG_FILE``) the Makefile, the runners and the tests use.

In order:

1. the user's own: ``TF_CLI_CONFIG_FILE`` already set to an existing file that is not one of ours;
2. ``infra/terraform.rc`` when the provider mirror ``/opt/tf-plugins`` (the path that file names) holds
   ``registry.terraform.io``: providers come from it and nothing is fetched. ``TENANTLAKE_TF_MIRROR``
   changes only where this check looks (the tests point it at an empty folder);
3. ``infra/terraform-registry.rc`` otherwise (any laptop): providers come from the Terraform registry. The
   AWS provider's version is pinned exactly in the module's ``required_providers`` (5.100.0), and
   ``terraform init`` records its checksums in each working directory's ``.terraform.lock.hcl``.

Standard library only: the Makefile calls it with the system ``python3`` before any venv exists
(``python3 -m infra.local.terraform_config`` prints the chosen path; ``--explain`` says why).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Mapping

REPO_ROOT = Path(__file__).resolve().parents[2]
MIRROR_CONFIG = REPO_ROOT / "infra" / "terraform.rc"
REGISTRY_CONFIG = REPO_ROOT / "infra" / "terraform-registry.rc"
DEFAULT_MIRROR = Path("/opt/tf-plugins")
MIRROR_ENV = "TENANTLAKE_TF_MIRROR"


def mirror_path(env: Mapping[str, str] = os.environ) -> Path:
    """The filesystem mirror ``infra/terraform.rc`` names (``$TENANTLAKE_TF_MIRROR`` or /opt/tf-plugins)."""
    return Path(env.get(MIRROR_ENV) or DEFAULT_MIRROR)


def choose(env: Mapping[str, str] = os.environ) -> tuple[Path, str]:
    """``(config file, reason)`` for this machine and environment."""
    own = env.get("TF_CLI_CONFIG_FILE", "")
    if own and Path(own).is_file() and Path(own).resolve() not in (MIRROR_CONFIG, REGISTRY_CONFIG):
        return Path(own), "your TF_CLI_CONFIG_FILE"
    mirror = mirror_path(env)
    if (mirror / "registry.terraform.io").is_dir():
        return MIRROR_CONFIG, f"provider mirror at {mirror}"
    return REGISTRY_CONFIG, f"no provider mirror at {mirror}: the Terraform registry"


def cli_config(env: Mapping[str, str] = os.environ) -> str:
    """The path to export as ``TF_CLI_CONFIG_FILE``."""
    return str(choose(env)[0])


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path, reason = choose()
    print(f"terraform CLI config: {path} ({reason})" if "--explain" in args else path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
