"""What grading a pair came to: correct, wrong, or timed out.

A leaf of the grader. "Timed out" is not "wrong": math-verify ran out of time
(or crashed) before it could decide, so the pair was not graded on its
merits. It counts as not correct wherever a bit is needed (rewards,
avg@k), but callers can count it, and it is never saved as a verdict.
"""

from __future__ import annotations

import enum


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
