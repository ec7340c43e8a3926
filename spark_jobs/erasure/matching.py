"""When a value, a record or a text holds a data subject's id: the ONE matcher every step of an erasure uses.

No Spark here. ``Needles`` are the request's ids. ``Needles.hits`` (RE2 through pyarrow, an Arrow array
at a time) decides whether a text holds one: for the erase's rows in Spark (``records.py``, on the
executors through ``mapInArrow``), for the verification's scan of every object version (``scan.py``) and
for the reports alike. ``Needles.redact`` replaces what ``hits`` finds (Python ``re``: it needs the
positions); both engines get their patterns from one template (``_Dialect``), and
tests/spark_jobs/erasure/test_agreement.py proves they agree on generated records.

1. **Typed equality**: a record is a subject's when its subject column, typed as the contract says
   (``string`` after the contract's normalisation, ``int``, ``long``, ``decimal(P,S)`` by value), equals
   the id (``records.py``).
2. **A whole token**, where only text exists (a malformed record, a quarantined record's raw text,
   reports, logs, the text of another subject's record): a token is a longest run of letters and
   digits joined by ``-_.@+``; the id matches a token equal to it, never a part of one. ``user-001`` is
   not in ``user-0010``, ``ann@x.com`` not in ``joann@x.com`` or ``ann@x.com.au``, but ``ann@x.com`` is in
   ``mail ann@x.com.`` and ``user-0016`` in ``/u/user-0016?x=1``. **Case** follows the subject key: an id
   of a key without ``case`` matches as written (``USER-0010`` is not ``user-0010``); an id of a key with
   ``case: lower|upper`` (silver stores both spellings as one) and a gold pseudonym match in any case.
   A derived id that extends the id (``user-0016-20201116T220000``) is another token: pseudonymise gold
   (``pseudonymise_gold``) where such columns exist.
3. **Keyed, for numbers**: an id with no letter (``1042``, a string of digits, a numeric key) recurs in
   any text as a whole token (``"bytes": 1042``), so in text it matches only as the value of its own key:
   the key's name (the column or its landing name, in any case), ``:`` or ``=``, the id
   (``"customer_id": 1042``, ``customer_id=01042.0``, ``"customer_id": 1042.0`` as pandas writes an int
   column with nulls), a number with leading zeros, or trailing zeros after its point. In Parquet and
   Avro it matches the column of that name, by value.
4. **Escapes**: a text with a backslash is also read with its JSON escapes decoded (``\\n``, ``\\"``,
   ``\\u00fc``, surrogate pairs): ``"x\\nuser-0016"`` holds ``user-0016`` and ``j\\u00fcrgen`` is
   ``jürgen``. A hit in either reading counts; redaction replaces the id in the raw text where the
   decoded reading found it.

A request is checked before anything changes (``check_id``): each id, normalised, must be one token, a
text id at least ``min_length`` characters (default 4; a numeric key's id is only ever matched with its
key, so any number is accepted, customer ``42`` too) and match the subject key's ``pattern`` when the
contract has one; else one line names the subject by position and length, never by value.
"""
from __future__ import annotations

import dataclasses
import decimal
import functools
import re
from typing import Iterable, Mapping

JOINERS = "-_.@+"
REPLACEMENT = "[erased]"
TOKEN_RE = re.compile(r"[^\W_]+(?:[-_.@+]+[^\W_]+)*")
_J = r"[\-_.@+]"
_SPACE = r"[ \t\n\r\f]"  # RE2's \s and Python's differ; both engines get this class
# "k": 1, k=1, 'k': '1', \"k\":\"1\" (JSON in JSON), ""k"": 1 (JSON in a quoted CSV field)
_SEPARATOR = rf"""(?:\\?["']){{0,2}}{_SPACE}*[:=]{_SPACE}*(?:\\?["']){{0,2}}"""
# JSON string escapes; a surrogate pair first, so that it becomes one character.
_ESCAPE = re.compile(r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})"
                     r"|\\u([0-9a-fA-F]{4})|\\([\"\\/bfnrt])")
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class IdRuleError(ValueError):
    """An id does not meet its subject key's rules; one line, naming the subject by position and length."""


@dataclasses.dataclass(frozen=True)
class _Dialect:
    """How one regex engine spells the classes the rules need (RE2 has no lookaround; Python's ``$`` also
    matches before a final newline, its ``\\s`` and ``\\w`` are wider)."""

    not_word_joiner: str   # neither a letter or digit nor a joiner
    not_word: str          # not a letter or digit
    not_word_under: str    # neither a letter or digit nor "_"
    end: str


