"""CSV landing files in bronze's Python workers: the CSV grammar (``csv_patterns``, its one home, which silver's
``csv_records.py`` and the erasure scan also read; ``CsvGrammar`` judges and splits records with it), the records
a quoted field carries over lines (``PendingRecords``), the per-file reader (``CsvFile``), and the plan that splits
a large CSV file across tasks at record boundaries (``plan_csv_file``, ``csv_split_summaries``). The shared reader
parts are in ``landing_text.py``; ``landing_lines.py`` is the entry and says what a record is per format.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_jobs.transforms.landing_text import (COUNTS_SCHEMA, WHITESPACE, FileReader, LineOptions, decode, fields_type,
                                               is_blank, record_batch, split_runs, strip_cr)


# A quoted CSV field still open after this many bytes is taken as unterminated (it ends at its own line).
MAX_OPEN_QUOTE_BYTES = 64 * 1024 * 1024


# The first lines of a CSV split that end a record the split before started are handed to that split's task
# (``CsvSplit.tail``) up to this size; a record that runs further over a split boundary has its file read whole.
MAX_SPLIT_HEAD_BYTES = 1024 * 1024


@dataclasses.dataclass(frozen=True)
class CsvSplit:
    """How a task reads one split of a CSV file read in several (``plan_csv_file``): the state the file is in at
    the split's first line, as a read of the whole file would have it there."""

    first_record: int                 # records before the split (blank ones and the header counted)
    skip_lines: int = 0               # its first lines end the record the split before started: skipped here
    header: bytes | None = None       # the file's header record (for every split but the first)
    tail: tuple[bytes, ...] = ()      # the next split's first lines, which end this split's last record
    last: bool = False                # the file's last split: its end is the file's end
    made: int = 0                     # the records this split makes (blank ones and the header not counted)


# ----------------------------------------------------------------------------------------------- CSV
@dataclasses.dataclass(frozen=True)
class CsvPatterns:
    """The CSV grammar of one dialect as regular-expression text (``csv_patterns``)."""

    delimiter: str  # the delimiter, as a pattern
    quoted: str     # a quoted field: the quote, its text (escaped quotes, escaped characters), the closing quote
    unquoted: str   # a field that does not start with the quote: may be empty, holds no line break
    field: str      # quoted | unquoted
    record: str     # a well-formed record, field (delimiter field)*, with no anchors (each engine adds its own)
    token: str      # each field of a well-formed record followed by the delimiter (group 1): find all in record + delimiter


def csv_patterns(delimiter: str, quote: str, escape: str, char: Callable[[str], str] = re.escape,
                 many: str = "*") -> CsvPatterns:
    """THE CSV grammar (the one home of it; the contract's ``landing`` gives the dialect: delimiter, quote, and
    escape, the quote itself, i.e. a doubled quote as in RFC 4180, or a backslash):

    - a **record** ends at a line break (``\\n``, ``\\r\\n`` or ``\\r``) outside a quoted field; a quoted
      field may hold line breaks, delimiters and escaped quotes. A quote is special only at the start of a
      field (``5'10"`` is a plain value, as in Python's csv and Spark's reader);
    - a record is **well-formed** when it is exactly ``field (delimiter field)*``, every field either
      unquoted (no line break) or one quoted span with nothing after its closing quote. Anything else
      (an unterminated quote, ``"ab"c``) is malformed; the caller also flags a wrong field count;
    - an **unterminated quote** runs, like in every CSV reader, to the next quote character of the file;
      the text up to there becomes ONE malformed record (kept whole, so nothing is lost). With no later
      quote in the file it ends at its own line (``CsvGrammar.take_record``).

    Written once for every engine that reads it: ``char`` spells a character as a pattern (``re.escape`` for
    Python's ``re`` and RE2, as bytes once encoded as Latin-1; ``\\x{..}`` for Java), ``many`` is the
    repetition (``*+``, possessive, for Java: linear work, no stack overflow on a 10 MB field)."""
    d, q, e = char(delimiter), char(quote), char(escape)
    if escape == quote:
        quoted = f"{q}[^{q}]{many}(?:{q}{q}[^{q}]{many}){many}{q}"
    else:
        quoted = f"{q}[^{q}{e}]{many}(?:{e}[\\s\\S][^{q}{e}]{many}){many}{q}"
    unquoted = f"(?:[^{d}{q}\\r\\n][^{d}\\r\\n]{many})?"
    field = f"(?:{quoted}|{unquoted})"
    return CsvPatterns(delimiter=d, quoted=quoted, unquoted=unquoted, field=field,
                       record=f"{field}(?:{d}{field}){many}", token=f"({quoted}|[^{d}\\r\\n]{many}){d}")


