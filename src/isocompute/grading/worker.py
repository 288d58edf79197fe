"""One math-verify worker process: a fresh interpreter that answers one pair at a time.

`sandbox` pools these and bounds each comparison in time; this module is the
process itself (`worker_main`, its loop) and the parent's handle on it
(`Worker`). A pair's clock starts only once a started, imported worker has
been sent the pair (`Worker.compare`), so interpreter start-up is never a
pair's time.
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import subprocess
import sys
import time


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
    gold = parse(gold_text(truth), parsing_timeout=None)
    if not gold:
        return False
    pred = parse("\\boxed{" + answer + "}", parsing_timeout=None)
    if not pred:
        return False
    return bool(verify(gold, pred, timeout_seconds=None)) or _equal_to_a_bare_variable(gold, pred)


def gold_text(truth: str) -> str:
    """The ground truth in the form math-verify reads best: boxed, except a percent, and
    a truth of several boxes, which is read as written.

    math-verify 0.9.0 reads "$28\\%$" as 28 (and the text 28\\%), so such a truth
    accepts \\boxed{28} and \\boxed{28\\%}, as its own percent tests expect; boxed,
    "\\boxed{28\\%}" parses to the text alone, and \\boxed{28} is wrong.
    """
    if "\\boxed" in truth:
        return truth  # several boxes (`extract.normalize_truth`): as written
    if "%" in truth and "$" not in truth:
        return "$" + truth + "$"
    return "\\boxed{" + truth + "}"


def _equal_to_a_bare_variable(gold: list, pred: list) -> bool:
    """A ground truth that is one bare variable (x) is compared by math-verify as text (for answers
    like \\text{yes}), so 3x/3 or 2x - x is wrong by it. Here an algebraic answer in that variable
    alone is correct when sympy reduces its difference from the variable to 0 (an identity, not
    a numeric coincidence). Runs inside the worker, under the pair's deadline."""
    from sympy import Expr, Symbol, simplify

    variables = [g for g in gold if isinstance(g, Symbol)]
    if not variables:
        return False
    x = variables[0]
    for e in pred:
        if isinstance(e, Expr) and not isinstance(e, Symbol) and e.free_symbols == {x}:
            try:
                if simplify(e - x) == 0:
                    return True
            except (TypeError, ValueError):
                continue
    return False


# Covers interpreter start, math-verify import and a warm-up parse: the most a
# worker's start may take before grading gives up on worker processes.
STARTUP_TIMEOUT_S = 120.0
# The worker kills itself this long after the parent's deadline, so a worker
# whose parent died mid-request cannot spin forever.
SELF_DESTRUCT_GRACE_S = 5.0
_WORKER_MEMORY_HEADROOM = 4 << 30

_WARM_UP_PAIRS = (("1", "1"), ("(x+2)(x-3)", "x^2-x-6"), ("\\frac{3}{8}+\\frac{4}{8}", "\\frac{7}{8}"),
                  ("\\sqrt{12}", "2\\sqrt{3}"), ("x^{2}\\cdot x^{3}", "x^{5}"))

_WORKER_BOOT = "from isocompute.grading.worker import worker_main; worker_main()"


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


def worker_main() -> None:
    """Loop of the worker process: one JSON request line in, one verdict line out.

    The worker runs no comparison itself: its forked child (`_Computer`) does, and the
    worker enforces each budget, killing the child of a pair that runs past it and forking a
    successor, which takes milliseconds, not the seconds (tens of seconds under load) of
    starting an interpreter. So a pair that runs out of time costs no worker restart.
    Replies: "1"/"0" (the verdict), "t" (out of time), "x" (the child died on the pair).
    """
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    # The protocol owns the real stdout; anything sympy prints goes to stderr.
    proto = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    # Import and compile everything before saying ready: a number alone leaves sympy's
    # simplification to load lazily inside the first symbolic pair's budget (measured:
    # 0.7 s for a fresh worker's first product against 0.1 s after, more under load).
    # The forked children inherit it warm.
    for answer, truth in _WARM_UP_PAIRS:
        mv_compare(answer, truth)
    _limit_worker_memory()
    keep = (proto.fileno(), 0)
    computer = _Computer(keep)
    proto.write(b"ready\n")
    try:
        for line in sys.stdin.buffer:
            reply = computer.ask(line, float(json.loads(line)["t"]))
            if reply in (b"1", b"0"):
                proto.write(reply + b"\n")
                continue
            computer.kill()
            proto.write(reply + b"\n")  # answered before the successor is forked
            computer = _Computer(keep)
    finally:
        computer.kill()


