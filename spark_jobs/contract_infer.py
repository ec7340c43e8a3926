"""``python -m spark_jobs contract infer --from FILE``: draft a dataset contract from a sample file, to edit.

Reads a whole CSV (gzip too), Parquet or JSON file as a stream, with memory bounded by ``--sample-rows``
(default 10000) and not by the file: every record updates per-field statistics (missing values, numeric
range, whether every value is an integer, a number, a boolean or a time of one pattern), and a reservoir
sample of ``--sample-rows`` records spread over the whole file (not its head) serves what needs the values
themselves. A CSV goes through pyarrow's streaming reader (``ArrowCsv``) and the statistics are Arrow compute
calls over each batch's whole columns; a file it cannot read as Python's csv module does goes through that
module instead (``PythonCsv``, one progress line says so), into the same statistics. It writes a contract YAML
that ``load_contract`` accepts as it is:

- landing: the format; for CSV the delimiter (sniffed among ``, ; TAB |``), the header, the encoding
  (UTF-8, else ISO-8859-1) and the null texts met in the file (``""`` plus any of ``NA``, ``N/A``,
  ``null``, ``NULL``, ``None``, ``NaN``, ``nan``, ``-`` that stands in a column whose other values are
  numbers, dates or booleans);
- schema: per field a column with a snake_case ``name`` (and ``source``: the field's own name when it
  differs), a type that holds for every value of the file (``boolean``, ``int``, ``long``, ``double``,
  ``timestamp``/``date`` with the Spark pattern that parses every value, else ``string``), ``required``
  when no value is missing, and the whole file's range and missing count as a comment;
- event_time: the first timestamp column (names with time/date/ts first); or, for a date column plus
  a time-of-day column, a ``computed`` timestamp joining them; without either a placeholder that
  stops silver with "edit the contract" until it is replaced. ``lateness_minutes`` covers the file's
  time span (a bulk export is not late data);
- key: the smallest column combination (one, two or three columns; ids first, then the event time) that is
  unique and never missing over the WHOLE file, checked in a second pass that spills 64-bit hashes of each
  candidate's values to disk (DuckDB's ``hash`` for CSV; memory bounded by a bucket of them); the other
  verified keys as a comment;
  with none, the draft says so and proposes every column (a record is then its own identity);
- gold: always ``period_summary`` (hourly or daily, by the event-time resolution) over the numeric columns
  outside the key (row counts alone when there are none).

Everything inferred is a guess about the dataset (the next file may differ): read the draft, then edit it.
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime as dt
import gzip
import io
import itertools
import json
import math
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

from spark_jobs.contract import DATASET_NAME_RE, LandingSpec
from spark_jobs.landing_files import GZIP_MAGIC, PARQUET_MAGIC, csv_reader, decompressed_chunks

DEFAULT_SAMPLE_ROWS = 10_000
SAMPLE_SEED = 42            # the reservoir's random choices: the same file always gives the same draft
KEY_CANDIDATES = 8          # column combinations checked over the whole file (pass 2), smallest first
KEY_COLUMNS_RANKED = 10     # pairs and triples are drawn from the first columns by rank (ids first)
HASH_BUCKETS = 16           # files per candidate the key check spills hashes to (memory: one bucket at a time)
KEYS_NOTED = 3              # a draft without a key notes how often its first candidates repeat
NULL_TOKENS = ("NA", "N/A", "null", "NULL", "None", "NaN", "nan", "-")
DELIMITERS = (",", ";", "\t", "|")
BOOLEANS = ("true", "false")
INT_MAX = 2 ** 31 - 1
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
TIME_OF_DAY_PATTERNS = (("%H:%M:%S", "HH:mm:ss"), ("%H:%M", "HH:mm"))
# The same tests over a whole Arrow column (RE2, anchored): a text is an integer as ``int()`` reads it, a time of
# one of TIMESTAMP_REGEXES.
_INTEGER_RE2 = r"^[-+]?[0-9]+$"
_TIMESTAMP_RE2 = tuple(f"^(?:{r.pattern})$" for r in TIMESTAMP_REGEXES)
_BOOLEAN_CASES = ("true", "false", "True", "False", "TRUE", "FALSE")  # the common cases; others are lowered
BATCH = 4096                # records per batch of the Python readers (JSON, and CSV when pyarrow's reader cannot)
ARROW_BLOCK_BYTES = 1 << 20  # pyarrow's CSV reader: bytes of text per batch
PLAIN_TRIES = 3             # a column's batches tried as read, as long as one of these in a row passes
PROGRESS_EVERY_S = 10.0     # a progress line on stderr at most this often during a long pass
PARQUET_TIMESTAMP_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'"  # how bronze writes Parquet timestamps
NUMERIC = ("int", "long", "double")


class InferError(ValueError):
    """The sample cannot be read; one line."""


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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="sample", required=True, metavar="FILE", help="a landing file (read whole)")
    parser.add_argument("--dataset", default="", help="dataset name (default: from the file name)")
    parser.add_argument("--format", choices=["csv", "parquet", "json_array", "json_lines"], default=None,
                        help="landing format (default: from the name and content)")
    parser.add_argument("--delimiter", default=None, help="CSV delimiter (default: sniffed); 'tab' for a tab")
    parser.add_argument("--sample-rows", type=int, default=DEFAULT_SAMPLE_ROWS,
                        help=f"records sampled across the whole file, which is read in full (default: "
                             f"{DEFAULT_SAMPLE_ROWS})")
    parser.add_argument("--output", "-o", default="", help="write the draft here (default: print it); never overwrites")


def detect_format(path: Path, head: bytes) -> str:
    name = path.name.lower().removesuffix(".gz")
    if head == PARQUET_MAGIC or name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".csv", ".tsv", ".txt")):
        return "csv"
    if name.endswith(".jsonl") or name.endswith(".ndjson"):
        return "json_lines"
    if name.endswith(".json"):
        text = _read_text(path, head[:2] == GZIP_MAGIC, 1 << 16)[0]
        return "json_array" if text.lstrip().startswith("[") else "json_lines"
    raise InferError(f"{path}: cannot tell the format from the name; pass --format csv|parquet|json_array|json_lines")


def _read_text(path: Path, is_gzip: bool, limit: int | None = None) -> tuple[str, str]:
    """(text, encoding) of the file's first ``limit`` bytes: UTF-8 when they decode as such, else ISO-8859-1."""
    data = bytearray()
    try:
        for chunk in decompressed_chunks(path, is_gzip):
            data += chunk
            if limit and len(data) >= limit:
                break
    except ValueError as exc:
        raise InferError(f"{path} {exc}") from None
    raw = bytes(data)
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as exc:
        if limit and exc.start > len(raw) - 4:  # a character cut by the limit
            return raw[:exc.start].decode("utf-8"), "utf-8"
        return raw.decode("iso-8859-1"), "iso-8859-1"


