"""The math-verify workers: a pathological answer is cut off at its timeout,
from any thread, and reported timed out (not wrong); starting a worker is
never a pair's time; the grader keeps working afterwards."""

from __future__ import annotations

import signal
import threading
import time

import pytest
from grading_cases import SLOW, TOWER

from isocompute.grading import Verdict, grade, judge, judge_many, sandbox, verdict, warm_up
from isocompute.grading.worker import RELAY_GRACE_S, Worker

SHIPPED_RETRY_FACTOR = verdict.RETRY_FACTOR

TIMEOUT_S = 1.0
RETRY_FACTOR = 2.0  # the retry is exercised, at half the shipped cost per tower
HANG_S = 30.0  # a call this far past its budgets did not stop at them: a hang; load never reaches it
CUT_OFF_S = (1 + RETRY_FACTOR) * TIMEOUT_S  # a tower's two budgets


@pytest.fixture(scope="module", autouse=True)
def _worker_ready():
    warm_up(2)  # a spare for the retry after a kill


@pytest.fixture(autouse=True)
def _nothing_remembered(monkeypatch):
    # A tower another test ran out of time on would otherwise come back at once.
    monkeypatch.setattr(verdict, "RETRY_FACTOR", RETRY_FACTOR)
    sandbox.clear_memo()
    yield
    sandbox.clear_memo()


def _timed_judge(completion: str, truth: str, timeout_s: float = TIMEOUT_S) -> tuple[tuple[Verdict, str], float]:
    start = time.monotonic()
    outcome = judge(completion, truth, timeout_s=timeout_s)
    return outcome, time.monotonic() - start


def _counting_comparisons(monkeypatch) -> list[float]:
    """The budgets math-verify is given from now on, one per comparison."""
    budgets: list[float] = []
    compare = sandbox._compare_guarded

    def counted(answer, truth, budget_s, allowance):
        budgets.append(budget_s)
        return compare(answer, truth, budget_s, allowance)

    monkeypatch.setattr(sandbox, "_compare_guarded", counted)
    return budgets


def test_timeout_main_thread(monkeypatch):
    warm_up(2)  # a worker killed by an earlier timeout may still be restarting
    handler = signal.getsignal(signal.SIGALRM)
    budgets = _counting_comparisons(monkeypatch)
    outcome, elapsed = _timed_judge(TOWER, "42")
    assert outcome == (Verdict.TIMED_OUT, "timeout")
    # Cut off by its budgets (counted: the deadline, then the retry), not by a hang; it was slow.
    assert len(budgets) == 2 and budgets[0] <= TIMEOUT_S and budgets[1] == RETRY_FACTOR * TIMEOUT_S
    assert 0.9 * CUT_OFF_S <= elapsed < CUT_OFF_S + HANG_S
    assert signal.getsignal(signal.SIGALRM) is handler  # the caller's signals are untouched
    # The grader still works afterwards.
    assert grade("\\boxed{1+x^2}", "x^2+1") is True


def test_timeout_in_thread():
    warm_up(2)
    out: list[tuple[tuple[Verdict, str], float]] = []
    thread = threading.Thread(target=lambda: out.append(_timed_judge(TOWER, "43")))
    thread.start()
    thread.join(CUT_OFF_S + HANG_S)
    assert out, "judge() hung in a thread"
    outcome, elapsed = out[0]
    assert outcome == (Verdict.TIMED_OUT, "timeout")
    assert elapsed < CUT_OFF_S + HANG_S


