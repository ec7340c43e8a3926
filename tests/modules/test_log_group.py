"""modules/log_group.py: encrypted with the tenant key, retention from retention_days["logs"]."""
from __future__ import annotations

from tests.modules.helpers import resource


def test_log_group(tenant_module):
    lg = resource(tenant_module, "aws_cloudwatch_log_group", "log_group_log_group")
    assert lg["name"] == "/tenantlake/${var.tenant_id}/emr"
    assert lg["kms_key_id"] == "${aws_kms_key.kms_key.arn}"
    assert lg["retention_in_days"] == '${local.retention["logs"]}'
