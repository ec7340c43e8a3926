"""Running terraform: streamed output, the state-lock diagnosis, and how inputs and backend settings
reach it (``TF_VAR_*`` and ``-backend-config``), as Terragrunt passes them."""
from __future__ import annotations

import json
import re
import subprocess
import threading
from pathlib import Path
from typing import Any, Callable, Mapping

from infra.terragrunt.errors import StateLockedError, TerraformFailed, TerragruntError

LOCK_TIMEOUT = "120s"  # wait for another run holding the state lock (e.g. two tenants sharing the network)
COMMAND_TIMEOUT_S = 3600.0  # one terraform/terragrunt command (or hook); then SIGTERM: terraform saves its state
KILL_GRACE_S = 60.0  # after SIGTERM, SIGKILL if the command is still running
Printer = Callable[[str], None]


def stream(cmd: list[str], cwd: Path, env: Mapping[str, str], echo: Printer, keep: list[str] | None = None,
           timeout: float = COMMAND_TIMEOUT_S) -> int:
    """Run ``cmd``, echoing its output line by line; ``keep`` collects the lines too.

    Past ``timeout`` seconds the command gets SIGTERM (terraform then stops and writes its state), SIGKILL
    ``KILL_GRACE_S`` later, and this raises a one-line ``TerragruntError``."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, bufsize=1)
    expired = threading.Event()

    def stop() -> None:
        expired.set()
        proc.terminate()
        try:
            proc.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()

    timer = threading.Timer(timeout, stop)
    timer.daemon = True
    timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            echo(line)
            if keep is not None:
                keep.append(line)
        code = proc.wait()
    finally:
        timer.cancel()
    if expired.is_set():
        raise TerragruntError(f"{' '.join(cmd[:2])} in {cwd} did not finish within {timeout:g} s and was stopped")
    return code


LOCK_ERROR = "Error acquiring the state lock"
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")  # terraform colours its diagnostics
_LOCK_FIELD_RE = re.compile(r"^[\s│]*(ID|Path|Operation|Who|Created):\s*(.*?)\s*$")


def lock_info(output: list[str]) -> dict[str, str] | None:
    """The ``Lock Info`` terraform prints when it cannot take the state lock, or None if it did not fail on it."""
    if not any(LOCK_ERROR in line for line in output):
        return None
    info: dict[str, str] = {}
    for line in output:
        match = _LOCK_FIELD_RE.match(_ANSI_RE.sub("", line))
        if match and match.group(1) not in info:
            info[match.group(1)] = match.group(2)
    return info


def locked_message(tenant: str, lock: Mapping[str, str]) -> str:
    """One line: who holds the lock, and the documented way out when that run is dead."""
    lock_id = lock.get("ID", "?")
    return (f"tenant '{tenant}': the state is locked by another run (lock {lock_id} on {lock.get('Path', '?')}, "
            f"{lock.get('Operation', '?')} by {lock.get('Who', '?')} since {lock.get('Created', '?')}); wait for it to "
            f"finish, or if that run was killed: python -m infra.terragrunt force-unlock --tenant {tenant} --lock-id {lock_id}")


def terraform(args: list[str], cwd: Path, env: Mapping[str, str], echo: Printer, what: str,
               ok_codes: tuple[int, ...] = (0,), tenant: str | None = None) -> int:
    output: list[str] = []
    code = stream(["terraform", *args], cwd, env, echo, keep=output)
    if code not in ok_codes:
        lock = lock_info(output)
        if lock is not None:
            raise StateLockedError(locked_message(tenant or cwd.name, lock), lock)
        raise TerraformFailed(f"terraform {what} failed with exit code {code} (in {cwd})", output)
    return code




def tf_vars(inputs: Mapping[str, Any]) -> dict[str, str]:
    """Terragrunt passes inputs as ``TF_VAR_<name>``: strings raw, everything else JSON-encoded."""
    return {f"TF_VAR_{k}": v if isinstance(v, str) else json.dumps(v) for k, v in inputs.items()}


def backend_hcl(config: Mapping[str, Any]) -> str:
    lines = []
    for key, value in config.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items())
            lines.append(f"{key} = {{ {inner} }}")
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"

