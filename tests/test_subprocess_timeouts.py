"""Every subprocess the product starts has a timeout (issue 17: a hung terraform, pip, keytool or git must
end a run with a message, never hang it).  ``subprocess.run``/``call``/``check_call``/``check_output`` need a
``timeout=`` argument; a ``Popen`` is allowed only in the functions listed here, each of which bounds it
(the reason says how).  The list is checked both ways: a new ``Popen`` fails, and so does a stale entry."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PRODUCT = ("infra", "spark_jobs", "policies", "bench", "tenant_model", "modules")
BOUNDED_POPEN = {
    "infra/terragrunt/terraform.py:stream": "a timer sends SIGTERM after COMMAND_TIMEOUT_S, SIGKILL after KILL_GRACE_S",
    "infra/local/emulator.py:start": "a server: its start waits for health until a deadline; stop() ends it by PID",
    "bench/infra.py:run_logged": "a timer kills the command after its timeout",
    "bench/pipeline.py:run_measured": "communicate(timeout=WORKER_TIMEOUT_S); the worker tree is killed on timeout",
    "bench/erasure.py:_run": "communicate(timeout=RUN_TIMEOUT_S); the worker tree is killed on timeout",
    "bench/common.py:run_sampled": "communicate(timeout=timeout); the process tree is killed on timeout",
}
BLOCKING = {"run", "call", "check_call", "check_output"}


def _product_files() -> list[Path]:
    return sorted(path for top in PRODUCT for path in (REPO / top).rglob("*.py")
                  if "node_modules" not in path.parts and "build" not in path.parts)


def _subprocess_calls():
    """(file, enclosing function, function called, keyword names) of every ``subprocess.X(...)``."""
    for path in _product_files():
        tree = ast.parse(path.read_text(), filename=str(path))
        functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "subprocess"):
                enclosing = [f for f in functions if f.lineno <= node.lineno <= (f.end_lineno or f.lineno)]
                name = max(enclosing, key=lambda f: f.lineno).name if enclosing else "<module>"
                yield path.relative_to(REPO).as_posix(), node.lineno, name, node.func.attr, {k.arg for k in node.keywords}


def test_the_scan_sees_the_product_code():
    calls = list(_subprocess_calls())
    assert {call[0].split("/", 1)[0] for call in calls} >= {"infra", "bench"}
    assert any(call[3] == "run" for call in calls) and any(call[3] == "Popen" for call in calls)


def test_every_blocking_subprocess_call_has_a_timeout():
    missing = [f"{path}:{line} subprocess.{func}" for path, line, _, func, keywords in _subprocess_calls()
               if func in BLOCKING and "timeout" not in keywords]
    assert missing == []


def test_every_popen_is_bounded_and_the_list_is_current():
    popens = {f"{path}:{function}" for path, _, function, func, _ in _subprocess_calls() if func == "Popen"}
    assert popens - set(BOUNDED_POPEN) == set(), "a Popen without a listed bound"
    assert set(BOUNDED_POPEN) - popens == set(), "a listed Popen that no longer exists"


def test_no_other_way_to_start_a_process():
    banned = ("os.system(", "os.popen(", "os.spawn", "asyncio.create_subprocess", "import subprocess as",
              "from subprocess import")
    found = [f"{path.relative_to(REPO)}: {word}" for path in _product_files() for word in banned
             if word in path.read_text()]
    assert found == []
