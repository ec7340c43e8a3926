"""infra/orchestration.py: the module's orchestration is synthesized from the packaged contracts, whose names must
fit EventBridge's and Scheduler's 64 characters for the longest tenant id."""
from __future__ import annotations

import pytest

from spark_jobs.contract.model import parse_contract


def test_a_dataset_whose_rule_name_would_not_fit_is_refused_in_one_line(monkeypatch):
    from infra import orchestration

    long_name = "d" * 39
    contract = parse_contract({"dataset": long_name, "landing": {"format": "json_lines"}, "key": ["id"],
                               "event_time": "ts", "schema": [{"name": "id", "type": "string"},
                                                              {"name": "ts", "type": "timestamp"}]})
    monkeypatch.setattr("spark_jobs.contract.model.packaged_contracts", lambda: [contract])
    with pytest.raises(ValueError) as info:
        orchestration.contracts_for_orchestration()
    assert str(info.value) == (f"contract '{long_name}': its pipeline schedule name would be 73 characters for a "
                               "24-character tenant id, more than 64; shorten the dataset name")


def test_the_packaged_contracts_fit():
    from infra import orchestration

    assert {c.dataset for c in orchestration.contracts_for_orchestration()} == {"iot", "clickstream", "inventory"}
