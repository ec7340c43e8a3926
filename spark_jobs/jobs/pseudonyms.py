"""The lake's erasure key and the pseudonyms it keys: what a pseudonymised gold table writes in place of a subject
key (``jobs/gold.py``), and what the erasure matches and records with (``erasure/subjects.py``).

The key is 32 random bytes per lake at ``checkpoints/_erasure/key`` (the job role's prefix: the consumer role
cannot read ``checkpoints/``), created on first use, create-only (S3 ``If-None-Match: *``, a hard link in a
folder lake; of two first runs that race, both use the one written first) and written SSE-KMS with the tenant
key. A pseudonym is HMAC-SHA256 of the normalised value itself; the erasure's receipts hash a domain-separated
text with the same key (``erasure.subjects.subject_hash``), so a receipt never equals a pseudonym.
"""
from __future__ import annotations

import hashlib
import hmac
import os
from typing import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F

from spark_jobs.io import create_only, storage
from spark_jobs.lake.config import LakeConfig

KEY_BYTES = 32


class ErasureKeyMissing(ValueError):
    """The lake has no erasure key yet, and the caller asked not to create one."""


def key_uri(lake: LakeConfig) -> str:
    return lake.path("checkpoints", "_erasure", "key")


def load_key(spark, lake: LakeConfig, create: bool = True) -> bytes:
    """The lake's erasure key (hex text in the lake), created on first use unless ``create`` is False. The
    first write is create-only, so two first users that race end up with the same key: the one written first."""
    uri = key_uri(lake)
    if storage.exists(spark, uri):
        return bytes.fromhex(storage.read_text(spark, uri).strip())
    if not create:
        raise ErasureKeyMissing(f"the lake has no erasure key at {uri} yet")
    create_only.create_text(lake, "checkpoints/_erasure/key", os.urandom(KEY_BYTES).hex() + "\n")
    return bytes.fromhex(storage.read_text(spark, uri).strip())  # ours, or the one that won the race


def pseudonym(key: bytes, value: str) -> str:
    """The pseudonym of a (normalised) subject-key value in a pseudonymised gold table (hex)."""
    return hmac.new(key, value.encode("utf-8"), hashlib.sha256).hexdigest()


def pseudonymiser(spark, key: bytes) -> Callable[[Column], Column]:
    """A function Column -> Column computing ``pseudonym(key, value)`` for every row (the value cast to
    text; null stays null). The key reaches the executors in a broadcast variable read by an Arrow-batched
    Python UDF: it is never a literal in the plan, so neither the key nor its HMAC pads show in
    ``explain()``, the App UI or the event log."""
    from pyspark.sql import types as T

    shared = spark.sparkContext.broadcast(bytes(key))

    def keyed_hash(value: str | None) -> str | None:
        # The Arrow-batched UDF may hand a null over as NaN: only text is hashed.
        return pseudonym(shared.value, value) if isinstance(value, str) else None

    udf = F.udf(keyed_hash, T.StringType(), useArrow=True)
    return lambda column: udf(column.cast("string"))
