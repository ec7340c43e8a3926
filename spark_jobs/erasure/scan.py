"""Whether one object version holds a data subject, read as a stream with bounded memory (on the executors).

``scan_version(s3, bucket, key, version_id, matcher)`` reads the version once and returns a ``Finding``.
The format is told by the first bytes, not by the key:

- **Parquet** (``PAR1`` at both ends): spilled to a local temporary file and read a batch of
  ``BATCH_ROWS`` rows at a time. Text columns (strings, binary, the leaves of lists, structs and maps)
  by rules 2 and 3 of ``matching``; a column named like a keyed subject key (numbers, digit ids) by value.
- **Avro** (Iceberg manifests and manifest lists): a block at a time. Every text in a record, and in a
  manifest each data file's column ``lower_bounds``/``upper_bounds``: decoded by the column's type in the
  manifest's own table schema (int, long, decimal, string); a string bound Iceberg truncated (16
  characters) matches when it is a prefix of an id.
- **gzip**: decompressed as a stream, then read as text.
- anything else (JSON, CSV, HTML, Iceberg metadata, logs): text in chunks of ``CHUNK_BYTES``, each cut
  after a newline (or after ``,}]>`` in one long line), so that no token and no ``key: value`` is split.
  A text whose first line is a CSV header naming a keyed subject key (a landing CSV, an Athena result)
  is also read as CSV, that column compared by value; so is bronze's ``_raw`` of a CSV dataset, whose
  header bronze keeps in ``_header`` (fields split on the delimiter, quotes stripped).

Text is searched with RE2 through pyarrow (``Needles.token_re2`` / ``keyed_re2``): one compiled
automaton for any number of ids. A version whose format does not parse is ``unreadable`` (its bytes are
then searched as text, so a hit is still reported); so is one that cannot be read at all.
"""
from __future__ import annotations

import bisect
import dataclasses
import decimal
import json
import os
import struct
import tempfile
import time
import zlib
from typing import Any, BinaryIO, Iterable, Iterator

from spark_jobs.erasure.matching import Needles, canonical_number

PARQUET_MAGIC, AVRO_MAGIC, GZIP_MAGIC = b"PAR1", b"Obj\x01", b"\x1f\x8b"
CHUNK_BYTES = 4 << 20
READ_BYTES = 1 << 20
BATCH_ROWS = 32_768
# Iceberg keeps string bounds to 16 characters (write.metadata.metrics.default truncate(16)); a prefix
# shorter than this is too common to name anyone.
TRUNCATED_BOUND_CHARS = 16
MIN_PREFIX_CHARS = 8
_CUTS = (b"\n", b",", b"}", b"]", b">")


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


class Matcher:
    """``Needles`` compiled for data: RE2 patterns for texts, value sets for keyed columns."""

    def __init__(self, needles: Needles):
        self.needles = needles
        # One automaton for both rules (each pattern starts with its own "(?i)").
        parts = [p[len("(?i)"):] for p in (needles.token_re2(), needles.keyed_re2()) if p]
        self.patterns = ["(?i)" + "|".join(f"(?:{p})" for p in parts)] if parts else []
        self.prefixes = sorted(t for t in needles.tokens if len(t) > MIN_PREFIX_CHARS)

    def texts_hit(self, values) -> bool:
        """Any text of an Arrow string/binary array (or a list of str) holds a subject (rules 2, 3)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        array = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values, pa.large_string())
        if len(array) == 0:
            return False
        return any(bool(pc.any(pc.match_substring_regex(array, pattern)).as_py()) for pattern in self.patterns)

    def values_hit(self, column: str, array) -> bool:
        """A column named like a keyed subject key holds one of its ids, by value (rule 3)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        wanted = self.needles.column_values(column)
        if not wanted or len(array) == 0:
            return False
        kind = array.type
        if pa.types.is_integer(kind):
            numbers = [int(v) for v in wanted if canonical_number(v) == v and "." not in v]
            return bool(numbers) and bool(pc.any(pc.is_in(pc.cast(array, pa.int64()),
                                                          value_set=pa.array(numbers, pa.int64()))).as_py())
        if pa.types.is_decimal(kind):
            numbers = [decimal.Decimal(v) for v in wanted if canonical_number(v) == v]
            fitting = [n for n in numbers if -n.as_tuple().exponent <= kind.scale]
            try:
                return bool(fitting) and bool(pc.any(pc.is_in(array, value_set=pa.array(fitting, kind))).as_py())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass  # an id beyond the column's precision: compared one distinct value at a time below
        uniques = pc.unique(array).to_pylist()
        for value in uniques:
            if value is None:
                continue
            text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
            if text.lower() in wanted or canonical_number(text) in wanted:
                return True
        return False

    def prefix_hit(self, bound: str) -> bool:
        """A truncated string bound (Iceberg keeps 16 characters) that begins an id: the lower bound is a
        prefix of it, the upper bound is a prefix with its last character raised by one."""
        text = bound.lower()
        for prefix in (text, text[:-1]):
            if len(prefix) < MIN_PREFIX_CHARS:
                continue
            at = bisect.bisect_left(self.prefixes, prefix)
            if at < len(self.prefixes) and self.prefixes[at].startswith(prefix):
                return True
        return False


