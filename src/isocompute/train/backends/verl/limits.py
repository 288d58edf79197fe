"""What verl 0.9.1 cannot express, hold or silently leaves out, checked before a run:
the recipe options it has no equivalent for (at config time, for the study and
each recipe variant), the engine settings a run cannot honour (`check_supported`:
token budget, tensor parallelism, overrides unsafe for a rung), the samples its transfer queue holds at once (a grid's
batch, at config time), and the prompts its overlong-prompt filter drops from a
split (before verl starts, so the run's provenance can say how much of D it
trained on).
"""

from __future__ import annotations

from pathlib import Path

from isocompute.errors import ConfigError, InputError
from isocompute.topology import train_topology
from isocompute.train.backends.verl.cpu.overrides import CPU_GPUS, on_cpu

# --- recipe options verl 0.9.1 has no equivalent for ------------------------------------
# Its actor loss (verl.workers.utils.losses.ppo_loss) aggregates the policy-gradient, entropy
# and KL terms over one response mask, normalised by the global token count that its engine
# takes from that same mask, and its advantage estimators use every rollout of a group for
# both the baseline and the gradient. What each option would need is said in the message.
UNSUPPORTED_RECIPE = {
    ("zero_variance_filter", True): (
        "verl 0.9.1's only group filter, algorithm.filter_groups (DAPO dynamic sampling), drops "
        "zero-variance groups and samples more prompts to refill the batch, so a step no longer costs "
        "B_p * n rollouts; dropping the groups from the loss instead would need the response mask "
        "rewritten between its advantage computation and the actor update, which verl does not expose"),
    ("zero_variance_filter", "kl_entropy"): (
        "verl 0.9.1's actor loss applies one response mask to the policy-gradient, entropy and KL "
        "terms alike (verl.workers.utils.losses.ppo_loss) and normalises all three by the token count "
        "its engine takes from that mask; it has no per-term mask"),
    ("decoupled_baseline", True): (
        "verl 0.9.1's GRPO estimator takes the baseline and the gradient from the same rollout.n "
        "rollouts of a group; a gradient from a random n_train of them would need the response mask of "
        "the others zeroed between its advantage computation and the actor update, which verl does "
        "not expose"),
}


def check_recipe(train: dict, where: str = "train") -> None:
    """Recipe options verl 0.9.1 cannot express stop here, naming the key (`where`: the
    config section they come from, e.g. 'variants.<name>.train') and why."""
    values = {"zero_variance_filter": train["zero_variance_filter"],
              "decoupled_baseline": bool(train["decoupled_baseline"]["enabled"])}
    for (key, value), reason in UNSUPPORTED_RECIPE.items():
        if values[key] is value or (isinstance(value, str) and values[key] == value):
            shown = f"{key}.enabled" if key == "decoupled_baseline" else key
            raise ConfigError(f"config key '{where}.{shown}': {values[key]!r} is not supported by the verl "
                              f"backend: {reason}. Use train.backend local for this ablation")


# verl keys through which the learning rate, or the run's length, would depend on
# trainer.total_training_steps, which a rung of an adaptive sweep shortens: a
# cosine schedule decays over it unless min_lr_ratio is 1, and without
# lr_warmup_steps the warm-up is a ratio of it. The recipe's schedule (a flat
# "cosine" counted from 1 with a fixed warm-up, overrides.lr_schedule_overrides)
# reads none of it.
RUNG_UNSAFE_KEYS = tuple(f"actor_rollout_ref.actor.optim.{k}" for k in (
    "lr_scheduler_type", "warmup_style", "lr_warmup_steps", "lr_warmup_steps_ratio", "total_training_steps",
    "min_lr_ratio", "num_cycles")) + ("trainer.total_training_steps", "trainer.total_epochs")


def check_supported(cfg: dict) -> None:
    """Recipe options the verl backend cannot honour stop here, naming the key."""
    train = cfg["train"]
    check_recipe(train)
    v = cfg["cluster"]["verl"]
    need = v["max_prompt_length"] + train["max_response_length"]
    if v["max_token_len_per_gpu"] < need:
        raise ConfigError(f"config key 'cluster.verl.max_token_len_per_gpu': must be at least "
                          f"cluster.verl.max_prompt_length + train.max_response_length = {need}, "
                          f"got {v['max_token_len_per_gpu']}")
    check_ray_cpus(cfg)
    _, gpus = train_topology(cfg)
    if gpus % v["rollout_tensor_parallel"]:
        raise ConfigError(f"config key 'cluster.verl.rollout_tensor_parallel': must divide the GPUs of a run "
                          f"(cluster.train.gpus, or the count of cluster.gres) = {gpus}, "
                          f"got {v['rollout_tensor_parallel']}")


