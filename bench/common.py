"""What every benchmark shares: the machine and commit a figure was measured on, result files, peak RSS.

Result files are ``bench/results/<name>.json`` (the latest run of each benchmark, committed, so every
figure can be traced to a machine and a commit). ``bench/report.py`` renders a page of each beside it
(``bench/results/<name>.md``) and their list in bench/README.md.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import platform
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import psutil

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO_ROOT / "bench" / "results"


def _first_line(cmd: list[str]) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unavailable"
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0] if text else "unavailable"


def _version(module: str) -> str:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # noqa: BLE001 - a missing package is recorded, not fatal
        return "not installed"


def machine_info() -> dict[str, Any]:
    """Cores, memory, CPU model, load and tool versions of the machine running the benchmark."""
    cpu_model = "unknown"
    try:
        match = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.MULTILINE)
        cpu_model = match.group(1).strip() if match else cpu_model
    except OSError:
        pass
    return {
        "hostname": platform.node(),
        "os": f"{platform.system()} {platform.release()}",
        "cpu_model": cpu_model,
        "cores": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "java": _first_line(["java", "-version"]),
        "terraform": _first_line([shutil.which("terraform") or "terraform", "version"]),
        "packages": {name: _version(name) for name in
                     ("pyspark", "duckdb", "great_expectations", "moto", "cdktf", "cdktf-cdktf-provider-aws",
                      "boto3")},
        "checkov": _first_line([str(REPO_ROOT / ".venv-checkov" / "bin" / "checkov"), "--version"]),
    }


def git_info() -> dict[str, Any]:
    """The commit measured, and whether the working tree had uncommitted changes."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
        return done.stdout.strip()

    return {"commit": git("rev-parse", "HEAD") or "unknown",
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def job_workspace(work_dir: str, name: str, contracts_dir: Path) -> tuple[Path, Path, dict[str, str]]:
    """A benchmark's work folder (``work_dir``, or /tmp/tenantlake-bench-<name>-<pid>), its jobs' log and the
    jobs' environment: the bench's contracts, a state dir of its own, validation on and the default heap, as
    users run the jobs (the memory targets are about the defaults)."""
    work = Path(work_dir) if work_dir else Path(f"/tmp/tenantlake-bench-{name}-{os.getpid()}")
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TENANTLAKE_CONTRACTS_DIR": str(contracts_dir), "TENANTLAKE_STATE_DIR": str(work / "state"),
           "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("TENANTLAKE_VALIDATION", None)
    env.pop("TENANTLAKE_DRIVER_MEMORY", None)
    return work, work / "jobs.log", env


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def write_result(name: str, payload: dict[str, Any], *, started_at: str | None = None,
                 results_dir: Path = RESULTS_DIR) -> Path:
    """Write ``<results_dir>/<name>.json``: the payload plus machine, git commit and timestamps."""
    results_dir.mkdir(parents=True, exist_ok=True)
    document = {
        "benchmark": name,
        "started_at": started_at,
        "finished_at": utc_now(),
        "machine": machine_info(),
        "git": git_info(),
        **payload,
    }
    path = results_dir / f"{name}.json"
    path.write_text(json.dumps(document, indent=2, sort_keys=False) + "\n")
    return path


def _command(process: psutil.Process) -> tuple[str, ...]:
    try:
        return tuple(process.cmdline())
    except psutil.Error:
        return ()


class PeakRss:
    """Peak resident memory of a process (default: this one) and of its descendants, sampled.

    ``peak_python_mb``: the root process. ``peak_jvm_mb``: the largest sum over descendant processes
    whose name or command line says java (PySpark's JVM is a child of the Python driver).
    ``peak_total_mb``: the largest sum over the whole tree at one sample. A process with its parent's
    command line is a fork that has not exec'd yet (the JVM starts Hadoop's shell commands by fork and
    exec; the child carries the forking thread's name, e.g. "Executor task l"): its RSS is the parent's
    pages, shared, and is not added again (it doubled single runs' JVM peaks). Sampling every
    ``interval`` seconds can miss a spike shorter than that; the JVM's RSS rarely shrinks, so its
    peak is reliable.

        with PeakRss() as rss:           # or PeakRss(pid=child.pid) for a subprocess
            run_the_job()
        rss.peak_python_mb, rss.peak_jvm_mb
    """

    def __init__(self, pid: int | None = None, interval: float = 0.2):
        self.pid = pid or os.getpid()
        self.interval = interval
        self.peak_python_mb = 0.0
        self.peak_jvm_mb = 0.0
        self.peak_total_mb = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        try:
            root = psutil.Process(self.pid)
            python = root.memory_info().rss
            children = root.children(recursive=True)
        except psutil.Error:
            return
        jvm = other = 0
        commands = {root.pid: _command(root)}
        for child in children:
            commands[child.pid] = _command(child)
        for child in children:
            try:
                if commands[child.pid] and commands[child.pid] == commands.get(child.ppid()):
                    continue  # a fork that has not exec'd yet shares its parent's pages: not counted twice
                rss = child.memory_info().rss
                is_java = "java" in child.name().lower() or any("java" in part for part in commands[child.pid][:1])
            except psutil.Error:
                continue
            if is_java:
                jvm += rss
            else:
                other += rss
        mb = 2**20
        self.peak_python_mb = max(self.peak_python_mb, python / mb)
        self.peak_jvm_mb = max(self.peak_jvm_mb, jvm / mb)
        self.peak_total_mb = max(self.peak_total_mb, (python + jvm + other) / mb)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> "PeakRss":
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="peak-rss", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.sample()

    def as_dict(self) -> dict[str, float]:
        return {"peak_python_mb": round(self.peak_python_mb, 1), "peak_jvm_mb": round(self.peak_jvm_mb, 1),
                "peak_total_mb": round(self.peak_total_mb, 1)}


class Stopwatch:
    """``with Stopwatch() as sw: ...`` then ``sw.seconds`` (wall clock, perf_counter)."""

    def __enter__(self) -> "Stopwatch":
        self._start = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._start


def target_line(label: str, value: float, target: float, *, higher_is_better: bool = True, unit: str = "") -> dict:
    """A target check as a record plus its printed line; below target is printed as such."""
    met = value >= target if higher_is_better else value <= target
    relation = ">=" if higher_is_better else "<="
    text = (f"{label}: {value:.3g}{unit} (target {relation} {target:g}{unit})"
            f"{'' if met else '  BELOW TARGET'}")
    return {"label": label, "value": value, "target": target, "higher_is_better": higher_is_better,
            "unit": unit, "met": met, "text": text}


@dataclasses.dataclass
class DedicatedEmulator:
    """A benchmark's own emulator (started by its PID, stopped by the caller), with S3 and KMS clients on
    it and a fresh KMS key: what every s3a benchmark provisions before its lake."""

    state: Any
    aws: dict[str, str]
    s3: Any
    kms: Any
    key_arn: str


def dedicated_emulator(state_dir: Path, region: str, key_description: str) -> DedicatedEmulator:
    import boto3

    from infra.local import emulator

    state, _ = emulator.start(state_dir)
    aws = emulator.env_vars(state)
    session = boto3.session.Session(aws_access_key_id=aws["AWS_ACCESS_KEY_ID"],
                                    aws_secret_access_key=aws["AWS_SECRET_ACCESS_KEY"], region_name=region)
    kms = session.client("kms", endpoint_url=state.endpoint, verify=state.ca_bundle)
    s3 = session.client("s3", endpoint_url=state.endpoint, verify=state.ca_bundle)
    key_arn = kms.create_key(Description=key_description)["KeyMetadata"]["Arn"]
    return DedicatedEmulator(state, aws, s3, kms, key_arn)


def run_sampled(cmd: list[str], env: dict[str, str], log: Path, header: str,
                timeout: float) -> tuple[int, str, "PeakRss"]:
    """One command in a process of its own, its stderr appended to ``log`` after a ``header`` line, its process
    tree sampled for peak RSS; bounded by ``timeout`` (the tree is killed on a timeout or ^C). Returns the exit
    code, stdout and the sampler."""
    with open(log, "a") as err:
        err.write(f"\n===== {utc_now()} {header}\n")
        err.flush()
        proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            with PeakRss(pid=proc.pid) as rss:
                out, _ = proc.communicate(timeout=timeout)
        except BaseException:
            kill_tree(proc.pid)
            raise
    return proc.returncode, out, rss


def kill_tree(pid: int) -> None:
    """Kill the process ``pid`` and every process under it (a worker, its JVM, the JVM's Python workers) and
    wait for them: what a benchmark does with the one command it started when it times out or is stopped."""
    try:
        root = psutil.Process(pid)
        family = root.children(recursive=True) + [root]
    except psutil.Error:
        return
    for process in family:
        try:
            process.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(family, timeout=10)


def interrupt(signum: int, frame: Any) -> None:
    """A SIGTERM handler (``signal.signal(signal.SIGTERM, interrupt)``): `kill <pid>` stops a benchmark as ^C
    does, so it stops what it started and keeps what it measured."""
    raise KeyboardInterrupt(f"stopped by signal {signum}")
