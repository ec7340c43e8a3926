"""The jobs' third-party Python packages, packed for the cluster: ``--archives …/job_deps.tar.gz#deps``.

EMR on EKS images ship pyspark and py4j, not pyyaml or great-expectations. ``--py-files`` zips cannot
carry compiled modules (numpy, pandas, pydantic-core are), so the packages travel as an archive in
``spark.archives``: Spark unpacks it as ``./deps`` in the driver's working directory (SPARK-33748,
Kubernetes cluster mode) and in every executor's, and ``PYTHONPATH=./deps`` puts it on the path.

* **What**: ``requirements/emr-job.txt``, every package pinned (generated from ``emr-job.in`` by
  ``python -m infra.deploy.job_deps lock``, constrained by ``requirements/project.txt`` so the cluster
  runs the versions the tests run). pyspark and py4j are refused: EMR provides its own.
* **For which cluster**: the EMR release's Python (``EMR_RELEASE_PYTHON``) and the node CPU
  architecture (x86_64, or arm64 for Graviton). pip installs with ``--platform``, ``--python-version``,
  ``--implementation cp`` and ``--only-binary=:all:``: wheels only, nothing compiled here.
* **Reproducible**: files in sorted order, fixed timestamp, owner and modes, gzip without name or
  time; no ``bin/`` (console scripts carry this machine's interpreter path), no ``RECORD`` (pip's
  uninstall list, which names those scripts), no bytecode.
* **Cached** under ``.local/job_deps/<version>/`` where the version is a hash of the inputs (pins,
  target, packing format): an unchanged input is not installed or packed again.
"""
from __future__ import annotations

import argparse
import dataclasses
import gzip
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Callable

from infra.deploy.target import DeployError

REPO_ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS_IN = REPO_ROOT / "requirements" / "emr-job.in"
REQUIREMENTS = REPO_ROOT / "requirements" / "emr-job.txt"
PROJECT_PINS = REPO_ROOT / "requirements" / "project.txt"
DEFAULT_CACHE_DIR = REPO_ROOT / ".local" / "job_deps"

ARCHIVE_NAME = "job_deps.tar.gz"
ALIAS = "deps"  # --archives <uri>#deps: unpacked as ./deps in the driver's and the executors' working dirs
PYTHONPATH_ENTRY = f"./{ALIAS}"
PROVIDED_BY_EMR = frozenset({"pyspark", "py4j"})  # the image's own; a second copy would shadow it
PACK_FORMAT = "1"  # part of the version: bump it when the packing below changes
VERSION_LENGTH = 12
ARCHIVE_EPOCH = 315532800  # 1980-01-01T00:00:00Z, as the code zip
GZIP_LEVEL = 6
PIP_TIMEOUT_SECONDS = 900

# EMR release -> the Python the jobs run with on its EKS image.
# Source: "Application versions in Amazon EMR 7.x releases", Amazon EMR Release Guide
# (https://docs.aws.amazon.com/emr/latest/ReleaseGuide/emr-release-app-versions-7.x.html, rows emr-7.0.0
# to emr-7.12.0) and "Amazon EMR release 7.13.0" (.../ReleaseGuide/emr-7130-release.html): Python "3.9" in
# 7.0.0, "3.9, 3.11" from 7.1.0 on. great-expectations 1.24 needs Python >= 3.10, so 7.0.0 and every
# 6.x release (Python 3.7) cannot run the jobs and are not listed. Which interpreter `python3` is in the
# image is not documented: the request names /usr/bin/python<version> explicitly (see DepsTarget).
EMR_RELEASE_PYTHON: dict[str, str] = {
    "emr-7.1.0": "3.11", "emr-7.2.0": "3.11", "emr-7.3.0": "3.11", "emr-7.4.0": "3.11", "emr-7.5.0": "3.11",
    "emr-7.6.0": "3.11", "emr-7.7.0": "3.11", "emr-7.8.0": "3.11", "emr-7.9.0": "3.11", "emr-7.10.0": "3.11",
    "emr-7.11.0": "3.11", "emr-7.12.0": "3.11", "emr-7.13.0": "3.11",
}
# --arch value -> the machine name in wheel platform tags. EMR on EKS images exist for both.
ARCHITECTURES: dict[str, str] = {"x86_64": "x86_64", "arm64": "aarch64"}
DEFAULT_ARCH = "x86_64"
# EMR 7.5.0 ships Spark 3.5.2-amzn-1 (EMR on EKS 7.5.0 release notes): the Spark line of pyspark 3.5.9 here.
DEFAULT_RELEASE_LABEL = "emr-7.5.0-latest"
# Wheels for glibc 2.17 (manylinux2014) up to 2.34: EMR 7.x is built on Amazon Linux 2023 (Amazon EMR
# Management Guide, "Using the default Amazon Linux AMI"), whose glibc is 2.34 (AL2023 User Guide, "Core
# toolchain packages"). cryptography's aarch64 wheel, for one, exists only as manylinux_2_34.
GLIBC_MINORS = range(34, 16, -1)
RELEASE_PATTERN = re.compile(r"^(emr-\d+\.\d+\.\d+)(?:-[A-Za-z0-9.-]+)?$")
PIN_PATTERN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")

