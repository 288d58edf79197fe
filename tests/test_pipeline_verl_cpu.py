"""End to end: verl 0.9.1's own V1 trainer (`python -m verl.trainer.main_ppo`) trains a
cell of a tiny study on the CPU through the real Snakemake rules (train.backend verl,
train.device cpu: the CPU platform of train/backends/verl/cpu/), then score, collect and
analyze. One Easy cell, 4 steps, KL + entropy on (verl builds the reference model), the
compute-matched evaluation schedule (verl's validation at the recipe's steps only).

What it would catch: main_ppo's missing dependencies (transfer_queue), TransferQueue's
Ray CPUs (a wait forever: the run is bounded by a timeout), the run named after another
experiment than the study's, and any part of the CPU platform that verl stops loading.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from conftest import TINY_CONFIG, make_study_dir, run_snakemake, write_config
from isocompute.config import check_config
from isocompute.grid import Cell
from isocompute.train.recipe import cell_recipe

pytestmark = pytest.mark.slow

VERL_CPU = {
    **TINY_CONFIG,
    "experiment": "tinyverl",
    "grid": {"easy": {"B_p": [2], "n": [2], "B_max": 4, "C_max": 16}},  # M_max = 4 steps
    "train": {"backend": "verl", "device": "cpu", "max_response_length": 16, "lr_base": 1e-3, "B_ref": 8,
              "warmup_steps": 1, "probe_problems": 0, "eval_schedule": "compute"},
    "eval": {"k": 4, "samples": 4},
    # One logical GPU; TransferQueue with 1 storage unit: 3 + 1 + 1 + 1 = 6 of the 8 Ray CPUs.
    "cluster": {"train": {"gpus": 1, "cpus_per_gpu": 8},
                "verl": {"storage_units": 1, "max_prompt_length": 64, "max_token_len_per_gpu": 512}},
}
RUN = "results/tinyverl/runs/easy/bp2_n2"
TIMEOUT_S = 900  # a run that waits forever (TransferQueue short of Ray CPUs) fails instead


@pytest.fixture(scope="module")
def verl_study(tmp_path_factory):
    work = make_study_dir(tmp_path_factory.mktemp("verl_cpu"))
    cfg = write_config(work, VERL_CPU)
    run_snakemake(work, "results/tinyverl/analysis/easy/tables", "--cores", "2", "--configfile", str(cfg),
                  timeout=TIMEOUT_S)
    return work


def test_verl_trains_the_cell_on_the_cpu(verl_study):
    run = verl_study / RUN
    marker = json.loads((run / "run.json").read_text())
    assert (marker["backend"], marker["steps"], marker["M_max"]) == ("verl", 4, 4)
    assert marker["versions"]["verl"] == "0.9.1"
    # verl's own resolved config: the CPU platform's settings and the study's experiment.
    hydra = yaml.safe_load((run / "verl" / "hydra" / ".hydra" / "config.yaml").read_text())
    assert hydra["trainer"]["experiment_name"] == "tinyverl-easy-bp2_n2"
    assert (hydra["trainer"]["device"], hydra["actor_rollout_ref"]["rollout"]["name"]) == ("cpu", "hf_cpu")
    assert hydra["actor_rollout_ref"]["actor"]["use_kl_loss"] and hydra["actor_rollout_ref"]["actor"]["entropy_coeff"] > 0
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = {m["step"]: m["data"] for m in metrics}
    for step in (1, 2, 3, 4):
        data = steps[step]
        assert data["actor/grad_norm"] > 0, (step, data["actor/grad_norm"])  # a real update
        assert "actor/kl_loss" in data and "actor/entropy" in data  # the reference model ran
        # The rollout server's tempered log-probs are the actor's (same weights, synced each step).
        assert abs(data["training/rollout_probs_diff_mean"]) < 1e-2, data["training/rollout_probs_diff_mean"]
    assert (run / "checkpoints" / "latest_checkpointed_iteration.txt").read_text().strip() == "4"


def test_validation_dumps_and_evals_at_the_planned_steps(verl_study):
    run = verl_study / RUN
    cell = Cell("easy", 2, 2, 4, 16)
    planned = list(cell_recipe(check_config(json.loads(json.dumps(VERL_CPU))), cell).eval_steps)
    assert planned[0] == 0 and planned[-1] == 4
    assert sorted(int(p.stem) for p in (run / "generations").glob("*.jsonl")) == planned
    for step in planned:
        rows = [json.loads(line) for line in (run / "generations" / f"{step}.jsonl").read_text().splitlines()]
        assert len(rows) == 4 * 4  # val_size problems x eval.samples
        assert all({"input", "output", "score", "sample", "n_tokens"} <= set(r) for r in rows)
    evals = pd.read_parquet(run / "evals.parquet")
    assert evals["step"].tolist() == planned and (evals["compute"] == 4 * evals["step"]).all()
    assert evals["avg@4"].between(0, 1).all()
    collected = pd.read_parquet(verl_study / "results/tinyverl/analysis/easy/evals.parquet")
    assert collected["step"].tolist() == planned
    assert (verl_study / "results/tinyverl/analysis/easy/tables/records.csv").is_file()
