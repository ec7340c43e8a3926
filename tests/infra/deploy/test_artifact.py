"""The artifact is deterministic, content-versioned, self-contained, and carries contracts + entrypoint."""
from __future__ import annotations

import ast
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from infra.deploy import artifact as art


@pytest.fixture
def package_copy(tmp_path) -> Path:
    """A private copy of spark_jobs, so other engineers' edits in the checkout cannot race the test."""
    dst = tmp_path / "src" / "spark_jobs"
    shutil.copytree(art.PACKAGE_DIR, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dst


def test_unchanged_tree_gives_the_same_bytes_and_version(tmp_path, package_copy):
    first = art.build_artifact(tmp_path / "b1", package_copy)
    # New mtimes and a stray bytecode cache must not change anything.
    for path in package_copy.rglob("*.py"):
        os.utime(path, (1_900_000_000, 1_900_000_000))
    (package_copy / "__pycache__").mkdir(exist_ok=True)
    (package_copy / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"junk")
    second = art.build_artifact(tmp_path / "b2", package_copy)
    assert first.zip_path.read_bytes() == second.zip_path.read_bytes()
    assert (first.version, first.sha256) == (second.version, second.sha256)
    assert len(first.version) == art.VERSION_LENGTH == 12
    assert first.zip_path == tmp_path / "b1" / first.version / "spark_jobs.zip"


def test_changed_code_or_contract_changes_the_version(tmp_path, package_copy):
    base = art.build_artifact(tmp_path / "b0", package_copy)
    (package_copy / "__init__.py").write_text((package_copy / "__init__.py").read_text() + "\n# changed\n")
    code_changed = art.build_artifact(tmp_path / "b1", package_copy)
    contract = next((package_copy / "contracts").glob("*.yaml"))
    contract.write_text(contract.read_text() + "\n# changed\n")
    contract_changed = art.build_artifact(tmp_path / "b2", package_copy)
    assert len({base.version, code_changed.version, contract_changed.version}) == 3
    assert len({base.sha256, code_changed.sha256, contract_changed.sha256}) == 3


def test_zip_holds_package_contracts_and_entrypoint_with_fixed_metadata(tmp_path, package_copy):
    built = art.build_artifact(tmp_path, package_copy)
    with zipfile.ZipFile(built.zip_path) as archive:
        infos = archive.infolist()
        names = [i.filename for i in infos]
        assert names == sorted(names) == list(built.files)
        assert "entrypoint.py" in names and "spark_jobs/__init__.py" in names
        assert "spark_jobs/contracts/iot.yaml" in names
        assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
        assert {i.date_time for i in infos} == {art.ZIP_EPOCH}
        assert archive.read("entrypoint.py") == art.ENTRYPOINT_SOURCE.read_bytes()
    assert set(art.datasets_in(built)) >= {"iot", "clickstream", "inventory"}
    assert built.entrypoint_path.read_bytes() == art.ENTRYPOINT_SOURCE.read_bytes()
    assert built.key_prefix == f"artifacts/spark_jobs/{built.version}/"


def test_entrypoint_imports_only_spark_jobs_and_calls_the_cli():
    tree = ast.parse(art.ENTRYPOINT_SOURCE.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
            if node.module == "spark_jobs.cli":
                assert [alias.name for alias in node.names] == ["main"]
    assert imported == {"sys", "spark_jobs"}
    assert "main(sys.argv[1:])" in art.ENTRYPOINT_SOURCE.read_text()


def test_missing_package_is_a_clear_error(tmp_path):
    with pytest.raises(art.ArtifactError, match="not a Python package"):
        art.build_artifact(tmp_path / "out", tmp_path / "nothing")


def test_the_zip_carries_the_tenant_model_spark_jobs_imports(tmp_path):
    """spark_jobs.landing.creds takes its bounds from tenant_model: a Python with only the zip on its path (as the
    EMR driver has) imports it from the zip, with no copy of the constants anywhere."""
    import subprocess
    import sys

    built = art.build_artifact(tmp_path)
    assert "tenant_model/__init__.py" in built.files
    probe = ("import sys; sys.path[:0] = [sys.argv[1]]; import spark_jobs.landing.creds as c; "
             "print(c.tenant_model.__file__, c.TTL_MAX_SECONDS, ','.join(c.INGEST_ALLOWED_PREFIXES))")
    result = subprocess.run([sys.executable, "-I", "-c", probe, str(built.zip_path)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    where, ttl, prefixes = result.stdout.split()
    assert where.startswith(str(built.zip_path)) and (int(ttl), prefixes) == (3600, "landing")
