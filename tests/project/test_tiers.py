"""The suite's two tiers: `make check` runs the tests not marked slow, `make test` all of
them; support's helpers that do real work refuse a test not marked slow, and the users of
the slow fixtures are marked at collection. And the suite's layout: tests/ mirrors the rooms
of src/isocompute, and no module imports a conftest.py by name."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from support import REPO, is_dry_run

# A scratch suite whose conftest is this suite's (its hooks and fixtures, imported under another
# name) with this suite's helpers (tests/ on sys.path, as pyproject's pythonpath puts it), run by
# pytest in a subprocess.
CONFTEST = f"""
import importlib.util, sys
sys.path.insert(0, {str(REPO / "tests")!r})
spec = importlib.util.spec_from_file_location("suite_conftest", {str(REPO / "tests" / "conftest.py")!r})
suite = importlib.util.module_from_spec(spec)
sys.modules["suite_conftest"] = suite
spec.loader.exec_module(suite)
from suite_conftest import pytest_collection_modifyitems, pytest_runtest_protocol, tiny_stages  # noqa: F401
"""

TESTS = """
import pytest
from support import require_slow, run_snakemake


def test_unmarked_real_run(tmp_path):
    run_snakemake(tmp_path, "--cores", "1")   # refused before snakemake starts


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    require_slow("trains")
    return 1


def test_unmarked_user_of_a_slow_module_fixture(built):
    pass


def test_unmarked_dry_run_is_allowed(tmp_path):
    run_snakemake(tmp_path, "-n", "--version")


@pytest.mark.slow
def test_marked_may(tmp_path):
    require_slow("trains")


def test_uses_the_prebuilt_study(tiny_stages):
    raise AssertionError("never built in this scratch suite")
"""


def run_scratch(rootdir: Path, *args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    """pytest on a scratch suite in `rootdir`, none of this repo's settings applied."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
           **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", "-o", "addopts=", "-o", "markers=slow: slow",
                           "--rootdir", str(rootdir), "-c", os.devnull, *args],
                          cwd=rootdir, env=env, capture_output=True, text=True, timeout=300)


def scratch_pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_scratch.py").write_text(textwrap.dedent(TESTS))
    return run_scratch(tmp_path, str(tmp_path / "test_scratch.py"), *args)


def test_real_work_in_a_test_not_marked_slow_fails_saying_mark_it_slow_and_slow_fixtures_mark_their_users(tmp_path):
    proc = scratch_pytest(tmp_path, "-m", "not slow")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    # Deselected: the marked test and the prebuilt study's user (marked at collection: unmarked, it would
    # run and fail). The module fixture's user errs in its setup.
    assert re.search(r"\b1 failed, 1 passed, 2 deselected, 1 error\b", out), out[-3000:]
    for name, what in (("test_unmarked_real_run", "runs snakemake on real stages (not a dry run)"),
                       ("test_unmarked_user_of_a_slow_module_fixture", "trains")):
        assert f"test_scratch.py::{name} {what} but is not marked slow: mark it slow" in out, out[-3000:]
    assert "PASSED test_scratch.py::test_unmarked_dry_run_is_allowed" in out, out[-3000:]


def test_dry_runs_are_told_from_real_runs():
    assert is_dry_run(["-n", "--configfile", "x.yaml"]) and is_dry_run(["--unlock"]) and is_dry_run(["--dry-run"])
    assert not is_dry_run(["--cores", "2", "results/tiny/splits"]) and not is_dry_run(["--report", "r.html"])


def test_make_check_runs_the_fast_tier_after_the_same_setup_as_make_test(tmp_path):
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        (tmp_path / name).write_bytes((REPO / name).read_bytes())
    # without the calling make's variables (`make test PYTEST_ARGS=...` passes them down in MAKEFLAGS)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "PYTEST_ARGS")}
    plans = {target: subprocess.run(["make", "-n", "--no-print-directory", "-C", str(tmp_path), target], capture_output=True, text=True,
                                    stdin=subprocess.DEVNULL, env=env) for target in ("check", "test")}
    for target, proc in plans.items():
        assert proc.returncode == 0, proc.stderr
        setup, _, last = proc.stdout.strip().rpartition("\n")
        assert "pip install" in setup and "-e \".[test]\"" in setup, (target, proc.stdout)
        assert last.split()[1:3] == ["-m", "pytest"], last
        assert ('-m pytest -m "not slow" ' in last) == (target == "check"), last
        # both on two workers, the engine runs grouped (see test_two_workers_...)
        assert last.endswith(" -n 2 --dist loadscope --no-loadscope-reorder"), last
    one = subprocess.run(["make", "-n", "--no-print-directory", "-C", str(tmp_path), "test", "TEST_WORKERS=0"],
                         capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env)
    assert one.stdout.strip().endswith("-m pytest"), one.stdout  # TEST_WORKERS=0: one process


