"""bench.common.PeakRss on a real process tree."""
from __future__ import annotations

import subprocess
import sys
import time

from bench.common import PeakRss

# A stand-in JVM: an interpreter started under the name "java" that holds 300 MB, then forks (no exec)
# a child that lives for a while, as the JVM does for an instant each time Hadoop runs a shell command
# (the JVM's fork is named after the forking thread; its command line is the JVM's).
FAKE_JVM = """
import os, sys, time
block = bytearray(300 * 2**20)
for i in range(0, len(block), 4096):
    block[i] = 1
pid = os.fork()
if pid == 0:
    open("/proc/self/comm", "w").write("Executor task l")  # as a JVM thread's fork is named
    open(sys.argv[1], "w").write("forked")
    time.sleep(3)
    os._exit(0)
os.waitpid(pid, 0)
"""


def test_a_forked_jvm_child_is_not_counted_twice(tmp_path):
    java = tmp_path / "java"
    java.symlink_to(sys.executable)
    marker = tmp_path / "forked"
    launcher = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.run(sys.argv[1:])",
                                 str(java), "-c", FAKE_JVM, str(marker)])
    with PeakRss(pid=launcher.pid, interval=0.05) as rss:
        launcher.wait(timeout=60)
        time.sleep(0.1)
    assert marker.read_text() == "forked"  # the fork existed while sampled
    assert 290 <= rss.peak_jvm_mb < 450, rss.peak_jvm_mb  # the 300 MB once, not twice
    assert rss.peak_total_mb < rss.peak_jvm_mb + rss.peak_python_mb + 50
