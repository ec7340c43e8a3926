"""The s3a jar cache: verified by SHA-256 before use; corruption is detected, a bad sdist refused."""
from __future__ import annotations

import shutil
import tarfile

import pytest

from infra.local import s3a_jars


@pytest.fixture(scope="module")
def jars():
    return s3a_jars.ensure_jars(quiet=True)


def test_cached_jars_are_the_pinned_ones(jars):
    assert [p.name for p in jars] == list(s3a_jars.JARS)
    for path in jars:
        assert s3a_jars.sha256_of(path) == s3a_jars.JARS[path.name]


def test_corrupted_cache_is_detected(jars, tmp_path):
    for path in jars:
        shutil.copy(path, tmp_path / path.name)
    assert s3a_jars.cached_jars_valid(tmp_path)
    with open(tmp_path / "hadoop-aws-3.3.1.jar", "r+b") as fh:
        fh.seek(100)
        fh.write(b"tampered")
    assert not s3a_jars.cached_jars_valid(tmp_path)


def test_sdist_with_wrong_hash_is_refused(tmp_path):
    fake = tmp_path / s3a_jars.SDIST_FILE
    with tarfile.open(fake, "w:gz") as tar:
        payload = tmp_path / "hadoop-aws-3.3.1.jar"
        payload.write_bytes(b"not the real jar")
        tar.add(payload, arcname="sagemaker_pyspark-1.4.5/deps/jars/hadoop-aws-3.3.1.jar")
    out = tmp_path / "cache"
    out.mkdir()
    with pytest.raises(s3a_jars.JarError, match="unexpected SHA-256"):
        s3a_jars._extract(fake, out)
    assert list(out.iterdir()) == []