# A scratch suite for the two-worker scheduler: two engine modules (marked where they are
# written, under names that say nothing) and two other modules, each with a module fixture;
# every fixture build and every test appends its worker to a log.
SCHEDULED = '''
import os, pytest

def note(what):
    with open(os.environ["SCRATCH_LOG"], "a") as log:
        log.write(f"{what} {os.environ.get('PYTEST_XDIST_WORKER', 'none')}\\n")

@pytest.fixture(scope="module")
def built(request):
    note("build " + request.module.__name__)

@pytest.mark.parametrize("i", range(4))
def test_one(built, i, request):
    note("test " + request.module.__name__)
'''
ENGINE_MODULES = ("test_alpha", "test_gamma")  # not next to each other in the collection order


def test_two_workers_build_each_module_fixture_once_and_run_the_engines_on_one_worker(tmp_path):
    suite = tmp_path / "tests"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST.replace(
        "tiny_stages  # noqa: F401", "tiny_stages, pytest_configure_node, pytest_xdist_make_scheduler  # noqa: F401"))
    modules = ("test_alpha", "test_beta", "test_gamma", "test_delta")
    for name in modules:
        mark = "pytestmark = pytest.mark.engine\n" if name in ENGINE_MODULES else ""
        (suite / f"{name}.py").write_text(SCHEDULED + mark)
    log = tmp_path / "log.txt"
    proc = run_scratch(tmp_path, "-n", "2", "--dist", "loadscope", "--no-loadscope-reorder", "tests",
                       env_extra={"SCRATCH_LOG": str(log)})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = [line.split() for line in log.read_text().splitlines()]
    builds = sorted(module for what, module, _ in lines if what == "build")
    assert builds == sorted(modules), builds  # each module's fixture once: no module split between workers
    workers = {module: {w for _, m, w in lines if m == module} for module in modules}
    assert all(len(w) == 1 for w in workers.values()), workers
    assert workers["test_alpha"] == workers["test_gamma"], workers  # the marked engines together
    assert len(set().union(*workers.values())) == 2, workers  # and both workers used
    # the engines' unit first, on its worker: its tests before any other module's there
    engine_worker = next(iter(workers["test_alpha"]))
    order = [m for what, m, w in lines if what == "test" and w == engine_worker]
    assert set(order[:8]) == set(ENGINE_MODULES), order


# A scratch suite of tests that start an engine through the suite's launch helpers without the
# engine marker (each refused before it starts anything), and one marked.
UNMARKED_ENGINES = """
import pytest
from support import require_engine, run_snakemake

pytestmark = pytest.mark.slow


def test_unmarked_verl_study(tmp_path):
    (tmp_path / "verl.yaml").write_text("train: {backend: verl}\\n")
    run_snakemake(tmp_path, "--cores", "1", "--configfile", "verl.yaml")


def test_unmarked_vllm_sampling(tmp_path):
    (tmp_path / "vllm.yaml").write_text("sampling: {backend: vllm}\\n")
    run_snakemake(tmp_path, "--cores", "1", "--configfile", str(tmp_path / "vllm.yaml"))


def test_unmarked_twin_study(tmp_path):
    from twin_env import run_twin_study

    run_twin_study(tmp_path, {}, "nothing", 1, lambda work: [])


def test_unmarked_slurm_cluster(tmp_path):
    from cluster import LocalSlurm

    LocalSlurm(tmp_path).start()


def test_unmarked_engine_benchmark(tmp_path):
    from test_benchmarks import run_benchmark

    run_benchmark("bench_backends_agree.py", "--quick")


def test_unmarked_local_study_may(tmp_path):
    (tmp_path / "local.yaml").write_text("train: {backend: local}\\n")
    run_snakemake(tmp_path, "--cores", "1", "--configfile", "local.yaml", "--version")


@pytest.mark.engine
def test_marked_may():
    require_engine("starts verl")
"""


