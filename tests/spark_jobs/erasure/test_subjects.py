"""spark_jobs/erasure/subjects.py: subject parsing, normalisation, the keyed hashes (SQL equals Python)."""
from __future__ import annotations

import hashlib
import hmac

import pytest

from spark_jobs.contract import load_contract
from spark_jobs.erasure.subjects import (
    Subject, SubjectError, normalised, parse_subject, pseudonym, read_subjects, request_id, subject_hash)


def test_subjects_from_arguments_and_files(tmp_path):
    path = tmp_path / "subjects.txt"
    path.write_text("# one per line\nuser_id=user-0002\n\nuser_id = user-0001 \n")
    assert read_subjects(["user_id=user-0001"], [str(path)]) == [Subject("user_id", "user-0001"),
                                                                  Subject("user_id", "user-0002")]


@pytest.mark.parametrize("text", ["user-0001", "=x", "user_id=", "user_id=  "])
def test_a_subject_is_column_equals_value(text):
    with pytest.raises(SubjectError, match="is not COLUMN=VALUE"):
        parse_subject(text)


def test_bad_files_and_no_subject_are_one_line(tmp_path):
    with pytest.raises(SubjectError, match="no subject given"):
        read_subjects([], [])
    (tmp_path / "bad.txt").write_text("user_id=a\nnonsense\n")
    with pytest.raises(SubjectError, match=r"bad.txt line 2: subject 'nonsense' is not COLUMN=VALUE"):
        read_subjects([], [str(tmp_path / "bad.txt")])


def test_values_are_normalised_as_silver_stores_them():
    click = load_contract("clickstream")
    assert normalised(click, Subject("user_id", " user-0042 ")) == "user-0042"
    assert normalised(click, Subject("event", "CLICK")) == "click"  # a `case: lower` column


def test_hashes_are_keyed_domain_separated_and_stable():
    key, subject = bytes(range(32)), Subject("user_id", "user-0042")
    assert subject_hash(key, subject) == hmac.new(key, b"receipt:user_id=user-0042", hashlib.sha256).hexdigest()
    assert subject_hash(key, subject) != pseudonym(key, "user-0042")
    assert subject_hash(bytes(32), subject) != subject_hash(key, subject)
    assert request_id(key, [subject]) == request_id(key, [Subject("user_id", "user-0042 ")])
    assert request_id(key, [subject]) != request_id(key, [Subject("user_id", "user-0043")])
