"""Session-wide fixtures shared by every test package.

The emulator fixture starts a moto server of its own (state under .local/test-emulator/<pytest pid>/,
never the user's .local/emulator.json), and stops exactly that PID at the end of the session.
Several pytest sessions may run at once (helpers, an editor's test runner); each has its own.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from infra.local import terraform_config as _terraform_config
from tests import shell
from tests.shell import ShellResult
from tests.suite_timing import pytest_runtest_logreport, pytest_terminal_summary  # noqa: F401 (hooks)

REPO_ROOT = Path(__file__).resolve().parents[1]
TEST_STATE_ROOT = REPO_ROOT / ".local" / "test-emulator"
TEST_STATE_DIR = TEST_STATE_ROOT / str(os.getpid())

# Same environment the Makefile exports, so a bare `pytest` behaves like `make test`: the CLI config the
# Makefile chooses (infra/local/terraform_config.py: yours if it is a file, else the mirror's or the registry's).
os.environ["TF_CLI_CONFIG_FILE"] = _terraform_config.cli_config()
# Tests run `make <target>` as a user would, from a top-level shell: drop what an enclosing `make test`
# passes down (MAKELEVEL turns make's "make: ***" lines into "make[1]: ***"; MAKEFLAGS carries -s/-j).
for _inherited in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES"):
    os.environ.pop(_inherited, None)
os.environ.setdefault("TF_IN_AUTOMATION", "1")
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


@pytest.fixture(scope="session")
def tenant_module() -> dict:
    """The tenant-lake Terraform module (infra.synth), synthesized once per session (~18 s: AWS bindings)."""
    from infra.synth import synthesize

    return synthesize()


@pytest.fixture(scope="session")
def platform_module() -> dict:
    """The platform network module (infra.synth), synthesized once per session."""
    from infra.synth import synthesize

    return synthesize("platform_network")


@pytest.fixture(scope="session")
def platform_lake_formation_module() -> dict:
    """The platform Lake Formation module (infra.synth), synthesized once per session."""
    from infra.synth import synthesize

    return synthesize("platform_lake_formation")


@pytest.fixture(scope="session")
def emulator(request):
    """A moto server for this test session: yields its EmulatorState, stops it afterwards. When a test of
    the session failed, the state dir's logs (the emulator's request log among them) are kept in
    ``.local/test-logs/<pid>/`` before the state dir goes."""
    from infra.local import emulator as emu

    # A crashed earlier session may have left its emulator behind: stop those whose pytest is gone.
    for leftover in TEST_STATE_ROOT.glob("*"):
        if leftover.name.isdigit() and not emu._pid_alive(int(leftover.name)):
            emu.stop(leftover)
            shutil.rmtree(leftover, ignore_errors=True)
    state, _ = emu.start(TEST_STATE_DIR)
    try:
        yield state
    finally:
        emu.stop(TEST_STATE_DIR)
        if request.session.testsfailed:
            _keep_logs(TEST_STATE_DIR, TEST_STATE_ROOT.parent / "test-logs" / TEST_STATE_DIR.name)
        shutil.rmtree(TEST_STATE_DIR, ignore_errors=True)


def _keep_logs(state_dir: Path, dest: Path) -> None:
    """Copy every ``*.log`` under ``state_dir`` to ``dest`` (same relative paths)."""
    for log in state_dir.rglob("*.log"):
        target = dest / log.relative_to(state_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(log, target)


@pytest.fixture(scope="module")
def iam_enforcing_emulator(tmp_path_factory):
    """A moto server of the module's own that authorises requests against IAM (moto's
    ``INITIAL_NO_AUTH_ACTION_COUNT``): the first 3 requests (the test's admin user, its policy and its
    access key) go unauthenticated, every later one is checked against the caller's identity policies."""
    from infra.local import emulator as emu

    state_dir = tmp_path_factory.mktemp("iam-emulator")
    state, _ = emu.start(state_dir, extra_env={"INITIAL_NO_AUTH_ACTION_COUNT": "3"})
    try:
        yield state
    finally:
        emu.stop(state_dir)


@pytest.fixture(scope="session")
def aws_env(emulator):
    """Environment variables pointing SDKs at the session emulator."""
    from infra.local import emulator as emu

    return emu.env_vars(emulator)


@pytest.fixture
def boto_session(aws_env):
    """A factory ``client(service, region='eu-west-1')`` for boto3 clients on the emulator."""
    import boto3

    def client(service: str, region: str = "eu-west-1"):
        return boto3.client(
            service,
            region_name=region,
            endpoint_url=aws_env["AWS_ENDPOINT_URL"],
            verify=aws_env["AWS_CA_BUNDLE"],
            aws_access_key_id=aws_env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=aws_env["AWS_SECRET_ACCESS_KEY"],
        )

    return client


def run_make(target: str, *args: str, env: dict[str, str] | None = None, timeout: float = 900) -> ShellResult:
    """``make -s <target> <args>`` in the repo against the session emulator's state dir (tests/shell.py)."""
    return shell.make(target, *args, timeout=timeout, env={"TENANTLAKE_STATE_DIR": str(TEST_STATE_DIR), **(env or {})})


@pytest.fixture(scope="session", autouse=True)
def _shell_session():
    """The bash session tests/shell.py runs commands in ends with the test session."""
    yield
    shell.close()


