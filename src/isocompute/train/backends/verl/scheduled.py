"""The project's trainer mode inside verl 0.9.1: the compute-matched evaluation
schedule (verl's trainer validates and checkpoints every `trainer.test_freq`
steps; this mode, given the recipe's steps, only at those), and each training
step's count of timed-out rewards in verl's own step metrics (`verl.timeouts`), and
with a reference model the stale-rollout counterfactual of verl's rollout-vs-actor
log-prob check (`stale_rollout_metrics`).

verl's sync trainer loop asks at every step when test_freq = save_freq = 1;
`ScheduledTrainer` (registered as TRAINER_MODE with verl's own
`register_trainer`) answers only at the steps in `trainer.isocompute_eval_steps`
and does nothing at the others, so validation dumps, checkpoints and resumption
keep verl's own code and formats. A session stopped at a rung of an adaptive
sweep (`trainer.total_training_steps` = the rung's step) also checkpoints at
`trainer.isocompute_stop_step`, where verl's loop ends, without validating
there. Without the list (train.eval_schedule: steps) verl's test_freq decides.
verl looks the mode up inside its Ray TaskRunner actor, so `register` runs
there as Ray's worker_process_setup_hook.
"""

from __future__ import annotations

TRAINER_MODE = "isocompute_scheduled"
STEPS_KEY = "isocompute_eval_steps"
STOP_KEY = "isocompute_stop_step"
SETUP_HOOK = f"{__name__}.register"


def is_scheduled(config, step: int) -> bool:
    """Whether verl's global step `step` is one of the run's validation (and checkpoint) steps;
    every step verl asks at when the run lists none (verl's own test_freq)."""
    steps = config.trainer.get(STEPS_KEY)
    return steps is None or int(step) in {int(s) for s in steps}


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
        checkpointing at a rung's stop step), counting each step's timed-out rewards."""

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

        def _compute_metrics(self, batch, metrics, *args, **kwargs):
            # verl's step metrics take no reward extras: the rollouts' own `timed_out`, from
            # the TransferQueue fields verl's validation reads them from.
            import transfer_queue as tq  # here: only the trainer's process reduces metrics

            from isocompute.train.backends.verl.timeouts import step_timeouts

            super()._compute_metrics(batch, metrics, *args, **kwargs)
            data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=["extra_fields"])
            padding = [bool(tag.get("is_padding", False)) for tag in batch.tags]
            metrics.update(step_timeouts(data.pop("extra_fields").tolist(), padding))
            if self.use_reference_policy and self.config.actor_rollout_ref.rollout.calculate_log_probs:
                metrics.update(stale_rollout_metrics(tq, batch))

    register_trainer(TRAINER_MODE)(ScheduledTrainer)


STALE_PREFIX = "isocompute/ref_probs_diff"


def stale_rollout_metrics(tq, batch) -> dict:
    """What verl's training/rollout_probs_diff_{mean,max} (rollout vs actor, on the step's sampled
    tokens) would be if the rollout engine still held the reference model's weights, the
    initial actor's: a weight sync that stopped after the first one. The reference log-probs
    of the same tokens (ref_log_prob) stand in for the rollout's, through verl's own
    calculate_debug_metrics, under STALE_PREFIX. A rollout_probs_diff well below this shows
    the rollout samples with the updated weights."""
    from verl import DataProto
    from verl.utils.debug.metrics import calculate_debug_metrics

    fields = ["responses", "response_mask", "old_log_probs", "ref_log_prob"]
    data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=fields).to_padded_tensor()
    data["rollout_log_probs"] = data.pop("ref_log_prob")
    stale = calculate_debug_metrics(DataProto(batch=data))
    return {f"{STALE_PREFIX}_{k}": stale[f"training/rollout_probs_diff_{k}"] for k in ("mean", "max")}
