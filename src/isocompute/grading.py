"""The project's one answer grader: is a completion's final answer the ground truth?

Every stage that needs a correctness bit -- difficulty sampling, GRPO rewards,
validation scoring and the verl reward function -- calls `grade`, so they all
agree on what "correct" means. Plain numbers are decided here in microseconds;
anything else goes to math-verify in a killable worker process.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Sequence

logger = logging.getLogger(__name__)

# Bump whenever a verdict could change (extraction rules, fast path, math-verify
# pin); saved GradeCache files from another version are then ignored.
GRADER_VERSION = "1"

__all__ = [
    "GRADER_VERSION",
    "GradeCache",
    "extract_answer",
    "grade",
    "grade_many",
    "warm_up",
]


# --------------------------------------------------------------------------
# Answer extraction
# --------------------------------------------------------------------------

_BOXED = "\\boxed"

# The minus only counts when it cannot be a binary operator ("3-5" ends in 5,
# "= -2" ends in -2). Thousands groups come before plain digits so "1,234"
# is one number; fractions are kept whole so "3/4" is not graded as "4".
_FINAL_NUMBER = re.compile(
    r"(?:(?<![\w)\]}])-)?"
    r"(?:\\[dt]?frac\{\d+\}\{\d+\}"
    r"|\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])"
    r"|\d+(?:\.\d+)?(?:/\d+(?![\d.]))?)"
)


def _box_contents(text: str, start: int) -> str | None:
    """Contents of the brace group opening at or after `start`, or None if unclosed."""
    n = len(text)
    i = start
    while i < n and text[i].isspace():
        i += 1
    if i >= n or text[i] != "{":
        return None
    depth = 0
    j = i
    while j < n:
        ch = text[j]
        if ch == "\\":
            # \{ and \} are literal braces (sets), not grouping.
            j += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j]
        j += 1
    return None


def _last_boxed(text: str) -> str | None:
    # A truncated final box ("\boxed{12" at the length limit) is not an answer;
    # the last complete, non-empty box is.
    idx = text.rfind(_BOXED)
    while idx >= 0:
        inner = _box_contents(text, idx + len(_BOXED))
        if inner is not None and inner.strip():
            return inner.strip()
        idx = text.rfind(_BOXED, 0, idx)
    return None


def extract_answer(completion: str | None) -> str | None:
    """The answer string that `grade` compares with the ground truth.

    The contents of the last complete, non-empty `\\boxed{...}`; in a
    completion without `\\boxed`, the final number in the text (integer,
    decimal, `a/b`, `\\frac{a}{b}`, with thousands separators removed); None
    when there is no such answer.
    """
    if not completion:
        return None
    if _BOXED in completion:
        # Once the model opens a box, only a finished box is its answer: the
        # "61" in a "\boxed{61" cut off at the length limit might have been 612.
        return _last_boxed(completion)
    last = None
    for last in _FINAL_NUMBER.finditer(completion):
        pass
    if last is None:
        return None
    number = last.group(0)
    return number.replace(",", "") if "," in number else number


def _normalize_truth(ground_truth: object) -> str:
    truth = ground_truth if isinstance(ground_truth, str) else str(ground_truth)
    truth = truth.strip()
    # Some datasets store the reference as "\boxed{..}" or "$..$"; grading the
    # bare answer keeps both sides in the same form.
    if _BOXED in truth:
        truth = _last_boxed(truth) or truth
    if len(truth) >= 2 and truth[0] == "$" and truth[-1] == "$":
        truth = truth.strip("$").strip()
    return truth


# --------------------------------------------------------------------------
# Fast path: plain numbers
# --------------------------------------------------------------------------

_INT = re.compile(r"-?\d{1,300}")
_SIMPLE = re.compile(
    r"(-?)(?:(\d+)(?:\.(\d+))?"
    r"|\\[dt]?frac\{(-?\d+)\}\{(\d+)\}"
    r"|(\d+)/(\d+))"
)
# math-verify rounds to 6 decimals when a float is involved, and its rounding
# has quirks (1.0000001 != 1 there, 1/3 == 0.333333), so near-misses are left
# to it; beyond this gap no rounding can make two values equal.
_FLOAT_UNDECIDED_GAP = Fraction(1, 10**5)
# sympy Floats carry 15 significant digits; longer decimals go to math-verify.
_MAX_DECIMAL_DIGITS = 15


def _simple_value(s: str) -> tuple[Fraction, bool] | None:
    """(exact value, is_decimal) for a plain number, else None."""
    if len(s) > 64:
        return None
    m = _SIMPLE.fullmatch(s)
    if m is None:
        return None
    neg, whole, frac_digits, num, den, snum, sden = m.groups()
    if whole is not None:
        if frac_digits is None:
            value = Fraction(int(whole))
            is_decimal = False
        else:
            if len((whole + frac_digits).lstrip("0")) > _MAX_DECIMAL_DIGITS:
                return None
            value = Fraction(int(whole + frac_digits), 10 ** len(frac_digits))
            is_decimal = True
    else:
        numerator, denominator = (num, den) if num is not None else (snum, sden)
        if int(denominator) == 0:
            return None  # zoo: math-verify's business
        value = Fraction(int(numerator), int(denominator))
        is_decimal = False
    return (-value if neg else value), is_decimal


def _fast_verdict(answer: str, truth: str) -> bool | None:
    """The verdict math-verify would give on two plain numbers; None to defer to it."""
    if _INT.fullmatch(answer) and _INT.fullmatch(truth):
        return int(answer) == int(truth)
    a = _simple_value(answer)
    if a is None:
        return None
    t = _simple_value(truth)
    if t is None:
        return None
    if a[0] == t[0]:
        return True
    if not (a[1] or t[1]):
        return False  # exact rationals: sympy compares them exactly too
    if abs(a[0] - t[0]) > _FLOAT_UNDECIDED_GAP:
        return False
    return None


# --------------------------------------------------------------------------
# Slow path: math-verify in a worker process
# --------------------------------------------------------------------------


def _mv_compare(answer: str, truth: str) -> bool:
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


# Covers interpreter start, math-verify import and a warm-up parse; not counted
# against a call's timeout_s, which bounds the comparison itself.
_STARTUP_TIMEOUT_S = 120.0
# The worker kills itself this long after the parent's deadline, so a worker
# whose parent died mid-request cannot spin forever.
_SELF_DESTRUCT_GRACE_S = 5.0
_WORKER_MEMORY_HEADROOM = 4 << 30
# Workers only pile up as far as callers were ever concurrent; each holds ~65 MB.
_MAX_IDLE_WORKERS = max(8, os.cpu_count() or 8)

_WORKER_BOOT = "from isocompute.grading import _worker_main; _worker_main()"


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
    _mv_compare("1", "1")  # import and compile everything before saying ready
    _limit_worker_memory()
    proto.write(b"ready\n")
    for line in sys.stdin.buffer:
        request = json.loads(line)
        signal.setitimer(signal.ITIMER_REAL, float(request["t"]) + _SELF_DESTRUCT_GRACE_S)
        try:
            verdict = _mv_compare(request["a"], request["g"])
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
        self._fd = self.proc.stdout.fileno()
        self._buf = b""
        self.ready = False

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _readline(self, deadline: float) -> bytes | None:
        while b"\n" not in self._buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            readable, _, _ = select.select([self._fd], [], [], remaining)
            if not readable:
                return None
            chunk = os.read(self._fd, 4096)
            if not chunk:
                return None  # the worker died
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def wait_ready(self) -> None:
        if self.ready:
            return
        if self._readline(time.monotonic() + _STARTUP_TIMEOUT_S) != b"ready":
            raise _WorkerStartError(f"grading worker did not start (exit code {self.proc.poll()})")
        self.ready = True

    def compare(self, answer: str, truth: str, timeout_s: float) -> bool | None:
        """The verdict, or None if the worker missed the deadline or died."""
        payload = json.dumps({"a": answer, "g": truth, "t": timeout_s}).encode() + b"\n"
        deadline = time.monotonic() + timeout_s
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

    def _check_fork(self) -> None:
        # Workers inherited through fork belong to the parent process; talking
        # to them from the child would interleave two conversations on a pipe.
        if os.getpid() != self._pid:
            self._idle = []
            self._pid = os.getpid()

    def acquire(self) -> _Worker:
        with self._lock:
            self._check_fork()
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    return worker
                worker.close()
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
    """Start `n` math-verify workers now, so that no grade() pays their start-up."""
    workers = [_POOL.acquire() for _ in range(n)]
    for worker in workers:
        worker.wait_ready()
    for worker in workers:
        _POOL.release(worker)


def _compare_in_fork(answer: str, truth: str, timeout_s: float) -> bool:
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
            signal.setitimer(signal.ITIMER_REAL, timeout_s + _SELF_DESTRUCT_GRACE_S)
            os.write(write_fd, b"1" if _mv_compare(answer, truth) else b"0")
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
    return verdict == b"1"


def _compare_guarded(answer: str, truth: str, timeout_s: float) -> bool:
    if _POOL.broken:
        return _compare_in_fork(answer, truth, timeout_s)
    for _ in range(2):  # one retry for a pooled worker that died while idle
        try:
            worker = _POOL.acquire()
            worker.wait_ready()
        except (OSError, _WorkerStartError) as exc:
            logger.warning("math-verify worker unavailable (%s); forking per comparison", exc)
            _POOL.broken = True
            return _compare_in_fork(answer, truth, timeout_s)
        try:
            verdict = worker.compare(answer, truth, timeout_s)
        except (BrokenPipeError, OSError):
            worker.close()
            continue
        if verdict is None:
            # Timed out or crashed on this input: the answer is not gradable, so wrong.
            _POOL.replace(worker)
            return False
        _POOL.release(worker)
        return verdict
    return False


@lru_cache(maxsize=1 << 16)
def _slow_verdict(answer: str, truth: str, timeout_s: float) -> bool:
    # Cached, timeouts included: a policy that repeats one pathological answer
    # must not cost timeout_s per sample.
    return _compare_guarded(answer, truth, timeout_s)


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def _grade_answer(answer: str | None, ground_truth: object, timeout_s: float) -> bool:
    if answer is None:
        return False
    truth = _normalize_truth(ground_truth)
    if not truth:
        return False
    verdict = _fast_verdict(answer, truth)
    if verdict is not None:
        return verdict
    return _slow_verdict(answer, truth, float(timeout_s))


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


class GradeCache:
    """Verdicts keyed by (completion, ground_truth), saved as JSON between runs.

    Keys are digests, so a cache of 100k long completions stays a few MB. A
    file written by another GRADER_VERSION loads as empty.
    """

    def __init__(self, grades: dict[str, bool] | None = None) -> None:
        self._grades: dict[str, bool] = dict(grades or {})

    @staticmethod
    def key(completion: str, ground_truth: str) -> str:
        c = str(completion).encode("utf-8", "surrogatepass")
        g = str(ground_truth).encode("utf-8", "surrogatepass")
        # Length-prefixed so no (completion, truth) split can collide with another.
        h = hashlib.blake2b(digest_size=16)
        h.update(len(c).to_bytes(8, "little"))
        h.update(c)
        h.update(g)
        return h.hexdigest()

    def get(self, completion: str, ground_truth: str) -> bool | None:
        return self._grades.get(self.key(completion, ground_truth))

    def put(self, completion: str, ground_truth: str, correct: bool) -> None:
        self._grades[self.key(completion, ground_truth)] = bool(correct)

    def __len__(self) -> int:
        return len(self._grades)

    def __contains__(self, pair: tuple[str, str]) -> bool:
        return self.key(*pair) in self._grades

    def save(self, path: str | os.PathLike) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".tmp{os.getpid()}")
        with open(tmp, "w") as f:
            json.dump({"grader_version": GRADER_VERSION, "grades": self._grades}, f)
        os.replace(tmp, path)  # readers never see a half-written cache

    @classmethod
    def load(cls, path: str | os.PathLike, missing_ok: bool = True) -> "GradeCache":
        path = Path(path)
        if missing_ok and not path.exists():
            return cls()
        with open(path) as f:
            data = json.load(f)
        if data.get("grader_version") != GRADER_VERSION:
            logger.warning(
                "ignoring grade cache %s from grader version %s (now %s)",
                path, data.get("grader_version"), GRADER_VERSION,
            )
            return cls()
        return cls({k: bool(v) for k, v in data["grades"].items()})


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
        norm_truth = _normalize_truth(truth)
        if answer is None or not norm_truth:
            results[i] = False
            continue
        verdict = _fast_verdict(answer, norm_truth)
        if verdict is None:
            pending.append((i, answer, norm_truth))
        else:
            results[i] = verdict

    def slow(item: tuple[int, str, str]) -> bool:
        return _slow_verdict(item[1], item[2], float(timeout_s))

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
