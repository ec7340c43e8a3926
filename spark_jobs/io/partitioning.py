"""How the dataset's tables are partitioned: the ``Partitioning`` of a table (a column and its granule, day or
month, and the row filters that cover a set of dates), and the one a dataset's silver and gold tables get from its
contract: what the silver and gold jobs write with, and what ``contract plan`` compares the live tables with (one
home for both, so neither imports the other)."""
from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Iterable

from spark_jobs.contract.model import Contract
from spark_jobs.transforms.gold import GoldSpec


class GoldPartitioningError(ValueError):
    """A gold module declares a partitioning the tables do not support."""


def silver_partitioning(contract: Contract) -> Partitioning:
    """``days(<event time>)`` (hidden: readers filter on the column itself), or ``months(<event time>)``
    at the contract's ``partition_granularity: month``."""
    kind = contract.column(contract.event_time).type
    return Partitioning.of(contract.event_time, "timestamp" if kind == "timestamp" else "date",
                                  contract.partition_granularity)


def gold_partitioning(spec: GoldSpec, granularity: str = "day") -> Partitioning:
    """Identity on the gold's ``event_date`` column (``PARTITION_BY``): the column is the event date
    itself, so a ``days()`` transform would give the same partitions; ``months(event_date)`` at the
    contract's ``partition_granularity: month``."""
    if len(spec.partition_by) != 1:
        raise GoldPartitioningError(f"gold {spec.name}: PARTITION_BY must name one date column, got {spec.partition_by}")
    return Partitioning.of(spec.partition_by[0], "date", granularity)


# More date ranges than this in a row filter become one range plus a date list (``Partitioning.rows``).
MAX_RANGE_TERMS = 32


