"""tenantlake's custom checkov checks (Python); the YAML ones live next to this file.

Loaded with ``checkov --external-checks-dir policies/checks``.  They read Terraform JSON (the
synthesized module, or a root module that calls it) as checkov's ``terraform_json`` runner hands it
over: raw attribute values, with ``${...}`` expressions unevaluated.  Policy documents written as
JSON strings with interpolations are parsed tolerantly (each ``${...}`` becomes a placeholder).

| id | what it enforces |
|---|---|
| CKV_TL_2 | a tenant module call whose data_classification includes gdpr has an EU region |
| CKV_TL_4 | every bucket policy denies non-TLS requests and requests not through a VPC endpoint |
| CKV_TL_5 | every lifecycle configuration aborts incomplete multipart uploads bucket-wide |
| CKV_TL_6 | no IAM statement allows S3 or KMS actions on resource ``*`` |
| CKV_TL_7 | every bucket policy denies all S3 actions to principals outside an ``aws:PrincipalArn`` allow-list |
| CKV_TL_8 | Lake Formation settings give ``IAM_ALLOWED_PRINCIPALS`` no default permission on new databases or tables |
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.data.base_check import BaseDataCheck
from checkov.terraform.checks.module.base_module_check import BaseModuleCheck
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck

# The tenant model is stdlib-only: policies.gate puts the repo root on checkov's PYTHONPATH.
from tenant_model import EU_REGION_PREFIX  # noqa: E402
PLACEHOLDER = "TF_EXPR"


def first(value: Any) -> Any:
    """checkov wraps scalar attribute values in one-element lists."""
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def tolerant_json(text: str) -> Any:
    """Parse a JSON policy string that may contain Terraform ``${...}`` interpolations; None if not JSON."""
    out, i, in_string = [], 0, False
    while i < len(text):
        ch = text[i]
        if text.startswith("${", i):
            depth, j = 0, i + 1
            while j < len(text):
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                if depth == 0:
                    break
                j += 1
            out.append(PLACEHOLDER if in_string else f'"{PLACEHOLDER}"')
            i = j + 1
            continue
        if ch == '"' and (i == 0 or text[i - 1] != "\\"):
            in_string = not in_string
        out.append(ch)
        i += 1
    try:
        return json.loads("".join(out))
    except ValueError:
        return None


def as_list(value: Any) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def json_statements(policy: Any) -> list[dict] | None:
    policy = first(policy)
    if isinstance(policy, dict):
        doc = policy
    elif isinstance(policy, str):
        doc = tolerant_json(policy)
    else:
        return None
    if not isinstance(doc, dict):
        return None
    return [s for s in as_list(doc.get("Statement")) if isinstance(s, dict)]


class GdprRequiresEuRegion(BaseModuleCheck):
    def __init__(self) -> None:
        super().__init__(name="A tenant with gdpr data lives in an EU region", id="CKV_TL_2",
                         categories=[CheckCategories.GENERAL_SECURITY])

    def scan_module_conf(self, conf: dict[str, list[Any]]) -> CheckResult:
        classes = first(conf.get("data_classification"))
        region = first(conf.get("region"))
        if not isinstance(classes, list) or "gdpr" not in classes:
            return CheckResult.PASSED
        if isinstance(region, str) and region.startswith(EU_REGION_PREFIX):
            return CheckResult.PASSED
        return CheckResult.FAILED  # a non-EU (or not literally known) region with gdpr data


def _denies(statements: Iterable[dict], condition_key: str, tests: set[str]) -> bool:
    for s in statements:
        if s.get("Effect") != "Deny":
            continue
        actions = {a.lower() for a in as_list(s.get("Action"))}
        if not actions & {"s3:*", "*"}:
            continue
        for test, block in (s.get("Condition") or {}).items():
            if test in tests and isinstance(block, dict) and condition_key in block:
                return True
    return False


class BucketPolicyDeniesInsecureAndOutsideAccess(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(name="Bucket policies deny non-TLS requests and requests not through a VPC endpoint",
                         id="CKV_TL_4", categories=[CheckCategories.NETWORKING],
                         supported_resources=["aws_s3_bucket_policy"])

    def scan_resource_conf(self, conf: dict[str, list[Any]]) -> CheckResult:
        statements = json_statements(conf.get("policy"))
        if statements is None:
            return CheckResult.FAILED  # the policy must be readable here (no opaque document reference)
        tls = _denies(statements, "aws:SecureTransport", {"Bool"})
        vpce = _denies(statements, "aws:SourceVpce", {"StringNotEquals", "StringNotEqualsIfExists"})
        return CheckResult.PASSED if tls and vpce else CheckResult.FAILED


# Negated operators: the Deny applies to every principal NOT on the list (and to requests without the key).
_NEGATED_ARN_TESTS = {"ArnNotLike", "ArnNotEquals", "StringNotEquals", "StringNotLike"}
# The only other condition an allow-list Deny may carry: AWS service principals carry no aws:PrincipalArn.
_ALLOW_LIST_EXTRA_KEYS = {"aws:PrincipalIsAWSService"}


def _everyone(principal: Any) -> bool:
    if principal == "*":
        return True
    return isinstance(principal, dict) and as_list(principal.get("AWS")) == ["*"]


def _denies_outside_allow_list(statements: Iterable[dict]) -> bool:
    for s in statements:
        if s.get("Effect") != "Deny" or not _everyone(s.get("Principal")):
            continue
        if not {a.lower() for a in as_list(s.get("Action"))} & {"s3:*", "*"}:
            continue
        conditions = s.get("Condition") or {}
        lists = [block["aws:PrincipalArn"] for test, block in conditions.items()
                 if test in _NEGATED_ARN_TESTS and isinstance(block, dict) and "aws:PrincipalArn" in block]
        keys = {key for block in conditions.values() if isinstance(block, dict) for key in block}
        if len(lists) == 1 and keys <= {"aws:PrincipalArn", *_ALLOW_LIST_EXTRA_KEYS} and "*" not in as_list(lists[0]):
            return True
    return False


class BucketPolicyDeniesPrincipalsOutsideAllowList(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(name="Bucket policies deny all S3 actions to principals outside an aws:PrincipalArn allow-list",
                         id="CKV_TL_7", categories=[CheckCategories.IAM], supported_resources=["aws_s3_bucket_policy"])

    def scan_resource_conf(self, conf: dict[str, list[Any]]) -> CheckResult:
        statements = json_statements(conf.get("policy"))
        if statements is None:
            return CheckResult.FAILED  # the policy must be readable here
        return CheckResult.PASSED if _denies_outside_allow_list(statements) else CheckResult.FAILED


class LifecycleAbortsIncompleteUploads(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(name="Every lifecycle configuration aborts incomplete multipart uploads bucket-wide",
                         id="CKV_TL_5", categories=[CheckCategories.GENERAL_SECURITY],
                         supported_resources=["aws_s3_bucket_lifecycle_configuration"])

    def scan_resource_conf(self, conf: dict[str, list[Any]]) -> CheckResult:
        for rule in as_list(conf.get("rule")):
            if not isinstance(rule, dict) or first(rule.get("status")) != "Enabled":
                continue
            prefixes = [first(f.get("prefix")) for f in as_list(rule.get("filter")) if isinstance(f, dict)]
            if any(p not in (None, "") for p in prefixes):
                continue  # only a bucket-wide rule covers every prefix
            for abort in as_list(rule.get("abort_incomplete_multipart_upload")):
                days = first(abort.get("days_after_initiation")) if isinstance(abort, dict) else None
                if isinstance(days, (int, float)) and days > 0:
                    return CheckResult.PASSED
        return CheckResult.FAILED


def _is_s3_or_kms(action: str) -> bool:
    action = action.lower()
    return action == "*" or action.startswith("s3:") or action.startswith("kms:")


def _grants_wildcard(actions: Iterable[str], resources: Iterable[str]) -> bool:
    return any(_is_s3_or_kms(a) for a in actions) and "*" in list(resources)


class NoS3OrKmsActionsOnWildcard(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(name="No IAM statement allows S3 or KMS actions on resource *", id="CKV_TL_6",
                         categories=[CheckCategories.IAM],
                         supported_resources=["aws_iam_policy", "aws_iam_role_policy", "aws_iam_user_policy",
                                              "aws_iam_group_policy"])

    def scan_resource_conf(self, conf: dict[str, list[Any]]) -> CheckResult:
        policy = first(conf.get("policy"))
        if isinstance(policy, str) and policy.startswith("${data.aws_iam_policy_document."):
            return CheckResult.PASSED  # the document itself is checked by CKV_TL_6 as a data check
        statements = json_statements(policy)
        if statements is None:
            return CheckResult.FAILED  # an IAM policy must be readable here
        for s in statements:
            if s.get("Effect", "Allow") == "Allow" and _grants_wildcard(as_list(s.get("Action")),
                                                                        as_list(s.get("Resource"))):
                return CheckResult.FAILED
        return CheckResult.PASSED


class NoS3OrKmsActionsOnWildcardDocument(BaseDataCheck):
    def __init__(self) -> None:
        super().__init__(name="No IAM statement allows S3 or KMS actions on resource *", id="CKV_TL_6",
                         categories=[CheckCategories.IAM], supported_data=["aws_iam_policy_document"])

    def scan_data_conf(self, conf: dict[str, list[Any]]) -> CheckResult:
        for s in as_list(conf.get("statement")):
            if not isinstance(s, dict) or first(s.get("effect")) not in (None, "Allow"):
                continue
            if _grants_wildcard(as_list(first(s.get("actions"))), as_list(first(s.get("resources")))):
                return CheckResult.FAILED
        return CheckResult.PASSED


IAM_ALLOWED_PRINCIPALS = "IAM_ALLOWED_PRINCIPALS"


class LakeFormationSettingsLeaveNoIamDefault(BaseResourceCheck):
    """Where the settings name ``IAM_ALLOWED_PRINCIPALS`` in a default (or in an expression that may), new databases
    and tables are IAM's alone and Lake Formation's grants decide nothing (modules/lake_formation_settings.py)."""

    def __init__(self) -> None:
        super().__init__(name="Lake Formation settings give IAM_ALLOWED_PRINCIPALS no default permission on new "
                              "databases or tables", id="CKV_TL_8", categories=[CheckCategories.IAM],
                         supported_resources=["aws_lakeformation_data_lake_settings"])

    def scan_resource_conf(self, conf: dict[str, list[Any]]) -> CheckResult:
        for key in ("create_database_default_permissions", "create_table_default_permissions"):
            for entry in as_list(conf.get(key)):
                principal = first(entry.get("principal")) if isinstance(entry, dict) else entry
                if not isinstance(principal, str) or principal == IAM_ALLOWED_PRINCIPALS or "${" in principal:
                    return CheckResult.FAILED
        return CheckResult.PASSED


gdpr_check = GdprRequiresEuRegion()
bucket_policy_check = BucketPolicyDeniesInsecureAndOutsideAccess()
bucket_allow_list_check = BucketPolicyDeniesPrincipalsOutsideAllowList()
lifecycle_check = LifecycleAbortsIncompleteUploads()
iam_wildcard_check = NoS3OrKmsActionsOnWildcard()
iam_wildcard_document_check = NoS3OrKmsActionsOnWildcardDocument()
lake_formation_settings_check = LakeFormationSettingsLeaveNoIamDefault()
