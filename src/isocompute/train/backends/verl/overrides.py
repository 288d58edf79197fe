"""The verl command of one grid cell: `python -m verl.trainer.main_ppo` with Hydra
overrides generated from the config (recipe, engine settings, run folder), for
run_verl and `isocompute verl-command`. Pure but for verl_command's resume check.
"""

from __future__ import annotations

import math
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from isocompute.config import is_hub_id
from isocompute.topology import train_topology
from isocompute.train.backends.verl.files import VerlRunFiles
from isocompute.train.backends.verl import scheduled
from isocompute.train.backends.verl.cpu.overrides import cpu_env, cpu_overrides, on_cpu, vllm_rollout
from isocompute.train.backends.verl.eval_sets import val_files
from isocompute.train.backends.verl.limits import check_supported, ray_cpus
from isocompute.train.backends.verl.resume import resume_state
from isocompute.train.recipe import cell_recipe
from isocompute.train.tracking import tracker_env, tracking_of

# What verl 0.9.1 reads: the Hydra entry point, the env var its file logger
# takes its path from (verl.utils.tracking.FileLogger; its trackers' variables
# come from train.tracking.tracker_env), and the name of the function in the
# reward file.
VERL_ENTRY = "verl.trainer.main_ppo"
FILE_LOGGER_ENV = "VERL_FILE_LOGGER_PATH"
REWARD_FUNCTION_NAME = "compute_score"


def reward_function_path() -> Path:
    """The file verl loads the reward function from (this package's reward.py)."""
    from isocompute.train.backends.verl import reward

    return Path(reward.__file__).resolve()


# --- Hydra overrides --------------------------------------------------------------

_PLAIN = re.compile(r"^[A-Za-z0-9_./:@+-]+$")


def hydra_value(value) -> str:
    """A Python value as a Hydra override value (quoted where Hydra's grammar needs it)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot pass a non-finite number to verl: {value}")
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in ("true", "false", "null") and not _looks_numeric(text):
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# --- what of cluster.* a verl run is made of --------------------------------------------
# Keys the job reads that shape no training step: CPUs (Ray's num_cpus), how many
# checkpoints are kept, the guard on prompts verl filters out. They travel outside the
# train rule's params (its rerun contract) and the run identity, so that changing them
# neither resubmits finished runs nor restarts running ones. Runtime and memory reach
# only SLURM.
RUN_OPTION_KEYS = {"train": ("cpus_per_gpu",), "verl": ("max_checkpoints", "max_dropped_prompt_share",
                                                        "storage_units")}


def training_engine(cfg: dict) -> dict:
    """The cluster settings a verl run is made of: its GPUs (what the job gets: cluster.train.gpus
    or the count of cluster.gres) and verl's engine settings (cluster.verl.cpu_rollout on the CPU
    only: a GPU run samples with vLLM whatever it says, and keeps the params it had before it
    existed). The train rule's params and part of the run identity."""
    _, gpus = train_topology(cfg)
    verl = {k: v for k, v in cfg["cluster"]["verl"].items()
            if k not in RUN_OPTION_KEYS["verl"] and (k != "cpu_rollout" or on_cpu(cfg))}
    # gres too: the job counts its GPUs from it as the Snakefile did (topology.job_gpus).
    return {"gres": cfg["cluster"]["gres"], "train": {"gpus": gpus}, "verl": verl}


def run_options(cfg: dict) -> dict:
    """The cluster keys the train job reads that are not its params (RUN_OPTION_KEYS), and the
    KV cache bound of verl's vLLM rollout on the CPU (cluster.vllm.kv_cache_gib) when it has one."""
    options = {section: {k: cfg["cluster"][section][k] for k in keys} for section, keys in RUN_OPTION_KEYS.items()}
    if on_cpu(cfg) and vllm_rollout(cfg):
        options["vllm"] = {"kv_cache_gib": cfg["cluster"]["vllm"]["kv_cache_gib"]}
    return options


