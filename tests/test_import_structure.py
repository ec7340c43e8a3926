"""The shape of the house, from the product's own imports (issue 45): no two modules import each other, even
through others or from inside a function, and ``bench/`` takes no private name (``_x``) from another module.
A circle still there is listed with its reason; the list is checked both ways: a new circle fails, and so does
an entry that no longer is one."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PRODUCT = ("infra", "spark_jobs", "policies", "bench", "tenant_model", "modules")
KNOWN_CIRCLES: dict[tuple[str, ...], str] = {}  # none left (issue 45)


def _modules() -> dict[str, Path]:
    files = sorted(path for top in PRODUCT for path in (REPO / top).rglob("*.py")
                   if "node_modules" not in path.parts and "build" not in path.parts)
    names = {}
    for path in files:
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def _imports(name: str, path: Path, modules: dict[str, Path]) -> tuple[set[str], list[tuple[int, str, str]]]:
    """The product modules ``name`` imports anywhere in its file, and the private names it takes from others."""
    targets: set[str] = set()
    private: list[tuple[int, str, str]] = []
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    targets.add(f"{base}.{alias.name}")
                elif base in modules:
                    targets.add(base)
                    if alias.name.startswith("_") and not alias.name.startswith("__") and base != name:
                        private.append((node.lineno, base, alias.name))
    return targets - {name}, private


def _circles(edges: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[tuple[str, ...]] = set()
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.add(tuple(sorted(component)))
    return found


def test_no_module_imports_one_that_imports_it_back():
    modules = _modules()
    edges = {name: _imports(name, path, modules)[0] for name, path in modules.items()}
    assert edges["bench.pipeline"] and "bench.common" in edges["bench.pipeline"]  # the scan sees imports
    circles = _circles(edges)
    assert circles - set(KNOWN_CIRCLES) == set(), "modules that import each other"
    assert set(KNOWN_CIRCLES) - circles == set(), "a listed circle that is one no more: remove it from the list"


def test_a_circle_is_found_through_others_and_inside_functions():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {("a", "b", "c")}
    assert _circles({"a": {"b"}, "b": set()}) == set()


def test_bench_takes_no_private_name_from_another_module():
    modules = _modules()
    taken = [f"{path.relative_to(REPO)}:{line} {base}.{alias}" for name, path in modules.items()
             if name.startswith("bench.") for line, base, alias in _imports(name, path, modules)[1]]
    assert taken == []


def test_spark_jobs_builds_every_aws_client_in_one_factory():
    """Only ``spark_jobs/io/s3.py`` (``aws_client``, and ``lake_client`` on it) imports boto3: every client the jobs
    open gets the same region, endpoint, CA bundle, timeouts and retries from there."""
    importers = []
    for path in sorted((REPO / "spark_jobs").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(name == "boto3" or name.startswith("boto3.") for name in names):
                importers.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert {importer.split(":")[0] for importer in importers} == {"spark_jobs/io/s3.py"}, \
        f"boto3 imported outside the client factory: {importers}"


def test_spark_jobs_packages_and_modules_import_one_way():
    """spark_jobs read as rooms (each top-level module, each package as a whole): no two rooms import each other,
    even through others, so every import runs down (issue 55). A helper two rooms share lives below both."""
    modules = _modules()
    rooms: dict[str, set[str]] = {}
    for name, path in modules.items():
        parts = name.split(".")
        if parts[0] != "spark_jobs" or len(parts) < 2:
            continue
        room = parts[1]
        targets = {t.split(".")[1] for t in _imports(name, path, modules)[0]
                   if t.startswith("spark_jobs.") and len(t.split(".")) > 1}
        rooms.setdefault(room, set()).update(targets - {room})
    assert rooms["jobs"] and "io" in rooms["jobs"]  # the scan sees the rooms' imports
    assert _circles(rooms) == set(), "spark_jobs rooms that import each other (an import running back up)"


# spark_jobs by concern (issue 55): each package on its floor, lowest first. A package imports only packages on
# floors below its own, so a new import running up (or sideways on one floor) fails here; spark_jobs/README.md
# "Layout" describes the same table.
SPARK_JOBS_FLOORS: tuple[tuple[str, ...], ...] = (
    ("contract", "lake"),
    ("transforms",),
    ("io",),
    ("landing", "producers", "runs"),
    ("datagen", "infer", "quality"),
    ("tables", "usage"),
    ("jobs",),
    ("erasure",),
    ("cli",),
    ("__main__",),
)
# Folders of spark_jobs that hold no code: the contracts are data (spark_jobs/contract/ is their model).
SPARK_JOBS_DATA_FOLDERS = {"contracts"}


def _spark_jobs_rooms() -> dict[str, set[str]]:
    """spark_jobs read as rooms: each package as a whole (and ``__main__``), with the rooms it imports."""
    modules = _modules()
    rooms: dict[str, set[str]] = {}
    for name, path in modules.items():
        parts = name.split(".")
        if parts[0] != "spark_jobs" or len(parts) < 2:
            continue
        targets = {t.split(".")[1] for t in _imports(name, path, modules)[0]
                   if t.startswith("spark_jobs.") and len(t.split(".")) > 1}
        rooms.setdefault(parts[1], set()).update(targets - {parts[1]})
    return rooms


def test_spark_jobs_top_level_holds_only_the_entry_point_and_packages():
    """Only ``__init__.py`` and ``__main__.py`` stand at the top of spark_jobs; every folder is a package with a
    README saying what lives there (the contracts' folder holds YAML data, not code)."""
    top = REPO / "spark_jobs"
    assert sorted(p.name for p in top.glob("*.py")) == ["__init__.py", "__main__.py"]
    folders = {p.name for p in top.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders - SPARK_JOBS_DATA_FOLDERS == {room for floor in SPARK_JOBS_FLOORS for room in floor} - {"__main__"}
    for folder in sorted(folders - SPARK_JOBS_DATA_FOLDERS):
        assert (top / folder / "__init__.py").is_file(), f"spark_jobs/{folder}/ is no package"
        assert (top / folder / "README.md").is_file(), f"spark_jobs/{folder}/ has no README.md"
    assert not list((top / "contracts").rglob("*.py")), "code in spark_jobs/contracts/ (the contracts' data folder)"


def test_spark_jobs_packages_import_only_packages_on_lower_floors():
    floor_of = {room: level for level, floor in enumerate(SPARK_JOBS_FLOORS) for room in floor}
    rooms = _spark_jobs_rooms()
    assert set(rooms) == set(floor_of), "a spark_jobs package missing from SPARK_JOBS_FLOORS, or one listed that is gone"
    assert "io" in rooms["jobs"] and "contract" in rooms["io"]  # the scan sees the packages' imports
    upward = sorted(f"{room} -> {target}" for room, targets in rooms.items() for target in targets
                    if floor_of[target] >= floor_of[room])
    assert upward == [], "spark_jobs imports that do not run down a floor (move the shared piece below both)"


def test_no_spark_jobs_file_is_over_700_lines():
    long_files = [f"{path.relative_to(REPO)}: {lines}" for path in sorted((REPO / "spark_jobs").rglob("*.py"))
                  if (lines := len(path.read_text().splitlines())) > 700]
    assert long_files == []
