"""What ``contract infer`` learns from a file's values as they stream by, in memory bounded by the sample and not
by the file: per-field statistics (``Stats``: missing values, numeric range, whether every value is an integer,
a number, a boolean or a time of one pattern; Arrow compute calls over a batch's whole columns, Python for the
records of the Python readers), the patterns they test, and the reservoir sample of records spread over the
whole file (``Reservoir``, with its seeded draws). The readers (``spark_jobs/infer/read.py``) feed them; the
draft (``spark_jobs/infer/draft.py``) reads them.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import math
import random
import re
from typing import Any, Iterable

from spark_jobs.contract.parts import LandingSpec


SAMPLE_SEED = 42            # the reservoir's random choices: the same file always gives the same draft
NULL_TOKENS = ("NA", "N/A", "null", "NULL", "None", "NaN", "nan", "-")
BOOLEANS = ("true", "false")
# (Python strptime pattern, Spark pattern, has a time of day); REGEXES below: the same, zero-padded, so that
# the text of two values of one pattern sorts as their times do (the whole file's span without parsing it).
TIMESTAMP_PATTERNS: tuple[tuple[str, str, bool], ...] = (
    ("%Y-%m-%dT%H:%M:%SZ", "yyyy-MM-dd'T'HH:mm:ss'Z'", True),
    ("%Y-%m-%dT%H:%M:%S.%fZ", "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'", True),
    ("%Y-%m-%dT%H:%M:%S", "yyyy-MM-dd'T'HH:mm:ss", True),
    ("%Y-%m-%dT%H:%M", "yyyy-MM-dd'T'HH:mm", True),
    ("%Y-%m-%d %H:%M:%S", "yyyy-MM-dd HH:mm:ss", True),
    ("%Y-%m-%d %H:%M:%S.%f", "yyyy-MM-dd HH:mm:ss.SSSSSS", True),
    ("%Y-%m-%d %H:%M", "yyyy-MM-dd HH:mm", True),
    ("%Y/%m/%d %H:%M:%S", "yyyy/MM/dd HH:mm:ss", True),
    ("%Y/%m/%d %H:%M", "yyyy/MM/dd HH:mm", True),
    ("%Y-%m-%d", "yyyy-MM-dd", False),
    ("%Y/%m/%d", "yyyy/MM/dd", False),
    ("%Y%m%d", "yyyyMMdd", False),
)
_D, _T = r"[0-9]{4}-[0-9]{2}-[0-9]{2}", r"[0-9]{2}:[0-9]{2}"
TIMESTAMP_REGEXES = tuple(re.compile(p) for p in (
    rf"{_D}T{_T}:[0-9]{{2}}Z", rf"{_D}T{_T}:[0-9]{{2}}\.[0-9]{{1,9}}Z", rf"{_D}T{_T}:[0-9]{{2}}", rf"{_D}T{_T}",
    rf"{_D} {_T}:[0-9]{{2}}", rf"{_D} {_T}:[0-9]{{2}}\.[0-9]{{1,9}}", rf"{_D} {_T}",
    r"[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}", r"[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9]{2}:[0-9]{2}",
    _D, r"[0-9]{4}/[0-9]{2}/[0-9]{2}", r"[0-9]{8}"))
# The same tests over a whole Arrow column (RE2, anchored): a text is an integer as ``int()`` reads it, a time of
# one of TIMESTAMP_REGEXES.
_INTEGER_RE2 = r"^[-+]?[0-9]+$"
_TIMESTAMP_RE2 = tuple(f"^(?:{r.pattern})$" for r in TIMESTAMP_REGEXES)
_BOOLEAN_CASES = ("true", "false", "True", "False", "TRUE", "FALSE")  # the common cases; others are lowered
PLAIN_TRIES = 3             # a column's batches tried as read, as long as one of these in a row passes


def _all(mask: Any) -> bool:
    import pyarrow.compute as pc

    return bool(pc.all(mask).as_py())


def _text_bytes(texts: Any) -> Any:
    """The bytes of an Arrow string array's values, end to end (numpy, no copy)."""
    import numpy as np

    offsets = np.frombuffer(texts.buffers()[1], dtype=np.int32)[texts.offset:texts.offset + len(texts) + 1]
    data = texts.buffers()[2]
    return np.frombuffer(data, dtype=np.uint8)[offsets[0]:offsets[-1]] if data is not None and len(offsets) else \
        np.empty(0, dtype=np.uint8)


