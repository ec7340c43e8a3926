"""spark_jobs/erasure/objects.py: the scan finds a subject in every format the lake holds."""
from __future__ import annotations

import gzip
import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs.erasure.objects import contains_any, needle_forms


def _parquet(values: list[str]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table({"user_id": pa.array(values).dictionary_encode(), "n": list(range(len(values)))}), sink,
                   compression="snappy")
    return sink.getvalue()


@pytest.mark.parametrize("data", [
    b'{"user_id": "USER-0042"}\n',
    gzip.compress(b"user_id,n\nuser-0042,1\n"),
    _parquet(["user-0001", "user-0042"] * 50),
])
def test_the_subject_is_found(data):
    assert contains_any(data, needle_forms(["user-0042"]))


def test_a_dictionary_encoded_compressed_parquet_hides_it_from_a_byte_search():
    data = _parquet(["user-0001", "user-0042"] * 50)
    assert contains_any(data, needle_forms(["user-0042"])) and not contains_any(data, needle_forms(["user-0043"]))


def test_json_escaped_forms_are_searched():
    assert contains_any(b'{"name": "J\\u00fcrgen"}', needle_forms(["Jürgen"]))
