"""The grader's entry points: `grade` one completion, `grade_many` a batch.

Each pair goes extract -> numeric fast path -> sandboxed math-verify; every
stage that needs a correctness bit calls these, so all agree on "correct".
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Sequence

from isocompute.grading.extract import extract_answer, normalize_truth
from isocompute.grading.numeric import fast_verdict
from isocompute.grading.sandbox import slow_verdict

if TYPE_CHECKING:
    from isocompute.grading.cache import GradeCache

# Bump whenever a verdict could change (extraction rules, fast path, math-verify
# pin); saved GradeCache files from another version are then ignored.
GRADER_VERSION = "1"


def _grade_answer(answer: str | None, ground_truth: object, timeout_s: float) -> bool:
    if answer is None:
        return False
    truth = normalize_truth(ground_truth)
    if not truth:
        return False
    verdict = fast_verdict(answer, truth)
    if verdict is not None:
        return verdict
    return slow_verdict(answer, truth, float(timeout_s))


def grade(completion: str, ground_truth: str, timeout_s: float = 2.0) -> bool:
    """True iff the completion's answer (see `extract_answer`) equals the ground truth.

    Plain numbers are compared here with math-verify's verdicts; everything
    else is math-verify's `verify`. Safe from any thread; no input takes much
    longer than `timeout_s` (a timed-out comparison is False). Not counted in
    `timeout_s`: a worker's start (about a second), paid by the first
    non-numeric call in a process unless `warm_up` ran, and by a call that
    comes before the worker replacing a timed-out one is up.
    """
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    return _grade_answer(extract_answer(completion), ground_truth, timeout_s)


def grade_many(
    completions: Sequence[str],
    ground_truths: Sequence[str],
    timeout_s: float = 2.0,
    cache: GradeCache | None = None,
    num_workers: int = 1,
) -> list[bool]:
    """`grade` for each pair, reusing and filling `cache` when one is given.

    `num_workers` > 1 runs the math-verify comparisons concurrently (one worker
    process each); plain-number pairs never leave this thread.
    """
    if len(completions) != len(ground_truths):
        raise ValueError(
            f"{len(completions)} completions but {len(ground_truths)} ground truths"
        )
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    results: list[bool | None] = [None] * len(completions)
    pending: list[tuple[int, str, str]] = []
    fresh: list[int] = []  # indices to write back to the cache
    for i, (completion, truth) in enumerate(zip(completions, ground_truths)):
        if cache is not None:
            hit = cache.get(completion, truth)
            if hit is not None:
                results[i] = hit
                continue
            fresh.append(i)
        answer = extract_answer(completion)
        norm_truth = normalize_truth(truth)
        if answer is None or not norm_truth:
            results[i] = False
            continue
        verdict = fast_verdict(answer, norm_truth)
        if verdict is None:
            pending.append((i, answer, norm_truth))
        else:
            results[i] = verdict

    def slow(item: tuple[int, str, str]) -> bool:
        return slow_verdict(item[1], item[2], float(timeout_s))

    if num_workers > 1 and len(pending) > 1:
        with ThreadPoolExecutor(min(num_workers, len(pending))) as executor:
            slow_verdicts = list(executor.map(slow, pending))
    else:
        slow_verdicts = [slow(item) for item in pending]
    for (i, _, _), verdict in zip(pending, slow_verdicts):
        results[i] = verdict

    if cache is not None:
        for i in fresh:
            cache.put(completions[i], ground_truths[i], results[i])
    return results  # type: ignore[return-value]
