"""The Iceberg runtime jar local Spark needs for the silver and gold tables, built reproducibly and cached.

Maven Central is unreachable here. The PyPI wheel ``snowpark-connect-deps-iceberg==1.0.3`` (Apache-2.0)
carries Apache Iceberg's ``iceberg-spark-runtime-3.5_2.12-1.10.2.jar``, but that build lacks Iceberg's
own relocated Jackson (``org/apache/iceberg/shaded/com/fasterxml/jackson/...``): ``CREATE TABLE`` fails
with ``NoClassDefFoundError: .../JsonFactoryBuilder``. The same jar holds a full Jackson 2.19.2 (core,
databind, annotations) under Parquet's relocation prefix, so the repair is a relocation, not new code:

1. ``pip download`` the wheel (checked SHA-256), take the runtime jar (checked SHA-256), the wheel's
   ``LICENSE-binary``, ``NOTICE-binary`` and ``LICENSE.txt``, and the jar's own ``LICENSE`` and ``NOTICE``
   (Apache Iceberg's, naming the bundled Jackson); pyspark's jsr310 jar adds its ``LICENSE``/``NOTICE``;
2. relocate the Parquet-shaded Jackson classes of that jar, and pyspark's own
   ``jackson-datatype-jsr310-2.15.2.jar`` (checked SHA-256), to ``org.apache.iceberg.shaded.com.fasterxml.jackson``
   with Debian's ``jarjar`` (package ``libjarjar-java``, Apache-2.0; checked SHA-256);
3. add the relocated classes to a copy of the runtime jar: the upstream entries are copied byte for
   byte, the added ones in sorted order with a fixed timestamp and mode, so every build gives the same
   bytes; the result is checked against ``OUTPUT_SHA256``.

The jar and its licence files are cached in ``.local/jars/`` (beside the s3a jars; never committed);
the 76 MB wheel is deleted after the build. On EMR none of this is used: the release ships Iceberg
(``/usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar``).

CLI: ``python -m infra.local.iceberg_jar`` builds (or verifies) the jar and prints its path; exit 1
with one ``error:`` line when an input is missing or does not match its hash.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from infra.local.s3a_jars import sha256_of  # one streaming SHA-256 for every pinned jar input

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CACHE_DIR = REPO_ROOT / ".local" / "jars"
WHEEL = "snowpark-connect-deps-iceberg==1.0.3"
WHEEL_FILE = "snowpark_connect_deps_iceberg-1.0.3-py3-none-any.whl"
WHEEL_SHA256 = "4f280e3677ab8d3a89f16647fc392ab2a3d48369f0c48873fe07bc1e74e06ffc"  # pragma: allowlist secret - public hash
RUNTIME_MEMBER = "snowpark_connect_deps_iceberg/jars/iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
RUNTIME_SHA256 = "5b30080c7bbbced0fb0900894b7ea0200b1bbb2e4c355ebe727baafaf49c16f6"  # pragma: allowlist secret - public hash
LICENSE_MEMBERS = {  # wheel member -> file name kept next to the jar (the wheel's own licence files)
    "snowpark_connect_deps_iceberg-1.0.3.dist-info/licenses/LICENSE-binary": "LICENSE-binary",
    "snowpark_connect_deps_iceberg-1.0.3.dist-info/licenses/NOTICE-binary": "NOTICE-binary",
    "snowpark_connect_deps_iceberg-1.0.3.dist-info/licenses/LICENSE.txt": "LICENSE.txt",
}
JAR_LICENSE_MEMBERS = {  # runtime jar member -> file name: Iceberg's LICENSE/NOTICE (they list the bundled Jackson)
    "LICENSE": "iceberg-spark-runtime-LICENSE",
    "NOTICE": "iceberg-spark-runtime-NOTICE",
}
JSR310_JAR = "jackson-datatype-jsr310-2.15.2.jar"  # from pyspark's own jars/ folder
JSR310_SHA256 = "7574c81ad570476ef6aad26f419288fd466733f3315bee3012f2f29c9dc008c8"  # pragma: allowlist secret - public hash
JARJAR = Path("/usr/share/java/jarjar.jar")
JARJAR_PACKAGE = "libjarjar-java"  # Debian bookworm 1.4+svn142-12
JARJAR_SHA256 = "08528dc8f4e1eb70e03d37d432ac1d60d55ae50e22038587a194a857606a296e"  # pragma: allowlist secret - public hash

PARQUET_JACKSON = "org/apache/iceberg/shaded/org/apache/parquet/shaded/com/fasterxml/jackson/"
ICEBERG_JACKSON = "org/apache/iceberg/shaded/com/fasterxml/jackson/"
RELOCATION_RULES = (
    "rule org.apache.iceberg.shaded.org.apache.parquet.shaded.com.fasterxml.jackson.** "
    "org.apache.iceberg.shaded.com.fasterxml.jackson.@1",
    "rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1",
)
ENTRY_TIME = (1980, 2, 1, 0, 0, 0)  # the upstream jar's own entry timestamp
ENTRY_MODE = 0o644

OUTPUT_JAR = "iceberg-spark-runtime-3.5_2.12-1.10.2-jackson.jar"
OUTPUT_SHA256 = "4c0a2b49da2c8dd6f99009d881549c50bca29dda624763efb28ea012b9ec1cc4"  # pragma: allowlist secret - public hash
LICENSE_DIR = "iceberg-spark-runtime-licenses"  # beside the jar: the wheel's licence files + jsr310's
JARJAR_TIMEOUT_S = 300
PIP_TIMEOUT_S = 900


class JarError(RuntimeError):
    """An input is missing or does not match its pinned hash, or the build gave other bytes."""




def jar_path(cache_dir: Path | None = None) -> Path:
    """Where the jar is cached: ``cache_dir``, by default ``.local/jars/`` (``DEFAULT_CACHE_DIR``)."""
    return Path(cache_dir or DEFAULT_CACHE_DIR) / OUTPUT_JAR


def cached_jar_valid(cache_dir: Path | None = None) -> bool:
    jar = jar_path(cache_dir)
    licenses = jar.parent / LICENSE_DIR
    names = [*LICENSE_MEMBERS.values(), *JAR_LICENSE_MEMBERS.values()]
    return jar.is_file() and sha256_of(jar) == OUTPUT_SHA256 and all((licenses / name).is_file() for name in names)


def pyspark_jsr310_jar() -> Path:
    """pyspark's ``jackson-datatype-jsr310`` jar (the installed pyspark 3.5.9), hash-checked."""
    try:
        import pyspark
    except ImportError:
        raise JarError("pyspark is not installed in this Python; run `make setup` first") from None
    jar = Path(pyspark.__file__).parent / "jars" / JSR310_JAR
    if not jar.is_file():
        raise JarError(f"{jar} is missing; reinstall pyspark==3.5.9 (`make setup`)")
    if sha256_of(jar) != JSR310_SHA256:
        raise JarError(f"{jar} has an unexpected SHA-256; is pyspark 3.5.9 installed?")
    return jar