# ---------------------------------------------------------------------------- partitioning and filters
@dataclasses.dataclass(frozen=True)
class Partitioning:
    """How a table is partitioned, and the row filters that select whole partitions of it.

    Attributes:
        column: the source column (the contract's event time, or a gold table's ``event_date``).
        transform: ``day`` (hidden ``days(column)`` on a timestamp), ``identity`` (a date column) or
            ``month`` (hidden ``months(column)``, on a timestamp or a date column).
        column_type: ``timestamp`` or ``date``: how a filter writes its literals (``month`` needs it;
            ``day`` implies a timestamp and ``identity`` a date). @default - "timestamp"
    """

    column: str
    transform: str
    column_type: str = "timestamp"

    @classmethod
    def of(cls, column: str, column_type: str, granularity: str) -> "Partitioning":
        """The partitioning of a ``timestamp`` or ``date`` column at a contract's ``partition_granularity``:
        ``day`` gives ``days(ts)`` or the date column itself (the same partitions), ``month`` gives ``months()``."""
        if granularity == "month":
            return cls(column, "month", column_type)
        return cls(column, "day", "timestamp") if column_type == "timestamp" else cls(column, "identity", "date")

    @property
    def sql(self) -> str:
        """The ``PARTITIONED BY`` term, e.g. ``days(`event_ts`)``."""
        if self.transform in ("day", "month"):
            return f"{self.transform}s(`{self.column}`)"
        return f"`{self.column}`"

    @property
    def spec(self) -> str:
        """How Spark's DESCRIBE TABLE names it, e.g. ``days(event_ts)``."""
        return f"{self.transform}s({self.column})" if self.transform in ("day", "month") else self.column

    @property
    def _is_date(self) -> bool:
        return self.transform == "identity" or self.column_type == "date"

    def _literal(self, day: str) -> str:
        return f"DATE '{day}'" if self._is_date else f"TIMESTAMP '{day} 00:00:00'"

    def _ranges_filter(self, ranges: list[tuple[str, str]]) -> list[str]:
        column = f"`{self.column}`"
        return [f"({column} >= {self._literal(start)} AND {column} < {self._literal(end)})" for start, end in ranges]

    def _day_terms(self, dates: list[str]) -> list[str]:
        column = f"`{self.column}`"
        if self.transform == "identity":
            return [f"{column} IN ({', '.join(self._literal(d) for d in dates)})"] if dates else []
        return self._ranges_filter(_date_ranges(dates))

    def rows(self, dates: Iterable[str], include_null: bool) -> str:
        """A SQL filter selecting exactly the rows of ``dates`` (``YYYY-MM-DD``), plus the rows without a
        value when ``include_null``. At ``day`` granularity these are whole partitions (``covering``).

        Dates that make more than ``MAX_RANGE_TERMS`` ranges (a file with a reading every few days over
        decades: thousands) are one range from the first to the last date AND the date IN the list (a hash
        lookup per row): thousands of OR'ed ranges made Spark generate code too large to compile, which it
        then interpreted row by row (a read-back of 1M rows over 2,000 dates took 91 s)."""
        column = f"`{self.column}`"
        dates = sorted(set(dates))
        if self.transform != "identity" and len(_date_ranges(dates)) > MAX_RANGE_TERMS:
            day = column if self._is_date else f"CAST({column} AS DATE)"
            last = (dt.date.fromisoformat(dates[-1]) + dt.timedelta(days=1)).isoformat()
            terms = [f"({column} >= {self._literal(dates[0])} AND {column} < {self._literal(last)} AND "
                     f"{day} IN ({', '.join(f'DATE {d!r}' for d in dates)}))"]
        else:
            terms = self._day_terms(dates)
        if include_null:
            terms.append(f"{column} IS NULL")
        return " OR ".join(terms) or "false"

    def covering(self, dates: Iterable[str], include_null: bool) -> str:
        """A SQL filter selecting exactly the partitions that hold ``dates`` (``YYYY-MM-DD``), plus the null
        partition when ``include_null``: aligned with the partitioning, so Iceberg replaces whole files.
        At ``month`` granularity: the whole months of the dates. (Ranges only: Iceberg turns this filter
        into its own expression to delete whole files.)"""
        if self.transform != "month":
            terms = self._day_terms(sorted(set(dates)))
            if include_null:
                terms.append(f"`{self.column}` IS NULL")
            return " OR ".join(terms) or "false"
        terms = self._ranges_filter(_month_ranges(sorted({d[:7] for d in dates})))
        if include_null:
            terms.append(f"`{self.column}` IS NULL")
        return " OR ".join(terms) or "false"

    def partial(self, dates: Iterable[str]) -> list[str]:
        """The partitions (``YYYY-MM``) that ``dates`` cover only in part: a replacement of those
        partitions must carry their other dates' rows over. Always ``[]`` at ``day`` granularity."""
        if self.transform != "month":
            return []
        by_month: dict[str, int] = {}
        for day in set(dates):
            by_month[day[:7]] = by_month.get(day[:7], 0) + 1
        return sorted(month for month, days in by_month.items() if days < days_in_month(month))


def granule(day: str, granularity: str) -> str:
    """The partition value of an event date ``YYYY-MM-DD``: the date itself, or its month ``YYYY-MM``."""
    return day[:7] if granularity == "month" else day


def days_in_month(month: str) -> int:
    first = dt.date.fromisoformat(f"{month}-01")
    return ((first.replace(day=28) + dt.timedelta(days=4)).replace(day=1) - first).days


def _next_month(month: str) -> str:
    first = dt.date.fromisoformat(f"{month}-01")
    return (first.replace(day=28) + dt.timedelta(days=4)).replace(day=1).isoformat()[:7]


def _month_ranges(months: list[str]) -> list[tuple[str, str]]:
    """Consecutive months (``YYYY-MM``) merged into half-open date ranges [first day, first day after)."""
    ranges: list[list[str]] = []
    for month in months:
        if ranges and ranges[-1][1] == month:
            ranges[-1][1] = _next_month(month)
        else:
            ranges.append([month, _next_month(month)])
    return [(f"{start}-01", f"{end}-01") for start, end in ranges]


def _date_ranges(dates: list[str]) -> list[tuple[str, str]]:
    """Consecutive dates merged into half-open ranges [start, day after end)."""
    ranges: list[tuple[dt.date, dt.date]] = []
    for text in dates:
        day = dt.date.fromisoformat(text)
        if ranges and ranges[-1][1] == day:
            ranges[-1] = (ranges[-1][0], day + dt.timedelta(days=1))
        else:
            ranges.append((day, day + dt.timedelta(days=1)))
    return [(start.isoformat(), end.isoformat()) for start, end in ranges]