def _arrow_ints(texts: Any) -> Any:
    """The texts as Arrow int64 when Arrow's parser reads every one as a decimal integer, else None. Arrow's
    grammar is ``-?[0-9]+`` (no blanks, no ``+``) plus hexadecimal (``0x1A``), which ``int()`` refuses: a batch
    holding an ``x`` is left to the regular expression."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        numbers = pc.cast(texts, pa.int64())
    except pa.ArrowInvalid:
        return None
    return None if ((_text_bytes(texts) | 0x20) == ord("x")).any() else numbers


def _ints(texts: Any) -> Any:
    """The texts as integers (an Arrow array, or a list when some need Python: ``+5``, beyond 64 bits) when every
    one is ``[-+]?[0-9]+``, else None."""
    import pyarrow.compute as pc

    numbers = _arrow_ints(texts)
    if numbers is not None:
        return numbers
    if not _all(pc.match_substring_regex(texts, _INTEGER_RE2)):
        return None
    return [int(v) for v in texts.to_pylist()]


def _arrow_floats(texts: Any) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        return pc.cast(texts, pa.float64())
    except pa.ArrowInvalid:
        return None


def _floats(texts: Any) -> Any:
    """The texts as doubles when ``float()`` reads every one, else None. Arrow's parser reads a subset of what
    ``float()`` does, to the same values; the rest (``1_000.5``, digits of other scripts) go through Python."""
    import pyarrow as pa

    numbers = _arrow_floats(texts)
    if numbers is not None:
        return numbers
    try:
        return pa.array([float(v) for v in texts.to_pylist()], pa.float64())
    except ValueError:
        return None


def _booleans(texts: Any) -> bool:
    import pyarrow.compute as pc

    return _all(pc.is_in(texts, value_set=_arrow_texts(_BOOLEAN_CASES))) or \
        _all(pc.is_in(pc.utf8_lower(texts), value_set=_arrow_texts(BOOLEANS)))


def _min_max(values: Any) -> tuple[Any, Any]:
    """(smallest, largest) of an Arrow array as Python values; (None, None) when it is empty."""
    import pyarrow.compute as pc

    both = pc.min_max(values)
    return both["min"].as_py(), both["max"].as_py()


def _arrow_texts(values: tuple[str, ...]) -> Any:
    import pyarrow as pa

    return pa.array(values, pa.string())


@dataclasses.dataclass
class Stats:
    """One field over the whole file, updated a batch of texts at a time (``add_column``: an Arrow string array;
    ``add_texts``, ``add_values``: Python lists): what its type, its range, its missing count and its time span
    are, without keeping its values. Each test is one Arrow compute call over the whole batch (a cast, an RE2
    regular expression, ``min_max``) and stops for good once it fails: no Python per value.

    A value is read as Python's ``str.strip`` and ``int``/``float`` read it: Arrow's ``utf8_trim_whitespace``
    strips the same characters, and a batch that Arrow's number parser refuses goes to the regular expression
    (integers) or to ``float()`` (numbers) before the test fails."""

    seen: int = 0                 # records that carry the field (null included)
    empty: int = 0                # null or "" among them
    tokens: dict[str, int] = dataclasses.field(default_factory=dict)  # NULL_TOKENS met, by token
    present: int = 0
    ints: bool = True
    numbers: bool = True
    bools: bool = True
    low: float | None = None      # the numeric range (ints stay exact)
    high: float | None = None
    times: list[int] = dataclasses.field(default_factory=lambda: list(range(len(TIMESTAMP_PATTERNS))))
    text_low: str | None = None   # the smallest and largest text while a time pattern still fits every value
    text_high: str | None = None
    not_plain: int = 0            # batches in a row that were not plain (``_plain``)

    def add_values(self, values: list[Any]) -> None:
        """JSON values: null, booleans, numbers and texts (a nested value as its JSON text)."""
        texts = [v for v in values if isinstance(v, str)]
        if len(texts) < len(values):
            self.seen += len(values) - len(texts)
            kinds = [v for v in values if v is not None and not isinstance(v, str)]
            self.empty += len(values) - len(texts) - len(kinds)
            self.present += len(kinds)
            if kinds:
                self.times = []
                self.bools = self.bools and all(isinstance(v, bool) for v in kinds)
                numbers = [v for v in kinds if not isinstance(v, bool)]
                if len(numbers) < len(kinds):
                    self.ints = self.numbers = False
                self.ints = self.ints and all(isinstance(v, int) for v in numbers)
                self._range([v for v in numbers if isinstance(v, int) or math.isfinite(v)])
        if texts:
            self.add_texts(texts)

    def add_texts(self, values: list[str]) -> None:
        import pyarrow as pa

        try:
            column = pa.array(values, pa.string())
        except UnicodeEncodeError:  # a lone surrogate from a JSON escape: not a number, a boolean or a time
            column = pa.array([v.encode("utf-8", "replace").decode("utf-8") for v in values], pa.string())
        self.add_column(column)

    def add_column(self, column: Any) -> None:
        """A batch of texts, an Arrow string array without nulls (a CSV column as read: unstripped)."""
        import pyarrow.compute as pc

        self.seen += len(column)
        known: dict[str, Any] = {}
        plain = self.not_plain < PLAIN_TRIES and self._plain(column, known)
        self.not_plain = 0 if plain else self.not_plain + 1
        present = column if plain else self._present(column)
        if not len(present):
            return
        self.present += len(present)
        if self.bools:
            self.bools = known.get("bools") or _booleans(present)
        ints = known["ints"] if "ints" in known else _ints(present) if self.ints else None
        if ints is not None:
            self._range(ints)
        else:
            self.ints = False
            if self.numbers:
                numbers = known["floats"] if "floats" in known else _floats(present)
                if numbers is None:
                    self.numbers = False
                else:
                    self._range(numbers.filter(pc.is_finite(numbers)))
        if self.times:
            self.times = [i for i in self.times
                          if known.get("time") == i or _all(pc.match_substring_regex(present, _TIMESTAMP_RE2[i]))]
            if self.times:
                low, high = _min_max(present)
                self.text_low = low if self.text_low is None or low < self.text_low else self.text_low
                self.text_high = high if self.text_high is None or high > self.text_high else self.text_high

    def _plain(self, column: Any, known: dict[str, Any]) -> bool:
        """Whether the batch as read needs no stripping and holds no "" or null text: a typed test still open
        passes on it as it is (what it found goes to ``known``). Most batches of a typed column are plain; the
        others, and every batch of a text column, are stripped and filtered first (``_present``). After
        ``PLAIN_TRIES`` batches in a row that were not (a column with null texts all along), it is not tried again:
        either way gives the same statistics."""
        import pyarrow.compute as pc

        if self.numbers:
            if self.ints and (ints := _arrow_ints(column)) is not None:
                known["ints"] = ints
                return True
            floats = _arrow_floats(column)
            if floats is not None and not pc.any(pc.is_nan(floats)).as_py():  # NaN, nan: null texts
                known["floats"] = floats
                return True
            return False
        if self.bools and _all(pc.is_in(column, value_set=_arrow_texts(_BOOLEAN_CASES))):
            known["bools"] = True
            return True
        if self.times and _all(pc.match_substring_regex(column, _TIMESTAMP_RE2[self.times[0]])):
            known["time"] = self.times[0]
            return True
        return False

    def _present(self, column: Any) -> Any:
        """The batch's values stripped, without "" and the null texts (counted here)."""
        import pyarrow.compute as pc

        stripped = pc.utf8_trim_whitespace(column)
        missing = pc.is_in(stripped, value_set=_arrow_texts(("", *NULL_TOKENS)))
        if not pc.any(missing).as_py():
            return stripped
        for item in pc.value_counts(stripped.filter(missing)).to_pylist():
            if item["values"] == "":
                self.empty += item["counts"]
            else:
                self.tokens[item["values"]] = self.tokens.get(item["values"], 0) + item["counts"]
        return stripped.filter(pc.invert(missing))

    def _range(self, numbers: Any) -> None:
        """The range widened by a batch of numbers: a list, or an Arrow array."""
        if isinstance(numbers, list):
            low, high = (min(numbers), max(numbers)) if numbers else (None, None)
        else:
            low, high = _min_max(numbers)
        if low is not None:
            self._number(low)
            self._number(high)

    def _number(self, number: float) -> None:
        self.low = number if self.low is None or number < self.low else self.low
        self.high = number if self.high is None or number > self.high else self.high

    def missing(self, records: int, null_tokens: set[str]) -> int:
        """Records without a value: the field absent, null, "" or one of the file's null texts."""
        return records - self.seen + self.empty + sum(n for token, n in self.tokens.items() if token in null_tokens)

    @property
    def typed(self) -> bool:
        """Every value is a number, a boolean or a time (a null text among them is then a null)."""
        return self.present > 0 and (self.numbers or self.bools or bool(self.times))


