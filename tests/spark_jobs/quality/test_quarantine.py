"""Quarantine samples in the reports (``spark_jobs.quality.quarantine.mask_record``): no personal data, no field the
contract does not know, no record that cannot be read as fields; the fields that hold no personal data as they came."""
from __future__ import annotations

import json

import pytest

from spark_jobs.contract.model import load_contract
from spark_jobs.quality.quarantine import PERSONAL_MASK, UNKNOWN_MASK, mask_record, open_fields


@pytest.fixture(scope="module")
def clickstream():
    return load_contract("clickstream")


def test_subject_keys_personal_data_and_unknown_fields_are_masked(clickstream):
    raw = json.dumps({"timestamp": "2024-05-01 10:00:00", "event": "click", "user_id": "user-0042",
                      "site_id": "site-03", "url": "https://x/?email=ann@x.com", "on_site_seconds": -5,
                      "viewed_percent": 40, "referrer": "user-0042's page"})
    masked = json.loads(mask_record(raw, clickstream))
    assert masked == {"timestamp": "2024-05-01 10:00:00", "event": "click", "user_id": PERSONAL_MASK,
                      "site_id": "site-03", "url": PERSONAL_MASK, "on_site_seconds": -5, "viewed_percent": 40,
                      "referrer": UNKNOWN_MASK}
    assert open_fields(clickstream) == (
        frozenset({"timestamp", "event", "site_id", "on_site_seconds", "viewed_percent"}),
        frozenset({"user_id", "url"}))


@pytest.mark.parametrize("raw", ['{"user_id": "user-0042", "site_id": ', '["user-0042"]', 'user-0042,site-03', ""])
def test_a_record_that_is_not_an_object_of_fields_is_withheld_whole(clickstream, raw):
    masked = mask_record(raw, clickstream)
    assert "user-0042" not in masked and masked == (
        f"[malformed record: {len(raw)} characters, not shown: they may hold personal data]")


def test_a_source_named_field_is_judged_by_its_column():
    contract = {"landing": {"format": "json_lines"}, "subject_keys": ["customer"],
                "schema": [{"name": "customer", "source": "cust_no"}, {"name": "amount", "source": "amt"},
                           {"name": "day", "computed": "to_date(ts)"}]}
    assert json.loads(mask_record('{"cust_no": 7, "amt": 3.5, "day": "x"}', contract)) == {
        "cust_no": PERSONAL_MASK, "amt": 3.5, "day": UNKNOWN_MASK}


def test_csv_records_are_masked_by_position_without_a_header_and_withheld_with_one():
    schema = [{"name": "email"}, {"name": "city"}]
    headerless = {"landing": {"format": "csv", "header": False}, "personal_data": ["email"], "schema": schema}
    assert json.loads(mask_record('"ann@x.com",Oslo', headerless)) == {"email": PERSONAL_MASK, "city": "Oslo"}
    assert "ann@x.com" not in mask_record('"ann@x.com",Oslo,extra', headerless)  # not the contract's fields
    with_header = {"landing": {"format": "csv"}, "personal_data": ["email"], "schema": schema}
    assert mask_record("ann@x.com,Oslo", with_header) == (
        "[csv record (its file's header names the fields): 14 characters, not shown: they may hold personal data]")


def test_without_a_contract_every_record_is_withheld():
    assert mask_record('{"user_id": "user-0042"}', None).startswith("[record: 24 characters, not shown")
    assert mask_record(None, None) is None