Progress = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def normalize(name: str) -> str:
    """PEP 503 project name: ``PyYAML`` and ``pyyaml``, ``ruamel.yaml`` and ``ruamel-yaml`` are one."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclasses.dataclass(frozen=True)
class DepsTarget:
    """The interpreter and machine the packages are installed for.

    Attributes:
        python_version: ``major.minor`` of the cluster's Python, e.g. "3.11".
        arch: ``x86_64`` or ``arm64`` (Graviton). @default - "x86_64"
    """

    python_version: str
    arch: str = DEFAULT_ARCH

    @property
    def machine(self) -> str:
        return ARCHITECTURES[self.arch]

    @property
    def platforms(self) -> list[str]:
        """pip ``--platform`` tags, newest first (pip takes the listed tags literally)."""
        return [f"manylinux_2_{minor}_{self.machine}" for minor in GLIBC_MINORS] + [f"manylinux2014_{self.machine}"]

    @property
    def interpreter(self) -> str:
        """The interpreter the request names for driver and executors (``spark.pyspark.python``)."""
        return f"/usr/bin/python{self.python_version}"

    @property
    def label(self) -> str:
        return f"CPython {self.python_version}, {self.arch}"


def release_of(release_label: str) -> str:
    """``emr-7.5.0`` from ``emr-7.5.0-latest``, ``emr-7.5.0-20241126`` or ``emr-7.5.0``; "" if not a label."""
    match = RELEASE_PATTERN.match(release_label.strip())
    return match.group(1) if match else ""


def target_for_release(release_label: str, arch: str = DEFAULT_ARCH) -> DepsTarget:
    """The target of ``release_label``; one ``DeployError`` line, naming the known ones, if it has none."""
    if arch not in ARCHITECTURES:
        raise DeployError(f"--arch {arch}: unknown CPU architecture (known: {', '.join(ARCHITECTURES)})")
    python = EMR_RELEASE_PYTHON.get(release_of(release_label))
    if python is None:
        raise DeployError(f"--release-label {release_label}: not a release the jobs can run on "
                          f"(known: {', '.join(EMR_RELEASE_PYTHON)}, each as emr-X.Y.Z-latest or -YYYYMMDD)")
    return DepsTarget(python, arch)


def local_target() -> DepsTarget:
    """This interpreter and machine (what the bare-Python test runs with)."""
    machine = platform.machine()
    arch = next((name for name, tag in ARCHITECTURES.items() if tag == machine), "")
    if not arch:
        raise DeployError(f"this machine's architecture {machine} is none of {', '.join(ARCHITECTURES.values())}")
    return DepsTarget(f"{sys.version_info.major}.{sys.version_info.minor}", arch)


def read_pins(path: Path = REQUIREMENTS) -> dict[str, str]:
    """``{normalized name: version}`` from a fully pinned requirements file; refuses anything else."""
    pins: dict[str, str] = {}
    for number, raw in enumerate(Path(path).read_text().splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = PIN_PATTERN.match(line)
        if not match:
            raise DeployError(f"{path}:{number}: '{line}' is not an exact pin (name==version)")
        name = normalize(match.group(1))
        if name in PROVIDED_BY_EMR:
            raise DeployError(f"{path}:{number}: {match.group(1)} must not be packed: EMR provides it")
        pins[name] = match.group(2)
    if not pins:
        raise DeployError(f"{path} pins nothing")
    return pins


def input_version(target: DepsTarget, requirements: bytes) -> str:
    """The cache key and S3 folder: a hash of everything that decides the archive's content."""
    digest = hashlib.sha256()
    for part in (PACK_FORMAT, target.python_version, target.machine, " ".join(target.platforms), "cp"):
        digest.update(part.encode() + b"\0")
    digest.update(requirements)
    return digest.hexdigest()[:VERSION_LENGTH]


