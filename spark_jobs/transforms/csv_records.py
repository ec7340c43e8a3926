"""CSV records with Spark built-ins: split a file's text into records, check and split a record into fields.

The dialect comes from the contract's ``landing`` (``LandingSpec``): delimiter, quote, escape (the quote
itself, i.e. a doubled quote as in RFC 4180, or a backslash) and the texts that mean null.

- A **record** ends at a line break (``\\n``, ``\\r\\n`` or ``\\r``) outside a quoted field; a quoted field
  may hold line breaks, delimiters and escaped quotes. A quote is special only at the start of a field
  (``5'10"`` is a plain value, as in Python's csv and Spark's reader).
- A record is **well-formed** when it is exactly ``field (delimiter field)*``, every field either
  unquoted (no line break) or one quoted span with nothing after its closing quote. Anything else
  (an unterminated quote, ``"ab"c``) is malformed; the caller also flags a wrong field count.
- An **unterminated quote** runs, like in every CSV reader, to the next quote character of the file;
  the text up to there becomes ONE malformed record (kept whole, so nothing is lost). With no later
  quote in the file it ends at its own line.

Everything is a regular expression over the record text, with possessive quantifiers so that the
work is linear in the text and a 10 MB field does not overflow Java's regex stack.
"""
from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from spark_jobs.contract import LandingSpec

BOM = "\ufeff"


def _rx(char: str) -> str:
    """``char`` as a Java regex escape, valid inside and outside character classes."""
    return f"\\x{{{ord(char):x}}}"


def _quoted(spec: LandingSpec) -> str:
    q = _rx(spec.quote)
    if spec.escape == spec.quote:
        return f"{q}[^{q}]*+(?:{q}{q}[^{q}]*+)*+{q}"
    e = _rx(spec.escape)
    return f"{q}[^{q}{e}]*+(?:{e}[\\s\\S][^{q}{e}]*+)*+{q}"


def _unquoted(spec: LandingSpec) -> str:
    """A field that does not start with the quote (may be empty; a later quote is a plain character)."""
    d, q = _rx(spec.delimiter), _rx(spec.quote)
    return f"(?:[^{d}{q}\\r\\n][^{d}\\r\\n]*+)?"


def record_pattern(spec: LandingSpec) -> str:
    """Finds every record of a file's text (group 1), line break excluded; tolerant of malformed
    records, which it ends as described in the module docstring."""
    d = _rx(spec.delimiter)
    field = f"(?:{_quoted(spec)}[^{d}\\r\\n]*+|[^{d}\\r\\n]*+)"
    return f"({field}(?:{d}{field})*+)(?:\\r\\n|\\n|\\r|\\z)"


def well_formed_pattern(spec: LandingSpec) -> str:
    d = _rx(spec.delimiter)
    field = f"(?:{_quoted(spec)}|{_unquoted(spec)})"
    return f"^{field}(?:{d}{field})*+\\z"


def _field_find_pattern(spec: LandingSpec) -> str:
    """Each field of a well-formed record followed by a delimiter (one is appended to the record)."""
    d = _rx(spec.delimiter)
    return f"({_quoted(spec)}|[^{d}\\r\\n]*+){d}"


def split_records(text: Column, spec: LandingSpec) -> Column:
    """array<string>: the records of a file's text, in order (blank ones included: callers keep the
    positions and drop blanks). A leading byte-order mark is not part of the first record."""
    without_bom = F.regexp_replace(text, f"^{BOM}", "")
    return F.regexp_extract_all(without_bom, F.lit(record_pattern(spec)), 1)


def is_well_formed(record: Column, spec: LandingSpec) -> Column:
    return F.coalesce(record.rlike(well_formed_pattern(spec)), F.lit(False))


def _unquote(token: Column, spec: LandingSpec) -> Column:
    """A quoted token without its quotes and escapes; an unquoted token as it is."""
    inner = token.substr(F.lit(2), F.length(token) - 2)
    if spec.escape == spec.quote:
        unescaped = F.regexp_replace(inner, _rx(spec.quote) * 2, _replacement(spec.quote))
    else:
        unescaped = F.regexp_replace(inner, f"{_rx(spec.escape)}([\\s\\S])", "$1")
    return F.when(token.startswith(spec.quote), unescaped).otherwise(token)


def _replacement(char: str) -> str:
    """``char`` as a literal in a Java regex replacement string."""
    return "\\" + char if char in "\\$" else char


def fields(record: Column, spec: LandingSpec) -> Column:
    """array<string>: the field values of a WELL-FORMED record, unquoted and unescaped, with the
    contract's null texts as null (compared after unquoting). Undefined for a malformed record."""
    tokens = F.regexp_extract_all(F.concat(record, F.lit(spec.delimiter)), F.lit(_field_find_pattern(spec)), 1)
    null_texts = [F.lit(v) for v in spec.null_values]

    def value(token: Column) -> Column:
        text = _unquote(token, spec)
        return F.when(text.isin(*null_texts), F.lit(None).cast("string")).otherwise(text) if null_texts else text

    return F.transform(tokens, value)


def header_names(header: Column, spec: LandingSpec) -> Column:
    """array<string>: the field names of a header record (unquoted; no null texts applied)."""
    tokens = F.regexp_extract_all(F.concat(header, F.lit(spec.delimiter)), F.lit(_field_find_pattern(spec)), 1)
    return F.transform(tokens, lambda token: _unquote(token, spec))


def is_usable_header(header: Column, spec: LandingSpec) -> Column:
    """A header record is usable when it is well-formed and names each field once."""
    names = header_names(header, spec)
    return is_well_formed(header, spec) & (F.size(F.array_distinct(names)) == F.size(names))


def field_of(values: Column, names: Column, name: str) -> Column:
    """The value of the field called ``name`` (null when absent), given a record's values and names."""
    return F.get(values, F.array_position(names, name).cast("int") - 1)
