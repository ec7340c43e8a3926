"""When a value, a record or a text holds a data subject's id: the ONE matcher every step of an erasure uses.

No Spark here. ``Needles`` are the request's ids. ``Needles.hits`` (RE2 through pyarrow, an Arrow array at a
time) decides whether a text holds one, and ``KeyRule.mask`` whether a value of a column named like a subject
key is one: for the erase's rows in Spark (``records.py``, on the executors through ``mapInArrow``), for the
verification's scan of every object version (``scan.py``) and for the reports alike. ``Needles.redact``
replaces what ``hits`` finds (Python ``re``: it needs the positions); both engines get their patterns from
one template (``_Dialect``), and tests/spark_jobs/erasure/test_agreement.py proves on generated records that
the erase (the real one, in Spark) and the verification agree.

Before anything is compared, ids and texts are **NFC-normalised** (Unicode's canonical composition: an
``é`` written as ``e`` and a combining accent is the same ``é``); a combining mark belongs to the token of
the letter it follows (``anna`` is not in ``annä`` however the ``ä`` is written).

1. **Equality by the key's type** (``KeyRule``), where a value stands in a column named like a subject key
   (silver's typed column, bronze's parsed field, a Parquet or CSV column, an Iceberg column bound): a
   ``string`` key's id equals only the same string, after what silver does to the column (spaces trimmed,
   the key's ``case`` rule) and NFC: ``01545`` is not ``1545``, ``1545.0`` or ``1_545``. A number key's
   (``int``, ``long``, ``decimal(P,S)``) id equals every text silver would type as that number
   (``transforms/typed_text.number_forms``: a sign, whitespace around it, leading zeros, for a decimal any
   text that rounds to it; never an exponent or ``_``, which silver does not read) and, for an ``int`` or
   ``long``, the same integer written with a fraction of zeros (``1545.0``: silver quarantines that record,
   and it names the same number).
2. **A whole token**, where only text exists (a malformed record, a quarantined record's raw text,
   reports, logs, the text of another subject's record): a token is a longest run of letters, digits and
   combining marks joined by ``-_.@+``; the id matches a token equal to it, never a part of one.
   ``user-001`` is not in ``user-0010``, ``ann@x.com`` not in ``joann@x.com`` or ``ann@x.com.au``, but
   ``ann@x.com`` is in ``mail ann@x.com.`` and ``user-0016`` in ``/u/user-0016?x=1``. **Case** follows the
   subject key: an id of a key without ``case`` matches as written (``USER-0010`` is not ``user-0010``); an
   id of a key with ``case: lower|upper`` and a gold pseudonym match in any case. A derived id that extends
   the id (``user-0016-20201116T220000``) is another token: pseudonymise gold where such columns exist.
3. **Keyed**: an id with no letter (a number key's, or a string key's digits such as ``01545``) recurs in
   any text as a whole token (``"bytes": 1042``), so in text it matches only as the value of its own key:
   one of the key's names in ITS dataset (the column, its landing ``source`` name, its ``renamed_from``;
   in any case), then ``:`` or ``=``, then the id by rule 1 (``"customer_id": " +01042"``,
   ``customer_id=1042.0``; ``"account_no": "01545"`` for the string id ``01545`` only). The name stands
   alone: the character before it is none of a letter, digit, mark or ``-_.@+`` (``ref-customer_id`` and
   ``x.customer_id`` are other keys). Which dataset an object is told by its key (``Owner``: the dataset's
   landing, bronze, quarantine, silver, gold, checkpoints and reports folders); an object of no dataset
   (Athena results, logs, the erasure's own files) is read with every dataset's names.
4. **Escapes**: a text with a backslash is also read with its JSON escapes decoded (``\\n``, ``\\"``,
   ``\\u00fc``, surrogate pairs): ``"x\\nuser-0016"`` holds ``user-0016`` and ``j\\u00fcrgen`` is
   ``jürgen``. A hit in either reading counts; redaction replaces the id in the raw text where the
   decoded reading found it. A redacted text comes back NFC-normalised.

A request is checked before anything changes (``check_id``): each id, normalised, must be one token, a
text id at least ``min_length`` characters (default 4; a numeric key's id is only ever matched with its
key, so any number is accepted, customer ``42`` too) and match the subject key's ``pattern`` when the
contract has one; else one line names the subject by position and length, never by value.
"""
from __future__ import annotations

