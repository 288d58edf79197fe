"""Shared fixtures: the repo root, and a tiny config that runs the real
pipeline stages in seconds on 2 cores."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent

# Small but real: a pool of 5 families, a model pretrained for a few seconds,
# 16 samples per problem, small validation sets.
TINY_CONFIG = {
    "experiment": "tiny",
    "seed": 0,
    "pool": {"n_problems": 300, "instruction": ""},
    "base_model": {"hidden_size": 32, "num_layers": 1, "num_heads": 2, "intermediate_size": 64,
                   "corpus_size": 4000, "pretrain_steps": 60, "pretrain_batch_size": 64,
                   "pretrain_threads": 1},
    "difficulty": {"samples": 16, "extremely_hard_samples": 24},
    "sampling": {"batch_size": 512, "chunk_size": 128},
    # A seconds-pretrained model solves little, so the tiny study widens Easy
    # to "at least one of 16 correct" to keep both splits populated.
    "splits": {"names": ["easy", "hard"], "val_size": 4, "bands": {"easy": [0.05, 1.0]}},
}


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
    seconds its whole process group (jobs, and a verl job's Ray processes) is killed."""
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


def make_study_dir(path: Path) -> Path:
    """A scratch study directory with the repo's config/ and workflow/ (for the report)."""
    shutil.copytree(REPO / "config", path / "config")
    shutil.copytree(REPO / "workflow", path / "workflow")
    return path


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return make_study_dir(tmp_path)


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
