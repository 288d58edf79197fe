"""The suite's hooks and shared fixtures: the two tiers, the two workers' scheduling, and
the session's pre-built tiny study. The helpers tests import by name (REPO, TINY_CONFIG,
run_snakemake, require_slow, ...) are in tests/support/ (`from support import ...`): no
module imports a conftest.py, since pytest imports each folder's as `conftest`.

The tiers: `make check` runs `pytest -m "not slow"`, `make test` everything.
A test that runs Snakemake on real stages (not a dry run), trains, starts verl,
vLLM or SLURM, or runs a benchmark is marked slow. The helpers that do such work
(support's run_snakemake without -n, require_slow for the others) refuse to run in a
test not marked slow, with an error that says so; tests that use the session's
pre-built tiny study (`tiny_stages`) are marked slow at collection."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

import support
from support import TINY_CONFIG, TINY_DATA_TARGETS, make_study_dir, run_snakemake, write_config


# --- the two tiers ------------------------------------------------------------------------

# Fixtures whose users are slow tests whatever they do themselves: marked at collection
# (the session's pre-built tiny study; test_cluster_slurm's one-node SLURM cluster).
SLOW_FIXTURES = frozenset({"tiny_stages", "slurm_cluster"})


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """support.CURRENT is the test being set up, run or torn down (a module fixture runs in its
    first test's setup): what support's require_slow and require_engine look at."""
    support.CURRENT["item"] = item
    try:
        return (yield)
    finally:
        support.CURRENT["item"] = None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("engine") is not None and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # The engines' group first (the longest): the scheduler hands out units in this order.
        items.sort(key=lambda item: not is_engine_test(item))
        report_engine_tests(config, items)


# --- two workers (make test, make check: pytest -n 2 --dist loadscope) ----------------------

# The tests that run an engine for real, each on both cores (verl's Ray sessions, vLLM, a
# one-node SLURM cluster, the backends-agree benchmark's verl session), are marked `engine`
# where they are written (@pytest.mark.engine, or pytestmark in their module; pyproject
# registers the marker, and an engine test is slow too). With pytest-xdist they form one unit,
# run one after another on one worker while the other worker takes the rest, a module at a
# time (so that each module's fixtures are built once, by one worker). Two of them at once
# would slow each other down (each wants both cores) and start two Ray clusters side by side.
# The launch helpers (support's run_snakemake on a verl or vLLM study, envs/twin_env.py's
# run_twin_study, cluster/slurm/cluster.py's LocalSlurm.start, benchmarks/test_benchmarks.py's
# run_benchmark of a benchmark that says STARTS_ENGINES) refuse to start an engine in a test not
# so marked (support.require_engine).
#
# xdist's controller sees node ids only, never markers: each worker writes the node ids of its
# engine tests to a file of a folder the controller names in its workerinput (xdist's public
# pytest_configure_node), before it reports its collection; the scheduler reads them when it
# splits the collection into units. The unit is set by overriding LoadScopeScheduling's
# _split_scope, the method xdist's own loadfile and loadgroup schedulers override: xdist's
# public grouping (--dist loadgroup, the xdist_group marker) renames node ids on the worker
# (item._nodeid), which pytest 9 ignores (its node ids are item._id), and leaves every
# ungrouped test a unit of its own, splitting modules whose fixtures should be built once.
ENGINES = "engines"
_REPORTS_KEY = pytest.StashKey[Path]()
REPORTS_INPUT = "isocompute_engine_reports"  # the workerinput key of the reports' folder


def is_engine_test(item) -> bool:
    return item.get_closest_marker("engine") is not None


def work_unit(nodeid: str, engines) -> str:
    """What one worker runs whole: the engines' unit (`nodeid` in `engines`), or the test's module."""
    return ENGINES if nodeid in engines else nodeid.split("::", 1)[0]


def report_engine_tests(config, items) -> None:
    """On an xdist worker, write the node ids of the engine tests for the controller's scheduler."""
    folder = getattr(config, "workerinput", {}).get(REPORTS_INPUT)
    if folder is None:
        return
    import json

    path = Path(folder) / f"{os.environ['PYTEST_XDIST_WORKER']}.json"
    path.with_suffix(".tmp").write_text(json.dumps([item.nodeid for item in items if is_engine_test(item)]))
    path.with_suffix(".tmp").replace(path)


def engine_reports(config) -> Path:
    """The controller's folder for the workers' engine reports (made once, removed at the end)."""
    if _REPORTS_KEY not in config.stash:
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="isocompute-engines-"))
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
        config.stash[_REPORTS_KEY] = folder
    return config.stash[_REPORTS_KEY]


def read_engine_reports(folder: Path) -> frozenset[str]:
    """The engine tests the workers reported; an error when none did (the units would be wrong)."""
    import json

    reports = sorted(folder.glob("*.json"))
    if not reports:
        raise RuntimeError(f"no xdist worker reported its engine tests in {folder}: is tests/conftest.py's "
                           "pytest_collection_modifyitems a hook of the workers?")
    return frozenset(nodeid for path in reports for nodeid in json.loads(path.read_text()))


if importlib.util.find_spec("xdist") is not None:  # hooks pytest knows only with pytest-xdist
    def pytest_configure_node(node):
        node.workerinput[REPORTS_INPUT] = str(engine_reports(node.config))

    def pytest_xdist_make_scheduler(config, log):
        """--dist loadscope with work_unit's units, the engine tests as the workers report them."""
        from xdist.scheduler import LoadScopeScheduling

        class EnginesTogether(LoadScopeScheduling):
            engines = None

            def _split_scope(self, nodeid: str) -> str:
                if self.engines is None:  # first called once every worker has sent its collection
                    self.engines = read_engine_reports(engine_reports(config))
                return work_unit(nodeid, self.engines)

        return EnginesTogether(config, log)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return make_study_dir(tmp_path)


# --- one pre-built tiny study per session -----------------------------------------------

@pytest.fixture(scope="session")
def tiny_stages(tmp_path_factory) -> Path:
    """A study folder holding TINY_CONFIG's data stages, built by Snakemake from nothing once
    per session (with the code under test) for seed_study to copy into the end-to-end
    modules' studies. Its users are marked slow at collection. Under pytest-xdist the workers
    share one build: the first to get here builds it, under a lock, in the run's common
    temporary folder; the others wait for it and read it."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return _build_tiny_stages(tmp_path_factory.mktemp("tiny_stages"))
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent
    with FileLock(shared / "tiny_stages.lock"):
        work, done = shared / "tiny_stages", shared / "tiny_stages.done"
        if not done.exists():
            shutil.rmtree(work, ignore_errors=True)  # a build that failed: from nothing again
            _build_tiny_stages(work)
            done.touch()
    return work


def _build_tiny_stages(folder: Path) -> Path:
    work = make_study_dir(folder)
    cfg = write_config(work, TINY_CONFIG)
    run_snakemake(work, "--cores", "2", *TINY_DATA_TARGETS, "--configfile", str(cfg))
    return work
