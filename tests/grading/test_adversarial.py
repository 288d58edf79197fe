"""The grader is bounded for any input: on a generated corpus of 1,000 adversarial
completions, every call hands math-verify at most its deadline and one retry at
RETRY_FACTOR times it, the budgets one pair is handed add up to at most
PAIR_BUDGET_FACTOR times the deadline (its workers dying on it included), every
comparison ends by its budget (a hang would not), and a batch compares each distinct
pair once.

The bounds are counted (the budgets each call handed out, the comparisons a batch
made), not timed: a loaded machine slows every call, and a wall-clock bound on a
2-core machine at load 8 fails for that reason alone. Only a hang is timed, with a
margin no load reaches (HANG_S past a comparison's budget)."""

from __future__ import annotations

import time
import unicodedata

import pytest

from isocompute.grading import adversarial, grade_many, grade_with_reason, sandbox, verdict, warm_up
from isocompute.grading import worker as worker_module
from isocompute.grading.extract import MAX_CHARS

TIMEOUT_S = 1.0
WHOLE_S = verdict.PAIR_BUDGET_FACTOR * TIMEOUT_S  # one pair's whole cost
SHIPPED_RETRY_FACTOR = verdict.RETRY_FACTOR
RETRY_FACTOR = 1.5  # the retry is exercised at a fraction of the shipped cost
HANG_S = 30.0  # a comparison this far past its budget did not stop at it: a hang, not load
UNSETTLED = {"timeout", "no time left"}  # outcomes that depend on the machine's speed


@pytest.fixture(scope="module", autouse=True)
def _retry_factor():
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(verdict, "RETRY_FACTOR", RETRY_FACTOR)
        yield


@pytest.fixture(scope="module")
def corpus() -> list[adversarial.Case]:
    return adversarial.corpus(1_000, seed=14)


