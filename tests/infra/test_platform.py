"""infra/platform.py: the platform network's inputs, rules and names, in plain Python."""
from __future__ import annotations

import dataclasses

import pytest

from infra import platform as model

GOOD = {"region": "eu-west-1", "tenants": {"acme": "123456789012", "globex": "123456789012"},
        "create_fixture_vpc": True}


def test_documented_defaults():
    cfg = model.from_inputs(GOOD, "_platform/network")
    defaults = {f.name: f.default for f in dataclasses.fields(model.PlatformNetworkConfig)
                if f.default is not dataclasses.MISSING}
    assert defaults == {"vpc_ids": (), "create_fixture_vpc": False, "name": "tenantlake", "cluster_read_buckets": (),
                        "environment": "local", "cost_center": "data-platform"}
    assert cfg.tags == {}


def test_names_of_what_the_policies_allow():
    cfg = model.from_inputs(GOOD, "_platform/network")
    assert cfg.lake_bucket_names() == ["acme-eu-west-1-lake", "globex-eu-west-1-lake"]
    assert cfg.kms_aliases() == ["alias/acme-lake", "alias/globex-lake"]
    assert cfg.read_buckets() == ["prod-eu-west-1-starport-layer-bucket", "al2023-repos-eu-west-1-de612dc2"]


@pytest.mark.parametrize("overrides, field, text", [
    ({"create_fixture_vpc": False}, "vpc_ids", "list the cluster's VPC ids in vpc_ids, or set create_fixture_vpc"),
    ({"vpc_ids": ["vpc-0123456789abcdef0"]}, "vpc_ids", "not both"),
    ({"environment": "prod"}, "create_fixture_vpc", "local emulator only (environment local), not prod"),
    ({"create_fixture_vpc": False, "vpc_ids": ["vpc-1"]}, "vpc_ids", "'vpc-1' is not a VPC id"),
    ({"tenants": {}}, "tenants", "must map at least one tenant id"),
    ({"tenants": {"Acme": "123456789012"}}, "tenants", "must map at least one tenant id"),
    ({"tenants": {"acme": "1234"}}, "tenants", "12-digit account id"),
    ({"region": "mars"}, "region", "is not an AWS region name"),
    ({"name": "X"}, "name", "must be 3-31 characters"),
    ({"cluster_read_buckets": ["Not_A_Bucket"]}, "cluster_read_buckets", "must be an S3 bucket name"),
    ({"colour": "red"}, "colour", "unknown input"),
    ({"create_fixture_vpc": "yes"}, "create_fixture_vpc", "must be true or false"),
])
def test_bad_inputs_give_one_line_errors_naming_the_unit_and_field(overrides, field, text):
    with pytest.raises(model.PlatformConfigError) as err:
        model.from_inputs({**GOOD, **overrides}, "_platform/network")
    assert err.value.field == field and text in str(err.value)
    assert str(err.value).startswith("unit '_platform/network': ") and "\n" not in str(err.value)


def test_missing_tenants_is_required():
    with pytest.raises(model.PlatformConfigError, match=r"^unit 'x': tenants: is required$"):
        model.from_inputs({"region": "eu-west-1", "create_fixture_vpc": True}, "x")
