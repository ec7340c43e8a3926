"""End to end on the emulator over s3a: datagen with bad records -> run-all -> checks -> run-all again.

The pipeline runs through the real CLI (``python -m spark_jobs``) in a subprocess, with the s3a jars
and the emulator's trust store, against a bucket and KMS key made here with boto3 and found through
``--tenant acme`` (``$TENANTLAKE_STATE_DIR/tenants/acme/lake.json``). Results are read back with boto3
and checked with DuckDB and plain Python against the generator's ground truth, independently of Spark:
silver and gold are Iceberg tables, read as the files of their current snapshot (from the downloaded
metadata, ``spark_jobs.io.iceberg_files``); quarantine is plain Parquet.
"""
from __future__ import annotations

import collections
import datetime as dt
import decimal
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from spark_jobs.io import iceberg_files
from tests.conftest import REPO_ROOT

# The module's fixture runs run-all twice and a query on s3a: on a busy 2-core machine that took more
# than the suite's 900 s per test (pyproject.toml), which counts the fixture in the first test.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]

TENANT = "acme"
REGION = "eu-west-1"
BUCKET = "tenantlake-e2e-lake"
DATASETS = {  # dataset -> datagen options: small, but every bad kind appears
    "iot": ["--records", "1000", "--sources", "8", "--batch-size", "25", "--interval", "50"],
    "clickstream": ["--records", "1000", "--sources", "4", "--batch-size", "25", "--interval", "60"],
    "inventory": ["--records", "600", "--sources", "4", "--batch-size", "20", "--interval", "21600"],
}
BAD_RATE, LATE_RATE = "0.02", "0.02"
METRIC_NAMESPACE = "tenantlake/e2e"


def _client(aws_env, service):
    import boto3

    return boto3.client(service, region_name=REGION, endpoint_url=aws_env["AWS_ENDPOINT_URL"],
                        verify=aws_env["AWS_CA_BUNDLE"], aws_access_key_id=aws_env["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=aws_env["AWS_SECRET_ACCESS_KEY"])


def _cli(env, *args, timeout=600, expect=0):
    result = subprocess.run([sys.executable, "-m", "spark_jobs", *args], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == expect, f"{args[0]} exited {result.returncode}:\n{result.stdout}\n{result.stderr[-3000:]}"
    return result


def _download(s3, prefix: str, dest: Path) -> Path:
    """Copy every object under ``prefix`` (parquet and all) to ``dest``; returns dest."""
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=BUCKET, Prefix=prefix):
        for obj in page.get("Contents", []):
            target = dest / obj["Key"]
            target.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(BUCKET, obj["Key"], str(target))
    return dest / prefix


def _objects(s3, prefix: str) -> dict[str, str]:
    keys = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        keys.update({o["Key"]: o["ETag"] for o in page.get("Contents", [])})
    return keys


def _manifests(s3, layer: str, dataset: str) -> list[dict]:
    found = [k for k in _objects(s3, f"reports/{layer}/{dataset}/") if k.endswith("/manifest.json")]
    return [json.loads(s3.get_object(Bucket=BUCKET, Key=k)["Body"].read()) for k in sorted(found)]


def _source(folder: Path) -> str:
    """A DuckDB relation: an Iceberg table folder (silver, gold) as its current snapshot's files, a
    partitioned Parquet folder (quarantine) by glob."""
    if (folder / "metadata").is_dir():
        return iceberg_files.duckdb_source(folder)
    return f"read_parquet('{folder}/**/*.parquet', hive_partitioning = true)"


def _table(folder: Path, exclude: tuple[str, ...] = ()) -> list[tuple]:
    """Every row of a table or partitioned parquet folder, sorted, as DuckDB reads it."""
    con = duckdb.connect()
    rel = con.sql(f"SELECT * FROM {_source(folder)}")
    cols = [c for c in rel.columns if c not in exclude]
    return sorted(con.sql(f"SELECT {', '.join(cols)} FROM rel").fetchall(), key=repr)


@pytest.fixture(scope="module")
def pipeline(emulator, aws_env, tmp_path_factory):
    """Provision bucket + key, generate data, run everything twice; yield what the tests inspect."""
    from infra.local.s3a_jars import ensure_jars

    work = tmp_path_factory.mktemp("e2e")
    s3, kms = _client(aws_env, "s3"), _client(aws_env, "kms")
    key_arn = kms.create_key(Description="tenantlake e2e lake key")["KeyMetadata"]["Arn"]
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})  # as a tenant's lake
    state_dir = work / "state"
    lake_json = state_dir / "tenants" / TENANT / "lake.json"
    lake_json.parent.mkdir(parents=True)
    lake_json.write_text(json.dumps({
        "tenant_id": TENANT, "region": REGION, "lake_bucket_name": BUCKET, "kms_key_arn": key_arn,
        "s3_endpoint": emulator.endpoint, "ca_bundle": emulator.ca_bundle, "truststore": emulator.truststore,
        # As a tenant with orchestration: each publish puts its metric in this namespace (spark_jobs/runs/signals.py).
        "orchestration": {"metric_namespace": METRIC_NAMESPACE, "event_source": "tenantlake.e2e"},
    }))
    env = {**os.environ, **aws_env, "TENANTLAKE_STATE_DIR": str(state_dir), "SPARK_LOCAL_IP": "127.0.0.1",
           "TENANTLAKE_SPARK_JARS": ",".join(str(j) for j in ensure_jars())}
    truth = {}
    for dataset, options in DATASETS.items():
        truth_file = work / f"truth-{dataset}.json"
        _cli(env, "datagen", "--tenant", TENANT, "--dataset", dataset, *options, "--bad-rate", BAD_RATE,
             "--late-rate", LATE_RATE, "--seed", "11", "--truth-file", str(truth_file))
        truth[dataset] = json.loads(truth_file.read_text())
    # --allow-warn: warn-severity expectations (e.g. the injected malformed rate) must not fail the run.
    first = _cli(env, "run-all", "--tenant", TENANT, "--allow-warn", timeout=1500)
    queried = _cli(env, "query", "--tenant", TENANT, "--json", "SELECT count(*) AS n FROM gold.iot_hourly")
    after_first = _download(s3, "", work / "run1")
    objects_first = _objects(s3, "bronze/")
    integrity = _landing_integrity(s3, env, key_arn)
    # The re-run checks the data only: validation (covered by tests/spark_jobs/quality) is off to save time.
    # iot's re-run is the pair of concurrent run-alls above (nothing new: it reads and commits nothing); the
    # other datasets run again here with --full, which recomputes every row from bronze.
    second = _cli({**env, "TENANTLAKE_VALIDATION": "off"}, "run-all", "--tenant", TENANT, "--dataset", "clickstream",
                  "--dataset", "inventory", "--full", timeout=1500)
    integrity["counts"] = _cli(env, "counts", "--tenant", TENANT, "--dataset", "iot", "--json")
    integrity["status"] = _cli(env, "status", "--tenant", TENANT, "--json")
    after_second = _download(s3, "", work / "run2")
    yield {"s3": s3, "truth": truth, "first": first, "second": second, "run1": after_first, "run2": after_second,
           "bronze_objects_first": objects_first, "key_arn": key_arn, "query": queried, "env": env,
           "integrity": integrity}


