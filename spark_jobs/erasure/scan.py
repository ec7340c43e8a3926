"""Whether one object version holds a data subject, read as a stream with bounded memory (on the executors).

``scan_version(s3, bucket, key, version_id, size, matcher)`` reads the version once and returns a
``Finding``. The format is told by the first bytes, not by the key:

- **Parquet** (``PAR1`` at both ends): spilled to a local temporary file and read a batch of
  ``BATCH_ROWS`` rows at a time, each batch by ``batch_hits``: text columns (strings, binary, the
  leaves of lists, structs and maps) by ``matching``'s rules 2 to 4, a column named like a subject key of
  the object's dataset by the key's type (rule 1), bronze's ``_raw`` of a CSV dataset by its ``_header``. The erase
  itself decides which rows of bronze, the quarantine and silver hold a subject with the same
  ``batch_hits`` (``records.py``): what the verification reads is what the erase matched.
- **Avro** (Iceberg manifests and manifest lists, read with ``fastavro``): a block at a time. Every
  text in a record; in a manifest, each data file's column ``lower_bounds``/``upper_bounds`` decoded by
  the column's type in the manifest's own table schema (int, long, decimal, string): a bound that IS an
  id (a subject that was a file's min or max) is a hit. A string bound Iceberg truncated (to 16
  characters) is only a hint: it is a hit when the data file it describes (its current version) holds a
  subject, read through ``fetch``; a prefix shared by other ids names nobody.
- **gzip**: decompressed as a stream, then read as text.
- anything else (JSON, CSV, HTML, Iceberg metadata, logs): text in windows of about ``CHUNK_BYTES``.
  Consecutive windows overlap by ``overlap(needles)`` characters (16 times the longest id and key, at
  least ``MIN_OVERLAP_CHARS``), more than any hit can span, and each ends after a character that no
  token holds: an id across a seam is read whole in one window. A text whose first line is a CSV header
  naming a subject key (a landing CSV, an Athena result) is also read as CSV, that column compared
  by value.

A version whose format does not parse is ``unreadable`` (its bytes are then searched as text, so a hit
is still reported); so is one that cannot be read at all, and a manifest whose hint could not be checked.
"""
from __future__ import annotations

import codecs
import dataclasses
import decimal
import functools
import json
import os
import struct
import tempfile
import time
import unicodedata
import zlib
from typing import Any, BinaryIO, Callable, Iterable, Iterator

from spark_jobs.erasure.matching import Needles

PARQUET_MAGIC, AVRO_MAGIC, GZIP_MAGIC = b"PAR1", b"Obj\x01", b"\x1f\x8b"
CHUNK_BYTES = 4 << 20
READ_BYTES = 1 << 20
BATCH_ROWS = 32_768
MIN_OVERLAP_CHARS = 4096
# Iceberg keeps string bounds to 16 characters (write.metadata.metrics.default truncate(16)).
TRUNCATED_BOUND_CHARS = 16
# Characters that end a window: no token, keyed value or JSON escape holds them (the common ones first).
_CUTS = "\n ,}]>\"':;=\t"
_SENTINEL = "a"  # put at a window's edge that falls inside a run of letters, so the run is not taken for a token

# fetch(uri) -> the current version's bytes as chunks, None when there is no such object.
Fetch = Callable[[str], "Iterable[bytes] | None"]


@dataclasses.dataclass(frozen=True)
class Finding:
    """What reading one version found: ``hit`` (a subject is in it), ``unreadable`` (why its format
    did not parse or it could not be read; "" when it did), bytes read, seconds."""

    key: str
    version_id: str
    hit: bool
    unreadable: str
    size: int
    seconds: float


class Unconfirmed(RuntimeError):
    """A manifest's truncated bound may name a subject, and the data file could not be read to tell."""