def _text_stream(path: Path, is_gzip: bool, encoding: str) -> io.TextIOWrapper:
    """The file as text, decompressed and decoded as it is read (a UTF-8 byte-order mark dropped)."""
    raw = gzip.open(path, "rb") if is_gzip else path.open("rb")
    return io.TextIOWrapper(raw, encoding="utf-8-sig" if encoding == "utf-8" else encoding, newline="")


def _streamed(read: Any, path: Path) -> Iterator[Any]:
    """``read()``'s records, a damaged file as one line (``InferError``)."""
    try:
        yield from read()
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InferError(f"{path} is a damaged gzip file ({exc})") from None
    except (csv.Error, ValueError) as exc:
        if isinstance(exc, UnicodeDecodeError):
            raise
        raise InferError(f"{path}: cannot be read to the end ({(str(exc).splitlines() or [''])[0]})") from None


def sample_csv(path: Path, is_gzip: bool, rows: int, delimiter: str | None) -> Sampled:
    head, encoding = _read_text(path, is_gzip, limit=1 << 16)
    lines = [ln for ln in head.lstrip("\ufeff").splitlines() if ln.strip()][:50]
    if not lines:
        raise InferError(f"{path}: no records to infer from")
    if delimiter is None:
        delimiter = max(DELIMITERS, key=lambda d: (_consistent_count(lines, d), d == ","))
    landing = LandingSpec(format="csv", delimiter=delimiter, encoding=encoding)
    first_records = [r for r in itertools.islice(csv_reader(head, landing), 52) if any(c.strip() for c in r)]
    first = first_records[0]
    header = len(first_records) > 1 and _looks_like_header(first, first_records[1:])
    names = first if header else [f"field_{i + 1}" for i in range(len(first))]
    landing = dataclasses.replace(landing, header=header)
    for reader in CSV_READERS:
        try:
            try:
                return _stream_csv(reader(path, is_gzip, landing, names), rows)
            except (UnicodeDecodeError, NotUtf8):  # UTF-8 at the head only: the whole file is read as ISO-8859-1
                return _stream_csv(reader(path, is_gzip, dataclasses.replace(landing, encoding="iso-8859-1"), names),
                                   rows)
        except NativeUnfit as exc:
            _progress(f"{path.name}: pyarrow's CSV reader cannot read it as Python's csv module does ({exc}); "
                      "reading it with Python's csv module instead (slower)")
    raise AssertionError("unreachable: the Python reader raises no NativeUnfit")  # pragma: no cover


class NativeUnfit(Exception):
    """pyarrow's CSV reader cannot read this file as Python's csv module does: the Python reader reads it."""


