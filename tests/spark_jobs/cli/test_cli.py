"""The CLI's help and argument errors, through the real entry point (no Spark is started)."""
import subprocess
import sys

import pytest

from spark_jobs.cli import main
from tests.conftest import REPO_ROOT


@pytest.mark.parametrize("args", [[], ["datagen"], ["run"], ["run-all"], ["counts"]])
def test_help_everywhere(args):
    result = subprocess.run([sys.executable, "-m", "spark_jobs", *args, "--help"], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "usage: python -m spark_jobs" in result.stdout
    if args in (["run"], ["run-all"]):
        assert "--lake-uri" in result.stdout and "--tenant" in result.stdout and "--date" in result.stdout


def test_missing_lake_is_a_one_line_usage_error(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path))
    assert main(["run", "--dataset", "iot", "--layer", "silver"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: say which lake: --lake-uri URI (with --kms-key-arn), --lake-config FILE or --tenant T")
    assert main(["run", "--dataset", "iot", "--layer", "silver", "--tenant", "acme"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: lake config ") and err.endswith("does not exist; run `make apply TENANT=acme` first")


def test_s3_lake_without_a_key_is_refused(capsys):
    assert main(["datagen", "--dataset", "iot", "--lake-uri", "s3a://bucket"]) == 2
    assert "--kms-key-arn is required" in capsys.readouterr().err


def test_datagen_writes_a_local_landing_folder(tmp_path, capsys):
    assert main(["datagen", "--dataset", "clickstream", "--lake-uri", str(tmp_path), "--records", "30",
                 "--truth-file", str(tmp_path / "truth.json")]) == 0
    assert len(list((tmp_path / "landing" / "clickstream").glob("*.jsonl"))) == 3
    assert (tmp_path / "truth.json").is_file()
    assert "clickstream: 3 files, 30 records" in capsys.readouterr().out


def test_a_run_whose_report_cannot_be_written_exits_1_in_one_line(tmp_path, monkeypatch, capsys):
    lake = tmp_path / "lake"
    assert main(["datagen", "--dataset", "iot", "--lake-uri", str(lake), "--records", "20"]) == 0
    blocker = tmp_path / "state-is-a-file"
    blocker.write_text("")
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(blocker))
    capsys.readouterr()
    assert main(["run", "--dataset", "iot", "--layer", "bronze", "--lake-uri", str(lake)]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "data-quality report of run" in errors[0] and "not written" in errors[0]
    # The data and the manifest are there: only the report is missing, and the exit code says so.
    assert list((lake / "bronze" / "iot").rglob("*.parquet"))
    assert list((lake / "reports" / "bronze" / "iot").glob("*/manifest.json"))


def test_a_refused_connection_with_the_driver_alive_is_not_a_dead_driver():
    """boto3's ConnectionRefusedError (an emulator gone) while this process's JVM, if any, still runs: not
    the driver. py4j's own network error is (the JVM-kill test in tests/reliability covers the rest)."""
    from py4j.protocol import Py4JNetworkError

    from spark_jobs.cli.errors import driver_gone

    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except ConnectionRefusedError as refused:
            raise RuntimeError("Could not connect to the endpoint URL") from refused
    except RuntimeError as exc:
        assert not driver_gone(exc)
    wrapped = RuntimeError("call failed")
    wrapped.__cause__ = Py4JNetworkError("Answer from Java side is empty")
    assert driver_gone(wrapped)


def test_erase_on_a_folder_lake_is_one_line_before_any_jvm(capsys, tmp_path):
    """An erasure needs object versions; a folder lake is refused first (no session line: no JVM started)."""
    assert main(["erase", "--lake-uri", str(tmp_path / "lake"), "--subject", "user_id=user-0001"]) == 2
    assert capsys.readouterr().err.strip() == f"error: erase works on an S3 lake (a versioned bucket), not {tmp_path / 'lake'}"
