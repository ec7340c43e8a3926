"""A request's progress, ``checkpoints/_erasure/<request>/state.json``: the steps done and their facts.

Rewritten after every step (one PUT: a reader sees the old or the new state), so a run killed at any
moment is finished by running the same command again. It holds counts, partition values, snapshot ids
and lineage, never an id (the job role's prefix; deleted with the work folder when the receipt is written).
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any

from pyspark.sql import SparkSession

from spark_jobs.io import storage


@dataclasses.dataclass
class Journal:
    spark: SparkSession | None
    uri: str
    state: dict[str, Any]

    @classmethod
    def open(cls, spark: SparkSession, uri: str, fresh: dict[str, Any]) -> "Journal":
        state = json.loads(storage.read_text(spark, uri)) if storage.exists(spark, uri) else fresh
        return cls(spark, uri, state)

    @classmethod
    def in_memory(cls) -> "Journal":
        """A journal that records nothing anywhere (a dry run)."""
        return cls(None, "", {"done": []})

    def done(self, step: str) -> bool:
        return step in self.state["done"]

    def mark(self, step: str, **facts: Any) -> None:
        self.state["done"].append(step)
        for key, value in facts.items():
            self.state.setdefault("facts", {})[key] = value
        self.save()

    def fact(self, key: str, default: Any = None) -> Any:
        return self.state.get("facts", {}).get(key, default)

    def save(self) -> None:
        if self.spark is not None:
            storage.write_text(self.spark, self.uri, json.dumps(self.state, indent=1, sort_keys=True))