def _landing_integrity(s3, env, key_arn) -> dict:
    """Issue 41 at small size, between the two run-alls: datagen iot with another seed (same names, other
    bytes: refused, nothing written); a writer outside the rules (a plain PUT, which the bucket policy denies
    on AWS and the emulator does not evaluate) overwrites two landing objects and rewrites a third with the
    same bytes; then two run-alls of iot at once: the second starts while the first holds its leases."""
    refused = _cli(env, "datagen", "--tenant", TENANT, "--dataset", "iot", *DATASETS["iot"], "--seed", "777",
                   expect=2)
    keys = sorted(k for k in _objects(s3, "landing/iot/") if k.endswith(".json"))
    overwritten, same = keys[:2], keys[2]
    sse = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": key_arn}
    for key in overwritten:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b'[{"event_id":"overwritten"}]', **sse)
    s3.put_object(Bucket=BUCKET, Key=same, Body=s3.get_object(Bucket=BUCKET, Key=same)["Body"].read(), **sse)

    quiet = {**env, "TENANTLAKE_VALIDATION": "off"}
    command = [sys.executable, "-m", "spark_jobs", "run-all", "--tenant", TENANT, "--dataset", "iot"]
    first = subprocess.Popen(command, cwd=REPO_ROOT, env=quiet, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not _objects(s3, "checkpoints/iot/runs/bronze.lease") and first.poll() is None:
            assert time.monotonic() < deadline, "the first run-all never took its lease"
            time.sleep(0.2)
        started = time.monotonic()
        second = subprocess.run(command, cwd=REPO_ROOT, env=quiet, capture_output=True, text=True, timeout=600)
        second_seconds = time.monotonic() - started
        out, err = first.communicate(timeout=1500)
    finally:
        if first.poll() is None:
            first.kill()
    return {"refused_datagen": refused, "overwritten": overwritten, "same": same,
            "first": subprocess.CompletedProcess(command, first.returncode, out, err), "second": second,
            "second_seconds": second_seconds}


def test_every_publish_put_its_metric_and_status_reads_them_back(pipeline, aws_env):
    """Issue 54: after each publish the job put LayerPublished (dimensions Dataset, Layer) in the lake's namespace,
    one per manifest that says published; ``status`` lists each dataset's last run and its silver freshness."""
    s3, cloudwatch = pipeline["s3"], _client(aws_env, "cloudwatch")
    now = dt.datetime.now(dt.timezone.utc)
    for dataset in DATASETS:
        for layer in ("bronze", "silver", "gold"):
            published = sum(1 for m in _manifests(s3, layer, dataset) if m["published"])
            points = cloudwatch.get_metric_statistics(
                Namespace=METRIC_NAMESPACE, MetricName="LayerPublished", StartTime=now - dt.timedelta(hours=3),
                EndTime=now + dt.timedelta(minutes=1), Period=3 * 3600, Statistics=["Sum"],
                Dimensions=[{"Name": "Dataset", "Value": dataset}, {"Name": "Layer", "Value": layer}])["Datapoints"]
            assert published >= 1 and sum(p["Sum"] for p in points) == published, (dataset, layer)
    for run in (pipeline["first"], pipeline["second"]):
        assert "[signals] warning" not in run.stderr
    rows = {row["dataset"]: row for row in json.loads(pipeline["integrity"]["status"].stdout)}
    assert set(rows) == set(DATASETS)
    for row in rows.values():
        assert (row["result"], row["last_layer"], row["freshness"]) == ("succeeded", "gold", "fresh"), row
        assert row["cloudwatch_publishes"] >= 1 and row["target_minutes"]


def test_run_all_prints_progress_and_the_counts_table(pipeline):
    out, err = pipeline["first"].stdout, pipeline["first"].stderr
    assert "[silver iot] deduped + split" in err
    # sized from a listing of the emulator's bucket before the JVM started (spark_jobs/io/lake_bytes.py)
    assert any(line.startswith("session: ") and line.endswith(" of input: a session for small inputs "
                                                               "(TENANTLAKE_JIT=full to change)")
               for line in err.splitlines()), err[:2000]
    for dataset, truth in pipeline["truth"].items():
        assert f"silver {dataset}: rows_in={truth['raw_records']} rows_out={len(truth['valid'])} " \
               f"quarantined={len(truth['bad'])} duplicates={truth['duplicates']} late={truth['late']}" in out
    assert "dataset" in out and "gold iot_hourly" in out


@pytest.mark.parametrize("dataset", list(DATASETS))
def test_manifests_hold_the_invariant_and_match_the_truth(pipeline, dataset):
    s3, truth = pipeline["s3"], pipeline["truth"][dataset]
    bronze_runs, silver_runs, gold_runs = (_manifests(s3, layer, dataset) for layer in ("bronze", "silver", "gold"))
    assert len(bronze_runs) == len(silver_runs) == len(gold_runs) == 2
    for manifest in bronze_runs + silver_runs + gold_runs:
        assert manifest["status"] == "succeeded" and manifest["invariant_holds"] is True
        assert manifest["rows_in"] == manifest["rows_out"] + manifest["quarantined"] + manifest["duplicates"]
        assert manifest["code_version"].startswith("spark_jobs-") and manifest["duration_seconds"] > 0
    first_bronze, second_bronze = sorted(bronze_runs, key=lambda m: m["run_id"])
    assert first_bronze["rows_in"] == truth["raw_records"]
    assert first_bronze["malformed"] == sum(1 for b in truth["bad"] if b["kind"] == "malformed")
    assert second_bronze["rows_in"] == 0 and second_bronze["batches"] == []
    first_silver, second_silver = sorted(silver_runs, key=lambda m: m["run_id"])
    # iot ran again with nothing new (incremental: nothing read, nothing committed); the others with --full.
    recomputed = [first_silver] if dataset == "iot" else [first_silver, second_silver]
    for silver in recomputed:
        assert (silver["rows_in"], silver["rows_out"], silver["quarantined"], silver["duplicates"], silver["late"]) == (
            truth["raw_records"], len(truth["valid"]), len(truth["bad"]), truth["duplicates"], truth["late"])
        assert silver["outputs"] == {"silver": f"s3a://{BUCKET}/silver/{dataset}",
                                     "quarantine": f"s3a://{BUCKET}/quarantine/{dataset}"}
    assert first_silver["mode"] == "full" and first_silver["increment"]["full_because"] == "the table has no data yet"
    if dataset == "iot":
        assert second_silver["mode"] == "incremental" and second_silver["rows_in"] == 0 and second_silver["tables"] == {}
        assert second_silver["increment"]["watermark"] == first_silver["increment"]["watermark"]
    else:
        assert second_silver["mode"] == "full"


@pytest.mark.parametrize("dataset", list(DATASETS))
def test_every_bad_record_is_quarantined_with_its_reason(pipeline, dataset):
    bad = pipeline["truth"][dataset]["bad"]
    assert {b["kind"] for b in bad} >= {"malformed", "wrong_type", "missing_key", "out_of_range", "unknown_field"}
    con = duckdb.connect()
    folder = pipeline["run1"] / "quarantine" / dataset
    rows = con.sql(f"SELECT _raw, _failed_rules, _source_file FROM {_source(folder)}").fetchall()
    assert len(rows) == len(bad)
    unmatched = list(rows)
    for entry in bad:
        def matches(row):
            raw, rules, source = row
            if entry["reason"] not in rules:
                return False
            if "record" in entry:
                try:
                    return json.loads(raw) == entry["record"]
                except ValueError:
                    return False
            if "raw" in entry:
                return raw == entry["raw"]
            return source.endswith("/" + entry["source_file"])
        hit = next((row for row in unmatched if matches(row)), None)
        assert hit is not None, f"bad record not quarantined with {entry['reason']}: {entry}"
        unmatched.remove(hit)


@pytest.mark.parametrize("dataset", list(DATASETS))
def test_silver_has_no_duplicate_keys_and_exactly_the_valid_rows(pipeline, dataset):
    from spark_jobs.contract.model import load_contract

    contract = load_contract(dataset)
    folder = pipeline["run1"] / "silver" / dataset
    con = duckdb.connect()
    key = ", ".join(f'"{k}"' for k in contract.key)
    dupes = con.sql(f"SELECT {key}, count(*) FROM {_source(folder)} GROUP BY ALL HAVING count(*) > 1").fetchall()
    assert dupes == []
    silver_ids = con.sql(f"SELECT {key} FROM {_source(folder)}").fetchall()
    expected = [tuple(_key_value(r[k], contract.column(k).type, contract.column(k).format) for k in contract.key)
                for r in pipeline["truth"][dataset]["valid"]]
    assert sorted(silver_ids) == sorted(expected)


def _key_value(value, col_type, fmt):
    if col_type == "timestamp":
        return _parse_ts(value)
    return value


def _round2(value: float) -> float:
    """Spark's round(x, 2) on a double: HALF_UP on the shortest decimal form (Python's round is HALF_EVEN)."""
    return float(decimal.Decimal(repr(value)).quantize(decimal.Decimal("0.01"), rounding=decimal.ROUND_HALF_UP))


def _parse_ts(text: str) -> dt.datetime:
    return dt.datetime.strptime(text.replace("T", " ").rstrip("Z"), "%Y-%m-%d %H:%M:%S")


def test_gold_iot_hourly_equals_duckdb_over_the_generated_rows(pipeline):
    valid = pipeline["truth"]["iot"]["valid"]
    con = duckdb.connect()
    con.execute("CREATE TABLE r (sensor_id VARCHAR, event_ts TIMESTAMP, temperature DOUBLE, humidity DOUBLE, "
                "battery DOUBLE)")
    con.executemany("INSERT INTO r VALUES (?, ?, ?, ?, ?)",
                    [(r["sensor_id"], _parse_ts(r["event_ts"]), r["temperature"], r["humidity"], r["battery"])
                     for r in valid])
    expected = con.sql("""
        SELECT sensor_id, date_trunc('hour', event_ts) AS h, count(*), min(temperature), avg(temperature),
               max(temperature), min(humidity), avg(humidity), max(humidity), min(battery),
               sum(CASE WHEN temperature < 0 OR temperature > 45 THEN 1 ELSE 0 END),
               sum(CASE WHEN humidity < 10 OR humidity > 90 THEN 1 ELSE 0 END)
        FROM r GROUP BY ALL ORDER BY 1, 2""").fetchall()
    folder = pipeline["run1"] / "gold" / "iot_hourly"
    actual = duckdb.sql(f"""
        SELECT sensor_id, event_hour, reading_count, temperature_min, temperature_avg, temperature_max,
               humidity_min, humidity_avg, humidity_max, battery_min, temperature_out_of_range, humidity_out_of_range
        FROM {_source(folder)} ORDER BY 1, 2""").fetchall()
    assert len(actual) == len(expected) > 0
    for got, want in zip(actual, expected):
        # columns: sensor, hour, count, t_min, t_avg, t_max, h_min, h_avg, h_max, b_min, t_out, h_out
        assert got[:4] == want[:4] and got[5:7] == want[5:7] and got[8:] == want[8:]
        assert got[4] == pytest.approx(want[4]) and got[7] == pytest.approx(want[7])


def test_gold_clickstream_equals_plain_python_over_the_generated_rows(pipeline):
    valid = pipeline["truth"]["clickstream"]["valid"]
    hourly = collections.defaultdict(lambda: [0, set(), 0])
    for r in valid:
        ts = _parse_ts(r["timestamp"])
        cell = hourly[(r["site_id"], ts.replace(minute=0, second=0))]
        cell[0] += r["event"] == "page_view"
        cell[1].add(r["user_id"])
        cell[2] += 1
    expected_hourly = sorted((site, hour, pv, len(users), n) for (site, hour), (pv, users, n) in hourly.items())
    folder = pipeline["run1"] / "gold"
    actual_hourly = duckdb.sql(f"SELECT site_id, event_hour, page_views, users, event_count FROM "
                               f"{_source(folder / 'clickstream_site_hourly')} ORDER BY 1, 2").fetchall()
    assert actual_hourly == expected_hourly

    by_user = collections.defaultdict(list)
    for r in valid:
        by_user[r["user_id"]].append(_parse_ts(r["timestamp"]))
    expected_sessions = []
    for user, times in by_user.items():
        times.sort()
        start = prev = times[0]
        count = 1
        for t in times[1:]:
            if (t - prev).total_seconds() > 30 * 60:
                expected_sessions.append((user, start, prev, count))
                start, count = t, 0
            count += 1
            prev = t
        expected_sessions.append((user, start, prev, count))
    actual_sessions = duckdb.sql(f"SELECT user_id, session_start, session_end, event_count FROM "
                                 f"{_source(folder / 'clickstream_user_sessions')} ORDER BY 1, 2").fetchall()
    assert actual_sessions == sorted(expected_sessions)


def test_gold_inventory_equals_plain_python_over_the_generated_rows(pipeline):
    from spark_jobs.contract.model import load_contract

    valid = pipeline["truth"]["inventory"]["valid"]
    usage = collections.defaultdict(list)
    latest = {}
    for r in valid:
        day = _parse_ts(r["collected_at"]).date()
        used = _round2(100 * (r["disk_total_gb"] - r["disk_free_gb"]) / r["disk_total_gb"])
        usage[(day, r["org_id"])].append((r["host_id"], r["cpu_percent"], used))
        slot = (day, r["org_id"], r["host_id"])
        if slot not in latest or r["collected_at"] > latest[slot]["collected_at"]:
            latest[slot] = r
    folder = pipeline["run1"] / "gold"
    actual_usage = duckdb.sql(f"SELECT event_date, org_id, host_count, snapshot_count, avg_cpu_percent, "
                              f"avg_disk_used_pct FROM {_source(folder / 'inventory_org_usage')} ORDER BY 1, 2").fetchall()
    assert len(actual_usage) == len(usage)
    for got, ((day, org), rows) in zip(actual_usage, sorted(usage.items())):
        assert got[:4] == (day, org, len({h for h, _, _ in rows}), len(rows))
        assert got[4] == pytest.approx(sum(c for _, c, _ in rows) / len(rows))
        assert got[5] == pytest.approx(sum(u for _, _, u in rows) / len(rows))

    rules = load_contract("inventory").gold_options["inventory_compliance"]["policy_rules"]
    expected_flags = set()
    for (day, org, host), r in latest.items():
        effective = {}
        for rule in rules:
            if rule["org_id"] == org or (rule["org_id"] == "*" and rule["rule"] not in effective):
                effective[rule["rule"]] = rule
        observed = {"cpu_percent": r["cpu_percent"],
                    "disk_free_pct": _round2(100 * r["disk_free_gb"] / r["disk_total_gb"]),
                    "os_release": f"{r['os_name']} {r['os_version']}"}
        for name, rule in effective.items():
            value = observed[rule["metric"]]
            broken = ((rule["kind"] == "min" and value < rule["threshold"])
                      or (rule["kind"] == "max" and value > rule["threshold"])
                      or (rule["kind"] == "allowed" and value not in rule["allowed_values"]))
            if broken:
                expected_flags.add((day, host, name))
    actual_flags = duckdb.sql(f"SELECT event_date, host_id, rule FROM {_source(folder / 'inventory_compliance')}").fetchall()
    assert len(actual_flags) == len(set(actual_flags))
    assert set(actual_flags) == expected_flags and expected_flags


def test_a_second_run_changes_nothing(pipeline):
    run1, run2 = pipeline["run1"], pipeline["run2"]
    assert _objects(pipeline["s3"], "bronze/") == pipeline["bronze_objects_first"]
    for dataset, truth in pipeline["truth"].items():
        assert _table(run1 / "silver" / dataset) == _table(run2 / "silver" / dataset)
        assert _table(run1 / "quarantine" / dataset, exclude=("_run_id",)) == \
            _table(run2 / "quarantine" / dataset, exclude=("_run_id",))
        from spark_jobs.contract.model import load_contract

        for gold in load_contract(dataset).gold:
            assert _table(run1 / "gold" / gold) == _table(run2 / "gold" / gold)


def test_every_object_is_encrypted_with_the_tenant_key(pipeline):
    s3 = pipeline["s3"]
    keys = [k for k in _objects(s3, "") if not k.startswith("checkpoints/")][:40] + \
        [k for k in _objects(s3, "checkpoints/")][:5]
    for key in keys:
        head = s3.head_object(Bucket=BUCKET, Key=key)
        assert head.get("ServerSideEncryption") == "aws:kms", key
        assert pipeline["key_arn"].split("/")[-1] in head.get("SSEKMSKeyId", ""), key


def _counts_table(stdout: str) -> dict[tuple[str, str], int | None]:
    """The counts table run-all prints, as {(dataset, layer): rows}."""
    import re

    table = {}
    for line in stdout.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) == 4 and cells[0] in DATASETS:
            table[(cells[0], cells[1])] = None if cells[2] == "-" else int(cells[2])
    return table


