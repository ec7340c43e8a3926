"""modules/lifecycle.py: every documented lifecycle default, rule by rule."""
from __future__ import annotations

from tenant_model import DEFAULT_RETENTION_DAYS
from modules.lifecycle import LifecycleConfig
from tests.modules.helpers import resource

BUCKET_WIDE = {"id": "all", "status": "Enabled", "filter": [{"prefix": ""}],
               "abort_incomplete_multipart_upload": [{"days_after_initiation": 7}],
               "noncurrent_version_expiration": [{"noncurrent_days": 30}]}


def _rules(module, name):
    return {r["id"]: r for r in resource(module, "aws_s3_bucket_lifecycle_configuration", name)["rule"]}


def test_documented_defaults():
    cfg = LifecycleConfig(bucket="b", expiry_days={})
    assert (cfg.abort_multipart_days, cfg.noncurrent_days, cfg.checkpoint_noncurrent_days) == (7, 30, 7)
    assert cfg.transitions == {"bronze": ((30, "STANDARD_IA"), (90, "GLACIER_IR")),
                               "silver": ((90, "STANDARD_IA"),), "gold": ((0, "INTELLIGENT_TIERING"),)}
    assert DEFAULT_RETENTION_DAYS == {"landing": 30, "bronze": 365, "quarantine": 30, "logs": 90, "snapshots": 7}


def test_lake_rules(tenant_module):
    rules = _rules(tenant_module, "lake_lifecycle_configuration")
    assert resource(tenant_module, "aws_s3_bucket_lifecycle_configuration", "lake_lifecycle_configuration")[
        "bucket"] == "${aws_s3_bucket.lake_bucket.id}"
    assert list(rules) == ["all", "landing", "bronze", "silver", "gold", "quarantine", "checkpoints", "logs", "athena"]
    assert rules["all"] == BUCKET_WIDE
    assert rules["landing"] == {"id": "landing", "status": "Enabled", "filter": [{"prefix": "landing/"}],
                                "expiration": [{"days": '${local.retention["landing"]}'}]}
    assert rules["bronze"] == {"id": "bronze", "status": "Enabled", "filter": [{"prefix": "bronze/"}],
                               "transition": [{"days": 30, "storage_class": "STANDARD_IA"},
                                              {"days": 90, "storage_class": "GLACIER_IR"}],
                               "expiration": [{"days": '${local.retention["bronze"]}'}]}
    assert rules["silver"] == {"id": "silver", "status": "Enabled", "filter": [{"prefix": "silver/"}],
                               "transition": [{"days": 90, "storage_class": "STANDARD_IA"}]}
    assert rules["gold"] == {"id": "gold", "status": "Enabled", "filter": [{"prefix": "gold/"}],
                             "transition": [{"days": 0, "storage_class": "INTELLIGENT_TIERING"}]}
    assert rules["quarantine"] == {"id": "quarantine", "status": "Enabled", "filter": [{"prefix": "quarantine/"}],
                                   "expiration": [{"days": '${local.retention["quarantine"]}'}]}
    assert rules["checkpoints"] == {"id": "checkpoints", "status": "Enabled", "filter": [{"prefix": "checkpoints/"}],
                                    "noncurrent_version_expiration": [{"noncurrent_days": 7}]}
    # EMR job logs (the logUri of every job run) expire with the CloudWatch log group's retention.
    assert rules["logs"] == {"id": "logs", "status": "Enabled", "filter": [{"prefix": "logs/"}],
                             "expiration": [{"days": '${local.retention["logs"]}'}]}
    # Athena query results expire like the job logs.
    assert rules["athena"] == {"id": "athena", "status": "Enabled", "filter": [{"prefix": "athena/"}],
                               "expiration": [{"days": '${local.retention["logs"]}'}]}


def test_log_bucket_rule_expires_at_logs_retention(tenant_module):
    rules = _rules(tenant_module, "log_lifecycle_configuration")
    assert rules == {"all": {**BUCKET_WIDE, "expiration": [{"days": '${local.retention["logs"]}'}]}}