def overlap(needles: Needles) -> int:
    """How many characters consecutive text windows share: more than any hit can span (an id written
    with JSON escapes takes up to 6 characters per character, 12 for a surrogate pair)."""
    return max(MIN_OVERLAP_CHARS, 16 * needles.longest + 256)


class Matcher:
    """``Needles`` applied to data: Arrow arrays of text (``matching.Needles.hits``, rules 2 to 4), columns named
    like a subject key by value (``KeyRule.mask``, rule 1). ``encoding``: how a text object's bytes are
    decoded (a landing file's contract says; else UTF-8); ``dialect``: (delimiter, quote, escape) of a CSV
    landing file's dataset, None where the header tells."""

    def __init__(self, needles: Needles, encoding: str = "utf-8", dialect: tuple[str, str, str] | None = None):
        self.needles = needles
        self.overlap = overlap(needles)
        self.encoding = encoding
        self.dialect = dialect

    def hits(self, values):
        return self.needles.hits(values)

    def texts_hit(self, values) -> bool:
        """Any text of an Arrow string/binary array (or a list of str) holds a subject (rules 2 to 4)."""
        return bool(self.hits(values).any())

    def value_mask(self, column: str, array):
        """Per value: a column named like a subject key holds one of its ids, by the key's type (rule 1)."""
        import numpy as np

        found = np.zeros(len(array), dtype=bool)
        for rule in self.needles.rules_for(column):
            found |= rule.mask(array)
        return found

    def equals(self, column: str, text: str) -> bool:
        """One value's text of a column named like a subject key is one of its ids (rule 1)."""
        return any(rule.equals(text) for rule in self.needles.rules_for(column))


class Matchers:
    """The matcher each object of the lake is read with (``Needles.for_key``: its dataset's key names, the
    encoding and CSV dialect of its landing files), one per dataset."""

    def __init__(self, needles: Needles):
        self.needles = needles
        self._made: dict[tuple, Matcher] = {}

    def for_key(self, key: str) -> Matcher:
        owner = self.needles.owner_of(key)
        landing = owner is not None and key.startswith(owner.landing_prefix)
        encoding = owner.encoding if landing else "utf-8"
        dialect = (owner.delimiter, owner.quote, owner.escape) if landing and owner.delimiter else None
        made = (owner.dataset if owner else None, encoding, dialect)
        if made not in self._made:
            self._made[made] = Matcher(self.needles.scoped(made[0]), encoding, dialect)
        return self._made[made]


