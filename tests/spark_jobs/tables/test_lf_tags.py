"""spark_jobs/tables/lf_tags.py: which columns are personal (pure, from the contracts), the refusal of a contract that names
a personal column the table lacks, the tags applied to the session emulator's Lake Formation, and one real run:
``run-all`` tags the tables it creates (the CLI's tag step), a column added by schema evolution stays untagged
(so ``pii``, inherited from the database) until ``sync-tags`` tags it."""
from __future__ import annotations

import uuid

import pytest
import yaml

from spark_jobs import cli
from spark_jobs.contract.model import CONTRACTS_DIR, load_contract, parse_contract
from spark_jobs.lake.config import LakeConfig
from spark_jobs.tables import lf_tags
from spark_jobs.transforms.silver import LINEAGE_COLUMNS
from tests.spark_jobs.declared_columns import declared_columns

GLUE = {"silver": "acme_silver", "gold": "acme_gold"}


def _contract(**changes):
    raw = yaml.safe_load((CONTRACTS_DIR / "clickstream.yaml").read_text())
    return parse_contract({**raw, **changes})


# ---- which columns are personal ---------------------------------------------------------------------------
def test_silver_clickstream_user_and_url_are_personal_everything_else_the_contract_knows_is_not():
    contract = load_contract("clickstream")
    columns = lf_tags.known_silver_columns(contract)
    plan = lf_tags.plan_table(contract, "silver", "acme_silver", "clickstream", columns)
    assert plan.personal == ("user_id", "url")  # subject_keys, personal_data
    assert plan.not_personal == ("timestamp", "event", "site_id", "on_site_seconds", "viewed_percent", "event_date",
                                 "_is_late", *LINEAGE_COLUMNS)
    assert plan.display == "acme_silver.clickstream"


def test_a_column_the_contract_does_not_know_is_personal():
    contract = load_contract("iot")  # subject_keys: [], no personal data
    columns = [*lf_tags.known_silver_columns(contract), "firmware_owner_email"]
    plan = lf_tags.plan_table(contract, "silver", "acme_silver", "iot", columns)
    assert plan.personal == ("firmware_owner_email",) and "firmware_owner_email" not in plan.not_personal


def test_a_derived_column_reading_a_personal_column_is_personal_and_one_reading_none_is_not():
    contract = _contract(derived=[{"name": "url_host", "expr": "parse_url(url, 'HOST')"},
                                  {"name": "host_length", "expr": "length(url_host)"},  # reads a personal derived one
                                  {"name": "long_visit", "expr": "on_site_seconds > 600"}])
    assert lf_tags.personal_silver_columns(contract) == {"user_id", "url", "url_host", "host_length"}
    # An expression sqlglot cannot read counts as reading every column: personal when any column is.
    assert "odd" in lf_tags.personal_silver_columns(_contract(derived=[{"name": "odd", "expr": "((("}]))
    assert lf_tags.personal_silver_columns(load_contract("iot")) == set()  # no personal column to read


def test_gold_columns_from_the_module_declaration():
    contract = load_contract("clickstream")
    sessions = lf_tags.plan_table(contract, "gold", "acme_gold", "clickstream_user_sessions",
                                  declared_columns(contract, "gold", "clickstream_user_sessions"),
                                  "clickstream_user_sessions")
    # The user id, and the session id built from it (the module's PERSONAL_COLUMNS).
    assert sessions.personal == ("user_id", "session_id")
    assert sessions.not_personal == ("event_date", "session_start", "session_end", "duration_seconds", "event_count",
                                     "page_views", "sites")
    hourly = lf_tags.plan_table(contract, "gold", "acme_gold", "clickstream_site_hourly",
                                declared_columns(contract, "gold", "clickstream_site_hourly"),
                                "clickstream_site_hourly")
    assert hourly.personal == () and "users" in hourly.not_personal  # a count of users is no one's data
    # A column the module does not declare is closed, and so is every column of a module that declares none.
    assert lf_tags.plan_table(contract, "gold", "acme_gold", "clickstream_site_hourly", ["event_date", "referrer"],
                              "clickstream_site_hourly").personal == ("referrer",)
    summary = lf_tags.plan_table(contract, "gold", "acme_gold", "clickstream_period_summary",
                                 ["event_date", "period_start", "row_count"], "period_summary")
    assert summary.not_personal == () and summary.personal == ("event_date", "period_start", "row_count")