def pip_install_command(target: DepsTarget, dest: Path, requirement_args: list[str],
                        report: Path | None = None) -> list[str]:
    """``pip install`` for ``target``: wheels only, for that platform and Python, into ``dest``."""
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
               "--no-compile", "--no-warn-script-location", "--only-binary=:all:", "--implementation", "cp",
               "--python-version", target.python_version, "--target", str(dest)]
    for tag in target.platforms:
        command += ["--platform", tag]
    if report is not None:
        command += ["--dry-run", "--report", str(report)]
    return command + requirement_args


def _run_pip(command: list[str], what: str, timeout: float) -> None:
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise DeployError(f"job deps: pip did not finish {what} within {timeout:.0f} s") from None
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")] or \
                 [line for line in result.stderr.splitlines() if line.strip()][-1:]
        raise DeployError(f"job deps: pip could not {what}: {' '.join(errors)[:400] or 'exit ' + str(result.returncode)}")


@dataclasses.dataclass(frozen=True)
class Resolved:
    """One distribution pip chose: name, version and the file it would install."""

    name: str
    version: str
    filename: str


def resolve(target: DepsTarget, requirement_args: list[str], timeout: float = PIP_TIMEOUT_SECONDS) -> list[Resolved]:
    """What pip would install for ``target`` (``--dry-run --report``: metadata only, nothing installed)."""
    with tempfile.TemporaryDirectory(prefix="tenantlake-resolve-") as tmp:
        report = Path(tmp) / "report.json"
        _run_pip(pip_install_command(target, Path(tmp) / "target", requirement_args, report=report),
                 f"resolve {' '.join(requirement_args)} for {target.label}", timeout)
        installs = json.loads(report.read_text())["install"]
    return sorted((Resolved(normalize(item["metadata"]["name"]), item["metadata"]["version"],
                            item["download_info"]["url"].rsplit("/", 1)[-1]) for item in installs),
                  key=lambda r: r.name)


@dataclasses.dataclass(frozen=True)
class JobDeps:
    """A packed archive on local disk.

    Attributes:
        path: the ``job_deps.tar.gz``.
        version: input hash prefix; the cache and S3 folder name.
        sha256: SHA-256 of the archive bytes (compared before uploading).
        target: what it was built for.
        packages: ``name==version`` of every distribution inside, sorted.
        size: bytes.
        cached: True when this call reused an earlier build.
    """

    path: Path
    version: str
    sha256: str
    target: DepsTarget
    packages: tuple[str, ...]
    size: int
    cached: bool = False

    @property
    def key(self) -> str:
        return f"artifacts/job_deps/{self.version}/{ARCHIVE_NAME}"

    def uri(self, bucket: str) -> str:
        return f"s3://{bucket}/{self.key}"

    def summary(self) -> str:
        return (f"job deps {self.version} for {self.target.label}: {len(self.packages)} packages, "
                f"{self.size / 1e6:.1f} MB{' (cached)' if self.cached else ''}")


