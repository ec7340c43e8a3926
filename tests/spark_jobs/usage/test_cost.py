"""spark_jobs/usage/cost.py and prices.json: every price names its source and date; the estimate's lines
are quantity x unit price, on the basis each names."""
from __future__ import annotations

import pytest

from spark_jobs.usage import cost

KEYS = {"s3_storage_gb_month", "s3_put_per_1000", "s3_get_per_1000", "s3_inventory_per_million_objects",
        "emr_eks_vcpu_hour", "emr_eks_gb_hour", "kms_per_10000_requests"}


def test_every_region_prices_every_item_and_every_source_has_a_url_and_date():
    table = cost.load_prices()
    assert set(table["sources"]) == {"s3", "emr_eks", "kms"}
    for source in table["sources"].values():
        assert source["url"].startswith("https://aws.amazon.com/") and len(source["as_of"]) == 7
    assert {"us-east-1", "eu-west-1", "eu-central-1"} <= set(table["regions"])
    for prices in table["regions"].values():
        assert KEYS <= set(prices)
        assert {"STANDARD", "STANDARD_IA", "GLACIER_IR", "INTELLIGENT_TIERING"} <= set(prices["s3_storage_gb_month"])


def _usage(storage_class_bytes: dict, written: int, seconds: float, emr_rows=(), source="listing"):
    return {"month": "2026-11", "storage": {"source": source, "inventory_configured": False, "rows": [
        {"layer": "silver", "dataset": "iot", "bytes_by_class": storage_class_bytes, "versions_written": written,
         "current_objects": 3, "noncurrent_objects": 1, "delete_markers": 0}]},
        "runs": {"rows": [{"layer": "silver", "dataset": "iot", "seconds": seconds}]}, "emr": {"rows": list(emr_rows)}}


def test_the_estimate_is_quantity_times_price_per_line():
    table = cost.load_prices()
    usage = _usage({"STANDARD": 10 * cost.GB, "STANDARD_IA": 2 * cost.GB}, written=2000, seconds=3600)
    estimate = cost.estimate(usage, table, "us-east-1")
    lines = {line["item"]: line for line in estimate["lines"]}
    assert lines["S3 storage STANDARD"]["usd"] == pytest.approx(10 * 0.023)
    assert lines["S3 storage STANDARD_IA"]["usd"] == pytest.approx(2 * 0.0125)
    assert lines["S3 PUT requests"]["usd"] == pytest.approx(2 * 0.005)
    assert lines["KMS requests"]["usd"] == pytest.approx(0.2 * 0.03)
    assert "S3 Inventory" not in lines
    assert estimate["total_usd"] == pytest.approx(sum(line["usd"] for line in estimate["lines"]), abs=1e-4)
    assert estimate["estimate"] is True and "us-east-1" == estimate["region"]


def test_local_runs_are_not_priced_as_emr_but_shown_apart_as_hypothetical():
    """No EMR job run: the month has no EMR line and its total none of EMR's price; what the runs would cost on
    EMR on EKS stands apart, marked not in the total."""
    usage = _usage({"STANDARD": cost.GB}, written=1000, seconds=3600)
    estimate = cost.estimate(usage, cost.load_prices(), "us-east-1")
    assert not [line for line in estimate["lines"] if line["item"].startswith("EMR")]
    assert estimate["total_usd"] == pytest.approx(0.023 + 0.005 + 0.003, abs=1e-4)  # storage, PUT, KMS only
    hypothetical = estimate["hypothetical"]
    assert hypothetical["in_total"] is False and hypothetical["seconds"] == 3600
    vcpu, gb = 5.0, 2.8 + 2 * 5.6  # one hour of local runs at deploy-jobs' default sizing
    lines = {line["item"]: line for line in hypothetical["lines"]}
    assert lines["EMR on EKS vCPU"]["quantity"] == pytest.approx(vcpu)
    assert lines["EMR on EKS memory"]["usd"] == pytest.approx(gb * 0.00111125, rel=1e-4)
    assert "what they would cost on EMR on EKS, not what they cost here" in lines["EMR on EKS vCPU"]["basis"]
    assert hypothetical["usd"] == pytest.approx(vcpu * 0.01012 + gb * 0.00111125, abs=1e-4)
    assert cost.estimate(_usage({}, 0, 0), cost.load_prices(), "us-east-1")["hypothetical"] is None  # no runs


def test_emr_job_runs_replace_the_local_run_estimate_and_an_inventory_is_priced():
    usage = _usage({"STANDARD": cost.GB}, 0, 999, emr_rows=[{"vcpu_hours": 2.0, "memory_gb_hours": 8.0}],
                   source="inventory")
    estimate = cost.estimate(usage, cost.load_prices(), "eu-west-1")
    lines = {line["item"]: line for line in estimate["lines"]}
    assert lines["EMR on EKS vCPU"]["quantity"] == 2.0 and lines["EMR on EKS memory"]["quantity"] == 8.0
    assert estimate["hypothetical"] is None  # the runs ran on EMR: nothing hypothetical
    assert lines["EMR on EKS vCPU"]["assumed_price"] is True  # eu-west-1's own EMR on EKS price was not at hand
    assert lines["S3 Inventory"]["quantity"] == 4 * 30


def test_an_unknown_region_is_one_line_naming_the_known_ones():
    with pytest.raises(cost.PriceError, match="no prices for region ap-south-1 in the price table .*eu-west-1"):
        cost.estimate(_usage({}, 0, 0), cost.load_prices(), "ap-south-1")