# ---- bad input: refused before any Lake Formation call, in one line ---------------------------------------
def test_a_personal_column_the_silver_table_lacks_is_refused_and_nothing_is_tagged():
    contract = load_contract("clickstream")
    columns = [c for c in lf_tags.known_silver_columns(contract) if c != "url"]
    calls = []
    with pytest.raises(lf_tags.LfTagError) as err:
        plans = lf_tags.plan_dataset(contract, GLUE, lambda layer, table: columns if layer == "silver" else None)
        calls.append(plans)
    assert str(err.value) == ("contract 'clickstream': personal_data: 'url' is not a column of acme_silver.clickstream "
                              f"(its columns: {', '.join(columns)}); nothing was tagged")
    assert calls == [] and "\n" not in str(err.value)


def test_a_gold_module_declaring_a_personal_column_it_does_not_write_is_refused(monkeypatch):
    from spark_jobs.transforms.gold import clickstream_user_sessions

    monkeypatch.setattr(clickstream_user_sessions, "PERSONAL_COLUMNS", ("user_id", "visitor_ip"), raising=False)
    with pytest.raises(lf_tags.LfTagError, match=r"^gold transformation 'clickstream_user_sessions': PERSONAL_COLUMNS "
                                                 r"names 'visitor_ip', which is not in its COLUMNS \(event_date, "):
        lf_tags.check_contract(load_contract("clickstream"))


