"""What grading a pair came to: correct, wrong, or timed out.

A leaf of the grader. "Timed out" is not "wrong": math-verify ran out of time
(or crashed) before it could decide, so the pair was not graded on its
merits. It counts as not correct wherever a bit is needed (rewards,
avg@k), but callers count it, it is never saved as a verdict, and a training
step or an evaluation step with more than `grading.max_timeout_share` of them
fails (`check_timeout_share`).
"""

from __future__ import annotations

import enum

from isocompute.errors import InputError


class Verdict(enum.Enum):
    CORRECT = "correct"
    WRONG = "wrong"
    TIMED_OUT = "timed out"

    @classmethod
    def of(cls, correct: bool) -> "Verdict":
        """The definite verdict of a correctness bit."""
        return cls.CORRECT if correct else cls.WRONG

    @property
    def correct(self) -> bool:
        """The bit a reward or a score uses: only CORRECT is correct."""
        return self is Verdict.CORRECT

    @property
    def definite(self) -> bool:
        """Decided on the merits (correct or wrong), so fit to remember and save."""
        return self is not Verdict.TIMED_OUT


# The per-step metrics both training backends write (metrics.jsonl, verl's step metrics).
TIMEOUTS_METRIC = "grading/timeouts"
SHARE_METRIC = "grading/timeout_share"


def timeout_metrics(timeouts: int, total: int) -> dict:
    """A training step's {TIMEOUTS_METRIC, SHARE_METRIC}: `timeouts` of its `total` graded rollouts."""
    return {TIMEOUTS_METRIC: int(timeouts), SHARE_METRIC: timeouts / total}


class TooManyTimeouts(InputError):
    """More of a step's pairs timed out than grading.max_timeout_share allows."""


def check_timeout_share(timeouts: int, total: int, limit: float, where: str) -> float:
    """The share of `total` graded pairs that timed out; raises TooManyTimeouts naming
    `where` (the run and step) when it is above `limit` (grading.max_timeout_share)."""
    share = timeouts / total if total else 0.0
    if share > limit:
        raise TooManyTimeouts(
            f"{where}: {timeouts} of {total} graded pairs timed out (share {share:.4g} > "
            f"grading.max_timeout_share = {limit:g}); math-verify could not decide them within its "
            f"budget and retry (a loaded machine, or answers sympy cannot finish)")
    return share
