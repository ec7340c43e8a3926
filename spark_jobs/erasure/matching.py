"""When a value, a record or a text holds a data subject's id: the rules every step of an erasure shares.

No Spark here: the request checks, the scan on the executors (``scan.py``), the report scrubbing and
the benchmark use this module as it is; ``records.py`` applies the same rules to the lake's rows in Spark.

1. **Typed equality**: a record is a subject's when its subject column, typed as the contract says
   (``string`` after the contract's normalisation, ``int``, ``long``, ``decimal(P,S)`` by value), equals
   the id. Nothing else makes a record someone's.
2. **A whole token**, where only text exists (a malformed record, a quarantined record's raw text,
   reports, logs, the text of another subject's record): a token is a longest run of letters and
   digits joined by ``-_.@+`` (``TOKEN_RE``); the id matches a token equal to it, case-insensitively,
   never a part of one. ``user-001`` is not in ``user-0010``, ``ann@x.com`` not in ``joann@x.com`` or
   ``ann@x.com.au``, but ``ann@x.com`` is in ``mail ann@x.com.`` and ``user-0016`` in ``/u/user-0016?x=1``.
   A derived id that extends the id (``user-0016-20201116T220000``) is another token: pseudonymise gold
   (``pseudonymise_gold``) where such columns exist.
3. **Keyed, for numbers**: an id with no letter (``1042``, a string of digits, a numeric key) recurs in
   any text as a whole token (``"bytes": 1042``), so in text it matches only as the value of its own key:
   the key's name (the column or its landing name), ``:`` or ``=``, the id (``"customer_id": 1042``,
   ``customer_id=01042.0``), compared by value for numeric keys. In Parquet and Avro it matches the
   column of that name.

A request is checked before anything changes (``check_ids``): each id, normalised, must be one token,
at least ``min_length`` characters (default 4) and match the subject key's ``pattern`` when the contract
has one; else one line names the subject by position and length, never by value.
"""
from __future__ import annotations

import dataclasses
import decimal
import json
import re
from typing import Iterable, Mapping

JOINERS = "-_.@+"
# Java (Spark) and RE2 (pyarrow) spell "letters and digits" \p{L}\p{N}; Python's re spells it [^\W_].
TOKEN_RE_JAVA = r"[\p{L}\p{N}]+(?:[-_.@+]+[\p{L}\p{N}]+)*"
TOKEN_RE = re.compile(r"[^\W_]+(?:[-_.@+]+[^\W_]+)*")
# The value after a key in text: "k": 1, k=1, 'k': '1', \"k\":\"1\" (JSON inside JSON). Group 1 is the key,
# group 2 the value (a number, or a run of letters, digits and joiners).
_KEYED_VALUE = r"""\\?["']?\s*[:=]\s*\\?["']?(-?[0-9]+(?:\.[0-9]+)?|[\w.@+-]+)(?![\w@+-]|\.\w)"""
REPLACEMENT = "[erased]"
_W, _J = r"\p{L}\p{N}", r"\-_.@+"


class IdRuleError(ValueError):
    """An id does not meet its subject key's rules; one line, naming the subject by position and length."""


def is_token(text: str) -> bool:
    return TOKEN_RE.fullmatch(text) is not None


def is_numeric_looking(text: str) -> bool:
    """No letter in it: matched in text only as the value of its key (rule 3)."""
    return not any(ch.isalpha() for ch in text)


def canonical_number(text: str) -> str | None:
    """The value of a number written in text, as one canonical text (``01042.50`` -> ``1042.5``); None
    when it is not a plain decimal number."""
    try:
        value = decimal.Decimal(text.strip())
    except (decimal.InvalidOperation, ValueError):
        return None
    if not value.is_finite():
        return None
    normal = value.normalize()
    sign, digits, exponent = normal.as_tuple()
    if exponent > 0:
        normal = normal.quantize(decimal.Decimal(1))
    text = format(normal, "f")
    return "0" if text in ("-0", "0") else text


def _number_regex(canonical: str) -> str:
    """RE2/Java text that matches the number ``canonical`` however it is written: leading zeros, and
    trailing zeros after the point."""
    negative, body = canonical.startswith("-"), canonical.lstrip("-")
    whole, _, fraction = body.partition(".")
    pattern = "0*" + re.escape(whole) + (r"\." + re.escape(fraction) + "0*" if fraction else r"(?:\.0*)?")
    return ("-" if negative else "") + pattern


