"""`grade` and `grade_many` agree with math-verify on a table of completions,
say why a completion was graded as it was and whether it was decided or timed
out, and keep one deadline per call (and one longer retry)."""

from __future__ import annotations

import time

import pytest
from grading_cases import SLOW, TABLE, TOWER, raw_math_verify

from isocompute.grading import Verdict, grade, grade_many, grade_with_reason, judge, judge_many, sandbox, verdict


@pytest.mark.parametrize(("completion", "truth", "expected"), TABLE)
def test_table_agrees_with_math_verify(completion, truth, expected):
    assert grade(completion, truth) is expected
    assert raw_math_verify(completion, truth) is expected


def test_argument_errors():
    with pytest.raises(ValueError):
        grade_many(["\\boxed{1}"], [])
    with pytest.raises(ValueError):
        grade("\\boxed{1}", "1", timeout_s=0)
    with pytest.raises(ValueError, match="max_chars"):
        grade("\\boxed{1}", "1", max_chars=0)


@pytest.mark.parametrize(
    ("completion", "truth", "expected"),
    [
        ("\\boxed{42}", "42", (True, "numeric")),
        ("\\boxed{41}", "42", (False, "numeric")),
        ("\\boxed{1+x^2}", "x^2+1", (True, "math-verify")),
        ("\\boxed{x^2-1}", "x^2+1", (False, "math-verify")),
        ("I am not sure.", "42", (False, "no answer")),
        ("\\boxed{42", "42", (False, "no answer")),
        ("\\boxed{42}", "", (False, "no ground truth")),
        ("\\boxed{42\x1b[31m}", "31", (False, "control character")),
    ],
)
def test_reasons(completion, truth, expected):
    assert grade_with_reason(completion, truth) == expected


def _spy_comparisons(monkeypatch, outcome=None) -> list[float]:
    """The budgets math-verify is given, one per comparison; `outcome` replaces running it."""
    budgets: list[float] = []
    compare = sandbox._compare_guarded

    def spy(answer, truth, budget_s, allowance):
        budgets.append(budget_s)
        return outcome if outcome is not None else compare(answer, truth, budget_s, allowance)

    monkeypatch.setattr(sandbox, "_compare_guarded", spy)
    return budgets


def test_one_deadline_covers_extraction(monkeypatch):
    read_answer = verdict.read_answer

    def slow_read_answer(*args, **kwargs):
        time.sleep(0.6)
        return read_answer(*args, **kwargs)

    monkeypatch.setattr(verdict, "read_answer", slow_read_answer)
    sandbox.clear_memo()
    budgets = _spy_comparisons(monkeypatch, (Verdict.TIMED_OUT, sandbox.TIMEOUT))
    # math-verify gets what extraction left of the second (at most 0.4 s), then its retry.
    assert judge(TOWER, "42", timeout_s=1.0) == (Verdict.TIMED_OUT, "timeout")
    assert len(budgets) == 2 and budgets[0] <= 0.4 and budgets[1] == verdict.RETRY_FACTOR * 1.0
    # Extraction that outlasts the deadline leaves math-verify only the retry.
    budgets.clear()
    assert judge("\\boxed{x+1}", "1+x", timeout_s=0.5) == (Verdict.TIMED_OUT, "timeout")
    assert budgets == [verdict.RETRY_FACTOR * 0.5]
    sandbox.clear_memo()


def test_no_budget_at_all_is_no_time_left(monkeypatch):
    read_answer = verdict.read_answer

    def slow_read_answer(*args, **kwargs):
        time.sleep(0.2)
        return read_answer(*args, **kwargs)

    monkeypatch.setattr(verdict, "RETRY_FACTOR", 0.0)  # no retry either
    monkeypatch.setattr(verdict, "read_answer", slow_read_answer)
    sandbox.clear_memo()
    budgets = _spy_comparisons(monkeypatch)
    assert judge("\\boxed{x+1}", "1+x", timeout_s=0.1) == (Verdict.TIMED_OUT, "no time left")
    assert budgets == []
    sandbox.clear_memo()


def test_a_tiny_deadline_is_timed_out_not_wrong_and_graded_again():
    # No worker answers within microseconds, retry included (or extraction leaves no
    # time of the whole-cost bound for one); a later call with the usual timeout grades
    # the same pair on its merits.
    sandbox.clear_memo()
    pair = ("\\boxed{3x+3}", "3(x+1)")
    # Never wrong. On a loaded machine the caller can be preempted between sending the pair and
    # its one look at the pipe, long enough for the worker to answer: then it is correct.
    unsettled = {(Verdict.TIMED_OUT, "timeout"), (Verdict.TIMED_OUT, "no time left")}
    assert judge(*pair, timeout_s=1e-6) in unsettled | {(Verdict.CORRECT, "math-verify")}
    sandbox.clear_memo()
    assert grade_with_reason(*pair, timeout_s=1e-6) in ((False, "timeout"), (False, "no time left"),
                                                         (True, "math-verify"))
    sandbox.clear_memo()
    assert judge(*pair) == (Verdict.CORRECT, "math-verify")
    sandbox.clear_memo()