import dataclasses
import functools
import re
import sys
import unicodedata
from typing import Iterable

from spark_jobs.transforms.typed_text import SPACE, canonical_number, number_forms, string_value

JOINERS = "-_.@+"
REPLACEMENT = "[erased]"
_J = r"[\-_.@+]"
_SPACE = r"[ \t\n\r\f]"  # RE2's \s and Python's differ; both engines get this class
# "k": 1, k=1, 'k': '1', \"k\":\"1\" (JSON in JSON), ""k"": 1 (JSON in a quoted CSV field)
_SEPARATOR = rf"""(?:\\?["']){{0,2}}{_SPACE}*[:=]{_SPACE}*(?:\\?["']){{0,2}}"""
# JSON string escapes; a surrogate pair first, so that it becomes one character.
_ESCAPE = re.compile(r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})"
                     r"|\\u([0-9a-fA-F]{4})|\\([\"\\/bfnrt])")
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_INTEGER_ID = re.compile(r"-?(?:0|[1-9][0-9]*)")


class IdRuleError(ValueError):
    """An id does not meet its subject key's rules; one line, naming the subject by position and length."""


# ------------------------------------------------------------------------------------------------ Unicode
# Where Unicode keeps every combining mark and every character NFC may change (test_matching.py checks that
# the other code points hold none): scanning these is 15 times faster than scanning all 1.1M.
UNICODE_SCANNED = (range(0x30000), range(0xE0000, 0xE0200))


@functools.lru_cache(maxsize=1)
def _unicode_ranges() -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """(combining marks: categories Mn, Mc, Me; the characters that may change a text under NFC: marks,
    characters of a nonzero combining class, Hangul vowels and finals, and characters NFC replaces), as
    ranges of code points, from this Python's Unicode database (once per process, about 0.1 s)."""
    marks, changing = [], []
    for block in UNICODE_SCANNED:
        for code in block:
            char = chr(code)
            category = unicodedata.category(char)
            if category == "Cn":
                continue
            if category[0] == "M":
                marks.append(code)
            if category[0] == "M" or unicodedata.combining(char) or 0x1160 <= code <= 0x11FF:
                changing.append(code)
                continue
            decomposition = unicodedata.decomposition(char)
            if decomposition and decomposition[0] != "<" and unicodedata.normalize("NFC", char) != char:
                changing.append(code)
    return _ranges(marks), _ranges(changing)


def _ranges(codes: list[int]) -> tuple[tuple[int, int], ...]:
    found: list[tuple[int, int]] = []
    for code in codes:
        if found and code == found[-1][1] + 1:
            found[-1] = (found[-1][0], code)
        else:
            found.append((code, code))
    return tuple(found)


def marks() -> str:
    """A Python ``re`` character-class body of every combining mark (``re`` has no ``\\p{M}``; RE2 has)."""
    return "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in _unicode_ranges()[0])


@functools.lru_cache(maxsize=1)
def nfc_sensitive_re2() -> str:
    """RE2: a text holds a character NFC may change (only such texts are normalised again)."""
    return "[" + "".join(f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in _unicode_ranges()[1]) + "]"


def nfc(text: str) -> str:
    """``text`` in Unicode normalisation form C (unchanged, and fast, when it already is)."""
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


@functools.lru_cache(maxsize=1)
def _token_re() -> re.Pattern:
    word = rf"(?:(?!_)[\w{marks()}])"
    return re.compile(rf"{word}+(?:[-_.@+]+{word}+)*")


def is_token(text: str) -> bool:
    return _token_re().fullmatch(nfc(text)) is not None


