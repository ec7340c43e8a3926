"""An estimated monthly cost from the usage figures and the price table (``prices.json``).

Every line is an estimate, and says on what basis:

- **storage**: the bytes stored now per storage class (current and noncurrent versions), priced as if
  stored the whole month (GB-month, 1 GB = 2^30 bytes);
- **PUT requests**: the object versions and delete markers written in the month (their ``LastModified``):
  a lower bound (a multipart upload is several requests; LIST and COPY are not seen; a version deleted
  since is not counted); GET requests are not measured and not priced;
- **KMS requests**: one per version written (an upper bound: the lake uses S3 Bucket Keys, which ask KMS
  for a bucket-level key only now and then instead of once per object);
- **S3 Inventory**: the objects listed, times one report per day of the month, when the lake has one;
- **EMR on EKS**: the job runs' vCPU-hours and GB-hours (``emr.py``), the figures the usage table shows; none
  when no EMR job run was read.
Runs made elsewhere (locally) cost no EMR: with no EMR job runs, ``hypothetical`` prices their run time at the
sizing ``make deploy-jobs`` requests by default (``LOCAL_RUN_SIZING``), what they would cost on EMR on EKS,
apart from the lines and not in the total.
EC2 or Fargate capacity under EMR on EKS, EKS itself, data transfer and CloudWatch Logs are not included.
"""
from __future__ import annotations

import calendar
import json
from pathlib import Path
from typing import Any

from spark_jobs.usage import emr

PRICES_FILE = Path(__file__).with_name("prices.json")
GB = 1024 ** 3
# deploy-jobs' default sizing (infra/deploy/request.py JobSizing; a test checks they agree).
LOCAL_RUN_SIZING = {"spark.driver.cores": "1", "spark.driver.memory": "2g", "spark.executor.instances": "2",
                    "spark.executor.cores": "2", "spark.executor.memory": "4g"}


class PriceError(ValueError):
    """The price table lacks the region, or is not readable; one line."""


def load_prices(path: str | Path | None = None) -> dict[str, Any]:
    source = Path(path) if path else PRICES_FILE
    try:
        return json.loads(source.read_text())
    except (OSError, ValueError) as exc:
        raise PriceError(f"price table {source}: {exc}") from None


def region_prices(table: dict[str, Any], region: str) -> dict[str, Any]:
    regions = table.get("regions") or {}
    if region not in regions:
        raise PriceError(f"no prices for region {region} in the price table (it has {', '.join(sorted(regions))}): "
                         "pass --price-region R, or add the region to spark_jobs/usage/prices.json")
    return regions[region]


def _line(item: str, quantity: float, unit: str, unit_price: float, per: float, source: str, basis: str,
          assumed: bool = False) -> dict[str, Any]:
    return {"item": item, "quantity": round(quantity, 6), "unit": unit, "unit_price": unit_price,
            "usd": round(quantity / per * unit_price, 6), "price_source": source, "basis": basis,
            "assumed_price": assumed}


def estimate(usage: dict[str, Any], table: dict[str, Any], region: str) -> dict[str, Any]:
    """The cost block of a usage report: lines, total, and what each line rests on."""
    prices = region_prices(table, region)
    assumed = set(prices.get("assumed") or [])
    sources = table.get("sources") or {}

    def src(kind: str) -> str:
        entry = sources.get(kind) or {}
        return f"{entry.get('url', '?')} (as of {entry.get('as_of', '?')})"

    lines = []
    by_class: dict[str, int] = {}
    written = 0
    for row in usage["storage"]["rows"]:
        written += int(row["versions_written"])
        for storage_class, size in row["bytes_by_class"].items():
            by_class[storage_class] = by_class.get(storage_class, 0) + int(size)
    storage_prices = prices["s3_storage_gb_month"]
    for storage_class, size in sorted(by_class.items()):
        price = storage_prices.get(storage_class, storage_prices["STANDARD"])
        lines.append(_line(f"S3 storage {storage_class}", size / GB, "GB-month", price, 1, src("s3"),
                           "bytes stored now, as if stored the whole month",
                           f"s3_storage_gb_month.{storage_class}" in assumed or storage_class not in storage_prices))
    lines.append(_line("S3 PUT requests", written, "requests", prices["s3_put_per_1000"], 1000, src("s3"),
                       "versions and delete markers written in the month (a lower bound)",
                       "s3_put_per_1000" in assumed))
    lines.append(_line("KMS requests", written, "requests", prices["kms_per_10000_requests"], 10000, src("kms"),
                       "one per version written (an upper bound: S3 Bucket Keys need fewer)",
                       "kms_per_10000_requests" in assumed))
    if usage["storage"]["source"] == "inventory" or usage["storage"].get("inventory_configured"):
        objects = sum(int(r["current_objects"]) + int(r["noncurrent_objects"]) + int(r["delete_markers"])
                      for r in usage["storage"]["rows"])
        days = calendar.monthrange(*map(int, usage["month"].split("-")))[1]
        lines.append(_line("S3 Inventory", objects * days, "objects listed", prices["s3_inventory_per_million_objects"],
                           1_000_000, src("s3"), f"{objects} objects in each of {days} daily reports",
                           "s3_inventory_per_million_objects" in assumed))
    def compute_lines(vcpu_hours: float, gb_hours: float, basis: str) -> list[dict[str, Any]]:
        return [_line("EMR on EKS vCPU", vcpu_hours, "vCPU-hours", prices["emr_eks_vcpu_hour"], 1, src("emr_eks"),
                      basis, "emr_eks_vcpu_hour" in assumed),
                _line("EMR on EKS memory", gb_hours, "GB-hours", prices["emr_eks_gb_hour"], 1, src("emr_eks"),
                      basis, "emr_eks_gb_hour" in assumed)]

    emr_rows = usage["emr"]["rows"]
    hypothetical = None
    if emr_rows:
        lines += compute_lines(sum(r["vcpu_hours"] for r in emr_rows), sum(r["memory_gb_hours"] for r in emr_rows),
                               "job runs' requested vCPU and memory x duration (describe_job_run)")
    else:
        hypothetical = _if_on_emr(usage, compute_lines)
    return {"region": region, "currency": table.get("currency", "USD"), "estimate": True, "lines": lines,
            "total_usd": round(sum(line["usd"] for line in lines), 4), "hypothetical": hypothetical,
            "note": table.get("note", ""),
            "not_included": "EC2 or Fargate capacity under EMR on EKS, EKS, data transfer, CloudWatch Logs, GET "
                            "and LIST requests"}


def _if_on_emr(usage: dict[str, Any], compute_lines) -> dict[str, Any] | None:
    """With no EMR job runs, what the month's runs (made elsewhere: locally) would cost on EMR on EKS at
    deploy-jobs' default sizing: not a cost of the month, so apart from the lines and the total."""
    runs = sum(int(r.get("runs") or 0) for r in usage["runs"]["rows"])
    seconds = sum(r["seconds"] for r in usage["runs"]["rows"])
    if not seconds:
        return None
    vcpu, gb = emr.requested(LOCAL_RUN_SIZING)
    hours = seconds / 3600
    basis = (f"the runs' own time, {seconds:.0f} s, at deploy-jobs' default sizing ({vcpu:g} vCPU, {gb:.1f} GB): "
             "what they would cost on EMR on EKS, not what they cost here")
    lines = compute_lines(vcpu * hours, gb * hours, basis)
    return {"what": f"{runs} runs made without EMR on EKS, had they run there", "seconds": round(seconds, 3),
            "lines": lines, "usd": round(sum(line["usd"] for line in lines), 4), "in_total": False}
