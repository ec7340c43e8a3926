"""The units pytest-xdist workers take under `make test` (tests/conftest.py, SCHEDULE_UNITS)."""
from tests.conftest import REPO_ROOT, SCHEDULE_UNITS, schedule_unit


def test_every_module_of_a_unit_exists_and_is_in_one_unit_only():
    modules = [m for _, unit in SCHEDULE_UNITS for m in unit]
    assert [m for m in modules if not (REPO_ROOT / m).is_file()] == []
    assert len(modules) == len(set(modules))
    assert len({name for name, _ in SCHEDULE_UNITS}) == len(SCHEDULE_UNITS)


def test_a_test_goes_with_its_module_unit_in_the_units_order_and_other_modules_after_them():
    first_name, first_modules = SCHEDULE_UNITS[0]
    assert schedule_unit(f"{first_modules[0]}::test_x[a::b]") == (0, first_name)
    name, modules = SCHEDULE_UNITS[1]
    assert schedule_unit(f"{modules[-1]}::test_y") == (1, name)
    assert schedule_unit("tests/test_shell.py::test_z") == (len(SCHEDULE_UNITS), "tests/test_shell.py")


def test_the_destroy_of_the_shared_tenants_is_in_the_unit_of_the_modules_that_use_them():
    """test_destroy_all runs last in its unit (it is the collection's last test); every module whose tests ask
    for acme, globex, initech or the network is in that unit, so none runs after the destroy on the same worker."""
    (unit,) = [modules for _, modules in SCHEDULE_UNITS if "tests/integration/test_destroy_all.py" in modules]
    users = sorted(str(p.relative_to(REPO_ROOT)) for p in (REPO_ROOT / "tests").rglob("test_*.py")
                   if p.name != "test_schedule.py" and _uses_the_shared_tenants(p))
    assert users and set(users) <= set(unit), sorted(set(users) - set(unit))


def _uses_the_shared_tenants(path) -> bool:
    """``applied_tenant`` in a module that names acme, globex or initech, or tests/integration/conftest.py's ``lake``
    (acme), ``globex`` or ``network`` fixture as a test's argument (unless the module defines its own)."""
    import re

    text = path.read_text()
    if re.search(r"\bapplied_tenant\b", text) and re.search(r"[\"'](acme|globex|initech)[\"']", text):
        return True
    return path.parent.name == "integration" and any(
        re.search(rf"^def test_\w+\([^)]*\b{name}\b", text, re.M) and not re.search(rf"^def {name}\(", text, re.M)
        for name in ("lake", "globex", "network"))
