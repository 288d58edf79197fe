"""The grader's entry points: `grade` one completion, `grade_many` a batch.

Each pair goes extract -> numeric fast path -> sandboxed math-verify under one
deadline, and a pair that math-verify could not decide in it gets one longer
try (`RETRY_FACTOR`), all within one whole-cost bound per pair
(`PAIR_BUDGET_FACTOR` times the deadline); every stage that needs a correctness bit calls these, so
all agree on "correct". `judge` and `judge_many` say what a pair came to
(`Verdict`: correct, wrong or timed out); `grade` and `grade_many` give the bit
(timed out counts as not correct).
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from isocompute.grading import sandbox
from isocompute.grading.cache import GradeCache
from isocompute.grading.extract import (BOXED, CONTROL_CHARACTER, MAX_CHARS, TOO_DEEP, TOO_LONG, all_boxed,
                                        normalize_truth, read_answer, too_deep)
from isocompute.grading.limits import TOO_LARGE, too_large, unwrap
from isocompute.grading.numeric import fast_verdict, magnitude_verdict
from isocompute.grading.outcome import Verdict

logger = logging.getLogger(__name__)

# How a verdict came about, besides the reasons of `extract` and `sandbox`.
NUMERIC = "numeric"  # decided by the fast path
NO_GROUND_TRUTH = "no ground truth"

# A pair that math-verify could not decide within its call's deadline is tried
# once more with this many times the timeout before it is reported timed out.
RETRY_FACTOR = 4.0
# One pair's whole cost: the deadline plus one bounded retry. Extraction and every budget handed
# to math-verify (the first try, the retry, a re-try for one that died) together stay within
# this many times the timeout, and the call's wall time within it plus two hand-overs of
# `worker.RELAY_GRACE_S` (`sandbox.slow_verdict`'s `total_s`), every wait for a worker to
# restart included. A pair out of time costs no restart: its worker kills the forked child
# that ran it and forks another (milliseconds; an interpreter start took 24-28 s on the
# loaded 2-core machine). Not counted: the start of a worker new to the pool (a process's
# first comparison, or one more concurrent caller), which `warm_up` pays up front.
PAIR_BUDGET_FACTOR = 1.0 + RETRY_FACTOR

# Reasons worth a debug line: the completion was not graded on its merits.
_UNUSUAL = {TOO_LONG, CONTROL_CHARACTER, TOO_DEEP, TOO_LARGE, sandbox.TIMEOUT, sandbox.NO_TIME}


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
    answer = unwrap(answer)
    truth = ground_truth if isinstance(ground_truth, str) else str(ground_truth)
    if len(truth) > max_chars:
        return False, TOO_LONG, answer, ""
    truth = unwrap(normalize_truth(truth))
    if not truth:
        return False, NO_GROUND_TRUTH, answer, ""
    verdict = fast_verdict(answer, truth)
    if verdict is None:
        # Cheap cases math-verify would spend its whole budget on: written limits (`limits`).
        if too_deep(answer) or too_deep(truth):
            return False, TOO_DEEP, answer, truth
        verdict = magnitude_verdict(answer, truth)
        if verdict is None and (too_large(answer) or too_large(truth)):
            return False, TOO_LARGE, answer, truth
    return verdict, NUMERIC, answer, truth


def _slow(answer: str, truth: str, spent_s: float, timeout_s: float) -> tuple[Verdict, str]:
    """math-verify's verdict for a pair whose extraction took `spent_s` of its call's budgets."""
    return sandbox.slow_verdict(answer, truth, timeout_s - spent_s, RETRY_FACTOR * timeout_s,
                                PAIR_BUDGET_FACTOR * timeout_s - spent_s)


def judge(
    completion: str, ground_truth: str, timeout_s: float = 2.0, *, max_chars: int = MAX_CHARS
) -> tuple[Verdict, str]:
    """What grading the completion came to (`Verdict`), and how.

    The reason is one of "numeric" or "math-verify" (decided on the merits),
    "no answer", "no ground truth", "too long" (over `max_chars` characters),
    "control character", "too deep" (groups nested over `extract.MAX_NESTING`) and "too large"
    (an exponent, factorial or size over a limit of `limits`) (all WRONG), or "timeout" (math-verify ran out of
    its time, the retry's included) or "no time left" (none was left for it),
    both TIMED_OUT. The call costs at most `PAIR_BUDGET_FACTOR` times
    `timeout_s` plus two hand-overs, whatever the completion (`grade` says what is counted).
    """
    _check_arguments(timeout_s, max_chars)
    started = time.monotonic()
    correct, reason, answer, truth = _decide_here(completion, ground_truth, max_chars)
    if correct is not None:
        verdict = Verdict.of(correct)
    else:
        verdict, reason = _slow(answer, truth, time.monotonic() - started, timeout_s)
    if reason in _UNUSUAL:
        logger.debug("graded %s (%s): completion of %d characters", verdict.value, reason, len(completion or ""))
    return verdict, reason


def grade_with_reason(
    completion: str, ground_truth: str, timeout_s: float = 2.0, *, max_chars: int = MAX_CHARS
) -> tuple[bool, str]:
    """`grade`'s verdict and how it came about (the reasons of `judge`)."""
    verdict, reason = judge(completion, ground_truth, timeout_s, max_chars=max_chars)
    return verdict.correct, reason


def grade(completion: str, ground_truth: str, timeout_s: float = 2.0, *, max_chars: int = MAX_CHARS) -> bool:
    """True iff the completion's answer (see `extract_answer`) equals the ground truth.

    Plain numbers are compared here with math-verify's verdicts; everything
    else is math-verify's `verify`. Safe from any thread. One deadline,
    `timeout_s` from the call, covers extraction and math-verify, for any
    input: a completion over `max_chars` characters is False unread. A
    comparison still running at the deadline is tried once more with
    `RETRY_FACTOR` times `timeout_s`, and False if that runs out too (`judge`
    tells it apart as TIMED_OUT). Waiting for a new math-verify worker to start
    (about a second; `warm_up` pays it up front) never eats into a comparison's
    budget.

    The whole call is bounded: extraction and the budgets handed to math-verify
    (both tries, a re-try for one that died) add up to at most
    `PAIR_BUDGET_FACTOR` (1 + `RETRY_FACTOR`) times `timeout_s`, and the call
    returns within that plus two hand-overs (`worker.RELAY_GRACE_S` each),
    waiting for any worker restart included. Beside it, only the start of a
    worker new to the pool (a process's first slow pair, nothing after
    `warm_up`). A pair that reaches the bound is TIMED_OUT.
    """
    return judge(completion, ground_truth, timeout_s, max_chars=max_chars)[0].correct


def judge_many(
    completions: Sequence[str],
    ground_truths: Sequence[str],
    timeout_s: float = 2.0,
    cache: GradeCache | None = None,
    num_workers: int = 1,
    *,
    max_chars: int = MAX_CHARS,
) -> list[Verdict]:
    """`judge`'s verdict for each pair, reusing and filling `cache` when one is given.

    Each pair has `timeout_s` and the whole-cost bound as `judge` would give
    them, counted from when its comparison starts. `num_workers` > 1
    runs the math-verify comparisons concurrently (one worker process each,
    started before the first comparison); plain-number pairs never leave this
    thread. Repeats of one (answer, ground truth) pair within the call are
    compared once. Only definite verdicts are written to `cache` (or kept in
    the process): a timed-out pair is graded again by the next call.
    """
    if len(completions) != len(ground_truths):
        raise ValueError(
            f"{len(completions)} completions but {len(ground_truths)} ground truths"
        )
    _check_arguments(timeout_s, max_chars)
    results, pending, fresh = _judge_here(completions, ground_truths, cache, max_chars)
    decided = _judge_slow(pending, timeout_s, num_workers)
    for i, answer, truth, _ in pending:
        results[i] = decided[(answer, truth)]
    if cache is not None:
        for i in fresh:
            if results[i].definite:
                cache.put(completions[i], ground_truths[i], results[i].correct)
    return results  # type: ignore[return-value]


def _judge_here(completions, ground_truths, cache: GradeCache | None, max_chars: int):
    """The verdicts this thread reaches alone (cache hits, plain numbers): (results with None
    where math-verify must compare, those pairs as (index, answer, truth, seconds its extraction
    took), the indices to write back to the cache)."""
    results: list[Verdict | None] = [None] * len(completions)
    pending: list[tuple[int, str, str, float]] = []
    fresh: list[int] = []
    for i, (completion, truth) in enumerate(zip(completions, ground_truths)):
        if cache is not None:
            hit = cache.get(completion, truth)
            if hit is not None:
                results[i] = Verdict.of(hit)
                continue
            fresh.append(i)
        started = time.monotonic()
        correct, _, answer, norm_truth = _decide_here(completion, truth, max_chars)
        if correct is None:
            pending.append((i, answer, norm_truth, time.monotonic() - started))
        else:
            results[i] = Verdict.of(correct)
    return results, pending, fresh


def _judge_slow(pending, timeout_s: float, num_workers: int) -> dict[tuple[str, str], Verdict]:
    """math-verify's verdict for each distinct (answer, truth) of `pending`, on up to
    `num_workers` worker processes."""

    def slow(item: tuple[int, str, str, float]) -> tuple[Verdict, str]:
        return _slow(item[1], item[2], item[3], timeout_s)

    # A batch's repeats of one pair (a policy writing one answer n times) are
    # compared once: a pathological answer costs one timeout per batch.
    first: dict[tuple[str, str], int] = {}
    distinct = [item for item in pending if first.setdefault((item[1], item[2]), item[0]) == item[0]]
    if num_workers > 1 and len(distinct) > 1:
        workers = min(num_workers, len(distinct))
        sandbox.warm_up(workers)  # a batch's start-up, not any pair's time
        with ThreadPoolExecutor(workers) as executor:
            outcomes = list(executor.map(slow, distinct))
    else:
        outcomes = [slow(item) for item in distinct]
    return {(item[1], item[2]): verdict for item, (verdict, _) in zip(distinct, outcomes)}


def grade_many(
    completions: Sequence[str],
    ground_truths: Sequence[str],
    timeout_s: float = 2.0,
    cache: GradeCache | None = None,
    num_workers: int = 1,
    *,
    max_chars: int = MAX_CHARS,
) -> list[bool]:
    """`grade` for each pair: `judge_many`'s verdicts as bits (timed out is not correct)."""
    verdicts = judge_many(completions, ground_truths, timeout_s, cache, num_workers, max_chars=max_chars)
    return [v.correct for v in verdicts]


def boxes_apart_in_prose(ground_truth: object, timeout_s: float = 2.0) -> bool:
    """Whether a ground truth holds several boxes that math-verify reads as its last box alone
    ("First \\boxed{1}. Later we find \\boxed{2}" is 2), not as one answer of several parts
    ("\\boxed{1} and \\boxed{2}" is {1, 2}): the grader would reward the last box and never
    the answer the truth's text gives. Asked of math-verify itself (its rule for joining
    boxes reads the prose between them); a truth it cannot read in time is not refused."""
    truth = normalize_truth(ground_truth)
    boxes = all_boxed(truth) if BOXED in truth else []
    if len(boxes) < 2:
        return False
    last_alone = judge(BOXED + "{" + boxes[-1] + "}", truth, timeout_s)[0]
    joined = judge(BOXED + "{" + ", ".join(boxes) + "}", truth, timeout_s)[0]
    return last_alone is Verdict.CORRECT and joined is Verdict.WRONG


# How many of a loaded cache's verdicts are graded again before it is trusted, and the seed
# that picks them (fixed: the same dumps check the same pairs).
SPOT_CHECKS = 32
SPOT_CHECK_SEED = 0


def spot_check_cache(cache: GradeCache, completions: Sequence[str], ground_truths: Sequence[str],
                     source: str, checks: int = SPOT_CHECKS, timeout_s: float = 2.0) -> GradeCache:
    """`cache`, or an empty one if it fails a spot check: up to `checks` of its verdicts on these
    pairs (picked with a fixed seed) are graded again, and one definite verdict that differs (a
    cache edited by hand, or written by a grader that changed without its version) drops it,
    with a warning naming `source`. A pair that times out now proves nothing either way."""
    import random

    pairs = sorted({(str(c), str(t)) for c, t in zip(completions, ground_truths) if cache.get(c, t) is not None})
    if not pairs:
        return cache
    picked = random.Random(SPOT_CHECK_SEED).sample(pairs, min(checks, len(pairs)))
    fresh = judge_many([c for c, _ in picked], [t for _, t in picked], timeout_s)
    wrong = [(c, t) for (c, t), v in zip(picked, fresh) if v.definite and v.correct != cache.get(c, t)]
    if wrong:
        logger.warning("ignoring grade cache %s: %d of %d spot-checked verdicts differ from the grader's (e.g. "
                       "%r against %r); it is rebuilt", source, len(wrong), len(picked), wrong[0][0][:80],
                       wrong[0][1][:80])
        return GradeCache()
    return cache