def test_a_test_that_starts_an_engine_without_the_engine_marker_fails_saying_mark_it(tmp_path):
    # the helpers' modules, where pytest's rootdir-relative imports put them for the suite
    helpers = [REPO / "tests" / "envs", REPO / "tests" / "cluster" / "slurm", REPO / "tests" / "benchmarks"]
    (tmp_path / "conftest.py").write_text(CONFTEST + f"sys.path[1:1] = {[str(p) for p in helpers]!r}\n")
    (tmp_path / "test_scratch.py").write_text(textwrap.dedent(UNMARKED_ENGINES))
    proc = run_scratch(tmp_path, str(tmp_path / "test_scratch.py"))
    out = proc.stdout + proc.stderr
    assert re.search(r"\b5 failed, 2 passed\b", out), out[-3000:]
    for name, what in (("test_unmarked_verl_study", "runs snakemake on a study that starts verl and Ray"),
                       ("test_unmarked_vllm_sampling", "runs snakemake on a study that starts vLLM"),
                       ("test_unmarked_twin_study", "runs a study in the CPU twin"),
                       ("test_unmarked_slurm_cluster", "starts a one-node SLURM cluster"),
                       ("test_unmarked_engine_benchmark", "runs the benchmark bench_backends_agree.py, which starts")):
        assert re.search(rf"test_scratch.py::{name} {what}.* but is not marked engine: mark it", out), (name, out[-3000:])
    for name in ("test_unmarked_local_study_may", "test_marked_may"):
        assert f"PASSED test_scratch.py::{name}" in out, out[-3000:]


def test_the_repos_engine_tests_are_marked_where_they_are_written():
    """The modules and tests that start an engine carry the marker in their own source."""
    marked = {"envs/test_twin_verl_vllm.py", "envs/test_twin_vllm_difficulty.py", "pipeline/test_pipeline_verl_cpu.py",
              "cluster/test_cluster_slurm.py"}
    for name in marked:
        assert "pytest.mark.engine]" in (REPO / "tests" / name).read_text(), name
    bench = (REPO / "tests" / "benchmarks" / "test_benchmarks.py").read_text()
    assert re.search(r"@pytest.mark.engine.*\ndef test_backends_agree_quick", bench), "test_backends_agree_quick"


# --- the suite's layout -----------------------------------------------------------------------

TESTS_DIR = REPO / "tests"
# Folders of the suite that are no room of src/isocompute: the end-to-end Snakemake runs, the
# environments and the twin, the benchmark scripts, the project's own checks, the helpers.
SUITE_ROOMS = {"pipeline", "envs", "benchmarks", "project", "support"}


def _suite_files(pattern: str) -> list[Path]:
    return sorted(p for p in TESTS_DIR.rglob(pattern) if "math_verify_0_9_0" not in p.parts)


def test_the_suite_mirrors_the_rooms_of_the_package():
    """A test module sits at the top (a top-level module's tests), in a folder named after a
    package of src/isocompute (its first part: tests/train/verl/ for train/backends/verl/), or
    in one of the suite's own rooms."""
    packages = {p.parent.name for p in (REPO / "src" / "isocompute").glob("*/__init__.py")}
    folders = {p.parent.relative_to(TESTS_DIR) for p in _suite_files("test_*.py")}
    assert Path(".") in folders and Path("pipeline") in folders, folders
    stray = [str(f) for f in folders if f != Path(".") and f.parts[0] not in packages | SUITE_ROOMS]
    assert stray == [], f"tests/ folders that name no package of src/isocompute: {stray}"


def test_test_module_names_are_unique_in_the_suite():
    # pytest imports a test module of a folder without __init__.py by its file name (rootdir
    # prepend mode): two files of one name in two folders fail to import.
    names = [p.name for p in _suite_files("*.py") if p.name != "conftest.py" and "support" not in p.parts]
    assert sorted({n for n in names if names.count(n) > 1}) == []


def test_no_module_imports_a_conftest_by_name():
    """pytest imports each folder's conftest.py as `conftest`, one after another: `from conftest
    import X` would read whichever it imported last. Helpers are imported from support."""
    importers = [str(p.relative_to(REPO)) for p in _suite_files("*.py")
                 if re.search(r"^\s*(from conftest import|import conftest\b)", p.read_text(), flags=re.M)]
    assert importers == []
