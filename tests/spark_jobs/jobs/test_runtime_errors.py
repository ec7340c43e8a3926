"""spark_jobs/jobs/runtime.py: every error as ONE line, never cut mid-thought; the whole text for the manifest."""
from __future__ import annotations

from spark_jobs.lake.failures import ERROR_LINE_CHARS, error_text, one_line

ICEBERG = """Cannot write incompatible dataset to table with schema:
table {
  1: station: optional string
  3: wind_dir: optional int
}
Provided schema:
table {
  1: station: optional string
  3: wind_dir: optional long
}
Problems:
* wind_dir: long cannot be promoted to int"""


class IllegalArgumentException(Exception):
    """Stands for the JVM exception pyspark raises (the real one: tests/spark_jobs/io/test_tables.py)."""


def test_icebergs_incompatible_write_becomes_its_problems_and_a_next_step():
    line = one_line(IllegalArgumentException(ICEBERG))
    assert line == ("IllegalArgumentException: the data does not match the table's schema: wind_dir: long cannot be "
                    "promoted to int (the table was not changed; `python -m spark_jobs contract plan` shows how the "
                    "contract and the table differ)")
    assert "Problems:" in error_text(IllegalArgumentException(ICEBERG))  # the manifest keeps the whole text


def test_a_long_message_is_joined_and_cut_at_a_word_with_a_mark():
    message = "first line\n  at org.apache.Foo.bar(Foo.java:1)\nsecond " + "word " * 300
    line = one_line(RuntimeError(message))
    assert "\n" not in line and "at org.apache" not in line and line.startswith("RuntimeError: first line second word")
    assert line.endswith(" [...]") and len(line) <= ERROR_LINE_CHARS + len("RuntimeError: ") + len(" [...]")
