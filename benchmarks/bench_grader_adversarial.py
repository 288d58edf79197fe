"""Benchmark of the grader's time bound and of its fast path.

Grades the adversarial corpus of `isocompute.grading.adversarial` one `grade`
call at a time and prints the total, the worst call (its kind and length) and
the per-call p50/p99, against the bound of a call: `verdict.PAIR_BUDGET_FACTOR`
times its timeout (deadline, retry, re-tries and worker restarts together), plus
0.5 s; beside it the named peer in the same run: math-verify called directly on
each completion with its own timeout (`parse(..., parsing_timeout=t)`,
`verify(..., timeout_seconds=t)`, its signal.alarm guard, so t rounded up to
whole seconds), in a child process
cut off at --peer-cap seconds a call (a call cut off is reported at the cap: its
true time is longer); then the worst of the answers
decided before math-verify (`adversarial.DECIDED_BEFORE_MATH_VERIFY`: power towers,
huge factorials, 5,000 nested braces, which took a whole budget and its retry
before grader version 5); then grades 100k ordinary
integer completions with `grade_many` (the numeric fast path), so that a speed
regression there shows. Before the bound, 1,000 such completions took 1,025 s,
35 calls over 10 s.

    .venv/bin/python benchmarks/bench_grader_adversarial.py [--n 1000] [--seed 14] [--timeout 1.0]
        [--peer-cap 60] [--no-peer] [--out calls.json] [--quick]

--quick grades one completion of each kind with a 0.25 s timeout and 2,000 ordinary
ones, the peer capped at 3 s (seconds; what `make test` runs, in tests/benchmarks/test_benchmarks.py);
--out writes every call (kind, length, seconds, verdict, reason), the peer's and the
ordinary count as JSON. Load: run it beside a CPU burner to see the bound under load
(the load average is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

SLACK_S = 0.5  # a call's time beyond its budgets: worker hand-over, extraction


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


# The peer: math-verify as its README calls it, with its own timeouts, one call per line.
_PEER = r"""
import json, os, resource, sys, time
from math_verify import parse, verify
vsz = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
resource.setrlimit(resource.RLIMIT_AS, (vsz + (4 << 30), resource.getrlimit(resource.RLIMIT_AS)[1]))
print("ready", flush=True)
for line in sys.stdin:
    r = json.loads(line)
    r["t"] = max(1, -int(-r["t"] // 1))  # whole seconds: math-verify's guard is signal.alarm
    gold = r["g"] if ("$" in r["g"] or "\\boxed" in r["g"]) else "$" + r["g"] + "$"
    try:
        ok = bool(verify(parse(gold, parsing_timeout=r["t"]), parse(r["c"], parsing_timeout=r["t"]),
                         timeout_seconds=r["t"]))
    except BaseException:  # MemoryError, RecursionError: not correct
        ok = False
    print("1" if ok else "0", flush=True)
"""


class Peer:
    """math-verify called directly, in a child process killed (and restarted) past `cap_s` a call."""

    def __init__(self, cap_s: float) -> None:
        self.cap_s, self.proc = cap_s, None

    def _start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _PEER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdout.readline().strip() == "ready", "math-verify peer did not start"

    def call(self, completion: str, truth: str, timeout_s: float) -> tuple[float, bool | None]:
        """(seconds, verdict), or (cap_s, None) for a call cut off at the cap."""
        if self.proc is None:
            self._start()
        t0 = time.perf_counter()
        self.proc.stdin.write(json.dumps({"c": completion, "g": truth, "t": timeout_s}) + "\n")
        self.proc.stdin.flush()
        if select.select([self.proc.stdout], [], [], self.cap_s)[0]:
            line = self.proc.stdout.readline()
            if line:
                return time.perf_counter() - t0, line.strip() == "1"
        self.close()
        return self.cap_s, None

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def _decided_by_a_limit(timeout_s: float) -> str:
    """The review's cases (a new user's adversarial answers): how many come back as their written limit says, and the worst time."""
    from isocompute.grading import adversarial, grade_with_reason

    limited = []
    for case in adversarial.DECIDED_BY_A_LIMIT:
        t0 = time.perf_counter()
        got = grade_with_reason(case.completion, case.ground_truth, timeout_s=timeout_s)
        limited.append((time.perf_counter() - t0, case.kind, got == (case.correct, case.reason)))
    return (f"decided by a written limit: {sum(ok for *_, ok in limited)} of {len(limited)} as written, "
            f"worst {max(limited)[0] * 1e3:.2f} ms ({max(limited)[1]})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=None, help="adversarial completions (default: 1000)")
    parser.add_argument("--seed", type=int, default=14, help="corpus seed (default: 14)")
    parser.add_argument("--timeout", type=float, default=None, help="timeout_s of each call (default: 1.0)")
    parser.add_argument("--ordinary", type=int, default=None, help="ordinary completions (default: 100000)")
    parser.add_argument("--out", type=Path, default=None, help="write every call and the ordinary count as JSON")
    parser.add_argument("--peer-cap", type=float, default=None,
                        help="seconds after which a direct math-verify call is cut off (default: 60; --quick: 3)")
    parser.add_argument("--no-peer", action="store_true", help="skip the direct math-verify run")
    parser.add_argument("--quick", action="store_true",
                        help="one completion per kind, timeout 0.25 s, 2000 ordinary, unless given (a smoke run)")
    args = parser.parse_args(argv)

    from isocompute.grading import adversarial, grade_many, grade_with_reason, warm_up
    from isocompute.grading.verdict import PAIR_BUDGET_FACTOR
    from isocompute.grading.worker import RELAY_GRACE_S

    sizes = (("n", 1_000, len(adversarial.KINDS)), ("timeout", 1.0, 0.25), ("ordinary", 100_000, 2_000),
             ("peer_cap", 60.0, 3.0))
    for key, full, quick in sizes:
        if getattr(args, key) is None:
            setattr(args, key, quick if args.quick else full)
    bound = PAIR_BUDGET_FACTOR * args.timeout + 2 * RELAY_GRACE_S + SLACK_S
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    start = time.perf_counter()
    cases = adversarial.corpus(args.n, seed=args.seed)
    print(f"corpus: {len(cases)} completions, {sum(len(c.completion) for c in cases) / 1e6:.1f} M characters, "
          f"generated in {time.perf_counter() - start:.1f} s")
    warm_up(2)

    calls = []  # (seconds, kind, length, reason, correct)
    start = time.perf_counter()
    for case in cases:
        t0 = time.perf_counter()
        correct, reason = grade_with_reason(case.completion, case.ground_truth, timeout_s=args.timeout)
        calls.append((time.perf_counter() - t0, case.kind, len(case.completion), reason, correct))
    total = time.perf_counter() - start

    seconds = sorted(c[0] for c in calls)
    worst = max(calls)
    print(f"adversarial: total {total:.2f} s, mean {statistics.fmean(seconds) * 1e3:.1f} ms, "
          f"p50 {percentile(seconds, 0.5) * 1e3:.2f} ms, p99 {percentile(seconds, 0.99) * 1e3:.0f} ms")
    print(f"  worst call: {worst[0]:.3f} s ({worst[1]}, {worst[2]:,} characters, {worst[3]}); "
          f"bound {PAIR_BUDGET_FACTOR:g} x timeout + 2 x {RELAY_GRACE_S} + {SLACK_S} = {bound:.2f} s; "
          f"over it: {sum(s > bound for s in seconds)}")
    print("  outcomes: " + ", ".join(f"{reason} {count}" for reason, count in Counter(c[3] for c in calls).most_common()))
    by_kind: dict[str, float] = {}
    for s, kind, *_ in calls:
        by_kind[kind] = by_kind.get(kind, 0.0) + s
    print("  seconds by kind: " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])))
    peer_calls = []  # (seconds, kind, length, verdict or None when cut off)
    if not args.no_peer:
        peer = Peer(args.peer_cap)
        try:
            for case in cases:
                s, v = peer.call(case.completion, case.ground_truth, args.timeout)
                peer_calls.append((s, case.kind, len(case.completion), v))
        finally:
            peer.close()
        pworst = max(peer_calls, key=lambda c: c[0])
        pseconds = sorted(c[0] for c in peer_calls)
        print(f"math-verify directly, timeout {args.timeout:g} s: total {sum(pseconds):.2f} s, "
              f"p50 {percentile(pseconds, 0.5) * 1e3:.2f} ms, p99 {percentile(pseconds, 0.99) * 1e3:.0f} ms; worst "
              f"{pworst[0]:.3f} s ({pworst[1]}, {pworst[2]:,} characters); over the grader's bound: "
              f"{sum(s > bound for s in pseconds)}; cut off at {args.peer_cap:g} s: "
              f"{sum(v is None for *_, v in peer_calls)}; correct: {sum(v is True for *_, v in peer_calls)}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    # Towers, huge factorials, 5,000 nested braces: decided before math-verify.
    cheap = []
    for case in adversarial.DECIDED_BEFORE_MATH_VERIFY:
        t0 = time.perf_counter()
        correct, reason = grade_with_reason(case.completion, case.ground_truth, timeout_s=args.timeout)
        cheap.append((time.perf_counter() - t0, case.kind, reason, correct))
    worst_cheap = max(cheap)
    print(f"decided before math-verify: {len(cheap)} answers, {sum(c for *_, c in cheap)} correct, worst "
          f"{worst_cheap[0] * 1e3:.2f} ms ({worst_cheap[1]}, {worst_cheap[2]})")

    print(_decided_by_a_limit(args.timeout))

    completions = [f"Adding them gives \\boxed{{{i % 1000}}}" for i in range(args.ordinary)]
    truths = [str(i % 997) for i in range(args.ordinary)]
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        verdicts = grade_many(completions, truths)
        runs.append(time.perf_counter() - t0)
    right = sum(verdicts)
    print(f"ordinary: {args.ordinary:,} integer completions (fast path) in {min(runs):.3f} s "
          f"(best of 3; {min(runs) / args.ordinary * 1e6:.2f} us each); {right:,} graded correct")
    if args.out:
        args.out.write_text(json.dumps({
            "timeout_s": args.timeout, "bound_s": bound, "seed": args.seed,
            "peer": [{"seconds": s, "kind": k, "length": n, "correct": v} for s, k, n, v in peer_calls],
            "calls": [{"seconds": s, "kind": k, "length": n, "reason": r, "correct": c} for s, k, n, r, c in calls],
            "decided_before_math_verify": [{"seconds": s, "kind": k, "reason": r, "correct": c} for s, k, r, c in cheap],
            "ordinary": {"completions": args.ordinary, "correct": right, "seconds": min(runs)}}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