def test_query_counts_what_the_counts_table_says(pipeline):
    counts = _counts_table(pipeline["first"].stdout)
    assert json.loads(pipeline["query"].stdout) == [{"n": counts[("iot", "gold iot_hourly")]}]
    # Sized like run-all's: the bytes of silver and gold, listed before the JVM starts.
    assert any(line.startswith("session: ") and line.endswith("a session for small inputs (TENANTLAKE_JIT=full to change)")
               for line in pipeline["query"].stderr.splitlines()), pipeline["query"].stderr
    assert counts[("iot", "gold iot_hourly")] > 0


# Iceberg's type names for the Spark types the tables hold (Spark's timestamp is Iceberg's timestamptz).
_ICEBERG_TYPES = {"string": "string", "double": "double", "int": "int", "bigint": "long", "boolean": "boolean",
                  "date": "date", "timestamp": "timestamptz", "array<string>": "list<string>"}


def _iceberg_type(field: dict) -> str:
    kind = field["type"]
    return kind if isinstance(kind, str) else f"{kind['type']}<{kind['element']}>"


def _check_table_against(folder: Path, record: dict, expected_columns: list[str], partition: tuple[str, str],
                         run_id: str) -> dict:
    """The table as its downloaded metadata says it is, against one manifest's ``tables`` entry."""
    meta = iceberg_files.table_metadata(folder)
    assert meta["format-version"] == 2
    assert meta["current-snapshot-id"] == record["snapshot_id"]
    schema = next(s for s in meta["schemas"] if s["schema-id"] == meta["current-schema-id"])
    assert [f["name"] for f in schema["fields"]] == [c for c, _ in record["columns"]] == expected_columns
    assert [_iceberg_type(f) for f in schema["fields"]] == [_ICEBERG_TYPES[t] for _, t in record["columns"]]
    spec = next(s for s in meta["partition-specs"] if s["spec-id"] == meta["default-spec-id"])
    names = {f["id"]: f["name"] for f in schema["fields"]}
    assert [(p["transform"], names[p["source-id"]]) for p in spec["fields"]] == [partition]
    snapshot = next(s for s in meta["snapshots"] if s["snapshot-id"] == record["snapshot_id"])
    assert snapshot["summary"]["tenantlake.run-id"] == run_id == record["run_id"]
    assert int(snapshot["summary"]["total-records"]) == record["total_records"] == \
        sum(f.record_count for f in iceberg_files.data_files(folder))
    return meta