class CsvGrammar:
    """The grammar of ``csv_patterns`` for one dialect, as byte patterns: RE2 (Arrow, vectorised) for 'this
    line is one well-formed record', Python's ``re`` for the rest, and the sequential record scanner
    (``take_record``). Silver's re-parse of old bronze rows reads the same patterns in the JVM
    (``transforms/csv_records.py``)."""

    def __init__(self, options: LineOptions):
        d, q, e = (c.encode("latin-1") for c in (options.delimiter, options.quote, options.escape))
        self.d, self.q, self.e = d, q, e
        grammar = csv_patterns(options.delimiter, options.quote, options.escape)

        def as_bytes(pattern: str) -> bytes:
            return pattern.encode("latin-1")

        self.well_formed_re2 = as_bytes(f"^{grammar.record}$")
        self.well_formed = re.compile(as_bytes(grammar.record + "\\Z"))
        self.token = re.compile(as_bytes(grammar.token))
        qd, dd = as_bytes(re.escape(options.quote)), as_bytes(grammar.delimiter)
        self.quote_or_escape = re.compile(b"[" + qd + (b"" if e == q else as_bytes(re.escape(options.escape))) + b"]")
        self.field_end = re.compile(b"[" + dd + rb"\r\n]")
        self.double_quote = q + q
        self.null_texts = [v.encode(options.python_encoding) for v in options.null_values]
        self._field_re2 = as_bytes(grammar.field)
        self._by_count: dict[int, bytes | None] = {}

    def split_quoted(self, records: pa.Array, count: int) -> tuple[pa.Array, np.ndarray] | None:
        """Field texts of the ``records`` (well-formed lines) that have exactly ``count`` fields, unquoted and
        unescaped, split by ONE RE2 match per record with a group per field (vectorised): (list array of
        those rows' fields, mask of those rows); None when RE2 refuses the pattern (thousands of fields)."""
        if count not in self._by_count:
            groups = (self.d).join(b"(?P<f%d>" % i + self._field_re2 + b")" for i in range(count))
            self._by_count[count] = b"^" + groups + b"$"
        pattern = self._by_count[count]
        if pattern is None:
            return None
        try:
            matched = pc.extract_regex(records, pattern)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            self._by_count[count] = None
            return None
        ok = matched.is_valid().to_numpy(zero_copy_only=False)
        rows = int(ok.sum())
        matched = matched.filter(pa.array(ok))
        columns = []
        for i in range(count):
            text = matched.field(i)
            quoted = pc.starts_with(text, self.q)
            inner = pc.binary_slice(text, 1, -1)
            if self.e == self.q:
                inner = pc.replace_substring(inner, self.double_quote, self.q)
            else:
                inner = pc.replace_substring_regex(inner, re.escape(self.e) + rb"([\s\S])", rb"\1")
            columns.append(pc.if_else(quoted, inner, text))
        flat = pa.concat_arrays(columns).take(pa.array((np.arange(count)[None, :] * rows + np.arange(rows)[:, None]).ravel()))
        offsets = pa.array(np.arange(0, (rows + 1) * count, count, dtype=np.int32))
        return pa.ListArray.from_arrays(offsets, flat), ok

    def closing_quote(self, buf: bytes, start: int) -> int:
        """Index of the quote closing a field opened just before ``start``; -1 when the text ends first."""
        q, e = self.q, self.e
        i = start
        while True:
            if e == q:
                k = buf.find(q, i)
                if k == -1:
                    return -1
                if buf[k + 1:k + 2] == q:  # an escaped quote
                    i = k + 2
                    continue
                return k
            m = self.quote_or_escape.search(buf, i)
            if m is None:
                return -1
            if m.group() == e:
                i = m.start() + 2
                continue
            return m.start()

    def take_record(self, buf: bytes | bytearray, pos: int, at_end: bool,
                    resume: tuple[int, int] | None = None) -> tuple[int | None, int] | tuple[None, tuple[int, int]]:
        """(end of the record's text, start of the next record) for the record at ``pos``; ``(None, resume)``
        when a quoted field is still open at the end of ``buf`` and more text may close it. ``resume`` (the
        opening quote's index, where the search for its closing quote stopped), passed back with the same
        record and more text after it, makes the search go on from there: cutting a record is linear in its
        text however many lines a quoted field runs over."""
        n = len(buf)
        i = pos
        while True:
            if resume is not None or buf[i:i + 1] == self.q:
                opened, start = resume if resume is not None else (i, i + 1)
                resume = None
                close = self.closing_quote(buf, start)
                if close == -1:
                    if not at_end:
                        return None, (opened, n)
                    # No closing quote in the rest of the file: a plain (malformed) field to its line end.
                    i = opened
                else:
                    i = close + 1
            m = self.field_end.search(buf, i)
            i = m.start() if m else n
            if i < n and buf[i:i + 1] == self.d:
                i += 1
                continue
            break
        if i >= n:
            return i, n
        if buf[i:i + 2] == b"\r\n":
            return i, i + 2
        return i, i + 1

    def values(self, record: bytes) -> list[bytes]:
        """The field texts of a well-formed record, unquoted and unescaped (null texts not applied)."""
        out = []
        for token in self.token.findall(record + self.d):
            if token[:1] == self.q and len(token) >= 2:
                inner = token[1:-1]
                if self.e == self.q:
                    inner = inner.replace(self.double_quote, self.q)
                else:
                    inner = re.sub(re.escape(self.e) + rb"([\s\S])", rb"\1", inner)
                out.append(inner)
            else:
                out.append(token)
        return out