class ArrowCsv:
    """A CSV file's records through pyarrow's streaming CSV reader (parsing and decoding in C++, a block of
    ``ARROW_BLOCK_BYTES`` at a time), as batches of Arrow string columns, the same records and values as
    ``PythonCsv`` gives: blank lines dropped, records of another field count than the header skipped and counted,
    quoted line breaks kept, a UTF-8 byte-order mark dropped, gzip decompressed by Arrow. Where it cannot give
    the same (Arrow names the header's fields otherwise, a skipped row that Python's csv module reads at the right
    width, any other Arrow error), it raises ``NativeUnfit`` and the Python reader reads the file."""

    def __init__(self, path: Path, is_gzip: bool, landing: LandingSpec, names: list[str]):
        self.path, self.is_gzip, self.landing, self.names = path, is_gzip, landing, names
        self.skipped = 0

    def batches(self, columns: list[int] | None = None) -> Iterator[list[Any]]:
        """Each batch's columns (``columns``: these positions only), a list of Arrow string arrays."""
        try:
            yield from self._batches(columns)
        except NativeUnfit:
            raise
        except Exception as exc:  # any Arrow error: a row it cannot split, the text's encoding, a damaged gzip
            if self.landing.encoding == "utf-8" and "utf8" in str(exc).lower():
                raise NotUtf8() from None
            raise NativeUnfit((str(exc).splitlines() or [type(exc).__name__])[0]) from None

    def _batches(self, columns: list[int] | None) -> Iterator[list[Any]]:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pa_csv

        width, landing = len(self.names), self.landing
        self.skipped = 0

        unfit: list[str] = []

        def odd_row(row: Any) -> str:
            """A row of another field count: skipped and counted as Python's reader does (a blank one is no
            record); one that Python's csv module reads at the header's width stops Arrow (an exception raised
            here would not reach the caller: Arrow reports the row as its error instead)."""
            record = next(csv_reader(row.text, landing), [])
            if len(record) == width:
                unfit.append(f"it splits a record into {row.actual_columns} fields, expecting {row.expected_columns}; "
                             f"Python's csv module reads the header's {width}")
                return "error"
            if len(record) > 1 or (record and record[0].strip()):
                self.skipped += 1
            return "skip"

        wanted = [self.names[i] for i in columns] if columns is not None else None
        read = pa_csv.ReadOptions(block_size=ARROW_BLOCK_BYTES, encoding=landing.encoding,
                                  column_names=None if landing.header else self.names)
        parse = pa_csv.ParseOptions(delimiter=landing.delimiter, quote_char=landing.quote,
                                    double_quote=landing.escape == landing.quote,
                                    escape_char=False if landing.escape == landing.quote else landing.escape,
                                    newlines_in_values=True, invalid_row_handler=odd_row)
        convert = pa_csv.ConvertOptions(column_types={name: pa.string() for name in self.names},
                                        strings_can_be_null=False, quoted_strings_can_be_null=False,
                                        include_columns=wanted)
        source = pa.input_stream(str(self.path), compression="gzip" if self.is_gzip else None)
        try:
            with pa_csv.open_csv(source, read_options=read, parse_options=parse, convert_options=convert) as reader:
                if landing.header and reader.schema.names != (wanted or self.names):
                    raise NativeUnfit("it reads the header's fields otherwise")
                for batch in reader:
                    arrays = batch.columns
                    if width == 1:  # a one-field file: a blank line is a record to Arrow, none to Python
                        arrays = [a.filter(pc.not_equal(pc.utf8_trim_whitespace(a), "")) for a in arrays]
                    if len(arrays[0]):
                        yield arrays
        except pa.ArrowInvalid:
            if unfit:
                raise NativeUnfit(unfit[0]) from None
            raise


class NotUtf8(Exception):
    """The text is not UTF-8 past the head: it is read again as ISO-8859-1."""


class PythonCsv:
    """A CSV file's records through Python's csv module (``landing_files.csv_reader``), in batches of ``BATCH``
    records made Arrow string columns: the reader for what pyarrow's cannot read alike."""

    def __init__(self, path: Path, is_gzip: bool, landing: LandingSpec, names: list[str]):
        self.path, self.is_gzip, self.landing, self.names = path, is_gzip, landing, names
        self.skipped = 0

    def _records(self) -> Iterator[list[str]]:
        with _text_stream(self.path, self.is_gzip, self.landing.encoding) as text:
            body = (r for r in csv_reader(text, self.landing) if len(r) > 1 or (r and r[0].strip()))
            if self.landing.header:
                next(body, None)
            yield from body

    def batches(self, columns: list[int] | None = None) -> Iterator[list[Any]]:
        import pyarrow as pa

        width, self.skipped = len(self.names), 0
        for batch in _batches(_streamed(self._records, self.path)):
            kept = [record for record in batch if len(record) == width]
            self.skipped += len(batch) - len(kept)
            if kept:
                values = list(zip(*kept))
                yield [pa.array(values[i], pa.string()) for i in (range(width) if columns is None else columns)]


def _stream_csv(source: ArrowCsv | PythonCsv, rows: int) -> Sampled:
    """One pass over the file: each field's statistics, a batch at a time, and the reservoir sample."""
    import pyarrow as pa

    names = source.names
    stats = [Stats() for _ in names]
    reservoir = Reservoir(rows)
    progress = _Progress(f"{source.path.name}: {{:,}} records read")
    for columns in source.batches():
        for stat, column in zip(stats, columns):
            stat.add_column(column)
        chosen = reservoir.offer(len(columns[0]))
        if chosen:
            picks = pa.array(list(chosen.values()), pa.int64())
            reservoir.store(chosen, zip(*(column.take(picks).to_pylist() for column in columns)))
        progress.tick(reservoir.count)
    tokens = _null_tokens(stats)
    sample_columns = zip(*reservoir.items) if reservoir.items else [[]] * len(names)
    fields = [Field(source=name, values=[None if v == "" or v.strip() in tokens else v for v in column], stats=stat)
              for name, stat, column in zip(names, stats, sample_columns)]
    landing = dataclasses.replace(source.landing, null_values=("", *sorted(tokens)))
    return Sampled(fields, landing, reservoir.count, source.skipped, reread=None, columns=source.batches)


CSV_READERS = (ArrowCsv, PythonCsv)  # the first that reads the file alike; Python's csv module reads any


def _batches(records: Iterator[Any]) -> Iterator[list[Any]]:
    while batch := list(itertools.islice(records, BATCH)):
        yield batch


def _consistent_count(lines: list[str], delimiter: str) -> int:
    counts = {ln.count(delimiter) for ln in lines}
    return next(iter(counts)) if len(counts) == 1 else 0


