"""The grader's slow path: math-verify in killable worker processes, within a deadline.

Pairs that `numeric` cannot decide come here with the time left of their
call's deadline. Each concurrent caller gets its own worker (a fresh
interpreter started with `subprocess`, not a fork of the caller, which may hold
torch threads); a worker that misses the deadline is killed and replaced, and
its pair graded False. Waiting for a worker to start counts against the
deadline too, except the first start of a process, which no input causes.
Where no interpreter can be started, one fork per comparison does the same job.

Hand-written rather than pebble's ProcessPool (measured on 2 cores: round trip
0.7 vs 0.8-0.9 ms, symbolic pair 8 vs 7-10 ms p50, restart after a timeout
0.5 s both): no faster, and pebble's workers are either forks of a possibly
threaded caller or need a `__main__` guard in every script that grades.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time

logger = logging.getLogger(__name__)

# How a slow-path verdict came about (`grade_with_reason` passes these on).
MATH_VERIFY = "math-verify"  # math-verify decided
TIMEOUT = "timeout"  # math-verify ran past the deadline, or crashed on the pair
NO_TIME = "no time left"  # the deadline passed before math-verify could start


def mv_compare(answer: str, truth: str) -> bool:
    """math-verify's verdict with its signal-based timeouts off (callers bound time)."""
    from math_verify import parse, verify
    from math_verify import grader as _mv_grader
    from math_verify import parser as _mv_parser

    # The "timeouts disabled" warning is expected here: the caller's guard is the timeout.
    _mv_parser.TIMEOUT_WARNING_SHOWN = True
    _mv_grader.TIMEOUT_WARNING_SHOWN = True
    # Re-boxing the bare strings lets math-verify's LaTeX extraction and
    # normalisation see both sides exactly as it sees a boxed model answer.
    gold = parse("\\boxed{" + truth + "}", parsing_timeout=None)
    if not gold:
        return False
    pred = parse("\\boxed{" + answer + "}", parsing_timeout=None)
    if not pred:
        return False
    return bool(verify(gold, pred, timeout_seconds=None))


# Covers interpreter start, math-verify import and a warm-up parse: the most a
# process's first start may take (later starts count against the deadline).
_STARTUP_TIMEOUT_S = 120.0
# The worker kills itself this long after the parent's deadline, so a worker
# whose parent died mid-request cannot spin forever.
_SELF_DESTRUCT_GRACE_S = 5.0
_WORKER_MEMORY_HEADROOM = 4 << 30
# Workers only pile up as far as callers were ever concurrent; each holds ~65 MB.
_MAX_IDLE_WORKERS = max(8, os.cpu_count() or 8)

_WORKER_BOOT = "from isocompute.grading.sandbox import _worker_main; _worker_main()"


def _limit_worker_memory() -> None:
    # A nested power can try to build a gigabyte-sized integer in seconds;
    # capping the address space turns that into a MemoryError (False).
    try:
        import resource

        with open("/proc/self/statm") as f:
            vsz = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = vsz + _WORKER_MEMORY_HEADROOM
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        if soft == resource.RLIM_INFINITY or limit < soft:
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (OSError, ValueError, ImportError):
        pass


def _worker_main() -> None:
    """Loop of the worker process: one JSON request line in, one verdict line out."""
    # Default SIGALRM terminates the process even inside a C-level bigint
    # operation, which a Python-level handler (math-verify's) cannot interrupt.
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    # The protocol owns the real stdout; anything sympy prints goes to stderr.
    proto = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    mv_compare("1", "1")  # import and compile everything before saying ready
    _limit_worker_memory()
    proto.write(b"ready\n")
    for line in sys.stdin.buffer:
        request = json.loads(line)
        signal.setitimer(signal.ITIMER_REAL, float(request["t"]) + _SELF_DESTRUCT_GRACE_S)
        try:
            verdict = mv_compare(request["a"], request["g"])
        except Exception:  # MemoryError and RecursionError included: a bad answer
            verdict = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        proto.write(b"1\n" if verdict else b"0\n")


class _WorkerStartError(RuntimeError):
    pass


class _Worker:
    def __init__(self) -> None:
        env = dict(os.environ)
        # The child must import this module from wherever the parent did.
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _WORKER_BOOT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self.started = time.monotonic()
        self._fd = self.proc.stdout.fileno()
        self._buf = b""
        self.ready = False

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _readline(self, deadline: float) -> bytes | None:
        # Looks at the pipe at least once, so a past deadline means "only if already there".
        while b"\n" not in self._buf:
            remaining = max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([self._fd], [], [], remaining)
            if not readable:
                return None
            chunk = os.read(self._fd, 4096)
            if not chunk:
                return None  # the worker died
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def wait_ready(self, deadline: float) -> bool:
        """True once the worker is ready; False if it is still starting at `deadline`."""
        if self.ready:
            return True
        give_up = self.started + _STARTUP_TIMEOUT_S
        line = self._readline(min(deadline, give_up))
        if line == b"ready":
            self.ready = True
            return True
        if line is not None or not self.alive() or time.monotonic() >= give_up:
            raise _WorkerStartError(f"grading worker did not start (exit code {self.proc.poll()})")
        return False

    def ready_now(self) -> bool:
        try:
            return self.wait_ready(0.0)
        except (OSError, _WorkerStartError):
            return False

    def compare(self, answer: str, truth: str, deadline: float) -> bool | None:
        """The verdict, or None if the worker missed the deadline or died."""
        remaining = deadline - time.monotonic()
        payload = json.dumps({"a": answer, "g": truth, "t": remaining}).encode() + b"\n"
        self.proc.stdin.write(payload)
        self.proc.stdin.flush()
        line = self._readline(deadline)
        if line is None:
            return None
        return line == b"1"

    def close(self) -> None:
        try:
            self.proc.kill()
        except OSError:
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


