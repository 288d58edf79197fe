"""The fault table as tests: every config-knowable mistake stops `snakemake -n`
before any job, in one line naming the key, with no traceback and no file
written (each case checked in process, as the Snakefile checks it, and two of
them through `snakemake -n` itself); a grid too large for its split stops once the splits are cut, before
any training job; and a study killed (SIGKILL, the whole process group) at
seeded moments in every stage, then unlocked and re-run with
--rerun-incomplete, ends with the tables of an uninterrupted run."""

from __future__ import annotations

import copy
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from pandas.testing import assert_frame_equal

from support import (REPO, TINY_CONFIG, make_study_dir, run_snakemake, seed_study, snakemake_command,
                     workflow_config_error, write_config)

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
        "B_p": [64], "n": [2048], "B_max": 131072, "C_max": 393216}}), "'grid.easy'"),
    ("schedule-below-3-evaluations", tiny(grid={"easy": {**GRID, "C_max": 4}}), "'train.eval_points_per_octave'"),
    ("schedule-starts-above-C_max", tiny(grid={"easy": GRID}, train={"eval_min_compute": 1000}),
     "'train.eval_min_compute'"),
    ("verl-cannot-honour-option", tiny(train={"backend": "verl", "zero_variance_filter": True}),
     "'train.zero_variance_filter'"),
    ("grid-missing-C_max", tiny(grid={"easy": {"B_p": [2], "n": [2], "B_max": 8}}), "'grid.easy'"),
    ("analysis-ci-out-of-range", with_key("analysis.ci", 1.5), "'analysis.ci'"),
    ("negative-seed-type", tiny(seed="zero"), "'seed'"),
    ("val-size-zero", with_key("splits.val_size", 0), "'splits.val_size'"),
    ("nan-in-yaml", "experiment: tiny\nsweep:\n  eta: .nan\n", "'sweep.eta'"),
    ("infinity-in-a-variant", "experiment: tiny\nvariants:\n  x:\n    train: {lr_base: .inf}\n"
     "    cells: [{split: easy, B_p: 2, n: 2}]\n", "'variants.x.train.lr_base'"),
    ("integral-float-budget", tiny(grid={"easy": {**GRID, "C_max": 16.0}}), "'grid.easy.C_max'"),
    ("duplicate-section", "experiment: tiny\ntrain:\n  lr_base: 0.001\ntrain:\n  kl_coef: 0.0\n",
     "duplicate key 'train'"),
]


def write_raw(workdir: Path, content) -> Path:
    path = workdir / "config" / "bad.yaml"
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False))
    return path


@pytest.mark.parametrize("case,content,named", BAD_CONFIGS, ids=[c[0] for c in BAD_CONFIGS])
def test_bad_config_stops_before_any_job_naming_the_key(tmp_path, monkeypatch, case, content, named):
    """The Snakefile's checks, in process (support.workflow_config_error): a ConfigError, in
    one line naming the key; any other exception (a traceback) fails the test."""
    work = make_study_dir(tmp_path)
    cfg = write_raw(work, content)
    monkeypatch.chdir(work)
    line = workflow_config_error(cfg)
    assert line, f"{case}: the config passed the checks"
    assert named in line and "\n" not in line, f"{case}: expected one line naming {named}, got:\n{line}"
    assert not (work / "results").exists()


# Through `snakemake -n` itself: the strict re-read of the file (rules/common.smk) and
# check_study (rules/common_train.smk: a missing file, relative to the study folder) run
# before any job, and stop it in one line.
WIRED = [c for c in BAD_CONFIGS if c[0] in ("pool-path-missing", "duplicate-section")]