# --------------------------------------------------------------------------------------------- a batch of rows
def _leaves(array, rows=None) -> Iterator[tuple[Any, Any, Any]]:
    """(Arrow array, its type, the row of each of its values, or None when value i is row i) of every leaf
    of a possibly nested column (list items, struct fields, map keys and values), dictionaries decoded."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    if pa.types.is_dictionary(kind):
        yield from _leaves(array.dictionary_decode(), rows)
    elif pa.types.is_map(kind):  # as a list of (key, value) structs: Arrow's list kernels do not take maps
        entries = pa.struct([pa.field("key", kind.key_type), pa.field("value", kind.item_type)])
        yield from _leaves(array.cast(pa.list_(entries)), rows)
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        parents = pc.list_parent_indices(array).to_numpy(zero_copy_only=False)
        yield from _leaves(pc.list_flatten(array), parents if rows is None else rows[parents])
    elif pa.types.is_struct(kind):
        for index in range(kind.num_fields):
            yield from _leaves(array.field(index), rows)
    else:
        yield array, kind, rows


def _is_text(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind) or \
        pa.types.is_large_binary(kind)


def _mark(target, found, rows) -> None:
    if rows is None:
        target |= found
    elif found.any():
        target[rows[found]] = True


def batch_hits(batch, matcher: Matcher):
    """Per row of an Arrow record batch: (a text holds a subject, a keyed column holds one by value) as two
    numpy bool arrays. Every column is read: strings and binary at any depth by rules 2 to 4 (all of a
    batch's texts in one RE2 pass), a column named like a subject key by the key's type, bronze's CSV ``_raw``
    under its ``_header`` by value."""
    import numpy as np
    import pyarrow as pa

    text = np.zeros(batch.num_rows, dtype=bool)
    value = np.zeros(batch.num_rows, dtype=bool)
    texts: dict[bool, list[tuple[Any, Any]]] = {True: [], False: []}  # by "is binary"
    for name, column in zip(batch.schema.names, batch.columns):
        for leaf, kind, rows in _leaves(column):
            _mark(value, matcher.value_mask(name, leaf), rows)
            if _is_text(kind) and len(leaf):
                binary = pa.types.is_binary(kind) or pa.types.is_large_binary(kind)
                texts[binary].append((leaf.cast(pa.large_binary() if binary else pa.large_string()), rows))
    for group in texts.values():
        if not group:
            continue
        found = matcher.hits(pa.concat_arrays([leaf for leaf, _ in group]))
        start = 0
        for leaf, rows in group:
            _mark(text, found[start:start + len(leaf)], rows)
            start += len(leaf)
    value |= _raw_csv_mask(batch, matcher)
    return text, value


_DELIMITERS = (",", ";", "\t", "|")


def _csv_column(header: str, matcher: "Matcher") -> tuple[str, int, str] | None:
    """(delimiter, index, name) of a subject key's field in a CSV header line, if there is one: the header
    read by the one CSV grammar (a quoted name may hold the delimiter), in the dialect of its dataset where
    the matcher knows it, else each common delimiter with the double quote."""
    dialects = [matcher.dialect] if matcher.dialect else [(d, '"', '"') for d in _DELIMITERS]
    for delimiter, quote, escape in dialects:
        grammar = _csv_grammar(delimiter, quote, escape)
        fields = [f.strip() for f in _csv_values(header.rstrip("\r\n").encode("utf-8"), grammar)]
        for index, name in enumerate(fields):
            if len(fields) > 1 and matcher.needles.rules_for(name):
                return delimiter, index, name
    return None


@functools.lru_cache(maxsize=16)
def _csv_grammar(delimiter: str, quote: str = '"', escape: str = '"'):
    """The CSV grammar bronze splits records and fields with (``transforms/landing_csv.csv_patterns``), for
    one dialect: ``delimiter``, ``quote``, ``escape`` (the quote itself: doubled to escape it)."""
    from spark_jobs.transforms.landing_csv import CsvGrammar
    from spark_jobs.transforms.landing_text import LineOptions

    return CsvGrammar(LineOptions(format="csv", delimiter=delimiter, quote=quote, escape=escape))


def _csv_values(record: bytes, grammar) -> list[str]:
    """A CSV record's field values (UTF-8 bytes in), by the grammar when it is well-formed. The scan only hunts
    for an id, so it is deliberately more lenient than bronze: a record the grammar calls malformed (bronze
    keeps no fields for it) is still read, by Python's CSV reader, which takes a quote anywhere and starts a
    field at each delimiter outside one, so an id in it is not missed; failing that, split on the delimiter."""
    import csv

    if grammar.well_formed.match(record) is not None:
        return [value.decode("utf-8", "replace") for value in grammar.values(record)]
    text, delimiter = record.decode("utf-8", "replace"), grammar.d.decode("latin-1")
    try:
        return next(csv.reader([text], delimiter=delimiter, quotechar=grammar.q.decode("latin-1")), [])
    except csv.Error:
        return text.split(delimiter)


def _raw_csv_mask(batch, matcher: Matcher):
    """Bronze of a CSV dataset: ``_raw`` records with their file's header in ``_header``; per row, whether
    a subject key's field holds an id, by value (rule 1). A record without a quote is split on the delimiter
    (what the grammar makes of it, vectorised as bronze does), one with a quote by ``_csv_values``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    found = np.zeros(batch.num_rows, dtype=bool)
    names = batch.schema.names
    if "_raw" not in names or "_header" not in names or not matcher.needles.keyed:
        return found
    raw, header = batch.column(names.index("_raw")), batch.column(names.index("_header"))
    quote = matcher.dialect[1] if matcher.dialect else '"'
    quoted = pc.fill_null(pc.match_substring(raw, quote), False).to_numpy(zero_copy_only=False)
    for value in pc.unique(header).to_pylist():
        column = _csv_column(value or "", matcher)
        if column is None:
            continue
        delimiter, index, name = column
        same = pc.fill_null(pc.equal(header, pa.scalar(value, header.type)), False).to_numpy(zero_copy_only=False)
        parts = pc.split_pattern(raw, delimiter)
        wide = pc.fill_null(pc.greater(pc.list_value_length(parts), index), False).to_numpy(zero_copy_only=False)
        rows = np.flatnonzero(same & wide & ~quoted)
        if len(rows):
            fields = pc.list_element(pc.take(parts, pa.array(rows)), index)
            found[rows[matcher.value_mask(name, fields)]] = True
        rows = np.flatnonzero(same & quoted)
        if len(rows):
            grammar = _csv_grammar(delimiter, *(matcher.dialect[1:] if matcher.dialect else ('"', '"')))
            records = [_csv_values((text or "").encode("utf-8"), grammar) for text in pc.take(raw, pa.array(rows)).to_pylist()]
            fields = pa.array([r[index] if len(r) > index else None for r in records], pa.large_string())
            found[rows[matcher.value_mask(name, fields)]] = True
    return found


# --------------------------------------------------------------------------------------------- text
def _blocks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Byte chunks regrouped into blocks of about ``CHUNK_BYTES``."""
    pending: list[bytes] = []
    size = 0
    for chunk in chunks:
        pending.append(chunk)
        size += len(chunk)
        if size >= CHUNK_BYTES:
            yield b"".join(pending)
            pending, size = [], 0
    if pending:
        yield b"".join(pending)


def _in_run(char: str) -> bool:
    """A character a token, a keyed value or an escape may hold (a window must not end or start next to it):
    a letter, digit or combining mark, a joiner, a backslash."""
    return char.isalnum() or char in "-_.@+\\" or unicodedata.category(char)[0] == "M"


def _cut(text: str) -> int:
    """Where a window may end: just after the last character no token holds; -1 when there is none."""
    cut = max(text.rfind(mark) for mark in _CUTS)
    if cut < 0:
        cut = next((i for i in range(len(text) - 1, -1, -1) if not _in_run(text[i])), -1)
    return cut + 1 if cut >= 0 else -1


def _windows(chunks: Iterable[bytes], overlap_chars: int, encoding: str = "utf-8") -> Iterator[tuple[str, str]]:
    """Byte chunks -> (new text, window to search): the new texts in order cover the input exactly once
    (for the CSV reading); each window is its new text after the ``overlap_chars`` characters before it,
    so a hit that crosses a seam is whole in one window. A window's edge inside a run of letters, digits,
    joiners or backslashes gets a letter beside it, so no part of the run reads as a token of its own."""
    decoder = codecs.getincrementaldecoder(encoding)("replace")
    pending, context = "", ""
    blocks = _blocks(chunks)
    while True:
        block = next(blocks, None)
        pending += decoder.decode(block or b"", final=block is None)
        if block is not None and len(pending) < CHUNK_BYTES // 2:
            continue
        cut = len(pending) if block is None else _cut(pending)
        if cut <= 0:
            cut = len(pending)  # one run longer than a window: no token can end inside it
        new, pending = pending[:cut], pending[cut:]
        if new or block is None:
            ends_in_run = bool(new) and bool(pending) and _in_run(new[-1])
            yield new, context + new + (_SENTINEL if ends_in_run else "")
            seen = context + new
            start = max(0, len(seen) - overlap_chars)
            while start > 0 and seen[start - 1] == "\\":  # never start between a backslash and what it escapes
                start -= 1
            context = (_SENTINEL if start > 0 and _in_run(seen[start - 1]) else "") + seen[start:]
        if block is None:
            return


def _csv_records(lines: Iterable[str], grammar) -> Iterator[bytes]:
    """A CSV text's records (UTF-8 bytes), cut where bronze cuts them (``PendingRecords``, ``CsvGrammar.take_record``):
    at a line break outside a quoted field; an unterminated quote runs to the next quote of the text, or ends at its
    own line when there is none (or after ``MAX_OPEN_QUOTE_BYTES``). Linear in the text, however many lines a
    quoted field runs over."""
    from spark_jobs.transforms.landing_csv import MAX_OPEN_QUOTE_BYTES, PendingRecords

    pending, is_open = PendingRecords(), False  # the text of the record still open (a quoted field over lines)
    for line in lines:
        data = line.encode("utf-8")
        pending.add(data)
        if is_open and grammar.q not in data and len(pending) <= MAX_OPEN_QUOTE_BYTES:
            continue  # this line cannot close the open field
        yield from pending.take(grammar, at_end=False)
        is_open = bool(pending)
    yield from pending.take(grammar, at_end=True)


def _csv_hit(lines: Iterable[str], matcher: Matcher, column: tuple[str, int, str]) -> bool:
    """A CSV text whose header names a subject key: that column's values compared by value (rule 1), a batch
    of records at a time."""
    import pyarrow as pa

    delimiter, index, name = column
    grammar = _csv_grammar(delimiter, *(matcher.dialect[1:] if matcher.dialect else ('"', '"')))
    values: list[str | None] = []
    for record in _csv_records(lines, grammar):
        row = _csv_values(record, grammar)
        values.append(row[index] if len(row) > index else None)
        if len(values) >= 8192:
            if matcher.value_mask(name, pa.array(values, pa.large_string())).any():
                return True
            values = []
    return bool(values) and bool(matcher.value_mask(name, pa.array(values, pa.large_string())).any())


def _lines(texts: Iterable[str]) -> Iterator[str]:
    carry = ""
    for text in texts:
        parts = (carry + text).split("\n")
        carry = parts.pop()
        yield from (part + "\n" for part in parts)
    if carry:
        yield carry


def _text_hit(chunks: Iterable[bytes], matcher: Matcher) -> bool:
    """Text windows searched by RE2; a CSV text with a keyed column also read as CSV, in the same pass."""
    windows = _windows(chunks, matcher.overlap, matcher.encoding)
    first = next(windows, None)
    if first is None:
        return False
    column = _csv_column(first[0].split("\n", 1)[0], matcher) if matcher.needles.keyed else None
    hit = False

    def searched() -> Iterator[str]:
        nonlocal hit
        for new, window in _prepend(first, windows):  # type: ignore[arg-type]
            if matcher.texts_hit([window]):
                hit = True
                return
            yield new

    if column is None:
        for _ in searched():
            pass
        return hit
    return _csv_hit(_lines(searched()), matcher, column) or hit


def _gunzip(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """A gzip stream (several members too, as ``gzip`` writes them) decompressed chunk by chunk."""
    inflater = zlib.decompressobj(wbits=31)
    for chunk in chunks:
        while chunk:
            yield inflater.decompress(chunk, READ_BYTES)
            chunk = inflater.unconsumed_tail
            if inflater.eof:
                chunk, inflater = inflater.unused_data + chunk, zlib.decompressobj(wbits=31)
    yield inflater.flush()


# --------------------------------------------------------------------------------------------- Parquet
def _parquet_hit(path: str, matcher: Matcher) -> bool:
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    for batch in parquet.iter_batches(batch_size=BATCH_ROWS):
        text, value = batch_hits(batch, matcher)
        if text.any() or value.any():
            return True
    return False


# --------------------------------------------------------------------------------------------- Avro
def _avro_texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, (bytes, bytearray)):
        yield bytes(value).decode("utf-8", "replace")
    elif isinstance(value, dict):
        for item in value.items():
            yield from _avro_texts(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _avro_texts(item)


def _bound_text(kind: Any, raw: bytes) -> str | None:
    """An Iceberg single-value serialisation as text, for the types a subject key can have."""
    if kind == "int" and len(raw) == 4:
        return str(struct.unpack("<i", raw)[0])
    if kind == "long" and len(raw) == 8:
        return str(struct.unpack("<q", raw)[0])
    if isinstance(kind, str) and kind.startswith("decimal(") and raw:
        scale = int(kind.rstrip(")").split(",")[1])
        return str(decimal.Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-scale))
    if kind == "string":
        return raw.decode("utf-8", "replace")
    return None


def _may_be_truncated_id(bound: str, lower: bool, needles: Needles) -> bool:
    """A string bound of 16 characters that Iceberg may have cut from a longer id: the lower bound is the
    id's first 16 characters, the upper bound the same with its last character raised by one."""
    if len(bound) != TRUNCATED_BOUND_CHARS:
        return False
    head = bound if lower else bound[:-1] + chr(max(0, ord(bound[-1]) - 1))
    return any(len(t) > TRUNCATED_BOUND_CHARS and head.lower() == t[:TRUNCATED_BOUND_CHARS] for t in needles.tokens) \
        or any(len(t) > TRUNCATED_BOUND_CHARS and head == t[:TRUNCATED_BOUND_CHARS] for t in needles.exact)


def _bounds(entry: dict, fields: dict[int, tuple[str, Any]], matcher: Matcher) -> tuple[bool, bool]:
    """(a bound is an id, a bound may be an id Iceberg truncated) for one manifest entry."""
    data_file = entry.get("data_file") if isinstance(entry, dict) else None
    if not isinstance(data_file, dict):
        return False, False
    hinted = False
    for lower, bounds in ((True, data_file.get("lower_bounds")), (False, data_file.get("upper_bounds"))):
        for item in bounds or []:
            name, kind = fields.get(item.get("key"), ("", None))
            text = _bound_text(kind, item.get("value") or b"")
            if text is None:
                continue
            if matcher.equals(name, text):
                return True, hinted
            if kind == "string" and _may_be_truncated_id(text, lower, matcher.needles):
                hinted = True
    return False, hinted


def _data_file_hit(uri: str, matcher: Matcher, fetch: Fetch | None, confirmed: dict[str, bool]) -> bool:
    """Whether the data file a manifest entry describes holds a subject (its current version); a file that
    no longer exists holds nobody. ``Unconfirmed`` when it cannot be read."""
    if uri not in confirmed:
        if fetch is None:
            raise Unconfirmed("a truncated bound may name a subject; its data file cannot be read here")
        try:
            chunks = fetch(uri)
        except Exception as exc:  # noqa: BLE001 - the manifest stays unverified, never clean
            raise Unconfirmed(f"a truncated bound may name a subject; reading its data file failed "
                              f"({type(exc).__name__})") from None
        confirmed[uri] = False if chunks is None else scan_chunks(chunks, matcher)[0]
    return confirmed[uri]


def _avro_hit(stream: BinaryIO, matcher: Matcher, fetch: Fetch | None = None) -> bool:
    from spark_jobs.io.iceberg_files import iter_avro

    meta, records = iter_avro(stream)
    fields: dict[int, tuple[str, Any]] = {}
    if "schema" in meta:  # a manifest: the table's schema, for its data files' column bounds
        for field in json.loads(meta["schema"]).get("fields", []):
            fields[int(field["id"])] = (str(field["name"]), field["type"])
    texts: list[str] = []
    hinted: list[str] = []
    for record in records:
        if fields:
            exact, hint = _bounds(record, fields, matcher)
            if exact:
                return True
            if hint:
                hinted.append(str(record["data_file"].get("file_path")))
        texts.extend(_avro_texts(record))
        if len(texts) >= 10_000:
            if matcher.texts_hit(texts):
                return True
            texts = []
    if matcher.texts_hit(texts):
        return True
    confirmed: dict[str, bool] = {}
    return any(_data_file_hit(uri, matcher, fetch, confirmed) for uri in dict.fromkeys(hinted))


# --------------------------------------------------------------------------------------------- one version
def _body_chunks(body) -> Iterator[bytes]:
    for chunk in body.iter_chunks(READ_BYTES):
        if chunk:
            yield chunk


def _spill(head: bytes, chunks: Iterable[bytes]) -> str:
    handle, path = tempfile.mkstemp(prefix="tenantlake-erase-", suffix=".bin")
    with os.fdopen(handle, "wb") as sink:
        sink.write(head)
        for chunk in chunks:
            sink.write(chunk)
    return path


def _file_chunks(path: str) -> Iterator[bytes]:
    with open(path, "rb") as source:
        while chunk := source.read(READ_BYTES):
            yield chunk


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]


