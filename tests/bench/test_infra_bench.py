"""bench/infra.py: its synthetic tenants are valid tenants, and its synth-once evidence counts what happened.

No emulator or terraform here (the benchmark itself runs those); these guard the two things a benchmark
run cannot check about itself: that N tenants are N real tenant configs, and that the markers it counts
are the lines the runner really prints.
"""
from __future__ import annotations

import inspect
import shutil
import uuid

import pytest

from bench import infra as bench_infra
from infra import terragrunt as tg
from infra.terragrunt import cli, fixture_network
from infra.local.network import fixture_ids

REPO = bench_infra.REPO_ROOT


@pytest.fixture
def tenants_root():
    # Inside the repo's ignored .local/: tenants/root.hcl's get_repo_root() needs a git work tree.
    folder = REPO / ".local" / "test-bench-tenants" / uuid.uuid4().hex[:8]
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_twenty_synthetic_tenants_are_valid_distinct_tenants_with_a_mix_of_regions(tenants_root, monkeypatch):
    monkeypatch.setenv("TENANTLAKE_STATE_ACCOUNT_ID", tg.LOCAL_ACCOUNT_ID)
    bench_infra.write_tenants_root(tenants_root, 20)
    runs = bench_infra.validate_tenants_root(tenants_root)  # tenant_model rules + no shared id/bucket/state key

    assert [r.name for r in runs] == bench_infra.tenant_ids(20)
    assert len({r.state_key for r in runs}) == len({r.config.lake_bucket_name for r in runs}) == 20
    for run in runs:
        assert run.config.vpc_ids == (fixture_ids.fixture_vpc_id(run.name),)  # what ensure_network demands locally
        if "gdpr" in run.config.data_classification:
            assert run.config.region.startswith("eu-")
    regions = {r.config.region for r in runs}
    assert len(regions) == len(bench_infra.TENANT_MIX)
    assert any(r.startswith("eu-") for r in regions) and any(not r.startswith("eu-") for r in regions)


def test_the_counted_markers_are_what_the_runner_prints():
    # If either message changed, the benchmark would count 0 syntheses / 0 skipped networks and prove nothing.
    assert bench_infra.RESYNTH_MARK in inspect.getsource(cli.synth_if_stale)
    assert bench_infra.NETWORK_SKIP_MARK in inspect.getsource(fixture_network.ensure_network)


def test_plan_output_summary_counts_syntheses_phases_and_plans():
    lines = [
        (0.5, "[network] fixture network of bench-t01: vpc-0 is up to date (applied by this emulator); skipped"),
        (0.9, "[network] fixture network of bench-t02: vpc-1 is up to date (applied by this emulator); skipped"),
        (1.0, "[bench-t01] Initializing the backend..."),
        (1.2, "[bench-t02] Initializing the backend..."),
        (3.0, "[bench-t02] synth: the tenant module is missing or older than its sources; re-synthesizing "
              "(python -m infra.synth)"),
        (15.0, "[bench-t01] Plan: 34 to add, 0 to change, 0 to destroy."),
        (29.5, "[bench-t02] Plan: 34 to add, 0 to change, 0 to destroy."),
        (30.0, "plan bench-t01=0, bench-t02=0"),
    ]
    summary = bench_infra.summarize_plan_output(lines, ["bench-t01", "bench-t02"])
    assert summary == {"network_phase_s": 1.0, "tenant_span_s": {"bench-t01": 14.0, "bench-t02": 28.3},
                       "planned_tenants": 2, "resources_to_add": [34], "synth_invocations": 1,
                       "networks_skipped": 2}
    # A single `make plan` prints no prefixes: every line is its one tenant's.
    single = bench_infra.summarize_plan_output([(2.0, "Plan: 34 to add, 0 to change, 0 to destroy.")], ["bench-t01"])
    assert (single["planned_tenants"], single["synth_invocations"]) == (1, 0)