def is_numeric_looking(text: str) -> bool:
    """No letter in it: in text, matched only as the value of its key (rule 3)."""
    return not any(ch.isalpha() for ch in text)


def normal_id(type_name: str, case: str | None, value: str) -> str:
    """An id as the key's column holds it (rule 1): a number canonical, a string trimmed of spaces, cased by
    the key's ``case`` rule and NFC-normalised."""
    if type_name == "string":
        return nfc(string_value(nfc(value), case))
    return canonical_number(value) or value.strip()


@dataclasses.dataclass(frozen=True)
class _Dialect:
    """How one regex engine spells the classes the rules need (RE2 has no lookaround and has ``\\p{M}``; Python's
    ``$`` also matches before a final newline, its ``\\s`` and ``\\w`` are wider)."""

    not_word_joiner: str   # neither a letter, digit or combining mark nor a joiner
    not_word: str          # not a letter, digit or combining mark
    end: str


_RE2 = _Dialect(r"[^\p{L}\p{M}\p{N}\-_.@+]", r"[^\p{L}\p{M}\p{N}]", "$")


@functools.lru_cache(maxsize=1)
def _python() -> _Dialect:
    return _Dialect(rf"[^\w{marks()}\-.@+]", rf"(?![{marks()}])[\W_]", r"\Z")


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


def _as_text(values):
    """An Arrow string/binary array as a large_string array (invalid UTF-8 replaced), for the text rules."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_large_string(values.type):
        return values
    try:
        return pc.cast(values, pa.large_string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([None if v is None else v.decode("utf-8", "replace") for v in values.to_pylist()],
                        pa.large_string())


def _nfc_sensitive(texts, candidates):
    """The rows among ``candidates`` (a numpy bool mask) whose text NFC may change: not ASCII, and holding a
    character of ``nfc_sensitive_re2`` (a precomposed ``é`` does not; a combining accent does)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = np.flatnonzero(candidates & ~_bools(pc.string_is_ascii(texts)))
    if not len(rows):
        return rows
    return rows[_bools(pc.match_substring_regex(pc.take(texts, pa.array(rows)), nfc_sensitive_re2()))]


def _bools(array):
    import pyarrow.compute as pc

    return pc.fill_null(array, False).to_numpy(zero_copy_only=False).copy()


