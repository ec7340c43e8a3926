"""The columns the jobs write to a table of a dataset, as the contract and the gold modules declare them: what a
test hands ``lf_tags.plan_dataset`` instead of the columns a catalog holds (the jobs read those from Glue)."""
from __future__ import annotations

from spark_jobs.contract.model import Contract
from spark_jobs.lake.config import gold_table_name
from spark_jobs.tables import lf_tags


def declared_columns(contract: Contract, layer: str, table: str) -> tuple[str, ...]:
    """Silver's columns from the contract, a gold table's from its module's ``COLUMNS`` (what the run's final
    ``select`` keeps)."""
    if layer == "silver":
        return lf_tags.known_silver_columns(contract)
    gold = next(g for g in contract.gold if gold_table_name(contract.dataset, g) == table)
    return lf_tags.gold_declaration(gold)[0]
