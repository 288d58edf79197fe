"""The math-verify workers: a pathological answer is cut off at its timeout,
from any thread, and the grader keeps working afterwards."""

from __future__ import annotations

import signal
import threading
import time

import pytest
from grading_cases import TOWER, timed

from isocompute.grading import grade, grade_with_reason, sandbox, warm_up

TIMEOUT_S = 1.0
SLACK_S = 1.5  # generous: the suite shares a loaded machine


@pytest.fixture(scope="module", autouse=True)
def _worker_ready():
    # Timing assertions below are about the comparison, not interpreter start-up.
    warm_up()


@pytest.fixture(autouse=True)
def _nothing_remembered():
    # A tower another test ran out of time on would otherwise come back at once.
    sandbox.clear_memo()
    yield
    sandbox.clear_memo()


def _timed_grade(completion: str, truth: str, timeout_s: float = TIMEOUT_S) -> tuple[bool, float]:
    start = time.monotonic()
    verdict = grade(completion, truth, timeout_s=timeout_s)
    return verdict, time.monotonic() - start


def test_timeout_main_thread():
    warm_up()  # a worker killed by an earlier timeout may still be restarting
    handler = signal.getsignal(signal.SIGALRM)
    verdict, elapsed = _timed_grade(TOWER, "42")
    assert verdict is False
    assert 0.9 * TIMEOUT_S <= elapsed < TIMEOUT_S + SLACK_S  # it was slow, and cut off
    assert signal.getsignal(signal.SIGALRM) is handler  # the caller's signals are untouched
    # The grader still works afterwards.
    assert grade("\\boxed{1+x^2}", "x^2+1") is True


def test_timeout_in_thread():
    warm_up()
    out: list[tuple[bool, float]] = []
    thread = threading.Thread(target=lambda: out.append(_timed_grade(TOWER, "43")))
    thread.start()
    thread.join(TIMEOUT_S + 10)
    assert out, "grade() hung in a thread"
    verdict, elapsed = out[0]
    assert verdict is False
    assert elapsed < TIMEOUT_S + SLACK_S


def test_timeout_concurrent_threads():
    warm_up(4)
    towers = ["\\boxed{9^{9^{9^{9}}}}", "\\boxed{8^{8^{8^{8}}}}", "\\boxed{7^{7^{7^{7}}}}"]
    # The honest answer gets a generous limit: four busy workers may share few cores.
    jobs = [(t, "5", TIMEOUT_S) for t in towers] + [("\\boxed{x^2+2x+1}", "(x+1)^2", 30.0)]
    out: dict[int, tuple[bool, float]] = {}
    threads = [
        threading.Thread(target=lambda i=i, job=job: out.__setitem__(i, _timed_grade(*job)))
        for i, job in enumerate(jobs)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(40)
    assert [out[i][0] for i in range(len(jobs))] == [False, False, False, True]
    assert max(out[i][1] for i in range(len(towers))) < TIMEOUT_S + SLACK_S


def test_symbolic_answer_in_thread():
    out = []
    thread = threading.Thread(target=lambda: out.append(grade("\\boxed{\\frac{2}{\\sqrt{2}}}", "\\sqrt{2}")))
    thread.start()
    thread.join(30)
    assert out == [True]


def test_idle_worker_that_died_is_replaced():
    warm_up()
    for worker in list(sandbox._POOL._idle):
        worker.proc.kill()
        worker.proc.wait()
    assert grade("\\boxed{3x+3}", "3(x+1)") is True


def test_without_a_worker_falls_back_to_fork(monkeypatch):
    monkeypatch.setattr(sandbox, "_POOL", sandbox._WorkerPool())
    monkeypatch.setattr(sandbox.sys, "executable", "/nonexistent/python")
    assert grade("\\boxed{2(x+2)}", "2x+4") is True
    assert sandbox._POOL.broken
    start = time.monotonic()
    assert grade("\\boxed{5^{5^{5^{5}}}}", "1", timeout_s=TIMEOUT_S) is False
    assert time.monotonic() - start < TIMEOUT_S + SLACK_S


def test_a_repeated_pathological_answer_costs_one_timeout():
    warm_up()
    assert _timed_grade(TOWER, "7")[1] >= 0.9 * TIMEOUT_S
    verdict, elapsed = _timed_grade(TOWER, "7")
    assert verdict is False and elapsed < 0.1
    # A longer timeout is a new chance, as a differently keyed cache gave before.
    assert _timed_grade(TOWER, "7", timeout_s=2 * TIMEOUT_S)[1] >= 0.9 * 2 * TIMEOUT_S


def test_waiting_for_a_replacement_worker_counts(monkeypatch):
    # One worker, killed on a tower: the next call can only wait for its
    # replacement, and that wait is part of its timeout.
    monkeypatch.setattr(sandbox, "_POOL", sandbox._WorkerPool())
    warm_up()
    assert _timed_grade(TOWER, "11")[0] is False
    (verdict, reason), elapsed = timed(grade_with_reason, "\\boxed{4x}", "x+3x", timeout_s=0.3)
    assert elapsed < 0.3 + 0.5
    assert (verdict, reason) in {(True, "math-verify"), (False, "no time left")}
    sandbox._POOL.close()
