"""The suite's own time report (tests/suite_timing.py): per-module sums, slowest first."""
from tests.suite_timing import module_of, module_table


def test_module_of_strips_the_test_and_its_parameters():
    assert module_of("tests/a/test_b.py::TestC::test_d[x::y]") == "tests/a/test_b.py"
    assert module_of("tests/a/test_b.py") == "tests/a/test_b.py"


def test_module_table_sorts_by_time_and_gives_shares():
    rows = module_table({"tests/x.py": 30.0, "tests/y.py": 90.0, "tests/z.py": 0.0}, {"tests/x.py": 3, "tests/y.py": 1})
    assert [r["module"] for r in rows] == ["tests/y.py", "tests/x.py", "tests/z.py"]
    assert rows[0] == {"module": "tests/y.py", "tests": 1, "seconds": 90.0, "share": 0.75}
    assert rows[2]["tests"] == 0 and rows[2]["share"] == 0.0