# ------------------------------------------------------------------------------------------------ rule 1
@dataclasses.dataclass(frozen=True)
class KeyRule:
    """The ids of one subject key of one dataset: equal to a value of a column of one of its ``names`` by the
    key's ``type`` (rule 1), and in text after one of its names (rule 3, ids without a letter).

    ``names``: lower-cased (the column, its landing ``source`` name, ``renamed_from``); ``ids``: normalised
    (``normal_id``)."""

    dataset: str
    names: frozenset[str]
    type: str
    case: str | None
    ids: frozenset[str]

    @classmethod
    def of(cls, names: str | Iterable[str], type_name: str, ids: Iterable[str], case: str | None = None,
           dataset: str = "") -> "KeyRule":
        names = [names] if isinstance(names, str) else list(names)
        return cls(dataset, frozenset(n.lower() for n in names if n), type_name, case,
                   frozenset(normal_id(type_name, case, i) for i in ids))

    @property
    def numeric(self) -> bool:
        return self.type != "string"

    @property
    def text_ids(self) -> frozenset[str]:
        """The ids matched in text only after the key's name: all of a number key's, a string key's
        without a letter (the others are tokens, rule 2)."""
        return self.ids if self.numeric else frozenset(i for i in self.ids if is_numeric_looking(i))

    def value_pattern(self, ids: Iterable[str] | None = None) -> str:
        """Regex (no anchors, no surrounding whitespace) of the texts equal to one of ``ids`` (default: all)."""
        ids = sorted(self.ids if ids is None else ids)
        if self.numeric:
            integer = self.type in ("int", "long")
            return "|".join(number_forms(self.type, i, integral_fraction=integer) for i in ids)
        alternatives = _alternatives(ids)
        return f"(?i:{alternatives})" if self.case else alternatives

    @functools.cached_property
    def _full(self) -> re.Pattern:
        around = SPACE if self.numeric else " "
        return re.compile(rf"{around}*(?:{self.value_pattern()}){around}*")

    def equals(self, text: str) -> bool:
        """One value's text (rule 1)."""
        if self.numeric:
            return self._full.fullmatch(text) is not None
        return nfc(string_value(nfc(text), self.case)) in self.ids

    def mask(self, array):
        """Per value of an Arrow array: equal to one of the ids (rule 1); a numpy bool array."""
        import decimal

        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        kind = array.type
        if len(array) == 0 or not self.ids:
            return np.zeros(len(array), dtype=bool)
        if pa.types.is_integer(kind):
            numbers = [int(i) for i in self.ids if _INTEGER_ID.fullmatch(i)]
            return _bools(pc.is_in(pc.cast(array, pa.int64()), value_set=pa.array(numbers, pa.int64())))
        if pa.types.is_decimal(kind) and self.numeric:
            values = [decimal.Decimal(i) for i in self.ids]
            fitting = [v for v in values if -v.as_tuple().exponent <= kind.scale]
            try:
                return _bools(pc.is_in(array, value_set=pa.array(fitting, kind)))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass  # an id beyond the column's precision: compared as text below
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind)
                or pa.types.is_large_binary(kind) or pa.types.is_decimal(kind) or pa.types.is_floating(kind)):
            return np.zeros(len(array), dtype=bool)
        # a decimal or a float (pandas writes an int column with nulls as 1545.0) as text: Arrow writes "1545"
        texts = _as_text(pc.cast(array, pa.large_string()) if pa.types.is_decimal(kind) or
                         pa.types.is_floating(kind) else array)
        if self.numeric:
            return _bools(pc.match_substring_regex(texts, f"^{SPACE}*(?:{self.value_pattern()}){SPACE}*$"))
        found = self._string_mask(texts)
        wide = _nfc_sensitive(texts, ~found)
        if len(wide):  # NFC: those texts composed first (vectorised), then trimmed and cased again
            composed = pc.utf8_normalize(pc.take(texts, pa.array(wide)), form="NFC")
            found[wide] = self._string_mask(composed)
        return found

    def _string_mask(self, texts):
        import pyarrow as pa
        import pyarrow.compute as pc

        typed = pc.utf8_trim(texts, " ")
        typed = pc.utf8_lower(typed) if self.case == "lower" else pc.utf8_upper(typed) if self.case == "upper" else typed
        if self.case:
            typed = pc.utf8_normalize(typed, form="NFC")
        return _bools(pc.is_in(typed, value_set=pa.array(sorted(self.ids), pa.large_string())))


@dataclasses.dataclass(frozen=True)
class Owner:
    """Which objects of the lake are one dataset's own (``prefixes`` of their keys), and how its landing
    files (``landing_prefix``) are written: their ``encoding`` and, for CSV, the dialect."""

    dataset: str
    prefixes: tuple[str, ...]
    landing_prefix: str
    encoding: str = "utf-8"
    delimiter: str | None = None
    quote: str = '"'
    escape: str = '"'