def test_sync_tags_on_a_lake_without_lake_formation_tags_is_one_line_before_spark(tmp_path, capsys):
    assert cli.main(["sync-tags", "--lake-uri", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: the lake config has no Lake Formation tags (the tenant output lake_formation); re-apply the "
                   "tenant, or pass --lf-classification-tag")


# ---- against the emulator's Lake Formation ----------------------------------------------------------------
@pytest.fixture
def lf_env(aws_env, boto_session, monkeypatch):
    """A classification tag of this test's own in the session emulator, and the SDK's credentials for it."""
    for name, value in aws_env.items():
        monkeypatch.setenv(name, value)
    lf = boto_session("lakeformation")
    key = f"t{uuid.uuid4().hex[:8]}-classification"
    lf.create_lf_tag(TagKey=key, TagValues=["pii", "none"])
    return lf, key


def _column_tags(lf, database: str, table: str, columns) -> dict[str, str]:
    answer = lf.get_resource_lf_tags(Resource={"TableWithColumns": {"DatabaseName": database, "Name": table,
                                                                    "ColumnNames": list(columns)}},
                                     ShowAssignedLFTags=True)
    return {c["Name"]: c["LFTags"][0]["TagValues"][0] for c in answer.get("LFTagsOnColumns", [])}


@pytest.mark.integration
def test_apply_tags_every_planned_column_and_a_failure_is_one_line(lf_env, aws_env):
    lf, key = lf_env
    contract = load_contract("clickstream")
    plans = lf_tags.plan_dataset(contract, {"silver": f"db_{key}", "gold": f"db_{key}"},
                                 lambda layer, table: declared_columns(contract, layer, table))
    counts = lf_tags.apply(lf, lf_tags.Classification(key), plans)
    assert counts == {"tables": 3, "personal": 4, "not_personal": sum(len(p.not_personal) for p in plans)}
    silver = plans[0]
    tags = _column_tags(lf, f"db_{key}", "clickstream", silver.personal + silver.not_personal)
    assert tags == {**{c: "pii" for c in silver.personal}, **{c: "none" for c in silver.not_personal}}
    with pytest.raises(lf_tags.LfTagError, match=rf"^db_{key}.clickstream: tagging 2 column\(s\) nokey=pii failed: "
                                                 "EntityNotFoundException"):
        lf_tags.apply(lf, lf_tags.Classification("nokey"), plans[:1])


@pytest.mark.integration
def test_a_run_tags_the_tables_it_created_and_sync_tags_tags_an_evolved_column(spark, lf_env, aws_env, tmp_path,
                                                                                monkeypatch, capsys):
    lf, key = lf_env
    monkeypatch.setenv("TENANTLAKE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TENANTLAKE_VALIDATION", "off")
    lake_dir = tmp_path / "lake"
    lake_args = ["--lake-uri", str(lake_dir), "--glue-databases", "silver=acme_silver,gold=acme_gold",
                 "--lf-classification-tag", key, "--s3-endpoint", aws_env["AWS_ENDPOINT_URL"],
                 "--ca-bundle", aws_env["AWS_CA_BUNDLE"]]
    assert cli.main(["datagen", "--dataset", "clickstream", "--records", "200", "--batch-size", "50",
                     "--start", "2024-03-01T00:00:00Z", "--lake-uri", str(lake_dir)]) == 0
    assert cli.main(["run-all", "--dataset", "clickstream", *lake_args]) == 0
    out = capsys.readouterr().out
    assert f"lf-tags silver clickstream: 1 table(s): 11 column(s) {key}=none, 2 {key}=pii" in out
    assert f"lf-tags gold clickstream: 2 table(s): 13 column(s) {key}=none, 2 {key}=pii" in out
    contract = load_contract("clickstream")
    silver_columns = lf_tags.known_silver_columns(contract)
    assert _column_tags(lf, "acme_silver", "clickstream", silver_columns) == {
        c: ("pii" if c in ("user_id", "url") else "none") for c in silver_columns}
    sessions = declared_columns(contract, "gold", "clickstream_user_sessions")
    assert {c for c, v in _column_tags(lf, "acme_gold", "clickstream_user_sessions", sessions).items()
            if v == "pii"} == {"user_id", "session_id"}

    # Schema evolution before any tag step saw the column: no tag of its own, so it inherits the database's pii.
    lake = LakeConfig(lake_uri=str(lake_dir), glue_databases=tuple(sorted(GLUE.items())))
    from spark_jobs.io import tables

    spark.sql(f"ALTER TABLE {tables.table(spark, lake, 'silver', 'clickstream').qualified} ADD COLUMN referrer string")
    assert "referrer" not in _column_tags(lf, "acme_silver", "clickstream", ["referrer"])
    assert cli.main(["sync-tags", "--dataset", "clickstream", "--dry-run", *lake_args]) == 0
    assert "referrer" not in _column_tags(lf, "acme_silver", "clickstream", ["referrer"])
    assert cli.main(["sync-tags", "--dataset", "clickstream", *lake_args]) == 0
    out = capsys.readouterr().out
    assert f"would tag 3 table(s): 24 column(s) {key}=none, 5 {key}=pii" in out
    assert f"tagged 3 table(s): 24 column(s) {key}=none, 5 {key}=pii" in out
    assert _column_tags(lf, "acme_silver", "clickstream", ["referrer"]) == {"referrer": "pii"}

    # Reclassification (issue 52): the contract now calls `event` personal. Before the silver commit that writes it,
    # the column is tagged pii (closed); nothing is opened before a commit, and a new column would have no tag yet.
    folder = tmp_path / "contracts"
    folder.mkdir()
    reclassified = yaml.safe_load((CONTRACTS_DIR / "clickstream.yaml").read_text())
    reclassified["personal_data"] = [*reclassified["personal_data"], "event"]
    reclassified["schema"].append({"name": "referrer", "type": "string"})  # the column evolution added above
    (folder / "clickstream.yaml").write_text(yaml.safe_dump(reclassified, sort_keys=False))
    monkeypatch.setenv("TENANTLAKE_CONTRACTS_DIR", str(folder))
    at_commit: list[dict[str, str]] = []
    publish = tables.publish

    def publish_and_record(*args, **kwargs):  # the real commit, with the tags as they stand when it starts
        at_commit.append(_column_tags(lf, "acme_silver", "clickstream", ["event", "site_id"]))
        return publish(*args, **kwargs)

    monkeypatch.setattr(tables, "publish", publish_and_record)
    # --full: nothing new landed, so only a full run rewrites the rows (an incremental one commits nothing).
    assert cli.main(["run", "--dataset", "clickstream", "--layer", "silver", "--full", *lake_args]) == 0
    assert at_commit == [{"event": "pii", "site_id": "none"}]
    err = capsys.readouterr().err
    assert f"lf-tags silver clickstream before the commit: 1 table(s): 0 column(s) {key}=none, 3 {key}=pii" in err
    assert _column_tags(lf, "acme_silver", "clickstream", ["event"]) == {"event": "pii"}


def test_before_a_commit_only_personal_columns_are_tagged():
    """A new column is closed by default: the pre-commit step tags nothing none (it only closes)."""
    contract = load_contract("clickstream")
    plans = lf_tags.plan_dataset(contract, GLUE, lambda layer, table: [*declared_columns(contract, layer, table),
                                                                         "added_by_evolution"])
    closing = lf_tags.personal_only(plans)
    assert closing and all(not p.not_personal and p.personal for p in closing)
    assert {c for p in closing for c in p.personal} >= {"user_id", "url", "session_id", "added_by_evolution"}


@pytest.mark.integration
def test_a_run_refuses_a_database_that_hands_new_tables_to_iam_allowed_principals(lf_env, aws_env, boto_session,
                                                                                    tmp_path, capsys):
    """Where the account kept IAM_ALLOWED_PRINCIPALS in its defaults when the tenant's databases were created, AWS
    copied it into each database's CreateTableDefaultPermissions (the emulator does too; here the database is given
    them, whatever the session's account settings are by now): every table a run would create there is IAM's alone. The run refuses in one line naming the fix, before Spark."""
    _, key = lf_env
    glue = boto_session("glue")
    suffix = uuid.uuid4().hex[:8]
    open_db, closed_db = f"open_{suffix}", f"closed_{suffix}"
    glue.create_database(DatabaseInput={"Name": closed_db, "CreateTableDefaultPermissions": []})
    glue.create_database(DatabaseInput={"Name": open_db, "CreateTableDefaultPermissions": [{
        "Principal": {"DataLakePrincipalIdentifier": "IAM_ALLOWED_PRINCIPALS"}, "Permissions": ["ALL"]}]})
    lake_args = ["--lake-uri", str(tmp_path / "lake"), "--glue-databases", f"silver={closed_db},gold={open_db}",
                 "--lf-classification-tag", key, "--s3-endpoint", aws_env["AWS_ENDPOINT_URL"],
                 "--ca-bundle", aws_env["AWS_CA_BUNDLE"]]
    assert cli.main(["run-all", "--dataset", "iot", *lake_args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: Glue database {open_db} gives every table created in it to IAM_ALLOWED_PRINCIPALS "
                          "(CreateTableDefaultPermissions), so Lake Formation's tags and grants would decide nothing")
    assert "nothing was run" in err and "make apply UNIT=_platform/lake-formation-eu-west-1" in err and "\n" not in err
    assert not (tmp_path / "lake").exists()  # nothing written, not even a lease
    glue.update_database(Name=open_db, DatabaseInput={"Name": open_db, "CreateTableDefaultPermissions": []})
    lf_tags.check_default_permissions(LakeConfig(lake_uri=str(tmp_path / "lake"), lf_classification_tag=key,
                                                 glue_databases=(("gold", open_db), ("silver", closed_db)),
                                                 s3_endpoint=aws_env["AWS_ENDPOINT_URL"],
                                                 ca_bundle=aws_env["AWS_CA_BUNDLE"]))  # the fix: the run may start