# --------------------------------------------------------------------------------------------- text
def _text_chunks(chunks: Iterable[bytes]) -> Iterator[str]:
    """Byte chunks -> texts of about ``CHUNK_BYTES``, each ending after a cut character (see the module)."""
    carry = b""
    for chunk in chunks:
        carry += chunk
        if len(carry) < CHUNK_BYTES:
            continue
        cut = max(carry.rfind(mark) for mark in _CUTS)
        if cut < 0:  # one token longer than a chunk: keep a tail, so an id at the seam is not cut off
            cut = len(carry) - 4096
        yield carry[:cut + 1].decode("utf-8", "replace")
        carry = carry[cut + 1:]
    if carry:
        yield carry.decode("utf-8", "replace")


_DELIMITERS = (",", ";", "\t", "|")


def _csv_column(header: str, matcher: "Matcher") -> tuple[str, int, str] | None:
    """(delimiter, index, name) of a keyed subject key's field in a CSV header line, if there is one."""
    for delimiter in _DELIMITERS:
        fields = [f.strip().strip('"').strip("'").lower() for f in header.split(delimiter)]
        for index, name in enumerate(fields):
            if len(fields) > 1 and matcher.needles.column_values(name):
                return delimiter, index, name
    return None


def _csv_hit(lines: Iterable[str], matcher: Matcher, column: tuple[str, int, str]) -> bool:
    """A CSV text whose header names a keyed subject key: that column's values compared by value."""
    import csv

    delimiter, index, name = column
    wanted = matcher.needles.column_values(name)
    for row in csv.reader(lines, delimiter=delimiter):
        if len(row) > index and (row[index].strip().lower() in wanted or canonical_number(row[index]) in wanted):
            return True
    return False


def _lines(texts: Iterable[str]) -> Iterator[str]:
    carry = ""
    for text in texts:
        parts = (carry + text).split("\n")
        carry = parts.pop()
        yield from (part + "\n" for part in parts)
    if carry:
        yield carry


def _text_hit(chunks: Iterable[bytes], matcher: Matcher) -> bool:
    """Text chunks searched by RE2; a CSV text with a keyed column also read as CSV, in the same pass."""
    texts = _text_chunks(chunks)
    first = next(texts, None)
    if first is None:
        return False
    column = _csv_column(first.split("\n", 1)[0], matcher) if matcher.needles.keyed else None
    hit = False

    def searched() -> Iterator[str]:
        nonlocal hit
        for text in _prepend(first, texts):  # type: ignore[arg-type]
            if matcher.texts_hit([text]):
                hit = True
                return
            yield text

    if column is None:
        for _ in searched():
            pass
        return hit
    return _csv_hit(_lines(searched()), matcher, column) or hit


def _raw_csv_hit(batch, matcher: Matcher) -> bool:
    """Bronze of a CSV dataset: ``_raw`` records with their file's header in ``_header``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = batch.schema.names
    if "_raw" not in names or "_header" not in names or not matcher.needles.keyed:
        return False
    raw, header = batch.column(names.index("_raw")), batch.column(names.index("_header"))
    for value in pc.unique(header).to_pylist():
        found = _csv_column(value or "", matcher)
        if found is None:
            continue
        delimiter, index, name = found
        parts = pc.split_pattern(pc.filter(raw, pc.equal(header, pa.scalar(value, header.type))), delimiter)
        parts = pc.filter(parts, pc.greater(pc.list_value_length(parts), index))
        if len(parts) and matcher.values_hit(name, pc.utf8_trim(pc.utf8_trim_whitespace(pc.list_element(parts, index)), "\"'")):
            return True
    return False


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
def _leaves(array) -> Iterator[tuple[Any, Any]]:
    """(Arrow array, its type) of every leaf of a possibly nested column (list items, struct fields,
    map keys and values), dictionaries decoded."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    if pa.types.is_dictionary(kind):
        yield from _leaves(array.dictionary_decode())
    elif pa.types.is_map(kind):
        yield from _leaves(array.keys)
        yield from _leaves(array.items)
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        yield from _leaves(pc.list_flatten(array))
    elif pa.types.is_struct(kind):
        for index in range(kind.num_fields):
            yield from _leaves(array.field(index))
    else:
        yield array, kind