def test_timeout_concurrent_threads():
    warm_up(4)
    towers = [SLOW(9), SLOW(8), SLOW(7)]
    # The honest answer gets a generous limit: four busy workers may share few cores.
    jobs = [(t, "5", TIMEOUT_S) for t in towers] + [("\\boxed{x^2+2x+1}", "(x+1)^2", 30.0)]
    out: dict[int, tuple[Verdict, str]] = {}
    threads = [
        threading.Thread(target=lambda i=i, job=job: out.__setitem__(i, judge(job[0], job[1], timeout_s=job[2])))
        for i, job in enumerate(jobs)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert [out[i][0] for i in range(len(jobs))] == [Verdict.TIMED_OUT] * 3 + [Verdict.CORRECT]


def test_symbolic_answer_in_thread():
    out = []
    thread = threading.Thread(target=lambda: out.append(grade("\\boxed{\\frac{2}{\\sqrt{2}}}", "\\sqrt{2}")))
    thread.start()
    thread.join(30)
    assert out == [True]


def test_idle_worker_that_died_is_replaced():
    # Its replacement's start-up is not the pair's time: correct however long it takes.
    warm_up()
    for worker in list(sandbox._POOL._idle):
        worker.proc.kill()
        worker.proc.wait()
    assert judge("\\boxed{3x+3}", "3(x+1)") == (Verdict.CORRECT, "math-verify")


def test_worker_that_dies_on_receipt_is_replaced(monkeypatch):
    # A worker that looks alive but whose process is gone when the pair is sent
    # (killed between the pool's check and the write): the pair goes to a fresh one.
    monkeypatch.setattr(sandbox, "_POOL", sandbox._WorkerPool())
    warm_up()
    (dead,) = sandbox._POOL._idle
    dead.proc.kill()
    dead.proc.wait()
    monkeypatch.setattr(Worker, "alive", lambda self: True)
    assert judge("\\boxed{3x+3}", "3(x+1)") == (Verdict.CORRECT, "math-verify")
    assert dead not in sandbox._POOL._idle
    sandbox._POOL.close()


def test_without_a_worker_falls_back_to_fork(monkeypatch):
    monkeypatch.setattr(sandbox, "_POOL", sandbox._WorkerPool())
    monkeypatch.setattr(sandbox.sys, "executable", "/nonexistent/python")
    assert grade("\\boxed{2(x+2)}", "2x+4") is True
    assert sandbox._POOL.broken
    start = time.monotonic()
    assert judge(SLOW(5), "1", timeout_s=TIMEOUT_S) == (Verdict.TIMED_OUT, "timeout")
    assert time.monotonic() - start < CUT_OFF_S + HANG_S  # the forked child was killed, not waited for


def test_a_timeout_is_not_remembered_but_a_batch_pays_it_once(monkeypatch):
    # A timeout says how busy the machine was, not what the pair is: the next call
    # tries the pair again with its full budgets. Within one judge_many call, the
    # repeats of a pair are compared once.
    budgets = _counting_comparisons(monkeypatch)
    timeout_s = 0.2  # a tower never finishes: any budget runs out
    assert judge(TOWER, "7", timeout_s=timeout_s) == (Verdict.TIMED_OUT, "timeout")
    assert len(budgets) == 2 and budgets[1] == RETRY_FACTOR * timeout_s  # the budget, then the retry
    assert judge(TOWER, "7", timeout_s=timeout_s) == (Verdict.TIMED_OUT, "timeout")
    assert len(budgets) == 4  # tried again, both budgets
    assert judge_many([TOWER] * 5 + ["\\boxed{3}"], ["7"] * 5 + ["3"], timeout_s=timeout_s) == \
        [Verdict.TIMED_OUT] * 5 + [Verdict.CORRECT]
    assert len(budgets) == 6  # the five repeats: one pair's two budgets
    assert not sandbox._MEMO


def test_a_pair_timed_out_under_load_is_decided_by_the_next_call(monkeypatch):
    # Both budgets run out (a loaded machine); the next call decides the pair on its merits.
    outcomes = iter([(Verdict.TIMED_OUT, sandbox.TIMEOUT)] * 2 + [(Verdict.CORRECT, sandbox.MATH_VERIFY)])
    monkeypatch.setattr(sandbox, "_compare_guarded", lambda answer, truth, budget_s, allowance: next(outcomes))
    assert judge("\\boxed{3x+3}", "3(x+1)") == (Verdict.TIMED_OUT, "timeout")
    assert judge("\\boxed{3x+3}", "3(x+1)") == (Verdict.CORRECT, "math-verify")
    assert sandbox._MEMO[("3x+3", "3(x+1)")] is Verdict.CORRECT  # definite: remembered


def test_waiting_for_a_worker_to_start_does_not_count(monkeypatch):
    # A worker that takes longer to start than the whole timeout (a loaded
    # machine): the pair's clock starts once the worker has it. The first budget
    # handed to math-verify is the whole timeout; a loaded machine may still need the
    # retry for the comparison itself (CI did at a 0.3 s timeout), which is not what
    # this test is about, so the timeout is ample and only the first budget is judged.
    monkeypatch.setattr(sandbox, "_POOL", sandbox._WorkerPool())
    wait_ready = Worker.wait_ready

    def slow_start(self, deadline=None):
        if not self.ready:
            time.sleep(1.5)
        return wait_ready(self, deadline)

    monkeypatch.setattr(Worker, "wait_ready", slow_start)
    budgets = _counting_comparisons(monkeypatch)
    assert judge("\\boxed{4x}", "x+3x", timeout_s=1.0) == (Verdict.CORRECT, "math-verify")
    assert budgets and 0.9 < budgets[0] <= 1.0, budgets     # not the 1.5 s start, nor what is left of it
    sandbox._POOL.close()


def _granted(monkeypatch, die: bool = False) -> list[float]:
    """The budgets workers are handed from now on (after the whole-cost cut); `die` kills
    each worker as it receives its pair (a crash on the pair, or a kill from outside)."""
    budgets: list[float] = []
    compare = Worker.compare

    def granted(self, answer, truth, budget_s):
        budgets.append(budget_s)
        if die:
            self.proc.kill()
            self.proc.wait()
        return compare(self, answer, truth, budget_s)

    monkeypatch.setattr(Worker, "compare", granted)
    return budgets


def test_a_pair_whose_workers_die_stays_within_its_whole_cost(monkeypatch):
    # Each worker dies on the pair: the first try, its re-try on a fresh worker, the retry and
    # its re-try would be 1 + 1 + 4 + 4 = 10 timeouts; the whole cost is cut at PAIR_BUDGET_FACTOR
    # (counted: the budgets handed out; the restarts between them count against it too).
    monkeypatch.setattr(verdict, "RETRY_FACTOR", SHIPPED_RETRY_FACTOR)
    warm_up(2)
    budgets = _granted(monkeypatch, die=True)
    start = time.monotonic()
    verdict_, reason = judge("\\boxed{3x+3}", "3(x+1)", timeout_s=TIMEOUT_S)
    elapsed = time.monotonic() - start
    assert verdict_ is Verdict.TIMED_OUT and reason in ("timeout", "no time left")
    assert 1 <= len(budgets) <= 4 and budgets[0] == pytest.approx(TIMEOUT_S, abs=0.1)
    assert sum(budgets) <= verdict.PAIR_BUDGET_FACTOR * TIMEOUT_S + 1e-9, budgets
    assert elapsed < verdict.PAIR_BUDGET_FACTOR * TIMEOUT_S + HANG_S
    monkeypatch.undo()
    warm_up(2)
    assert judge("\\boxed{3x+3}", "3(x+1)") == (Verdict.CORRECT, "math-verify")  # not remembered


def test_waiting_for_a_restart_after_the_pairs_own_try_counts(monkeypatch):
    # One worker, no spare: it dies on the pair's first try, and the re-try waits for the
    # replacement to start. That wait is the pair's: a restart slower than what is left of the
    # whole cost leaves the re-try no budget.
    monkeypatch.setattr(sandbox, "_POOL", sandbox._WorkerPool())
    warm_up(1)
    wait_ready = Worker.wait_ready
    timeout_s = 0.2
    stall_s = verdict.PAIR_BUDGET_FACTOR * timeout_s + 2 * RELAY_GRACE_S + 0.3

    def slow_restart(self, deadline=None):
        if deadline is not None and not self.ready:
            time.sleep(max(0.0, min(stall_s, deadline - time.monotonic())))
        return wait_ready(self, deadline)

    monkeypatch.setattr(Worker, "wait_ready", slow_restart)
    budgets = _granted(monkeypatch, die=True)
    assert judge("\\boxed{3x+3}", "3(x+1)", timeout_s=timeout_s) == (Verdict.TIMED_OUT, "timeout")
    assert len(budgets) == 1 and 0 < budgets[0] <= timeout_s  # the first try only
    sandbox._POOL.close()


def test_a_pair_out_of_time_costs_no_restart(monkeypatch):
    # The worker kills the forked child that ran out and forks another: the same worker
    # process takes the next pair at once, with no interpreter start between.
    monkeypatch.setattr(sandbox, "_POOL", sandbox._WorkerPool())
    warm_up(1)
    (worker,) = sandbox._POOL._idle
    started = []
    monkeypatch.setattr(sandbox, "_Worker", lambda: started.append(1) or Worker())
    assert judge(TOWER, "42", timeout_s=0.2) == (Verdict.TIMED_OUT, "timeout")
    assert sandbox._POOL._idle == [worker] and worker.alive() and not started
    assert judge("\\boxed{3x+3}", "3(x+1)") == (Verdict.CORRECT, "math-verify")
    assert sandbox._POOL._idle == [worker] and not started
    sandbox._POOL.close()


def test_waiting_for_an_earlier_pairs_restart_counts(monkeypatch):
    # The 30.9 s call: an earlier pair's worker was replaced, and the replacement starts slowly (a
    # loaded machine). The next pair's wait for it is its own time: the call returns within its
    # whole cost (timed out, "no time left"), not after the restart.
    monkeypatch.setattr(sandbox, "_POOL", sandbox._WorkerPool())
    warm_up(1)
    sandbox._POOL.replace(sandbox._POOL._idle.pop())
    wait_ready = Worker.wait_ready
    timeout_s = 0.2
    whole_s = verdict.PAIR_BUDGET_FACTOR * timeout_s + 2 * RELAY_GRACE_S
    stall_s = whole_s + 3.0

    def slow_start(self, deadline=None):
        if not self.ready:
            time.sleep(stall_s if deadline is None else max(0.0, min(stall_s, deadline - time.monotonic())))
        return wait_ready(self, deadline)

    monkeypatch.setattr(Worker, "wait_ready", slow_start)
    outcome, elapsed = _timed_judge("\\boxed{3x+3}", "3(x+1)", timeout_s=timeout_s)
    assert outcome == (Verdict.TIMED_OUT, "no time left")
    assert elapsed < whole_s + 1.0  # not the restart's stall_s
    sandbox._POOL.close()
