"""Embedded AWS emulator: a moto server on 127.0.0.1 that this module starts, finds again and stops.

The manager keeps one JSON state file (``emulator.json``) in a state directory, by default the
repo's ignored ``.local/`` folder.  It records the endpoint, port and PID of the server it started.

* ``start()`` reuses a healthy server recorded in the state file, cleans up stale state (a dead
  PID, or a PID that is no longer our moto server), picks a free port unless one is given, waits
  until the server answers, and records it.
* It serves HTTPS with a certificate from a private CA (``infra/local/tls.py``): the s3a client
  refuses SSE-KMS over plain HTTP.  ``ca_bundle`` in the state is what ``AWS_CA_BUNDLE`` points at.
* ``stop()`` signals exactly the recorded PID, and only after checking that it is still the moto
  server on the recorded port, so a recycled PID is never killed.

CLI: ``python -m infra.local.emulator up|down|status|env [--state-dir DIR] [--port N]``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
import ssl
import urllib.error
import urllib.request
from pathlib import Path

from infra.local import tls

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_STATE_DIR = REPO_ROOT / ".local"
STATE_FILE_NAME = "emulator.json"
HOST = "127.0.0.1"
# moto's server behind a one-line correction (see infra/local/moto_server.py).
SERVER_MODULE = "infra.local.moto_server"
# Moto's dashboard page: small (10 kB), static, no side effects. (Not /moto-api/data.json: it dumps
# every resource, 22 MB and 2.7 s after one demo, and a probe with a short timeout then killed a
# healthy server.)
HEALTH_PATH = "/moto-api/"
UNHEALTHY_GRACE_S = 15.0  # a recorded server of ours that is alive but slow gets this long to answer
DEFAULT_START_TIMEOUT_S = 60.0
DEFAULT_STOP_TIMEOUT_S = 10.0


class EmulatorError(RuntimeError):
    """A problem starting, finding or stopping the emulator, in words a user can act on."""


@dataclasses.dataclass(frozen=True)
class EmulatorState:
    """What the state file records about a running emulator."""

    pid: int
    port: int
    endpoint: str
    log_file: str
    started_at: float
    ca_bundle: str
    truststore: str

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)


def state_file(state_dir: Path | str = DEFAULT_STATE_DIR) -> Path:
    return Path(state_dir) / STATE_FILE_NAME


def read_state(state_dir: Path | str = DEFAULT_STATE_DIR) -> EmulatorState | None:
    """The recorded state, or None when there is no (readable) state file."""
    path = state_file(state_dir)
    try:
        raw = json.loads(path.read_text())
        return EmulatorState(**{f.name: raw[f.name] for f in dataclasses.fields(EmulatorState)})
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as exc:
        raise EmulatorError(
            f"emulator state file {path} is unreadable ({exc}); remove it or run `make emulator-down`"
        ) from exc


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped) still answers kill(0); treat it as dead.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return [part.decode(errors="replace") for part in fh.read().split(b"\0") if part]
    except OSError:
        return []


def is_our_server(state: EmulatorState) -> bool:
    """True when the recorded PID is alive and is still a moto server on the recorded port."""
    if not _pid_alive(state.pid):
        return False
    cmd = _cmdline(state.pid)
    return SERVER_MODULE in cmd and str(state.port) in cmd


def is_healthy(endpoint: str, ca_bundle: str, timeout_s: float = 2.0) -> bool:
    try:
        context = ssl.create_default_context(cafile=ca_bundle)
        with urllib.request.urlopen(endpoint + HEALTH_PATH, timeout=timeout_s, context=context) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError, ValueError, ssl.SSLError):
        return False


def port_in_use(port: int, host: str = HOST) -> bool:
    """True when a server listens on ``port``. Connections of a just-stopped server in TIME_WAIT do not
    count: the server binds with SO_REUSEADDR (as werkzeug does), so a restart on the same port works."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def free_port(host: str = HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def start(
    state_dir: Path | str = DEFAULT_STATE_DIR,
    port: int | None = None,
    timeout_s: float = DEFAULT_START_TIMEOUT_S,
    extra_env: dict[str, str] | None = None,
) -> tuple[EmulatorState, bool]:
    """Start the emulator, or reuse the healthy one recorded in ``state_dir``.

    Returns ``(state, reused)``.  ``port=None`` picks a free port.  ``extra_env`` is passed to
    the server process (e.g. ``INITIAL_NO_AUTH_ACTION_COUNT`` to turn on IAM enforcement).
    """
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    existing = read_state(state_dir)
    if existing is not None:
        if is_our_server(existing) and is_healthy(existing.endpoint, existing.ca_bundle):
            if port is not None and port != existing.port:
                raise EmulatorError(
                    f"an emulator already runs at {existing.endpoint} (pid {existing.pid}); "
                    f"stop it first to use port {port}"
                )
            return existing, True
        if is_our_server(existing):
            # Alive but not answering: busy, or wedged. Give it a grace period before replacing it,
            # because replacing it drops everything the emulator holds.
            deadline = time.monotonic() + UNHEALTHY_GRACE_S
            while time.monotonic() < deadline:
                if is_healthy(existing.endpoint, existing.ca_bundle, timeout_s=5.0):
                    return existing, True
                time.sleep(0.5)
            _terminate(existing.pid, DEFAULT_STOP_TIMEOUT_S)
        state_file(state_dir).unlink(missing_ok=True)

    if port is not None and port_in_use(port):
        raise EmulatorError(f"port {port} on {HOST} is already in use; pick another or omit --port")
    chosen = port if port is not None else free_port()
    certs = tls.ensure_certificates(state_dir)
    log_file = state_dir / "emulator.log"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env.update(extra_env or {})
    with open(log_file, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", SERVER_MODULE, "-H", HOST, "-p", str(chosen),
             "-c", str(certs / "server.pem"), "-k", str(certs / "server.key")],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # survives the make/pytest process that started it
        )
    endpoint = f"https://{HOST}:{chosen}"
    ca_bundle = str(certs / "ca.pem")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise EmulatorError(
                f"moto server exited with code {proc.returncode} while starting on port {chosen}:\n"
                + _log_tail(log_file)
            )
        if is_healthy(endpoint, ca_bundle):
            state = EmulatorState(
                pid=proc.pid, port=chosen, endpoint=endpoint, log_file=str(log_file), started_at=time.time(),
                ca_bundle=ca_bundle, truststore=str(certs / "truststore.p12"),
            )
            tmp = state_file(state_dir).with_suffix(".tmp")
            tmp.write_text(state.to_json())
            tmp.replace(state_file(state_dir))
            return state, False
        time.sleep(0.2)
    _terminate(proc.pid, DEFAULT_STOP_TIMEOUT_S)
    raise EmulatorError(f"moto server did not become healthy on {endpoint} within {timeout_s:.0f}s:\n" + _log_tail(log_file))