def test_judge_many_counts_each_kind(monkeypatch):
    sandbox.clear_memo()
    completions = ["\\boxed{42}", "\\boxed{41}", "\\boxed{x+x}", "no answer here"]
    truths = ["42", "42", "2x", "42"]
    monkeypatch.setattr(sandbox, "slow_verdict", lambda *args: (Verdict.TIMED_OUT, sandbox.TIMEOUT))
    verdicts = judge_many(completions, truths)
    assert verdicts == [Verdict.CORRECT, Verdict.WRONG, Verdict.TIMED_OUT, Verdict.WRONG]
    assert grade_many(completions, truths) == [v.correct for v in verdicts] == [True, False, False, False]


def test_grade_many_gives_each_pair_its_own_timeout(monkeypatch):
    # Each pair's budget is its own timeout (less its extraction), whatever the pairs before it
    # took, and runs only from when a ready worker has it: the honest answer is correct even
    # after two workers were killed on towers. Production settings: the retry gets
    # RETRY_FACTOR x the timeout, within the pair's whole cost of PAIR_BUDGET_FACTOR x the
    # timeout from its first ready worker (sandbox.slow_verdict), which a worker restart after
    # the first try eats into. So the honest pair must be decided by its first try: 2x against
    # x+x took 30 ms on a quiet 2-core machine and up to 0.44 s (a fresh worker's first
    # comparison, niced) beside two CPU burners, where a worker restart took 5 to 12 s. At a
    # 0.3 s timeout it timed out there (2 runs of 2); 1 s leaves it twice its worst and passed
    # (3 of 3, 28-44 s). The towers cost about 5 s each (first try and retry): 13 s quiet.
    timeout_s = 1.0
    sandbox.clear_memo()
    budgets = _spy_comparisons(monkeypatch)
    totals = []   # each pair's whole-cost bound, as the sandbox's allowance is made with it
    make_allowance = sandbox._Allowance.__init__
    monkeypatch.setattr(sandbox._Allowance, "__init__",
                        lambda self, total_s: (totals.append(total_s), make_allowance(self, total_s))[1])
    towers = [SLOW(9), SLOW(8)]  # they reach math-verify
    verdicts = judge_many(towers + ["\\boxed{2x}"], ["1", "1", "x+x"], timeout_s=timeout_s)
    assert verdicts == [Verdict.TIMED_OUT, Verdict.TIMED_OUT, Verdict.CORRECT]
    # Each tower: its own budget, then the retry. The honest pair: its own budget too, and on a
    # loaded machine where that is not enough the retry, with what is left of its whole cost.
    retry_s = verdict.RETRY_FACTOR * timeout_s
    assert len(budgets) in (5, 6) and budgets[1] == budgets[3] == retry_s and budgets[5:] in ([], [retry_s])
    # each tower's whole cost is bounded by PAIR_BUDGET_FACTOR deadlines, and its first try and
    # retry fit in that bound
    assert len(totals) == 3 and all(t <= verdict.PAIR_BUDGET_FACTOR * timeout_s for t in totals), totals
    assert budgets[0] + budgets[1] <= totals[0] and budgets[2] + budgets[3] <= totals[1], (budgets, totals)
    assert all(timeout_s - 0.1 < b <= timeout_s for b in budgets[0:5:2])
    sandbox.clear_memo()


@pytest.mark.parametrize(("completion", "truth", "expected"), [
    ("\\boxed{\\frac{x}{3}\\cdot 3}", "x", Verdict.CORRECT),
    ("\\boxed{2x-x}", "x", Verdict.CORRECT),
    ("\\boxed{\\frac{y}{2}\\cdot 2}", "y", Verdict.CORRECT),
    ("\\boxed{2x}", "x", Verdict.WRONG),
    ("\\boxed{x+1}", "x", Verdict.WRONG),
    ("\\boxed{y}", "x", Verdict.WRONG),
    ("\\boxed{yes}", "\\text{yes}", Verdict.CORRECT),
])
def test_a_bare_variable_truth_is_compared_as_an_identity(completion, truth, expected):
    """math-verify compares a bare-variable ground truth as text (3x/3 is wrong by it, raw_math_verify
    below); the worker then asks sympy whether the answer is the variable as an identity."""
    assert judge(completion, truth)[0] is expected
    if expected is Verdict.CORRECT and truth != "\\text{yes}":
        assert raw_math_verify(completion, truth) is False