class _WorkerPool:
    """Idle workers shared by all threads; each concurrent caller gets its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._pid = os.getpid()
        self.broken = False
        self.ever_ready = False  # a worker of this process has started

    def _check_fork(self) -> None:
        # Workers inherited through fork belong to the parent process; talking
        # to them from the child would interleave two conversations on a pipe.
        if os.getpid() != self._pid:
            self._idle = []
            self._pid = os.getpid()
            self.ever_ready = False

    def acquire(self) -> _Worker:
        """An idle worker, a ready one if any (else the one started first); or a new one."""
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
                return chosen
        return _Worker()

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
            workers.append(_POOL.acquire())
        for worker in workers:
            worker.wait_ready(worker.started + _STARTUP_TIMEOUT_S)
        _POOL.ever_ready = True
    except (OSError, _WorkerStartError) as exc:
        logger.warning("math-verify worker unavailable (%s); forking per comparison", exc)
        _POOL.broken = True
    for worker in workers:
        _POOL.release(worker)


def _compare_in_fork(answer: str, truth: str, deadline: float) -> tuple[bool, str]:
    # Fallback where no worker can be started (no usable sys.executable). A
    # thread would not do: a runaway bigint operation holds the GIL, so the
    # caller could not even return. A forked child can always be killed.
    import math_verify  # noqa: F401  -- the child must not need the import lock

    timeout_s = deadline - time.monotonic()
    if timeout_s <= 0:
        return False, NO_TIME
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: answer once, never return into the caller's code
        try:
            os.close(read_fd)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.setitimer(signal.ITIMER_REAL, timeout_s + _SELF_DESTRUCT_GRACE_S)
            os.write(write_fd, b"1" if mv_compare(answer, truth) else b"0")
        finally:
            os._exit(0)
    os.close(write_fd)
    try:
        readable, _, _ = select.select([read_fd], [], [], timeout_s)
        verdict = os.read(read_fd, 1) if readable else b""
    finally:
        os.close(read_fd)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    return verdict == b"1", (MATH_VERIFY if verdict else TIMEOUT)


def _compare_guarded(answer: str, truth: str, deadline: float) -> tuple[bool, str]:
    if _POOL.broken:
        return _compare_in_fork(answer, truth, deadline)
    for _ in range(2):  # one retry for a pooled worker that died while idle
        try:
            worker = _POOL.acquire()
            if _POOL.ever_ready:
                ready = worker.wait_ready(deadline)
            else:
                # A process's first start is paid once whatever the input, and
                # would otherwise fail its first symbolic answers on a slow
                # machine: the deadline moves by the time it took.
                waited_from = time.monotonic()
                ready = worker.wait_ready(worker.started + _STARTUP_TIMEOUT_S)
                deadline += time.monotonic() - waited_from
        except (OSError, _WorkerStartError) as exc:
            logger.warning("math-verify worker unavailable (%s); forking per comparison", exc)
            _POOL.broken = True
            return _compare_in_fork(answer, truth, deadline)
        if not ready or deadline <= time.monotonic():
            _POOL.release(worker)  # it goes on starting, for the next call
            return False, NO_TIME
        _POOL.ever_ready = True
        try:
            verdict = worker.compare(answer, truth, deadline)
        except (BrokenPipeError, OSError):
            worker.close()
            continue
        if verdict is None:
            # Timed out or crashed on this input: the answer is not gradable, so wrong.
            _POOL.replace(worker)
            return False, TIMEOUT
        _POOL.release(worker)
        return verdict, MATH_VERIFY
    return False, TIMEOUT


# Budgets jitter by a few milliseconds between calls; a pair that ran out of
# time is not retried with less than this factor more.
_RETRY_BUDGET_FACTOR = 1.1
_MEMO_SIZE = 1 << 16
# (answer, truth) -> (verdict, the budget that ran out, or 0 for a verdict).
# Single get/set operations, atomic under the GIL; emptied when full.
_MEMO: dict[tuple[str, str], tuple[bool, float]] = {}


def clear_memo() -> None:
    """Forget remembered slow-path outcomes (tests; a changed math-verify)."""
    _MEMO.clear()


def _remember(key: tuple[str, str], outcome: tuple[bool, float]) -> None:
    if len(_MEMO) >= _MEMO_SIZE:
        _MEMO.clear()
    _MEMO[key] = outcome


def slow_verdict(answer: str, truth: str, budget_s: float) -> tuple[bool, str]:
    """(math-verify's verdict, how it came about) within `budget_s` seconds from now."""
    # Remembered, timeouts included: a policy that repeats one pathological
    # answer must not cost its timeout per sample.
    key = (answer, truth)
    known = _MEMO.get(key)
    if known is not None:
        verdict, ran_out = known
        if not ran_out:
            return verdict, MATH_VERIFY
        if budget_s <= ran_out * _RETRY_BUDGET_FACTOR:
            return False, TIMEOUT
    if budget_s <= 0:
        return False, NO_TIME
    verdict, reason = _compare_guarded(answer, truth, time.monotonic() + budget_s)
    if reason == MATH_VERIFY:
        _remember(key, (verdict, 0.0))
    elif reason == TIMEOUT:
        _remember(key, (False, budget_s))
    return verdict, reason
