"""modules/kms.py: rotation, deletion window, alias and the explicit key policy."""
from __future__ import annotations

from modules.kms import KEY_DATA_ACTIONS, KEY_READ_ACTIONS, KEY_USE_ACTIONS, TenantKeyConfig
from modules.policy_document import ListExpr
from tests.modules.helpers import json_policy_statements, resource
from tests.modules.test_bucket_policy import ADMINS, FIREHOSE_ROLES, TENANT_ROLES

PARTITION = "${data.aws_partition.inputs_partition.partition}"


def test_documented_defaults():
    cfg = TenantKeyConfig(alias="a", partition="aws", region="r", account_id="1", writer_role_arns=[],
                          reader_role_arns=[], allowed_principal_arns=ListExpr("${[]}"), log_group_name="g", tags={})
    assert cfg.deletion_window_in_days == 30 and cfg.enable_key_rotation is True


def test_key_rotates_and_has_an_alias(tenant_module):
    key = resource(tenant_module, "aws_kms_key", "kms_key")
    assert key["enable_key_rotation"] is True
    assert key["deletion_window_in_days"] == 30
    assert key["tags"] == "${local.resource_tags}"
    alias = resource(tenant_module, "aws_kms_alias", "kms_alias")
    assert alias == {**alias, "name": "alias/${var.tenant_id}-lake", "target_key_id": "${aws_kms_key.kms_key.key_id}"}


def test_key_policy_root_administers_writers_use_readers_decrypt_and_no_one_else_uses(tenant_module):
    statements = json_policy_statements(resource(tenant_module, "aws_kms_key", "kms_key")["policy"])
    assert list(statements) == ["AccountRootAdministersKey", "TenantWritersUseKey", "TenantReadersDecrypt",
                                "CloudWatchLogsEncryptsTenantLogGroup", "S3InventoryEncryptsReports",
                                # issue 54: the orchestration's services (tests/modules/test_alerts_topic.py)
                                "AlertServicesUseKeyForTenantTopic", "CloudWatchLogsEncryptsPipelineLogGroup",
                                "DenyKeyUseOutsideTenant"]
    root = statements["AccountRootAdministersKey"]
    assert root["Principal"] == {"AWS": f"arn:{PARTITION}:iam::${{var.account_id}}:root"}
    assert root["Action"] == ["kms:*"]
    writers = statements["TenantWritersUseKey"]
    assert writers["Principal"] == {"AWS": ["${aws_iam_role.roles_job_execution.arn}",
                                            "${aws_iam_role.roles_ingest_writer.arn}",
                                            "${aws_iam_role.roles_erasure.arn}"]}
    assert writers["Action"] == list(KEY_USE_ACTIONS)
    assert not any(a in writers["Action"] for a in ("kms:*", "kms:PutKeyPolicy", "kms:ScheduleKeyDeletion", "kms:CreateGrant"))
    readers = statements["TenantReadersDecrypt"]
    assert readers["Principal"] == {"AWS": ["${aws_iam_role.roles_consumer.arn}"]}
    assert readers["Action"] == list(KEY_READ_ACTIONS) == ["kms:Decrypt", "kms:DescribeKey"]
    logs = statements["CloudWatchLogsEncryptsTenantLogGroup"]
    assert logs["Principal"] == {"Service": "logs.${var.region}.amazonaws.com"}
    assert logs["Condition"] == {"ArnEquals": {"kms:EncryptionContext:aws:logs:arn":
                                 f"arn:{PARTITION}:logs:${{var.region}}:${{var.account_id}}:log-group:/tenantlake/${{var.tenant_id}}/emr"}}
    # Root's kms:* lets any identity policy of the account grant the key: the allow-list stops other tenants.
    deny = statements["DenyKeyUseOutsideTenant"]
    assert deny["Effect"] == "Deny" and deny["Principal"] == {"AWS": "*"} and deny["Resource"] == "*"
    assert deny["Action"] == list(KEY_DATA_ACTIONS) == ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey*",
                                                        "kms:ReEncrypt*"]
    # With a maintenance schedule, its scheduler role too (it decrypts the schedule's input; the lake does not name it);
    # and the readers of personal data (their query results are SSE-KMS with the key: issue 52).
    scheduler = ('var.maintenance_schedule.enabled ? ["arn:${data.aws_partition.inputs_partition.partition}:iam::'
                 '${var.account_id}:role/${var.tenant_id}-maintenance-scheduler"] : []')
    # With orchestration, the state machine's role (it publishes alerts through SNS) and the schedules' (their input
    # and dead-letter queue).
    role = 'arn:${data.aws_partition.inputs_partition.partition}:iam::${var.account_id}:role/${var.tenant_id}-pipeline'
    orchestration = f'var.orchestration.enabled ? ["{role}-runner", "{role}-scheduler"] : []'
    assert deny["Condition"] == {"ArnNotLike": {"aws:PrincipalArn": [
        f"list:concat({TENANT_ROLES}, {FIREHOSE_ROLES}, {ADMINS}, {scheduler}, "
        f"var.lake_formation.personal_data_reader_arns, {orchestration})"]},
                                 "Bool": {"aws:PrincipalIsAWSService": ["false"]}}
