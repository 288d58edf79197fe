"""The fault table as tests: every config-knowable mistake stops `snakemake -n`
before any job, in one line naming the key, with no traceback and no file
written; a grid too large for its split stops once the splits are cut, before
any training job."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import TINY_CONFIG, make_study_dir, run_snakemake

BIN = Path(sys.executable).parent


def tiny(**sections) -> dict:
    cfg = copy.deepcopy(TINY_CONFIG)
    for key, value in sections.items():
        cfg[key] = value
    return cfg


def with_key(path: str, value) -> dict:
    """TINY_CONFIG with one dotted key set."""
    cfg = copy.deepcopy(TINY_CONFIG)
    node = cfg
    *parents, last = path.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    return cfg


GRID = {"B_p": [2], "n": [2], "B_max": 64, "C_max": 16}

# (case id, config dict or raw YAML text, what the one-line message must name)
BAD_CONFIGS = [
    ("unknown-top-level-key", tiny(trian={}), "'trian'"),
    ("unknown-nested-key", with_key("train.lr", 1e-3), "'train.lr'"),
    ("wrong-type", with_key("pool.n_problems", "many"), "'pool.n_problems'"),
    ("bad-enum", with_key("train.backend", "tpu"), "'train.backend'"),
    ("bad-lr-scaling", with_key("train.lr_scaling", "cubic"), "'train.lr_scaling'"),
    ("negative-budget", tiny(grid={"easy": {**GRID, "C_max": -4}}), "'grid.easy.C_max'"),
    ("band-reversed", with_key("splits.bands.easy", [0.6, 0.3]), "'splits.bands.easy'"),
    ("mixture-not-one", with_key("splits.mixtures", {"dual": {"easy": 0.5, "hard": 0.2}}), "'splits.mixtures.dual'"),
    ("pool-file-without-path", with_key("pool.source", "file"), "'pool.path'"),
    ("pool-path-missing", tiny(pool={"source": "file", "path": "nowhere/pool.parquet"}), "'pool.path'"),
    ("hub-pool-without-name", with_key("pool.source", "huggingface"), "'pool.name'"),
    ("model-path-missing", tiny(base_model={"source": "path", "path": "./nowhere/model"}), "'base_model.path'"),
    ("model-abs-path-missing", tiny(base_model={"source": "path", "path": "/nowhere/at/all"}), "'base_model.path'"),
    ("model-path-empty", with_key("base_model.source", "path"), "'base_model.path'"),
    ("heads-do-not-divide", with_key("base_model.num_heads", 5), "'base_model.num_heads'"),
    ("eval-k-above-samples", tiny(eval={"samples": 2, "k": 4}), "'eval.k'"),
    ("grid-all-cells-above-B_max", tiny(grid={"easy": {**GRID, "B_p": [8], "B_max": 4}}), "'grid.easy'"),
    ("grid-budget-below-every-batch", tiny(grid={"easy": {**GRID, "C_max": 2}}), "'grid.easy'"),
    ("grid-for-unbuilt-split", tiny(grid={"very_easy": GRID}), "'grid.very_easy'"),
    ("verl-batch-beyond-transfer-queue", tiny(train={"backend": "verl"}, grid={"easy": {
        "B_p": [64], "n": [2048], "B_max": 131072, "C_max": 131072}}), "'grid.easy'"),
    ("grid-missing-C_max", tiny(grid={"easy": {"B_p": [2], "n": [2], "B_max": 8}}), "'grid.easy'"),
    ("analysis-ci-out-of-range", with_key("analysis.ci", 1.5), "'analysis.ci'"),
    ("negative-seed-type", tiny(seed="zero"), "'seed'"),
    ("val-size-zero", with_key("splits.val_size", 0), "'splits.val_size'"),
    ("duplicate-section", "experiment: tiny\ntrain:\n  lr_base: 0.001\ntrain:\n  kl_coef: 0.0\n",
     "duplicate key 'train'"),
]


def write_raw(workdir: Path, content) -> Path:
    path = workdir / "config" / "bad.yaml"
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False))
    return path


@pytest.mark.parametrize("case,content,named", BAD_CONFIGS, ids=[c[0] for c in BAD_CONFIGS])
def test_bad_config_stops_before_any_job_naming_the_key(tmp_path, case, content, named):
    work = make_study_dir(tmp_path)
    cfg = write_raw(work, content)
    proc = run_snakemake(work, "-n", "--configfile", str(cfg), check=False)
    err = proc.stderr + proc.stdout
    assert proc.returncode != 0, f"{case}: dry run passed:\n{err[-2000:]}"
    line = next((ln for ln in err.splitlines() if "isocompute config error" in ln), "")
    assert named in line, f"{case}: expected one line naming {named}, got:\n{err[-2000:]}"
    assert "Traceback" not in err
    assert not (work / "results").exists() and not (work / ".snakemake" / "metadata").exists()


def test_yaml_syntax_error_is_named_with_file_and_line(tmp_path):
    """Snakemake parses --configfile itself and names no line; `isocompute check-config` does."""
    cfg = write_raw(tmp_path.joinpath("config").mkdir() or tmp_path, "experiment: x\ntrain:\n  lr_base: [1, 2\n")
    proc = subprocess.run([str(BIN / "isocompute"), "check-config", str(cfg)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert f"{cfg}: YAML syntax error at line 4" in proc.stderr and "Traceback" not in proc.stderr


def test_check_config_accepts_the_embedded_default():
    repo = Path(__file__).resolve().parents[1]
    proc = subprocess.run([str(BIN / "isocompute"), "check-config", "config/config.yaml"], cwd=repo,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "23 training runs" in proc.stdout, proc.stderr


@pytest.mark.slow
def test_grid_larger_than_a_split_stops_before_any_training_job(tmp_path):
    """B_p above the split's training problems is known once the splits are cut: the
    check_grid job stops naming the key, and no training job runs."""
    work = make_study_dir(tmp_path)
    cfg = write_raw(work, tiny(grid={"easy": {"B_p": [4096], "n": [2], "B_max": 10 ** 6, "C_max": 8192}}))
    proc = run_snakemake(work, "--cores", "2", "--configfile", str(cfg), check=False)
    assert proc.returncode != 0
    log = (work / "results" / "tiny" / "logs" / "check_grid.log").read_text()
    assert "config key 'grid.easy.B_p': B_p = 4096 exceeds the" in log
    assert (work / "results" / "tiny" / "splits" / "easy" / "train.parquet").exists()
    assert not (work / "results" / "tiny" / "runs").exists()
