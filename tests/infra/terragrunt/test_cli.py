"""infra/terragrunt/cli.py: the commands behind the make targets refuse bad input before anything runs."""
from __future__ import annotations

import os
import subprocess
import sys

from infra.terragrunt import cli
from tests import shell
from tests.infra.terragrunt.conftest import REPO, SAMPLE_TENANTS, tenant_file, write_tenant


def test_validate_command_checks_every_sample_tenant():
    for name in SAMPLE_TENANTS:
        assert cli.main(["validate", "--tenant", name]) == 0


def test_make_plan_unknown_tenant_fails_in_one_line_and_changes_nothing(tmp_path):
    result = shell.make("plan", "TENANT=nope", timeout=120, env={"TENANTLAKE_STATE_DIR": str(tmp_path)})
    assert result.returncode != 0
    ours = [line for line in result.stderr.splitlines() if not line.startswith("make:")]
    assert ours == ["error: unknown tenant 'nope': no tenants/nope/terragrunt.hcl (tenants: acme, globex, initech)"]
    assert list(tmp_path.iterdir()) == []  # no emulator started, no working dir


def test_make_plan_bad_tenant_file_fails_before_anything_runs(tmp_path, scratch_tenants):
    write_tenant(scratch_tenants, "badco", tenant_file("badco", "us-east-1", '"gdpr"'))
    result = shell.make("apply", "TENANT=badco", f"TENANTS_DIR={scratch_tenants}", timeout=120,
                        env={"TENANTLAKE_STATE_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "error: tenant 'badco': region: us-east-1 is outside the EU but data_classification includes gdpr" \
        in result.stderr.splitlines()
    assert list(tmp_path.iterdir()) == []


def test_env_never_prints_real_credentials(tmp_path):
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # pragma: allowlist secret - AWS's documented example
    key_id = "AKIAIOSFODNN7EXAMPLE"  # pragma: allowlist secret - AWS's documented example
    env = {**os.environ, "TENANTLAKE_ENV": "aws", "TENANTLAKE_STATE_ACCOUNT_ID": "123456789012",
           "TENANTLAKE_STATE_DIR": str(tmp_path), "AWS_ACCESS_KEY_ID": key_id,
           "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": "token-of-a-real-session"}
    result = subprocess.run([sys.executable, "-m", "infra.terragrunt", "env"], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "export TENANTLAKE_ENV=aws" in result.stdout and "export TF_CLI_CONFIG_FILE=" in result.stdout
    for value in (secret, key_id, "token-of-a-real-session"):
        assert value not in result.stdout + result.stderr
    assert "AWS credentials: not printed" in result.stdout
