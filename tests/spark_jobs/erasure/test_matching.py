"""spark_jobs/erasure/matching.py: an id matches exactly, never inside another id; Python and RE2 agree.

The cases the issues named: ids that are prefixes or substrings of other ids (``user-001`` and
``user-0010``), emails inside emails, numeric ids inside other numbers, a number that equals the id
but is another column's value, an id of a key without a case rule in another case (issue 40), an id
behind a JSON escape, a float written for an int; a string key's digits that only look like a number, the
forms silver types as a number (sign, spaces, leading zeros, rounding), NFC and NFD, a combining mark inside
a token, a key name inside a longer key (issue 51). test_agreement.py generates many more.
"""
from __future__ import annotations

import pyarrow as pa
import pytest

from spark_jobs.erasure.matching import IdRuleError, KeyRule, Needles, check_id
from spark_jobs.transforms.typed_text import canonical_number

# ann@x.com, jürgen and josé: keys with a case rule (any case); user-001, anna-7 and anna: keys without one (as
# written); customer_id: a long; CustomerRef and account_no: strings of digits; amount: a decimal(10,2).
NEEDLES = Needles.build(["ann@x.com", "jürgen", "jose\u0301"], [
    KeyRule.of("customer_id", "long", ["1042"]), KeyRule.of("CustomerRef", "string", ["00042"]),
    KeyRule.of("account_no", "string", ["1545"]), KeyRule.of("amount", "decimal(10,2)", ["1042.5"])],
    exact=["user-001", "Anna-7", "anna"])

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
    # issue 51: a string key's digits are that string only
    ('{"account_no": "1545"}', True),
    ('{"account_no": 1545}', True),                 # a JSON number: silver's string is "1545"
    ('{"account_no": " 1545 "}', True),             # silver trims spaces
    ('{"account_no": "01545"}', False),             # another account
    ('{"account_no": "1545.0"}', False),
    ('{"account_no": "1_545"}', False),
    ('{"account_no": 15450}', False),
    # ... a number key's id in every text silver types as it, never in one it does not read
    ('{"customer_id": "+1042"}', True),
    ('{"customer_id": " 1042"}', True),
    ('{"customer_id": "\\t01042"}', True),        # behind a JSON escape: a tab, then the number
    ('{"customer_id": "-1042"}', False),
    ('{"customer_id": "1_042"}', False),
    ('{"customer_id": 1.042e3}', False),            # silver reads no exponent
    ('{"amount": 1042.504}', True),                 # decimal(10,2): rounded half up to 1042.50
    ('{"amount": 1042.495}', True),
    ('{"amount": 1042.505}', False),                # ... 1042.51
    ('{"amount": "1042.5"}', True),
    # ... a key name stands alone: the character before it is no part of a longer key
    ('{"ref-customer_id": 1042}', False),
    ('{"x.customer_id": 1042}', False),
    ("ref_customer_id=1042", False),
    ('{"customer_id2": 1042}', False),
    # ... NFC: the same text composed or not; a combining mark belongs to its token
    ("José", True),                                 # NFC (one code point for é); the id was given NFD
    ("Jose\u0301", True),                           # NFD
    ("Jose\\u0301", True),                         # NFD behind a JSON escape
    ("anna\u0308", False),                          # annä (NFD): not anna
    ("ann\u00e4", False),                           # annä (NFC)
    ("anna.", True),
]


@pytest.mark.parametrize("text, expected", CASES)
def test_python_and_re2_decide_alike(text, expected):
    assert bool(NEEDLES.hits(pa.array([text]))[0]) == expected
    redacted, count = NEEDLES.redact(text)
    assert (count > 0) == expected and not NEEDLES.hits([redacted])[0]


def test_redaction_replaces_the_id_and_keeps_the_rest():
    text = '{"user_id": "user-0010", "url": "https://x/u/user-001?x=1", "customer_id": 1042, "bytes": 1042}'
    redacted, count = NEEDLES.redact(text)
    assert count == 2
    assert redacted == '{"user_id": "user-0010", "url": "https://x/u/[erased]?x=1", "customer_id": [erased], "bytes": 1042}'


@pytest.mark.parametrize("text, canonical", [("1042", "1042"), ("01042.50", "1042.5"), ("-0", "0"), ("+7", "7"),
                                             ("1e3", None), ("1_042", None), ("abc", None), ("nan", None)])
def test_numbers_have_one_canonical_text(text, canonical):
    """Only what silver reads as a number (no exponent, no ``_``: issue 51, ``1_545`` was taken for 1545)."""
    assert canonical_number(text) == canonical


def test_values_of_a_column_named_like_a_key_are_compared_by_its_type():
    """Rule 1 on Arrow arrays (what the erase and the verification compare columns with): a string key's id is
    that string (trimmed of spaces, its case rule, NFC); a number key's is every text silver types as it."""
    import decimal

    account = KeyRule.of("account_no", "string", ["1545"])
    texts = pa.array(["1545", " 1545 ", "01545", "1545.0", "1_545", "15450", None, "\t1545"])
    assert account.mask(texts).tolist() == [True, True, False, False, False, False, False, False]
    assert account.mask(pa.array([1545, 1546])).tolist() == [True, False]
    customer = KeyRule.of("customer_id", "long", ["1042"])
    assert customer.mask(pa.array(["+1042", " 01042\n", "1042.0", "1042.5", "1_042", "-1042"])).tolist() == \
        [True, True, True, False, False, False]
    assert customer.mask(pa.array([1042.0, 1042.5])).tolist() == [True, False]
    email = KeyRule.of("email", "string", ["Ann@X.com"], case="lower")
    assert email.mask(pa.array(["ANN@x.com", "joann@x.com"])).tolist() == [True, False]
    name = KeyRule.of("name", "string", ["José"], case="lower")
    assert name.mask(pa.array(["JOSE\u0301", "Jose", "josé"])).tolist() == [True, False, True]
    amount = KeyRule.of("amount", "decimal(10,2)", ["1042.5"])
    assert amount.mask(pa.array([decimal.Decimal("1042.50"), decimal.Decimal("1042.51")], pa.decimal128(10, 2))).tolist() \
        == [True, False]
    assert amount.mask(pa.array(["1042.504", "1042.505", "+1042.5"])).tolist() == [True, False, True]


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


def test_the_unicode_scan_covers_every_mark_and_every_character_nfc_changes():
    """``matching`` builds its classes of combining marks and of characters NFC may change from the code points
    of ``UNICODE_SCANNED`` only; the rest of Unicode holds none of either (for this Python's Unicode database)."""
    import sys
    import unicodedata

    from spark_jobs.erasure.matching import UNICODE_SCANNED

    scanned = set().union(*(set(block) for block in UNICODE_SCANNED))
    outside = [code for code in range(sys.maxunicode + 1) if code not in scanned and (
        unicodedata.category(chr(code))[0] == "M" or unicodedata.combining(chr(code))
        or unicodedata.normalize("NFC", chr(code)) != chr(code))]
    assert outside == []
