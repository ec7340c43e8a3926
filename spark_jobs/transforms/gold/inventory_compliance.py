"""Each host's latest snapshot of the day, joined with the policy-rules table: one row per broken rule.

The policy-rules table comes from the contract (``gold_options.inventory_compliance.policy_rules``).
A rule with ``org_id: "*"`` applies to every org; an org's own row for the same rule overrides it.
Kinds: ``min`` (metric >= threshold), ``max`` (metric <= threshold), ``allowed`` (metric in allowed_values).
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

PARTITION_BY = ("event_date",)
RECONCILE_COLUMN = None
ANY_ORG = "*"
POLICY_SCHEMA = T.StructType([
    T.StructField("policy_org_id", T.StringType()),
    T.StructField("rule", T.StringType()),
    T.StructField("kind", T.StringType()),
    T.StructField("metric", T.StringType()),
    T.StructField("threshold", T.DoubleType()),
    T.StructField("allowed_values", T.ArrayType(T.StringType())),
])
COLUMNS = ("event_date", "org_id", "host_id", "hostname", "collected_at", "rule", "metric", "observed", "expected")


def policy_rules_frame(silver: DataFrame, rules: list[dict[str, Any]]) -> DataFrame:
    rows = [
        (str(r["org_id"]), str(r["rule"]), str(r["kind"]), str(r["metric"]),
         None if r.get("threshold") is None else float(r["threshold"]),
         None if r.get("allowed_values") is None else [str(v) for v in r["allowed_values"]])
        for r in rules
    ]
    return silver.sparkSession.createDataFrame(rows, POLICY_SCHEMA)


def _metric_value(metrics: list[str], as_type: str) -> Column:
    value = F.lit(None).cast(as_type)
    for metric in metrics:
        value = F.when(F.col("metric") == metric, F.col(metric).cast(as_type)).otherwise(value)
    return value


def build(silver: DataFrame, options: dict[str, Any]) -> DataFrame:
    rules = list(options.get("policy_rules", []))
    metrics = sorted({str(r["metric"]) for r in rules})
    latest_first = Window.partitionBy("event_date", "org_id", "host_id").orderBy(F.col("collected_at").desc())
    hosts = (
        silver
        .withColumn("os_release", F.concat_ws(" ", "os_name", "os_version"))
        .withColumn("_snapshot_rank", F.row_number().over(latest_first))
        .where(F.col("_snapshot_rank") == 1)
        .select("event_date", "org_id", "host_id", "hostname", "collected_at", *[F.col(m) for m in metrics if m != "os_release"], "os_release")
    )
    policies = policy_rules_frame(silver, rules)
    applies_to_host = (F.col("policy_org_id") == F.col("org_id")) | (F.col("policy_org_id") == ANY_ORG)
    org_specific_first = Window.partitionBy("event_date", "org_id", "host_id", "rule").orderBy(
        F.when(F.col("policy_org_id") == ANY_ORG, 1).otherwise(0)
    )
    effective = (
        hosts.join(policies, on=applies_to_host, how="inner")
        .withColumn("_policy_rank", F.row_number().over(org_specific_first))
        .where(F.col("_policy_rank") == 1)
    )
    observed_number = _metric_value(metrics, "double")
    observed_text = _metric_value(metrics, "string")
    below_min = (F.col("kind") == "min") & (observed_number < F.col("threshold"))
    above_max = (F.col("kind") == "max") & (observed_number > F.col("threshold"))
    not_allowed = (F.col("kind") == "allowed") & ~F.array_contains(F.col("allowed_values"), observed_text)
    is_violation = F.coalesce(below_min | above_max | not_allowed, F.lit(False))
    expected = (
        F.when(F.col("kind") == "min", F.concat(F.lit(">= "), F.col("threshold").cast("string")))
        .when(F.col("kind") == "max", F.concat(F.lit("<= "), F.col("threshold").cast("string")))
        .otherwise(F.concat(F.lit("one of "), F.array_join("allowed_values", ", ")))
    )
    return (
        effective
        .where(is_violation)
        .select(
            "event_date", "org_id", "host_id", "hostname", "collected_at", "rule", "metric",
            observed_text.alias("observed"), expected.alias("expected"),
        )
        .select(*COLUMNS)
    )
