"""infra/terragrunt/terraform.py: what reaches terraform, as Terragrunt passes it."""
from __future__ import annotations

import time

import hcl2
import pytest

from infra import terragrunt as tg
from infra.terragrunt import terraform
from infra.terragrunt.errors import TerragruntError
from tests.infra.terragrunt.conftest import TENANTS


def test_backend_config_file_is_valid_hcl_with_the_same_settings(tmp_path):
    config = tg.load_tenant("acme", TENANTS).backend_config
    path = tmp_path / "backend.hcl"
    path.write_text(terraform.backend_hcl(config))
    with open(path) as fh:
        parsed = hcl2.load(fh, serialization_options=hcl2.SerializationOptions(strip_string_quotes=True))
    assert parsed == config


def test_inputs_become_tf_vars_like_terragrunt():
    tf_vars = terraform.tf_vars({"region": "eu-west-1", "vpc_ids": ["vpc-1"], "tags": {"a": "b"}})
    assert tf_vars == {"TF_VAR_region": "eu-west-1", "TF_VAR_vpc_ids": '["vpc-1"]', "TF_VAR_tags": '{"a": "b"}'}


def test_a_command_past_its_timeout_is_stopped_and_reported_in_one_line(tmp_path):
    printed: list[str] = []
    started = time.monotonic()
    with pytest.raises(TerragruntError) as err:
        terraform.stream(["bash", "-c", "echo working; exec sleep 60"], tmp_path, {"PATH": "/usr/bin:/bin"}, printed.append,
               timeout=1)
    assert time.monotonic() - started < 30
    assert printed == ["working"]
    assert str(err.value) == f"bash -c in {tmp_path} did not finish within 1 s and was stopped"


def test_a_command_within_its_timeout_returns_its_exit_code(tmp_path):
    assert terraform.stream(["bash", "-c", "exit 3"], tmp_path, {"PATH": "/usr/bin:/bin"}, print, timeout=30) == 3
