"""Typed IAM policy statements, rendered in one place.

Every policy of the tenant module (key policy, bucket policies, VPC endpoint policy, role trust and
permission policies) is a list of ``Statement``; nothing writes policy JSON by hand.  Two renderings:

* ``policy_document(...)``: an ``aws_iam_policy_document`` data source (lists may be Terraform
  expressions such as ``concat([...], var.admin_principal_arns)``; checkov reads its statements).
* ``policy_json(...)``: a JSON string with ``${...}`` interpolations, for resource policies (the KMS
  key policy, whose ``Resource: "*"`` means "this key" and which checkov's IAM-document checks would
  misread as a wildcard grant; the bucket policies).  A ``ListExpr`` value becomes
  ``${jsonencode(<list>)}`` in place of a JSON array; ``policies/checks`` parse such strings.
"""
from __future__ import annotations

import dataclasses
import json
import re
from typing import Sequence, Union

from cdktf import Token
from constructs import Construct
from cdktf_cdktf_provider_aws.data_aws_iam_policy_document import (
    DataAwsIamPolicyDocument,
    DataAwsIamPolicyDocumentStatement,
    DataAwsIamPolicyDocumentStatementCondition,
    DataAwsIamPolicyDocumentStatementPrincipals,
)



class ListExpr(str):
    """One Terraform expression that evaluates to a list, e.g. ``ListExpr("${var.admin_principal_arns}")``."""


# A list of values (plain strings or scalar ``${...}`` expressions), one such value, or a ``ListExpr``.
Values = Union[Sequence[str], str, ListExpr]


@dataclasses.dataclass(frozen=True)
class Condition:
    test: str  # e.g. "StringEquals", "Bool", "ArnNotLike"
    variable: str  # e.g. "aws:SecureTransport"
    values: Values


@dataclasses.dataclass(frozen=True)
class Principal:
    type: str  # "AWS", "Service", "Federated" or "*"
    identifiers: Values


@dataclasses.dataclass(frozen=True)
class Statement:
    sid: str
    actions: Sequence[str]
    resources: Values
    effect: str = "Allow"
    principals: Sequence[Principal] = ()
    conditions: Sequence[Condition] = ()


def for_service(sid: str, actions: Sequence[str], resources: Values, service: str, account_id: Values,
                source_arn: Values, arn_test: str = "ArnLike") -> Statement:
    """An AWS service may act on this account's behalf only (the confused-deputy conditions): ``aws:SourceAccount``
    and ``aws:SourceArn`` (``arn_test``: ``ArnEquals`` for one resource, ``ArnLike`` for a pattern). A role's trust
    is ``for_service(sid, ["sts:AssumeRole"], [], ...)``."""
    return Statement(sid, actions, resources, principals=[Principal("Service", [service])],
                     conditions=[Condition("StringEquals", "aws:SourceAccount", account_id),
                                 Condition(arn_test, "aws:SourceArn", source_arn)])


def deny_insecure_transport(actions: Sequence[str], resources: Values) -> Statement:
    """``DenyInsecureTransport``: any principal, any request without TLS."""
    return Statement("DenyInsecureTransport", actions, resources, effect="Deny", principals=[Principal("*", "*")],
                     conditions=[Condition("Bool", "aws:SecureTransport", "false")])


def _as_list(values: Values) -> list[str]:
    if isinstance(values, ListExpr):
        return Token.as_list(str(values))
    if isinstance(values, str):
        return [values]
    return list(values)


def policy_document(scope: Construct, id_: str, statements: Sequence[Statement],
                    for_each=None) -> DataAwsIamPolicyDocument:
    """An ``aws_iam_policy_document`` data source; use ``.json`` for the policy attribute.

    ``for_each`` (a CDKTF iterator) makes one document per element; statements may then use
    ``${each.value}``, and a resource of the same ``for_each`` refers to ``<address>[each.key].json``.
    """
    return DataAwsIamPolicyDocument(scope, id_, for_each=for_each, statement=[
        DataAwsIamPolicyDocumentStatement(
            sid=s.sid,
            effect=s.effect,
            actions=list(s.actions),
            resources=_as_list(s.resources) or None,
            principals=[DataAwsIamPolicyDocumentStatementPrincipals(type=p.type, identifiers=_as_list(p.identifiers))
                        for p in s.principals] or None,
            condition=[DataAwsIamPolicyDocumentStatementCondition(test=c.test, variable=c.variable,
                                                                   values=_as_list(c.values))
                       for c in s.conditions] or None,
        )
        for s in statements
    ])


_LIST_MARK = "\u0000LIST:"


def _json_values(values: Values) -> str | list[str]:
    if isinstance(values, ListExpr):
        return _LIST_MARK + values[2:-1]  # replaced by an unquoted ${jsonencode(...)} below
    return values if isinstance(values, str) else list(values)


def policy_json(statements: Sequence[Statement]) -> str:
    """The policy as a JSON string (only for values that are plain strings or scalar ``${...}``)."""
    def block(s: Statement) -> dict:
        out: dict = {"Sid": s.sid, "Effect": s.effect}
        if s.principals:
            out["Principal"] = ("*" if any(p.type == "*" for p in s.principals)
                                else {p.type: _json_values(p.identifiers) for p in s.principals})
        out["Action"] = list(s.actions)
        out["Resource"] = _json_values(s.resources)
        if s.conditions:
            cond: dict = {}
            for c in s.conditions:
                cond.setdefault(c.test, {})[c.variable] = _json_values(c.values)
            out["Condition"] = cond
        return out

    text = json.dumps({"Version": "2012-10-17", "Statement": [block(s) for s in statements]}, sort_keys=False)
    return re.sub(r'"\\u0000LIST:((?:[^"\\]|\\.)*)"',
                  lambda m: "${jsonencode(" + json.loads(f'"{m.group(1)}"') + ")}", text)
