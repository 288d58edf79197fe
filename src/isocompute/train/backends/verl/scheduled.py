"""The compute-matched evaluation schedule inside verl 0.9.1, whose trainer
validates and checkpoints every `trainer.test_freq` steps: a trainer mode that
validates and checkpoints only at the listed steps of the recipe.

verl's sync trainer loop asks at every step when test_freq = save_freq = 1;
`ScheduledTrainer` (registered as TRAINER_MODE with verl's own
`register_trainer`) answers only at the steps in `trainer.isocompute_eval_steps`
and does nothing at the others, so validation dumps, checkpoints and resumption
keep verl's own code and formats. A session stopped at a rung of an adaptive
sweep (`trainer.total_training_steps` = the rung's step) also checkpoints at
`trainer.isocompute_stop_step`, where verl's loop ends, without validating
there. verl looks the mode up inside its Ray TaskRunner actor, so `register`
runs there as Ray's worker_process_setup_hook.
"""

from __future__ import annotations

TRAINER_MODE = "isocompute_scheduled"
STEPS_KEY = "isocompute_eval_steps"
STOP_KEY = "isocompute_stop_step"
SETUP_HOOK = f"{__name__}.register"


def is_scheduled(config, step: int) -> bool:
    """Whether verl's global step `step` is one of the run's validation (and checkpoint) steps."""
    return int(step) in {int(s) for s in config.trainer[STEPS_KEY]}


def is_checkpointed(config, step: int) -> bool:
    """A validation step, or the step a rung's session stops at."""
    stop = config.trainer.get(STOP_KEY)
    return is_scheduled(config, step) or (stop is not None and int(step) == int(stop))


def register() -> None:
    """Register ScheduledTrainer with verl (idempotent); Ray runs this in every worker process."""
    from omegaconf import open_dict
    from verl.trainer.ppo.v1 import PPOTrainerSync, get_trainer_cls, register_trainer

    try:
        get_trainer_cls(TRAINER_MODE)
        return
    except ValueError:
        pass

    class ScheduledTrainer(PPOTrainerSync):
        """verl's sync trainer, validating and checkpointing at the recipe's steps only (and
        checkpointing at a rung's stop step)."""

        def __init__(self, config):
            # verl's base trainer keys its replay buffer, dataloader batching and checkpointed
            # queue state on the mode's name: anything but "sync" gets the async replay buffer
            # and one-prompt dataloader batches. This mode is the sync trainer, so it says so.
            with open_dict(config):
                config.trainer.v1.trainer_mode = "sync"
            super().__init__(config)

        def _validate(self, *args, **kwargs):
            if not is_scheduled(self.config, self.global_steps):
                return {}
            return super()._validate(*args, **kwargs)

        def _save_checkpoint(self, *args, **kwargs):
            if not is_checkpointed(self.config, self.global_steps):
                return None
            return super()._save_checkpoint(*args, **kwargs)

    register_trainer(TRAINER_MODE)(ScheduledTrainer)
