"""modules/policy_document.py: the JSON rendering of typed statements."""
from __future__ import annotations

import json

import pytest

from modules.policy_document import Condition, ListExpr, Principal, Statement, policy_json


def test_policy_json_renders_principals_conditions_and_list_expressions():
    text = policy_json([
        Statement("A", ["s3:*"], ["arn:b", "arn:b/*"], effect="Deny", principals=[Principal("*", ["*"])],
                  conditions=[Condition("Bool", "aws:SecureTransport", ["false"]),
                              Condition("StringNotEquals", "aws:SourceVpce", ListExpr("${var.ids}"))]),
        Statement("B", ["kms:Decrypt"], "*", principals=[Principal("AWS", "arn:root")]),
    ])
    assert '"aws:SourceVpce": ${jsonencode(var.ids)}' in text
    doc = json.loads(text.replace("${jsonencode(var.ids)}", '["x"]'))
    assert doc["Statement"][0] == {"Sid": "A", "Effect": "Deny", "Principal": "*", "Action": ["s3:*"],
                                   "Resource": ["arn:b", "arn:b/*"],
                                   "Condition": {"Bool": {"aws:SecureTransport": ["false"]},
                                                 "StringNotEquals": {"aws:SourceVpce": ["x"]}}}
    assert doc["Statement"][1]["Principal"] == {"AWS": "arn:root"}


@pytest.mark.parametrize("value", ['a"b', "back\\slash"])
def test_policy_json_escapes_plain_strings(value):
    doc = json.loads(policy_json([Statement("S", ["s3:GetObject"], [value])]))
    assert doc["Statement"][0]["Resource"] == [value]


def test_for_service_and_deny_insecure_transport_render_the_confused_deputy_and_tls_conditions():
    from modules.policy_document import deny_insecure_transport, for_service, policy_json

    doc = json.loads(policy_json([
        for_service("RulesSend", ["sqs:SendMessage"], "arn:q", "events.amazonaws.com", "111", "arn:rule/t-*"),
        for_service("Trust", ["sts:AssumeRole"], [], "states.amazonaws.com", ["111"], ["arn:sm"], arn_test="ArnEquals"),
        deny_insecure_transport(["sqs:*"], "arn:q")]))
    send, trust, deny = doc["Statement"]
    assert send["Principal"] == {"Service": ["events.amazonaws.com"]} and send["Effect"] == "Allow"
    assert send["Condition"] == {"StringEquals": {"aws:SourceAccount": "111"}, "ArnLike": {"aws:SourceArn": "arn:rule/t-*"}}
    assert trust["Condition"]["ArnEquals"] == {"aws:SourceArn": ["arn:sm"]}
    assert deny["Sid"] == "DenyInsecureTransport" and deny["Effect"] == "Deny" and deny["Principal"] == "*"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