@dataclasses.dataclass
class Field:
    """One landing field: its name, the values of the reservoir sample (None = missing) as the pipeline sees
    them, and its statistics over the whole file."""

    source: str
    values: list[Any]
    declared: str | None = None   # Parquet: the type the file declares
    col_type: str = "string"
    fmt: str | None = None
    has_time: bool = False
    name: str = ""
    stats: Stats | None = None
    missing: int = 0              # over the whole file
    low: Any = None               # the whole file's range (numbers, times)
    high: Any = None


@dataclasses.dataclass
class Sampled:
    """What one streamed pass over the file gives: the fields (sample and statistics), the records read and
    how to read them again (``records()``, for the key check's pass)."""

    fields: list[Field]
    landing: LandingSpec
    records: int
    skipped: int                   # CSV records of another field count than the header's
    reread: Any                    # JSON: () -> iterator of records, each a list aligned with ``fields``
    columns: Any = None            # CSV: (positions) -> iterator of batches, each those columns as Arrow arrays


class Reservoir:
    """A uniform sample of ``size`` records of a stream of unknown length (Vitter's algorithm R), with a fixed
    seed: the same file always gives the same sample, and the sample spans the whole file. Records come in
    batches: ``offer(n)`` says which of the next ``n`` the sample takes and where, ``store`` puts their values
    there, so only the chosen records are ever made Python values. Record number ``c`` past the first ``size``
    takes slot ``random.Random(seed).randint(0, c)`` when that is below ``size``: the draws of a record-at-a-time
    reservoir, made a batch at a time (``_Draws``)."""

    def __init__(self, size: int, seed: int = SAMPLE_SEED):
        self.size, self.items, self.count = size, [], 0
        self._draws = _Draws(seed)

    def offer(self, n: int) -> dict[int, int]:
        """{slot: position among the next ``n`` records} (a later record wins a slot; a slot at the end of the
        sample appends, in order)."""
        import numpy as np

        fill = min(n, max(0, self.size - self.count))
        chosen = {self.count + i: i for i in range(fill)}
        if n > fill:
            slots = self._draws.below_each(self.count + fill, n - fill)
            for i in np.flatnonzero(slots < self.size).tolist():
                chosen[int(slots[i])] = fill + i
        self.count += n
        return chosen

    def store(self, chosen: dict[int, int], rows: Iterable[Any]) -> None:
        """The values of the records ``offer`` chose, in its order."""
        for slot, row in zip(chosen, rows):
            if slot < len(self.items):
                self.items[slot] = row
            else:
                self.items.append(row)