class PendingRecords:
    """The text of CSV records not yet cut (lines as they come, each with its line break), as one growing buffer,
    and where the search for the closing quote of a field still open at its end stopped: cutting is linear in the
    text however many lines a quoted field runs over (it was quadratic: the whole pending text joined and
    searched again at each line with a quote). Bronze's reader and the erasure's CSV reading both use it."""

    def __init__(self, text: bytes = b""):
        self.buf = bytearray(text)
        self.resume: tuple[int, int] | None = None

    def __bool__(self) -> bool:
        return bool(self.buf)

    def __len__(self) -> int:
        return len(self.buf)

    def add(self, text: bytes) -> None:
        self.buf += text

    def take(self, grammar: "CsvGrammar", at_end: bool, max_open: int = MAX_OPEN_QUOTE_BYTES) -> list[bytes]:
        """Cut every complete record off the front; an open quoted field longer than ``max_open`` bytes, or one
        still open ``at_end``, ends at its own line (``CsvGrammar.take_record``)."""
        buf, out, pos = self.buf, [], 0
        while pos < len(buf):
            resume = self.resume if pos == 0 else None
            end, following = grammar.take_record(buf, pos, at_end or len(buf) - pos > max_open, resume)
            if end is None:
                self.resume = (following[0] - pos, following[1] - pos)
                del buf[:pos]
                return out
            out.append(bytes(buf[pos:end]))
            pos, self.resume = following, None
        self.buf, self.resume = bytearray(), None
        return out


