"""Erasure subjects: who is to be erased, and the tenant's erasure key.

A subject is ``<column>=<value>``: a ``subject_keys`` column of the tenant's contracts and the value that
identifies the person (``user_id=user-0042``). The value is normalised as silver normalises that column
(trimmed; lower/upper-cased when the contract says ``case``), so ``USER-0042`` and ``user-0042`` are the
same subject of a lower-cased column.

The erasure key is 32 random bytes per lake at ``checkpoints/_erasure/key`` (the job role's prefix: the
consumer role cannot read ``checkpoints/``), created on first use and written SSE-KMS with the tenant
key. It keys two HMAC-SHA256 uses, domain-separated: the subject hash a receipt records instead of the
id (``receipt:<column>=<value>``), and the pseudonym that replaces a subject key in a pseudonymised gold
table (the normalised value itself), so a receipt never equals a pseudonym.
"""
from __future__ import annotations

import dataclasses
import hashlib
import hmac
import os
from pathlib import Path
from typing import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F

from spark_jobs.contract import Contract
from spark_jobs.io import storage
from spark_jobs.lake import LakeConfig

KEY_BYTES = 32
RECEIPT_DOMAIN = "receipt:"


class SubjectError(ValueError):
    """A subject argument or file is unusable; the message is one line."""


@dataclasses.dataclass(frozen=True)
class Subject:
    """One data subject: a subject-key column and its value as the requester gave it."""

    column: str
    value: str

    @property
    def label(self) -> str:
        return f"{self.column}=<{len(self.value)} characters>"  # for messages: never the value itself


def parse_subject(text: str) -> Subject:
    column, sep, value = text.partition("=")
    if not sep or not column.strip() or not value.strip():
        raise SubjectError(f"subject '{text[:40]}' is not COLUMN=VALUE (e.g. user_id=user-0042)")
    return Subject(column.strip(), value.strip())


def is_remote(name: str) -> bool:
    """A subject file in the lake (``s3://`` or ``s3a://``), as an EMR erase run gets it (``infra.deploy``)."""
    return name.startswith(("s3://", "s3a://"))


def read_subjects(arguments: list[str], files: list[str],
                  read_remote: Callable[[str], str] | None = None) -> list[Subject]:
    """Subjects from ``--subject`` arguments and ``--subject-file`` files (one COLUMN=VALUE per line;
    blank lines and ``#`` comments skipped), without duplicates, in a stable order. A file named by an
    ``s3://``/``s3a://`` URI is read with ``read_remote`` (URI -> text)."""
    found = [parse_subject(text) for text in arguments]
    for name in files:  # messages name the file as given (a Path would turn s3:// into s3:/)
        try:
            if is_remote(name):
                if read_remote is None:
                    raise SubjectError(f"subject file {name}: no reader for object URIs")
                lines = read_remote(name).splitlines()
            else:
                lines = Path(name).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise SubjectError(f"subject file {name}: {exc.strerror or exc}") from None
        for number, line in enumerate(lines, 1):
            if line.strip() and not line.lstrip().startswith("#"):
                try:
                    found.append(parse_subject(line))
                except SubjectError as exc:
                    raise SubjectError(f"subject file {name} line {number}: {exc}") from None
    if not found:
        raise SubjectError("no subject given: pass --subject COLUMN=VALUE or --subject-file FILE")
    return sorted(set(found), key=lambda s: (s.column, s.value))


def normalised(contract: Contract, subject: Subject) -> str:
    """The value as silver stores it in ``subject.column`` of ``contract``."""
    value = subject.value.strip()
    case = contract.column(subject.column).case
    return value.lower() if case == "lower" else value.upper() if case == "upper" else value


def key_uri(lake: LakeConfig) -> str:
    return lake.path("checkpoints", "_erasure", "key")


def load_key(spark, lake: LakeConfig, create: bool = True) -> bytes:
    """The lake's erasure key (hex text in the lake), created on first use unless ``create`` is False."""
    uri = key_uri(lake)
    if storage.exists(spark, uri):
        return bytes.fromhex(storage.read_text(spark, uri).strip())
    if not create:
        raise SubjectError(f"the lake has no erasure key at {uri} yet")
    key = os.urandom(KEY_BYTES)
    storage.write_text(spark, uri, key.hex() + "\n")
    return bytes.fromhex(storage.read_text(spark, uri).strip())  # whoever wrote last: one key for everyone


def subject_hash(key: bytes, subject: Subject) -> str:
    """What a receipt records: HMAC-SHA256 of ``receipt:<column>=<value>`` (hex)."""
    message = f"{RECEIPT_DOMAIN}{subject.column}={subject.value.strip()}".encode("utf-8")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def pseudonym(key: bytes, value: str) -> str:
    """The pseudonym of a (normalised) subject-key value in a pseudonymised gold table (hex)."""
    return hmac.new(key, value.encode("utf-8"), hashlib.sha256).hexdigest()


def pseudonym_column(key: bytes, column: Column) -> Column:
    """``pseudonym(key, value)`` for every row, in Spark SQL (HMAC-SHA256 from two ``sha2`` calls:
    H((K ^ opad) || H((K ^ ipad) || m))), so no Python UDF runs. Null stays null."""
    block = key.ljust(64, b"\0") if len(key) <= 64 else hashlib.sha256(key).digest().ljust(64, b"\0")
    inner_pad = bytes(b ^ 0x36 for b in block)
    outer_pad = bytes(b ^ 0x5C for b in block)
    inner = F.sha2(F.concat(F.lit(inner_pad), F.encode(column.cast("string"), "UTF-8")), 256)
    return F.when(column.isNotNull(), F.sha2(F.concat(F.lit(outer_pad), F.unhex(inner)), 256))


def request_id(key: bytes, subjects: list[Subject]) -> str:
    """A request's id: the same subjects give the same id, so re-running a killed request resumes it."""
    message = "\n".join(f"{s.column}={s.value.strip()}" for s in subjects).encode("utf-8")
    return "er-" + hmac.new(key, b"request:" + message, hashlib.sha256).hexdigest()[:16]
