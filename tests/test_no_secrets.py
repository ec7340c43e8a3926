"""The repository holds no secrets: detect-secrets scans every tracked file and must find nothing.

Deliberate dummies (the emulator's "testing" keys, public SHA-256 digests, the JVM's conventional
trust-store password) carry an inline ``pragma: allowlist secret`` comment saying why, so each
exception is visible where it is made. JSON cannot carry a comment: the benchmark results record the
git commit and the module's SHA-256 (public digests), and exactly those two keys, holding nothing but
hex of digest length, are excluded by ``DIGEST_LINES``.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DETECT_SECRETS = Path(sys.executable).with_name("detect-secrets")
DIGEST_LINES = r'^\s*"(commit|module_sha256)": "([0-9a-f]{40}|[0-9a-f]{64})",?$'


def test_no_secrets_in_tracked_files():
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    assert len(files) > 50
    scan = subprocess.run([str(DETECT_SECRETS), "scan", "--exclude-lines", DIGEST_LINES, *files], cwd=REPO, capture_output=True, text=True, check=True)
    findings = {path: [(hit["line_number"], hit["type"]) for hit in hits]
                for path, hits in json.loads(scan.stdout)["results"].items()}
    assert findings == {}


def test_the_scanner_does_fire(tmp_path):
    planted = tmp_path / "leak.py"
    planted.write_text('aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"\n')  # pragma: allowlist secret - a deliberate plant
    scan = subprocess.run([str(DETECT_SECRETS), "scan", planted.name], cwd=tmp_path, capture_output=True, text=True,
                          check=True)
    assert json.loads(scan.stdout)["results"], "detect-secrets must flag a planted key, or the test above proves nothing"


def test_the_digest_exclusion_is_narrow(tmp_path):
    """Only a bare commit/module digest line is excluded; the same key holding a key-like value is not."""
    planted = tmp_path / "result.json"
    planted.write_text('{\n  "commit": "225a62613f32188b8c9d20c4a3f3281f95dbdab6",\n'  # pragma: allowlist secret - a plant
                       '  "commit_token": "225a62613f32188b8c9d20c4a3f3281f95dbdab6"\n}\n')  # pragma: allowlist secret - a deliberate plant
    scan = subprocess.run([str(DETECT_SECRETS), "scan", "--exclude-lines", DIGEST_LINES, planted.name], cwd=tmp_path,
                          capture_output=True, text=True, check=True)
    lines = [hit["line_number"] for hit in json.loads(scan.stdout)["results"].get(planted.name, [])]
    assert lines == [3]
