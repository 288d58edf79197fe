"""The grader's slow path: math-verify in killable worker processes, within a budget.

Pairs that `numeric` cannot decide come here with the time left of their
call's deadline, and a longer second budget for a pair that runs out. Each
concurrent caller gets its own worker (`worker.Worker`: a fresh interpreter
started with `subprocess`, not a fork of the caller, which may hold torch
threads); a worker that misses its budget is killed and replaced, and the pair
is timed out (`Verdict.TIMED_OUT`), not wrong. A worker runs each comparison in
a forked child and enforces the budget itself: a pair out of time costs a fork
(milliseconds), not an interpreter restart (seconds; 24-28 s on a loaded 2-core
machine). A comparison's budget runs only from when a ready worker has the
pair, and the start of a worker new to the pool is no pair's time, so a cold
start slows grading instead of failing correct answers. One pair's whole cost
is bounded (`slow_verdict`'s `total_s`): its comparisons' budgets together stay
within it, and its wall time within it plus two hand-overs, every wait for a
restarted worker included. Where no
interpreter can be started, one fork per comparison does the same job.

Hand-written rather than pebble's ProcessPool (measured on 2 cores: round trip
0.7 vs 0.8-0.9 ms, symbolic pair 8 vs 7-10 ms p50, restart after a timeout
0.5 s both): no faster, and pebble's workers are either forks of a possibly
threaded caller or need a `__main__` guard in every script that grades.
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import select
import signal
import sys  # noqa: F401  -- tests point sys.executable elsewhere through this module
import threading
import time

from isocompute.grading.outcome import Verdict
from isocompute.grading.worker import RELAY_GRACE_S, SELF_DESTRUCT_GRACE_S, PairCrashed, WorkerStartError, mv_compare
from isocompute.grading.worker import Worker as _Worker

__all__ = ["MATH_VERIFY", "NO_TIME", "TIMEOUT", "clear_memo", "mv_compare", "slow_verdict", "warm_up"]

logger = logging.getLogger(__name__)

# How a slow-path verdict came about (`grade_with_reason` passes these on).
MATH_VERIFY = "math-verify"  # math-verify decided
TIMEOUT = "timeout"  # math-verify ran past its budgets, or crashed on the pair
NO_TIME = "no time left"  # no budget was left for math-verify to start

# Workers only pile up as far as callers were ever concurrent; each holds ~65 MB.
_MAX_IDLE_WORKERS = max(8, os.cpu_count() or 8)


class _WorkerPool:
    """Idle workers shared by all threads; each concurrent caller gets its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._pid = os.getpid()
        self.broken = False

    def _check_fork(self) -> None:
        # Workers inherited through fork belong to the parent process; talking
        # to them from the child would interleave two conversations on a pipe.
        if os.getpid() != self._pid:
            self._idle = []
            self._pid = os.getpid()

    def acquire(self) -> tuple[_Worker, bool]:
        """(an idle worker, a ready one if any, else the one started first; or a new one,
        whether it is new: started for this caller, not a replacement)."""
        with self._lock:
            self._check_fork()
            for worker in [w for w in self._idle if not w.alive()]:
                self._idle.remove(worker)
                worker.close()
            # The replacement of a killed worker may still be starting; a
            # ready sibling spares the caller that wait.
            chosen = next((w for w in reversed(self._idle) if w.ready_now()), None)
            if chosen is None and self._idle:
                chosen = self._idle[0]
            if chosen is not None:
                self._idle.remove(chosen)
                return chosen, False
        return _Worker(), True

    def release(self, worker: _Worker) -> None:
        with self._lock:
            self._check_fork()
            if len(self._idle) < _MAX_IDLE_WORKERS:
                self._idle.append(worker)
                return
        worker.close()

    def replace(self, worker: _Worker) -> None:
        worker.close()
        # Start the successor now so the next slow call does not wait for it.
        try:
            self.release(_Worker())
        except OSError:
            pass

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.close()


