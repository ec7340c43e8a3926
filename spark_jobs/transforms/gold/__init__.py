"""Gold transformations, one module per output table, found by name (the contract's ``gold`` list).

A gold module is plain data + one pure function, and the engine needs nothing else:

    PARTITION_BY = ("event_date",)          # partition columns of the output (dynamic overwrite)
    RECONCILE_COLUMN = "reading_count"      # optional: its sum must equal the silver rows read
    def build(silver: DataFrame, options: dict) -> DataFrame: ...

``options`` is the contract's ``gold_options.<name>`` mapping ({} when absent).
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable

from pyspark.sql import DataFrame

GOLD_PACKAGE = __name__


@dataclasses.dataclass(frozen=True)
class GoldSpec:
    name: str
    build: Callable[[DataFrame, dict[str, Any]], DataFrame]
    partition_by: tuple[str, ...]
    reconcile_column: str | None


class GoldNotFoundError(LookupError):
    pass


def load_gold(name: str) -> GoldSpec:
    """Import ``spark_jobs.transforms.gold.<name>`` and describe it."""
    try:
        module = importlib.import_module(f"{GOLD_PACKAGE}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{GOLD_PACKAGE}.{name}":
            raise
        raise GoldNotFoundError(
            f"gold transformation '{name}': no module spark_jobs/transforms/gold/{name}.py"
        ) from None
    if not callable(getattr(module, "build", None)):
        raise GoldNotFoundError(f"gold transformation '{name}': module has no build(silver, options) function")
    return GoldSpec(
        name=name,
        build=module.build,
        partition_by=tuple(getattr(module, "PARTITION_BY", ("event_date",))),
        reconcile_column=getattr(module, "RECONCILE_COLUMN", None),
    )