def _terminate(pid: int, timeout_s: float) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                # Reap it if it is our child; otherwise just poll.
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    return
            except ChildProcessError:
                pass
            if not _pid_alive(pid):
                return
            time.sleep(0.1)


def stop(state_dir: Path | str = DEFAULT_STATE_DIR, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> str:
    """Stop the recorded emulator (exactly its PID) and remove the state. Returns what happened."""
    state = read_state(state_dir)
    if state is None:
        return "no emulator recorded"
    path = state_file(state_dir)
    if not is_our_server(state):
        path.unlink(missing_ok=True)
        return f"stale state removed (pid {state.pid} is not a running moto server)"
    _terminate(state.pid, timeout_s)
    path.unlink(missing_ok=True)
    return f"stopped emulator pid {state.pid} at {state.endpoint}"


def status(state_dir: Path | str = DEFAULT_STATE_DIR) -> str:
    state = read_state(state_dir)
    if state is None:
        return "not running"
    if is_our_server(state) and is_healthy(state.endpoint, state.ca_bundle):
        return f"running at {state.endpoint} (pid {state.pid})"
    return f"stale state (pid {state.pid} at {state.endpoint} is not healthy)"


def env_vars(state: EmulatorState) -> dict[str, str]:
    """Environment that points AWS SDKs and the CLI at the emulator with dummy credentials."""
    return {
        "AWS_ENDPOINT_URL": state.endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",  # pragma: allowlist secret - dummy or public value
        "AWS_CA_BUNDLE": state.ca_bundle,
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.local.emulator", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["up", "down", "status", "env"])
    parser.add_argument("--state-dir", default=str(DEFAULT_STATE_DIR), help="where emulator.json lives (default: .local/)")
    parser.add_argument("--port", type=int, default=None, help="fixed port (default: a free one)")
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            state, reused = start(args.state_dir, port=args.port)
            verb = "reusing" if reused else "started"
            print(f"emulator {verb} at {state.endpoint} (pid {state.pid}); state in {state_file(args.state_dir)}")
        elif args.command == "down":
            print(stop(args.state_dir))
        elif args.command == "status":
            print(status(args.state_dir))
        else:
            state = read_state(args.state_dir)
            if state is None or not is_our_server(state):
                raise EmulatorError("no running emulator; run `make emulator-up`")
            for key, value in env_vars(state).items():
                print(f"export {key}={value}")
    except EmulatorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
