"""Exact erasure on the shared lake (``conftest.py``): a dataset of its own, ``contacts``, with two subject
keys, an email (string, lower-cased, with a pattern) and a numeric ``customer_id`` (long).

Its records are built to trap a substring match: emails inside emails (``joann@x.com``,
``ann@x.com.au``, ``ann@x.co``), numeric ids inside other numbers (``10420``, ``21042``), the number
itself in another column (``bytes: 1042``) and in free text (``ticket 1042``), and another customer's
note that names the subject. One request erases ``email=Ann@X.com`` and ``customer_id=1042``: exactly the
subject's records go (typed equality; a malformed record that names one), the note is redacted and
kept, and the test's own reading of every version of the bucket's contacts objects (DuckDB for Parquet,
its own Avro decoding of Iceberg manifests' column bounds, text) finds neither id, and every near miss
still there. A request outside the ids' rules changes nothing; the same request again cites the first.
Issue 40's forms: the id written ``1042.0`` (a float for an int: quarantined, its record removed), the email
behind a JSON escape (``line\\nann@x.com``: redacted), and customer ``42``, an id shorter than
``min_length`` that a numeric key admits. Issue 51's: a string key of digits, ``account_no``, holding ``1545``,
``01545``, ``1545.0``, ``1_545``, ``15450`` and ``2000`` (three records each): erasing ``1545`` removes its
records only, in every layer and every text; customer ``1042`` written ``"+1042"`` and ``" 1042"`` (silver types
both as 1042): no form of it is left in any version. While the request runs, the same request started again
is refused in one line naming the running one.
"""
from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import os
import re
import struct
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
import yaml

from spark_jobs.io.iceberg_files import iter_avro, read_avro
from tests.spark_jobs.erasure.conftest import TENANT, cli

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]
DATASET = "contacts"
CONTRACT = {
    "dataset": DATASET, "landing": {"format": "json_lines"}, "key": ["email", "ts"], "event_time": "ts",
    "schema": [{"name": "ts", "type": "timestamp", "required": True},
               {"name": "email", "type": "string", "required": True, "case": "lower"},
               {"name": "customer_id", "type": "long", "required": True},
               {"name": "bytes", "type": "long", "min": 0},
               {"name": "note", "type": "string"}, {"name": "account_no", "type": "string"}],
    "subject_keys": [{"column": "email", "pattern": r"^[a-z0-9._%+-]+@[a-z0-9.-]+$"}, {"column": "customer_id"},
                     {"column": "account_no"}],
    "personal_data": ["note"], "expectations": {},
    "gold": ["period_summary"], "gold_options": {"period_summary": {"period": "day", "measures": ["bytes"]}},
}
EMAIL, CUSTOMER, ACCOUNT = "ann@x.com", 1042, "1545"
ACCOUNTS = ("1545", "01545", "1545.0", "1_545", "15450", "2000")  # three records each; only 1545's go


