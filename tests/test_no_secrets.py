"""The repository holds no secrets: detect-secrets scans every tracked file and must find nothing.

Deliberate dummies (the emulator's "testing" keys, public SHA-256 digests, the JVM's conventional
trust-store password) carry an inline ``pragma: allowlist secret`` comment saying why, so each
exception is visible where it is made.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DETECT_SECRETS = Path(sys.executable).with_name("detect-secrets")


def test_no_secrets_in_tracked_files():
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    assert len(files) > 50
    scan = subprocess.run([str(DETECT_SECRETS), "scan", *files], cwd=REPO, capture_output=True, text=True, check=True)
    findings = {path: [(hit["line_number"], hit["type"]) for hit in hits]
                for path, hits in json.loads(scan.stdout)["results"].items()}
    assert findings == {}


def test_the_scanner_does_fire(tmp_path):
    planted = tmp_path / "leak.py"
    planted.write_text('aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"\n')  # pragma: allowlist secret - a deliberate plant
    scan = subprocess.run([str(DETECT_SECRETS), "scan", planted.name], cwd=tmp_path, capture_output=True, text=True,
                          check=True)
    assert json.loads(scan.stdout)["results"], "detect-secrets must flag a planted key, or the test above proves nothing"
