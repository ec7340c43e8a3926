"""spark_jobs/erasure/matching.py: an id matches exactly, never inside another id; Python and RE2 agree.

The cases the issues named: ids that are prefixes or substrings of other ids (``user-001`` and
``user-0010``), emails inside emails, numeric ids inside other numbers, a number that equals the id
but is another column's value, an id of a key without a case rule in another case (issue 40), an id
behind a JSON escape, a float written for an int. test_agreement.py generates many more.
"""
from __future__ import annotations

import pyarrow as pa
import pytest

from spark_jobs.erasure.matching import Needles, canonical_number, check_id, IdRuleError

# ann@x.com and jürgen: keys with a case rule (any case); user-001 and anna-7: keys without one (as written).
NEEDLES = Needles.build(["ann@x.com", "jürgen"], {"customer_id": ["1042"], "CustomerRef": ["00042"]},
                        exact=["user-001", "Anna-7"])

# (text, holds a subject)
CASES = [
    ('{"user_id": "user-001"}', True),
    ('{"user_id": "user-0010"}', False),            # the id is a prefix of another id
    ("user-0019 user-00100 xuser-001", False),      # ... and a substring
    ("see /u/user-001?ref=1", True),
    ("user-001.", True),                            # a full stop ends it
    ("USER-001", False),                            # a key without a case rule: another id (issue 40)
    ("anna-7 ANNA-7", False),
    ("Anna-7", True),
    ("user-001-2020", False),                       # a longer token (a derived id)
    ("a--user-001", False),
    ("(user-001)", True),
    ("mail joann@x.com", False),                    # an email inside an email
    ("mail ann@x.com.au", False),
    ("mail: ann@x.com.", True),
    ('"Ann@X.com"', True),
    ("J\\u00fcrgen", True),                         # the JSON-escaped form of a non-ASCII id
    ("J\\u00FCRGEN", True),                         # ... in any case: a key with a case rule
    ('{"url": "x\\nuser-001"}', True),              # behind an escape: raw, the token is "nuser-001"
    ('{"url": "x\\\\nuser-001"}', False),            # an escaped backslash, then the token "nuser-001"
    ('"\\u0075ser-001"', True),                      # an ASCII letter escaped
    ('{"customer_id": 1042.0}', True),              # a float written for an int (pandas, an int column with nulls)
    ('{"customer_id":\n  1042}', True),
    ('{"customer_id": 1042}', True),
    ('{"customer_id": "1042"}', True),
    ("customer_id=01042.0,", True),                 # the same number, written otherwise
    ('{"customer_id": 10420}', False),              # a numeric id inside another number
    ('{"customer_id": 21042}', False),
    ('{"customer_id": 1042.5}', False),
    ('{"bytes": 1042}', False),                     # the number, but another column's value
    ("1042 rows", False),
    ('{"referrer_customer_id": 1042}', False),      # another key that ends like it
    ('\\"customer_id\\":\\"1042\\"', True),         # JSON inside JSON (a bronze row in a report)
    ("customerref: 00042", True),                   # a digit-string id: keyed, exactly
    ("customerref: 42", False),
]


@pytest.mark.parametrize("text, expected", CASES)
def test_python_and_re2_decide_alike(text, expected):
    assert bool(NEEDLES.hits(pa.array([text]))[0]) == expected
    redacted, count = NEEDLES.redact(text)
    assert (count > 0) == expected and not NEEDLES.text_hit(redacted)


def test_redaction_replaces_the_id_and_keeps_the_rest():
    text = '{"user_id": "user-0010", "url": "https://x/u/user-001?x=1", "customer_id": 1042, "bytes": 1042}'
    redacted, count = NEEDLES.redact(text)
    assert count == 2
    assert redacted == '{"user_id": "user-0010", "url": "https://x/u/[erased]?x=1", "customer_id": [erased], "bytes": 1042}'


@pytest.mark.parametrize("text, canonical", [("1042", "1042"), ("01042.50", "1042.5"), ("-0", "0"), ("1e3", "1000"),
                                             ("abc", None), ("nan", None)])
def test_numbers_have_one_canonical_text(text, canonical):
    assert canonical_number(text) == canonical


@pytest.mark.parametrize("value, kind, pattern, min_length, message", [
    ("abc", "string", None, 4, r"subject 3 \(user_id=<3 characters>\): shorter than 4 characters, the minimum of ds.user_id"),
    ("user-01", "string", r"^user-[0-9]{4}$", 4, r"does not match the pattern of ds.user_id \(\^user-\[0-9\]\{4\}\$\)"),
    ("ann o'brien", "string", None, 4, r"an id is letters and digits, joined by -_.@\+ \(one token\)"),
    ("10x42", "long", None, 4, r"ds.user_id is long, and this id is not a number"),
    ("ab", "string", None, 4, r"shorter than 4 characters"),
])
def test_an_id_outside_its_rules_is_refused_in_one_line_without_the_id(value, kind, pattern, min_length, message):
    with pytest.raises(IdRuleError, match=message) as err:
        check_id(value, column="user_id", type_name=kind, pattern=pattern, min_length=min_length, position=3, dataset="ds")
    assert value not in str(err.value) and "\n" not in str(err.value) and str(err.value).endswith("nothing was changed")
    check_id("user-0001", column="user_id", type_name="string", pattern=r"^user-[0-9]{4}$", min_length=4, position=1,
             dataset="ds")


def test_a_numeric_id_of_any_length_is_admitted():
    """A number is only ever matched with its key (rule 3), so min_length does not apply: customer 42 is
    erasable (issue 40). A text id still needs min_length characters."""
    for kind in ("int", "long", "decimal(10,2)"):
        check_id("42", column="customer_id", type_name=kind, pattern=None, min_length=4, position=1, dataset="ds")
    with pytest.raises(IdRuleError, match="shorter than 4 characters"):
        check_id("42", column="ref", type_name="string", pattern=None, min_length=4, position=1, dataset="ds")