_POOL = _WorkerPool()
atexit.register(_POOL.close)


def warm_up(n: int = 1) -> None:
    """Have `n` math-verify workers ready now, so that no grade() waits for one to start.

    Where no worker can start, logs why; grading then forks per comparison.
    """
    if _POOL.broken:
        return
    workers = []
    try:
        for _ in range(n):
            workers.append(_POOL.acquire()[0])
        for worker in workers:
            worker.wait_ready()
    except (OSError, WorkerStartError) as exc:
        logger.warning("math-verify worker unavailable (%s); forking per comparison", exc)
        _POOL.broken = True
    for worker in workers:
        _POOL.release(worker)


def _compare_in_fork(answer: str, truth: str, budget_s: float) -> tuple[Verdict, str]:
    # Fallback where no worker can be started (no usable sys.executable). A
    # thread would not do: a runaway bigint operation holds the GIL, so the
    # caller could not even return. A forked child can always be killed.
    import math_verify  # noqa: F401  -- the child must not need the import lock

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: answer once, never return into the caller's code
        try:
            os.close(read_fd)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.setitimer(signal.ITIMER_REAL, budget_s + SELF_DESTRUCT_GRACE_S)
            os.write(write_fd, b"1" if mv_compare(answer, truth) else b"0")
        finally:
            os._exit(0)
    os.close(write_fd)
    try:
        readable, _, _ = select.select([read_fd], [], [], budget_s)
        verdict = os.read(read_fd, 1) if readable else b""
    finally:
        os.close(read_fd)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    if not verdict:
        return Verdict.TIMED_OUT, TIMEOUT
    return Verdict.of(verdict == b"1"), MATH_VERIFY


class _Allowance:
    """What is left of one pair's whole cost: `total_s` seconds of math-verify budgets, and a wall
    deadline `total_s` plus two hand-overs (`RELAY_GRACE_S`) from its creation, every wait for a
    worker to start or restart included, except the start of a worker new to the pool (`exclude`).
    A comparison is granted at most what is left of both, its hand-over kept back, and its whole
    budget is charged whether it used it or not (a worker that dies at once does not hand its
    time back), so the budgets one pair is handed add up to at most `total_s`."""

    def __init__(self, total_s: float) -> None:
        self.unspent = total_s
        self.deadline = time.monotonic() + total_s + 2 * RELAY_GRACE_S

    def exclude(self, seconds: float) -> None:
        """A wait that is not the pair's (a new worker's start): the deadline moves by it."""
        self.deadline += seconds

    def grant(self, budget_s: float) -> float:
        """A comparison's budget: `budget_s`, or less if less is left (charged); <= 0 when nothing is."""
        budget = min(budget_s, self.unspent, self.deadline - time.monotonic() - RELAY_GRACE_S)
        if budget > 0:
            self.unspent -= budget
        return budget


def _ready_worker(allowance: _Allowance) -> tuple[_Worker, bool]:
    """(a worker, whether it is ready within what is left of `allowance`): a new worker's start
    is not the pair's time (a cold start, or one more concurrent caller); a restart is."""
    worker, new = _POOL.acquire()
    if new:
        started = time.monotonic()
        worker.wait_ready()
        allowance.exclude(time.monotonic() - started)
        return worker, True
    return worker, worker.wait_ready(allowance.deadline)


