"""Shared fixtures: the repo root, a tiny config that runs the real pipeline
stages in seconds on 2 cores, and the two tiers of the suite.

The tiers: `make check` runs `pytest -m "not slow"`, `make test` everything.
A test that runs Snakemake on real stages (not a dry run), trains, starts verl,
vLLM or SLURM, or runs a benchmark is marked slow. The helpers here that do such
work (run_snakemake without -n, require_slow for the others) refuse to run in a
test not marked slow, with an error that says so; tests that use the session's
pre-built tiny study (`tiny_stages`) are marked slow at collection."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
from base64 import urlsafe_b64decode, urlsafe_b64encode
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]

# math-verify's own test files, vendored as data (tests/grading/math_verify_0_9_0/README.md):
# read by tests/grading/math_verify_suite.py, never collected. (A conftest.py of their own
# would shadow this one: the suite's modules import `conftest` by name.)
collect_ignore_glob = ["grading/math_verify_0_9_0/*"]
VENV_BIN = Path(sys.executable).parent

# Small but real: a pool of 5 families, a model pretrained for a few seconds,
# 16 samples per problem, small validation sets. 300 pretraining steps (3 s): at 60 the
# model wrote noise, and its "easy" problems were the digits inside that noise the grader
# used to read as a final number (grader version 5 reads none: avg@16 0.000, no Easy split);
# at 300 it writes boxed answers and solves 0.7% of its samples (Easy: 23 + 4 problems).
TINY_CONFIG = {
    "experiment": "tiny",
    "seed": 0,
    "pool": {"n_problems": 300, "instruction": ""},
    "base_model": {"hidden_size": 32, "num_layers": 1, "num_heads": 2, "intermediate_size": 64,
                   "corpus_size": 4000, "pretrain_steps": 300, "pretrain_batch_size": 64,
                   "pretrain_threads": 1},
    "difficulty": {"samples": 16, "extremely_hard_samples": 24},
    "sampling": {"batch_size": 512, "chunk_size": 128},
    # A seconds-pretrained model solves little, so the tiny study widens Easy
    # to "at least one of 16 correct" to keep both splits populated.
    "splits": {"names": ["easy", "hard"], "val_size": 4, "bands": {"easy": [0.05, 1.0]}},
}


# --- the two tiers ------------------------------------------------------------------------

# The test being set up, run or torn down (a module fixture runs in its first test's setup).
_CURRENT: dict = {"item": None}

# Fixtures whose users are slow tests whatever they do themselves: marked at collection
# (the session's pre-built tiny study; test_cluster_slurm's one-node SLURM cluster).
SLOW_FIXTURES = frozenset({"tiny_stages", "slurm_cluster"})

# Snakemake options that schedule no job: a run with one of them is no real work.
_NO_JOBS = frozenset({"-n", "--dry-run", "--dryrun", "--unlock", "--lint", "--list-rules", "-l", "--summary",
                      "-S", "--detailed-summary", "-D", "--dag", "--rulegraph", "--filegraph",
                      "--list-target-rules", "--version"})


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _CURRENT["item"] = item
    try:
        return (yield)
    finally:
        _CURRENT["item"] = None


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
# The launch helpers (run_snakemake on a verl or vLLM study, twin_env.run_twin_study,
# slurm/cluster.py's LocalSlurm.start, test_benchmarks' run_benchmark of a benchmark that says
# STARTS_ENGINES) refuse to start an engine in a test not so marked (require_engine).
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


def require_engine(what: str) -> None:
    """Stop a test not marked engine before it does `what` (starts verl, vLLM, Ray or SLURM): the
    two-worker scheduler runs the engine tests one after another on one worker only when they
    are marked, and an unmarked one would share the cores with the other worker unnoticed."""
    item = _CURRENT["item"]
    if item is not None and item.get_closest_marker("engine") is None:
        pytest.fail(f"{item.nodeid} {what} but is not marked engine: mark it (@pytest.mark.engine on the test or "
                    "pytestmark = pytest.mark.engine in its module), so that the two-worker scheduler runs it "
                    "with the other engine tests on one worker (tests/conftest.py)", pytrace=False)


def study_engines(workdir: Path, args) -> str | None:
    """The engines a snakemake run `args` in `workdir` starts, from its --configfile files and
    options (train.backend verl: verl and Ray; sampling.backend vllm: vLLM; the SLURM executor);
    None when it starts none."""
    args, engines = [str(a) for a in args], []
    sections: dict = {}
    for i, arg in enumerate(args):
        if arg in ("--configfile", "--configfiles"):
            for path in args[i + 1:]:
                if path.startswith("-"):
                    break
                if (workdir / path).is_file():
                    sections.update(yaml.safe_load((workdir / path).read_text()) or {})
    if (sections.get("train") or {}).get("backend") == "verl":
        engines.append("verl and Ray")
    if (sections.get("sampling") or {}).get("backend") == "vllm":
        engines.append("vLLM")
    if any(a in ("--executor", "-e") for a in args) and "slurm" in args:
        engines.append("SLURM")
    return ", ".join(engines) or None


# The hosts pip and uv install from: PyPI's pages and its files.
INDEX_HOSTS = ("pypi.org", "files.pythonhosted.org")


def unreachable_host(*hosts: str) -> str | None:
    """The first of `hosts` this machine cannot open an HTTPS connection to ("host: why"), or None."""
    for host in hosts:
        try:
            socket.create_connection((host, 443), timeout=15).close()
        except OSError as exc:
            return f"{host}: {exc}"
    return None


def require_hosts(what: str, *hosts: str) -> None:
    """Skip, naming the host, when one of `hosts` (default: the package index's) cannot be reached:
    a missing machine feature. Once they can, whatever fails is a failure, with its message --
    a resolver error, a missing page, a yanked pin -- never a skip."""
    if (down := unreachable_host(*(hosts or INDEX_HOSTS))) is not None:
        pytest.skip(f"{what}: this machine cannot reach {down}")


def require_slow(what: str) -> None:
    """Stop a test not marked slow before it does `what` (real stages, training, verl, vLLM,
    SLURM, a benchmark): such work belongs to `make test`, not to the fast tier `make check`."""
    item = _CURRENT["item"]
    if item is not None and item.get_closest_marker("slow") is None:
        pytest.fail(f"{item.nodeid} {what} but is not marked slow: mark it slow (@pytest.mark.slow on the test "
                    "or pytestmark = pytest.mark.slow in its module), so that `make check` (pytest -m \"not slow\") "
                    "leaves it to `make test`", pytrace=False)


def is_dry_run(args) -> bool:
    """Whether snakemake arguments `args` schedule no job (a dry run, --unlock, a summary, ...)."""
    return any(str(a) in _NO_JOBS for a in args)


def snakemake_command(workdir: Path, *args: str, env_extra: dict | None = None) -> tuple[list[str], dict]:
    """The command line and environment that run snakemake on the repo's Snakefile in `workdir`."""
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", **(env_extra or {})}
    cmd = [str(VENV_BIN / "snakemake"), "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
           *args]
    return cmd, env


def job_counts(output: str) -> dict[str, int]:
    """Rule -> job count from the 'Job stats' table of a snakemake (dry) run."""
    counts, table = {}, output.split("Job stats:")[-1].splitlines()
    for line in table[3:]:
        parts = line.split()
        if len(parts) != 2 or parts[0] == "total":
            break
        counts[parts[0]] = int(parts[1])
    return counts


def run_snakemake(workdir: Path, *args: str, check: bool = True, env_extra: dict | None = None,
                  timeout: float | None = None):
    """Run snakemake on the repo's Snakefile with results under `workdir`; past `timeout`
    seconds its whole process group (jobs, and a verl job's Ray processes) is killed. A run
    that is not a dry run is real work: only a test marked slow may ask for one."""
    if not is_dry_run(args):
        require_slow("runs snakemake on real stages (not a dry run)")
        engines = study_engines(Path(workdir), args)
        if engines:
            require_engine(f"runs snakemake on a study that starts {engines}")
    cmd, env = snakemake_command(workdir, *args, env_extra=env_extra)
    if timeout is not None:
        return _run_bounded(cmd, env, workdir, timeout, check)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=workdir)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}")
    return proc