def scan_chunks(chunks: Iterable[bytes], matcher: Matcher, fetch: Fetch | None = None) -> tuple[bool, str]:
    """(hit, unreadable) for one object given as byte chunks (see the module docstring). ``fetch`` reads the
    data file a manifest's truncated bound hints at."""
    chunks = iter(chunks)
    head = b""
    for chunk in chunks:
        head += chunk
        if len(head) >= 4:
            break
    if head.startswith(GZIP_MAGIC):
        return _text_hit(_gunzip(_prepend(head, chunks)), matcher), ""
    if not head.startswith((PARQUET_MAGIC, AVRO_MAGIC)):
        return _text_hit(_prepend(head, chunks), matcher), ""
    path = _spill(head, chunks)
    try:
        try:
            if head.startswith(PARQUET_MAGIC):
                return _parquet_hit(path, matcher), ""
            with open(path, "rb") as stream:
                return _avro_hit(stream, matcher, fetch), ""
        except Unconfirmed as exc:  # the manifest's other texts are clean; one hint is left open
            return False, f"Avro: {exc}"
        except Exception as exc:  # noqa: BLE001 - a broken file: named in the receipt, searched as text
            reason = f"{'Parquet' if head.startswith(PARQUET_MAGIC) else 'Avro'}: {_first_line(exc)}"
            return _text_hit(_file_chunks(path), matcher), reason
    finally:
        os.unlink(path)


