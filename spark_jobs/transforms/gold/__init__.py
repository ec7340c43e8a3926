"""Gold transformations, one module per output table, found by name (the contract's ``gold`` list).

A gold module is plain data + one pure function, and the engine needs nothing else:

    PARTITION_BY = ("event_date",)          # partition columns of the output (dynamic overwrite)
    RECONCILE_COLUMN = "reading_count"      # optional: its sum must equal the silver rows read
    SILVER_DATES = (0, 0)                   # optional: an output of event date D is built from silver D+0..D+0
    def build(silver: DataFrame, options: dict) -> DataFrame: ...

``options`` is the contract's ``gold_options.<name>`` mapping ({} when absent). ``SILVER_DATES`` is what an
incremental gold run needs: after silver's date S changed, it rebuilds the outputs of the dates D with
``D + low <= S <= D + high`` and reads silver's dates ``D + low .. D + high`` for them (a session that may
cross midnight: ``(-1, 1)``).
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
    # (low, high): an output of event date D is built from silver's dates D+low..D+high (low <= 0 <= high).
    silver_dates: tuple[int, int] = (0, 0)


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
    silver_dates = getattr(module, "SILVER_DATES", (0, 0))
    if not (isinstance(silver_dates, tuple) and len(silver_dates) == 2 and all(isinstance(d, int) for d in silver_dates)
            and silver_dates[0] <= 0 <= silver_dates[1]):
        raise GoldNotFoundError(f"gold transformation '{name}': SILVER_DATES must be (low, high) whole days with "
                                f"low <= 0 <= high, got {silver_dates!r}")
    return GoldSpec(
        name=name,
        build=module.build,
        partition_by=tuple(getattr(module, "PARTITION_BY", ("event_date",))),
        reconcile_column=getattr(module, "RECONCILE_COLUMN", None),
        silver_dates=silver_dates,
    )
