"""Benchmark: is `isocompute design`'s assurance calibrated? Its reliability table on synthetic pilots.

On synthetic pilots drawn from known truths (the strata early, mid, climbing, late, falling, null of
`isocompute.analysis.adaptive.strata`, each with a true run-to-run sd), each candidate design's
predicted assurance (`assurance.assess`, from the pilot alone) is set against what the design does
when run on the known truth with fresh noise (the same analysis chain, `assurance.judge`). Prints,
per claim (rises, determined, U), predicted assurance in bins against the observed success rate with
its Clopper-Pearson 95% interval (a bin with >= 20 designs is judged: is the mean prediction inside?),
the pooled calibration (mean predicted against observed, Brier score), the same by shape, the pilots
the tool refused, and the verdict. The logic is `isocompute.design.reliability` (its docstring says
what is drawn, simulated and judged, and the seeds: truths 3000 on, used nowhere else).

    PYTHONPATH=src .venv/bin/python benchmarks/bench_design_reliability.py [--pilots 48] [--draws 20]
        [--bootstrap 10] [--outcome-bootstrap 10] [--outcomes 1] [--jobs 2] [--out rows.csv]

--quick: one pilot per shape, 2 draws, 5 bootstrap replicates (tests/benchmarks runs it).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

import pandas as pd

from isocompute.design.reliability import (MIN_DESIGNS, SHAPES, Study, calibration, markdown, refusals,
                                           reliability_table, run_study, verdict)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pilots", type=int, default=None, help="synthetic pilots, shapes in turn (default 48)")
    parser.add_argument("--first-truth", type=int, default=Study.first_truth, help="first truth seed (default 3000)")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated strata (default: %(default)s)")
    parser.add_argument("--draws", type=int, default=None, help="truths from each pilot's bootstrap per design "
                                                                "(default 20, the tool's)")
    parser.add_argument("--bootstrap", type=int, default=None,
                        help="bootstrap replicates of each simulated study (default 10, for time; the tool's 50)")
    parser.add_argument("--outcome-bootstrap", type=int, default=None,
                        help="bootstrap replicates of each outcome's analysis (default: --bootstrap's; the "
                             "analysis' own is 200)")
    parser.add_argument("--pilot-bootstrap", type=int, default=None,
                        help="bootstrap replicates of each pilot's analysis (default 20: each draw takes one, in turn)")
    parser.add_argument("--outcomes", type=int, default=Study.outcomes, help="real runs per design (default 1)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes over pilots (default 2)")
    parser.add_argument("--quick", action="store_true", help="one pilot per shape, 2 draws, 5 bootstrap replicates")
    parser.add_argument("--out", default=None, metavar="CSV", help="write one row per pilot, design and claim")
    args = parser.parse_args(argv)
    shapes = tuple(s for s in args.shapes.split(",") if s)
    quick = {"pilots": len(shapes), "draws": 2, "bootstrap": 5, "pilot_bootstrap": 5} if args.quick else {}
    given = {k: v for k, v in (("pilots", args.pilots), ("draws", args.draws), ("bootstrap", args.bootstrap),
                               ("pilot_bootstrap", args.pilot_bootstrap)) if v is not None}
    try:
        study = Study(**{**quick, **given}, outcomes=args.outcomes, outcome_bootstrap=args.outcome_bootstrap,
                      first_truth=args.first_truth, shapes=shapes)
    except ValueError as exc:
        parser.error(str(exc))
    print(f"{study.describe()}; {args.jobs} jobs", flush=True)
    logging.basicConfig(level=logging.INFO, format="%(message)s")      # progress on stderr
    start = time.perf_counter()
    rows = run_study(study, jobs=max(1, args.jobs))
    seconds = time.perf_counter() - start
    if args.out:
        rows.to_csv(args.out, index=False)
    table = reliability_table(rows)
    print(f"\n## Reliability: predicted assurance against observed success (bins with >= {MIN_DESIGNS} designs "
          "judged)\n")
    print(markdown(table.rename(columns={"lo": "95% lo", "hi": "95% hi"})))
    print("\n## Pooled, per claim\n")
    print(markdown(calibration(rows).rename(columns={"lo": "95% lo", "hi": "95% hi"}), digits=3))
    print("\n## Per claim and shape\n")
    print(markdown(calibration(rows, by=("claim", "shape")).rename(columns={"lo": "95% lo", "hi": "95% hi"}),
                   digits=3))
    refused = refusals(rows)
    print(f"\npilots refused by the tool (or with no truth drawn): {len(refused)} of {study.pilots}")
    if len(refused):
        with pd.option_context("display.max_colwidth", 200, "display.width", 250):
            print(refused.to_string(index=False))
    print(verdict(table))
    print(f"{seconds:.0f} s ({seconds * max(1, args.jobs) / study.pilots:.1f} s of a worker per pilot, "
          f"{args.jobs} jobs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
