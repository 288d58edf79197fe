"""The grader's entry points: `grade` one completion, `grade_many` a batch.

Each pair goes extract -> numeric fast path -> sandboxed math-verify under one
deadline; every stage that needs a correctness bit calls these, so all agree
on "correct".
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Sequence

from isocompute.grading import sandbox
from isocompute.grading.extract import CONTROL_CHARACTER, MAX_CHARS, TOO_LONG, normalize_truth, read_answer
from isocompute.grading.numeric import fast_verdict

if TYPE_CHECKING:
    from isocompute.grading.cache import GradeCache

logger = logging.getLogger(__name__)

# Bump whenever the verdict on an ordinary completion could change (extraction
# rules, fast path, math-verify pin); saved GradeCache files from another
# version are then ignored. The bounded-time rewrite of the grader keeps version 1:
# ordinary completions grade as before (tests/grading/test_ordinary.py); only
# malformed ones may not (control characters, Unicode digits that reach
# math-verify, over MAX_CHARS characters).
GRADER_VERSION = "1"

# How a verdict came about, besides the reasons of `extract` and `sandbox`.
NUMERIC = "numeric"  # decided by the fast path
NO_GROUND_TRUTH = "no ground truth"

# Reasons worth a debug line: the completion was not graded on its merits.
_UNUSUAL = {TOO_LONG, CONTROL_CHARACTER, sandbox.TIMEOUT, sandbox.NO_TIME}


def _check_arguments(timeout_s: float, max_chars: int) -> None:
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    if max_chars <= 0:
        raise ValueError(f"max_chars must be positive, got {max_chars}")


def _decide_here(completion: str, ground_truth: object, max_chars: int) -> tuple[bool | None, str, str, str]:
    """(verdict or None, reason, answer, truth): everything before math-verify."""
    answer, reason = read_answer(completion, max_chars)
    if answer is None:
        return False, reason, "", ""
    truth = ground_truth if isinstance(ground_truth, str) else str(ground_truth)
    if len(truth) > max_chars:
        return False, TOO_LONG, answer, ""
    truth = normalize_truth(truth)
    if not truth:
        return False, NO_GROUND_TRUTH, answer, ""
    verdict = fast_verdict(answer, truth)
    return verdict, NUMERIC, answer, truth


def grade_with_reason(
    completion: str, ground_truth: str, timeout_s: float = 2.0, *, max_chars: int = MAX_CHARS
) -> tuple[bool, str]:
    """`grade`'s verdict and how it came about.

    The reason is one of "numeric" or "math-verify" (decided on the merits),
    "no answer", "no ground truth", "too long" (over `max_chars` characters),
    "control character", "timeout" (math-verify ran out of time) or "no time
    left" (the deadline passed before math-verify could start).
    """
    _check_arguments(timeout_s, max_chars)
    started = time.monotonic()
    verdict, reason, answer, truth = _decide_here(completion, ground_truth, max_chars)
    if verdict is None:
        verdict, reason = sandbox.slow_verdict(answer, truth, timeout_s - (time.monotonic() - started))
    if reason in _UNUSUAL:
        logger.debug("graded False (%s): completion of %d characters", reason, len(completion or ""))
    return verdict, reason


def grade(completion: str, ground_truth: str, timeout_s: float = 2.0, *, max_chars: int = MAX_CHARS) -> bool:
    """True iff the completion's answer (see `extract_answer`) equals the ground truth.

    Plain numbers are compared here with math-verify's verdicts; everything
    else is math-verify's `verify`. Safe from any thread. One deadline,
    `timeout_s` from the call, covers extraction, waiting for a worker and
    math-verify, for any input: a completion over `max_chars` characters is
    False unread, and a comparison still running at the deadline is False.
    Not counted: the first start of a math-verify worker in a process (about
    a second; `warm_up` pays it up front). `grade_with_reason` says which case
    applied.
    """
    return grade_with_reason(completion, ground_truth, timeout_s, max_chars=max_chars)[0]


def grade_many(
    completions: Sequence[str],
    ground_truths: Sequence[str],
    timeout_s: float = 2.0,
    cache: GradeCache | None = None,
    num_workers: int = 1,
    *,
    max_chars: int = MAX_CHARS,
) -> list[bool]:
    """`grade` for each pair, reusing and filling `cache` when one is given.

    Each pair has `timeout_s` as `grade` would give it. `num_workers` > 1
    runs the math-verify comparisons concurrently (one worker process each,
    started before the first comparison); plain-number pairs never leave this
    thread. A pair that found no time left is not written to `cache`.
    """
    if len(completions) != len(ground_truths):
        raise ValueError(
            f"{len(completions)} completions but {len(ground_truths)} ground truths"
        )
    _check_arguments(timeout_s, max_chars)
    results: list[bool | None] = [None] * len(completions)
    pending: list[tuple[int, str, str, float]] = []  # (index, answer, truth, budget left)
    fresh: list[int] = []  # indices to write back to the cache
    for i, (completion, truth) in enumerate(zip(completions, ground_truths)):
        if cache is not None:
            hit = cache.get(completion, truth)
            if hit is not None:
                results[i] = hit
                continue
            fresh.append(i)
        started = time.monotonic()
        verdict, _, answer, norm_truth = _decide_here(completion, truth, max_chars)
        if verdict is None:
            pending.append((i, answer, norm_truth, timeout_s - (time.monotonic() - started)))
        else:
            results[i] = verdict

    def slow(item: tuple[int, str, str, float]) -> tuple[bool, str]:
        return sandbox.slow_verdict(item[1], item[2], item[3])

    if num_workers > 1 and len(pending) > 1:
        workers = min(num_workers, len(pending))
        sandbox.warm_up(workers)  # a batch's start-up, not any pair's time
        with ThreadPoolExecutor(workers) as executor:
            outcomes = list(executor.map(slow, pending))
    else:
        outcomes = [slow(item) for item in pending]
    unsettled = set()
    for (i, _, _, _), (verdict, reason) in zip(pending, outcomes):
        results[i] = verdict
        if reason == sandbox.NO_TIME:
            unsettled.add(i)

    if cache is not None:
        for i in fresh:
            if i not in unsettled:
                cache.put(completions[i], ground_truths[i], results[i])
    return results  # type: ignore[return-value]