def _run_bounded(cmd, env, workdir, timeout, check):
    import signal

    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=workdir,
                          start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise AssertionError(f"snakemake killed after {timeout:.0f} s:\n{out[-4000:]}\n{err[-6000:]}") from None
    done = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    if check and done.returncode != 0:
        raise AssertionError(f"snakemake failed ({done.returncode}):\n{out[-4000:]}\n{err[-6000:]}")
    return done


def workflow_config_error(path: Path) -> str:
    """In process, what the Snakefile checks of its --configfile `path` before any job
    (rules/common.smk: the file read strictly, then check_config; rules/common_train.smk:
    check_study), as the one line it then prints; '' when the config passes. Run it in the
    study folder (a config's relative paths are the study's). Tests that call this keep a
    few cases through `snakemake -n`, which tie it to the Snakefile."""
    from isocompute.config import check_config, read_config_file
    from isocompute.errors import ConfigError
    from isocompute.train.backends import check_study

    try:
        check_study(check_config(read_config_file(path)))
    except ConfigError as err:
        return f"isocompute config error: {err}"
    return ""


def load_lock_tool():
    """envs/lock.py (a script beside the env files, not a package) as a module."""
    spec = importlib.util.spec_from_file_location("envs_lock", REPO / "envs" / "lock.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_study_dir(path: Path) -> Path:
    """A scratch study directory with the repo's config/ and workflow/ (for the report)."""
    shutil.copytree(REPO / "config", path / "config")
    shutil.copytree(REPO / "workflow", path / "workflow")
    return path


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return make_study_dir(tmp_path)


# --- one pre-built tiny study per session -----------------------------------------------

# The data stages of TINY_CONFIG: pool -> base model -> difficulty -> splits -> Fig. 2.
TINY_DATA_TARGETS = ("results/tiny/splits/easy/train.parquet", "results/tiny/figures/fig2_difficulty.png")


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


def seed_study(work: Path, stages: Path, experiment: str = "tiny") -> Path:
    """Copy the data stages built in `stages` (the tiny_stages fixture) into study folder
    `work` as experiment `experiment`, with Snakemake's records of them, so that Snakemake
    finds them up to date: copy2 keeps the files' times (an output newer than its inputs)
    and the records (.snakemake/metadata: the params, code and inputs each output was made
    with; paths renamed to the experiment) let the params trigger rerun just what a study's
    config changes (a difficulty or splits param, other split names) and what follows it."""
    shutil.copytree(stages / "results" / "tiny", work / "results" / experiment, symlinks=True)
    records = work / ".snakemake" / "metadata"
    records.mkdir(parents=True, exist_ok=True)
    old, new = "results/tiny/", f"results/{experiment}/"
    for record in (stages / ".snakemake" / "metadata").iterdir():
        path = urlsafe_b64decode(record.name).decode()
        assert path.startswith(old), f"{record}: a Snakemake record of {path}, outside {old}"
        name = urlsafe_b64encode((new + path[len(old):]).encode()).decode()
        (records / name).write_text(record.read_text().replace(old, new))
    return work


def write_config(workdir: Path, config: dict) -> Path:
    path = workdir / "config" / "test.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


# --- the verl backend (test_verl_*.py, test_cluster_checkpoints.py) -------------------
# Imported where used, so that test files that need none of this import nothing of it.

def verl_cfg(**over) -> dict:
    """A checked config for train.backend verl, with sections updated by `over`."""
    from isocompute.config import check_config

    cfg = {"experiment": "t", "splits": {"names": ["easy", "hard", "dual"]}, "train": {"backend": "verl"}}
    for key, value in over.items():
        cfg[key] = {**cfg.get(key, {}), **value} if isinstance(value, dict) else value
    return check_config(cfg)


def overrides_dict(overrides: list[str]) -> dict:
    return dict(o.split("=", 1) for o in overrides)


def fake_checkpoint(run: Path, step: int) -> None:
    """A complete verl checkpoint of `step` in run folder `run`, as verl's checkpoint manager marks it."""
    from isocompute.train.backends.verl.files import LATEST_CHECKPOINT_FILE

    (run / "checkpoints" / f"global_step_{step}" / "actor").mkdir(parents=True, exist_ok=True)
    (run / "checkpoints" / LATEST_CHECKPOINT_FILE).write_text(str(step))
