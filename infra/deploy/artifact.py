"""The deployable artifact: a deterministic zip of ``spark_jobs`` (with its contracts) and the stdlib-only
``tenant_model`` it imports, plus the entrypoint.

Deterministic means an unchanged tree gives a byte-identical zip: files are added in sorted order,
with a fixed timestamp (1980-01-01, the zip epoch), fixed permissions and a fixed compression level,
and nothing from the build machine (no ``__pycache__``, no ``*.pyc``, no hidden files).

* ``version``: the first ``VERSION_LENGTH`` hex digits of the *content* hash (SHA-256 over each
  file's archive name and SHA-256), so it names the code, whatever zlib build packed it.
* ``sha256``: the SHA-256 of the zip bytes, the checksum the upload compares and stores in metadata.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = REPO_ROOT / "spark_jobs"
# Repo packages spark_jobs imports besides itself, packed next to it: the stdlib-only tenant model.
SHARED_PACKAGES: tuple[Path, ...] = (REPO_ROOT / "tenant_model",)
ENTRYPOINT_SOURCE = Path(__file__).resolve().parent / "entrypoint.py"
DEFAULT_BUILD_DIR = REPO_ROOT / ".local" / "artifacts"

ARCHIVE_NAME = "spark_jobs.zip"
ENTRYPOINT_NAME = "entrypoint.py"
VERSION_LENGTH = 12
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
FILE_MODE = 0o100644
COMPRESS_LEVEL = 9
EXCLUDED_DIRS = frozenset({"__pycache__"})
EXCLUDED_SUFFIXES = (".pyc", ".pyo")


class ArtifactError(RuntimeError):
    """The artifact cannot be built (e.g. the package or its contracts are missing)."""


@dataclasses.dataclass(frozen=True)
class Artifact:
    """A built artifact on local disk.

    Attributes:
        zip_path: the zip (``spark_jobs/**``, ``tenant_model/**`` and ``entrypoint.py`` at its root).
        entrypoint_path: the entrypoint script, uploaded next to the zip (EMR's ``entryPoint``).
        version: content hash prefix; the S3 folder name under ``artifacts/spark_jobs/``.
        sha256: SHA-256 of the zip bytes.
        entrypoint_sha256: SHA-256 of the entrypoint script.
        files: archive names in the zip, sorted.
    """

    zip_path: Path
    entrypoint_path: Path
    version: str
    sha256: str
    entrypoint_sha256: str
    files: tuple[str, ...]

    @property
    def key_prefix(self) -> str:
        return f"artifacts/spark_jobs/{self.version}/"

    @property
    def zip_key(self) -> str:
        return self.key_prefix + ARCHIVE_NAME

    @property
    def entrypoint_key(self) -> str:
        return self.key_prefix + ENTRYPOINT_NAME


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def collect_files(package_dir: Path = PACKAGE_DIR, entrypoint: Path = ENTRYPOINT_SOURCE,
                  shared: tuple[Path, ...] = SHARED_PACKAGES) -> list[tuple[str, Path]]:
    """(archive name, source path) pairs, sorted by archive name: the package, the ``shared`` packages it
    imports (each at the zip's root, as on the repo's), and the entrypoint."""
    pairs = [pair for package in (Path(package_dir), *map(Path, shared)) for pair in _package_files(package)]
    if not Path(entrypoint).is_file():
        raise ArtifactError(f"entrypoint script {entrypoint} is missing")
    pairs.append((ENTRYPOINT_NAME, Path(entrypoint)))
    return sorted(pairs)


def _package_files(package_dir: Path) -> list[tuple[str, Path]]:
    if not (package_dir / "__init__.py").is_file():
        raise ArtifactError(f"{package_dir} is not a Python package (no __init__.py)")
    pairs: list[tuple[str, Path]] = []
    for root, dirs, names in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d not in EXCLUDED_DIRS and not d.startswith("."))
        for name in names:
            path = Path(root) / name
            if name.startswith(".") or name.endswith(EXCLUDED_SUFFIXES) or not path.is_file():
                continue
            arcname = f"{package_dir.name}/{path.relative_to(package_dir).as_posix()}"
            pairs.append((arcname, path))
    return pairs


def content_version(contents: list[tuple[str, bytes]]) -> str:
    """The version: a hash over archive names and file hashes, independent of zip encoding."""
    digest = hashlib.sha256()
    for arcname, data in contents:
        digest.update(arcname.encode() + b"\0" + _sha256(data).encode() + b"\n")
    return digest.hexdigest()[:VERSION_LENGTH]


def build_artifact(
    build_dir: Path | str = DEFAULT_BUILD_DIR,
    package_dir: Path | str = PACKAGE_DIR,
    entrypoint: Path | str = ENTRYPOINT_SOURCE,
) -> Artifact:
    """Build the zip under ``<build_dir>/<version>/`` and return what was built."""
    pairs = collect_files(Path(package_dir), Path(entrypoint))
    contents = [(arcname, path.read_bytes()) for arcname, path in pairs]
    version = content_version(contents)
    out_dir = Path(build_dir) / version
    out_dir.mkdir(parents=True, exist_ok=True)
    zip_path = out_dir / ARCHIVE_NAME
    tmp = zip_path.with_suffix(f".zip.{os.getpid()}.tmp")  # two builds at once (two deploys, test workers): each its own
    with zipfile.ZipFile(tmp, "w") as archive:
        for arcname, data in contents:
            info = zipfile.ZipInfo(arcname, date_time=ZIP_EPOCH)
            info.external_attr = FILE_MODE << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # unix, whatever OS builds it
            archive.writestr(info, data, compresslevel=COMPRESS_LEVEL)
    tmp.replace(zip_path)
    entry_data = dict(contents)[ENTRYPOINT_NAME]
    entry_path = out_dir / ENTRYPOINT_NAME
    entry_tmp = entry_path.with_name(f"{ENTRYPOINT_NAME}.{os.getpid()}.tmp")
    entry_tmp.write_bytes(entry_data)
    entry_tmp.replace(entry_path)
    return Artifact(
        zip_path=zip_path,
        entrypoint_path=entry_path,
        version=version,
        sha256=_sha256(zip_path.read_bytes()),
        entrypoint_sha256=_sha256(entry_data),
        files=tuple(arcname for arcname, _ in contents),
    )


def contract_sha256(artifact: Artifact, dataset: str) -> str:
    """SHA-256 of ``spark_jobs/contracts/<dataset>.yaml`` as packed in the artifact."""
    with zipfile.ZipFile(artifact.zip_path) as archive:
        return _sha256(archive.read(contract_arcname(dataset)))


def contract_arcname(dataset: str) -> str:
    return f"spark_jobs/contracts/{dataset}.yaml"


def datasets_in(artifact: Artifact) -> tuple[str, ...]:
    """Dataset names whose contract the artifact carries."""
    prefix, suffix = "spark_jobs/contracts/", ".yaml"
    return tuple(sorted(
        name[len(prefix):-len(suffix)] for name in artifact.files
        if name.startswith(prefix) and name.endswith(suffix) and "/" not in name[len(prefix):]
    ))
