"""The suite's two tiers: `make check` runs the tests not marked slow, `make test` all of
them; conftest's helpers that do real work refuse a test not marked slow, and the users of
the slow fixtures are marked at collection."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import REPO, is_dry_run

# A scratch suite whose conftest is this suite's (imported under another name, so that its
# hooks and helpers are one module), run by pytest in a subprocess.
CONFTEST = f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("suite_conftest", {str(REPO / "tests" / "conftest.py")!r})
suite = importlib.util.module_from_spec(spec)
sys.modules["suite_conftest"] = suite
spec.loader.exec_module(suite)
from suite_conftest import pytest_collection_modifyitems, pytest_runtest_protocol, tiny_stages  # noqa: F401
"""

TESTS = """
import pytest
from suite_conftest import require_slow, run_snakemake


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


# A scratch suite for the two-worker scheduler: two engine modules (by the names conftest
# groups) and two other modules, each with a module fixture; every fixture build and every
# test appends its worker to a log.
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


def test_two_workers_build_each_module_fixture_once_and_run_the_engines_on_one_worker(tmp_path):
    suite = tmp_path / "tests"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST.replace(
        "tiny_stages  # noqa: F401", "tiny_stages, pytest_xdist_make_scheduler  # noqa: F401"))
    modules = ("test_pipeline_verl_cpu", "test_cluster_slurm", "test_alpha", "test_beta")
    for name in modules:
        (suite / f"{name}.py").write_text(SCHEDULED)
    log = tmp_path / "log.txt"
    proc = run_scratch(tmp_path, "-n", "2", "--dist", "loadscope", "--no-loadscope-reorder", "tests",
                       env_extra={"SCRATCH_LOG": str(log)})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = [line.split() for line in log.read_text().splitlines()]
    builds = sorted(module for what, module, _ in lines if what == "build")
    assert builds == sorted(modules), builds  # each module's fixture once: no module split between workers
    workers = {module: {w for _, m, w in lines if m == module} for module in modules}
    assert all(len(w) == 1 for w in workers.values()), workers
    assert workers["test_pipeline_verl_cpu"] == workers["test_cluster_slurm"], workers  # the engines together
    assert len(set().union(*workers.values())) == 2, workers  # and both workers used


def test_every_engine_test_named_for_the_workers_exists():
    """A renamed engine module or test would leave conftest.ENGINE_TESTS matching nothing, and
    its engine runs would share the cores with the other worker's unnoticed."""
    from conftest import ENGINE_TESTS

    for prefix in ENGINE_TESTS:
        path, _, name = prefix.partition("::")
        assert (REPO / path).is_file(), prefix
        assert not name or re.search(rf"^def {re.escape(name)}", (REPO / path).read_text(), flags=re.M), prefix
