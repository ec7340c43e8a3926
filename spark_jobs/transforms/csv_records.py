"""The CSV grammar (``landing_csv.csv_patterns``, its one home) as Spark column expressions: check a record
and split it into fields in the JVM, for silver's re-parse of bronze rows whose ``_fields`` are not the
current contract's (written before bronze parsed once, or before the landing fields or options changed).
Bronze itself splits records and fields in its Python workers (``landing_csv.CsvGrammar``), with the same
patterns; these are them spelled for Java's regex engine, with possessive quantifiers so that the work is
linear in the text and a 10 MB field does not overflow Java's regex stack.

The dialect comes from the contract's ``landing`` (``LandingSpec``): delimiter, quote, escape and the texts
that mean null.
"""
from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from spark_jobs.contract.parts import LandingSpec
from spark_jobs.transforms.landing_csv import CsvPatterns, csv_patterns


def _rx(char: str) -> str:
    """``char`` as a Java regex escape, valid inside and outside character classes."""
    return f"\\x{{{ord(char):x}}}"


def java_patterns(spec: LandingSpec) -> CsvPatterns:
    """The grammar for ``spec``'s dialect, spelled for Java's regex engine."""
    return csv_patterns(spec.delimiter, spec.quote, spec.escape, char=_rx, many="*+")


def well_formed_pattern(spec: LandingSpec) -> str:
    return f"^{java_patterns(spec).record}\\z"


def _field_find_pattern(spec: LandingSpec) -> str:
    """Each field of a well-formed record followed by a delimiter (one is appended to the record)."""
    return java_patterns(spec).token


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
