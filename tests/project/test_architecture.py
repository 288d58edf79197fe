"""The checks that keep the house in order, run by `make test`: imports go one
way and round no loop (import-linter contracts in pyproject.toml, among them
the rooms of analysis/ by stage; an import inside a function closes no cycle
either), the workflow passes `snakemake --lint`
and `snakefmt --check`, no module or rule file outgrows one reader, and no test imports a
benchmark (a benchmark is a command-line script over the package: what a test needs of it lives
in the package, and the package imports no benchmark either)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support import REPO

SRC = REPO / "src"
BIN = Path(sys.executable).parent
MAX_MODULE_LINES = 400



def run(*cmd: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env)


def test_imports_go_one_way():
    proc = run(str(BIN / "lint-imports"), "--no-cache")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def _analysis_rooms_contract() -> dict:
    import tomllib

    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    found = [c for c in contracts if c.get("containers") == ["isocompute.analysis"]]
    assert len(found) == 1, "pyproject.toml: one layers contract with containers = ['isocompute.analysis']"
    return found[0]


def test_every_analysis_module_has_a_room():
    # The rooms of analysis/ by stage (inputs < fits < frontier < adaptive | outputs | plots < pipeline)
    # are pinned by a layers contract that test_imports_go_one_way runs: an upward import inside
    # analysis/ (at module level or inside a function) breaks it. Exhaustive, so no module escapes it.
    contract = _analysis_rooms_contract()
    assert contract["type"] == "layers" and contract.get("exhaustive") is True
    rooms = [name.strip() for layer in contract["layers"] for name in layer.replace(":", "|").split("|")]
    children = {p.stem if p.suffix == ".py" else p.name for p in (SRC / "isocompute" / "analysis").iterdir()
                if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").is_file()}
    assert sorted(rooms) == sorted(children)
    assert rooms[0] == "pipeline" and rooms[-1] == "inputs"


# --- benchmarks are scripts, not modules -------------------------------------------------

BENCHMARK_MODULES = sorted(p.stem for p in (REPO / "benchmarks").glob("*.py") if not p.name.startswith("_"))
_DYNAMIC_IMPORTS = {"spec_from_file_location", "SourceFileLoader", "import_module", "__import__", "run_path",
                    "run_module"}


def _is_sys_path(node) -> bool:
    """`sys.path`, or a slice or item of it."""
    node = node.value if isinstance(node, ast.Subscript) else node
    return (isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
            and node.value.id == "sys")


def _called(node: ast.Call) -> str | None:
    return getattr(node.func, "attr", getattr(node.func, "id", None))


def _benchmark_path_entries(node, source: str) -> list[str]:
    """What `node` puts on an import path that names benchmarks/: sys.path.insert/append/extend,
    an assignment to sys.path (or a slice of it), a PYTHONPATH entry of a dict or an environment."""
    parts = []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_sys_path(node.func.value):
        parts = node.args
    elif isinstance(node, (ast.Assign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        pythonpath = [t for t in targets if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant)
                      and t.slice.value == "PYTHONPATH"]
        parts = [node.value] if any(_is_sys_path(t) for t in targets) or pythonpath else []
    elif isinstance(node, ast.Dict):
        parts = [v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant) and k.value == "PYTHONPATH"]
    return [text for text in (ast.get_source_segment(source, part) or "" for part in parts) if "benchmarks" in text]


def benchmark_imports(root: Path, benchmarks=tuple(BENCHMARK_MODULES)) -> list[str]:
    """'path:line what' for each place under `root` that imports a benchmark: `import <stem>` or
    `from <stem> import` for a stem of benchmarks/*.py, a module loaded from a file (importlib,
    runpy) that names one, or benchmarks/ put on sys.path or PYTHONPATH."""
    stems = re.compile(r"\b(?:benchmarks|" + "|".join(map(re.escape, benchmarks)) + r")\b")
    found = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text()
        for node in ast.walk(ast.parse(source, filename=str(path))):
            hits = []
            if isinstance(node, ast.Import):
                hits = [f"import {a.name}" for a in node.names if a.name.split(".")[0] in benchmarks]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                hits = [f"from {node.module} import"] if node.module.split(".")[0] in benchmarks else []
            elif isinstance(node, ast.Call) and _called(node) in _DYNAMIC_IMPORTS:
                text = ast.get_source_segment(source, node) or ""
                hits = [text] if stems.search(text) else []
            hits += [f"benchmarks on the import path: {text}" for text in _benchmark_path_entries(node, source)]
            found += [f"{path.relative_to(root.parent)}:{node.lineno} {hit}" for hit in hits]
    return found


def test_no_test_imports_a_benchmark():
    # What a test needs of a benchmark lives in the package (imported from there), or the test runs
    # the benchmark as a user does (support.run_benchmark) and reads what it prints and writes.
    found = benchmark_imports(REPO / "tests")
    assert not found, "tests that import a benchmark (move what they need into the package):\n" + "\n".join(found)


def test_the_benchmark_import_guard_can_fail(tmp_path):
    tests = tmp_path / "tests"
    tests.mkdir()
    where = "REPO / " + repr("benchmarks")
    planted = {
        "by_name.py": "import power_nstar\nimport os.path\n",
        "from_name.py": "from gpu_check import agreement_z\nfrom isocompute.cluster.agreement import Z_BOUND\n",
        "on_path.py": f"import sys\nsys.path.insert(0, str({where}))\nsys.path[:0] = [str({where})]\n",
        "by_file.py": "import importlib.util\nspec = importlib.util.spec_from_file_location('bench_step', BENCH)\n",
        "by_env.py": f"import os\nenv = {{'PYTHONPATH': str({where})}}\nos.environ['PYTHONPATH'] = str({where})\n",
        "clean.py": "import subprocess, sys\nsys.path.insert(0, 'tests')\n"
                    f"subprocess.run([sys.executable, str({where} / 'power_nstar.py')])\n",
    }
    for name, text in planted.items():
        (tests / name).write_text(text)
    found = benchmark_imports(tests, ("bench_step", "gpu_check", "power_nstar"))
    assert sorted(f.split(" ")[0] for f in found) == [
        "tests/by_env.py:2", "tests/by_env.py:3", "tests/by_file.py:2", "tests/by_name.py:1", "tests/from_name.py:1",
        "tests/on_path.py:2", "tests/on_path.py:3"], found


def test_the_package_is_forbidden_every_benchmark():
    # import-linter's forbidden contract names each benchmark module: a new benchmark joins it.
    import tomllib

    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (forbidden,) = [c for c in contracts if c["type"] == "forbidden" and c["source_modules"] == ["isocompute"]]
    assert sorted(forbidden["forbidden_modules"]) == BENCHMARK_MODULES


def _package_table() -> set[str]:
    """The paths the package table of docs/architecture.md names (`x/`, `x.py`)."""
    text = (REPO / "docs" / "architecture.md").read_text()
    table = text[text.index("| layer | packages"):].split("\n\n")[0]
    return set(re.findall(r"`([\w/]+/|\w+\.py)`", table))


def test_architecture_page_names_every_package():
    # The page lists packages (and the package's top-level modules), not every module: a
    # package is named by its path or its last parts (`verl/cpu/` under `train/backends/`).
    root = SRC / "isocompute"
    packages = sorted(str(p.parent.relative_to(root)) for p in root.rglob("__init__.py") if p.parent != root)
    top = sorted(p.name for p in root.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    named = _package_table()
    matches = lambda pkg, name: f"/{pkg}/".endswith(f"/{name}")  # noqa: E731
    assert [p for p in packages if not any(matches(p, n) for n in named if n.endswith("/"))] == []
    assert [m for m in top if m not in named] == []
    unknown = [n for n in named if (n.endswith("/") and not any(matches(p, n) for p in packages))
               or (n.endswith(".py") and not any(root.rglob(n)))]
    assert unknown == [], "named in docs/architecture.md but not in src/isocompute/"


def test_architecture_page_draws_every_rule():
    # The DAG of docs/architecture.md names every rule of the workflow (`all` is the target).
    text = (REPO / "docs" / "architecture.md").read_text()
    dag = text[text.index("## The DAG"):text.index("## The package")]
    rules = [m.group(1) for path in WORKFLOW_FILES
             for m in re.finditer(r"^\s*(?:rule|checkpoint) (\w+):", path.read_text(), flags=re.M)]
    assert "merge_checkpoint" in rules and "adaptive_rung" in rules     # indented and checkpoint rules are found
    assert [r for r in rules if r != "all" and not re.search(rf"\b{r}\b", dag)] == []


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _function_imports():
    """(importer, imported, line) for each import of an isocompute module inside a function."""
    for path in sorted((SRC / "isocompute").rglob("*.py")):
        importer = _module_name(path)
        package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
        functions = [n for n in ast.walk(ast.parse(path.read_text()))
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        found = set()
        for node in (inner for f in functions for inner in ast.walk(f)):
            if isinstance(node, ast.Import):
                found |= {(a.name, (), node.lineno) for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                found.add((module, tuple(a.name for a in node.names), node.lineno))
        for module, names, line in sorted(found):
            if module.split(".")[0] == "isocompute":
                yield importer, module, names, f"{path.relative_to(REPO)}:{line}"


def test_no_import_inside_a_function_closes_a_cycle():
    # Deferring an import to a function (for start-up time: pandas, matplotlib) is fine; using it
    # to dodge a cycle is not: the shared fact belongs in one home both modules import from.
    import grimp

    graph = grimp.build_graph("isocompute")
    assert graph.find_modules_directly_imported_by("isocompute.cli"), "grimp found no imports"
    cycles = []
    for importer, module, names, where in _function_imports():
        targets = {f"{module}.{n}" for n in names if f"{module}.{n}" in graph.modules} or {module}
        for target in sorted(targets):
            chain = graph.find_shortest_chain(importer=target, imported=importer)
            if chain:
                cycles.append(f"{where}: {importer} -> {' -> '.join(chain)}")
    assert not cycles, "imports inside functions that close a cycle:\n" + "\n".join(cycles)


def test_snakemake_lint_is_clean():
    proc = run(str(BIN / "snakemake"), "--lint", "--cores", "1")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "Lints for" not in proc.stdout + proc.stderr, proc.stdout[-4000:] + proc.stderr[-4000:]


def test_workflow_is_snakefmt_formatted():
    proc = run(str(BIN / "snakefmt"), "--check", "Snakefile", "rules")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


@pytest.mark.parametrize("module", sorted((REPO / "src" / "isocompute").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(REPO / "src")))
def test_no_module_over_the_limit(module):
    lines = len(module.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{module.name}: {lines} lines; split it along its seams"


WORKFLOW_FILES = [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]


@pytest.mark.parametrize("workflow_file", WORKFLOW_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_workflow_file_over_the_limit(workflow_file):
    lines = len(workflow_file.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{workflow_file.name}: {lines} lines; split it along its seams"


# Functions a reader can hold (issue 35): none over MAX_FUNCTION_LINES lines (decorators and
# docstring included, as `ast` spans them), none over MAX_PARAMETERS parameters. Every parameter
# counts (self and cls do not; *args and **kwargs do): parameters that travel together go into one
# settings object (a frozen dataclass or NamedTuple: AnalysisSettings, FitGrid, LawBootstrap, ...),
# so a settings object is recognised simply by the count staying within the limit.
MAX_FUNCTION_LINES = 60
MAX_PARAMETERS = 7


def oversized_functions(root: Path) -> list[str]:
    """'path:line name: why' for each function under `root` over either limit."""
    found = []
    for module in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(), filename=str(module))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            a = node.args
            params = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs if p.arg not in ("self", "cls")]
            params += [f"*{p.arg}" for p in (a.vararg, a.kwarg) if p is not None]
            lines = node.end_lineno - node.lineno + 1
            where = f"{module.relative_to(root.parent)}:{node.lineno} {node.name}"
            if lines > MAX_FUNCTION_LINES:
                found.append(f"{where}: {lines} lines (at most {MAX_FUNCTION_LINES}; split it into named steps)")
            if len(params) > MAX_PARAMETERS:
                found.append(f"{where}: {len(params)} parameters (at most {MAX_PARAMETERS}; group those that "
                             f"travel together into a settings object)")
    return found


def test_no_function_over_the_limits():
    found = oversized_functions(SRC / "isocompute")
    assert not found, "functions a reader cannot hold:\n" + "\n".join(found)


def test_the_function_limits_can_fail(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    wide = ", ".join(f"p{i}" for i in range(MAX_PARAMETERS)) + ", *rest"
    (pkg / "bad.py").write_text(f"def long():\n{body}\n\n\nclass C:\n    def wide(self, {wide}):\n        pass\n\n\n"
                                "def fine(self, a, b, c, d, e, f, g):\n    pass\n")
    found = oversized_functions(pkg)
    assert len(found) == 2, found
    assert found[0].startswith(f"pkg/bad.py:1 long: {MAX_FUNCTION_LINES + 1} lines")
    assert found[1].startswith(f"pkg/bad.py:{MAX_FUNCTION_LINES + 5} wide: {MAX_PARAMETERS + 1} parameters")
