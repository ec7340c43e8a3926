"""The real ``terragrunt`` binary: found on PATH (unless ``TENANTLAKE_FORCE_FALLBACK=1``) and run with
the flags Terragrunt documents (``--non-interactive``, ``TG_DOWNLOAD_DIR``), as the runner's make targets
would run the fallback."""
from __future__ import annotations

import os
import shutil
from typing import Mapping

from infra.terragrunt.config import TenantRun
from infra.terragrunt.environment import work_dir
from infra.terragrunt.errors import StateLockedError, TerragruntError
from infra.terragrunt.terraform import LOCK_TIMEOUT, Printer, lock_info, locked_message, stream


def terragrunt_binary() -> str | None:
    """Real terragrunt when on PATH, unless ``TENANTLAKE_FORCE_FALLBACK=1``."""
    if os.environ.get("TENANTLAKE_FORCE_FALLBACK") == "1":
        return None
    return shutil.which("terragrunt")


def real_terragrunt(binary: str, run: TenantRun, command: str, env: Mapping[str, str], extra: list[str],
                    echo: Printer) -> int:
    env = {**env, "TG_DOWNLOAD_DIR": str(work_dir(run.name) / ".terragrunt-cache"),
           "TERRAGRUNT_DOWNLOAD": str(work_dir(run.name) / ".terragrunt-cache"), "TG_NON_INTERACTIVE": "true"}
    args = [binary, command, "--non-interactive"]
    if command in ("apply", "destroy", "force-unlock"):
        args.append("-force" if command == "force-unlock" else "-auto-approve")
    args += [*([] if command == "force-unlock" else [f"-lock-timeout={LOCK_TIMEOUT}"]), *extra]
    output: list[str] = []
    code = stream(args, run.config_path.parent, env, echo, keep=output)
    if code not in ((0, 2) if command == "plan" and "-detailed-exitcode" in extra else (0,)):
        lock = lock_info(output)
        if lock is not None:
            raise StateLockedError(locked_message(run.name, lock), lock)
        raise TerragruntError(f"terragrunt {command} failed with exit code {code}")
    return code


