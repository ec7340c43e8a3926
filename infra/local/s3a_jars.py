"""The two jars local Spark needs for s3a against the emulator, cached and verified by SHA-256.

Maven Central is unreachable here, but the ``sagemaker-pyspark==1.4.5`` sdist on PyPI (Apache-2.0)
carries ``hadoop-aws-3.3.1.jar`` and ``aws-java-sdk-bundle-1.11.901.jar``; hadoop-aws 3.3.1 works
with the Hadoop 3.3.4 client that pyspark 3.5.9 bundles.  We download the sdist once with pip (the
package registry is the only network we may use), extract just those two jars into
``.local/jars/``, check their hashes, and delete the 181 MB sdist.

On EMR none of this is used: ``s3://`` goes through EMRFS.

CLI: ``python -m infra.local.s3a_jars`` prints the comma-separated jar paths for ``spark.jars``.
"""
from __future__ import annotations

import hashlib
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CACHE_DIR = REPO_ROOT / ".local" / "jars"
SDIST = "sagemaker-pyspark==1.4.5"
SDIST_FILE = "sagemaker_pyspark-1.4.5.tar.gz"
SDIST_SHA256 = "05ca2d5081d7138ce29a8fb0a9cba077f28c825288ed07aed46a82e63c0bf1fb"  # pragma: allowlist secret - dummy or public value
JARS: dict[str, str] = {
    "hadoop-aws-3.3.1.jar": "6be50ad8a8b445d2802381b085b2a3ede5c29d353450a6a21f16b2fefa962b6e",  # pragma: allowlist secret - dummy or public value
    "aws-java-sdk-bundle-1.11.901.jar": "b87175b32a16544cc1b37cf40390eb375833e62bed67f8ce6cde4b7ad6429ead",  # pragma: allowlist secret - dummy or public value
}


class JarError(RuntimeError):
    """The jars could not be fetched or failed verification."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def cached_jars_valid(cache_dir: Path = DEFAULT_CACHE_DIR) -> bool:
    return all((cache_dir / name).is_file() and sha256_of(cache_dir / name) == sha for name, sha in JARS.items())


def _extract(sdist: Path, cache_dir: Path) -> None:
    if sha256_of(sdist) != SDIST_SHA256:
        raise JarError(f"{sdist.name} has an unexpected SHA-256; refusing to use it")
    with tarfile.open(sdist, "r:gz") as tar:
        for member in tar.getmembers():
            name = Path(member.name).name
            if name in JARS and member.isfile():
                src = tar.extractfile(member)
                assert src is not None
                tmp = cache_dir / (name + ".part")
                with open(tmp, "wb") as out:
                    while chunk := src.read(1 << 20):
                        out.write(chunk)
                if sha256_of(tmp) != JARS[name]:
                    tmp.unlink()
                    raise JarError(f"{name} from {sdist.name} failed SHA-256 verification")
                tmp.replace(cache_dir / name)


def ensure_jars(cache_dir: Path = DEFAULT_CACHE_DIR, quiet: bool = False) -> list[Path]:
    """Return the verified jar paths, fetching them first if the cache is missing or corrupt."""
    cache_dir = Path(cache_dir)
    if cached_jars_valid(cache_dir):
        return [cache_dir / name for name in JARS]
    cache_dir.mkdir(parents=True, exist_ok=True)
    if not quiet:
        print(f"fetching s3a jars from the {SDIST} sdist (181 MB, once) into {cache_dir}", file=sys.stderr)
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q", "-d", tmp, SDIST]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        sdist = Path(tmp) / SDIST_FILE
        if not sdist.is_file():
            raise JarError(f"pip download {SDIST} failed:\n{result.stderr[-2000:]}")
        _extract(sdist, cache_dir)
    if not cached_jars_valid(cache_dir):
        raise JarError(f"jars in {cache_dir} failed SHA-256 verification after extraction")
    return [cache_dir / name for name in JARS]


def main() -> int:
    try:
        print(",".join(str(p) for p in ensure_jars()))
    except JarError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