def _records() -> list[str]:
    day = dt.datetime.now(dt.timezone.utc).replace(hour=10, minute=0, second=0, microsecond=0)
    at = [(day + dt.timedelta(minutes=m)).strftime("%Y-%m-%dT%H:%M:%SZ") for m in range(40)]
    rows = [
        {"ts": at[0], "email": "Ann@X.com", "customer_id": 1500, "bytes": 5, "note": "first"},      # hers (email)
        {"ts": at[1], "email": "zed@y.org", "customer_id": 1042, "bytes": 6, "note": "shared"},     # hers (customer)
        {"ts": at[2], "email": "joann@x.com", "customer_id": 10420, "bytes": 1042, "note": "referred by ann@x.com"},
        {"ts": at[3], "email": "ann@x.com.au", "customer_id": 21042, "bytes": 8, "note": "-"},
        {"ts": at[4], "email": "bob@x.com", "customer_id": 5000, "bytes": 1042, "note": "ticket 1042"},
        {"ts": at[5], "email": "ann@x.co", "customer_id": 1043, "bytes": 9, "note": "mail joann@x.com"},
        {"ts": at[6], "email": "ann@x.com", "customer_id": 7, "bytes": -1, "note": "quarantined: bytes"},  # hers
        {"ts": at[7], "email": "dan@x.com", "customer_id": 10420, "bytes": -1, "note": "quarantined too"},
        {"ts": at[10], "email": "mia@x.com", "customer_id": 1042.0, "bytes": 4, "note": "float id"},  # hers (1042)
        {"ts": at[11], "email": "ned@x.com", "customer_id": 5001, "bytes": 2, "note": "line\nann@x.com"},  # redact
        {"ts": at[12], "email": "kim@x.com", "customer_id": 42, "bytes": 3, "note": "short id"},  # customer 42's
        {"ts": at[13], "email": "lee@x.com", "customer_id": 420, "bytes": 42, "note": "customer_id=4200"},
        {"ts": at[14], "email": "pat@x.com", "customer_id": "+1042", "bytes": 1, "note": "signed"},  # hers: 1042
        {"ts": at[15], "email": "quin@x.com", "customer_id": " 1042", "bytes": 1, "note": "spaced"},  # hers: 1042
    ]
    for n, account in enumerate(a for a in ACCOUNTS for _ in range(3)):
        value = int(account) if account == ACCOUNT and n % 3 == 2 else account  # 1545 as a JSON number too
        rows.append({"ts": at[16 + n], "email": f"acct{n}@y.org", "customer_id": 3000 + n, "bytes": 1,
                     "note": "acct", "account_no": value})
    lines = [json.dumps(r) for r in rows]
    lines.append(f'{{"ts": "{at[8]}", "email": "ann@x.com", "customer_id": 1042, "note": "cut')  # malformed: hers
    lines.append(f'{{"ts": "{at[9]}", "email": "carl@x.com", "customer_id": 10420, "note": "cut')  # malformed
    return lines


def _versions(s3, bucket, prefix):
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
        yield from page.get("Versions", [])


def _bound_fields(data: bytes) -> dict[int, str]:
    """A manifest's field ids -> names, from the table schema Iceberg writes into its metadata."""
    meta, _ = iter_avro(io.BytesIO(data))
    return {int(f["id"]): f["name"] for f in json.loads(meta["schema"])["fields"]} if "schema" in meta else {}


def _held(data: bytes, tmp: Path) -> list[str]:
    """What of the subjects this object version holds, by the test's own reading."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    found = []
    if data[:4] == b"PAR1":
        path = tmp / "held.parquet"
        path.write_bytes(data)
        columns = [r[0] for r in duckdb.sql(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()]
        if "customer_id" in columns and duckdb.sql(f"SELECT count(*) FROM read_parquet('{path}') "
                                                   f"WHERE customer_id = {CUSTOMER}").fetchall()[0][0]:
            found.append("customer_id column")
        if "account_no" in columns and duckdb.sql(f"SELECT count(*) FROM read_parquet('{path}') "
                                                  f"WHERE account_no = '{ACCOUNT}'").fetchall()[0][0]:
            found.append("account_no column")
        texts = [json.dumps(r, default=str) for r in duckdb.sql(f"SELECT COLUMNS(*)::VARCHAR FROM read_parquet('{path}')").fetchall()]
    elif data[:4] == b"Obj\x01":
        records = read_avro(data)
        fields = _bound_fields(data)
        for record in records:
            data_file = record.get("data_file") or {}
            for bound in (data_file.get("lower_bounds") or []) + (data_file.get("upper_bounds") or []):
                if fields.get(bound["key"]) == "customer_id" and bound["value"] in (struct.pack("<q", CUSTOMER),
                                                                                     struct.pack("<q", 42)):
                    found.append("customer_id bound")
                if fields.get(bound["key"]) == "account_no" and bound["value"] == ACCOUNT.encode():
                    found.append("account_no bound")
        texts = [json.dumps(records, default=lambda b: b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b))]
    else:
        texts = [data.decode("utf-8", "replace")]
    texts += [t.replace("\\n", "\n") for t in texts if "\\n" in t]  # also behind a JSON \n escape
    for text in texts:
        if re.search(r"(?<![\w.@+-])ann@x\.com(?![\w@+-]|\.\w)", text, re.IGNORECASE):
            found.append("email token")
        if re.search(r'customer_id\\?"?\s*[:=]\s*\\?"?\s*\+?0*1042(?![\d]|\.\d)', text):
            found.append("customer_id keyed")
        if re.search(r'account_no\\?"?\s*[:=]\s*\\?"?\s*1545(?![\d._])', text):
            found.append("account_no keyed")
    return found


@pytest.fixture(scope="module")
def contacts(erase_tenant, tmp_path_factory):
    """The contacts dataset landed in the shared lake and run through bronze and silver."""
    folder = tmp_path_factory.mktemp("contacts")
    (folder / "contracts").mkdir()
    (folder / "contracts" / f"{DATASET}.yaml").write_text(yaml.safe_dump(CONTRACT))
    erase_tenant["s3"].put_object(Bucket=erase_tenant["bucket"], Key=f"landing/{DATASET}/part-0001.jsonl",
                                  Body=("\n".join(_records()) + "\n").encode(), ServerSideEncryption="aws:kms",
                                  SSEKMSKeyId=erase_tenant["lake"]["kms_key_arn"])
    env = {**erase_tenant["env"], "TENANTLAKE_CONTRACTS_DIR": str(folder / "contracts"), "TENANTLAKE_VALIDATION": "off"}
    cli(env, "run-all", "--tenant", TENANT, "--dataset", DATASET, "--allow-warn", timeout=1200)
    return {**erase_tenant, "env": env}


def _wait_for_lock(s3, bucket: str, running: subprocess.Popen, seconds: int = 600) -> None:
    """Until the running request has written its lock on the dataset."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert running.poll() is None, "the request ended before its lock was seen"
        try:
            s3.head_object(Bucket=bucket, Key=f"checkpoints/{DATASET}/erasure.lock")
            return
        except s3.exceptions.ClientError:
            time.sleep(0.5)
    raise AssertionError("no erasure lock within 10 minutes")