def recipe_overrides(cfg: dict, cell, stop_at_step: int | None = None) -> dict:
    """The healthy-GRPO recipe of docs/methods.md section 3 as verl keys, for one grid cell
    (its learning rate, warm-up and regularisation from `train.recipe`).

    `stop_at_step` (a rung of an adaptive sweep) ends the session there through
    trainer.total_training_steps and changes nothing else: the learning rate
    (lr_schedule_overrides) does not depend on the total, and total_epochs, the
    data order, the seeds and the validation steps stay the full run's, so the
    next session resumes the run where it stopped.
    """
    train, samp, ev = cfg["train"], cfg["sampling"], cfg["eval"]
    recipe = cell_recipe(cfg, cell)
    return {
        "algorithm.adv_estimator": "grpo",
        "algorithm.norm_adv_by_std_in_grpo": bool(train["norm_adv_by_std"]),
        "algorithm.use_kl_in_reward": False,
        # Truncated importance sampling between vLLM's and the trainer's log-probs.
        "algorithm.rollout_correction.rollout_is": "token" if train["tis"] else None,
        "algorithm.rollout_correction.rollout_is_threshold": float(train["tis_cap"]),
        "data.train_batch_size": cell.B_p,
        "data.max_response_length": int(train["max_response_length"]),
        "data.seed": recipe.seed,
        # One policy update per step (fully on-policy): the mini-batch is the whole batch.
        "actor_rollout_ref.actor.ppo_mini_batch_size": cell.B_p,
        "actor_rollout_ref.actor.ppo_epochs": 1,
        **lr_schedule_overrides(recipe),
        "actor_rollout_ref.actor.optim.weight_decay": float(train["weight_decay"]),
        "actor_rollout_ref.actor.optim.clip_grad": float(train["grad_clip"]),
        "actor_rollout_ref.actor.clip_ratio": float(train["clip_ratio"]),
        "actor_rollout_ref.actor.clip_ratio_low": float(train["clip_ratio"]),
        "actor_rollout_ref.actor.clip_ratio_high": float(train["clip_ratio"]),
        "actor_rollout_ref.actor.loss_agg_mode": train["loss_agg_mode"],
        "actor_rollout_ref.actor.use_kl_loss": recipe.regularized,
        "actor_rollout_ref.actor.kl_loss_type": train["kl_type"],
        "actor_rollout_ref.actor.kl_loss_coef": recipe.kl_coef,
        "actor_rollout_ref.actor.entropy_coeff": recipe.entropy_coef,
        "actor_rollout_ref.rollout.n": cell.n,
        "actor_rollout_ref.rollout.temperature": float(samp["temperature"]),
        "actor_rollout_ref.rollout.top_p": float(samp["top_p"]),
        "actor_rollout_ref.rollout.do_sample": True,
        "actor_rollout_ref.rollout.calculate_log_probs": True,
        "actor_rollout_ref.rollout.seed": recipe.seed,
        "actor_rollout_ref.rollout.val_kwargs.n": int(ev["samples"]),
        "actor_rollout_ref.rollout.val_kwargs.temperature": float(samp["temperature"]),
        "actor_rollout_ref.rollout.val_kwargs.top_p": float(samp["top_p"]),
        "actor_rollout_ref.rollout.val_kwargs.do_sample": True,
        "trainer.total_training_steps": cell.M_max if stop_at_step is None else int(stop_at_step),
        # verl stops at whichever comes first; M_max epochs is an upper bound
        # (an epoch is at least one step), so the step count decides.
        "trainer.total_epochs": max(1, cell.M_max),
        **evaluation_schedule_overrides(cfg, cell, stop_at_step),
    }