@dataclasses.dataclass(frozen=True)
class Needles:
    """What the scans and the scrubbing look for (lower-cased): ``tokens`` anywhere as a whole token
    (rule 2), ``keyed`` only after or in their key (rule 3): key name -> ids (numbers in canonical form)."""

    tokens: frozenset[str] = frozenset()
    keyed: Mapping[str, frozenset[str]] = dataclasses.field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.tokens or self.keyed)

    @classmethod
    def build(cls, tokens: Iterable[str], keyed: Mapping[str, Iterable[str]]) -> "Needles":
        return cls(frozenset(t.lower() for t in tokens if t),
                   {k.lower(): frozenset(v.lower() for v in values) for k, values in keyed.items() if values})

    # ---------------------------------------------------------------------------- Python (small texts)
    def _keyed_re(self) -> re.Pattern | None:
        if not self.keyed:
            return None
        names = "|".join(re.escape(name) for name in sorted(self.keyed, key=len, reverse=True))
        return re.compile(r"(?<!\w)(" + names + ")" + _KEYED_VALUE, re.IGNORECASE)

    def _keyed_value_hit(self, key: str, value: str) -> bool:
        wanted = self.keyed.get(key.lower(), frozenset())
        number = canonical_number(value)
        return value.lower() in wanted or (number is not None and number in wanted)

    def text_hit(self, text: str) -> bool:
        """Whether ``text`` holds a subject by rule 2 or 3."""
        if self.tokens and any(m.group(0).lower() in self.tokens for m in TOKEN_RE.finditer(text)):
            return True
        keyed = self._keyed_re()
        return keyed is not None and any(self._keyed_value_hit(m.group(1), m.group(2)) for m in keyed.finditer(text))

    def redact(self, text: str) -> tuple[str, int]:
        """``text`` with every matching token (and keyed value) replaced by ``[erased]``; and how many."""
        count = 0

        def token(match: re.Match) -> str:
            nonlocal count
            if match.group(0).lower() in self.tokens:
                count += 1
                return REPLACEMENT
            return match.group(0)

        if self.tokens:
            text = TOKEN_RE.sub(token, text)
        keyed = self._keyed_re()
        if keyed is not None:
            def value(match: re.Match) -> str:
                nonlocal count
                if not self._keyed_value_hit(match.group(1), match.group(2)):
                    return match.group(0)
                count += 1
                start = match.start(2) - match.start(0)
                return match.group(0)[:start] + REPLACEMENT
            text = keyed.sub(value, text)
        return text, count

    # ---------------------------------------------------------------------------- RE2 (pyarrow, large data)
    def token_re2(self) -> str | None:
        """An RE2 pattern that finds any of ``tokens`` as a whole token (rule 2) in a text."""
        if not self.tokens:
            return None
        # Each id also as JSON escapes it (``j\u00fcrgen``): text inside JSON strings is often written so.
        forms = self.tokens | {json.dumps(t)[1:-1] for t in self.tokens}
        ids = "|".join(re.escape(t) for t in sorted(forms, key=len, reverse=True))
        return rf"(?i)(?:^|[^{_W}{_J}])[{_J}]*(?:{ids})[{_J}]*(?:$|[^{_W}{_J}])"

    def keyed_re2(self) -> str | None:
        """An RE2 pattern that finds a keyed id (rule 3): the key, ``:``/``=``, the id however written."""
        if not self.keyed:
            return None
        parts = []
        for key in sorted(self.keyed):
            values = "|".join(sorted(_number_regex(v) if canonical_number(v) == v else re.escape(v)
                                     for v in self.keyed[key]))
            parts.append(rf"""{re.escape(key)}\\?["']?\s*[:=]\s*\\?["']?(?:{values})""")
        return (rf"(?i)(?:^|[^{_W}_])(?:{'|'.join(parts)})"
                rf"(?:$|[^{_W}{_J}]|[{_J}]+(?:$|[^{_W}]))")

    def column_values(self, column: str) -> frozenset[str]:
        """The keyed ids a column of this name is compared with, by value (rule 3 in Parquet and Avro)."""
        return self.keyed.get(column.lower(), frozenset())


def keyed_re_java(names: Iterable[str]) -> str:
    """Spark (Java) regex whose group 2 is the value after any of ``names`` (rule 3, in Spark)."""
    alternatives = "|".join(r"\Q" + name + r"\E" for name in sorted(set(names), key=len, reverse=True))
    value = _KEYED_VALUE.replace(r"[\w.@+-]", r"[\p{L}\p{N}_.@+-]").replace(r"(?![\w@+-]|\.\w)",
                                                                             r"(?![\p{L}\p{N}_@+-]|\.[\p{L}\p{N}_])")
    return r"(?i)(?<![\p{L}\p{N}_])(" + alternatives + ")" + value


def check_id(value: str, *, column: str, type_name: str, pattern: str | None, min_length: int,
             position: int, dataset: str) -> None:
    """Refuse an id (already normalised) that its subject key's rules do not admit: ``IdRuleError``."""
    label = f"subject {position} ({column}=<{len(value)} characters>)"
    where = f"{dataset}.{column}"
    if type_name == "string":
        if not is_token(value):
            raise IdRuleError(f"{label}: an id is letters and digits, joined by {JOINERS} (one token); "
                              f"{where} cannot be matched exactly with this one; nothing was changed")
    elif canonical_number(value) is None:
        raise IdRuleError(f"{label}: {where} is {type_name}, and this id is not a number; nothing was changed")
    if len(value) < min_length:
        raise IdRuleError(f"{label}: shorter than {min_length} characters, the minimum of {where} (min_length in "
                          "its subject_keys entry); nothing was changed")
    if pattern is not None and re.fullmatch(pattern, value) is None:
        raise IdRuleError(f"{label}: does not match the pattern of {where} ({pattern}); nothing was changed")