class CsvFile(FileReader):
    """One CSV file's lines (or one split's, ``split``). ``count_only``: records are counted, not made (the
    split plan's first pass); ``open_at_start``: the split is read as if it began inside a quoted field."""

    def __init__(self, options: LineOptions, path: str, split_start: int = 0, split: CsvSplit | None = None,
                 count_only: bool = False, open_at_start: bool = False):
        super().__init__(options, path, split_start)
        self.grammar = CsvGrammar(options)
        self.split, self.count_only = split, count_only
        self.skip = split.skip_lines if split is not None else 0
        self.header_raw: bytes | None = None
        # With open_at_start: the lines until that field ends (None while it has not), their text and bytes.
        self.head_lines: int | None = None if open_at_start else 0
        self.head_consumed, self.head_text, self.head_bytes = 0, [], 0
        self.records = 0              # records seen, blank ones and the header included: the next _record_index
        self.made = 0                 # count_only: the records made (blank ones and the header not counted)
        self.header_text: str | None = None
        self.header_seen = not options.header
        self.struct_names = list(dict.fromkeys(options.field_names))
        self.struct_type = fields_type(options.field_names)
        # Per file, from its header: the field count, whether the header is usable, where each contract
        # field is in a record (-1: not in this file), and the header's names the contract does not know.
        self.expected: int | None = None
        self.header_ok = True
        self.positions: list[int] = []
        self.unknown: list[str] = []
        if not options.header:
            self._use_names(list(options.field_names), usable=True)
        # Sequential mode: the lines a record is running over (each with the "\n" that ended it).
        self.parts = PendingRecords()
        self.open_quote = False       # parts end inside a quoted field: only a line with a quote may close it
        if open_at_start:  # a quote opens the field these lines continue (not a record of this split)
            self.parts, self.open_quote = PendingRecords(self.grammar.q), True
        if split is not None and split_start > 0:
            self.records = split.first_record
            if split.header is not None:
                self._set_header(split.header)

    # -- feeding: every line that is a record on its own at once (vectorised), the scanner for the others
    def _feed(self, lines: pa.Array, first: bool) -> Iterator[pa.RecordBatch]:
        if self.skip:  # the lines that end the record the split before this one started (it made that record)
            skipped = min(self.skip, len(lines))
            lines, self.skip = lines.slice(skipped), self.skip - skipped
        n = len(lines)
        scanned: list[tuple[bytes, int]] = []   # records from the scanner: (raw, record index)
        start = 0
        if self.parts:  # a record is running over lines from the previous batch: the scanner goes on
            start, out = self._scan(lines, 0, at_end=False)
            if self.head_lines is None:  # the field open at the split's start: its lines are the head
                self._track_head(lines.slice(0, start))
                if not self.parts:
                    self.head_lines, out = self.head_consumed, out[1:]
            scanned += self._number(out)
        m = n - start
        text = strip_cr(lines.slice(start)) if start else strip_cr(lines)
        alone = self._alone(text)
        base = self.records
        consumed = np.zeros(m, dtype=bool)
        shift_at = np.zeros(m + 1, dtype=np.int64)  # change of (record index - line position) from a line on
        shift, done = 0, 0
        for j in np.flatnonzero(~alone).tolist() if m else []:
            if j < done:
                continue  # part of a record the scanner already took
            self.records = base + j + shift
            k, out = self._scan(lines, start + j, at_end=False)
            k -= start
            consumed[j:k] = True
            scanned += self._number(out)
            # lines j..k-1 made len(out) records (the one still open, if any, is numbered when it ends)
            shift_at[k] += len(out) - (k - j)
            shift += len(out) - (k - j)
            done = k
        self.records = base + m + shift
        index = base + np.arange(m, dtype=np.int64) + np.cumsum(shift_at)[:m]
        keep = ~consumed & ~is_blank(text).to_numpy(zero_copy_only=False)
        if not self.header_seen:
            first_line = int(np.argmax(keep)) if keep.any() else None
            first_scanned = min(range(len(scanned)), key=lambda x: scanned[x][1]) if scanned else None
            if first_line is not None and (first_scanned is None or index[first_line] < scanned[first_scanned][1]):
                self._set_header(text[first_line].as_py())
                keep[first_line] = False
            elif first_scanned is not None:
                self._set_header(scanned.pop(first_scanned)[0])
        if keep.any():
            yield from self._line_records(text.filter(pa.array(keep)), index[keep])
        if scanned:
            yield from self._scanned_records(scanned)

    def _alone(self, text: pa.Array) -> np.ndarray:
        """Which lines are a well-formed record on their own. A line without the quote and without a carriage
        return always is (a field of such a line cannot be malformed); RE2 judges the others."""
        special = pc.or_(pc.match_substring(text, self.grammar.q), pc.match_substring(text, b"\r"))
        special_np = special.to_numpy(zero_copy_only=False)
        alone = ~special_np
        if special_np.any():
            judged = pc.match_substring_regex(text.filter(special), self.grammar.well_formed_re2)
            alone[special_np] = judged.to_numpy(zero_copy_only=False)
        return alone

    def _finish(self) -> Iterator[pa.RecordBatch]:
        if self.parts and self.split is not None and not self.split.last:
            # This split's last record runs on into the next split, whose first lines end it.
            yield from self._feed(pa.array(list(self.split.tail), pa.binary()), False)
            if self.parts:
                raise ValueError(f"{self.path}: the next split's first lines do not end this split's last record")
            return
        if self.parts and not self.count_only:
            scanned = self._number(self._drain(at_end=True))
            if scanned and not self.header_seen:
                self._set_header(scanned.pop(0)[0])
            yield from self._scanned_records(scanned)

    def _track_head(self, lines: pa.Array) -> None:
        self.head_consumed += len(lines)
        if self.head_text is not None:
            self.head_text += lines.to_pylist()
            self.head_bytes = sum(len(line) + 1 for line in self.head_text)
            if self.head_bytes > MAX_SPLIT_HEAD_BYTES:
                self.head_text = None  # too long to hand to the split before: that file is read whole

    @property
    def parts_bytes(self) -> int:
        """The bytes of the record still open (0: none)."""
        return len(self.parts)

    def _scan(self, lines: pa.Array, start: int, at_end: bool) -> tuple[int, list[bytes]]:
        """Lines from ``start`` into the scanner until no text is left over (the next line starts a
        record): (index of the first line not consumed, the records taken, blank ones included)."""
        out: list[bytes] = []
        i, n, q = start, len(lines), self.grammar.q
        while i < n:
            line = lines[i].as_py()
            i += 1
            self.parts.add(line + b"\n")
            if self.open_quote and q not in line and self.parts_bytes <= MAX_OPEN_QUOTE_BYTES:
                continue  # this line cannot close the open field
            out += self._drain(at_end)
            if not self.parts:
                break
        return i, out

    def _drain(self, at_end: bool) -> list[bytes]:
        """Take every complete record off the front of the scanner's text."""
        out = self.parts.take(self.grammar, at_end)
        self.open_quote = bool(self.parts)
        return out

    # -- records
    def _set_header(self, raw: bytes) -> None:
        grammar = self.grammar
        self.header_seen, self.header_raw = True, raw
        self.header_text = decode(pa.array([raw], pa.binary()), self.options.python_encoding)[0].as_py()
        well_formed = grammar.well_formed.match(raw) is not None
        tokens = grammar.values(raw) if well_formed else grammar.token.findall(raw + grammar.d)
        names = decode(pa.array(tokens, pa.binary()), self.options.python_encoding).to_pylist()
        self._use_names(names, usable=well_formed and len(set(names)) == len(names))

    def _use_names(self, names: list[str], usable: bool) -> None:
        self.expected = len(names) or None
        self.header_ok = usable
        at = {name: i for i, name in reversed(list(enumerate(names)))}
        self.positions = [at.get(name, -1) for name in self.struct_names]
        known = set(self.struct_names)
        self.unknown = [name for name in names if name not in known]

    def _number(self, raws: list[bytes]) -> list[tuple[bytes, int]]:
        """The scanner's records (blank ones included) numbered in order; blank ones dropped."""
        numbered = []
        for raw in raws:
            if raw.strip(WHITESPACE):
                numbered.append((raw, self.records))
            self.records += 1
        return numbered

    def _line_records(self, records: pa.Array, index: np.ndarray) -> Iterator[pa.RecordBatch]:
        """Lines that are each one well-formed record: split by Arrow, with a plain split where they hold no
        quote and one RE2 match per record where they do (every line of an export that quotes its text)."""
        if not self.header_seen or self.count_only:
            self.made += len(records) if self.header_seen else 0
            return
        if self.schema is COUNTS_SCHEMA:  # counted: no field split
            yield record_batch(self.schema, len(records), self.path, raw=None, index=index)
            return
        quoted = pc.match_substring(records, self.grammar.q).to_numpy(zero_copy_only=False)
        plain = ~quoted
        if plain.all():
            yield from self._emit(records, index, pc.split_pattern(records, self.grammar.d), np.ones(len(records), bool))
            return
        if plain.any():
            mask = pa.array(plain)
            some = records.filter(mask)
            yield from self._emit(some, index[plain], pc.split_pattern(some, self.grammar.d), np.ones(len(some), bool))
        some, some_index = records.filter(pa.array(quoted)), index[quoted]
        split = self.grammar.split_quoted(some, self.expected) if self.expected and len(some) > 16 else None
        if split is not None:
            values, matched = split
            yield from self._emit(some.filter(pa.array(matched)), some_index[matched], values, np.ones(len(values), bool))
            some, some_index = some.filter(pa.array(~matched)), some_index[~matched]
        if len(some):  # few, or another field count than the header's (malformed): one at a time
            values = pa.array([self.grammar.values(r) for r in some.to_pylist()], pa.list_(pa.binary()))
            yield from self._emit(some, some_index, values, np.ones(len(some), bool))

    def _scanned_records(self, records: list[tuple[bytes, int]]) -> Iterator[pa.RecordBatch]:
        """Records from the scanner, one at a time: well-formed or not, and their field texts."""
        if self.count_only:
            self.made += len(records)
            return
        if self.schema is COUNTS_SCHEMA:
            if records:
                yield record_batch(self.schema, len(records), self.path, raw=None, index=[position for _, position in records])
            return
        raws, index, values, well_formed = [], [], [], []
        for raw, position in records:
            ok = self.grammar.well_formed.match(raw) is not None
            raws.append(raw)
            index.append(position)
            values.append(self.grammar.values(raw) if ok else [])
            well_formed.append(ok)
        if raws:
            yield from self._emit(pa.array(raws, pa.binary()), np.array(index, dtype=np.int64),
                                  pa.array(values, pa.list_(pa.binary())), np.array(well_formed, dtype=bool))

    def _emit(self, records: pa.Array, index: np.ndarray, values: pa.Array, well_formed: np.ndarray) -> Iterator[pa.RecordBatch]:
        """Records with their field texts (``values``, meaningful where ``well_formed``): the malformed flag
        and, for the others, ``_fields`` (the contract's fields, by the file's header) and ``_unknown_fields``."""
        raw = decode(records, self.options.python_encoding)
        clean = ~pc.match_substring(raw, "\ufffd").to_numpy(zero_copy_only=False)
        counts = pc.list_value_length(values).to_numpy(zero_copy_only=False)
        good = well_formed & clean & self.header_ok
        if self.expected is not None:
            good &= counts == self.expected
        bad = ~good
        if bad.any():
            yield record_batch(self.schema, int(bad.sum()), self.path, raw=raw.filter(pa.array(bad)), index=index[bad],
                         header=self.header_text, malformed=True)
        if not good.any():
            return
        mask = pa.array(good)
        rows = int(good.sum())
        good_values = values.filter(mask)
        flat = good_values.flatten()
        if self.grammar.null_texts:
            is_null = None
            for text in self.grammar.null_texts:  # a few equality scans beat a hash lookup per value
                equal = pc.equal(flat, pa.scalar(text, pa.binary()))
                is_null = equal if is_null is None else pc.or_(is_null, equal)
            flat = pc.if_else(is_null, pa.scalar(None, pa.binary()), flat)
        flat = decode(flat, self.options.python_encoding)
        starts = pc.list_value_length(good_values).to_numpy(zero_copy_only=False)
        starts = np.concatenate([[0], np.cumsum(starts)[:-1]]).astype(np.int64)
        counts_good = counts[good]
        children = []
        for position in self.positions:
            if position < 0:
                children.append(pa.nulls(rows, pa.string()))
                continue
            present = counts_good > position  # a header-less record may be short (no field count to check)
            taken = flat.take(pa.array(np.where(present, starts + position, 0)))
            children.append(taken if present.all() else pc.if_else(pa.array(present), taken, pa.scalar(None, pa.string())))
        fields = pa.StructArray.from_arrays(children, fields=list(self.struct_type)) if children else \
            pa.repeat(pa.scalar({}, self.struct_type), rows)
        if self.unknown:
            width = len(self.unknown)
            unknown = pa.ListArray.from_arrays(pa.array(np.arange(0, (rows + 1) * width, width, dtype=np.int32)),
                                               pa.array(self.unknown * rows, pa.string()))
        else:
            unknown = pa.ListArray.from_arrays(pa.array(np.zeros(rows + 1, dtype=np.int32)), pa.array([], pa.string()))
        yield record_batch(self.schema, rows, self.path, raw=raw.filter(mask), index=index[good], header=self.header_text,
                     fields=fields, unknown=unknown, malformed=False)


