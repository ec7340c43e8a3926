"""tests/shell.py, the one command runner of the terratest-style tests: exit status, separate streams, the
caller's environment, and a hard timeout that stops the command's whole process group and says so."""
from __future__ import annotations

import os
import time

import pytest

from tests import shell


def test_streams_stay_apart_and_the_exit_status_is_the_commands():
    result = shell.run(["bash", "-c", "echo out; echo err >&2; exit 3"], timeout=30)
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert result.tail().splitlines() == ["`bash -c 'echo out; echo err >&2; exit 3'` exited 3; its last 2 line(s):",
                                          "out", "err"]


def test_the_environment_is_the_callers():
    os.environ["TENANTLAKE_SHELL_PROBE"] = "set after the session started"
    try:
        inherited = shell.run(["printenv", "TENANTLAKE_SHELL_PROBE"], timeout=30, env={"EXTRA": "x y"}).check()
        assert inherited.stdout == "set after the session started\n"
        alone = shell.run(["/usr/bin/env"], timeout=30, env={"ONLY": "it's \"quoted\"\nand two lines"}, inherit=False)
        assert alone.stdout == "ONLY=it's \"quoted\"\nand two lines\n"
    finally:
        del os.environ["TENANTLAKE_SHELL_PROBE"]


def test_a_command_past_its_timeout_is_stopped_with_its_children_and_the_failure_says_so(tmp_path):
    marker = tmp_path / "child.pid"
    started = time.monotonic()
    result = shell.run(["bash", "-c", f"echo started; sleep 60 & echo $! > {marker}; wait"], timeout=2)
    assert time.monotonic() - started < 20
    assert result.timed_out and result.stdout == "started\n"
    assert result.tail().startswith("`bash -c ") and "timed out after 2 s; its last 1 line(s):\nstarted" in result.tail()
    child = int(marker.read_text())
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{child}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{child}")  # the command's child was stopped too
    assert shell.run(["true"], timeout=30).returncode == 0  # the session still runs commands


def test_check_fails_the_test_with_the_tail():
    with pytest.raises(pytest.fail.Exception) as failed:
        shell.run(["bash", "-c", "seq 1 50; exit 1"], timeout=30).check(lines=3)
    assert str(failed.value) == "`bash -c 'seq 1 50; exit 1'` exited 1; its last 3 line(s):\n48\n49\n50"


def test_tail_keeps_earlier_lines_that_matter():
    result = shell.run(["bash", "-c", "echo adopting 2; seq 1 40; exit 2"], timeout=30)
    assert result.tail(lines=2, also="adopting").splitlines() == [
        "`bash -c 'echo adopting 2; seq 1 40; exit 2'` exited 2; its last 2 line(s):", "adopting 2", "...", "39", "40"]
