"""Timed-out rewards of verl's training steps: per step, how many rollouts the grader
could not decide (the reward function's `timed_out`), under the local backend's
metric keys, and the check that fails a run above grading.max_timeout_share.

verl 0.9.1 reduces the reward function's extra keys into validation metrics only,
and its V1 trainer's rollout dumps leave them out, so the project's trainer mode
(`scheduled.ScheduledTrainer`) counts them from each step's rollouts into verl's
own step metrics (its file logger and trackers); run_verl checks those records
while verl runs. Pure: no verl import.
"""

from __future__ import annotations

from isocompute.grading import SHARE_METRIC as SHARE
from isocompute.grading import TIMEOUTS_METRIC as TIMEOUTS
from isocompute.grading import TooManyTimeouts, check_timeout_share, timeout_metrics


def step_timeouts(extra_fields: list, padding: list[bool]) -> dict:
    """{TIMEOUTS, SHARE} of one training step, from verl's per-rollout `extra_fields` (each a
    dict whose 'reward_extra_info' is the reward function's dict) and its padding tags
    (verl pads the batch with copies of rollouts to divide it evenly: not counted).

    A rollout without `timed_out` was not scored by this project's reward function, so
    its step's timeouts are unknown: a ValueError, which ends verl's session.
    """
    infos = [(f or {}).get("reward_extra_info") or {} for f, pad in zip(extra_fields, padding, strict=True)
             if not pad]
    missing = sum("timed_out" not in info for info in infos)
    if missing or not infos:
        raise ValueError(f"{missing} of {len(infos)} training rollouts have no 'timed_out' in their reward_extra_info; "
                         "expected the reward function of train/backends/verl/reward.py (reward.custom_reward_function)")
    timeouts = sum(float(info["timed_out"]) > 0.5 for info in infos)
    return timeout_metrics(timeouts, len(infos))


def check_step(record: dict, limit: float, run: str) -> None:
    """Raise TooManyTimeouts (naming `run`, the step and grading.max_timeout_share) when a
    metrics record {'step', 'data'} has a timeout share above `limit`; a record without a
    count (step 0's validation, a run trained before counting) passes."""
    data = record.get("data", {})
    timeouts = int(data.get(TIMEOUTS, 0))
    if timeouts:
        rollouts = round(timeouts / float(data[SHARE]))  # the step's rollouts, as counted
        check_timeout_share(timeouts, rollouts, limit, f"train {run} step {int(record['step'])}")


def first_over(records: list[dict], limit: float, run: str) -> TooManyTimeouts | None:
    """The error of the first record above the share, or None."""
    for record in records:
        try:
            check_step(record, limit, run)
        except TooManyTimeouts as exc:
            return exc
    return None