# ------------------------------------------------------------------------------------- CSV in splits
# A large CSV file is read by several tasks, each from a split of its lines, when a first pass has found the
# state the file is in at each split's first line: a record starts there, or a quoted field runs on from the
# split before (``csv_split_summaries``, composed by ``plan_csv_file``). Each task then reads as a read of the
# whole file would at that point, so the records and their ``_record_index`` are the same.
SUMMARY_SCHEMA = pa.schema([
    pa.field("_source_file", pa.string()), pa.field("_split_start", pa.int64()), pa.field("problem", pa.bool_()),
    pa.field("header", pa.binary()),
    pa.field("o_records", pa.int64()), pa.field("o_open", pa.bool_()), pa.field("o_pending", pa.int64()),
    pa.field("q_head_lines", pa.int64()), pa.field("q_head", pa.list_(pa.binary())),
    pa.field("q_records", pa.int64()), pa.field("q_open", pa.bool_()), pa.field("q_pending", pa.int64()),
    pa.field("o_made", pa.int64()), pa.field("q_made", pa.int64()),
])


class _SplitSummary:
    """One split of a CSV file read twice in one pass, records counted, not made: as if a record starts at
    its first line (``o``), and as if a quoted field runs on into it (``q``). The two reads agree once both
    are between records at the end of a batch of lines; from there only ``o`` reads on."""

    def __init__(self, options: LineOptions, path: str, start: int):
        self.path, self.start = path, start
        self.o = CsvFile(options, path, start, count_only=True)
        self.q = CsvFile(options, path, start, count_only=True, open_at_start=True)
        if start:  # the header is the first split's: a middle split has none of its own
            self.o.header_seen = self.q.header_seen = True
        self.joined: tuple[int, int, int, int] | None = None   # (o.records, q.records, o.made, q.made) when they met

    def feed(self, lines: pa.Array) -> None:
        for _ in self.o.feed(lines):
            pass
        if self.joined is None:
            for _ in self.q.feed(lines):
                pass
            if self.q.head_lines is not None and not self.o.parts and not self.q.parts:
                self.joined = (self.o.records, self.q.records, self.o.made, self.q.made)

    def summary(self) -> pa.RecordBatch:
        o, q = self.o, self.q
        o_open = bool(o.parts)
        if self.joined is not None:
            o_at, q_at, o_made, q_made = self.joined  # from there on, the two reads count the same records
            q_records, q_open, q_pending = q_at + o.records - o_at, o_open, o.parts_bytes
            q_made += o.made - o_made
        else:
            q_records, q_open, q_pending, q_made = q.records, bool(q.parts), q.parts_bytes, q.made
        row = {"_source_file": self.path, "_split_start": self.start, "problem": o.dead or q.dead,
               "header": o.header_raw if not self.start else None,
               "o_records": o.records + int(o_open), "o_open": o_open, "o_pending": o.parts_bytes,
               "q_head_lines": -1 if q.head_lines is None else q.head_lines,
               "q_head": q.head_text if q.head_lines is not None else None,
               "q_records": q_records + int(q_open), "q_open": q_open, "q_pending": q_pending,
               # a record still open at the split's end is made by this split (its next lines end it)
               "o_made": o.made + int(o_open), "q_made": q_made + int(q_open)}
        return pa.RecordBatch.from_pylist([row], schema=SUMMARY_SCHEMA)


