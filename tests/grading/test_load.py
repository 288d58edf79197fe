"""Verdicts on a loaded machine: a timeout is never a wrong answer.

Eight CPU burners (busy loops at normal priority, stopped by PID) share the
machine with the grader while it grades honest symbolic pairs (a correct
answer written differently from its ground truth, each checked equal with
sympy as it is drawn: isocompute.grading.load, as benchmarks/bench_grader_load.py
draws them) and answers sympy cannot finish. Whatever the load does to math-verify's speed, an honest pair
comes back correct or timed out, never wrong, and a tower never correct. The
assertions are on verdicts and counts, not on how long anything took.
"""

from __future__ import annotations

import os

import pytest

from isocompute.grading import Verdict, judge_many, load, sandbox, warm_up

BURNERS = 8

pytestmark = pytest.mark.slow   # a load test: CPU burners beside the grader


@pytest.fixture(scope="module")
def burners():
    procs = load.start_burners(BURNERS)
    try:
        yield procs
    finally:
        load.stop_burners(procs)


@pytest.fixture(autouse=True)
def _nothing_remembered():
    sandbox.clear_memo()  # every pair is compared under load here, not recalled
    yield
    sandbox.clear_memo()


def test_burners_run_beside_the_grader(burners):
    assert all(proc.poll() is None for proc in burners)
    assert os.cpu_count() and len(burners) >= 4 * min(os.cpu_count(), 2)


def test_honest_pairs_under_load_are_correct_or_timed_out(burners):
    pairs = load.honest_pairs(60, seed=23)
    warm_up(2)
    verdicts = judge_many([c for _, c, _ in pairs], [t for *_, t in pairs], num_workers=2)
    wrong = [(kind, c, t) for (kind, c, t), v in zip(pairs, verdicts) if v is Verdict.WRONG]
    assert not wrong, wrong[:5]
    assert sum(v is Verdict.CORRECT for v in verdicts) + sum(v is Verdict.TIMED_OUT for v in verdicts) == len(pairs)
    assert all(proc.poll() is None for proc in burners)  # the load lasted the whole batch


def test_a_tight_budget_under_load_gives_timeouts_not_wrong_verdicts(burners):
    # A budget of 0.2 s under load: some comparisons cannot finish. Each that does not is
    # TIMED_OUT (counted by score and training, never cached), none is WRONG. (Every
    # timeout costs a worker restart, slow under load: the batch is kept small.)
    pairs = load.honest_pairs(8, seed=29)
    hard = load.towers(1, seed=29)
    completions = [c for _, c, _ in pairs + hard]
    truths = [t for *_, t in pairs + hard]
    verdicts = judge_many(completions, truths, timeout_s=0.2)
    honest, towers = verdicts[:len(pairs)], verdicts[len(pairs):]
    assert Verdict.WRONG not in honest
    assert towers == [Verdict.TIMED_OUT] * len(hard)  # sympy never finishes them: always counted