_RE2 = _Dialect(r"[^\p{L}\p{N}\-_.@+]", r"[^\p{L}\p{N}]", r"[^\p{L}\p{N}_]", "$")
_PY = _Dialect(r"[^\w\-.@+]", r"[\W_]", r"\W", r"\Z")


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
    """RE2/Python text that matches the number ``canonical`` however it is written: leading zeros, and
    trailing zeros after the point."""
    negative, body = canonical.startswith("-"), canonical.lstrip("-")
    whole, _, fraction = body.partition(".")
    pattern = "0*" + re.escape(whole) + (r"\." + re.escape(fraction) + "0*" if fraction else r"(?:\.0*)?")
    return ("-" if negative else "") + pattern


def _alternatives(texts: Iterable[str]) -> str:
    return "|".join(re.escape(t) for t in sorted(texts, key=lambda t: (-len(t), t)))


def unescaped(text: str) -> str:
    """``text`` with its JSON string escapes decoded (a lone surrogate becomes U+FFFD)."""
    return _ESCAPE.sub(_decoded_escape, text)


def _decoded_escape(match: re.Match) -> str:
    high, low, single, simple = match.groups()
    if high is not None:
        return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + (int(low, 16) - 0xDC00))
    if single is not None:
        code = int(single, 16)
        return "\ufffd" if 0xD800 <= code <= 0xDFFF else chr(code)
    return _SIMPLE_ESCAPES[simple]


def _unescaped_with_positions(text: str) -> tuple[str, list[int]]:
    """``unescaped(text)`` and, per decoded character, where it starts in ``text`` (one more: the end)."""
    parts: list[str] = []
    starts: list[int] = []
    position = 0
    for match in _ESCAPE.finditer(text):
        parts.append(text[position:match.start()])
        starts.extend(range(position, match.start()))
        parts.append(_decoded_escape(match))
        starts.append(match.start())
        position = match.end()
    parts.append(text[position:])
    starts.extend(range(position, len(text)))
    starts.append(len(text))
    return "".join(parts), starts