def check_rung_overrides(cfg: dict) -> None:
    """An adaptive sweep's rungs end verl's session early: overrides that read the run's length
    are refused (a study check: a train job is given no sweep section)."""
    if cfg["sweep"]["mode"] != "adaptive":
        return
    for override in cfg["cluster"]["verl"]["extra_overrides"]:
        key = override.lstrip("+~").partition("=")[0]
        if key in RUNG_UNSAFE_KEYS:
            raise ConfigError(f"config key 'cluster.verl.extra_overrides': {key} is not allowed with "
                              "sweep.mode: adaptive (a rung ends verl's session at trainer.total_training_steps, "
                              "so the learning rate or the run's length would differ from the full run's)")


# verl 0.9.1's V1 trainer passes every sample through TransferQueue, whose
# SimpleStorage backend holds at most this many at once
# (verl/trainer/config/transfer_queue/transfer_queue.yaml,
# backend.SimpleStorage.total_storage_size); a site may raise it through
# cluster.verl.extra_overrides.
TRANSFER_QUEUE_CAPACITY = 100_000
TRANSFER_QUEUE_SIZE_KEY = "transfer_queue.backend.SimpleStorage.total_storage_size"


def transfer_queue_capacity(cfg: dict) -> int:
    """Samples verl's transfer queue holds at once: verl's default, or an extra override of it."""
    capacity = TRANSFER_QUEUE_CAPACITY
    for override in cfg["cluster"]["verl"]["extra_overrides"]:
        key, _, value = override.lstrip("+~").partition("=")
        if key == TRANSFER_QUEUE_SIZE_KEY and value.strip().isdigit():
            capacity = int(value)
    return capacity


def samples_held(B_p: int, n: int, val_problems: int, val_samples: int) -> int:
    """The most samples a step puts in verl's transfer queue at once.

    While a step generates, its B_p prompts are registered next to their B_p * n
    trajectories; the trajectories stay until the end of the step, after the
    validation that follows it, which registers every validation prompt
    (data.val_batch_size is null: the whole set) and its val_samples
    trajectories (verl/trainer/ppo/v1/trainer_base.py: fit, _validate).
    """
    return max(B_p * (n + 1), B_p * n + val_problems * (val_samples + 1))


def check_batch_capacity(cfg: dict, cells, val_problems: int | None = None) -> None:
    """Every cell's batch fits verl's transfer queue; `val_problems` defaults to splits.val_size,
    plus the problems of every extra evaluation set (verl validates them in the same batch)."""
    capacity = transfer_queue_capacity(cfg)
    from isocompute.data.eval_sets import extra_set_problems

    val = cfg["splits"]["val_size"] + extra_set_problems(cfg) if val_problems is None else int(val_problems)
    for cell in cells:
        held = samples_held(cell.B_p, cell.n, val, cfg["eval"]["samples"])
        if held > capacity:
            raise ConfigError(
                f"config key 'grid.{cell.split}': cell B_p = {cell.B_p}, n = {cell.n} puts {held:,} samples in "
                f"verl 0.9.1's transfer queue at once (B_p x (n + 1), or B_p x n + {val} validation problems x "
                f"(eval.samples + 1)), more than it holds ({capacity:,}); lower grid.{cell.split}.B_max or raise "
                f"{TRANSFER_QUEUE_SIZE_KEY} in cluster.verl.extra_overrides")


def check_study_cells(cfg: dict, cells) -> None:
    """The verl backend's checks of a study before any job: options it cannot honour, and
    batches its transfer queue cannot hold. `cfg` is the config the cells train with (a
    variant's for a variant's cells, whose recipe options are then named under it)."""
    variants = {getattr(c, "variant", "") for c in cells} - {""}
    for variant in sorted(variants):
        check_recipe(cfg["train"], f"variants.{variant}.train")
    check_supported(cfg)
    check_rung_overrides(cfg)
    check_batch_capacity(cfg, cells)


