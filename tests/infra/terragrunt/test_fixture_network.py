"""infra/terragrunt/fixture_network.py and infra/local/network/fixture_ids.py: the suggested fixture VPC ids."""
from __future__ import annotations

import re

import tenant_model
from infra.local.network import fixture_ids


def test_suggested_fixture_vpc_ids_are_valid_stable_and_distinct():
    ids = {fixture_ids.fixture_vpc_id(t, i) for t in ("acme", "globex", "initech") for i in range(3)}
    assert len(ids) == 9
    assert all(re.match(tenant_model.VPC_ID_RE, v) for v in ids)
    assert fixture_ids.fixture_vpc_id("acme") == fixture_ids.fixture_vpc_id("acme", 0)
    assert fixture_ids.main(["id", "acme"]) == 0