def check_jarjar(jarjar: Path | None = None) -> Path:
    """Debian's jarjar (default ``JARJAR``), hash-checked."""
    jarjar = Path(jarjar or JARJAR)
    if not jarjar.is_file():
        raise JarError(f"{jarjar} is missing: install Debian's {JARJAR_PACKAGE} (`make setup` runs apt-get for it)")
    if sha256_of(jarjar) != JARJAR_SHA256:
        raise JarError(f"{jarjar} has an unexpected SHA-256; the build is pinned to {JARJAR_PACKAGE} 1.4+svn142-12")
    return jarjar


def _extract_checked(archive: zipfile.ZipFile, member: str, target: Path, sha256: str | None, what: str) -> Path:
    try:
        with archive.open(member) as src, open(target, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
    except KeyError:
        raise JarError(f"{what}: {member} is not in the archive") from None
    if sha256 is not None and sha256_of(target) != sha256:
        target.unlink()
        raise JarError(f"{what}: {member} failed SHA-256 verification")
    return target


def _classes_jar(source: Path, prefix: str, target: Path) -> int:
    """Copy the ``.class`` entries under ``prefix`` of ``source`` into a new jar (jarjar's input)."""
    count = 0
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as out:
        for info in src.infolist():
            if info.filename.startswith(prefix) and info.filename.endswith(".class"):
                out.writestr(info.filename, src.read(info))
                count += 1
    return count


def _relocate(jarjar: Path, inputs: list[Path], work: Path) -> dict[str, bytes]:
    """Run jarjar on each input; returns the relocated classes (name -> bytes) under ICEBERG_JACKSON."""
    rules = work / "rules.txt"
    rules.write_text("\n".join(RELOCATION_RULES) + "\n")
    relocated: dict[str, bytes] = {}
    for index, source in enumerate(inputs):
        out = work / f"relocated-{index}.jar"
        cmd = ["java", "-jar", str(jarjar), "process", str(rules), str(source), str(out)]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=JARJAR_TIMEOUT_S)
        if result.returncode != 0 or not out.is_file():
            tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
            raise JarError(f"jarjar failed on {source.name} (exit {result.returncode}): {tail[0]}")
        with zipfile.ZipFile(out) as jar:
            for info in jar.infolist():
                if info.filename.startswith(ICEBERG_JACKSON) and info.filename.endswith(".class"):
                    relocated[info.filename] = jar.read(info)
    return relocated


