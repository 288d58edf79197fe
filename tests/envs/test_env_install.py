"""The cluster's install path, run here: the analysis environment's post-deploy script
(envs/analysis.post-deploy.sh, which calls envs/install-env.sh) run the way Snakemake runs it
after creating the conda env from envs/analysis.yaml -- a copy of the script next to the new
environment, its shebang's interpreter, that environment's bin first on PATH, in the directory
Snakemake was started in (the repository root) -- into a CPython 3.12 environment (uv's, with
pip, standing in for conda's python=3.12 and pip). It installs the committed lock with its
hashes required, then this checkout, editable.

Every install runs with pip's and uv's caches empty and private to it, as on a new machine or a
cluster node installing the env for the first time: a wheel a developer's pip once built from an
sdist cannot stand in for the build (it hid an unhashed build-tool fetch once).

Slow: it downloads the analysis lock from the package index (about a minute). Only the analysis
environment (CPU only, small); the verl one is multi-GB of CUDA wheels. Without a CPython 3.12
the tests skip, naming it (as test_twin_env.py does); where the index's host cannot be reached
they skip too, naming it; any other failure of the install fails them, with pip's message."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import REPO, load_lock_tool, require_hosts, require_slow

pytestmark = pytest.mark.slow

NAME = "analysis"
LOCK = REPO / "envs" / f"{NAME}.lock.txt"
# pip settings of this machine (a config file, find-links, extra indexes, constraints) that a
# cluster's conda env would not have: the install sees the package index and the lock only
PIP_MACHINE_VARS = ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CONSTRAINT", "PIP_REQUIRE_VIRTUALENV",
                    "PIP_NO_INDEX", "PIP_CONFIG_FILE")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_pins() -> dict[str, str]:
    """{name: version} of the lock this module installs (envs/lock.py's parser)."""
    return {package: version for package, version in load_lock_tool().locked_hashes(NAME)}


def _is_cpython_312(python: str) -> bool:
    try:
        out = subprocess.run([python, "-c", "import sys; print(sys.implementation.name, *sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.split() == ["cpython", "3", "12"]


def _uv() -> str:
    here = Path(sys.executable).parent / "uv"
    return os.environ.get("UV") or shutil.which("uv") or str(here)


def find_python312() -> str | None:
    """A CPython 3.12 (the cluster environments' Python): $PYTHON312, uv's (installed, none
    downloaded), python3.12 on PATH, pyenv's, as envs/cpu-twin.sh looks; None when none runs."""
    candidates = [os.environ.get("PYTHON312")]
    found = subprocess.run([_uv(), "python", "find", "3.12"], capture_output=True, text=True,
                           env=dict(os.environ, UV_PYTHON_DOWNLOADS="never"))
    candidates.append(found.stdout.strip() if found.returncode == 0 else None)
    candidates.append(shutil.which("python3.12"))
    root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates += sorted(glob.glob(f"{root}/versions/3.12*/bin/python3.12"))
    return next((c for c in candidates if c and _is_cpython_312(c)), None)


def require_index() -> None:
    """Skip when the package index cannot be reached (support.require_hosts), and only then."""
    require_hosts(f"envs/{NAME}.lock.txt not installed")


def private_caches(where: Path) -> dict[str, str]:
    """pip's and uv's caches of the environment at `where`, beside it: new and empty when
    conda_like_env made it, what a new machine starts with."""
    return {"PIP_CACHE_DIR": f"{where}.pip-cache", "UV_CACHE_DIR": f"{where}.uv-cache"}


def conda_like_env(python: str, where: Path) -> Path:
    """A new CPython 3.12 environment with pip (what analysis.yaml asks of conda) at `where`,
    made with an empty uv cache of its own."""
    caches = private_caches(where)
    for folder in caches.values():
        Path(folder).mkdir(parents=True)
    subprocess.run([_uv(), "venv", "-q", "--seed", "--python", python, str(where)], check=True,
                   env=dict(os.environ, UV_PYTHON_DOWNLOADS="never", **caches), capture_output=True, text=True)
    return where


def activated(env_dir: Path) -> dict[str, str]:
    """The environment of a command in `env_dir` activated as conda activates one: its bin
    first on PATH, CONDA_PREFIX set; nothing of the test venv (PYTHONPATH) leaks in; pip's and
    uv's caches the env's own, empty when it was made (conda_like_env), none of this machine's."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PIP_NO_CACHE_DIR") + PIP_MACHINE_VARS}
    env["PATH"] = os.pathsep.join([str(env_dir / "bin"), env.get("PATH", "")])
    env["CONDA_PREFIX"] = env["VIRTUAL_ENV"] = str(env_dir)
    env["PIP_CONFIG_FILE"] = os.devnull
    env.update(private_caches(env_dir))
    return env


def run_post_deploy(env_dir: Path, repo: Path) -> subprocess.CompletedProcess:
    """What Snakemake's Env.create does after `conda env create`: copy <name>.post-deploy.sh to
    <env>.post-deploy.sh and run it with its shebang's interpreter, in the activated env, from
    the directory snakemake runs in (snakemake/deployment/conda.py, execute_deployment_script)."""
    script = repo / "envs" / f"{NAME}.post-deploy.sh"
    copy = Path(f"{env_dir}.post-deploy.sh")
    shutil.copyfile(script, copy)
    first = script.read_text().splitlines()[0]
    interpreter = first[2:].strip() if first.startswith("#!") else "sh"
    return subprocess.run(f"{interpreter} {copy}", shell=True, cwd=repo, env=activated(env_dir),
                          capture_output=True, text=True, timeout=1800)


@pytest.fixture(scope="module")
def python312() -> str:
    python = find_python312()
    if python is None:
        pytest.skip("no CPython 3.12 (the cluster environments' Python) found: set PYTHON312=/path/to/python3.12, "
                    "or `uv python install 3.12`")
    return python


@pytest.fixture(scope="module")
def installed(python312, tmp_path_factory) -> Path:
    """The analysis environment, built by its post-deploy script from the committed lock."""
    require_slow("installs the analysis environment from the package index")
    require_index()
    env_dir = conda_like_env(python312, tmp_path_factory.mktemp("conda") / "analysis-env")
    assert not any(Path(private_caches(env_dir)["PIP_CACHE_DIR"]).iterdir()), "the install's pip cache is not empty"
    proc = run_post_deploy(env_dir, REPO)
    assert proc.returncode == 0, f"analysis.post-deploy.sh failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    assert "--require-hashes" in (REPO / "envs" / "install-env.sh").read_text()
    env_dir.joinpath("post-deploy.log").write_text(proc.stdout + proc.stderr)
    return env_dir


def in_env(env_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(env_dir / "bin" / "python"), *args], cwd="/", env=activated(env_dir),
                          capture_output=True, text=True, timeout=300)


def test_the_package_is_built_by_the_locks_setuptools_with_nothing_fetched(installed):
    """Every build runs without build isolation: the lock's sdist-only pins (antlr4's runtime),
    built here from source since the cache was empty, and the editable install of isocompute;
    their build backend is the setuptools the lock installed, hash-checked, not one pip fetches
    unhashed into an isolated build (pip prints "Installing build dependencies" when it does)."""
    log = (installed / "post-deploy.log").read_text()
    assert "Installing build dependencies" not in log, log[-2000:]
    assert re.search(r"Building wheel for antlr4-python3-runtime", log), "antlr4's sdist was not built here:\n" + log[-2000:]
    out = in_env(installed, "-c", "import importlib.metadata as m; print(m.version('setuptools'))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == lock_pins()["setuptools"]


def test_the_environment_is_cpython_312(installed):
    out = in_env(installed, "-c", "import sys; print(sys.implementation.name, sys.version_info[:2], sys.prefix)")
    assert out.stdout.split(maxsplit=3)[:3] == ["cpython", "(3,", "12)"], out.stdout
    assert Path(out.stdout.split(maxsplit=3)[3].strip()) == installed


def test_the_installed_versions_are_the_locks_pins(installed):
    probe = ("import importlib.metadata as m, json\n"
             "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))")
    out = in_env(installed, "-c", probe)
    assert out.returncode == 0, out.stderr
    got = {canonical(k): v for k, v in json.loads(out.stdout).items()}
    pins = lock_pins()
    differ = {n: (v, got.get(n)) for n, v in pins.items() if got.get(n) != v}
    assert not differ, f"installed versions differ from envs/{NAME}.lock.txt (lock, installed): {differ}"
    # nothing beyond the lock but pip (conda's) and the checkout
    assert set(got) - set(pins) == {"pip", "isocompute"}, sorted(set(got) - set(pins))


def test_pip_check_is_clean_but_for_what_the_analysis_env_leaves_out(installed):
    """pip check: every locked package has what it requires. isocompute's own metadata
    (pyproject.toml's dependencies) names the GPU stack, which the analysis env deliberately
    lacks: those, and only those, are reported missing."""
    import tomllib

    from packaging.requirements import Requirement

    out = in_env(installed, "-m", "pip", "check")
    lines = [line for line in out.stdout.splitlines() if line.strip() and "No broken requirements" not in line]
    others = [line for line in lines if not line.startswith("isocompute ")]
    assert not others, "pip check:\n" + "\n".join(others)
    missing = {canonical(m[1]) for line in lines if (m := re.search(r"requires (\S+), which is not installed", line))}
    assert len(missing) == len(lines), "pip check: isocompute has other problems:\n" + "\n".join(lines)
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert missing == {canonical(Requirement(d).name) for d in project} - set(lock_pins())


def test_isocompute_is_this_checkout(installed):
    out = in_env(installed, "-c", "import isocompute, importlib.metadata as m; print(isocompute.__file__);"
                 " print(m.distribution('isocompute').read_text('direct_url.json'))")
    assert out.returncode == 0, out.stderr
    where, direct_url = out.stdout.split("\n", 1)
    assert Path(where).resolve().is_relative_to((REPO / "src").resolve()), where
    assert json.loads(direct_url)["dir_info"] == {"editable": True}


def test_a_lock_with_one_hash_altered_fails_the_install(python312, tmp_path):
    """Hashes are required, not only recorded: one altered hash in a copy of the checkout's lock
    (a package with a single artifact, so the altered hash is the one pip must match) stops the
    post-deploy script before anything, isocompute included, is installed."""
    require_slow("installs from the package index")
    require_index()
    repo = tmp_path / "repo"
    shutil.copytree(REPO / "envs", repo / "envs")
    shutil.copytree(REPO / "src", repo / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy(REPO / "pyproject.toml", repo / "pyproject.toml")
    text = LOCK.read_text()
    single = re.search(r"^(?P<pin>[A-Za-z0-9_.-]+==\S+) \\\n\s+--hash=sha256:(?P<sha>[0-9a-f]{64})\n(?!\s+--hash)",
                       text, re.M)
    assert single, f"envs/{NAME}.lock.txt has no package with a single hash"
    altered = single["sha"][:-1] + ("0" if single["sha"][-1] != "0" else "1")
    (repo / "envs" / f"{NAME}.lock.txt").write_text(text.replace(single["sha"], altered, 1))
    env_dir = conda_like_env(python312, tmp_path / "analysis-env")
    proc = run_post_deploy(env_dir, repo)
    assert proc.returncode != 0, f"the install passed with an altered hash for {single['pin']}"
    assert "DO NOT MATCH THE HASHES" in proc.stderr and altered in proc.stderr, proc.stderr[-3000:]
    assert in_env(env_dir, "-c", "import isocompute").returncode != 0, "isocompute installed after the failure"