def _silver(env) -> list[dict]:
    out = cli(env, "query", "--tenant", TENANT, "--json", "SELECT email, customer_id, bytes, note, account_no "
              "FROM silver.contacts ORDER BY email").stdout
    return json.loads(out)


def test_exactly_the_subjects_records_go_and_every_near_miss_stays(contacts, tmp_path):
    env, s3, bucket = contacts["env"], contacts["s3"], contacts["bucket"]
    lake = ["--tenant", TENANT, "--dataset", DATASET]
    versions_before = sorted((v["Key"], v["VersionId"]) for v in _versions(s3, bucket, ""))
    # A request outside the ids' rules is refused before anything starts, in one line without the id.
    for subject, message in (("email=ann.x", "does not match the pattern of contacts.email"),
                             ("customer_id=10x42", "contacts.customer_id is long, and this id is not a number")):
        refused = cli(env, "erase", *lake, "--subject", f"email={EMAIL}", "--subject", subject, expect=2)
        (line,) = refused.stderr.strip().splitlines()
        assert message in line and subject.split("=")[1] not in line
    assert sorted((v["Key"], v["VersionId"]) for v in _versions(s3, bucket, "")) == versions_before

    silver_before = _silver(env)
    assert {r["email"] for r in silver_before} == {EMAIL, "zed@y.org", "joann@x.com", "ann@x.com.au", "bob@x.com",
                                                   "ann@x.co", "ned@x.com", "kim@x.com", "lee@x.com", "pat@x.com",
                                                   "quin@x.com", *[f"acct{n}@y.org" for n in range(18)]}
    before = {v["Key"]: _held(s3.get_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"])["Body"].read(), tmp_path)
              for v in _versions(s3, bucket, "") if f"/{DATASET}/" in f"/{v['Key']}"}
    assert any("customer_id bound" in h for h in before.values()) and any("email token" in h for h in before.values())

    request = ["erase", *lake, "--subject", "email=Ann@X.com", "--subject", f"customer_id={CUSTOMER}",
               "--subject", "customer_id=42", "--subject", f"account_no={ACCOUNT}", "--json"]
    running = subprocess.Popen([sys.executable, "-m", "spark_jobs", *request], env={**os.environ, **env},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_lock(s3, bucket, running)
        # The same request again while it runs: refused in one line naming the running one (issue 51: both ran).
        again = cli(env, *request, expect=2, timeout=600)
        (line,) = [text for text in again.stderr.splitlines() if text.startswith("error:")]
        assert "for the same subjects is running" in line and "nothing was changed" in line, again.stderr[-2000:]
        assert again.stderr.strip().endswith(line) and not again.stdout.strip()
        stdout, stderr = running.communicate(timeout=1500)
    finally:
        running.kill()
    assert running.returncode == 0, stderr[-3000:]
    receipt = json.loads(stdout)
    assert receipt["request_id"] in line and receipt["status"] == "completed", receipt["verification"]
    touched = receipt["datasets"][DATASET]
    # 3 + "+1042" and " 1042" (silver types them as 1042) + account 1545's three records
    assert touched["silver"]["rows_deleted"] == 8 and touched["silver"]["rows_redacted"] == 2
    assert touched["quarantine"]["rows_removed"] == 3 and touched["bronze"]["rows_redacted"] == 2
    assert touched["bronze"]["rows_removed"] == 11  # 8 in silver, 2 quarantined, 1 malformed that names her
    assert receipt["matched_versions_removed"] > 0  # the landing file's and the rewritten partitions' old versions
    assert EMAIL not in (stdout + stderr).lower()

    silver_after = {r["email"]: r for r in _silver(env)}
    gone = {EMAIL, "zed@y.org", "kim@x.com", "pat@x.com", "quin@x.com", "acct0@y.org", "acct1@y.org", "acct2@y.org"}
    assert set(silver_after) == {r["email"] for r in silver_before} - gone
    assert silver_after["ned@x.com"]["note"] == "line\n[erased]" and silver_after["lee@x.com"]["customer_id"] == 420
    assert silver_after["joann@x.com"] == {"email": "joann@x.com", "customer_id": 10420, "bytes": 1042,
                                           "note": "referred by [erased]", "account_no": None}
    assert silver_after["bob@x.com"]["note"] == "ticket 1042" and silver_after["ann@x.co"]["note"] == "mail joann@x.com"
    assert silver_after["ann@x.com.au"]["customer_id"] == 21042
    # every other row exactly as it was: the other accounts' (01545, 1545.0, 1_545, 15450, 2000) among them
    unchanged = {r["email"]: r for r in silver_before if r["email"] not in gone | {"ned@x.com", "joann@x.com"}}
    assert {e: silver_after[e] for e in unchanged} == unchanged
    assert sorted(r["account_no"] for r in silver_after.values() if r["account_no"]) == sorted(
        a for a in ACCOUNTS[1:] for _ in range(3))
    # Every version the request could have left an id in: the dataset's, and everything not a dataset's own.
    others = ("landing/", "bronze/", "quarantine/", "silver/", "gold/", "artifacts/")
    held = {f"{v['Key']}@{v['VersionId']}": h for v in _versions(s3, bucket, "")
            if f"/{DATASET}" in v["Key"] or not v["Key"].startswith(others)
            for h in [_held(s3.get_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"])["Body"].read(), tmp_path)] if h}
    assert held == {}
    # The near misses are still in the lake's raw layers too: the carl@x.com record is malformed and stays.
    bronze = [v for v in _versions(s3, bucket, f"bronze/{DATASET}/") if v["IsLatest"] and v["Key"].endswith(".parquet")]
    raws = []
    for version in bronze:  # read, not grepped: Parquet's compression may cut a repeated "@x.com" out of a name
        path = tmp_path / "bronze.parquet"
        path.write_bytes(s3.get_object(Bucket=bucket, Key=version["Key"])["Body"].read())
        raws += [row[0] for row in duckdb.sql(f"SELECT _raw FROM read_parquet('{path}')").fetchall()]
    assert any("carl@x.com" in raw for raw in raws) and any("joann@x.com" in raw for raw in raws)
    assert sum('"account_no": "01545"' in raw for raw in raws) == 3 and sum('"1_545"' in raw for raw in raws) == 3

    again = json.loads(cli(env, "erase", *lake, "--subject", f"customer_id={CUSTOMER}", "--subject", "email=ann@x.com",
                           "--subject", "customer_id=042", "--subject", "account_no=1545", "--json", timeout=1200).stdout)
    assert again["request_id"] != receipt["request_id"] and again["earlier_requests"] == [receipt["request_id"]]
    assert again["status"] == "completed" and again["datasets"][DATASET]["silver"]["rows_deleted"] == 0
    assert s3.get_object(Bucket=bucket, Key=f"reports/erasure/{receipt['request_id']}/receipt.json")  # both kept