def installed_distributions(tree: Path) -> dict[str, str]:
    """``{normalized name: version}`` of the ``*.dist-info`` folders pip left in ``tree``."""
    found: dict[str, str] = {}
    for info in tree.glob("*.dist-info"):
        fields = {}
        for line in (info / "METADATA").read_text(errors="replace").splitlines():
            if not line.strip():
                break
            key, _, value = line.partition(": ")
            fields.setdefault(key, value.strip())
        found[normalize(fields["Name"])] = fields["Version"]
    return found


def check_installed(tree: Path, pins: dict[str, str]) -> tuple[str, ...]:
    """Everything installed must be pinned, at its pin, and none of it EMR's own."""
    installed = installed_distributions(tree)
    forbidden = sorted(set(installed) & PROVIDED_BY_EMR)
    if forbidden:
        raise DeployError(f"job deps: {', '.join(forbidden)} ended up in the archive; EMR provides them "
                          "(a package in requirements/emr-job.in depends on them: drop it or its extra)")
    unpinned = sorted(f"{name}=={version}" for name, version in installed.items() if pins.get(name) != version)
    if unpinned:
        raise DeployError(f"job deps: pip installed {', '.join(unpinned)}, which requirements/emr-job.txt does "
                          "not pin; re-lock it (python -m infra.deploy.job_deps lock)")
    return tuple(sorted(f"{name}=={version}" for name, version in installed.items()))


def strip_build_leftovers(tree: Path) -> None:
    """Remove what differs between build machines and is not needed to import the packages."""
    shutil.rmtree(tree / "bin", ignore_errors=True)
    for path in sorted(tree.rglob("*"), reverse=True):
        if path.is_dir() and path.name == "__pycache__":
            shutil.rmtree(path)
        elif path.is_file() and (path.suffix in (".pyc", ".pyo") or
                                 (path.name == "RECORD" and path.parent.name.endswith(".dist-info"))):
            path.unlink()