@dataclasses.dataclass(frozen=True)
class Needles:
    """What the scans and the scrubbing look for: ``tokens`` anywhere as a whole token in any case (ids of
    keys with a ``case`` rule, pseudonyms; kept lower-cased), ``exact`` as a whole token as written (ids of
    keys without one), ``keyed`` only after their key: key name (lower-cased) -> ids (numbers canonical)."""

    tokens: frozenset[str] = frozenset()
    keyed: Mapping[str, frozenset[str]] = dataclasses.field(default_factory=dict)
    exact: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.tokens or self.exact or self.keyed)

    @classmethod
    def build(cls, tokens: Iterable[str], keyed: Mapping[str, Iterable[str]], exact: Iterable[str] = ()) -> "Needles":
        folded = frozenset(t.lower() for t in tokens if t)
        return cls(folded, {k.lower(): frozenset(v.lower() for v in values) for k, values in keyed.items() if values},
                   frozenset(t for t in exact if t and t.lower() not in folded))

    @property
    def longest(self) -> int:
        """The longest text a hit can span, in characters: what the scan's text windows overlap by."""
        ids = [*self.tokens, *self.exact, *(v for values in self.keyed.values() for v in values)]
        keys = max((len(k) for k in self.keyed), default=0)
        return max((len(i) for i in ids), default=0) + keys

    # ---------------------------------------------------------------------------- the patterns
    def _ids(self) -> str | None:
        parts = ([f"(?i:{_alternatives(self.tokens)})"] if self.tokens else []) + \
                ([_alternatives(self.exact)] if self.exact else [])
        return "|".join(parts) or None

    def _keyed_values(self, key: str) -> str:
        return "|".join(sorted(_number_regex(v) if canonical_number(v) == v else re.escape(v) for v in self.keyed[key]))

    def _keyed_part(self, key: str) -> str:
        return rf"(?i:{re.escape(key)}){_SEPARATOR}(?:{self._keyed_values(key)})"

    def _token_detect(self, d: _Dialect) -> str | None:
        ids = self._ids()
        return None if ids is None else rf"(?:^|{d.not_word_joiner}){_J}*(?:{ids}){_J}*(?:{d.end}|{d.not_word_joiner})"

    def _keyed_detect(self, d: _Dialect) -> str | None:
        if not self.keyed:
            return None
        parts = "|".join(self._keyed_part(key) for key in sorted(self.keyed))
        return rf"(?:^|{d.not_word_under})(?:{parts})(?:{d.end}|{d.not_word_joiner}|{_J}+(?:{d.end}|{d.not_word}))"

    def token_re2(self) -> str | None:
        """RE2: a text holds an id as a whole token (rule 2)."""
        return self._token_detect(_RE2)

    def keyed_re2(self) -> str | None:
        """RE2: a text holds a keyed id (rule 3): the key, ``:``/``=``, the id however written."""
        return self._keyed_detect(_RE2)

    @functools.cached_property
    def re2(self) -> str | None:
        """One RE2 pattern for rules 2 and 3 (one automaton for any number of ids)."""
        parts = [p for p in (self.token_re2(), self.keyed_re2()) if p]
        return "|".join(f"(?:{p})" for p in parts) or None

    @functools.cached_property
    def _python_spans(self) -> list[re.Pattern]:
        """Python patterns whose group 1 is an id found by rule 2 or 3 (lookarounds: every occurrence)."""
        d, patterns = _PY, []
        ids = self._ids()
        if ids is not None:
            patterns.append(re.compile(rf"(?<![\w.@+\-]){_J}*({ids}){_J}*(?![\w.@+\-])"))
        for key in sorted(self.keyed):
            patterns.append(re.compile(rf"(?<!\w)(?i:{re.escape(key)}){_SEPARATOR}({self._keyed_values(key)})"
                                       rf"(?={d.end}|{d.not_word_joiner}|{_J}+(?:{d.end}|{d.not_word}))"))
        return patterns

    # ---------------------------------------------------------------------------- deciding (RE2)
    def hits(self, values):
        """Per text of an Arrow string/binary array (or a list of str): whether it holds a subject by rule 2
        or 3, in its raw or its unescaped reading (rule 4). A numpy bool array; null is False."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        array = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values, pa.large_string())
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
        if len(array) == 0 or self.re2 is None:
            return np.zeros(len(array), dtype=bool)
        found = pc.fill_null(pc.match_substring_regex(array, self.re2), False).to_numpy(zero_copy_only=False).copy()
        escaped = pc.fill_null(pc.match_substring(array, "\\"), False).to_numpy(zero_copy_only=False)
        pending = np.flatnonzero(escaped & ~found)
        if len(pending):
            raw = pc.take(array, pa.array(pending)).to_pylist()
            decoded = [unescaped(t.decode("utf-8", "replace") if isinstance(t, bytes) else t) for t in raw]
            again = pc.fill_null(pc.match_substring_regex(pa.array(decoded, pa.large_string()), self.re2), False)
            found[pending] = again.to_numpy(zero_copy_only=False)
        return found

    def text_hit(self, text: str) -> bool:
        """Whether one text holds a subject (``hits`` on it)."""
        return bool(self.hits([text])[0])

    # ---------------------------------------------------------------------------- redacting (Python)
    def _spans(self, text: str) -> list[tuple[int, int]]:
        spans = sorted({m.span(1) for pattern in self._python_spans for m in pattern.finditer(text)})
        kept: list[tuple[int, int]] = []
        for start, end in spans:
            if not kept or start >= kept[-1][1]:
                kept.append((start, end))
        return kept

    @staticmethod
    def _replace(text: str, spans: list[tuple[int, int]]) -> str:
        for start, end in reversed(spans):
            text = text[:start] + REPLACEMENT + text[end:]
        return text

    def redact(self, text: str) -> tuple[str, int]:
        """``text`` with every id ``hits`` finds (a token, a keyed value; raw or behind escapes) replaced by
        ``[erased]``; and how many."""
        count = 0
        for _ in range(4):  # a replacement can open a seam for a neighbour: again until nothing is found
            spans = self._spans(text)
            text = self._replace(text, spans)
            found = len(spans)
            if "\\" in text:
                decoded, starts = _unescaped_with_positions(text)
                if decoded != text:
                    spans = [(starts[a], starts[b]) for a, b in self._spans(decoded)]
                    text = self._replace(text, spans)
                    found += len(spans)
            count += found
            if not found:
                break
        return text, count

    def column_values(self, column: str) -> frozenset[str]:
        """The keyed ids a column of this name is compared with, by value (rule 3 in Parquet and Avro)."""
        return self.keyed.get(column.lower(), frozenset())


def check_id(value: str, *, column: str, type_name: str, pattern: str | None, min_length: int,
             position: int, dataset: str) -> None:
    """Refuse an id (already normalised) that its subject key's rules do not admit: ``IdRuleError``.
    ``min_length`` applies to text keys only: a numeric key's id is matched with its key, never alone."""
    label = f"subject {position} ({column}=<{len(value)} characters>)"
    where = f"{dataset}.{column}"
    if type_name == "string":
        if not is_token(value):
            raise IdRuleError(f"{label}: an id is letters and digits, joined by {JOINERS} (one token); "
                              f"{where} cannot be matched exactly with this one; nothing was changed")
        if len(value) < min_length:
            raise IdRuleError(f"{label}: shorter than {min_length} characters, the minimum of {where} (min_length "
                              "in its subject_keys entry); nothing was changed")
    elif canonical_number(value) is None:
        raise IdRuleError(f"{label}: {where} is {type_name}, and this id is not a number; nothing was changed")
    if pattern is not None and re.fullmatch(pattern, value) is None:
        raise IdRuleError(f"{label}: does not match the pattern of {where} ({pattern}); nothing was changed")