@pytest.mark.parametrize("case,content,named", WIRED, ids=[c[0] for c in WIRED])
def test_snakemake_stops_on_a_bad_config_before_any_job_naming_the_key(tmp_path, case, content, named):
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
    proc = subprocess.run([str(BIN / "isocompute"), "check-config", "config/config.yaml"], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "23 training runs" in proc.stdout, proc.stderr


def test_check_config_prints_what_differs_from_the_defaults_and_layers_files(tmp_path):
    """A three-line config is named as standing alone, with the values it changes; naming the
    embedded default first layers the file over it, as two --configfile files do."""
    mine = tmp_path / "my.yaml"
    mine.write_text("experiment: mine\ntrain:\n  lr_base: 1.0e-4\n")
    alone = subprocess.run([str(BIN / "isocompute"), "check-config", str(mine)], cwd=REPO,
                           capture_output=True, text=True)
    assert alone.returncode == 0, alone.stderr
    assert "2 effective values differ" in alone.stdout and "  train.lr_base: 0.0001" in alone.stdout
    assert "the grid is empty" in alone.stdout and "stands alone" in alone.stdout
    layered = subprocess.run([str(BIN / "isocompute"), "check-config", "config/config.yaml", str(mine)],
                             cwd=REPO, capture_output=True, text=True)
    assert layered.returncode == 0 and "23 training runs" in layered.stdout, layered.stderr
    assert "  train.lr_base: 0.0001" in layered.stdout and "  splits.val_size: 100" in layered.stdout
    assert "stands alone" not in layered.stdout


@pytest.mark.slow
def test_grid_larger_than_a_split_stops_before_any_training_job(tmp_path, tiny_stages):
    """B_p above the split's training problems is known once the splits are cut: the
    check_grid job stops naming the key, and no training job runs."""
    work = seed_study(make_study_dir(tmp_path), tiny_stages)
    cfg = write_raw(work, tiny(grid={"easy": {"B_p": [4096], "n": [2], "B_max": 10 ** 6, "C_max": 3 * 8192}}))
    proc = run_snakemake(work, "--cores", "2", "--configfile", str(cfg), check=False)
    assert proc.returncode != 0
    log = (work / "results" / "tiny" / "logs" / "check_grid.log").read_text()
    assert "config key 'grid.easy.B_p': B_p = 4096 exceeds the" in log
    assert (work / "results" / "tiny" / "splits" / "easy" / "train.parquet").exists()
    assert not (work / "results" / "tiny" / "runs").exists()


# --- killed at random moments, resumed, same tables ------------------------------------

FAULT_STUDY = tiny(grid={"easy": {"B_p": [2], "n": [2, 4], "B_max": 8, "C_max": 64}},
                   # A learning rate that moves the model: a resumed run that lost its
                   # optimiser or RNG state would show in its evaluations and weights.
                   train={"eval_interval": 2, "lr_base": 1e-3, "B_ref": 8, "warmup_steps": 2},
                   eval={"samples": 4, "k": 4})
FAULT_RUNS = ("bp2_n2", "bp2_n4")  # M_max = 64 // (2 n) = 16 and 8 steps
FAULT_SEED = 14
RESULTS = Path("results") / "tiny"


def kill_points(seed: int) -> list[tuple[str, float]]:
    """(file pattern under results/tiny, delay in s): a kill once a file matching the pattern
    appears in an attempt, after the delay. One per stage with work to lose, in DAG order,
    with seeded delays (and, for training, a seeded evaluation step) so that the moments
    are pseudo-random but reproducible."""
    rng = random.Random(seed)
    return [
        ("logs/base_model.log", rng.uniform(1.0, 5.0)),  # pretraining (a directory output)
        # avg@16 sampling over the pool: a difficulty_chunk job (~4 s here, mostly its start-up;
        # logs/difficulty.log is the short merge after them, over before a later kill)
        ("logs/difficulty/part*.log", rng.uniform(0.5, 3.0)),
        # Training runs take well under a second once loaded: kill right after one of the
        # first validation dumps, before or after the checkpoint that follows it.
        (f"runs/easy/*/generations/{rng.choice([2, 4])}.jsonl", rng.uniform(0.0, 0.2)),
        ("runs/easy/*/evals.parquet", rng.uniform(0.0, 1.5)),  # scoring, collection, analysis
    ]


def appeared_since(work: Path, pattern: str, since: float) -> bool:
    return any(p.stat().st_mtime >= since for p in (work / RESULTS).glob(pattern))


def live_processes_in_group(pgid: int) -> list[str]:
    """Processes of group `pgid` that are not zombies (/proc/PID/stat: state and pgrp after the name)."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        state, _ppid, pgrp = text[text.rindex(")") + 2:].split()[:3]
        if int(pgrp) == pgid and state != "Z":
            alive.append(text[: text.rindex(")") + 1])
    return alive


def kill_at(work: Path, args: list[str], pattern: str, delay: float, log: Path, timeout: float = 300) -> None:
    """Start snakemake in its own session; once `pattern` appears, wait `delay` s and SIGKILL the group."""
    cmd, env = snakemake_command(work, *args)
    started = time.time()
    with open(log, "a") as out:
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            while not appeared_since(work, pattern, started):
                assert proc.poll() is None, f"snakemake ended ({proc.returncode}) before {pattern} appeared; see {log}"
                assert time.time() - started < timeout, f"{pattern} did not appear in {timeout} s; see {log}"
                time.sleep(0.01)
            time.sleep(delay)
            assert proc.poll() is None, f"snakemake ended ({proc.returncode}) before the kill at {pattern}; see {log}"
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    deadline = time.time() + 10
    while live_processes_in_group(proc.pid) and time.time() < deadline:
        time.sleep(0.1)
    assert not live_processes_in_group(proc.pid), "a job outlived the SIGKILL of its group"


def study_frames(work: Path) -> dict[str, pd.DataFrame]:
    """The tables a study's claims rest on, by path under results/tiny."""
    res = work / RESULTS
    paths = ["data/pool.parquet", "data/difficulty.parquet",
             *(f"splits/{s}/{part}.parquet" for s in ("easy", "hard") for part in ("train", "val")),
             *(f"runs/easy/{run}/evals.parquet" for run in FAULT_RUNS),
             "analysis/easy/evals.parquet", "analysis/easy/train_pass_rates.parquet",
             "analysis/easy/tables/fits.csv", "analysis/easy/tables/frontier.csv"]
    return {p: pd.read_parquet(res / p) if p.endswith(".parquet") else pd.read_csv(res / p) for p in paths}


def run_metrics(run: Path) -> list[dict]:
    """A run's metrics.jsonl without the wall-clock ones, which a resumed run cannot repeat."""
    clock = ("timing_s/", "time/", "perf/rollouts_per_s", "perf/tokens_per_s")
    return [{"step": r["step"], **{k: v for k, v in r["data"].items() if not k.startswith(clock)}}
            for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())]