def _looks_like_header(first: list[str], rest: list[list[str]]) -> bool:
    """A header names fields: none of its cells parses like the typed values below it."""
    for i, cell in enumerate(first):
        below = [row[i] for row in rest[:50] if i < len(row) and row[i] not in ("", *NULL_TOKENS)]
        if below and _kind(cell) != "string" and _kind(cell) == _kind(below[0]):
            return False
    return len(set(first)) == len(first)


def _kind(text: str) -> str:
    if _is_number(text):
        return "number"
    return "time" if _time_pattern([text]) else "string"


def _null_tokens(stats: list[Stats]) -> set[str]:
    """The null texts of the file: each of ``NULL_TOKENS`` met in a field whose other values are all numbers,
    booleans or times."""
    return {token for stat in stats if stat.typed for token in stat.tokens}


def _is_number(text: str) -> bool:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return False
    return math.isfinite(value) or text.strip().lower() in ("nan", "inf", "-inf")


def _time_pattern(values: list[str], candidates: list[int] | None = None) -> tuple[str, str, bool] | None:
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


def sample_parquet(path: Path, rows: int) -> Sampled:
    """Parquet through DuckDB, which streams it: the declared types, each column's missing count and range over
    the whole file in one aggregation, and a reservoir sample of ``rows`` rows spread over it."""
    import duckdb

    source = f"read_parquet('{_sql_text(str(path))}')"
    con = _duckdb()
    try:
        described = con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
        names, types = [row[0] for row in described], [str(row[1]) for row in described]
        aggregates = ["count(*)"]
        for name, kind in zip(names, types):
            column = _sql_name(name)
            aggregates.append(f"count(*) - count({column})")
            ranged = _parquet_type(kind, [])[0] in (*NUMERIC, "timestamp", "date")
            aggregates += [f"min({column})", f"max({column})"] if ranged else ["NULL", "NULL"]
        totals = con.execute(f"SELECT {', '.join(aggregates)} FROM {source}").fetchone()
        data = con.execute(f"SELECT * FROM {source} USING SAMPLE reservoir({int(rows)} ROWS) REPEATABLE ({SAMPLE_SEED})"
                       ).fetchall()
    except duckdb.Error as exc:
        raise InferError(f"{path}: not a readable Parquet file ({(str(exc).splitlines() or [''])[0]})") from None
    finally:
        con.close()
    fields = [Field(source=name, values=[row[i] for row in data], declared=kind, missing=int(totals[1 + 3 * i]),
                    low=totals[2 + 3 * i], high=totals[3 + 3 * i])
              for i, (name, kind) in enumerate(zip(names, types))]

    def reread() -> Iterator[list[Any]]:
        raise InferError("internal: Parquet keys are checked by DuckDB")  # pragma: no cover

    return Sampled(fields, LandingSpec(format="parquet"), int(totals[0]), 0, reread)


