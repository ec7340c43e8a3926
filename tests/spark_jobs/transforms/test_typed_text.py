"""spark_jobs/transforms/typed_text.py: ``number_forms`` describes exactly the texts silver's own cast types as a
number (issue 51: the erasure derives every text form of a numeric id from it).

Thousands of generated texts (signs, whitespace, leading zeros, fractions that round either way at the
scale, exponents, ``_``, other digits) go through silver's real typing (``transforms/silver._typed`` in
Spark), and for every id of every type, the regex, in Python and in RE2, matches a text exactly when Spark
types it as that id.
"""
from __future__ import annotations

import decimal
import random
import re

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F

from spark_jobs.contract.parts import ColumnSpec
from spark_jobs.transforms import silver as silver_tx
from spark_jobs.transforms.typed_text import SPACE, canonical_number, number_forms, string_value

TYPES = ("int", "long", "decimal(10,2)", "decimal(5,0)", "decimal(6,3)")
IDS = ("1545", "0", "-1545", "7", "1544.99", "0.5", "0.05", "1545.5", "-0.01", "0.004", "99999.999", "2147483647")


def _texts(count: int) -> list[str]:
    rnd = random.Random(51)
    wholes = ["", "0", "00", "1545", "01545", "1544", "1546", "7", "0007", "15450", "99999", "2147483647",
              "0002147483647", "2147483648", "1_545"]
    fractions = [None, None, "", "0", "00", "004", "005", "995", "5", "49", "50", "9", "999", "0049", "4999", "9995"]
    texts = set()
    while len(texts) < count:
        fraction = rnd.choice(fractions)
        body = rnd.choice(["", "", "+", "-"]) + rnd.choice(wholes) + ("" if fraction is None else "." + fraction)
        body += rnd.choice(["", "", "", "e3", "E0"])
        texts.add(rnd.choice(["", " ", "\t", "  ", "\n", "\x0b"]) + body + rnd.choice(["", " ", "\r", "\f"]))
    return sorted(texts)


def test_number_forms_are_the_texts_silvers_cast_types_as_the_number(spark):
    texts = _texts(3000)
    frame = spark.createDataFrame([(t,) for t in texts], f"`{silver_tx.RAW_PREFIX}k` string")
    typed = frame.select(F.col(f"{silver_tx.RAW_PREFIX}k").alias("text"),
                         *[silver_tx._typed(ColumnSpec(name="k", type=kind)).alias(f"t{i}") for i, kind in enumerate(TYPES)])
    cast = {row["text"]: [row[f"t{i}"] for i in range(len(TYPES))] for row in typed.collect()}
    arrow = pa.array(texts, pa.large_string())
    checked = positives = 0
    for i, kind in enumerate(TYPES):
        for ident in IDS:
            value = decimal.Decimal(ident)
            # the ids a column of this type can hold: a request for another is refused before anything starts
            if kind in ("int", "long"):
                if value != value.to_integral_value() or not -(2 ** 31) <= value < 2 ** 31:
                    continue
                spark_value = int(value)
            else:
                precision, scale = (int(x) for x in kind[8:-1].split(","))
                if -value.as_tuple().exponent > scale or len(value.quantize(decimal.Decimal(1).scaleb(-scale)).as_tuple().digits) > precision:
                    continue
                spark_value = value
            pattern = number_forms(kind, canonical_number(ident))
            python = re.compile(rf"{SPACE}*(?:{pattern}){SPACE}*")
            re2 = pc.match_substring_regex(arrow, f"^{SPACE}*(?:{pattern}){SPACE}*$").to_pylist()
            for text, by_re2 in zip(texts, re2):
                want = cast[text][i] is not None and cast[text][i] == spark_value
                assert bool(python.fullmatch(text)) == want == by_re2, (kind, ident, text, cast[text][i])
                positives += want
            checked += 1
        assert sum(cast[t][i] is not None for t in texts) > 150  # the generator reaches values of every type
    assert checked == 29 and positives > 300  # (type, id) pairs where the id is a value of the type; texts of an id


def test_strings_are_trimmed_of_spaces_only_and_cased():
    assert string_value(" \tAnn ", "lower") == "\tann"
    assert string_value(" Ann ", None) == "Ann" and string_value("ann", "upper") == "ANN"


def test_an_integer_also_written_with_a_fraction_of_zeros():
    pattern = re.compile(number_forms("long", "1545", integral_fraction=True))
    assert [bool(pattern.fullmatch(t)) for t in ("1545", "1545.", "01545.00", "1545.5", "+1545.0")] == \
        [True, True, True, False, True]
