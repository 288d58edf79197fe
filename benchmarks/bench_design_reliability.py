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

The tables are printed twice: as the tool prints its assurance (recalibrated by
`isocompute.design.recalibrate.MEASURED`) and raw (the share of its simulated studies). --from-rows
CSV[,CSV...] judges rows written before (--out; several runs' files together) instead of running;
--fit fits the recalibration maps on the rows (maximum likelihood, a bootstrap over pilots for
their intervals) and judges the rows under them, which is how MEASURED was made on tuning truths
(beta calibration, or Platt's with --form platt); --cv K prints how each form does on pilots it was not fitted on (K blocks of consecutive
truth seeds, `reliability.cross_validate`); --maps 'claim:c:a:b,...' (or 'claim:c:a', Platt's)
judges the rows under given maps (the raw shares passed through them), as on truths no fit saw;
--bar SIMS prints how often a perfectly calibrated forecaster with the rows' predictions (as the tool
printed them, or under --maps where given) would pass the bar, outcomes independent and sharing a pilot's truth
(`diagnosis.bar_pass_rate`), beside the rows' own within-pilot residual correlation.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
import time

import pandas as pd

from isocompute.design.diagnosis import bar_pass_rate, residual_correlation
from isocompute.design.recalibrate import Recalibration, fit
from isocompute.design.reliability import (MIN_DESIGNS, PILOT, SHAPES, Study, calibration, cross_validate, maps_of,
                                           markdown, refusals, reliability_table, repredicted, run_study,
                                           verdict)


def tables(rows: pd.DataFrame, title: str) -> str:
    """The reliability table, the pooled and per-shape calibration, and the verdict of `rows`."""
    table = reliability_table(rows)
    out = [f"\n# {title}\n", f"## Reliability: predicted assurance against observed success (bins with >= "
           f"{MIN_DESIGNS} designs judged)\n", markdown(table.rename(columns={"lo": "95% lo", "hi": "95% hi"})),
           "\n## Pooled, per claim\n",
           markdown(calibration(rows).rename(columns={"lo": "95% lo", "hi": "95% hi"}), digits=3),
           "\n## Per claim and shape\n",
           markdown(calibration(rows, by=("claim", "shape")).rename(columns={"lo": "95% lo", "hi": "95% hi"}),
                    digits=3), "", verdict(table)]
    return "\n".join(out)


def given_maps(text: str) -> Recalibration:
    """'rises:c:a:b,determined:c:a' as maps (two numbers: Platt's, b = a)."""
    maps = {}
    for part in filter(None, text.split(",")):
        claim, *numbers = part.split(":")
        maps[claim] = tuple(float(v) for v in numbers)
    return Recalibration(maps, "given on the command line")


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
    parser.add_argument("--pilot-seeds", type=int, default=PILOT.seeds,
                        help="seeds per cell of the pilot, and so of its candidates (default %(default)s)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes over pilots (default 2)")
    parser.add_argument("--quick", action="store_true", help="one pilot per shape, 2 draws, 5 bootstrap replicates")
    parser.add_argument("--out", default=None, metavar="CSV", help="write one row per pilot, design and claim")
    parser.add_argument("--from-rows", default=None, metavar="CSV[,CSV...]",
                        help="judge rows written by --out (one file or several, comma-separated), not a run")
    parser.add_argument("--fit", action="store_true", help="fit the recalibration maps on the rows and judge them")
    parser.add_argument("--form", default="beta", choices=("beta", "platt"), help="the maps --fit fits (default beta)")
    parser.add_argument("--cv", type=int, default=0, metavar="K",
                        help="cross-validate the forms over K blocks of pilots")
    parser.add_argument("--maps", default=None, metavar="MAPS", help="judge under maps 'claim:c:a:b,...'")
    parser.add_argument("--bar", type=int, default=0, metavar="SIMS",
                        help="how often a calibrated forecaster with these predictions passes the bar")
    args = parser.parse_args(argv)
    if args.from_rows:
        files = [pd.read_csv(f, keep_default_na=False, na_values=[""]) for f in args.from_rows.split(",")]
        return judge_rows(pd.concat(files, ignore_index=True), args)                    # "null" is a shape
    shapes = tuple(s for s in args.shapes.split(",") if s)
    quick = {"pilots": len(shapes), "draws": 2, "bootstrap": 5, "pilot_bootstrap": 5} if args.quick else {}
    given = {k: v for k, v in (("pilots", args.pilots), ("draws", args.draws), ("bootstrap", args.bootstrap),
                               ("pilot_bootstrap", args.pilot_bootstrap)) if v is not None}
    try:
        study = Study(**{**quick, **given}, outcomes=args.outcomes, outcome_bootstrap=args.outcome_bootstrap,
                      first_truth=args.first_truth, shapes=shapes,
                      pilot=dataclasses.replace(PILOT, seeds=args.pilot_seeds))
    except ValueError as exc:
        parser.error(str(exc))
    print(f"{study.describe()}; {args.jobs} jobs", flush=True)
    logging.basicConfig(level=logging.INFO, format="%(message)s")      # progress on stderr
    start = time.perf_counter()
    rows = run_study(study, jobs=max(1, args.jobs))
    seconds = time.perf_counter() - start
    if args.out:
        rows.to_csv(args.out, index=False)
    refused = refusals(rows)
    print(f"\npilots refused by the tool (or with no truth drawn): {len(refused)} of {study.pilots}")
    if len(refused):
        with pd.option_context("display.max_colwidth", 200, "display.width", 250):
            print(refused.to_string(index=False))
    judge_rows(rows, args)
    print(f"{seconds:.0f} s ({seconds * max(1, args.jobs) / study.pilots:.1f} s of a worker per pilot, "
          f"{args.jobs} jobs)")
    return 0


def judge_rows(rows: pd.DataFrame, args) -> int:
    """Print the tables of `rows` as the tool printed them, raw, and under fitted or given maps."""
    if "predicted_raw" in rows.columns:
        print(tables(rows, "As the tool printed it when the rows were made (recalibrated by the maps of that run)"))
    print(tables(repredicted(rows), "Raw: the share of the simulated studies"))
    if args.fit:
        fitted = fit(repredicted(rows), boot=400, form=args.form)
        print(f"\n## Recalibration maps ({args.form}) fitted on these rows (95% bootstrap over pilots)\n")
        print(markdown(fitted, digits=3))
        maps = maps_of(fitted, "these rows")
        print(tables(repredicted(rows, maps), f"Under the maps fitted on these rows (in-sample): {maps.describe()}"))
    if args.cv:
        cv = cross_validate(rows, folds=args.cv)
        print(f"\n## Each form of map on pilots it was not fitted on ({args.cv} blocks of truth seeds)\n")
        print(markdown(cv, digits=4))
        total = cv.groupby("form").agg(judged=("judged", "sum"), outside=("outside", "sum"), brier=("brier", "mean"))
        print("\n" + markdown(total.reset_index(), digits=4))
    judged = rows
    if args.maps:
        maps = given_maps(args.maps)
        judged = repredicted(rows, maps)
        print(tables(judged, f"Under {maps.describe()}"))
    if args.bar:
        whose = "under the given maps" if args.maps else "as the tool printed them"
        print(f"\n## The bar itself: a forecaster calibrated exactly, with these predictions ({whose}; "
              f"{args.bar} studies)\n")
        print(f"within-pilot correlation of these rows' standardized residuals: {residual_correlation(judged):.3f}")
        for rho in (0.0, 0.5, 0.7):
            print(f"latent within-pilot correlation {rho ** 2:.2f} (rho {rho}): passes the bar in "
                  f"{bar_pass_rate(judged, sims=args.bar, rho=rho):.3f} of studies")
    return 0


if __name__ == "__main__":
    sys.exit(main())