def _parquet_hit(path: str, matcher: Matcher) -> bool:
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    for batch in parquet.iter_batches(batch_size=BATCH_ROWS):
        if _raw_csv_hit(batch, matcher):
            return True
        for name, column in zip(batch.schema.names, batch.columns):
            for leaf, kind in _leaves(column):
                if matcher.values_hit(name, leaf):
                    return True
                textual = pa.types.is_string(kind) or pa.types.is_large_string(kind) or \
                    pa.types.is_binary(kind) or pa.types.is_large_binary(kind)
                if textual and matcher.texts_hit(leaf):
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


def _bounds_hit(entry: dict, fields: dict[int, tuple[str, Any]], matcher: Matcher) -> bool:
    data_file = entry.get("data_file") if isinstance(entry, dict) else None
    if not isinstance(data_file, dict):
        return False
    for bounds in (data_file.get("lower_bounds"), data_file.get("upper_bounds")):
        for item in bounds or []:
            name, kind = fields.get(item.get("key"), ("", None))
            text = _bound_text(kind, item.get("value") or b"")
            if text is None:
                continue
            if matcher.needles.column_values(name) and (text.lower() in matcher.needles.column_values(name)
                                                        or canonical_number(text) in matcher.needles.column_values(name)):
                return True
            if kind == "string" and len(text) >= TRUNCATED_BOUND_CHARS and matcher.prefix_hit(text):
                return True
    return False


def _avro_hit(stream: BinaryIO, matcher: Matcher) -> bool:
    from spark_jobs.io.iceberg_files import iter_avro

    meta, records = iter_avro(stream)
    fields: dict[int, tuple[str, Any]] = {}
    if "schema" in meta:  # a manifest: the table's schema, for its data files' column bounds
        for field in json.loads(meta["schema"]).get("fields", []):
            fields[int(field["id"])] = (str(field["name"]), field["type"])
    texts: list[str] = []
    for record in records:
        if fields and _bounds_hit(record, fields, matcher):
            return True
        texts.extend(_avro_texts(record))
        if len(texts) >= 10_000:
            if matcher.texts_hit(texts):
                return True
            texts = []
    return matcher.texts_hit(texts)


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


def scan_chunks(chunks: Iterable[bytes], matcher: Matcher) -> tuple[bool, str]:
    """(hit, unreadable) for one object given as byte chunks (see the module docstring)."""
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
                return _avro_hit(stream, matcher), ""
        except Exception as exc:  # noqa: BLE001 - a broken file: named in the receipt, searched as text
            reason = f"{'Parquet' if head.startswith(PARQUET_MAGIC) else 'Avro'}: {(str(exc).splitlines() or [type(exc).__name__])[0][:200]}"
            return _text_hit(_file_chunks(path), matcher), reason
    finally:
        os.unlink(path)


def _prepend(head: bytes, chunks: Iterator[bytes]) -> Iterator[bytes]:
    yield head
    yield from chunks


def scan_version(s3, bucket: str, key: str, version_id: str, size: int, matcher: Matcher) -> Finding:
    """Read one version (a ranged stream of the S3 object) and say whether it holds a subject."""
    started = time.monotonic()
    try:
        body = s3.get_object(Bucket=bucket, Key=key, VersionId=version_id)["Body"]
        hit, unreadable = scan_chunks(_body_chunks(body), matcher)
    except Exception as exc:  # noqa: BLE001 - S3 or network error after botocore's retries: never "clean"
        hit, unreadable = False, f"read failed: {(str(exc).splitlines() or [type(exc).__name__])[0][:200]}"
    return Finding(key, version_id, hit, unreadable, size, time.monotonic() - started)