def assert_same_state(got, want, where: str) -> None:
    """Exact equality of nested checkpoint state: dicts, sequences, tensors, arrays, scalars."""
    import torch

    assert type(got) is type(want), f"{where}: {type(got).__name__} != {type(want).__name__}"
    if isinstance(want, dict):
        assert got.keys() == want.keys(), where
        for key in want:
            assert_same_state(got[key], want[key], f"{where}[{key!r}]")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same_state(g, w, f"{where}[{i}]")
    elif isinstance(want, torch.Tensor):
        assert torch.equal(got, want), f"{where} differs"
    elif hasattr(want, "shape"):  # a numpy array
        assert got.shape == want.shape and (got == want).all(), f"{where} differs"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


@pytest.fixture(scope="module")
def uninterrupted_study(tmp_path_factory, tiny_stages) -> Path:
    # The reference starts from the session's data stages; the killed study below builds its own.
    work = seed_study(make_study_dir(tmp_path_factory.mktemp("uninterrupted")), tiny_stages)
    run_snakemake(work, "--cores", "2", "--configfile", str(write_config(work, FAULT_STUDY)))
    return work


@pytest.mark.slow
def test_study_killed_in_every_stage_resumes_to_the_same_tables(uninterrupted_study, tmp_path):
    import torch

    work = make_study_dir(tmp_path / "killed")
    cfg = str(write_config(work, FAULT_STUDY))
    log = tmp_path / "snakemake.log"
    args = ["--cores", "2", "--configfile", cfg]
    for i, (pattern, delay) in enumerate(kill_points(FAULT_SEED)):
        kill_at(work, args, pattern, delay, log)
        if i == 0:  # the killed Snakemake kept its lock: what the README's resume advice is for
            locked = run_snakemake(work, "--cores", "2", "--configfile", cfg, "--rerun-incomplete", check=False)
            assert locked.returncode != 0 and "Directory cannot be locked" in locked.stderr, locked.stderr[-2000:]
        run_snakemake(work, "--unlock", "--configfile", cfg)
        args = ["--cores", "2", "--configfile", cfg, "--rerun-incomplete"]
    run_snakemake(work, *args)

    reference, resumed = study_frames(uninterrupted_study), study_frames(work)
    for path, table in reference.items():
        assert_frame_equal(resumed[path], table, check_exact=True, obj=path)
    # Training itself resumed where it stopped and went on as if never stopped: the kill in
    # training hit a run after its step-0 checkpoint, and every run's records, weights,
    # optimiser and RNG states equal the uninterrupted run's.
    markers = {run: json.loads((work / RESULTS / "runs/easy" / run / "run.json").read_text()) for run in FAULT_RUNS}
    assert any(m.get("resumed_from") is not None for m in markers.values()), markers
    for run in FAULT_RUNS:
        ref_run, run_dir = uninterrupted_study / RESULTS / "runs/easy" / run, work / RESULTS / "runs/easy" / run
        assert run_metrics(run_dir) == run_metrics(ref_run), run
        ref_state, state = (torch.load(d / "checkpoint" / "state.pt", weights_only=False) for d in (ref_run, run_dir))
        assert state.keys() == ref_state.keys()
        for key in ref_state.keys() - {"wall_s"}:
            assert_same_state(state[key], ref_state[key], f"{run}: checkpoint[{key!r}]")
