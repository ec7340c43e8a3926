import re

import pytest

from spark_jobs.runs.manifest import InvariantViolation, RunManifest, code_version, new_run_id


def _manifest(**counts):
    return RunManifest(run_id="r", dataset="iot", layer="silver", lake_uri="/l", started_at="t", code_version="v",
                       **counts)


def test_run_id_format():
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{8}", new_run_id())


def test_invariant_holds():
    manifest = _manifest(rows_in=10, rows_out=6, quarantined=3, duplicates=1)
    manifest.check_invariant()
    assert manifest.invariant_holds is True


def test_invariant_violation_fails_loudly_with_the_numbers():
    manifest = _manifest(rows_in=10, rows_out=6, quarantined=3, duplicates=0)
    with pytest.raises(InvariantViolation, match="rows_in=10 but rows_out=6 \\+ quarantined=3 \\+ duplicates=0 = 9"):
        manifest.check_invariant()
    assert manifest.invariant_holds is False


def test_code_version_is_stable_and_names_the_package():
    assert code_version() == code_version()
    assert re.fullmatch(r"spark_jobs-\d+\.\d+\.\d+\+[0-9a-f]{12}", code_version())
