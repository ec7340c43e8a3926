"""A class-data-sharing archive for the local Spark driver JVM: built once by a training run, then mapped by
every local session (``TENANTLAKE_JVM_ARCHIVE``, spark_jobs/runs/session.py).

A local session's JVM loads and verifies some 10,000 classes of Spark, Iceberg and Hadoop before it runs
anything, and every ``python -m spark_jobs`` command starts one. A dynamic AppCDS archive
(``-XX:ArchiveClassesAtExit``, JDK 13+) holds those classes parsed and verified, and a JVM started with
``-XX:SharedArchiveFile`` maps it instead: on this machine a ``query`` of a small table took 9.1 and 9.6 CPU s with
the archive against 14.6 and 13.7 without (two runs each, in turns; infra/local/README.md, "The Spark driver's
class archive").

The training run is ``datagen`` and ``run-all`` of 200 iot records on a temporary folder lake, in a
local session of the project's own settings, whose JVM is told to write the archive when it exits; it
then exits normally (an archive is written only then, never on a kill). About 50 s here, once.

The archive is only valid for the JDK and class path that wrote it; the file name carries a hash of both
(the ``java`` binary, pyspark's version and its ``jars/`` listing, and the local jars), so a change writes
a new archive. A JVM that finds an archive it cannot use (another JDK, a changed class path, a damaged
file) starts without it, as it would without the option: the archive changes how fast a session
starts, never what it does. Under spark-submit (EMR) it is never used: the launcher owns the JVM options.

CLI: ``python -m infra.local.jvm_archive`` builds the archive when missing and prints its path; exit 1
with one ``error:`` line when the training run fails (the path is then not printed, and sessions start
without an archive).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DIR = REPO_ROOT / ".local" / "jvm"
TRAINING_RECORDS = 200
TRAINING_TIMEOUT_S = 600


class ArchiveError(RuntimeError):
    """The training run failed: no archive was written."""


def _local_jars() -> list[Path]:
    from infra.local.s3a_jars import DEFAULT_CACHE_DIR  # the s3a and Iceberg jars' cache

    return sorted(DEFAULT_CACHE_DIR.glob("*.jar"))


def archive_key() -> str:
    """A hash of what the archive is valid for: the java binary the session starts, pyspark's version and
    its jars, and the local jars (s3a, Iceberg)."""
    import pyspark

    java = shutil.which("java", path=os.path.join(os.environ["JAVA_HOME"], "bin")) if os.environ.get("JAVA_HOME") \
        else shutil.which("java")
    spark_jars = sorted(p.name for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    digest = hashlib.sha256()
    for part in (os.path.realpath(java or "java"), pyspark.__version__, *spark_jars,
                 *(f"{p.name}:{p.stat().st_size}" for p in _local_jars())):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:16]


def archive_path(directory: Path = DEFAULT_DIR) -> Path:
    return Path(directory) / f"spark-driver-{archive_key()}.jsa"


def ensure_archive(directory: Path = DEFAULT_DIR, progress=print) -> Path:
    """The archive for this JDK and class path, built by a training run when missing."""
    path = archive_path(directory)
    if path.is_file() and path.stat().st_size > 0:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob("spark-driver-*.jsa"):  # another JDK or class path: never mapped again
        stale.unlink()
    progress(f"setup: training a class-data-sharing archive for the local Spark driver ({path.name}, once)")
    partial = path.with_suffix(".jsa.part")
    partial.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="tenantlake-jvm-archive-") as work:
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "TENANTLAKE_TENANT": "archive-training",
               "TENANTLAKE_STATE_DIR": str(Path(work) / "state"), "TENANTLAKE_VALIDATION": "on"}
        env.pop("TENANTLAKE_JVM_ARCHIVE", None)
        try:
            done = subprocess.run([sys.executable, "-m", "infra.local.jvm_archive", "--train", str(partial),
                                   str(Path(work) / "lake")], cwd=REPO_ROOT, env=env, capture_output=True,
                                  text=True, timeout=TRAINING_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise ArchiveError(f"the training run took more than {TRAINING_TIMEOUT_S} s") from exc
    if done.returncode != 0 or not partial.is_file() or partial.stat().st_size == 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        partial.unlink(missing_ok=True)
        raise ArchiveError(f"the training run wrote no archive (exit {done.returncode}): {tail}")
    partial.rename(path)
    return path


def _train(archive: str, lake: str) -> int:
    """The training run (its own process): datagen + run-all on a folder lake, in a local session whose JVM
    writes ``archive`` when it exits; then the JVM exits normally and this process waits for the archive."""
    from spark_jobs.runs.session import JVM_ARCHIVE_QUIET

    os.environ["SPARK_SUBMIT_OPTS"] = f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} " \
                                      f"-XX:ArchiveClassesAtExit={archive} {JVM_ARCHIVE_QUIET}".strip()
    from pyspark import SparkContext

    from spark_jobs import cli

    if cli.main(["datagen", "--lake-uri", lake, "--dataset", "iot", "--records", str(TRAINING_RECORDS)]) != 0:
        return 1
    code = cli.main(["run-all", "--lake-uri", lake, "--dataset", "iot", "--allow-warn"])
    gateway = SparkContext._gateway
    if gateway is None:
        return 1
    try:
        gateway.jvm.System.exit(0)  # a normal exit: the JVM writes the archive, then ends
    except Exception:  # noqa: BLE001 - the gateway's connection ends with the JVM
        pass
    gateway.proc.wait(timeout=TRAINING_TIMEOUT_S)
    return code


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--train"] and len(args) == 3:
        return _train(args[1], args[2])
    try:
        path = ensure_archive(progress=lambda line: print(line, file=sys.stderr, flush=True))
    except ArchiveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
