"""What verl 0.9.1 cannot hold or silently leaves out, checked before a run:
the samples its transfer queue holds at once (a grid's batch, at config time),
and the prompts its overlong-prompt filter drops from a split (before verl
starts, so the run's provenance can say how much of D it trained on).
"""

from __future__ import annotations

from pathlib import Path

from isocompute.errors import ConfigError

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
    """Every cell's batch fits verl's transfer queue; `val_problems` defaults to splits.val_size."""
    capacity = transfer_queue_capacity(cfg)
    val = cfg["splits"]["val_size"] if val_problems is None else int(val_problems)
    for cell in cells:
        held = samples_held(cell.B_p, cell.n, val, cfg["eval"]["samples"])
        if held > capacity:
            raise ConfigError(
                f"config key 'grid.{cell.split}': cell B_p = {cell.B_p}, n = {cell.n} puts {held:,} samples in "
                f"verl 0.9.1's transfer queue at once (B_p x (n + 1), or B_p x n + {val} validation problems x "
                f"(eval.samples + 1)), more than it holds ({capacity:,}); lower grid.{cell.split}.B_max or raise "
                f"{TRANSFER_QUEUE_SIZE_KEY} in cluster.verl.extra_overrides")