# ------------------------------------------------------------------------------------------------ Needles
@dataclasses.dataclass(frozen=True)
class Needles:
    """What the scans and the scrubbing look for: ``tokens`` anywhere as a whole token in any case (ids of
    keys with a ``case`` rule, pseudonyms; kept lower-cased), ``exact`` as a whole token as written (ids of
    keys without one), ``keyed``: every subject key's rule (``KeyRule``, per dataset); ``owners``: which
    objects each dataset owns (``scoped``, ``for_key``)."""

    tokens: frozenset[str] = frozenset()
    keyed: tuple[KeyRule, ...] = ()
    exact: frozenset[str] = frozenset()
    owners: tuple[Owner, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.tokens or self.exact or any(r.ids for r in self.keyed))

    @classmethod
    def build(cls, tokens: Iterable[str] = (), keyed: Iterable[KeyRule] = (), exact: Iterable[str] = (),
              owners: Iterable[Owner] = ()) -> "Needles":
        folded = frozenset(nfc(t).lower() for t in tokens if t)
        rules = tuple(sorted((r for r in keyed if r.ids), key=lambda r: (r.dataset, sorted(r.names), r.type)))
        return cls(folded, rules, frozenset(nfc(t) for t in exact if t and nfc(t).lower() not in folded),
                   tuple(owners))

    # ---------------------------------------------------------------------------- scope
    @functools.cached_property
    def _scopes(self) -> dict:
        return {}

    def scoped(self, dataset: str | None) -> "Needles":
        """These needles with only ``dataset``'s key rules (None: every dataset's, these needles)."""
        if dataset is None:
            return self
        if dataset not in self._scopes:
            self._scopes[dataset] = dataclasses.replace(
                self, keyed=tuple(r for r in self.keyed if r.dataset == dataset))
        return self._scopes[dataset]

    def owner_of(self, key: str) -> Owner | None:
        """The dataset whose own object ``key`` is (rule 3), or None."""
        return next((o for o in self.owners if key.startswith(o.prefixes)), None)

    def for_key(self, key: str) -> "Needles":
        """The needles an object of the lake is read with: its dataset's key names, else every dataset's."""
        owner = self.owner_of(key)
        return self.scoped(owner.dataset if owner else None)

    def rules_for(self, column: str) -> tuple[KeyRule, ...]:
        """The key rules a column of this name is compared with, by value (rule 1)."""
        return self._by_name.get(column.lower(), ())

    @functools.cached_property
    def _by_name(self) -> dict[str, tuple[KeyRule, ...]]:
        found: dict[str, list[KeyRule]] = {}
        for rule in self.keyed:
            for name in rule.names:
                found.setdefault(name, []).append(rule)
        return {name: tuple(rules) for name, rules in found.items()}

    @property
    def longest(self) -> int:
        """The longest text a hit can span, in characters: what the scan's text windows overlap by."""
        ids = [*self.tokens, *self.exact, *(i for r in self.keyed for i in r.ids)]
        keys = max((len(n) for r in self.keyed for n in r.names), default=0)
        return max((len(i) for i in ids), default=0) + keys

    # ---------------------------------------------------------------------------- the patterns
    def _ids(self) -> str | None:
        parts = ([f"(?i:{_alternatives(self.tokens)})"] if self.tokens else []) + \
                ([_alternatives(self.exact)] if self.exact else [])
        return "|".join(parts) or None

    def _keyed_parts(self) -> list[tuple[str, str]]:
        """(names, values) per rule with ids matched in text (rule 3): two regex bodies."""
        parts = []
        for rule in self.keyed:
            ids = rule.text_ids
            if ids:
                parts.append((f"(?i:{_alternatives(rule.names)})", rule.value_pattern(ids)))
        return parts

    def _token_detect(self, d: _Dialect) -> str | None:
        ids = self._ids()
        return None if ids is None else rf"(?:^|{d.not_word_joiner}){_J}*(?:{ids}){_J}*(?:{d.end}|{d.not_word_joiner})"

    def _keyed_detect(self, d: _Dialect) -> str | None:
        parts = "|".join(f"{names}{_SEPARATOR}{SPACE}*(?:{values}){SPACE}*" for names, values in self._keyed_parts())
        if not parts:
            return None
        return rf"(?:^|{d.not_word_joiner})(?:{parts})(?:{d.end}|{d.not_word_joiner}|{_J}+(?:{d.end}|{d.not_word}))"

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
        d, patterns, word = _python(), [], rf"[\w{marks()}.@+\-]"
        ids = self._ids()
        if ids is not None:
            patterns.append(re.compile(rf"(?<!{word}){_J}*({ids}){_J}*(?!{word})"))
        for names, values in self._keyed_parts():
            patterns.append(re.compile(rf"(?<!{word}){names}{_SEPARATOR}{SPACE}*({values}){SPACE}*"
                                       rf"(?={d.end}|{d.not_word_joiner}|{_J}+(?:{d.end}|{d.not_word}))"))
        return patterns

    # ---------------------------------------------------------------------------- deciding (RE2)
    def hits(self, values):
        """Per text of an Arrow string/binary array (or a list of str): whether it holds a subject by rule 2
        or 3, in its raw reading, its unescaped one (rule 4) or NFC-normalised. A numpy bool array; null is
        False."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        array = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values, pa.large_string())
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
        if len(array) == 0 or self.re2 is None:
            return np.zeros(len(array), dtype=bool)
        found = _bools(pc.match_substring_regex(array, self.re2))
        texts = _as_text(array)
        escaped = _bools(pc.match_substring(texts, "\\"))
        pending = np.flatnonzero(escaped & ~found)
        if len(pending):  # rule 4, in Python: the texts with a backslash, unescaped (and NFC-normalised)
            again = [(row, read) for row, text in zip(pending, pc.take(texts, pa.array(pending)).to_pylist())
                     for read in [nfc(unescaped(text))] if read != text]
            if again:
                decided = pc.match_substring_regex(pa.array([t for _, t in again], pa.large_string()), self.re2)
                found[[row for row, _ in again]] = _bools(decided)
        wide = _nfc_sensitive(texts, ~escaped & ~found)
        if len(wide):  # the texts NFC may change, normalised (vectorised), read again where that changed them
            written = pc.take(texts, pa.array(wide))
            composed = pc.utf8_normalize(written, form="NFC")
            changed = np.flatnonzero(~_bools(pc.equal(composed, written)))
            if len(changed):
                found[wide[changed]] = _bools(pc.match_substring_regex(pc.take(composed, pa.array(changed)), self.re2))
        return found

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
        """``text`` (NFC-normalised) with every id ``hits`` finds (a token, a keyed value; raw or behind
        escapes) replaced by ``[erased]``; and how many."""
        text, count = nfc(text), 0
        for _ in range(4):  # a replacement can open a seam for a neighbour: again until nothing is found
            spans = self._spans(text)
            text = self._replace(text, spans)
            found = len(spans)
            if "\\" in text:
                decoded, starts = _unescaped_with_positions(text)
                if decoded != text:  # an escaped accent may compose with the letter before it: _composed_spans
                    spans = [(starts[a], starts[b]) for a, b in (self._spans(decoded) if unicodedata.is_normalized(
                        "NFC", decoded) else _composed_spans(self, decoded))]
                    text = self._replace(text, spans)
                    found += len(spans)
            count += found
            if not found:
                break
        return text, count


def _composed_spans(needles: Needles, decoded: str) -> list[tuple[int, int]]:
    """Spans, in ``decoded``, of the ids ``needles`` find in its NFC form: a starter and the combining marks
    after it are composed together, and a hit covers the whole runs its characters came from."""
    runs: list[tuple[int, int]] = []
    pieces: list[str] = []
    position = 0
    while position < len(decoded):
        end = position + 1
        while end < len(decoded) and (unicodedata.combining(decoded[end]) or unicodedata.category(decoded[end])[0] == "M"
                                      or "\u1160" <= decoded[end] <= "\u11ff"):  # Hangul vowels and finals compose too
            end += 1
        piece = unicodedata.normalize("NFC", decoded[position:end])
        runs.extend([(position, end)] * len(piece))
        pieces.append(piece)
        position = end
    return [(runs[a][0], runs[b - 1][1]) for a, b in needles._spans("".join(pieces)) if b > a]


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
        raise IdRuleError(f"{label}: {where} is {type_name}, and this id is not a number (digits, a sign, a "
                          "point; no exponent); nothing was changed")
    if pattern is not None and re.fullmatch(pattern, value) is None:
        raise IdRuleError(f"{label}: does not match the pattern of {where} ({pattern}); nothing was changed")