def csv_split_summaries(options: LineOptions):
    """The ``mapInArrow`` function of the split plan's pass: batches of (``_line``, ``_source_file``,
    ``_split_start``), every line of each split in order -> one ``SUMMARY_SCHEMA`` row per split."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        current = None
        for batch in batches:
            if batch.num_rows == 0:
                continue
            lines, files, starts = batch.column(0), batch.column(1), batch.column(2)
            for first, stop in split_runs(files, starts):
                key = (files[first].as_py(), starts[first].as_py() or 0)
                if current is None or (current.path, current.start) != key:
                    if current is not None:
                        yield current.summary()
                    current = _SplitSummary(options, *key)
                current.feed(lines.slice(first, stop - first))
        if current is not None:
            yield current.summary()

    return run


def plan_csv_file(summaries: list[dict], header_expected: bool = True) -> dict[int, CsvSplit] | None:
    """How to read each split of one CSV file (``{split start: CsvSplit}``) from its splits' summaries, in any
    order; None when the file must be read whole: a split holds no text but binary (its problem is reported
    by that read), a quoted field runs over a split boundary and does not end within the next split (or
    within ``MAX_SPLIT_HEAD_BYTES`` of it, or ``MAX_OPEN_QUOTE_BYTES`` in all), or one is still open at the
    file's end (an unterminated quote: a read of the whole file looks back for where it ends). With
    ``header_expected``, the first split must hold the header."""
    ordered = sorted(summaries, key=lambda row: row["_split_start"])
    header = ordered[0]["header"] if ordered else None
    if header_expected and header is None and len(ordered) > 1:
        return None  # the first split holds no record: the header is further down
    plan: dict[int, CsvSplit] = {}
    records, open_field, pending, previous = 0, False, 0, None
    for position, row in enumerate(ordered):
        if row["problem"]:
            return None
        last = position == len(ordered) - 1
        skip = 0
        if open_field:
            head = row["q_head"]
            if row["q_head_lines"] < 0 or head is None or pending + sum(len(line) + 1 for line in head) > MAX_OPEN_QUOTE_BYTES:
                return None
            plan[previous] = dataclasses.replace(plan[previous], tail=tuple(head))
            skip, started, open_field, pending = row["q_head_lines"], row["q_records"], row["q_open"], row["q_pending"]
            made = row["q_made"]
        else:
            started, open_field, pending, made = row["o_records"], row["o_open"], row["o_pending"], row["o_made"]
        start = row["_split_start"]
        plan[start] = CsvSplit(first_record=records, skip_lines=skip, header=header if start else None, last=last,
                               made=made)
        records += started
        previous = start
        if open_field and (last or pending > MAX_OPEN_QUOTE_BYTES):
            return None
    return plan