def _prepend(head, chunks: Iterator):
    yield head
    yield from chunks


def s3_fetch(s3, bucket: str) -> Fetch:
    """``fetch`` for ``scan_chunks``: an ``s3://``/``s3a://`` URI in ``bucket`` -> its current version's
    chunks (None when it is deleted or in another bucket)."""
    def fetch(uri: str):
        scheme, _, rest = uri.partition("://")
        name, _, key = rest.partition("/")
        if scheme not in ("s3", "s3a") or name != bucket:
            return None
        try:
            return _body_chunks(s3.get_object(Bucket=bucket, Key=key)["Body"])
        except s3.exceptions.NoSuchKey:
            return None
    return fetch


def scan_version(s3, bucket: str, key: str, version_id: str, size: int, matcher: Matcher) -> Finding:
    """Read one version (a ranged stream of the S3 object) and say whether it holds a subject."""
    started = time.monotonic()
    try:
        body = s3.get_object(Bucket=bucket, Key=key, VersionId=version_id)["Body"]
        hit, unreadable = scan_chunks(_body_chunks(body), matcher, s3_fetch(s3, bucket))
    except Exception as exc:  # noqa: BLE001 - S3 or network error after botocore's retries: never "clean"
        hit, unreadable = False, f"read failed: {_first_line(exc)}"
    return Finding(key, version_id, hit, unreadable, size, time.monotonic() - started)