@pytest.mark.parametrize("dataset", list(DATASETS))
def test_every_published_table_has_the_schema_partitioning_and_snapshot_its_manifest_records(pipeline, dataset):
    import importlib

    from spark_jobs.contract.model import load_contract
    from spark_jobs.transforms.silver import silver_columns

    contract, s3, run2 = load_contract(dataset), pipeline["s3"], pipeline["run2"]
    silver_runs = sorted(_manifests(s3, "silver", dataset), key=lambda m: m["run_id"])
    gold_runs = sorted(_manifests(s3, "gold", dataset), key=lambda m: m["run_id"])
    if dataset == "iot":  # its second run found nothing new: it committed nothing, the first run's tables stand
        assert silver_runs[-1]["tables"] == {} and gold_runs[-1]["tables"] == {}
        silver_runs, gold_runs = silver_runs[:1], gold_runs[:1]
    first, latest = silver_runs[0]["tables"]["silver"], silver_runs[-1]["tables"]["silver"]
    assert (latest["table"], latest["location"], latest["catalog"]) == (
        f"silver.{dataset}", f"s3a://{BUCKET}/silver/{dataset}", "hadoop")
    assert latest["partitioning"] == [f"days({contract.event_time})"]
    if dataset != "iot":  # the --full re-run replaced every row
        assert latest["parent_id"] == first["snapshot_id"] and latest["operation"] == "overwrite"
        assert latest["added_records"] == latest["deleted_records"] == silver_runs[-1]["rows_out"]
    _check_table_against(run2 / "silver" / dataset, latest, list(silver_columns(contract)),
                         ("day", contract.event_time), silver_runs[-1]["run_id"])
    for name in contract.gold:
        first_gold, record = gold_runs[0]["tables"][name], gold_runs[-1]["tables"][name]
        assert (record["table"], record["location"]) == (f"gold.{name}", f"s3a://{BUCKET}/gold/{name}")
        assert record["partitioning"] == ["event_date"]
        assert dataset == "iot" or record["parent_id"] == first_gold["snapshot_id"]
        columns = list(importlib.import_module(f"spark_jobs.transforms.gold.{name}").COLUMNS)
        _check_table_against(run2 / "gold" / name, record, columns, ("identity", "event_date"), gold_runs[-1]["run_id"])
    # Gold read the silver snapshot of the run before it (lineage in the manifest).
    assert gold_runs[-1]["input_snapshots"] == {f"silver.{dataset}": latest["snapshot_id"]}
    assert gold_runs[0]["input_snapshots"] == {f"silver.{dataset}": first["snapshot_id"]}


