"""verl 0.9.1 itself resolves the training commands the verl backend generates:
no unknown keys, and the resolved config carries the recipe.

Two cells go through the literal command line (`python -m verl.trainer.main_ppo
--cfg job --resolve <overrides>`, ~15-30 s each on 2 cores, run concurrently);
a handful more are composed with verl's Hydra config in one process and checked
with verl's own `validate_config` (batch-size divisibility, the reference model
for KL, ...), which is what `main_ppo` runs before it starts Ray.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from isocompute.config import load_config
from isocompute.grid import find_cell, grid_cells
from isocompute.layout import run_paths
from isocompute.train.backends.verl import scheduled, verl_command
from isocompute.train.recipe import cell_recipe
from support import REPO
from support.verl import COMPOSE

MAIN = REPO / "config" / "paper" / "qwen25_7b.yaml"
MIXTURES = REPO / "config" / "paper" / "mixtures.yaml"

# (config, split, B_p, n): Easy and Hard, small and large batches, a mixture.
CLI_CELLS = [(MAIN, "easy", 32, 8), (MAIN, "hard", 1024, 16)]
COMPOSED_CELLS = [(MAIN, "easy", 32, 2048), (MAIN, "easy", 1024, 64), (MAIN, "hard", 32, 512),
                  (MAIN, "hard", 256, 64), (MIXTURES, "dual", 32, 64),
                  (MAIN, "easy", 64, 16, {"train": {"eval_schedule": "steps"}}),  # the paper's periodic schedule
                  (MAIN, "hard", 64, 16, {"train": {"eval_schedule": "steps"}}, 7)]  # a rung of an adaptive sweep


def command_of(path: Path, split: str, B_p: int, n: int, root: Path, overrides: dict | None = None,
               stop_at_step: int | None = None):
    cfg = load_config(path, overrides)
    cell = find_cell(grid_cells(cfg), split, B_p, n)
    paths = run_paths(cfg, cell)
    paths = type(paths)(root / paths.run_dir, root / paths.train_file, root / paths.val_file, paths.model)
    return cfg, cell, verl_command(cfg, cell, paths, stop_at_step=stop_at_step)


def check_recipe(resolved: dict, cfg: dict, cell, stop_at_step: int | None = None) -> None:
    """The resolved verl config carries the recipe of docs/methods.md section 3 for this cell (stopped at
    `stop_at_step`, a rung of an adaptive sweep: the same recipe, a shorter session)."""
    actor = resolved["actor_rollout_ref"]["actor"]
    rollout = resolved["actor_rollout_ref"]["rollout"]
    B = cell.B_p * cell.n
    assert resolved["algorithm"]["adv_estimator"] == "grpo"
    assert resolved["data"]["train_batch_size"] == cell.B_p == actor["ppo_mini_batch_size"]
    assert actor["ppo_epochs"] == 1 and rollout["n"] == cell.n == actor["rollout_n"]
    assert actor["optim"]["lr"] == pytest.approx(1e-6 * (B / 1024) ** 0.5)
    # The recipe's warm-up (update 1 at lr / 10) as verl's flat cosine counted from 1.
    optim = actor["optim"]
    assert optim["lr_warmup_steps"] == 10 and optim["lr_scheduler_type"] == "cosine"
    assert optim["min_lr_ratio"] == 1.0 and optim["zero_indexed_step"] is False
    regularized = cell.split in cfg["train"]["regularized_splits"]
    assert actor["use_kl_loss"] is regularized
    assert actor["kl_loss_type"] == "low_var_kl"
    assert actor["kl_loss_coef"] == (1e-3 if regularized else 0.0)
    assert actor["entropy_coeff"] == (1e-3 if regularized else 0.0)
    assert actor["clip_ratio_low"] == actor["clip_ratio_high"] == 0.2 and actor["loss_agg_mode"] == "token-mean"
    assert (rollout["temperature"], rollout["top_p"], rollout["do_sample"]) == (0.6, 1.0, True)
    assert rollout["val_kwargs"] == {**rollout["val_kwargs"], "n": 4, "temperature": 0.6, "top_p": 1.0,
                                     "do_sample": True}
    assert rollout["response_length"] == resolved["data"]["max_response_length"] == 8192
    assert resolved["algorithm"]["rollout_correction"]["rollout_is"] == "token"
    assert resolved["algorithm"]["rollout_correction"]["rollout_is_threshold"] == 2.0
    trainer = resolved["trainer"]
    assert trainer["total_training_steps"] == (stop_at_step or cell.M_max)
    assert trainer["total_epochs"] == cell.M_max
    steps = list(cell_recipe(cfg, cell).eval_steps)
    assert trainer.get(scheduled.STOP_KEY) == stop_at_step
    if cfg["train"]["eval_schedule"] == "steps" and stop_at_step is None:
        assert trainer["test_freq"] == trainer["save_freq"] == cfg["train"]["eval_interval"]
        assert steps == sorted(set(range(0, cell.M_max + 1, trainer["test_freq"])) | {cell.M_max})
    else:  # verl asks every step; the scheduled trainer mode answers at the recipe's steps
        assert trainer["test_freq"] == trainer["save_freq"] == 1
        assert trainer[scheduled.STEPS_KEY] == steps and steps[0] == 0 and steps[-1] == cell.M_max
    # Either way the project's trainer mode runs (it counts each step's timed-out rewards).
    assert trainer["v1"]["trainer_mode"] == scheduled.TRAINER_MODE
    assert resolved["ray_kwargs"]["ray_init"]["runtime_env"]["worker_process_setup_hook"] == scheduled.SETUP_HOOK
    assert trainer["resume_mode"] == "auto" and trainer["logger"] == ["console", "file"]
    assert trainer["experiment_name"] == f"{cfg['experiment']}-{cell.split}-{cell.name}"
    assert trainer["validation_data_dir"].endswith(f"runs/{cell.split}/{cell.name}/generations")
    assert trainer["default_local_dir"].endswith(f"runs/{cell.split}/{cell.name}/checkpoints")
    assert resolved["reward"]["custom_reward_function"]["path"].endswith("isocompute/train/backends/verl/reward.py")
    assert resolved["reward"]["custom_reward_function"]["name"] == "compute_score"
    assert resolved["data"]["train_files"].endswith(f"splits/{cell.split}/train.parquet")


@pytest.mark.slow   # starts verl's trainer CLI (Hydra composition)
def test_verl_resolves_generated_commands_with_the_recipe(tmp_path):
    cli = []
    for path, split, B_p, n in CLI_CELLS:
        cfg, cell, cmd = command_of(path, split, B_p, n, tmp_path)
        argv = [sys.executable, *cmd.argv[1:3], "--cfg", "job", "--resolve", *cmd.argv[3:]]
        cli.append((cfg, cell, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    composed = [command_of(*spec[:4], tmp_path, *spec[4:]) for spec in COMPOSED_CELLS]
    proc = subprocess.run([sys.executable, "-c", COMPOSE], input=json.dumps([c.argv[3:] for _, _, c in composed]),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads(proc.stdout.split("RESULT", 1)[1])
    for spec, (cfg, cell, _), result in zip(COMPOSED_CELLS, composed, results):
        check_recipe(result["config"], cfg, cell, *spec[5:])
        assert result["reference"] is (cell.split in cfg["train"]["regularized_splits"])
        assert result["critic"] is False
    for cfg, cell, popen in cli:
        out, err = popen.communicate(timeout=600)
        assert popen.returncode == 0, err[-4000:]
        check_recipe(yaml.safe_load(out), cfg, cell)


@pytest.mark.slow   # starts verl's trainer CLI (Hydra composition)
def test_verl_rejects_an_unknown_key(tmp_path):
    """The check above means something: a misspelt override fails verl's resolution."""
    _, _, cmd = command_of(MAIN, "easy", 32, 8, tmp_path)
    proc = subprocess.run([sys.executable, "-c", COMPOSE],
                          input=json.dumps([cmd.argv[3:] + ["actor_rollout_ref.actor.kl_los_coef=0.1"]]),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0 and "kl_los_coef" in proc.stderr
