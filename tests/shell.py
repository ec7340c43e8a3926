"""The tests' one command runner: every terratest-style step (apply, assert, re-plan, destroy; the deploy
and the fault scenarios) runs ``make`` as a user would, in a bash shell driven through pytest-shell.

One bash session per pytest process (pytest-shell's ``LocalBashSession``, the session behind its ``bash``
fixture) runs each command as

    cd <dir> && timeout -k 10 <seconds> env -i <environment> <argv> >out 2>err </dev/null; echo $? >rc

so that every command has a hard timeout enforced by the shell (coreutils ``timeout`` signals the
command's whole process group: make, the runner and terraform), stdout and stderr stay apart (pytest-shell
merges them), the command cannot read the session's input, and the environment is exactly the one the
caller passes (``os.environ`` at call time plus ``env``).  A failure message (``ShellResult.tail``) names
the command, its exit status or timeout, and the last lines it printed.

Runs that must overlap (a kill mid-apply, two applies at once) keep ``subprocess.Popen``: a shell session
runs one command at a time, and this module serialises callers with a lock.
"""
from __future__ import annotations

import atexit
import os
import re
import shlex
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import pytest
from pytest_shell.connection import TimeOutError
from pytest_shell.shell import LocalBashSession

REPO_ROOT = Path(__file__).resolve().parents[1]
TIMED_OUT = 124  # coreutils timeout's exit status when it stopped the command
KILL_GRACE_S = 10  # SIGTERM first; SIGKILL this much later if the command is still running
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LOCK = threading.Lock()
_SESSION: LocalBashSession | None = None


@dataclass(frozen=True)
class ShellResult:
    """What one command did (the fields ``subprocess.CompletedProcess`` has, plus its timeout)."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    timeout: float

    @property
    def command(self) -> str:
        return shlex.join(self.args)

    @property
    def timed_out(self) -> bool:
        return self.returncode == TIMED_OUT

    def tail(self, lines: int = 30, also: str = "") -> str:
        """``<command> exited N`` (or ``timed out after S s``) and its last ``lines`` lines of output, after
        any earlier line that contains ``also``."""
        status = f"timed out after {self.timeout:g} s" if self.timed_out else f"exited {self.returncode}"
        printed = (self.stdout + self.stderr).splitlines()
        earlier = [line for line in printed[:-lines] if also and also in line]
        return "\n".join([f"`{self.command}` {status}; its last {min(lines, len(printed))} line(s):",
                          *earlier, *(["..."] if earlier else []), *printed[-lines:]])

    def check(self, lines: int = 30) -> "ShellResult":
        """Fail the test (with the tail, no traceback) unless the command exited 0."""
        if self.returncode != 0:
            pytest.fail(self.tail(lines), pytrace=False)
        return self


def _session() -> LocalBashSession:
    global _SESSION
    if _SESSION is None:
        session = LocalBashSession()
        session.__enter__()
        session.auto_return_code_error = False  # the exit status is the command's, read from its file
        _SESSION = session
    return _SESSION


def close() -> None:
    """End the bash session (the conftest calls this at the end of the test session; atexit too)."""
    global _SESSION
    with _LOCK:
        if _SESSION is not None:
            try:
                _SESSION.__exit__(None, None, None)
                _SESSION.connection.process.wait(timeout=10)
            except Exception:  # noqa: BLE001 - already gone
                pass
            _SESSION = None


atexit.register(close)


def run(argv: Sequence[str], *, timeout: float, cwd: Path = REPO_ROOT, env: Mapping[str, str] | None = None,
        inherit: bool = True) -> ShellResult:
    """Run ``argv`` in the shared bash session with a hard ``timeout`` (seconds), in ``os.environ`` plus
    ``env`` (``inherit=False``: in ``env`` alone)."""
    global _SESSION
    full_env = {k: v for k, v in {**(os.environ if inherit else {}), **(env or {})}.items() if _ENV_NAME.match(k)}
    with _LOCK, tempfile.TemporaryDirectory(prefix="tenantlake-shell-") as tmp:
        out, err, status = (Path(tmp) / name for name in ("out", "err", "rc"))
        line = (f"cd {shlex.quote(str(cwd))} && timeout -k {KILL_GRACE_S} {timeout:g} env -i "
                + " ".join(shlex.quote(f"{k}={v}") for k, v in sorted(full_env.items()))
                + f" {shlex.join(argv)} >{shlex.quote(str(out))} 2>{shlex.quote(str(err))} </dev/null;"
                + f" echo $? >{shlex.quote(str(status))}")
        session = _session()
        try:
            # Everything goes to files, so the session prints nothing until the command ends: pytest-shell's
            # (soft) timeout is a backstop behind the shell's own.
            session.connection.send(line, remember=False, timeout=timeout + KILL_GRACE_S + 30)
        except TimeOutError:
            session.connection.process.kill()
            _SESSION = None
        code = int(status.read_text().strip()) if status.is_file() and status.read_text().strip() else TIMED_OUT
        read = lambda path: path.read_text(errors="replace") if path.is_file() else ""  # noqa: E731
        return ShellResult(tuple(argv), code, read(out), read(err), timeout)


def make(target: str, *args: str, timeout: float, env: Mapping[str, str] | None = None,
         cwd: Path = REPO_ROOT, inherit: bool = True) -> ShellResult:
    """``make -s <target> <args>`` from the repo, as a user types it."""
    return run(["make", "-s", target, *args], timeout=timeout, cwd=cwd, env=env, inherit=inherit)