def prompt_lengths(split_file: Path | str, tokenizer) -> list[int]:
    """Tokens of each prompt of a split as verl's overlong-prompt filter counts them (RLHFDataset:
    the chat template with the generation prompt, tokenized; text-only models)."""
    import pandas as pd
    from verl.utils.tokenizer.tokenizer import normalize_token_ids

    prompts = pd.read_parquet(split_file, columns=["prompt"])["prompt"]
    return [len(normalize_token_ids(tokenizer.apply_chat_template([dict(m) for m in messages],
                                                                  add_generation_prompt=True, tokenize=True)))
            for messages in prompts]


def dropped_prompts(files: dict[str, Path | str], model: str, max_prompt_length: int,
                    max_share: float, tokenizer=None) -> dict:
    """Per split part ('train', 'val'): prompts, those longer than `max_prompt_length` that verl
    will drop, and their share. Raises ConfigError when a part loses more than `max_share`."""
    if tokenizer is None:
        from transformers import AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(model)
        except Exception as exc:  # verl would fail on it too; say so before it starts
            raise InputError(f"{model}: cannot load the model's tokenizer to count the prompts verl drops "
                             f"({exc})") from exc
    out = {}
    for part, path in files.items():
        lengths = prompt_lengths(path, tokenizer)
        dropped = sum(n > max_prompt_length for n in lengths)
        share = dropped / len(lengths) if lengths else 0.0
        out[part] = {"prompts": len(lengths), "dropped": dropped, "share": share,
                     "longest": max(lengths, default=0)}
        if share > max_share:
            raise ConfigError(
                f"config key 'cluster.verl.max_prompt_length': {dropped} of {len(lengths)} {part} prompts of "
                f"{path} ({share:.1%}) are longer than {max_prompt_length} tokens and verl would drop them, "
                f"more than cluster.verl.max_dropped_prompt_share = {max_share:.1%} (the longest has "
                f"{out[part]['longest']}); raise cluster.verl.max_prompt_length")
    return out


# --- Ray CPUs: what verl's V1 trainer holds before its first step -----------------------------
# verl 0.9.1 reserves a placement-group bundle of 3 CPUs per GPU for its workers
# (ResourcePoolManager.max_colocate_count); TransferQueue's controller and each storage unit
# (transfer_queue.backend.SimpleStorage.num_data_storage_units) hold 1 CPU each; the actors
# started after them (agent loop, reward, load balancer) need 1 free CPU to be scheduled.
# With fewer Ray CPUs, `tq.init` or a worker group waits for them forever.
CPUS_PER_GPU_BUNDLE = 3
TQ_CONTROLLER_CPUS = 1
SCHEDULING_CPUS = 1


def run_gpus(cfg: dict) -> int:
    """The GPUs verl is told about: the train job's, or the CPU platform's one logical GPU."""
    return CPU_GPUS if on_cpu(cfg) else train_topology(cfg)[1]


def ray_cpus(cfg: dict) -> int:
    """ray_kwargs.ray_init.num_cpus of a run: every CPU the job gets (GPUs x cluster.train.cpus_per_gpu)."""
    return run_gpus(cfg) * int(cfg["cluster"]["train"]["cpus_per_gpu"])


def ray_cpus_needed(cfg: dict) -> int:
    return (CPUS_PER_GPU_BUNDLE * run_gpus(cfg) + TQ_CONTROLLER_CPUS + int(cfg["cluster"]["verl"]["storage_units"])
            + SCHEDULING_CPUS)


def check_ray_cpus(cfg: dict) -> None:
    """Enough Ray CPUs for verl's workers and TransferQueue, or a ConfigError with the fix."""
    gpus, have, need = run_gpus(cfg), ray_cpus(cfg), ray_cpus_needed(cfg)
    if have >= need:
        return
    units = int(cfg["cluster"]["verl"]["storage_units"])
    per_gpu = -(-need // gpus)
    fewer = have - (need - units)
    raise ConfigError(
        f"config key 'cluster.train.cpus_per_gpu': verl needs {need} Ray CPUs ({CPUS_PER_GPU_BUNDLE} per GPU x {gpus} "
        f"for its workers, {TQ_CONTROLLER_CPUS} for TransferQueue's controller, 1 per storage unit x {units} "
        f"(cluster.verl.storage_units), {SCHEDULING_CPUS} to start the rest), the run gets {have} "
        f"({gpus} GPU(s) x {cfg['cluster']['train']['cpus_per_gpu']}); with fewer, TransferQueue's init waits "
        f"forever. Set cluster.train.cpus_per_gpu to at least {per_gpu}"
        + (f", or cluster.verl.storage_units to at most {fewer}" if fewer >= 1 else ""))
