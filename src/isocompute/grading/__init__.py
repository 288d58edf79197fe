"""The project's one answer grader: is a completion's final answer the ground truth?

Every stage that needs a correctness bit -- difficulty sampling, GRPO rewards,
validation scoring and the verl reward function -- calls `grade`, so they all
agree on what "correct" means. The pipeline of one call (`verdict`), under one
deadline for any input: `extract` picks the answer in linear time, `numeric`
decides plain numbers in microseconds, anything else goes to math-verify in a
killable worker process (`sandbox`, `worker`). `judge` says what a pair came
to (`outcome.Verdict`: correct, wrong, or timed out -- not graded on its
merits, counted apart); `cache` keeps definite verdicts between runs (stamped
with `version.GRADER_VERSION`), `adversarial` generates the inputs that
keep the bound honest, and `load` those graded on a loaded machine.
"""

from isocompute.grading.cache import GradeCache
from isocompute.grading.extract import extract_answer
from isocompute.grading.outcome import (SHARE_METRIC, TIMEOUTS_METRIC, TooManyTimeouts, Verdict,
                                        check_timeout_share, timeout_metrics)
from isocompute.grading.sandbox import warm_up
from isocompute.grading.verdict import (boxes_apart_in_prose, grade, grade_many, grade_with_reason, judge, judge_many,
                                        spot_check_cache)
from isocompute.grading.version import GRADER_VERSION

__all__ = [
    "GRADER_VERSION",
    "GradeCache",
    "SHARE_METRIC",
    "TIMEOUTS_METRIC",
    "TooManyTimeouts",
    "Verdict",
    "boxes_apart_in_prose",
    "check_timeout_share",
    "extract_answer",
    "grade",
    "grade_many",
    "grade_with_reason",
    "judge",
    "judge_many",
    "spot_check_cache",
    "timeout_metrics",
    "warm_up",
]
