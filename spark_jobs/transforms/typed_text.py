"""How silver reads a landing field's text as its contract type, for the types a subject key can have: ONE
grammar, which silver's cast applies in Spark (``transforms/silver._typed``) and erasure's matching applies to
text (``erasure/matching.py``: the texts of a numeric id that silver would type as that id).

No Spark here: regex text that Java (Spark's ``rlike``), RE2 (pyarrow) and Python's ``re`` read alike.

- ``string``: the text with spaces (U+0020 only, Spark's ``trim``) cut from both ends, then lower- or
  upper-cased when the column has a ``case`` rule; blank is missing.
- ``int``/``long``: ``INTEGER_TEXT``: an optional sign, digits (leading zeros allowed), and whitespace
  (``SPACE``: what Java's ``\\s`` admits, which Spark's cast then trims) around it; a value out of the type's
  range is null. No fraction, no exponent, no ``_`` (``1545.0``, ``1.545e3`` and ``1_545`` are null).
- ``decimal(P,S)``: ``DECIMAL_TEXT``: an optional sign, digits with an optional fraction (``1545.``, ``.5``),
  whitespace around it; rounded to S decimals half away from zero (Spark's cast: ``1544.995`` and
  ``1545.004`` are ``1545.00`` at scale 2); more than P digits is null. No exponent.

``number_forms`` turns one value into a regex of every text that the grammar types as it (rounding
included), which tests/spark_jobs/erasure/test_number_forms.py checks against Spark's own cast.
"""
from __future__ import annotations

import decimal
import re

# Java's \s (Spark's rlike), spelled out so that RE2 and Python read the same class.
SPACE = r"[ \t\n\x0B\f\r]"
INTEGER_TEXT = rf"^{SPACE}*[-+]?[0-9]+{SPACE}*$"
DECIMAL_TEXT = rf"^{SPACE}*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+){SPACE}*$"
_PLAIN_NUMBER = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")


def string_value(text: str, case: str | None) -> str:
    """The text of a string column as silver stores it: spaces trimmed, the ``case`` rule applied."""
    value = text.strip(" ")
    return value.lower() if case == "lower" else value.upper() if case == "upper" else value


def canonical_number(text: str) -> str | None:
    """A plain decimal number (what ``DECIMAL_TEXT`` admits, spaces aside) as one canonical text: no sign for
    a positive, no leading zeros, no trailing zeros after the point (``+01042.50`` -> ``1042.5``; ``-0`` ->
    ``0``); None for anything else (an exponent, ``_``, ``nan``)."""
    text = text.strip(" \t\n\x0b\f\r")
    if not _PLAIN_NUMBER.fullmatch(text):
        return None
    normal = decimal.Decimal(text).normalize()
    if normal.as_tuple().exponent > 0:
        normal = normal.quantize(decimal.Decimal(1))
    formatted = format(normal, "f")
    return "0" if formatted in ("-0", "0") else formatted


def _magnitude_digits(value: decimal.Decimal, scale: int) -> tuple[str, str]:
    """(integer digits, exactly ``scale`` fraction digits) of ``abs(value)`` at ``scale``."""
    text = format(abs(value).quantize(decimal.Decimal(1).scaleb(-scale)), "f")
    whole, _, fraction = text.partition(".")
    return whole, fraction


def _integer_part(whole: str) -> str:
    return "0*" if whole == "0" else "0*" + re.escape(whole)


def _rounding_down_to(whole: str, fraction: str, scale: int) -> str:
    """Texts of a magnitude that truncates to ``whole.fraction`` (``scale`` digits) with a next digit of 0-4, or
    none: they round (half up) to it. ``1545``, ``01545.``, ``1545.004`` for 1545.00; ``.5``, ``0.50`` for 0.50."""
    kept = fraction.rstrip("0")
    longer = f"{re.escape(fraction)}[0-4][0-9]*"  # more digits than the scale: the first extra one 0-4
    if kept:  # a point and a fraction are needed
        return f"{_integer_part(whole)}\\.(?:{re.escape(kept)}0{{0,{scale - len(kept)}}}|{longer})"
    zeros = f"0{{0,{scale}}}" if scale else ""
    if whole != "0":  # "1545", "1545.", "1545.00", "1545.004"
        return f"0*{re.escape(whole)}(?:\\.(?:{zeros}|{longer}))?"
    # zero: "0", "00.", "0.00", ".0", ".004", never "" or "."
    after_point = f"(?:0{{1,{scale}}}|{longer})" if scale else longer
    return f"(?:0+(?:\\.(?:{zeros}|{longer}))?|\\.{after_point})"


def number_forms(type_name: str, canonical: str, integral_fraction: bool = False) -> str:
    """A regex (no anchors, no surrounding whitespace) of every text silver types as the number ``canonical``
    in a column of ``type_name`` (``int``, ``long`` or ``decimal(P,S)``), the sign, leading zeros and, for a
    decimal, any text that rounds to it included. ``integral_fraction``: an integer also written with a
    fraction of zeros (``1545.0``, ``1545.``), which silver does not type as an int (such a record is
    quarantined) but which names the same number."""
    value = decimal.Decimal(canonical)
    if type_name in ("int", "long"):
        whole = format(abs(value).to_integral_value(), "f")
        digits = "0+" if whole == "0" else "0*" + re.escape(whole)
        body = digits + (r"(?:\.0*)?" if integral_fraction else "")
        return _signed(value, body)
    scale = int(type_name.rstrip(")").split(",")[1])
    whole, fraction = _magnitude_digits(value, scale)
    forms = [_rounding_down_to(whole, fraction, scale)]
    unit = decimal.Decimal(1).scaleb(-scale)
    if abs(value) >= unit:  # texts just below it that round up to it: its predecessor at this scale, then 5-9
        below_whole, below_fraction = _magnitude_digits(abs(value) - unit, scale)
        forms.append(f"{_integer_part(below_whole)}\\.{re.escape(below_fraction)}[5-9][0-9]*")
    return _signed(value, "(?:" + "|".join(forms) + ")")


def _signed(value: decimal.Decimal, body: str) -> str:
    if value == 0:
        return f"[-+]?{body}"
    return f"-{body}" if value < 0 else f"\\+?{body}"
