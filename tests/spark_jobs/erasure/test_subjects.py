"""spark_jobs/erasure/subjects.py: subject parsing, normalisation, the keyed hashes (SQL equals Python)."""
from __future__ import annotations

import hashlib
import hmac

import pytest

from spark_jobs.contract.model import load_contract
from spark_jobs.contract.model import parse_contract
from spark_jobs.erasure.subjects import (
    Subject, SubjectError, check_request, needles, new_request_id, normalised, parse_subject, read_subjects,
    subject_hash, subjects_digest, typed_value)
from spark_jobs.jobs.pseudonyms import pseudonym


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
    (tmp_path / "bad.txt").write_text("user_id=a\nuser-9876\n")
    with pytest.raises(SubjectError, match=r"bad.txt line 2: a subject of 9 characters is not COLUMN=VALUE \(no '='") as err:
        read_subjects([], [str(tmp_path / "bad.txt")])
    assert "user-9876" not in str(err.value)  # the line may be an id: never echoed (issue 40)


def test_values_are_normalised_as_silver_stores_them():
    click = load_contract("clickstream")
    assert normalised(click, Subject("user_id", " user-0042 ")) == "user-0042"
    assert normalised(click, Subject("event", "CLICK")) == "click"  # a `case: lower` column
    assert normalised(click, Subject("user_id", "jose\u0301")) == "jos\u00e9"  # NFC (issue 51)


def test_hashes_are_keyed_domain_separated_and_stable():
    key, subject = bytes(range(32)), Subject("user_id", "user-0042")
    assert subject_hash(key, subject) == hmac.new(key, b"receipt:user_id=user-0042", hashlib.sha256).hexdigest()
    assert subject_hash(key, subject) != pseudonym(key, "user-0042")
    assert subject_hash(bytes(32), subject) != subject_hash(key, subject)
    assert subjects_digest(key, [subject]) == subjects_digest(key, [Subject("user_id", "user-0042 ")])
    assert subjects_digest(key, [subject]) != subjects_digest(key, [Subject("user_id", "user-0043")])
    two = [Subject("user_id", "user-0042"), Subject("user_id", "user-0043")]
    assert subjects_digest(key, two) == subjects_digest(key, two[::-1])
    # The same subject as the contract stores it: one digest (a repeated request cites the first).
    assert subjects_digest(key, [Subject("email", "Ann@X.com")], [ACCOUNTS]) == \
        subjects_digest(key, [Subject("email", "ann@x.com")], [ACCOUNTS])


def test_every_request_has_its_own_id():
    ids = {new_request_id() for _ in range(50)}
    assert len(ids) == 50 and all(i.startswith("er-") and len(i) == 28 for i in ids)


ACCOUNTS = parse_contract({
    "dataset": "accounts", "landing": {"format": "json_lines"}, "key": ["account_id"], "event_time": "ts",
    "schema": [{"name": "ts", "type": "timestamp"}, {"name": "account_id", "type": "long"},
               {"name": "iban", "type": "decimal(20,2)"}, {"name": "email", "type": "string", "case": "lower"},
               {"name": "bytes", "type": "long", "source": "Bytes"}, {"name": "ref", "type": "string", "source": "Ref"},
               {"name": "account_no", "type": "string", "renamed_from": "acct"}],
    "subject_keys": [{"column": "account_id", "min_length": 3}, "iban",
                     {"column": "email", "pattern": "^[a-z.]+@[a-z.]+$"}, "ref", "account_no"]})


def test_ids_are_typed_as_their_columns():
    assert typed_value(ACCOUNTS, Subject("account_id", " 01042 ")) == 1042
    assert typed_value(ACCOUNTS, Subject("account_id", "1042.5")) is None
    assert str(typed_value(ACCOUNTS, Subject("iban", "1042.5"))) == "1042.50"
    assert typed_value(ACCOUNTS, Subject("iban", "1042.555")) is None
    assert typed_value(ACCOUNTS, Subject("email", "Ann@X.com")) == "ann@x.com"


def test_what_the_scans_look_for():
    found = needles([ACCOUNTS], [Subject("account_id", "1042"), Subject("email", "Ann@X.com"), Subject("ref", "00042"),
                                 Subject("ref", "Ref-0042"), Subject("account_no", "01545")], bytes(32))
    assert found.tokens == {"ann@x.com"}  # a `case: lower` key: any case
    assert found.exact == {"Ref-0042"}    # no case rule: as written (issue 40)
    rules = {min(r.names): (r.dataset, r.names, r.type, r.ids) for r in found.keyed}
    assert rules == {  # per dataset, by type; the names lower-cased: the landing name, the name before a rename
        "account_id": ("accounts", {"account_id"}, "long", {"1042"}),
        "account_no": ("accounts", {"account_no", "acct"}, "string", {"01545"}),
        "email": ("accounts", {"email"}, "string", {"ann@x.com"}),
        "ref": ("accounts", {"ref"}, "string", {"00042", "Ref-0042"})}
    (owner,) = found.owners
    assert owner.dataset == "accounts" and found.owner_of("bronze/accounts/_batch_id=1/x.parquet") is owner
    assert found.owner_of("bronze/accounts_v2/x") is None and found.owner_of("reports/silver/accounts/r/s.json") is owner


def test_a_numeric_key_admits_any_number():
    """min_length is for text keys: customer 42 is erasable (issue 40)."""
    check_request([ACCOUNTS], [Subject("account_id", "42"), Subject("iban", "7")])


def test_gold_pseudonyms_keep_the_key_out_of_the_plan(spark):
    """The pseudonym column equals ``pseudonym`` in Python, and neither the key nor its HMAC pads appear
    in the plan Spark logs (issue 40: they were literals in it)."""
    from pyspark.sql import functions as F

    from spark_jobs.jobs.pseudonyms import pseudonymiser

    key = bytes(range(100, 132))
    frame = spark.createDataFrame([("user-0042",), (None,)], "user_id string")
    hashed = frame.select(pseudonymiser(spark, key)(F.col("user_id")).alias("p"))
    assert [r["p"] for r in hashed.collect()] == [pseudonym(key, "user-0042"), None]
    plan = hashed._jdf.queryExecution().toString().lower()
    block = key.ljust(64, b"\0")
    for secret in (key, bytes(b ^ 0x36 for b in block), bytes(b ^ 0x5C for b in block)):
        assert secret.hex() not in plan and secret.hex()[:16] not in plan


@pytest.mark.parametrize("subject, message", [
    (Subject("ref", "ab"), r"^subject 2 \(ref=<2 characters>\): shorter than 4 characters"),
    (Subject("account_id", "10x42"), r"accounts.account_id is long, and this id is not a number"),
    (Subject("account_id", "99999999999999999999"), r"not a value of accounts.account_id \(long: out of range"),
    (Subject("iban", "1042.555"), r"more decimals than its scale"),
    (Subject("email", "ann+1@x.com"), r"does not match the pattern of accounts.email"),
])
def test_a_request_outside_the_rules_is_refused_before_anything(subject, message):
    with pytest.raises(SubjectError, match=message):
        check_request([ACCOUNTS], [Subject("account_id", "1042"), subject])
