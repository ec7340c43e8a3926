"""How the dataset's tables are partitioned, from its contract: what the silver and gold jobs write with, and
what ``contract plan`` compares the live tables with (one home for both, so neither imports the other)."""
from __future__ import annotations

from spark_jobs.contract import Contract
from spark_jobs.io import tables
from spark_jobs.transforms.gold import GoldSpec


class GoldPartitioningError(ValueError):
    """A gold module declares a partitioning the tables do not support."""


def silver_partitioning(contract: Contract) -> tables.Partitioning:
    """``days(<event time>)`` (hidden: readers filter on the column itself), or ``months(<event time>)``
    at the contract's ``partition_granularity: month``."""
    kind = contract.column(contract.event_time).type
    return tables.Partitioning.of(contract.event_time, "timestamp" if kind == "timestamp" else "date",
                                  contract.partition_granularity)


def gold_partitioning(spec: GoldSpec, granularity: str = "day") -> tables.Partitioning:
    """Identity on the gold's ``event_date`` column (``PARTITION_BY``): the column is the event date
    itself, so a ``days()`` transform would give the same partitions; ``months(event_date)`` at the
    contract's ``partition_granularity: month``."""
    if len(spec.partition_by) != 1:
        raise GoldPartitioningError(f"gold {spec.name}: PARTITION_BY must name one date column, got {spec.partition_by}")
    return tables.Partitioning.of(spec.partition_by[0], "date", granularity)
