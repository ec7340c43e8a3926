"""A contract with ``pseudonymise_gold: true``: gold carries the keyed hash of each subject key, derived
columns included, and never the id (a folder lake: Spark, the real jobs, no emulator)."""
from __future__ import annotations

import json
import re
import shutil
import sys

import pytest
import yaml

from spark_jobs.jobs.pseudonyms import pseudonym
from tests import shell

pytestmark = pytest.mark.timeout(900)


def test_gold_holds_pseudonyms_only(tmp_path):
    contracts, lake = tmp_path / "contracts", tmp_path / "lake"
    contracts.mkdir()
    raw = yaml.safe_load(open("spark_jobs/contracts/clickstream.yaml"))
    raw.update(dataset="clickpseudo", pseudonymise_gold=True, gold=["clickstream_user_sessions"], gold_options={},
               expectations={})
    (contracts / "clickpseudo.yaml").write_text(yaml.safe_dump(raw))
    env = {"TENANTLAKE_CONTRACTS_DIR": str(contracts), "TENANTLAKE_STATE_DIR": str(tmp_path / "state"),
           "SPARK_LOCAL_IP": "127.0.0.1", "TENANTLAKE_VALIDATION": "off"}
    cli = [sys.executable, "-m", "spark_jobs"]
    shell.run([*cli, "datagen", "--lake-uri", str(lake), "--dataset", "clickstream", "--records", "200"],
              timeout=300, env=env).check()
    shutil.move(lake / "landing" / "clickstream", lake / "landing" / "clickpseudo")
    shell.run([*cli, "run-all", "--lake-uri", str(lake), "--dataset", "clickpseudo", "--data-classification", "gdpr"],
              timeout=600, env=env).check()
    rows = json.loads(shell.run([*cli, "query", "--lake-uri", str(lake), "--json", "--max-rows", "10000",
                                 "SELECT user_id, session_id FROM gold.clickpseudo_clickstream_user_sessions"],
                                timeout=300, env=env).check().stdout)
    key = bytes.fromhex((lake / "checkpoints" / "_erasure" / "key").read_text().strip())
    users = set()
    for path in (lake / "landing" / "clickpseudo").iterdir():
        for line in path.read_text().splitlines():
            try:
                users.add(json.loads(line)["user_id"])
            except (ValueError, KeyError, TypeError):
                continue
    assert rows and all(re.fullmatch(r"[0-9a-f]{64}", row["user_id"]) for row in rows)
    assert {row["user_id"] for row in rows} <= {pseudonym(key, user) for user in users}
    assert not any("user-" in row["session_id"] for row in rows)
    silver = json.loads(shell.run([*cli, "query", "--lake-uri", str(lake), "--json",
                                   "SELECT count(DISTINCT user_id) AS n FROM silver.clickpseudo"],
                                  timeout=300, env=env).check().stdout)
    assert silver[0]["n"] == len({row["user_id"] for row in rows})  # silver keeps the ids; one pseudonym per user