class _Draws:
    """``random.Random(seed)``'s stream of 32-bit Mersenne Twister words (numpy's generator, given the same
    state) and what CPython's ``getrandbits`` and ``randint`` make of it: ``randint(0, c)`` is ``_randbelow(c + 1)``,
    which draws ``getrandbits(k)`` (``k`` the bit length of ``c + 1``: one word's top ``k`` bits) until one falls
    below ``c + 1``. ``below_each`` makes those draws for a run of ``c`` at once: a word below the run's first
    bound is taken, one at or above its last is refused, and only the few in between are decided one by one."""

    def __init__(self, seed: int):
        import numpy as np

        state = random.Random(seed).getstate()[1]
        self._generator = np.random.MT19937()
        self._generator.state = {"bit_generator": "MT19937",
                                 "state": {"key": np.array(state[:-1], dtype=np.uint32), "pos": state[-1]}}
        self._words = np.empty(0, dtype=np.uint64)

    def _ensure(self, count: int) -> None:
        import numpy as np

        if len(self._words) < count:
            more = self._generator.random_raw(max(count - len(self._words), 1 << 16))
            self._words = np.concatenate([self._words, more])

    def getrandbits(self, k: int) -> int:
        """CPython's ``getrandbits(k)``: ``ceil(k / 32)`` words, least significant first, the last one's top bits."""
        words = (k - 1) // 32 + 1
        self._ensure(words)
        taken, self._words = [int(w) for w in self._words[:words]], self._words[words:]
        value = 0
        for i, word in enumerate(taken):
            bits = k - 32 * i
            value |= (word >> (32 - bits) if bits < 32 else word) << (32 * i)
        return value

    def below_each(self, first: int, n: int) -> Any:
        """``randint(0, c)`` for ``c`` = ``first`` .. ``first + n - 1``, in order (numpy int64)."""
        import numpy as np

        out = np.empty(n, dtype=np.int64)
        done = 0
        while done < n:
            low = first + done + 1      # this record's bound; the next ones' are low + 1, low + 2, ...
            k = low.bit_length()
            if k > 32:                  # beyond 4 billion records: a word is not enough, one draw at a time
                slot = self.getrandbits(k)
                while slot >= low:
                    slot = self.getrandbits(k)
                out[done], done = slot, done + 1
                continue
            run = min(n - done, (1 << k) - low, max(1024, (1 << k) >> 9))  # one bit length; few undecided words
            words = 2 * run + 64        # a word is taken with probability over 1/2
            while True:
                self._ensure(words)
                values = (self._words[:words] >> (32 - k)).astype(np.int64)
                taken = values < low
                undecided = np.flatnonzero((values >= low) & (values < low + run - 1))
                if undecided.size:
                    taken_before = np.cumsum(taken)[undecided].tolist()  # words taken before each (itself not yet)
                    extra = 0
                    for j, value, before in zip(undecided.tolist(), values[undecided].tolist(), taken_before):
                        if before + extra >= run:
                            break
                        if value < low + before + extra:  # the bound of the record this word is drawn for
                            taken[j] = True
                            extra += 1
                total = np.cumsum(taken)
                if total[-1] >= run:
                    break
                words *= 2
            end = int(np.searchsorted(total, run)) + 1
            out[done:done + run] = values[:end][taken[:end]]
            self._words = self._words[end:]
            done += run
        return out


NUMERIC = ("int", "long", "double")


def value_kind(text: str) -> str:
    if _is_number(text):
        return "number"
    return "time" if time_pattern([text]) else "string"


def file_null_tokens(stats: list[Stats]) -> set[str]:
    """The null texts of the file: each of ``NULL_TOKENS`` met in a field whose other values are all numbers,
    booleans or times."""
    return {token for stat in stats if stat.typed for token in stat.tokens}


def _is_number(text: str) -> bool:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return False
    return math.isfinite(value) or text.strip().lower() in ("nan", "inf", "-inf")


def time_pattern(values: list[str], candidates: list[int] | None = None) -> tuple[str, str, bool] | None:
    for index, (py, spark, has_time) in enumerate(TIMESTAMP_PATTERNS):
        if candidates is not None and index not in candidates:
            continue
        try:
            for v in values:
                dt.datetime.strptime(v.strip(), py)
        except ValueError:
            continue
        return py, spark, has_time
    return None