@pytest.fixture(scope="session")
def applied_tenant(emulator):
    """A factory ``applied_tenant(tenant_id) -> dict``: the tenant's lake.json (Terraform outputs plus the
    emulator's s3_endpoint, ca_bundle, truststore).

    The first call per tenant runs ``make apply TENANT=<id>`` against the session emulator (as a user
    would); later calls reuse it, unless a test destroyed the tenant meanwhile (lake.json gone), in which
    case it is applied again.  Tenants still applied at the end of the session are not destroyed: they
    live only in this session's emulator, which the ``emulator`` fixture stops (and its state dir is
    removed). Destroy itself is tested in tests/integration/test_apply_acme.py; destroying here too cost
    about 2 minutes of every run.
    """
    import json

    applied: set[str] = set()

    def apply(tenant_id: str) -> dict:
        lake_json = TEST_STATE_DIR / "tenants" / tenant_id / "lake.json"
        if tenant_id not in applied or not lake_json.is_file():
            run_make("apply", f"TENANT={tenant_id}").check()
            applied.add(tenant_id)
        return json.loads(lake_json.read_text())

    return apply


@pytest.fixture(scope="session")
def lake_formation_settings(emulator):
    """A factory ``lake_formation_settings(region='eu-west-1')``: the session emulator's account gets its Lake Formation
    settings in ``region`` from the platform unit ``tenants/_platform/lake-formation-<region>``, applied as a user
    would (``make apply UNIT=...``), once per emulator: skipped when this emulator applied the unit already (its
    ``applied.json``, which a tenant's apply that depends on it writes too). For the scratch tenants that do not
    depend on the unit (the runner refuses a tenant's apply while the account keeps IAM_ALLOWED_PRINCIPALS defaults);
    the sample tenants depend on it and get it applied first by their own ``make apply``."""

    def apply(region: str = "eu-west-1") -> None:
        unit = f"_platform/lake-formation-{region}"
        if not (TEST_STATE_DIR / "tenants" / unit / "applied.json").is_file():
            run_make("apply", f"UNIT={unit}").check()

    return apply


# The units pytest-xdist workers take (make test), in the order they are handed out: the slowest
# first, so the long ones run side by side instead of one of them starting last (longest processing time
# first), then every other module in its usual order, a unit each. A unit of several modules keeps what
# they share on one worker: a tenant applied once (each worker has its own emulator, so a tenant two
# workers need is applied twice). Figures: tests/README.md, "The time budget" (.local/test-times.json).
# eraseco's four modules are two units on purpose: as one unit (runs 9 and 10) they saved an apply, but each
# erase request then read a larger lake, about 420 CPU s more in Spark JVMs than as two units (run 11).
SCHEDULE_UNITS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("eraseco: a killed erase resumed; exact matching", (
        "tests/spark_jobs/erasure/test_job.py", "tests/spark_jobs/erasure/test_exact.py")),
    ("acme, globex, initech and the network, destroyed last", (
        "tests/policies/test_access_matrix.py", "tests/integration/test_apply_acme.py",
        "tests/integration/test_maintenance_schedule.py", "tests/integration/test_orchestration_acme.py",
        "tests/spark_jobs/test_consumer_door.py",
        "tests/infra/deploy/test_applied_tenant.py", "tests/spark_jobs/landing/test_land_real_data.py",
        "tests/integration/test_streaming_initech.py", "tests/spark_jobs/test_schema_evolution.py",
        "tests/integration/test_destroy_all.py")),
    ("eraseco: the deployed erase; a dataset by month", (
        "tests/spark_jobs/erasure/test_job_deploy.py", "tests/spark_jobs/erasure/test_job_by_month.py")),
    ("200 daily commits, maintained", ("tests/spark_jobs/tables/test_maintain_daily_runs.py",)),
    ("two s3a run-alls", ("tests/spark_jobs/test_pipeline_e2e.py",)),
    ("killed Spark jobs", ("tests/reliability/test_pipeline_faults.py",)),
    ("the infrastructure-fault scenario's tenants", (
        "tests/reliability/test_isolation.py", "tests/reliability/test_infra_faults.py")),
)


def schedule_unit(nodeid: str, units=SCHEDULE_UNITS) -> tuple[int, str]:
    """A test's unit of work under pytest-xdist: ``(rank, name)``, the rank being its unit's place in
    ``units``; a module in no unit is a unit of its own, after all of them."""
    module = nodeid.split("::", 1)[0]
    for rank, (name, modules) in enumerate(units):
        if module in modules:
            return rank, name
    return len(units), module


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` (make test), with ``SCHEDULE_UNITS``: a unit is a module, or several
    modules that share a tenant; the workers take the units in collection order (see
    pytest_collection_modifyitems), not reordered by their number of tests as xdist would."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleUnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return schedule_unit(nodeid)[1]

    config.option.loadscopereorder = False
    return ModuleUnitScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """A test marked ``last_in_session`` (one that destroys tenants other modules share) moves to the end of the
    run, also after pytest-randomly's shuffle (``make test-shuffled``: it reorders before every plain hook);
    every other test keeps its place. Under ``make test`` (pytest-xdist, ``--dist loadfile``) a module
    (or a unit of modules, ``SCHEDULE_UNITS``) is one unit of work, handed out in the order of this list:
    ``SCHEDULE_UNITS`` first, slowest first, then the other modules in their usual order. The destroy of
    the shared tenants (tests/integration/test_destroy_all.py) is the last module of the unit of every module
    that uses them, so nothing on its worker needs them after it."""
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: its collection is the scheduler's order
        items.sort(key=lambda item: schedule_unit(item.nodeid)[0])
    items.sort(key=lambda item: item.get_closest_marker("last_in_session") is not None)
