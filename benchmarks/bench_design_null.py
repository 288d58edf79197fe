"""Benchmark: why `isocompute design` over-predicts "n* determined" on null truths (n does not matter).

The reliability table (bench_design_reliability.py) found the assurance that n* is determined
over-confident, most of it on null truths. For each null truth (by default the eight of the tuning
seeds 3000-3047, `reliability.FIRST_TRUTH`, never the reported 4000s), the pilot as the reliability
study makes it and, per `diagnosis.null_diagnosis`: its fits with an asymptote above 1 (a
simulated run clips A to 1, so a curve still low on its rise becomes flat), the spread over n of
its fitted rewards at its C_max (the truth's is 0) against the bootstrap's sd of them (what the
tool reads as noise), whether the pilot's own analysis calls n* determined, the tool's predicted
assurance for the pilot's design, and how often that design, run on the truth, determines n*.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_design_null.py [--seeds 3005,3011,...] [--outcomes 3]
        [--jobs 2]

With --n-effect TRUTHS it prints instead what a pilot can tell (`diagnosis.n_effect_rates`): per
shape, TRUTHS known truths from seed 20000 run as the pilot design, and the share whose run-level
test that n matters (`pilot.n_effect`, printed on the pilot's line by `isocompute design`) finds it
at 0.05: its level on null truths, its power on the others; --pilot-seeds K runs that pilot with K
seeds per cell (default 2, the reliability study's).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial

import pandas as pd

from isocompute.design.chain import rate
from isocompute.design.diagnosis import n_effect_rates, null_diagnosis
from isocompute.design.reliability import FIRST_TRUTH, PILOT, SHAPES, Study, markdown

NULL_SEEDS = tuple(s for s in range(FIRST_TRUTH, FIRST_TRUTH + 48) if SHAPES[s % len(SHAPES)] == "null")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default=",".join(map(str, NULL_SEEDS)), help="null truth seeds (default: %(default)s)")
    parser.add_argument("--outcomes", type=int, default=3, help="runs of the pilot's design on each truth (default 3)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes over truths (default 2)")
    parser.add_argument("--n-effect", type=int, default=0, metavar="TRUTHS",
                        help="print the run-level test's level and power per shape on TRUTHS truths each instead")
    parser.add_argument("--pilot-seeds", type=int, default=PILOT.seeds,
                        help="with --n-effect: seeds per cell of the pilot (default %(default)s)")
    args = parser.parse_args(argv)
    if args.n_effect:
        start = time.perf_counter()
        with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            study = Study(pilot=dataclasses.replace(PILOT, seeds=args.pilot_seeds))
            parts = list(pool.map(partial(n_effect_rates, truths=args.n_effect, study=study), [(s,) for s in SHAPES]))
        print(markdown(pd.concat(parts, ignore_index=True), digits=3))
        print(f"{time.perf_counter() - start:.0f} s, {args.jobs} jobs")
        return 0
    seeds = [int(s) for s in args.seeds.split(",") if s]
    start = time.perf_counter()
    work = partial(null_diagnosis, outcomes=args.outcomes)
    if args.jobs <= 1:
        rows = [work(s) for s in seeds]
    else:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            rows = list(pool.map(work, seeds))
    frame = pd.DataFrame(rows)
    frame["spread/sd"] = frame["top_spread"] / frame["boot_sd"]
    print(markdown(frame, digits=3))
    successes, runs = int(frame["successes"].sum()), int(frame["outcomes"].sum())
    observed, n, lo, hi = rate([1.0] * successes + [0.0] * (runs - successes))
    print(f"\n{len(frame)} null truths: predicted determined {frame['predicted'].mean():.2f}, observed "
          f"{observed:.2f} [{lo:.2f}, {hi:.2f}] over {n} runs; the pilot's own analysis determined in "
          f"{int(frame['pilot_determined'].sum())}; pilots with a fit A > 1: {int((frame['fits_over_1'] > 0).sum())} "
          f"({int(frame['fits_over_1'].sum())} of {int(frame['fits'].sum())} fits); spread over n at C_max "
          f"{frame['top_spread'].median():.3f} (median) against a bootstrap sd of {frame['boot_sd'].median():.3f}")
    print(f"{time.perf_counter() - start:.0f} s, {args.jobs} jobs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
