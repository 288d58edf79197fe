"""The CPU twin of the cluster environment (envs/cpu-twin.sh) for the tests that run the
cluster stack for real: vLLM's CPU build, verl 0.9.1, torch 2.11.0, transformers 5.9.0,
Snakemake, in CPython 3.12, cached under ~/.cache/isocompute/twin-<key>.

`make test` builds it first (or finds it cached) and passes its python as
ISOCOMPUTE_TWIN_PYTHON with ISOCOMPUTE_TWIN_REQUIRED=1, so there a missing twin fails the
tests that need it instead of skipping them. A plain pytest finds a twin already built for
this checkout's lock, and skips (saying `make twin`) when there is none.

    from twin_env import require_twin, twin_env
    python = require_twin()
    subprocess.run([python.parent / "isocompute", ...], env=twin_env())
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from support import REPO

BUILD = REPO / "envs" / "cpu-twin.sh"


def twin_dir() -> Path:
    """Where this checkout's twin is, or would be (the script names it; it builds nothing)."""
    out = subprocess.run(["bash", str(BUILD), "--path"], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def twin_python() -> Path | None:
    """The twin's python: $ISOCOMPUTE_TWIN_PYTHON, else this lock's twin when complete, else None."""
    given = os.environ.get("ISOCOMPUTE_TWIN_PYTHON")
    if given:
        return Path(given)
    where = twin_dir()
    return where / "bin" / "python" if (where / ".complete").exists() else None


def require_twin() -> Path:
    """The twin's python, or skip -- or fail, under `make test` (ISOCOMPUTE_TWIN_REQUIRED=1)."""
    python = twin_python()
    if python is not None and python.exists():
        return python
    why = (f"no CPU twin of the cluster environment ({python or twin_dir()} is not built): "
           "`make twin` builds it (bash envs/cpu-twin.sh)")
    if os.environ.get("ISOCOMPUTE_TWIN_REQUIRED") == "1":
        pytest.fail(why)
    pytest.skip(why)


def twin_env(src: Path = REPO / "src", **extra: str) -> dict[str, str]:
    """The environment of a twin command: its bin first on PATH (isocompute, snakemake,
    python), this checkout's src on PYTHONPATH (the twin has no isocompute of its own)."""
    python = require_twin()
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join([str(python.parent), env.get("PATH", "")])
    env["PYTHONPATH"] = str(src)
    env["VIRTUAL_ENV"] = str(python.parent.parent)
    env.update(extra)
    return env


def run_twin_study(work: Path, config: dict, target: str, timeout_s: int, logs) -> float:
    """Snakemake, in the twin, builds `target` of the study `config` in `work`; returns the
    seconds it took. On failure, raises with Snakemake's stderr and the tails of `logs(work)`."""
    from support import require_engine, write_config

    require_engine("runs a study in the CPU twin (vLLM, or verl with Ray and vLLM)")
    python = require_twin()
    cfg = write_config(work, config)
    cmd = [str(python.parent / "snakemake"), "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
           target, "--cores", "2", "--configfile", str(cfg)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=work, env=twin_env(), capture_output=True, text=True, timeout=timeout_s,
                          start_new_session=True)
    if proc.returncode:
        tails = "\n".join(f"== {p}\n{p.read_text(errors='replace')[-3000:]}" for p in logs(work) if p.is_file())
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stderr[-3000:]}\n{tails}")
    return time.perf_counter() - start
