"""infra/local/terraform_config.py and the Makefile's TF_CLI_CONFIG_FILE: the mirror where it exists, the
registry where it does not (checked by the config chosen, never by downloading), a user's own file always."""
from __future__ import annotations

import os
import subprocess

from infra.local import terraform_config as tc
from tests.conftest import REPO_ROOT


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CLI_CONFIG_FILE", tc.MIRROR_ENV)}
    return {**env, **extra}


def _make_sees(env: dict[str, str]) -> str:
    """What TF_CLI_CONFIG_FILE `make` exports to its recipes in ``env``."""
    result = subprocess.run(["make", "-s", "--eval", "show-tf-config:\n\t@echo $$TF_CLI_CONFIG_FILE", "show-tf-config"],
                            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_a_populated_mirror_selects_the_mirror_config(tmp_path):
    (tmp_path / "registry.terraform.io" / "hashicorp" / "aws").mkdir(parents=True)
    path, reason = tc.choose(_env(**{tc.MIRROR_ENV: str(tmp_path)}))
    assert path == tc.MIRROR_CONFIG and "provider mirror" in reason
    assert f'path    = "{tc.DEFAULT_MIRROR}"' in tc.MIRROR_CONFIG.read_text()


def test_without_a_mirror_the_registry_config_is_chosen_by_the_module_and_the_makefile(tmp_path):
    env = _env(**{tc.MIRROR_ENV: str(tmp_path)})  # an empty folder: no registry.terraform.io inside
    assert tc.choose(env)[0] == tc.REGISTRY_CONFIG
    assert _make_sees(env) == str(tc.REGISTRY_CONFIG)
    # The registry config installs providers the default way: no provider_installation block excludes it.
    assert "provider_installation" not in tc.REGISTRY_CONFIG.read_text()
    # terraform accepts the file (a config it cannot parse is reported on every command).
    check = subprocess.run(["terraform", "version"], env={**env, "TF_CLI_CONFIG_FILE": str(tc.REGISTRY_CONFIG)},
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0 and "Error" not in check.stderr, check.stderr


def test_a_users_own_config_file_wins_in_the_module_and_the_makefile(tmp_path):
    own = tmp_path / "my.tfrc"
    own.write_text("disable_checkpoint = true\n")
    env = _env(TF_CLI_CONFIG_FILE=str(own))
    assert tc.choose(env) == (own, "your TF_CLI_CONFIG_FILE")
    assert _make_sees(env) == str(own)


def test_a_config_that_does_not_exist_is_ignored(tmp_path):
    env = _env(TF_CLI_CONFIG_FILE=str(tmp_path / "missing.tfrc"), **{tc.MIRROR_ENV: str(tmp_path)})
    assert tc.choose(env)[0] == tc.REGISTRY_CONFIG
    assert _make_sees(env) == str(tc.REGISTRY_CONFIG)


def test_on_this_machine_the_mirror_is_used():
    if (tc.DEFAULT_MIRROR / "registry.terraform.io").is_dir():
        assert tc.choose(_env())[0] == tc.MIRROR_CONFIG
        assert _make_sees(_env()) == str(tc.MIRROR_CONFIG)
    else:
        assert tc.choose(_env())[0] == tc.REGISTRY_CONFIG
