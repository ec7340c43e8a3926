"""The suite's own time report (tests/suite_timing.py): per-module sums, slowest first."""
from tests.suite_timing import module_of, module_table, worker_table


def test_module_of_strips_the_test_and_its_parameters():
    assert module_of("tests/a/test_b.py::TestC::test_d[x::y]") == "tests/a/test_b.py"
    assert module_of("tests/a/test_b.py") == "tests/a/test_b.py"


def test_module_table_sorts_by_time_and_gives_shares():
    rows = module_table({"tests/x.py": 30.0, "tests/y.py": 90.0, "tests/z.py": 0.0}, {"tests/x.py": 3, "tests/y.py": 1})
    assert [r["module"] for r in rows] == ["tests/y.py", "tests/x.py", "tests/z.py"]
    assert rows[0] == {"module": "tests/y.py", "tests": 1, "seconds": 90.0, "share": 0.75}
    assert rows[2]["tests"] == 0 and rows[2]["share"] == 0.0


def test_module_table_with_spans_and_workers_gives_each_module_its_window_and_worker():
    rows = module_table({"tests/x.py": 30.0, "tests/y.py": 90.0}, {"tests/x.py": 3, "tests/y.py": 1},
                        {"tests/x.py": [1000.0, 1031.0], "tests/y.py": [1002.5, 1095.0]},
                        {"tests/x.py": "gw1", "tests/y.py": "gw0"}, started=1000.0)
    assert rows[0] == {"module": "tests/y.py", "tests": 1, "seconds": 90.0, "share": 0.75,
                       "start_s": 2.5, "end_s": 95.0, "worker": "gw0"}
    assert (rows[1]["start_s"], rows[1]["end_s"], rows[1]["worker"]) == (0.0, 31.0, "gw1")


def test_worker_table_adds_up_each_workers_modules_and_finds_its_last_end():
    rows = [{"module": "a", "seconds": 50.0, "end_s": 400.0, "worker": "gw0"},
            {"module": "b", "seconds": 20.5, "end_s": 120.0, "worker": "gw1"},
            {"module": "c", "seconds": 10.0, "end_s": 60.0, "worker": "gw0"},
            {"module": "d", "seconds": 5.0}]  # a serial run's row: no worker
    assert worker_table(rows) == [{"worker": "gw0", "modules": 2, "busy_s": 60.0, "last_end_s": 400.0},
                                  {"worker": "gw1", "modules": 1, "busy_s": 20.5, "last_end_s": 120.0}]
    assert worker_table([{"module": "d", "seconds": 5.0}]) == []