def _duckdb() -> Any:
    """A DuckDB connection that draws no progress bar on the terminal (stderr carries our progress lines)."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    return con


def _sql_text(text: str) -> str:
    return text.replace("'", "''")


def _sql_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _json_records(path: Path, is_gzip: bool, landing_format: str) -> Iterator[Any]:
    """The file's records, streamed: a JSON-lines file line by line; a JSON array element by element (its text
    held up to the end of the element being read, never the whole array)."""
    with _text_stream(path, is_gzip, "utf-8") as text:
        if landing_format == "json_lines":
            for line in text:
                if line.strip():
                    yield json.loads(line)
            return
        decoder, buffer, started = json.JSONDecoder(), "", False
        for chunk in iter(lambda: text.read(1 << 20), ""):
            buffer += chunk
            position = 0
            while True:
                while position < len(buffer) and buffer[position] in " \t\r\n,":
                    position += 1
                if not started:
                    if position >= len(buffer):
                        break
                    if buffer[position] != "[":
                        raise ValueError("the file is not one JSON array")
                    started, position = True, position + 1
                    continue
                if position < len(buffer) and buffer[position] == "]":
                    return
                try:
                    value, position = decoder.raw_decode(buffer, position)
                except ValueError:
                    break  # an element cut by the chunk: read on
                yield value
            buffer = buffer[position:]
        if buffer.strip():
            raise ValueError("the JSON array does not end")


def sample_json(path: Path, is_gzip: bool, rows: int, landing_format: str) -> Sampled:
    def as_text(value: Any) -> Any:
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        return json.dumps(value)

    def records() -> Iterator[dict]:
        for record in _json_records(path, is_gzip, landing_format):
            if isinstance(record, dict):
                yield record

    stats: dict[str, Stats] = {}
    reservoir = Reservoir(rows)
    count = 0
    try:
        for batch in _batches(_streamed(records, path)):
            count += len(batch)
            for name in dict.fromkeys(name for record in batch for name in record):
                stats.setdefault(name, Stats()).add_values([as_text(r[name]) for r in batch if name in r])
            chosen = reservoir.offer(len(batch))
            reservoir.store(chosen, (batch[i] for i in chosen.values()))
    except UnicodeDecodeError as exc:
        raise InferError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    names = list(stats)
    fields = [Field(source=name, values=[as_text(r.get(name)) for r in reservoir.items], stats=stats[name])
              for name in names]

    def reread() -> Iterator[list[Any]]:
        return ([as_text(r.get(name)) for name in names] for r in _streamed(records, path))

    return Sampled(fields, LandingSpec(format=landing_format), count, 0, reread)


def infer_types(sampled: Sampled) -> None:
    """Each field's type: one that holds for EVERY value of the file (its statistics), the time pattern
    checked by parsing the sample's values; the whole file's missing count and range."""
    tokens = set(sampled.landing.null_values)
    for field in sampled.fields:
        present = [v for v in field.values if v is not None]
        if field.declared is not None:
            field.col_type, field.fmt, field.has_time = _parquet_type(field.declared, present)
            continue
        stat = field.stats
        field.missing = stat.missing(sampled.records, tokens)
        if not stat.present:
            field.col_type = "string"
        elif stat.bools:
            field.col_type = "boolean"
        elif stat.ints:
            field.col_type = "int" if max(abs(stat.low), abs(stat.high)) <= INT_MAX else "long"
        elif stat.numbers:
            field.col_type = "double"
        else:
            pattern = _time_pattern([str(v) for v in present], stat.times) if stat.times else None
            if pattern:
                field.col_type = "timestamp" if pattern[2] else "date"
                field.fmt, field.has_time = pattern[1], pattern[2]
        if field.col_type in NUMERIC:
            field.low, field.high = stat.low, stat.high
        elif field.col_type in ("timestamp", "date"):
            py = next(p for p, s, _ in TIMESTAMP_PATTERNS if s == field.fmt)
            field.low, field.high = (dt.datetime.strptime(stat.text_low, py), dt.datetime.strptime(stat.text_high, py))


def _parquet_type(declared: str, present: list[Any]) -> tuple[str, str | None, bool]:
    kind = declared.upper()
    if kind.startswith("TIMESTAMP"):
        has_time = any(isinstance(v, dt.datetime) and (v.hour, v.minute, v.second) != (0, 0, 0) for v in present)
        return "timestamp", PARQUET_TIMESTAMP_FORMAT, has_time or not present
    if kind == "DATE":
        return "date", "yyyy-MM-dd", False
    if kind == "BOOLEAN":
        return "boolean", None, False
    if kind in ("TINYINT", "SMALLINT", "INTEGER", "UTINYINT", "USMALLINT"):
        return "int", None, False
    if kind in ("BIGINT", "UINTEGER", "UBIGINT", "HUGEINT"):
        return "long", None, False
    if kind in ("DOUBLE", "FLOAT", "REAL") or kind.startswith("DECIMAL"):
        return "double", None, False
    return "string", None, False


def snake_names(fields: list[Field]) -> None:
    used: set[str] = set()
    for field in fields:
        base = re.sub(r"[^0-9a-zA-Z]+", "_", field.source).strip("_").lower() or "field"
        base = base if re.match(r"^[a-z_]", base) else f"f_{base}"
        name, n = base, 2
        while name in used:
            name, n = f"{base}_{n}", n + 1
        used.add(name)
        field.name = name


def _as_datetime(value: Any) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    return None


@dataclasses.dataclass
class EventTime:
    name: str
    computed: str | None = None
    fmt: str | None = None
    span_minutes: int = 0
    hourly: bool = False
    parts: tuple[str, ...] = ()   # a computed event time: the date and time-of-day fields it joins


def choose_event_time(fields: list[Field]) -> EventTime | None:
    def rank(field: Field) -> tuple[int, int]:
        return (0 if re.search(r"time|date|ts|_at$|^at$|when", field.name) else 1, fields.index(field))

    timestamps = sorted([f for f in fields if f.col_type == "timestamp"], key=rank)
    if timestamps:
        chosen = timestamps[0]
        return EventTime(chosen.name, span_minutes=_span([_as_datetime(chosen.low), _as_datetime(chosen.high)]),
                         hourly=chosen.has_time)
    dates = sorted([f for f in fields if f.col_type == "date"], key=rank)
    times_of_day = [f for f in fields if f.col_type == "string" and _time_of_day(f)]
    if dates and times_of_day:
        date, clock = dates[0], times_of_day[0]
        clock_spark = _time_of_day(clock)
        name = "event_time" if "event_time" not in {f.name for f in fields} else "event_time_2"
        pairs = [(d, t) for d, t in zip(date.values, clock.values) if d is not None and t is not None]
        py_date = next(p for p, s, _ in TIMESTAMP_PATTERNS if s == date.fmt)
        py_clock = next(p for p, s in TIME_OF_DAY_PATTERNS if s == clock_spark)
        # The span from the sample (spread over the whole file), widened to the dates' own span over the file.
        times = [dt.datetime.strptime(f"{str(d).strip()} {str(t).strip()}", f"{py_date} {py_clock}") for d, t in pairs]
        times += [_as_datetime(date.low), _as_datetime(date.high)]
        return EventTime(name, computed=f"concat({date.name}, ' ', {clock.name})", fmt=f"{date.fmt} {clock_spark}",
                         span_minutes=_span(times), hourly=True, parts=(date.name, clock.name))
    if dates:
        chosen = dates[0]
        chosen.col_type = "timestamp"  # a date as the event time: a timestamp at midnight
        return EventTime(chosen.name, span_minutes=_span([_as_datetime(chosen.low), _as_datetime(chosen.high)]))
    return None


def _time_of_day(field: Field) -> str | None:
    texts = [str(v).strip() for v in field.values if v is not None]
    for py, spark in TIME_OF_DAY_PATTERNS:
        try:
            for t in texts:
                dt.datetime.strptime(t, py)
        except ValueError:
            continue
        return spark if texts else None
    return None


def _span(times: list[dt.datetime | None]) -> int:
    known = [t for t in times if t is not None]
    return math.ceil((max(known) - min(known)).total_seconds() / 60) if known else 0


# ------------------------------------------------------------------------------------------ the key
def key_candidates(fields: list[Field], event: EventTime | None, limit: int = KEY_CANDIDATES) -> list[list[Field]]:
    """Column combinations worth checking over the whole file, smallest first: each never missing in the file
    and unique in the sample; single columns (ids first, then the event time), then pairs and triples of the
    first ``KEY_COLUMNS_RANKED`` columns by that rank."""
    rows = len(fields[0].values) if fields else 0
    usable = [f for f in fields if f.col_type in ("string", "int", "long", "timestamp", "date", "boolean")
              and f.missing == 0]

    def unique_in_sample(columns: tuple[Field, ...]) -> bool:
        tuples = list(zip(*[f.values for f in columns]))
        return all(None not in t for t in tuples) and len(set(tuples)) == rows

    def rank(field: Field) -> tuple[int, int]:
        is_id = bool(re.search(r"(^|_)(id|key|uuid)$", field.name))
        in_event = event is not None and (field.name == event.name or field.name in event.parts)
        return (0 if is_id else 1 if in_event else 2, fields.index(field))

    ranked = sorted(usable, key=rank)
    found: list[list[Field]] = []
    for size in (1, 2, 3):
        pool = ranked if size == 1 else ranked[:KEY_COLUMNS_RANKED]
        for combination in itertools.combinations(pool, size):
            if unique_in_sample(combination):
                found.append(list(combination))
                if len(found) >= limit:
                    return found
    return found


class UniqueCheck:
    """Whether a column combination is unique over a stream of records, in bounded memory: the 64-bit hash of
    each record's values goes to one of ``HASH_BUCKETS`` files on disk (by its low bits), then each file is read
    back alone, sorted and its neighbours compared (numpy). A repeated hash is a repeated key (two different
    keys with one 64-bit hash, about n^2/2^65 likely, would count as a repeat: the check errs towards "not
    unique"). Memory: one bucket, about an eighth of a 64-bit number per record of the file."""

    def __init__(self, folder: Path, name: str):
        self.paths = [folder / f"{name}-{i}" for i in range(HASH_BUCKETS)]
        for path in self.paths:
            path.write_bytes(b"")

    def add(self, keys: Iterator[tuple], count: int) -> None:
        """A batch of ``count`` records' keys, Python values (JSON)."""
        import numpy as np

        self.add_hashes(np.fromiter(map(hash, keys), dtype=np.int64, count=count))

    def add_hashes(self, hashes: Any) -> None:
        """A batch of records' key hashes (numpy int64), each to its bucket's file."""
        import numpy as np

        buckets = (hashes & (HASH_BUCKETS - 1)).astype(np.uint8)
        grouped = hashes[np.argsort(buckets, kind="stable")]  # a radix sort of small numbers
        start = 0
        for index, end in enumerate(np.cumsum(np.bincount(buckets, minlength=HASH_BUCKETS)).tolist()):
            if end > start:
                with self.paths[index].open("ab") as handle:
                    grouped[start:end].tofile(handle)
            start = end

    def repeats(self, whole: bool = True) -> int:
        """How many records repeat an earlier record's key; ``whole=False``: stop at the first bucket that holds a
        repeat (a lower bound, enough to say the key is not unique)."""
        import numpy as np

        repeated = 0
        for path in self.paths:
            hashes = np.sort(np.fromfile(path, dtype=np.int64))
            repeated += int(np.count_nonzero(hashes[1:] == hashes[:-1]))
            if repeated and not whole:
                break
        return repeated


def verified_keys(sampled: Sampled, candidates: list[list[Field]], path: Path) -> dict[tuple[str, ...], int | None]:
    """Per candidate (field names), how many records of the WHOLE file repeat an earlier one's key: one more
    pass over the file, a batch of records at a time (DuckDB for Parquet; for CSV, DuckDB hashes each batch's
    columns, read again by the same reader as the first pass: only the candidates' columns are made Arrow
    arrays). Past the first ``KEYS_NOTED`` candidates a count may stop at its first repeat, and a superset of a
    unique candidate is not counted (None)."""
    if not candidates:
        return {}
    if sampled.landing.format == "parquet":
        return _parquet_repeats(path, candidates)
    index = {f.source: i for i, f in enumerate(sampled.fields)}
    keys = [tuple(index[f.source] for f in c) for c in candidates]
    progress = _Progress(f"{path.name}: key check, {{:,}} records hashed ({len(candidates)} column combinations)")
    with tempfile.TemporaryDirectory(prefix="tenantlake-infer-") as folder:
        checks = [UniqueCheck(Path(folder), str(n)) for n in range(len(candidates))]
        if sampled.columns is not None:
            for count, hashes in _hashed_columns(sampled.columns, keys, path):
                for check, column in zip(checks, hashes):
                    check.add_hashes(column)
                progress.tick(count)
        else:
            count = 0
            for batch in _batches(sampled.reread()):
                columns = list(zip(*batch))
                for positions, check in zip(keys, checks):
                    check.add(zip(*[columns[p] for p in positions]), len(batch))
                count += len(batch)
                progress.tick(count)
        counts: dict[tuple[str, ...], int | None] = {}
        for n, (candidate, check) in enumerate(zip(candidates, checks)):
            names = tuple(f.name for f in candidate)
            unique = [k for k, repeats in counts.items() if repeats == 0]
            # A superset of a unique key is no key of its own (choose_key): not counted. The note of a draft
            # without a key gives the first KEYS_NOTED counts: the others stop at the first repeat.
            superset = any(set(k) <= set(names) for k in unique)
            counts[names] = None if superset else check.repeats(whole=n < KEYS_NOTED)
        return counts


def _hashed_columns(columns: Any, keys: list[tuple[int, ...]], path: Path) -> Iterator[tuple[int, list[Any]]]:
    """(records so far, per key one numpy int64 array of each record's 64-bit hash of its values) per batch:
    DuckDB's ``hash`` over the Arrow columns as the reader gives them, streamed."""
    import duckdb
    import numpy as np
    import pyarrow as pa

    positions = sorted({p for key in keys for p in key})
    schema = pa.schema([(f"c{p}", pa.string()) for p in positions])
    reader = pa.RecordBatchReader.from_batches(
        schema, (pa.RecordBatch.from_arrays(arrays, schema=schema) for arrays in columns(positions)))
    hashes = ", ".join(f"hash({', '.join(f'c{p}' for p in key)})" for key in keys)
    con = _duckdb()
    count = 0
    try:
        con.register("records", reader)
        for batch in con.sql(f"SELECT {hashes} FROM records").to_arrow_reader(1 << 17):
            count += batch.num_rows
            yield count, [column.to_numpy().view(np.int64) for column in batch.columns]
    except (duckdb.Error, NativeUnfit) as exc:  # the file changed since the first pass
        raise InferError(f"{path}: cannot be read to the end ({(str(exc).splitlines() or [''])[0]})") from None
    finally:
        con.close()


def _parquet_repeats(path: Path, candidates: list[list[Field]]) -> dict[tuple[str, ...], int]:
    import duckdb

    source = f"read_parquet('{_sql_text(str(path))}')"
    con = _duckdb()
    try:
        out = {}
        for candidate in candidates:
            columns = ", ".join(_sql_name(f.source) for f in candidate)
            out[tuple(f.name for f in candidate)] = int(con.execute(
                f"SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM {source} GROUP BY {columns})").fetchone()[0])
        return out
    finally:
        con.close()


def choose_key(sampled: Sampled, event: EventTime | None, path: Path) -> tuple[list[str], list[list[str]], str]:
    """(the key, the other verified keys, a note when there is no key): the smallest candidate unique over the
    whole file; a computed event time's two fields are proposed as that event time."""
    candidates = key_candidates(sampled.fields, event)
    repeats = verified_keys(sampled, candidates, path)
    unique: list[tuple[str, ...]] = []
    for names, n in repeats.items():  # smallest first; a superset of a unique key is no other key
        if n == 0 and not any(set(smaller) <= set(names) for smaller in unique):
            unique.append(names)
    unique = [(event.name,) if event is not None and event.parts and k == event.parts else k for k in unique]
    if unique:
        return list(unique[0]), [list(k) for k in unique[1:]], ""
    checked = ", ".join("[" + ", ".join(names) + f"] repeats {n:,}" for names, n in list(repeats.items())[:KEYS_NOTED])
    note = (f"no column, pair or triple of columns is unique and never missing over the file's {sampled.records:,} "
            f"records{' (' + checked + ')' if checked else ''}: the key below is every column (a record is its own "
            "identity; exact repeats are dropped): edit it")
    return [f.name for f in sampled.fields], [], note


def _yaml(value: Any) -> str:
    """A YAML flow scalar (JSON strings are valid YAML)."""
    return json.dumps(value)


def draft(dataset: str, sampled: Sampled, sample: Path) -> str:
    infer_types(sampled)
    fields, landing = sampled.fields, sampled.landing
    snake_names(fields)
    event = choose_event_time(fields)
    key, other_keys, no_key = choose_key(sampled, event, sample)
    shown = min(len(fields[0].values), sampled.records) if fields else 0
    lines = [
        f"# Draft contract inferred from {sample.name} by `python -m spark_jobs contract infer`: {sampled.records:,} "
        f"records read, types and ranges over all of them, {shown:,} sampled across the file.",
        "# Every line is a guess about the dataset: check the types, `required`, the key and the event time, then",
        f"# save it as $TENANTLAKE_CONTRACTS_DIR/{dataset}.yaml (or spark_jobs/contracts/{dataset}.yaml to ship it to EMR).",
        f"dataset: {dataset}",
        f"description: {_yaml(f'Inferred from {sample.name}; describe the data here.')}",
        "landing:",
        f"  format: {landing.format}",
    ]
    if landing.format == "csv":
        lines += [f"  header: {str(landing.header).lower()}", f"  delimiter: {_yaml(landing.delimiter)}",
                  f"  null_values: [{', '.join(_yaml(v) for v in landing.null_values)}]"]
        if landing.encoding != "utf-8":
            lines.append(f"  encoding: {landing.encoding}")
    if sampled.skipped:
        lines.append(f"# {sampled.skipped:,} records have another field count than the header: silver will quarantine them")
    if no_key:
        lines.append(f"# TODO: {no_key}")
    lines.append(f"key: [{', '.join(key)}]")
    if other_keys:
        lines.append("# other keys unique over the whole file: " + "; ".join(", ".join(k) for k in other_keys[:5]))
    if event is None:
        lines += ["# TODO: no date or time column was found: replace `computed` below with a Spark SQL expression",
                  "# giving each record's event time as text in the `format` (e.g. concat('1973-', month, '-', day)).",
                  "event_time: event_time"]
    else:
        lines.append(f"event_time: {event.name}")
        if event.span_minutes > 30:
            lines.append(f"lateness_minutes: {event.span_minutes}   # the file spans this much event time: "
                         "a record is late only when it trails its file's newest by more")
    lines += ["# Personal data (required for a tenant classified pii or gdpr): the columns that identify a person,",
              "# which `erase --subject <column>=<value>` matches on; [] declares that the data holds none.",
              "# subject_keys: []"]
    lines.append("schema:")
    for field in fields:
        lines.append("  - " + _column_yaml(field, event))
    if event is None:
        lines.append("  - {name: event_time, type: timestamp, required: true, format: \"yyyy-MM-dd\", "
                     "computed: \"raise_error('edit the contract: event_time has no expression yet')\"}")
    elif event.computed:
        lines.append(f"  - {{name: {event.name}, type: timestamp, required: true, format: {_yaml(event.fmt)}, "
                     f"computed: {_yaml(event.computed)}}}")
    measures = [f.name for f in fields if f.col_type in NUMERIC and f.name not in key]
    hourly = event is not None and event.hourly
    options = f"period: {'hour' if hourly else 'day'}, measures: [{', '.join(measures)}]"
    if hourly:
        options += f", event_time: {event.name}"
    lines += ["# Gold: counts (and count/min/avg/max of each measure) per period (spark_jobs/README.md, period_summary).",
              "gold: [period_summary]", "gold_options:", f"  period_summary: {{{options}}}"]
    return "\n".join(lines) + "\n"


def _column_yaml(field: Field, event: EventTime | None) -> str:
    parts = [f"name: {field.name}"]
    if field.source != field.name:
        parts.append(f"source: {_yaml(field.source)}")
    parts.append(f"type: {field.col_type}")
    if field.missing == 0 or (event is not None and field.name == event.name):
        parts.append("required: true")
    if field.fmt and field.col_type in ("timestamp", "date"):
        parts.append(f"format: {_yaml(field.fmt)}")
    note = ""
    if field.col_type in NUMERIC and field.low is not None:
        note = f"   # file: {_num(float(field.low))} to {_num(float(field.high))}"
    elif field.col_type in ("timestamp", "date") and field.low is not None:
        low, high = (_as_datetime(v) for v in (field.low, field.high))
        shown = (lambda t: t.date().isoformat()) if field.col_type == "date" else (lambda t: t.isoformat(sep=" "))
        note = f"   # file: {shown(low)} to {shown(high)}"
    if field.missing:
        note += f"{'; ' if note else '   # '}{field.missing:,} missing"
    return "{" + ", ".join(parts) + "}" + note


def _num(value: float) -> str:
    return str(int(value)) if value.is_integer() else f"{value:g}"


class _Progress:
    """A line on stderr at most every ``PROGRESS_EVERY_S`` seconds of a long pass (none for a short one)."""

    def __init__(self, what: str):
        self.what, self.started = what, time.monotonic()
        self.last = self.started

    def tick(self, count: int) -> None:
        now = time.monotonic()
        if now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            _progress(f"{self.what.format(count)} ({now - self.started:.0f} s)")


def _progress(line: str) -> None:
    print(f"[contract infer] {line}", file=sys.stderr, flush=True)


def infer(sample: Path, dataset: str = "", landing_format: str | None = None, delimiter: str | None = None,
          rows: int = DEFAULT_SAMPLE_ROWS) -> str:
    """The draft contract YAML for a sample file (see the module docstring)."""
    if not sample.is_file():
        raise InferError(f"{sample}: no such file")
    if rows < 1:
        raise InferError(f"--sample-rows must be at least 1, got {rows}")
    size = sample.stat().st_size
    with sample.open("rb") as handle:
        head = handle.read(4)
    if size == 0:
        raise InferError(f"{sample}: the file is empty")
    is_gzip = head[:2] == GZIP_MAGIC
    landing_format = landing_format or detect_format(sample, head)
    dataset = dataset or re.sub(r"^[^a-z]+", "", re.sub(r"[^a-z0-9_]+", "_", sample.name.lower().split(".")[0])).strip("_")
    if not re.match(DATASET_NAME_RE, dataset):
        raise InferError(f"dataset name '{dataset}' must match {DATASET_NAME_RE}; pass --dataset NAME")
    if landing_format == "csv":
        sampled = sample_csv(sample, is_gzip, rows, delimiter)
    elif landing_format == "parquet":
        sampled = sample_parquet(sample, rows)
    else:
        sampled = sample_json(sample, is_gzip, rows, landing_format)
    if not sampled.fields or not sampled.records:
        raise InferError(f"{sample}: no records to infer from")
    return draft(dataset, sampled, sample)


def run(args: argparse.Namespace) -> int:
    delimiter = "\t" if args.delimiter in ("tab", "\\t") else args.delimiter
    try:
        text = infer(Path(args.sample), args.dataset, args.format, delimiter, args.sample_rows)
    except InferError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.output:
        print(text, end="")
        return 0
    target = Path(args.output)
    if target.exists():
        print(f"error: {target} exists; the draft is never written over a file (pick another --output)", file=sys.stderr)
        return 2
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    print(f"contract infer: draft written to {target}; edit it, then land files with "
          f"`python -m spark_jobs land --dataset <name> ...`", file=sys.stderr)
    return 0