def test_the_backfill_benchmark_reads_its_figures_from_this_run_all_output(pipeline):
    """bench/backfill.py parses run-all's stdout (layer lines) and stderr (progress lines)."""
    from bench import backfill

    first = pipeline["first"]
    layers, stages = backfill.parse_run(first.stdout, first.stderr)
    truth = pipeline["truth"]["iot"]
    assert sorted(layers) == ["bronze", "gold", "silver"]
    assert layers["bronze"]["rows_in"] == truth["raw_records"] and layers["silver"]["rows_out"] == len(truth["valid"])
    for layer in ("silver", "gold"):
        begin, end = backfill.PUBLISH_SPANS[layer]
        assert stages[layer][end] >= stages[layer][begin]
        assert 0 <= layers[layer]["publish_s"] <= layers[layer]["layer_s"] + 0.1
    assert "committed silver" in stages["silver"]


def _lineage_events(s3) -> list[dict]:
    keys = sorted(k for k in _objects(s3, "reports/lineage/") if k.endswith(".jsonl"))
    return [json.loads(line) for k in keys
            for line in s3.get_object(Bucket=BUCKET, Key=k)["Body"].read().decode().splitlines() if line.strip()]


def test_lineage_events_of_the_runs_form_landing_bronze_silver_gold_for_every_dataset(pipeline):
    """Every layer run of both run-alls emitted START and COMPLETE (valid for the client's model of the
    spec, one SSE-KMS object each), and their inputs and outputs connect each dataset's landing files to
    each of its gold tables."""
    from spark_jobs.contract.model import load_contract
    from spark_jobs.lake.config import gold_table_name
    from tests.spark_jobs.runs.lineage_events import validate

    s3 = pipeline["s3"]
    events = _lineage_events(s3)
    for event in events:
        validate(event)
    by_run: dict[str, list[str]] = collections.defaultdict(list)
    for event in events:
        by_run[event["run"]["runId"]].append(event["eventType"])
    assert len(by_run) == 2 * 3 * len(DATASETS)  # two run-alls, three layers, every dataset
    assert all(sorted(types) == ["COMPLETE", "START"] for types in by_run.values())
    edges = collections.defaultdict(set)
    for event in (e for e in events if e["eventType"] == "COMPLETE"):
        assert {d["namespace"] for d in event["inputs"] + event["outputs"]} == {f"s3://{BUCKET}"}
        for source in event["inputs"]:
            for target in event["outputs"]:
                edges[source["name"]].add(target["name"])

    def reachable(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in edges[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    for dataset in DATASETS:
        assert edges[f"landing/{dataset}"] == {f"bronze/{dataset}"}
        assert edges[f"bronze/{dataset}"] == {f"silver/{dataset}", f"quarantine/{dataset}"}
        golds = {f"gold/{gold_table_name(dataset, g)}" for g in load_contract(dataset).gold}
        assert edges[f"silver/{dataset}"] == golds
        assert golds <= reachable(f"landing/{dataset}")
    head = s3.head_object(Bucket=BUCKET, Key=sorted(k for k in _objects(s3, "reports/lineage/"))[0])
    assert head["ServerSideEncryption"] == "aws:kms" and pipeline["key_arn"].split("/")[-1] in head["SSEKMSKeyId"]


def test_usage_prints_bytes_runs_and_an_estimated_cost_per_layer(pipeline):
    """``usage`` on the lake the two run-alls wrote (no inventory here: a listing of every version)."""
    result = _cli(pipeline["env"], "usage", "--tenant", TENANT, "--json")
    usage = json.loads(result.stdout)
    assert usage["storage"]["source"] == "listing"
    layers = {row["layer"]: row for row in usage["storage"]["rows"]}
    assert {"landing", "bronze", "silver", "gold", "quarantine", "checkpoints", "reports"} <= set(layers)
    listed = _objects(pipeline["s3"], "")
    for layer in ("landing", "bronze", "silver", "gold"):
        current = [k for k in listed if k.startswith(f"{layer}/")]
        assert sum(r["current_objects"] for r in usage["storage"]["rows"] if r["layer"] == layer) == len(current)
    runs = {(r["layer"], r["dataset"]): r for r in usage["runs"]["rows"]}
    for dataset in DATASETS:
        for layer in ("bronze", "silver", "gold"):
            assert runs[(layer, dataset)]["runs"] == 2 and runs[(layer, dataset)]["failed"] == 0
            assert runs[(layer, dataset)]["seconds"] > 0
    assert usage["cost"]["estimate"] is True and usage["cost"]["total_usd"] > 0
    table = _cli(pipeline["env"], "usage", "--tenant", TENANT).stdout
    assert "estimated cost for the month" in table and "total" in table
    for layer in ("landing", "bronze", "silver", "gold"):
        assert any(line.startswith(layer) for line in table.splitlines())


# ---- issue 41: landing integrity under real operations ----------------------------------------------------
def test_datagen_with_another_seed_is_refused_naming_the_objects_and_writes_nothing(pipeline):
    refused = pipeline["integrity"]["refused_datagen"]
    [line] = [line for line in refused.stderr.splitlines() if line.startswith("error: ")]
    assert line.startswith("error: datagen iot: 40 landing object(s) already exist with other content: "
                           "landing/iot/part-0-000000.json, landing/iot/part-0-000001.json")
    assert "nothing was written" in line and "--name-prefix" in line
    versions = pipeline["s3"].list_object_versions(Bucket=BUCKET, Prefix="landing/iot/part-0-0000")["Versions"]
    untouched = {v["Key"] for v in versions} - set(pipeline["integrity"]["overwritten"]) - {pipeline["integrity"]["same"]}
    assert untouched and all(sum(v["Key"] == key for v in versions) == 1 for key in untouched)


def test_two_run_alls_of_one_dataset_end_in_one_success_and_one_refusal_naming_the_holder(pipeline):
    integrity = pipeline["integrity"]
    first, second = integrity["first"], integrity["second"]
    assert first.returncode == 0, first.stderr[-3000:]
    assert second.returncode == 1 and second.stdout == ""
    [line] = second.stderr.strip().splitlines()  # one line, before any JVM started
    assert line.startswith("error: run-all iot: the bronze layer of iot is held by run 20")
    assert "(run-all, pid " in line and ") since 20" in line and "nothing was done" in line
    assert integrity["second_seconds"] < 30
    # Bronze exact after both: every landing record once (the first run-all found nothing new to read).
    assert "bronze iot: rows_in=0 rows_out=0" in first.stdout
    counts = {row["layer"]: row["rows"] for row in json.loads(integrity["counts"].stdout)}
    assert counts["bronze"] == pipeline["truth"]["iot"]["raw_records"]
    assert _objects(pipeline["s3"], "bronze/") == pipeline["bronze_objects_first"]
    assert _objects(pipeline["s3"], "checkpoints/iot/runs/") == {}  # every lease released


def test_overwritten_landing_versions_are_named_never_ingested_and_identical_rewrites_are_not(pipeline):
    integrity = pipeline["integrity"]
    rows = {row["layer"]: row for row in json.loads(integrity["counts"].stdout)}
    files = len([k for k in _objects(pipeline["s3"], "landing/iot/")])
    assert rows["landing (object versions)"]["rows"] == files + 3
    assert rows["landing versions ingested"]["rows"] == files + 1  # the identical rewrite is no gap
    assert rows["landing versions NOT ingested"]["rows"] == 2
    reconciliation = rows["landing (object versions)"]["reconciliation"]
    assert reconciliation["content_compared"] is True and reconciliation["same_content"] == 1
    named = sorted((v["key"], v["reason"]) for v in reconciliation["not_ingested_versions"])
    assert named == [(key, "written after bronze read this name") for key in integrity["overwritten"]]
    latest = {v["Key"]: v["VersionId"] for v in pipeline["s3"].list_object_versions(
        Bucket=BUCKET, Prefix="landing/iot/")["Versions"] if v["IsLatest"]}
    assert sorted(v["version_id"] for v in reconciliation["not_ingested_versions"]) == \
        sorted(latest[key] for key in integrity["overwritten"])
    # The run-all that ran said so by name too, in its bronze progress and after its counts table.
    err = integrity["first"].stderr
    for key in integrity["overwritten"]:
        assert f"[bronze iot] warning: 2 landing object version(s) never ingested: " in err and key in err
    assert "warning: iot: 2 landing object version(s) never ingested: " in err
    assert f"aws s3api get-object --bucket {BUCKET} --key <key> --version-id <version>" in err
    assert integrity["same"] not in err