def pack(tree: Path, out: Path) -> None:
    """Write ``tree``'s content as a reproducible tar.gz: same files, same bytes, on any machine."""
    tree = Path(tree)
    entries = sorted(tree.rglob("*"), key=lambda p: p.relative_to(tree).as_posix())
    with open(out, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                                compresslevel=GZIP_LEVEL) as zipped, \
            tarfile.open(fileobj=zipped, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for path in entries:
            if path.is_symlink():
                raise DeployError(f"job deps: {path} is a symbolic link; wheels do not contain any")
            info = tarfile.TarInfo(path.relative_to(tree).as_posix())
            info.mtime, info.uid, info.gid, info.uname, info.gname = ARCHIVE_EPOCH, 0, 0, "", ""
            if path.is_dir():
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                archive.addfile(info)
                continue
            info.size = path.stat().st_size
            info.mode = 0o755 if path.stat().st_mode & 0o111 else 0o644
            with open(path, "rb") as handle:
                archive.addfile(info, handle)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _cached(folder: Path, version: str, target: DepsTarget) -> JobDeps | None:
    archive, meta_path = folder / ARCHIVE_NAME, folder / "job_deps.json"
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        return None
    if not archive.is_file() or archive.stat().st_size != meta.get("size") or _sha256_file(archive) != meta.get("sha256"):
        return None
    return JobDeps(archive, version, meta["sha256"], target, tuple(meta["packages"]), meta["size"], cached=True)


def _remove_stale_builds(folder: Path, older_than: float) -> None:
    """A build killed half-way (SIGKILL) leaves its ``.build-*`` folder; none can be in use after twice
    pip's time limit."""
    cutoff = time.time() - older_than
    for leftover in folder.glob(".build-*"):
        if leftover.is_dir() and leftover.stat().st_mtime < cutoff:
            shutil.rmtree(leftover, ignore_errors=True)


def build_job_deps(target: DepsTarget, requirements: Path = REQUIREMENTS, cache_dir: Path = DEFAULT_CACHE_DIR,
                   progress: Progress = _stderr, timeout: float = PIP_TIMEOUT_SECONDS) -> JobDeps:
    """The archive for ``target``: from the cache when the inputs are unchanged, else installed and packed."""
    requirements = Path(requirements)
    try:
        content = requirements.read_bytes()
    except OSError as exc:
        raise DeployError(f"job deps: cannot read {requirements} ({exc.strerror})") from exc
    pins = read_pins(requirements)
    version = input_version(target, content)
    folder = Path(cache_dir) / version
    cached = _cached(folder, version, target)
    if cached is not None:
        return cached
    started = time.monotonic()
    progress(f"job deps: installing {len(pins)} pinned packages from {requirements.name} for {target.label} "
             "(wheels only; first build of these inputs)")
    folder.mkdir(parents=True, exist_ok=True)
    _remove_stale_builds(folder, older_than=2 * timeout)
    with tempfile.TemporaryDirectory(prefix=".build-", dir=folder) as tmp:
        tree = Path(tmp) / "tree"
        _run_pip(pip_install_command(target, tree, ["-r", str(requirements)]),
                 f"install {requirements.name} for {target.label}", timeout)
        packages = check_installed(tree, pins)
        strip_build_leftovers(tree)
        progress(f"job deps: packing {len(packages)} packages ({time.monotonic() - started:.0f} s so far)")
        staged = Path(tmp) / ARCHIVE_NAME
        pack(tree, staged)
        sha256, size = _sha256_file(staged), staged.stat().st_size
        os.replace(staged, folder / ARCHIVE_NAME)
    meta = {"version": version, "sha256": sha256, "size": size, "packages": list(packages),
            "python_version": target.python_version, "arch": target.arch, "platforms": target.platforms}
    (folder / "job_deps.json").write_text(json.dumps(meta, indent=2) + "\n")
    built = JobDeps(folder / ARCHIVE_NAME, version, sha256, target, packages, size)
    progress(f"job deps: built {built.summary()} in {time.monotonic() - started:.0f} s")
    return built


def lock(requirements_in: Path = REQUIREMENTS_IN, constraints: Path = PROJECT_PINS, out: Path = REQUIREMENTS,
         release_label: str = DEFAULT_RELEASE_LABEL) -> list[Resolved]:
    """Resolve ``emr-job.in`` for the release (every architecture), constrained by the project's pins,
    and write the fully pinned ``emr-job.txt``."""
    args = ["-c", str(constraints), "-r", str(requirements_in)]
    per_arch = {arch: resolve(target_for_release(release_label, arch), args) for arch in ARCHITECTURES}
    pinned = {(r.name, r.version) for r in per_arch[DEFAULT_ARCH]}
    for arch, resolved in per_arch.items():
        if {(r.name, r.version) for r in resolved} != pinned:
            raise DeployError(f"job deps: {arch} resolves other versions than {DEFAULT_ARCH}; pin them in {requirements_in}")
    header = (f"# Generated from requirements/emr-job.in by `python -m infra.deploy.job_deps lock` (run by `make lock`),\n"
              f"# constrained by requirements/project.txt, resolved for {release_of(release_label)} on "
              f"{', '.join(ARCHITECTURES)}. Every package pinned;\n# pyspark and py4j are never listed: EMR provides them.\n")
    Path(out).write_text(header + "".join(f"{name}=={version}\n" for name, version in sorted(pinned)))
    return per_arch[DEFAULT_ARCH]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.deploy.job_deps",
                                     description="Lock or build the jobs' dependency archive for EMR on EKS.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("lock", help="re-resolve requirements/emr-job.in into requirements/emr-job.txt")
    build = commands.add_parser("build", help="build (or reuse) the archive for a release and architecture")
    build.add_argument("--release-label", default=DEFAULT_RELEASE_LABEL)
    build.add_argument("--arch", default=DEFAULT_ARCH, choices=sorted(ARCHITECTURES))
    args = parser.parse_args(argv)
    try:
        if args.command == "lock":
            resolved = lock()
            print(f"requirements/emr-job.txt: {len(resolved)} packages pinned")
        else:
            deps = build_job_deps(target_for_release(args.release_label, args.arch))
            print(f"{deps.summary()}: {deps.path}")
    except DeployError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
