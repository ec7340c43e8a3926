"""modules/kms.py: rotation, deletion window, alias and the explicit key policy."""
from __future__ import annotations

from modules.kms import KEY_USE_ACTIONS, TenantKeyConfig
from tests.modules.helpers import json_policy_statements, resource

PARTITION = "${data.aws_partition.inputs_partition.partition}"


def test_documented_defaults():
    cfg = TenantKeyConfig(alias="a", partition="aws", region="r", account_id="1", user_role_arns=[],
                          log_group_name="g", tags={})
    assert cfg.deletion_window_in_days == 30 and cfg.enable_key_rotation is True


def test_key_rotates_and_has_an_alias(tenant_module):
    key = resource(tenant_module, "aws_kms_key", "kms_key")
    assert key["enable_key_rotation"] is True
    assert key["deletion_window_in_days"] == 30
    assert key["tags"] == "${local.resource_tags}"
    alias = resource(tenant_module, "aws_kms_alias", "kms_alias")
    assert alias == {**alias, "name": "alias/${var.tenant_id}-lake", "target_key_id": "${aws_kms_key.kms_key.key_id}"}


def test_key_policy_root_administers_roles_only_use(tenant_module):
    statements = json_policy_statements(resource(tenant_module, "aws_kms_key", "kms_key")["policy"])
    assert list(statements) == ["AccountRootAdministersKey", "TenantRolesUseKey", "CloudWatchLogsEncryptsTenantLogGroup"]
    root = statements["AccountRootAdministersKey"]
    assert root["Principal"] == {"AWS": f"arn:{PARTITION}:iam::${{var.account_id}}:root"}
    assert root["Action"] == ["kms:*"]
    roles = statements["TenantRolesUseKey"]
    assert roles["Principal"] == {"AWS": ["${aws_iam_role.roles_job_execution.arn}",
                                          "${aws_iam_role.roles_ingest_writer.arn}",
                                          "${aws_iam_role.roles_consumer.arn}"]}
    assert roles["Action"] == list(KEY_USE_ACTIONS)
    assert not any(a in roles["Action"] for a in ("kms:*", "kms:PutKeyPolicy", "kms:ScheduleKeyDeletion", "kms:CreateGrant"))
    logs = statements["CloudWatchLogsEncryptsTenantLogGroup"]
    assert logs["Principal"] == {"Service": "logs.${var.region}.amazonaws.com"}
    assert logs["Condition"] == {"ArnEquals": {"kms:EncryptionContext:aws:logs:arn":
                                 f"arn:{PARTITION}:logs:${{var.region}}:${{var.account_id}}:log-group:/tenantlake/${{var.tenant_id}}/emr"}}