def lr_schedule_overrides(recipe) -> dict:
    """The recipe's learning rate at every update (train.recipe.warmup_lr: update k at
    lr * min(1, k / warmup_steps), update 1 already moving), through verl 0.9.1's own options.

    verl's "constant" schedule (verl.utils.torch_functional.get_constant_schedule_with_warmup,
    a LambdaLR indexed from 0) runs update k at lr * min(1, (k - 1) / warmup_steps): update 1
    at lr 0, the whole warm-up one update late. Its "cosine" schedule takes zero_indexed_step
    false (counting from 1: update k at lr * min(1, k / warmup_steps) during the warm-up), and
    with min_lr_ratio 1 its decay is flat at lr (cos * 0 + 1, floored at 1): the recipe's
    schedule exactly, on the CPU and on GPUs alike (verl's FSDP engine builds it, both
    devices), and independent of total_training_steps, so a rung's shorter session keeps it.
    """
    optim = "actor_rollout_ref.actor.optim"
    return {
        f"{optim}.lr": recipe.lr,
        f"{optim}.lr_warmup_steps": recipe.warmup_steps,
        f"{optim}.lr_scheduler_type": "cosine",
        f"{optim}.zero_indexed_step": False,
        f"{optim}.min_lr_ratio": 1.0,
    }


def evaluation_schedule_overrides(cfg: dict, cell, stop_at_step: int | None = None) -> dict:
    """When verl validates and checkpoints: the recipe's eval_steps.

    The paper's periodic schedule (train.eval_schedule: steps) is verl's own
    test_freq/save_freq (in the project's trainer mode, which counts timeouts). The compute-matched schedule is a list of steps, which
    verl 0.9.1 cannot take: its trainer asks at every step (freq 1) and the
    `scheduled` trainer mode answers only at the listed steps (registered in
    verl's Ray workers by a setup hook). save_freq == test_freq either way, so a
    resumed run restarts after a step that was already evaluated.

    A session stopped at a rung below M_max always runs the scheduled mode: verl
    validates at its last step, which the rung's step need not be on the
    recipe's schedule; the mode checkpoints there without validating.
    """
    stops_early = stop_at_step is not None and int(stop_at_step) < cell.M_max
    # The project's trainer mode always runs: it counts each step's timed-out rewards.
    mode = {"trainer.v1.trainer_mode": scheduled.TRAINER_MODE,
            "+ray_kwargs.ray_init.runtime_env.worker_process_setup_hook": scheduled.SETUP_HOOK}
    if cfg["train"]["eval_schedule"] == "steps" and not stops_early:
        interval = int(cfg["train"]["eval_interval"])
        return {"trainer.test_freq": interval, "trainer.save_freq": interval, **mode}
    out = {
        "trainer.test_freq": 1,
        "trainer.save_freq": 1,
        **mode,
        f"+trainer.{scheduled.STEPS_KEY}": list(cell_recipe(cfg, cell).eval_steps),
    }
    if stops_early:
        out[f"+trainer.{scheduled.STOP_KEY}"] = int(stop_at_step)
    return out


def engineering_overrides(cfg: dict) -> dict:
    """Hardware and engine settings (cluster.verl / cluster.train): no effect on the science."""
    v = cfg["cluster"]["verl"]
    nodes, gpus_per_node = train_topology(cfg)  # what the train job asks SLURM for
    return {
        "data.max_prompt_length": int(v["max_prompt_length"]),
        "data.filter_overlong_prompts": True,
        "data.truncation": "error",
        "actor_rollout_ref.model.enable_gradient_checkpointing": True,
        "actor_rollout_ref.model.use_remove_padding": True,
        "actor_rollout_ref.actor.use_dynamic_bsz": True,
        "actor_rollout_ref.actor.ppo_max_token_len_per_gpu": int(v["max_token_len_per_gpu"]),
        "actor_rollout_ref.actor.fsdp_config.param_offload": bool(v["param_offload"]),
        "actor_rollout_ref.actor.fsdp_config.optimizer_offload": bool(v["optimizer_offload"]),
        "actor_rollout_ref.rollout.name": "vllm",
        "actor_rollout_ref.rollout.tensor_model_parallel_size": int(v["rollout_tensor_parallel"]),
        "actor_rollout_ref.rollout.gpu_memory_utilization": float(v["gpu_memory_utilization"]),
        "trainer.n_gpus_per_node": gpus_per_node,
        "trainer.nnodes": nodes,
        "trainer.device": "cuda",
        "trainer.max_actor_ckpt_to_keep": int(v["max_checkpoints"]),
        "ray_kwargs.ray_init.num_cpus": ray_cpus(cfg),
        "transfer_queue.backend.SimpleStorage.num_data_storage_units": int(v["storage_units"]),
    }