def assemble(runtime_jar: Path, relocated: dict[str, bytes], target: Path) -> None:
    """A copy of ``runtime_jar`` plus ``relocated``: upstream entries keep their bytes (appending to a
    zip rewrites only the central directory), added entries are sorted with fixed metadata."""
    shutil.copyfile(runtime_jar, target)
    with zipfile.ZipFile(target, "a", zipfile.ZIP_DEFLATED) as jar:
        existing = set(jar.namelist())
        clash = sorted(existing & set(relocated))
        if clash:
            raise JarError(f"the runtime jar already holds {clash[0]}: is this the pinned jar?")
        for name in sorted(relocated):
            info = zipfile.ZipInfo(name, date_time=ENTRY_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # unix, whatever the build host
            info.external_attr = ENTRY_MODE << 16
            jar.writestr(info, relocated[name], compresslevel=6)


def build(cache_dir: Path | None = None, quiet: bool = False, wheel: Path | None = None,
          jarjar: Path | None = None) -> Path:
    """Build the jar into ``cache_dir`` (default ``.local/jars/``) with its licence files; ``wheel``
    (a local copy of the pinned wheel) skips the download; ``jarjar`` defaults to Debian's."""
    cache_dir = Path(cache_dir or DEFAULT_CACHE_DIR)
    cache_dir.mkdir(parents=True, exist_ok=True)
    jarjar = check_jarjar(jarjar)
    jsr310 = pyspark_jsr310_jar()
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".iceberg-build-") as tmp:
        work = Path(tmp)
        if wheel is None:
            if not quiet:
                print(f"building the Iceberg runtime jar from the {WHEEL} wheel (77 MB, once) into {cache_dir}",
                      file=sys.stderr)
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q",
                   "-d", str(work), WHEEL]
            result = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
            wheel = work / WHEEL_FILE
            if not wheel.is_file():
                last = (result.stderr.strip().splitlines() or ["no output"])[-1]
                raise JarError(f"pip download {WHEEL} failed: {last}")
        if sha256_of(wheel) != WHEEL_SHA256:
            raise JarError(f"{wheel.name} has an unexpected SHA-256; refusing to use it")
        licenses = work / LICENSE_DIR
        licenses.mkdir()
        with zipfile.ZipFile(wheel) as archive:
            runtime = _extract_checked(archive, RUNTIME_MEMBER, work / "runtime.jar", RUNTIME_SHA256, wheel.name)
            for member, name in LICENSE_MEMBERS.items():
                _extract_checked(archive, member, licenses / name, None, wheel.name)
        with zipfile.ZipFile(runtime) as archive:
            for member, name in JAR_LICENSE_MEMBERS.items():
                _extract_checked(archive, member, licenses / name, None, runtime.name)
        with zipfile.ZipFile(jsr310) as archive:
            for member in ("META-INF/LICENSE", "META-INF/NOTICE"):
                _extract_checked(archive, member, licenses / f"jackson-datatype-jsr310-{member.rsplit('/', 1)[1]}",
                                 None, jsr310.name)
        parquet_jackson = work / "parquet-jackson.jar"
        if not _classes_jar(runtime, PARQUET_JACKSON, parquet_jackson):
            raise JarError(f"the runtime jar holds no classes under {PARQUET_JACKSON}")
        relocated = _relocate(jarjar, [parquet_jackson, jsr310], work)
        built = work / OUTPUT_JAR
        assemble(runtime, relocated, built)
        digest = sha256_of(built)
        if digest != OUTPUT_SHA256:
            raise JarError(f"the built jar has SHA-256 {digest}, not the recorded {OUTPUT_SHA256} "
                           "(another jarjar or zlib?); not installed")
        target_licenses = cache_dir / LICENSE_DIR
        if target_licenses.exists():
            shutil.rmtree(target_licenses)
        licenses.replace(target_licenses)
        built.replace(jar_path(cache_dir))
    return jar_path(cache_dir)


def ensure_jar(cache_dir: Path | None = None, quiet: bool = False) -> Path:
    """Return the verified jar's path, building it first if the cache is missing or corrupt."""
    if cached_jar_valid(cache_dir):
        return jar_path(cache_dir)
    return build(cache_dir, quiet=quiet)


def main() -> int:
    try:
        print(ensure_jar())
    except (JarError, subprocess.TimeoutExpired) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