class _Computer:
    """The worker's forked child that runs math-verify on one pair at a time."""

    def __init__(self, inherited: tuple[int, ...]) -> None:
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: compare until the worker closes its pipe, never return
            try:
                for fd in (req_w, resp_r, *inherited):
                    os.close(fd)
                _compute(req_r, resp_w)
            finally:
                os._exit(0)
        os.close(req_r)
        os.close(resp_w)
        self.pid, self.answers = pid, resp_r
        self.requests = os.fdopen(req_w, "wb")

    def ask(self, line: bytes, budget_s: float) -> bytes:
        """b"1" or b"0"; b"t" when the child took more than `budget_s`, b"x" when it died."""
        try:
            self.requests.write(line)
            self.requests.flush()
        except OSError:
            return b"x"
        if not select.select([self.answers], [], [], budget_s)[0]:
            return b"t"
        return os.read(self.answers, 1) or b"x"

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        for close in (self.requests.close, lambda: os.close(self.answers)):
            try:
                close()
            except OSError:
                pass


def _compute(requests_fd: int, answers_fd: int) -> None:
    """The child's loop: a request line in, one verdict byte out."""
    for line in os.fdopen(requests_fd, "rb"):
        request = json.loads(line)
        # Killed by default SIGALRM even inside a C-level bigint operation, should its
        # worker die and leave it running.
        signal.setitimer(signal.ITIMER_REAL, float(request["t"]) + SELF_DESTRUCT_GRACE_S)
        try:
            verdict = mv_compare(request["a"], request["g"])
        except Exception:  # MemoryError and RecursionError included: a bad answer
            verdict = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        os.write(answers_fd, b"1" if verdict else b"0")


class WorkerStartError(RuntimeError):
    """A worker process exited, or said something else than ready, while starting."""


class WorkerDied(OSError):
    """A ready worker's process ended before it answered."""


class PairCrashed(WorkerDied):
    """The worker's child died on the pair; the worker itself lives on with a fresh child."""


# How long past a comparison's budget the caller waits for its worker to say "out of time"
# (waking, killing its child, writing a line: milliseconds, more on a loaded machine). A
# worker later than this is killed and replaced, and the pair timed out.
RELAY_GRACE_S = 0.5


class Worker:
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
        self._eof = False
        self.ready = False
        self.in_sync = True  # every request answered: the worker can take another pair

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
                self._eof = True  # the worker died
                return None
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def wait_ready(self, deadline: float | None = None) -> bool:
        """True once the worker is ready; False if it is still starting at `deadline`.

        Without a deadline, waits for as long as a start may take (raising
        WorkerStartError past it).
        """
        if self.ready:
            return True
        give_up = self.started + STARTUP_TIMEOUT_S
        line = self._readline(give_up if deadline is None else min(deadline, give_up))
        if line == b"ready":
            self.ready = True
            return True
        if line is not None or not self.alive() or time.monotonic() >= give_up:
            raise WorkerStartError(f"grading worker did not start (exit code {self.proc.poll()})")
        return False

    def ready_now(self) -> bool:
        try:
            return self.wait_ready(0.0)
        except (OSError, WorkerStartError):
            return False

    def compare(self, answer: str, truth: str, budget_s: float) -> bool | None:
        """The verdict, or None if math-verify took more than `budget_s` from receiving the pair.

        Call on a ready worker. It answers by `budget_s` plus `RELAY_GRACE_S`; after None,
        `in_sync` says whether it did (and can take the next pair) or is to be replaced.
        Raises PairCrashed if math-verify died on the pair (the worker lives on), WorkerDied
        (or BrokenPipeError) if the worker's process ended before answering.
        """
        payload = json.dumps({"a": answer, "g": truth, "t": budget_s}).encode() + b"\n"
        self.proc.stdin.write(payload)
        self.proc.stdin.flush()
        # The pair's clock starts here: the worker is running and has the pair.
        line = self._readline(time.monotonic() + budget_s + RELAY_GRACE_S)
        if line is None and self._eof:
            raise WorkerDied(f"grading worker died on a pair (exit code {self.proc.poll()})")
        if line is None:
            self.in_sync = False
            return None
        if line == b"x":
            raise PairCrashed("math-verify died on a pair")
        return None if line == b"t" else line == b"1"

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
