"""infra/terragrunt/fixture_network.py and infra/local/network/fixture_ids.py: the fixture VPC id moto gives."""
from __future__ import annotations

from infra.local.network import fixture_ids


def test_fixture_vpc_id_is_what_moto_generates_after_the_seed():
    """Same generator moto uses (moto.ec2.utils.random_vpc_id over mock_random), seeded the same way."""
    from moto.ec2 import utils as ec2_utils
    from moto.moto_api._internal import mock_random

    state = mock_random.getstate()
    try:
        mock_random.seed(fixture_ids.fixture_seed("acme"))
        assert ec2_utils.random_vpc_id() == fixture_ids.fixture_vpc_id("acme")
    finally:
        mock_random.setstate(state)