def io_overrides(cfg: dict, cell, paths, files: VerlRunFiles, *, validate_first: bool) -> dict:
    """Where verl reads and writes: the split files, the model, the run folder."""
    record_pass_rates = cfg["cluster"]["verl"]["train_pass_rates"]
    tracking = tracking_of(cfg, cell)
    return {
        "data.train_files": str(Path(paths.train_file).resolve()),
        "data.val_files": val_files(paths, files),
        "actor_rollout_ref.model.path": model_arg(paths.model),
        "reward.custom_reward_function.path": str(reward_function_path()),
        "reward.custom_reward_function.name": REWARD_FUNCTION_NAME,
        # verl's loggers: its file logger (the run's metrics) and the trackers of config `tracking`.
        "trainer.project_name": tracking.project,
        "trainer.experiment_name": tracking.run,
        "trainer.logger": ["console", "file", *tracking.backends],
        "trainer.log_val_generations": 0,
        "trainer.validation_data_dir": str(files.generations),
        "trainer.rollout_data_dir": str(files.rollouts) if record_pass_rates else None,
        "trainer.default_local_dir": str(files.checkpoints),
        "trainer.resume_mode": "auto",
        # Step 0 is evaluated once; a resumed session starts after a step that
        # was already evaluated (save_freq == test_freq), unless that dump is lost.
        "trainer.val_before_train": bool(validate_first),
        "hydra.run.dir": str(files.session_dir / "hydra"),
    }


def model_arg(model: str) -> str:
    """A local model directory as an absolute path (even before the pipeline has built it);
    a Hugging Face hub id ('org/name', not a local path) as it is."""
    return str(model) if is_hub_id(model) else str(Path(model).resolve())


def verl_overrides(cfg: dict, cell, paths, *, validate_first: bool = True,
                   stop_at_step: int | None = None) -> list[str]:
    """All `key=value` Hydra overrides of one run, recipe first, then `cluster.verl.extra_overrides`."""
    check_supported(cfg)
    files = VerlRunFiles(Path(paths.run_dir).resolve())
    merged = {**recipe_overrides(cfg, cell, stop_at_step), **engineering_overrides(cfg),
              **(cpu_overrides(cfg) if on_cpu(cfg) else {}),
              **io_overrides(cfg, cell, paths, files, validate_first=validate_first)}
    out = [f"{key}={hydra_value(value)}" for key, value in merged.items()]
    return out + list(cfg["cluster"]["verl"]["extra_overrides"])


@dataclass(frozen=True)
class VerlCommand:
    argv: list[str]
    env: dict = field(default_factory=dict)

    def shell(self) -> str:
        """The command line as one shell string (environment assignments first)."""
        prefix = [f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items())]
        return " ".join(prefix + [shlex.join(self.argv)])


def verl_command(cfg: dict, cell, paths, *, python: str | None = None,
                 stop_at_step: int | None = None) -> VerlCommand:
    """The exact training command of a cell in the run folder's current state (resumes if it can),
    to M_max or to `stop_at_step` (a rung of an adaptive sweep)."""
    files = VerlRunFiles(Path(paths.run_dir).resolve())
    state = resume_state(files, cell_recipe(cfg, cell).eval_steps)
    overrides = verl_overrides(cfg, cell, paths, validate_first=state.validate_first, stop_at_step=stop_at_step)
    argv = [python or sys.executable, "-m", VERL_ENTRY, *overrides]
    env = {FILE_LOGGER_ENV: str(files.session_metrics), **tracker_env(tracking_of(cfg, cell)),
           **(cpu_env(cfg) if on_cpu(cfg) else {})}
    return VerlCommand(argv, env)
