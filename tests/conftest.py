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


def run_snakemake(workdir: Path, *args: str, check: bool = True, env_extra: dict | None = None):
    """Run snakemake on the repo's Snakefile with results under `workdir`."""
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", **(env_extra or {})}
    cmd = [str(VENV_BIN / "snakemake"), "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
           *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=workdir)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}")
    return proc


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
