"""Benchmark of the grader's verdicts on a loaded machine: honest answers stay correct.

Grades 1,000 honest symbolic pairs (a correct answer written differently from
the ground truth: 3x+3 against 3(x+1), x+x against 2x, equivalent fractions,
roots, expanded products; drawn with a fixed seed, each checked equal with
sympy as it is drawn) mixed with 50 towers (x + 9^{9^{9}+1} and kin, and deeply
nested roots: inputs sympy cannot finish; both from isocompute.grading.load), through the project's `judge_many`
with its default budgets, while a CPU burner (`--burners` processes spinning
at normal priority, stopped by PID at the end) keeps the load average up. It
prints the honest pairs graded wrong or timed out (the target is 0), the
towers' verdicts (timed out or wrong, never correct, never a hang), the wall
time and the load average (os.getloadavg) sampled during the run.

    .venv/bin/python benchmarks/bench_grader_load.py [--pairs 1000] [--towers 50] [--burners 8]
        [--min-load 8] [--workers 4] [--seed 0] [--out result.json] [--quick]

--workers is judge_many's num_workers (the towers' timeouts run concurrently;
1 is what `score` uses, and pays each tower's budget and retry in turn).
--burners 0 is the quiet run. --quick grades 20 pairs and 2 towers with no
burner and a 0.5 s timeout (seconds; tests/benchmarks/test_benchmarks.py runs it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from isocompute.grading.load import honest_pairs, start_burners, stop_burners, towers

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=None, help="honest symbolic pairs (default: 1000)")
    parser.add_argument("--towers", type=int, default=None, help="towers mixed in (default: 50)")
    parser.add_argument("--burners", type=int, default=None, help="CPU-spinning processes (default: 8; 0: quiet)")
    parser.add_argument("--min-load", type=float, default=8.0, help="wait (up to 120 s) for this 1-min load first")
    parser.add_argument("--workers", type=int, default=4, help="judge_many's num_workers (default: 4)")
    parser.add_argument("--timeout", type=float, default=None, help="timeout_s (default: judge_many's own)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunk", type=int, default=105, help="pairs per judge_many call (progress lines)")
    parser.add_argument("--out", type=Path, default=None, help="write the counts as JSON")
    parser.add_argument("--quick", action="store_true", help="20 pairs, 2 towers, no burner, timeout 0.5 s")
    args = parser.parse_args(argv)
    for key, full, quick in (("pairs", 1_000, 20), ("towers", 50, 2), ("burners", 8, 0), ("timeout", None, 0.5)):
        if getattr(args, key) is None:
            setattr(args, key, quick if args.quick else full)

    from isocompute.grading import Verdict, judge_many
    from isocompute.grading.verdict import RETRY_FACTOR

    start = time.perf_counter()
    honest = honest_pairs(args.pairs, args.seed)
    hard = towers(args.towers, args.seed)
    cases = honest + hard
    random.Random(args.seed).shuffle(cases)
    print(f"cases: {len(honest)} honest pairs ({dict(Counter(k for k, _, _ in honest))}), {len(hard)} towers; "
          f"drawn and checked in {time.perf_counter() - start:.1f} s", flush=True)
    kwargs = {} if args.timeout is None else {"timeout_s": args.timeout}

    loads: list[float] = []
    done = threading.Event()

    def sample_load() -> None:
        while not done.wait(2.0):
            loads.append(os.getloadavg()[0])

    # A terminated benchmark stops its burner too (SIGTERM runs the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    burners = start_burners(args.burners)
    try:
        if args.burners:
            waited = time.monotonic()
            while os.getloadavg()[0] < args.min_load and time.monotonic() - waited < 120:
                time.sleep(2)
            print(f"burner: {args.burners} processes; 1-min load {os.getloadavg()[0]:.1f} "
                  f"after {time.monotonic() - waited:.0f} s", flush=True)
        sampler = threading.Thread(target=sample_load, daemon=True)
        sampler.start()
        loads.append(os.getloadavg()[0])
        t0 = time.perf_counter()
        verdicts = []
        for at in range(0, len(cases), args.chunk):  # in chunks, to say how far it got
            chunk = cases[at:at + args.chunk]
            verdicts += judge_many([c for _, c, _ in chunk], [t for _, _, t in chunk], num_workers=args.workers,
                                   **kwargs)
            print(f"  {len(verdicts)} graded in {time.perf_counter() - t0:.0f} s "
                  f"({dict(Counter(v.value for v in verdicts))}); 1-min load {os.getloadavg()[0]:.1f}", flush=True)
        wall = time.perf_counter() - t0
        loads.append(os.getloadavg()[0])
    finally:
        done.set()
        stop_burners(burners)

    honest_kinds = {c: k for k, c, _ in honest}
    on_honest = Counter(v.value for (_, c, _), v in zip(cases, verdicts) if c in honest_kinds)
    on_towers = Counter(v.value for (k, c, _), v in zip(cases, verdicts) if c not in honest_kinds)
    missed = Counter(f"{honest_kinds[c]} {v.value}" for (_, c, _), v in zip(cases, verdicts)
                     if c in honest_kinds and v is not Verdict.CORRECT)
    timeout_s = kwargs.get("timeout_s", 2.0)
    bound = len(honest) * timeout_s + len(hard) * (1 + RETRY_FACTOR) * timeout_s
    result = {
        "pairs": len(honest), "towers": len(hard), "burners": args.burners, "workers": args.workers,
        "timeout_s": timeout_s, "wall_s": round(wall, 2),
        "load_1min": {"min": min(loads), "mean": sum(loads) / len(loads), "max": max(loads)},
        "honest": dict(on_honest), "honest_not_correct": dict(missed),
        "correct_graded_wrong": on_honest.get("wrong", 0), "timeouts": sum(v is Verdict.TIMED_OUT for v in verdicts),
        "towers_verdicts": dict(on_towers),
    }
    print(f"graded {len(cases)} pairs in {wall:.1f} s with {args.workers} workers (timeout {timeout_s:g} s; "
          f"serial bound of budgets and retries {bound:.0f} s); 1-min load min {result['load_1min']['min']:.1f}, "
          f"mean {result['load_1min']['mean']:.1f}, max {result['load_1min']['max']:.1f}")
    print(f"  honest: {dict(on_honest)}; correct graded wrong {result['correct_graded_wrong']}, "
          f"timed out {on_honest.get('timed out', 0)}" + (f" ({dict(missed)})" if missed else ""))
    print(f"  towers: {dict(on_towers)}; correct {on_towers.get('correct', 0)}")
    print(f"  timeouts in all: {result['timeouts']}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
