"""The suite's helpers, imported by name: `from support import REPO, run_snakemake, ...`
(pyproject's `pythonpath = ["tests"]` puts tests/ on sys.path; the verl backend's helpers
are in support.verl). The hooks and fixtures are in the conftest.py files, which no module
imports: pytest imports each folder's conftest.py as `conftest`, so `from conftest import`
would read whichever one it imported last.

The repo root, a tiny config that runs the real pipeline stages in seconds on 2 cores,
Snakemake runs and study folders, and the guards of the two tiers: the helpers here that
do real work (run_snakemake without -n, require_slow for the others) refuse to run in a
test not marked slow, and those that start an engine (require_engine) in a test not marked
engine, with an error that says so (tests/conftest.py: the tiers and the two workers)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import socket
import subprocess
import sys
from base64 import urlsafe_b64decode, urlsafe_b64encode
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent

# The tiny study (config/tiny.yaml, whose comments say why it is sized so): small but real, the
# real pipeline stages in seconds on 2 cores.
TINY_CONFIG = yaml.safe_load((REPO / "config" / "tiny.yaml").read_text())

# The data stages of TINY_CONFIG: pool -> base model -> difficulty -> splits -> Fig. 2
# (built once per session by tests/conftest.py's tiny_stages fixture).
TINY_DATA_TARGETS = ("results/tiny/splits/easy/train.parquet", "results/tiny/figures/fig2_difficulty.png")


# --- the guards of the two tiers -----------------------------------------------------------

# The test being set up, run or torn down (a module fixture runs in its first test's setup):
# tests/conftest.py's pytest_runtest_protocol sets it.
CURRENT: dict = {"item": None}

# Snakemake options that schedule no job: a run with one of them is no real work.
_NO_JOBS = frozenset({"-n", "--dry-run", "--dryrun", "--unlock", "--lint", "--list-rules", "-l", "--summary",
                      "-S", "--detailed-summary", "-D", "--dag", "--rulegraph", "--filegraph",
                      "--list-target-rules", "--version"})


def require_engine(what: str) -> None:
    """Stop a test not marked engine before it does `what` (starts verl, vLLM, Ray or SLURM): the
    two-worker scheduler runs the engine tests one after another on one worker only when they
    are marked, and an unmarked one would share the cores with the other worker unnoticed."""
    item = CURRENT["item"]
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


def require_slow(what: str) -> None:
    """Stop a test not marked slow before it does `what` (real stages, training, verl, vLLM,
    SLURM, a benchmark): such work belongs to `make test`, not to the fast tier `make check`."""
    item = CURRENT["item"]
    if item is not None and item.get_closest_marker("slow") is None:
        pytest.fail(f"{item.nodeid} {what} but is not marked slow: mark it slow (@pytest.mark.slow on the test "
                    "or pytestmark = pytest.mark.slow in its module), so that `make check` (pytest -m \"not slow\") "
                    "leaves it to `make test`", pytrace=False)


BENCHMARKS = REPO / "benchmarks"


def run_benchmark(script: str, *args: str, returncode: int = 0, timeout: float = 600,
                  cwd: Path = REPO) -> subprocess.CompletedProcess:
    """`benchmarks/<script> args` run as a user runs it (a subprocess from `cwd`, by default the
    repo root, this checkout's src/ first), which must exit with `returncode`: no test imports a benchmark, whose
    logic a test rests on lives in the package (tests/project/test_architecture.py keeps it so).
    A benchmark is real work (require_slow); one that says it starts an engine (its line
    `STARTS_ENGINES = "..."`) runs only in a test marked engine (require_engine)."""
    require_slow(f"runs the benchmark {script}")
    engines = re.search(r"^STARTS_ENGINES = \"(.+)\"", (BENCHMARKS / script).read_text(), flags=re.M)
    if engines:
        require_engine(f"runs the benchmark {script}, which starts {engines.group(1)}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(BENCHMARKS / script), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == returncode, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def is_dry_run(args) -> bool:
    """Whether snakemake arguments `args` schedule no job (a dry run, --unlock, a summary, ...)."""
    return any(str(a) in _NO_JOBS for a in args)


# --- the package index ---------------------------------------------------------------------

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


# --- Snakemake runs and study folders ---------------------------------------------------

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
