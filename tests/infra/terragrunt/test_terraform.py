"""infra/terragrunt/terraform.py: what reaches terraform, as Terragrunt passes it."""
from __future__ import annotations

import hcl2

from infra import terragrunt as tg
from infra.terragrunt import terraform
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