class _Spy:
    """Every math-verify comparison: (answer, truth, budget_s, seconds it waited)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, float, float]] = []

    def wrap(self, compare):
        def spied(worker_or_answer, *args):
            start = time.monotonic()
            try:
                return compare(worker_or_answer, *args)
            finally:
                answer, truth, budget = (worker_or_answer, *args) if isinstance(worker_or_answer, str) else args
                self.calls.append((answer, truth, budget, time.monotonic() - start))
        return spied


@pytest.fixture(scope="module")
def spy():
    recorder = _Spy()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(worker_module.Worker, "compare", recorder.wrap(worker_module.Worker.compare))
        patch.setattr(sandbox, "_compare_in_fork", recorder.wrap(sandbox._compare_in_fork))
        yield recorder


@pytest.fixture(scope="module")
def graded(corpus, spy):
    warm_up(2)  # a spare worker for the call after a kill
    sandbox.clear_memo()
    # One call per distinct pair: the grader does not remember a timeout between
    # calls, so a repeat would only pay the same bounded call again.
    by_pair: dict[tuple[str, str], tuple] = {}
    outcomes = []
    for case in corpus:
        pair = (case.completion, case.ground_truth)
        if pair not in by_pair:
            # Each call from ready workers: a killed worker's replacement starting is not a
            # pair's time (grade's docstring), and with no timeout remembered the distinct
            # pathological answers come back to back.
            warm_up(2)
            first = len(spy.calls)
            verdict, reason = grade_with_reason(*pair, timeout_s=TIMEOUT_S)
            by_pair[pair] = (verdict, reason, None, spy.calls[first:])
        outcomes.append(by_pair[pair])
    return outcomes, None


def test_corpus_is_deterministic_and_adversarial(corpus):
    assert adversarial.corpus(60, seed=3) == adversarial.corpus(60, seed=3)
    assert adversarial.corpus(60, seed=3) != adversarial.corpus(60, seed=4)
    assert len(corpus) == 1_000
    assert {case.kind for case in corpus} == set(adversarial.KINDS)
    lengths = [len(case.completion) for case in corpus]
    assert max(lengths) >= 1_000_000
    assert sum(MAX_CHARS - 1_000 <= n <= MAX_CHARS for n in lengths) >= 40  # read in full
    completions = {case.completion for case in corpus}
    assert "\\boxed{" * 16_000 in completions and "123," * 25_000 + "1" in completions


def test_every_call_is_bounded(corpus, graded):
    outcomes, _ = graded
    over = []
    for case, (_, reason, _, calls) in zip(corpus, outcomes):
        budgets = sorted({round(budget, 6) for *_, budget, _ in calls})
        # At most two budgets: what was left of the deadline, then the retry; each tried at
        # most twice (a fresh worker for one that died on the pair).
        if (len(budgets) > 2 or any(b > RETRY_FACTOR * TIMEOUT_S + 1e-6 for b in budgets)
                or sum(b <= TIMEOUT_S + 1e-6 for b in budgets) > 1 or len(calls) > 4):
            over.append((case.kind, reason, budgets, len(calls)))
        if sum(budget for *_, budget, _ in calls) > WHOLE_S + 1e-9:
            over.append((case.kind, reason, "whole cost", [budget for *_, budget, _ in calls]))
    assert not over, over[:5]
    hung = [(case.kind, budget, round(waited, 1)) for case, (*_, calls) in zip(corpus, outcomes)
            for *_, budget, waited in calls if waited > budget + HANG_S]
    assert not hung, hung[:5]
    # The corpus does reach math-verify. Whether it also runs out of time at TIMEOUT_S depends
    # on the machine (the cheap early decisions settle the worst kinds on a quiet one), so the
    # out-of-time path is exercised below with a deadline no comparison meets.
    assert sum(len(o[3]) for o in outcomes) > 0


def test_a_pair_out_of_time_stays_within_its_budgets(corpus, graded, spy):
    outcomes, _ = graded
    reached = [case for case, (*_, calls) in zip(corpus, outcomes) if calls][:3]
    assert reached
    tiny = 1e-4  # far below one round trip to a worker: every comparison runs out of time
    settled = {(c.completion, c.ground_truth): o[:2] for c, o in zip(corpus, outcomes)}
    for case in reached:
        warm_up(2)
        sandbox.clear_memo()
        first = len(spy.calls)
        correct, reason = grade_with_reason(case.completion, case.ground_truth, timeout_s=tiny)
        budgets = sorted({round(budget, 9) for *_, budget, _ in spy.calls[first:]})
        # Out of time, or -- where a paused caller found the worker's answer already in the pipe
        # at its one look after the deadline -- math-verify's own verdict, the one it gave at TIMEOUT_S.
        assert ((reason in UNSETTLED and not correct)
                or (correct, reason) == settled[(case.completion, case.ground_truth)]), (case.kind, reason)
        assert len(budgets) <= 2 and all(b <= RETRY_FACTOR * tiny + 1e-9 for b in budgets), budgets
        assert len(spy.calls) - first <= 4
        assert sum(budget for *_, budget, _ in spy.calls[first:]) <= verdict.PAIR_BUDGET_FACTOR * tiny + 1e-12


def test_a_pair_whose_workers_die_stays_within_its_whole_cost(corpus, graded, spy, monkeypatch):
    # The corpus's pairs that reach math-verify, each on workers that die as they receive it, at
    # the shipped retry: without the whole-cost bound the first try, its re-try on a fresh
    # worker, the retry and its re-try would be handed 1 + 1 + 4 + 4 = 10 deadlines.
    outcomes, _ = graded
    reached = list({(c.completion, c.ground_truth): c for c, (*_, calls) in zip(corpus, outcomes) if calls}.values())
    assert reached
    monkeypatch.setattr(verdict, "RETRY_FACTOR", SHIPPED_RETRY_FACTOR)
    compare = worker_module.Worker.compare  # the spy's

    def dies(self, answer, truth, budget_s):
        self.proc.kill()
        self.proc.wait()
        return compare(self, answer, truth, budget_s)

    monkeypatch.setattr(worker_module.Worker, "compare", dies)
    timeout_s = 0.25  # each restart (a second or more) counts against the whole cost: kept short
    for case in reached[:3]:
        warm_up(2)
        sandbox.clear_memo()
        first = len(spy.calls)
        start = time.monotonic()
        correct, reason = grade_with_reason(case.completion, case.ground_truth, timeout_s=timeout_s)
        budgets = [budget for *_, budget, _ in spy.calls[first:]]
        assert not correct and reason in UNSETTLED, (case.kind, reason)
        assert 1 <= len(budgets) <= 4 and sum(budgets) <= verdict.PAIR_BUDGET_FACTOR * timeout_s + 1e-9, budgets
        assert time.monotonic() - start < verdict.PAIR_BUDGET_FACTOR * timeout_s + HANG_S
    monkeypatch.undo()
    warm_up(2)


def test_policies_hold_on_the_corpus(corpus, graded):
    outcomes, _ = graded
    by_kind: dict[str, set[tuple[bool, str]]] = {}
    for case, (correct, reason, *_) in zip(corpus, outcomes):
        by_kind.setdefault(case.kind, set()).add((correct, reason))
    assert by_kind["control characters"] == {(False, "control character")}
    # Unicode digits grade as the ASCII digits they stand for (a bare number after a
    # padding of the same number is a spaced list, no answer, either way).
    unicode_cases = [(case, outcome) for case, outcome in zip(corpus, outcomes) if case.kind == "unicode digits"]
    for case, (correct, reason, *_) in unicode_cases:
        ascii_completion = "".join(str(unicodedata.decimal(ch)) if ch.isdecimal() else ch for ch in case.completion)
        assert grade_with_reason(ascii_completion, case.ground_truth) == (correct, reason), case.completion[-40:]
    assert (True, "numeric") in by_kind["unicode digits"]
    assert by_kind["1M characters"] == {(False, "too long")}
    assert not any(correct for correct, _ in by_kind["power tower"])


def test_grade_many_agrees_on_the_corpus(corpus, graded, spy):
    outcomes, _ = graded
    first = len(spy.calls)
    verdicts = grade_many([c.completion for c in corpus], [c.ground_truth for c in corpus], timeout_s=TIMEOUT_S)
    calls = spy.calls[first:]
    # A batch's repeats of a pair are compared once: at most the comparisons of grading
    # each distinct pair once (two budgets, each tried at most twice).
    distinct = {(c.completion, c.ground_truth) for c in corpus}
    per_pair: dict[tuple[str, str], int] = {}
    for answer, truth, *_ in calls:
        per_pair[(answer, truth)] = per_pair.get((answer, truth), 0) + 1
    assert max(per_pair.values(), default=0) <= 4, max(per_pair.values())
    whole: dict[tuple[str, str], float] = {}
    for answer, truth, budget, _ in calls:
        whole[(answer, truth)] = whole.get((answer, truth), 0.0) + budget
    assert max(whole.values(), default=0.0) <= WHOLE_S + 1e-9
    assert len(calls) <= 4 * len(distinct)
    settled = [(v, o[0]) for v, o in zip(verdicts, outcomes) if o[1] not in UNSETTLED]
    assert all(a == b for a, b in settled)


def test_cheap_pathological_answers_never_reach_math_verify(monkeypatch):
    # Power towers, huge factorials, deep roots: decided before math-verify, wrong. 5,000 braces
    # around 1 only wrap it (`limits.unwrap`): 1, also before math-verify.
    def no_math_verify(*args, **kwargs):
        raise AssertionError("decided before math-verify")

    monkeypatch.setattr(sandbox, "slow_verdict", no_math_verify)
    for case in adversarial.DECIDED_BEFORE_MATH_VERIFY:
        correct, reason = grade_with_reason(case.completion, case.ground_truth, timeout_s=TIMEOUT_S)
        assert correct is (case.kind == "nested braces"), (case.kind, reason)
        assert reason in ("numeric", "too deep", "too large"), (case.kind, reason)
