"""policies/checks: every custom check fires on a deliberately bad fixture and passes a good one.

One checkov run over tests/policies/fixtures/ (all fixtures at once, ~5 s) feeds every case.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from policies import gate

FIXTURES = Path(__file__).parent / "fixtures"
CUSTOM_CHECKS = ["CKV2_TL_1", "CKV_TL_2", "CKV2_TL_3", "CKV_TL_4", "CKV_TL_5", "CKV_TL_6", "CKV_TL_7", "CKV_TL_8"]
# Custom checks of what the tenant module does not contain: module calls (CKV_TL_2), the account's Lake Formation
# settings (CKV_TL_8: the platform Lake Formation module's, checked through a fixture that links to it).
NOT_IN_TENANT_MODULE = {"CKV_TL_2", "CKV_TL_8"}

EXPECTED = {
    # (check id, resource name): passed?
    ("CKV2_TL_1", "tags_good_merged"): True,  # tags = merge(var.tags, local.standard_tags), rendered by checkov
    ("CKV2_TL_1", "tags_good_literal"): True,
    ("CKV2_TL_1", "tags_bad_missing_cost_center"): False,
    ("CKV2_TL_1", "tags_bad_none"): False,
    ("CKV_TL_2", "gdpr_bad_us"): False,
    ("CKV_TL_2", "gdpr_good_eu"): True,
    ("CKV_TL_2", "gdpr_good_no_gdpr"): True,
    ("CKV2_TL_3", "kms_good"): True,
    ("CKV2_TL_3", "kms_bad_sse_s3"): False,
    ("CKV2_TL_3", "kms_bad_none"): False,
    ("CKV2_TL_3", "kms_logs_exempt"): True,
    ("CKV_TL_4", "policy_good"): True,
    ("CKV_TL_4", "policy_bad_no_vpce"): False,
    ("CKV_TL_4", "policy_bad_no_tls"): False,
    ("CKV_TL_4", "policy_bad_opaque"): False,
    ("CKV_TL_5", "lifecycle_good"): True,
    ("CKV_TL_5", "lifecycle_bad_prefix_only"): False,
    ("CKV_TL_5", "lifecycle_bad_disabled"): False,
    ("CKV_TL_5", "lifecycle_bad_none"): False,
    ("CKV_TL_6", "iam_good"): True,
    ("CKV_TL_6", "iam_bad_s3_star"): False,
    ("CKV_TL_6", "iam_bad_all_actions"): False,
    ("CKV_TL_6", "iam_doc_good"): True,
    ("CKV_TL_6", "iam_doc_bad_kms"): False,
    ("CKV_TL_7", "allow_list_good"): True,  # ArnNotLike aws:PrincipalArn = ${jsonencode(concat(...))}
    ("CKV_TL_7", "allow_list_good_services_exempt"): True,  # + Bool aws:PrincipalIsAWSService false
    ("CKV_TL_7", "allow_list_bad_none"): False,
    ("CKV_TL_7", "allow_list_bad_star"): False,
    ("CKV_TL_7", "allow_list_bad_narrowed"): False,  # only outside a VPC endpoint: not an allow-list
    ("CKV_TL_7", "allow_list_bad_allow"): False,
    ("CKV_TL_8", "lf_settings_good"): True,  # no default permission: Lake Formation's grants decide
    ("CKV_TL_8", "lf_settings_good_role_default"): True,
    ("CKV_TL_8", "lf_settings_bad_database"): False,
    ("CKV_TL_8", "lf_settings_bad_table"): False,
    ("CKV_TL_8", "lf_settings_bad_expression"): False,  # a principal the check cannot read may be IAM_ALLOWED_PRINCIPALS
    # The committed platform Lake Formation module itself (fixtures/platform_lake_formation.tf.json links to it): no
    # built-in check applies to its one resource, so this is its gate (python -m policies.gate on it: 0 failed, 0 skipped).
    ("CKV_TL_8", "lf_settings"): True,
}


def _results(reports: list[dict]) -> dict[tuple[str, str], bool]:
    out: dict[tuple[str, str], bool] = {}
    for report in reports:
        results = report.get("results") or {}
        for passed, key in ((True, "passed_checks"), (False, "failed_checks")):
            for rec in results.get(key) or []:
                out[(rec["check_id"], rec["resource"].split(".")[-1])] = passed
    return out


@pytest.fixture(scope="module")
def fixture_results() -> dict[tuple[str, str], bool]:
    return _results(gate.run_checkov(FIXTURES, checks=CUSTOM_CHECKS))


@pytest.mark.integration
@pytest.mark.parametrize("case", sorted(EXPECTED), ids=lambda c: f"{c[0]}-{c[1]}")
def test_custom_check_on_fixture(fixture_results, case):
    assert case in fixture_results, f"{case} was not evaluated"
    assert fixture_results[case] is EXPECTED[case]


@pytest.mark.integration
def test_every_custom_check_has_a_failing_and_a_passing_fixture():
    for check in CUSTOM_CHECKS:
        outcomes = {passed for (cid, _), passed in EXPECTED.items() if cid == check}
        assert outcomes == {True, False}, check


@pytest.fixture(scope="module")
def module_gate() -> gate.GateResult:
    return gate.gate(gate.DEFAULT_TARGET)


@pytest.mark.integration
def test_synthesized_module_passes_the_gate_with_at_most_three_documented_skips(module_gate):
    assert module_gate.failed == []
    # Every custom check that applies to a tenant module ran on it and passed (CKV_TL_2 checks module calls,
    # which a module does not contain; CKV_TL_8 the account's settings, no tenant's); each bucket policy and lifecycle
    # configuration is among them.
    passed_ids = {check for check, _ in module_gate.passed_checks}
    assert set(CUSTOM_CHECKS) - NOT_IN_TENANT_MODULE <= passed_ids
    assert "aws_lakeformation_data_lake_settings" not in json.loads(
        (gate.DEFAULT_TARGET / "main.tf.json").read_text())["resource"]
    module = json.loads((gate.DEFAULT_TARGET / "main.tf.json").read_text())
    for kind, check in (("aws_s3_bucket_policy", "CKV_TL_4"), ("aws_s3_bucket_lifecycle_configuration", "CKV_TL_5")):
        # checkov names a resource "<type>.<name>" or "resource.<name>...", depending on the runner: compare names.
        passed_names = {resource.split(".")[-1] for cid, resource in module_gate.passed_checks if cid == check}
        assert set(module["resource"][kind]) <= passed_names, (check, passed_names)
    assert sorted((f.check_id, f.resource) for f in module_gate.skipped) == [
        ("CKV_AWS_144", "aws_s3_bucket.lake_bucket"), ("CKV_AWS_144", "aws_s3_bucket.log_bucket_bucket"),
        ("CKV_AWS_145", "aws_s3_bucket.log_bucket_bucket")]
    assert all(len(f.reason) > 40 for f in module_gate.skipped)
    assert len(module_gate.skipped) <= gate.MAX_SKIPS and module_gate.ok


def test_gate_fails_on_an_undeclared_failure_and_on_too_many_skips(tmp_path):
    module = {"resource": {"aws_s3_bucket": {
        "a": {"//": {"checkov": {"skip": {"CKV_X_1": "r1", "CKV_X_2": "r2"}}}},
        "b": {"//": {"checkov": {"skip": {"CKV_X_1": "r3", "CKV_X_2": "r4"}}}}}}}
    (tmp_path / "main.tf.json").write_text(json.dumps(module))
    failed = [{"check_id": cid, "resource": f"aws_s3_bucket.{name}", "file_path": "/main.tf.json"}
              for name in ("a", "b") for cid in ("CKV_X_1", "CKV_X_2")]
    too_many = gate.evaluate(tmp_path, [{"results": {"passed_checks": [], "failed_checks": failed}}])
    assert not too_many.failed and len(too_many.skipped) == 4 and not too_many.ok
    undeclared = gate.evaluate(tmp_path, [{"results": {"failed_checks": [
        {"check_id": "CKV_X_9", "resource": "aws_s3_bucket.a", "file_path": "/main.tf.json"}]}}])
    assert [f.check_id for f in undeclared.failed] == ["CKV_X_9"] and not undeclared.ok


@pytest.mark.integration
def test_policy_cli_exit_codes(tmp_path):
    ok = subprocess.run([".venv/bin/python", "-m", "policies.gate"], cwd=gate.REPO_ROOT, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "ok:" in ok.stdout and "3 skipped (max 3)" in ok.stdout
    missing = subprocess.run([".venv/bin/python", "-m", "policies.gate", str(tmp_path / "nope")],
                             cwd=gate.REPO_ROOT, capture_output=True, text=True)
    assert missing.returncode == 2 and "is not a directory" in missing.stderr


def test_checks_import_the_model_instead_of_copying_it():
    """policies/checks runs in checkov's venv; it imports the stdlib-only tenant_model (the gate puts the repo
    on checkov's PYTHONPATH, and the gate tests above run checkov with these checks)."""
    from modules.skips import MAX_SKIPS as module_budget

    source = (gate.CHECKS_DIR / "tenantlake.py").read_text()
    assert "from tenant_model import EU_REGION_PREFIX" in source
    assert 'EU_REGION_PREFIX = "' not in source
    assert gate.MAX_SKIPS == module_budget == 3
