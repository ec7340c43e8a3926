"""Erasure subjects: who is to be erased, the checks a request must pass, and the tenant's erasure key.

A subject is ``<column>=<value>``: a ``subject_keys`` column of the tenant's contracts and the value that
identifies the person (``user_id=user-0042``). The value is normalised as silver normalises that column
(trimmed; lower/upper-cased when the contract says ``case``; NFC-normalised; a number in its canonical
form), so ``USER-0042`` and ``user-0042`` are the same subject of a lower-cased column. ``check_request`` refuses a
request whose ids do not meet their subject keys' rules (``matching``), before anything changes.

The lake's erasure key (``spark_jobs/jobs/pseudonyms.py``) keys two HMAC-SHA256 uses, domain-separated: the subject
hash a receipt records instead of the id (``receipt:<column>=<value>``, here), and the pseudonym that replaces a
subject key in a pseudonymised gold table (the normalised value itself), so a receipt never equals a pseudonym.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import hashlib
import hmac
import os
from pathlib import Path
from typing import Callable, Iterable

from spark_jobs.contract.model import Contract
from spark_jobs.contract.parts import decimal_precision_scale
from spark_jobs.erasure.matching import IdRuleError, KeyRule, Needles, Owner, check_id, is_numeric_looking, normal_id
from spark_jobs.jobs.pseudonyms import pseudonym
from spark_jobs.lake.config import gold_table_name

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
    """``COLUMN=VALUE``; a malformed one is refused without echoing it (it may be an id)."""
    column, sep, value = text.partition("=")
    if not sep or not column.strip() or not value.strip():
        what = "no '='" if not sep else "no column before '='" if not column.strip() else "no value after '='"
        raise SubjectError(f"a subject of {len(text)} characters is not COLUMN=VALUE ({what}; e.g. user_id=user-0042)")
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
    """The value as silver stores it in ``subject.column`` of ``contract``, as text (a number canonical; a
    string cased by the key's rule and NFC-normalised): ``matching.normal_id``."""
    column = contract.column(subject.column)
    return normal_id(column.type, column.case, subject.value.strip())


_INT_RANGES = {"int": (-(2 ** 31), 2 ** 31 - 1), "long": (-(2 ** 63), 2 ** 63 - 1)}


def typed_value(contract: Contract, subject: Subject) -> str | int | decimal.Decimal | None:
    """The value as a Python value of the column's type (None: no value of that type can equal it)."""
    text = normalised(contract, subject)
    kind = contract.column(subject.column).type
    if kind == "string":
        return text
    number = decimal.Decimal(text)
    if kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        return int(number) if number == number.to_integral_value() and low <= number <= high else None
    precision, scale = decimal_precision_scale(kind)
    scaled = number.quantize(decimal.Decimal(1).scaleb(-scale)) if -number.as_tuple().exponent <= scale else None
    if scaled is None or len(scaled.as_tuple().digits) > precision:
        return None
    return scaled


def spark_text(contract: Contract, subject: Subject) -> str:
    """The value as Spark casts the typed column to string (what a pseudonymised gold hashes)."""
    value = typed_value(contract, subject)
    return normalised(contract, subject) if value is None else str(value)


def applies(contract: Contract, subject: Subject) -> bool:
    return subject.column in (contract.subject_keys or ())


def check_request(contracts: Iterable[Contract], subjects: list[Subject]) -> None:
    """Refuse (``SubjectError``, one line) a request with an id its subject key's rules do not admit:
    not one token, shorter than ``min_length``, not matching ``pattern``, or not a number of a numeric key."""
    for contract in contracts:
        for position, subject in enumerate(subjects, 1):
            if not applies(contract, subject):
                continue
            rule = contract.subject_key(subject.column)
            try:
                check_id(normalised(contract, subject), column=subject.column,
                         type_name=contract.column(subject.column).type, pattern=rule.pattern,
                         min_length=rule.min_length, position=position, dataset=contract.dataset)
            except IdRuleError as exc:
                raise SubjectError(str(exc)) from None
            kind = contract.column(subject.column).type
            if typed_value(contract, subject) is None:
                raise SubjectError(f"subject {position} ({subject.label}): not a value of {contract.dataset}."
                                   f"{subject.column} ({kind}: out of range, or more decimals than its scale); "
                                   "nothing was changed")


def key_names(contract: Contract, column_name: str) -> set[str]:
    """The names a subject key goes by in ``contract``'s own objects: the column, its landing field
    (``source``) and its name before a rename (``renamed_from``)."""
    column = contract.column(column_name)
    return {name for name in (column.name, column.landing_name, column.renamed_from) if name}


def owner(contract: Contract) -> Owner:
    """The objects of the lake that are ``contract``'s dataset's own, and how its landing files are written."""
    dataset, landing = contract.dataset, contract.landing
    prefixes = (f"landing/{dataset}/", f"bronze/{dataset}/", f"quarantine/{dataset}/", f"silver/{dataset}/",
                *[f"gold/{gold_table_name(dataset, g)}/" for g in contract.gold], f"checkpoints/{dataset}/",
                *[f"reports/{layer}/{dataset}/" for layer in ("bronze", "silver", "gold")])
    csv = landing.format == "csv"
    return Owner(dataset, prefixes, f"landing/{dataset}/", landing.encoding if csv else "utf-8",
                 landing.delimiter if csv else None, landing.quote if csv else '"', landing.escape if csv else '"')


def needles(contracts: Iterable[Contract], subjects: list[Subject], key: bytes) -> Needles:
    """What the scans look for (``matching.Needles``): per dataset of ``contracts`` and subject key, a
    ``KeyRule`` (its names in that dataset, its type and case rule, the ids normalised); each string id with a
    letter also as a token (in any case when its key has a ``case`` rule, else as written); each dataset's
    gold pseudonyms (any case); and which objects each dataset owns."""
    tokens: set[str] = set()
    exact: set[str] = set()
    rules: list[KeyRule] = []
    owners: list[Owner] = []
    for contract in contracts:
        owners.append(owner(contract))
        for column_name in contract.subject_keys or ():
            values = sorted({normalised(contract, s) for s in subjects if s.column == column_name})
            if not values:
                continue
            column = contract.column(column_name)
            rules.append(KeyRule.of(key_names(contract, column_name), column.type, values, column.case, contract.dataset))
            if column.type == "string":
                for value in values:
                    if not is_numeric_looking(value):
                        (tokens if column.case else exact).add(value)
        if contract.pseudonymise_gold:
            tokens.update(pseudonym(key, spark_text(contract, s)) for s in subjects if applies(contract, s))
    return Needles.build(tokens, rules, exact, owners)


def subject_hash(key: bytes, subject: Subject) -> str:
    """What a receipt records: HMAC-SHA256 of ``receipt:<column>=<value>`` (hex)."""
    message = f"{RECEIPT_DOMAIN}{subject.column}={subject.value.strip()}".encode("utf-8")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def subjects_digest(key: bytes, subjects: list[Subject], contracts: Iterable[Contract] = ()) -> str:
    """A keyed hash of the request's set of subjects, each value as the first of ``contracts`` that lists its
    column normalises it (``Ann@X.com`` and ``ann@x.com`` of a lower-cased column are one subject): the same
    subjects give the same digest, so a killed request is resumed and a repeated one cites the earlier (the
    ids themselves are never stored)."""
    contracts = list(contracts)

    def value(subject: Subject) -> str:
        owner = next((c for c in contracts if applies(c, subject)), None)
        return normalised(owner, subject) if owner is not None else subject.value.strip()

    message = "\n".join(sorted({f"{s.column}={value(s)}" for s in subjects})).encode("utf-8")
    return hmac.new(key, b"request:" + message, hashlib.sha256).hexdigest()[:32]


def new_request_id(now: dt.datetime | None = None) -> str:
    """A request's id, unique per request: ``er-<UTC time>-<8 random hex digits>``."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return f"er-{now.strftime('%Y%m%dT%H%M%SZ')}-{os.urandom(4).hex()}"