def _compare_guarded(answer: str, truth: str, budget_s: float, allowance: _Allowance) -> tuple[Verdict, str]:
    """math-verify on one pair: `budget_s` seconds (less if less is left of `allowance`) from when
    a ready worker has it; waiting for a worker to restart counts against `allowance`."""
    if _POOL.broken:
        budget = allowance.grant(budget_s)
        return _compare_in_fork(answer, truth, budget) if budget > 0 else (Verdict.TIMED_OUT, NO_TIME)
    reason = NO_TIME  # what running out of the allowance before a comparison means
    for _ in range(2):  # one re-try (on a fresh worker for one that died), within what is left
        try:
            worker, ready = _ready_worker(allowance)
        except (OSError, WorkerStartError) as exc:
            logger.warning("math-verify worker unavailable (%s); forking per comparison", exc)
            _POOL.broken = True
            budget = allowance.grant(budget_s)
            return _compare_in_fork(answer, truth, budget) if budget > 0 else (Verdict.TIMED_OUT, NO_TIME)
        budget = allowance.grant(budget_s) if ready else 0.0
        if budget <= 0:
            _POOL.release(worker)  # still starting, or idle: the next call's
            return Verdict.TIMED_OUT, reason
        try:
            verdict = worker.compare(answer, truth, budget)
        except PairCrashed:  # math-verify died on the pair; its worker forked a fresh child
            _POOL.release(worker)
            reason = TIMEOUT
            continue
        except OSError:  # the worker died (killed, or crashed on the pair): try a fresh one
            _POOL.replace(worker)
            reason = TIMEOUT
            continue
        if verdict is None:  # out of time: its worker said so (and lives on), or is replaced
            (_POOL.release if worker.in_sync else _POOL.replace)(worker)
            return Verdict.TIMED_OUT, TIMEOUT
        _POOL.release(worker)
        return Verdict.of(verdict), MATH_VERIFY
    return Verdict.TIMED_OUT, TIMEOUT  # it crashed twice: not gradable within any budget


_MEMO_SIZE = 1 << 16
# (answer, truth) -> definite verdict. Single get/set operations, atomic under
# the GIL; emptied when full. A timeout is never remembered: it says how busy
# the machine was, not what the pair is, so a pair timed out under load is
# graded again by the next call (`verdict.judge_many` grades a batch's repeats
# of one pair once).
_MEMO: dict[tuple[str, str], Verdict] = {}


def clear_memo() -> None:
    """Forget remembered slow-path verdicts (tests; a changed math-verify)."""
    _MEMO.clear()


def _remember(key: tuple[str, str], verdict: Verdict) -> None:
    if len(_MEMO) >= _MEMO_SIZE:
        _MEMO.clear()
    _MEMO[key] = verdict


def slow_verdict(answer: str, truth: str, budget_s: float, retry_s: float,
                 total_s: float = math.inf) -> tuple[Verdict, str]:
    """(math-verify's verdict, how it came about): `budget_s` seconds, then `retry_s` if those run out,
    all within `total_s`.

    Each budget is math-verify's own time, counted from when a ready worker
    has the pair. `total_s` bounds the pair's whole cost: the budgets handed
    to math-verify (the first try, the retry, and a re-try for one that died,
    each given at most what is left) add up to at most `total_s`, and the call
    returns within `total_s` plus two hand-overs (`RELAY_GRACE_S`) of this call,
    every wait for a worker to restart included (plus the milliseconds of
    killing a worker that missed its hand-over). Excluded: the start of a
    worker new to the pool (a cold start, or one more concurrent caller;
    nothing after `warm_up`), which never fails a pair. A pair that runs out is TIMED_OUT ("timeout",
    or "no time left" when no comparison could start), and is not
    remembered: the next call tries it again with its own budgets. Definite
    verdicts are remembered for the process.
    """
    key = (answer, truth)
    known = _MEMO.get(key)
    if known is not None:
        return known, MATH_VERIFY
    outcome = (Verdict.TIMED_OUT, NO_TIME)
    if total_s <= 0:
        return outcome
    allowance = _Allowance(total_s)
    for budget in (budget_s, retry_s):
        if budget <= 0:
            continue  # no time left of the call's deadline: straight to the retry
        result = _compare_guarded(answer, truth, budget, allowance)
        if result[0].definite:
            _remember(key, result[0])
            return result
        if result[1] != NO_TIME:  # a comparison that ran out says more than none at all
            outcome = result
    return outcome
