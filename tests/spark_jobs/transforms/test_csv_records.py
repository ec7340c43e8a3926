"""CSV records with Spark built-ins: record boundaries, well-formedness, field values."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from spark_jobs.contract import LandingSpec
from spark_jobs.transforms import csv_records

CSV = LandingSpec(format="csv", null_values=("", "NA"))


def _one(spark, column_of, text: str, *extra):
    frame = spark.createDataFrame([(text, *extra)], "t string" + "".join(f", e{i} string" for i in range(len(extra))))
    return frame.select(column_of(frame).alias("out")).first()["out"]


def test_records_end_at_line_breaks_outside_quotes(spark):
    text = '\ufeffa,b\r\n1,"two\nlines, and ""quotes"""\n\n3,x\r4,y'
    records = _one(spark, lambda f: csv_records.split_records(f["t"], CSV), text)
    assert records == ["a,b", '1,"two\nlines, and ""quotes"""', "", "3,x", "4,y", ""]


def test_an_unterminated_quote_ends_at_its_line_without_a_later_quote(spark):
    records = _one(spark, lambda f: csv_records.split_records(f["t"], CSV), 'a,b\n1,"oops\n2,ok\n')
    assert records == ["a,b", '1,"oops', "2,ok", ""]


def test_an_unterminated_quote_runs_to_the_next_quote(spark):
    records = _one(spark, lambda f: csv_records.split_records(f["t"], CSV), '1,"oops\n2,ok\n3,"q"\n')
    assert records == ['1,"oops\n2,ok\n3,"q"', ""]


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


def test_field_of_finds_a_value_by_header_name(spark):
    frame = spark.createDataFrame([("x,y,z", "3,4,5")], "h string, r string")
    names, values = csv_records.header_names(frame["h"], CSV), csv_records.fields(frame["r"], CSV)
    row = frame.select(csv_records.field_of(values, names, "z").alias("z"),
                       csv_records.field_of(values, names, "nope").alias("nope")).first()
    assert (row["z"], row["nope"]) == ("5", None)


def test_a_10mb_quoted_field_does_not_overflow_the_regex_stack(spark):
    big = '"' + "x" * (10 * 1024 * 1024) + '"'
    frame = spark.createDataFrame([(f"a,b\n1,{big}\n",)], "t string")
    row = frame.select(F.size(csv_records.split_records(frame["t"], CSV)).alias("n")).first()
    assert row["n"] == 3

