"""The CSV grammar as Spark column expressions (silver's re-parse of old bronze rows): well-formedness, field values."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from spark_jobs.contract.parts import LandingSpec
from spark_jobs.transforms import csv_records
from spark_jobs.transforms.landing_csv import CsvGrammar
from spark_jobs.transforms.landing_text import LineOptions

CSV = LandingSpec(format="csv", null_values=("", "NA"))


def _one(spark, column_of, text: str, *extra):
    frame = spark.createDataFrame([(text, *extra)], "t string" + "".join(f", e{i} string" for i in range(len(extra))))
    return frame.select(column_of(frame).alias("out")).first()["out"]


@pytest.mark.parametrize("record, well_formed", [
    ("a,b,c", True), (",,", True), ('"a,b",c', True), ('"say ""hi""",x', True), ('5\'10",x', True),
    ('"two\nlines",x', True), ('"unterminated,x', False), ('"ab"c,d', False), ('a,"b', False),
])
def test_well_formed(spark, record, well_formed):
    assert _one(spark, lambda f: csv_records.is_well_formed(f["t"], CSV), record) is well_formed


def test_fields_are_unquoted_and_null_texts_become_null(spark):
    values = _one(spark, lambda f: csv_records.fields(f["t"], CSV), 'NA,,"",x,"a,""b""",NAN')
    assert values == [None, None, None, "x", 'a,"b"', "NAN"]


def test_backslash_escape_and_other_delimiters(spark):
    spec = LandingSpec(format="csv", delimiter=";", escape="\\", null_values=())
    assert _one(spark, lambda f: csv_records.is_well_formed(f["t"], spec), '"a\\"b;c";2') is True
    assert _one(spark, lambda f: csv_records.fields(f["t"], spec), '"a\\"b;c";2;') == ['a"b;c', "2", ""]


def test_a_10mb_quoted_field_does_not_overflow_the_regex_stack(spark):
    big = "x" * (10 * 1024 * 1024)
    frame = spark.createDataFrame([(f'1,"{big}"',)], "t string")
    row = frame.select(csv_records.is_well_formed(frame["t"], CSV).alias("ok"),
                       F.transform(csv_records.fields(frame["t"], CSV), F.length).alias("n")).first()
    assert (row["ok"], row["n"]) == (True, [1, len(big)])


@pytest.mark.parametrize("spec", [CSV, LandingSpec(format="csv", delimiter=";", escape="\\", null_values=("NA",))],
                         ids=["rfc4180", "backslash"])
def test_the_jvm_and_bronze_workers_read_one_grammar(spark, spec):
    """Silver's re-parse (these expressions) and bronze's workers (``landing_csv.CsvGrammar``) judge and split
    every record alike: both read ``landing_csv.csv_patterns``."""
    d = spec.delimiter
    records = ["a,b,c", ",,", '"a,b",c', '"say ""hi""",x', '5\'10",x', '"two\nlines",x', '"unterminated,x',
               '"ab"c,d', 'a,"b', 'NA,,"",x', '"a\\"b;c";2;', '"a\\\\";NA', "x;;y", '"a""b";"c"']
    records = [r.replace(",", d) if d != "," else r for r in records]
    grammar = CsvGrammar(LineOptions(format="csv", delimiter=d, quote=spec.quote, escape=spec.escape,
                                     null_values=tuple(spec.null_values)))
    frame = spark.createDataFrame([(r,) for r in records], "t string")
    rows = frame.select("t", csv_records.is_well_formed(F.col("t"), spec).alias("ok"),
                        csv_records.fields(F.col("t"), spec).alias("values")).collect()
    for row in rows:
        raw = row["t"].encode()
        ok = grammar.well_formed.match(raw) is not None
        assert row["ok"] is ok, row["t"]
        if ok:
            nulls = set(grammar.null_texts)
            assert row["values"] == [None if v in nulls else v.decode() for v in grammar.values(raw)], row["t"]
