"""Power analysis before a study: which design would establish that n* rises, and at what cost?

The embedded study (`make run`) cannot say: its n* bands at C_max span 2-16
and no rise is established. This benchmark simulates candidate designs on
known curves shaped like its runs, analyses each replication with the tool's
own default chain (`isocompute.design.chain.analyse`: fit_study, the bootstrap of
frontier_tables, recommendation_table, the claims of `claims`) and counts:

  power        P(some B_p's law claim is "rises: established") on the rising truth
  false claim  P(some B_p's law claim is "rises" or "falls: established") on the null
  (a design with three B_p makes three claims: a study says "n* rises" when any does)

each with its count and Clopper-Pearson 95% interval (`isocompute.design.chain.rate`),
and prices each design with the cost model of `isocompute.cluster.plan` (per-unit
costs measured by benchmarks/power_cost.py, jobs packed on `--cores`). It then names the cheapest design with power >= 80% and false
claims <= 5% (point estimates; the intervals say how sure that is).

The truths (fixed before any design was run; nothing was tuned on the answer),
per split, from the embedded study's fits (results/embedded/analysis/{split}/
tables/fits.csv):
  R0 the pooled R0; B the mean of the B_p's fitted B; n = 2's A (mean) and C_mid
  (geometric mean); C_mid grows as n^0.577 (Easy's fits from n = 2 to 8, mean
  over B_p; Hard's runs share one curve, so Easy's is used). Noise: binomial
  from problems x 4 samples, which is what the fits' residuals show (weighted
  SSE / dof 0.6-1.5, mean about 1; se 0.025 on Easy, 0.008 on Hard at 100 problems).
  rise  A rises with n up to n = 8 and stays there (n > 8: n = 8's A, later
        midpoint, so never optimal): the two steps of A are solved so that n = 4
        overtakes n = 2 at C_max / 8 and n = 8 overtakes n = 4 at C_max / 2 of the
        embedded design (Easy 2^10 and 2^12, Hard 2^9 and 2^11). n* = 2 -> 8 over
        the embedded range, and over every design's range reaching below 2^10 (2^9).
        Easy A = 0.637, 0.693, 0.736 (fits: 0.62-0.71); Hard 0.043, 0.049, 0.054 (0.039-0.049).
  null  every n on the rise truth's n = 4 curve: n does not matter.
  fitted (--truth-from results/<experiment>/analysis) a finished study's own fits per (B_p, n),
        extrapolated along its trend in log2 n and by its sigmoids in compute
        (`isocompute.design.truth.FittedTruth`); its null puts every n of a B_p on that B_p's n = 4 curve.
        The script also prints, per B_p, the compute from which n = 8 stays ahead of 4 on the
        study's fits, with the interval over its bootstrap replicates (bootstrap_fits.csv), or
        how often the replicates say it never does.
Beside the power, ">4": P(some B_p establishes the rise and its n* band at its last comparable
budget lies above 4), the power to establish a rise beyond n = 4.
Assumed, not measured: seeds differ only by their evaluation noise (one seed per
cell cannot show run-to-run variation); seeds are pooled by the analysis (its
bootstrap then draws seeds). Averaging k seeds would equal k times the problems here.

The logic is `isocompute.design.power`; this script prints its table.

    PYTHONPATH=src .venv/bin/python benchmarks/power_nstar.py [--seeds 20] [--bootstrap 50] [--designs E4 E9] [--quick] [--truth-from results/replicate_pilot/analysis] [--out power.csv]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from dataclasses import fields
from pathlib import Path

import pandas as pd

from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.cluster.plan import UnitCosts
from isocompute.design.costs import MEASURED
from isocompute.design.power import DESIGNS, QUICK, choose, evaluate, overtakes, table_text, truths_of


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20, help="replications per design and truth (default: 20)")
    parser.add_argument("--designs", nargs="+", default=None, help="design names (prefixes: E3 H1); default: all")
    parser.add_argument("--bootstrap", type=int, default=50,
                        help="bootstrap replicates (default: 50, for time: one analysis takes 1-45 s at 50; at the "
                             "tool's 200, E6's power moved 0.75 -> 0.60 and E11's 0.85 -> 0.90 on the same seeds: "
                             "confirm a chosen design with --bootstrap 200)")
    parser.add_argument("--quick", action="store_true", help=f"designs {', '.join(QUICK)}, 3 seeds, 40 replicates")
    parser.add_argument("--cores", type=int, default=2, help="training jobs run in parallel (default: 2)")
    parser.add_argument("--gpu-speedup", type=float, default=10.0, help="a guess at one GPU's throughput (default: 10x)")
    for f in fields(UnitCosts):
        default = getattr(MEASURED, f.name)
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=float, default=default,
                            help=f"seconds (default: {default:g}, measured on results/replicate_pilot; power_cost.py)")
    parser.add_argument("--truth-from", default=None, metavar="ANALYSIS_DIR",
                        help="a finished study's analysis folder (results/<experiment>/analysis): each split's "
                             "designs are also judged on its fits (isocompute.design.truth.FittedTruth), and n = 8's "
                             "overtaking of 4 is estimated from them")
    parser.add_argument("--truth", choices=("both", "fitted", "hand-made"), default="both",
                        help="the truths to judge the designs on (default both; fitted needs --truth-from)")
    parser.add_argument("--out", default=None, help="write the table as CSV")
    args = parser.parse_args(argv)
    if args.truth == "fitted" and args.truth_from is None:
        parser.error("--truth fitted needs --truth-from")
    if args.truth_from is not None and not Path(args.truth_from).is_dir():
        parser.error(f"--truth-from {args.truth_from}: not a folder (expected results/<experiment>/analysis)")
    seeds, n_boot, names = (3, 40, QUICK) if args.quick else (args.seeds, args.bootstrap, args.designs)
    designs = [d for d in DESIGNS if names is None or any(d.name.split()[0] == x.split()[0] for x in names)]
    if not designs or seeds < 1:
        parser.error("no design selected" if not designs else "--seeds must be >= 1")
    units = UnitCosts(**{f.name: getattr(args, f.name) for f in fields(UnitCosts)})
    settings = AnalysisSettings(bootstrap=n_boot)
    start = time.perf_counter()
    rows = []
    sources = {split: truths_of(split, args.truth_from, args.truth) for split in {d.split for d in designs}}
    for d in designs:
        for source in sources[d.split]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rows.append(evaluate(d, seeds, settings, units, args.cores, source))
            print(f"  {d.name} ({source.name}): {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    table = pd.DataFrame(rows)
    print(f"{seeds} seeds per design and truth, {n_boot} bootstrap replicates, {args.cores} cores; {units}")
    if args.truth_from is not None:
        print(f"fitted truth: the fits in {args.truth_from}/<split>/tables (isocompute.design.truth.FittedTruth)")
        print(overtakes(args.truth_from, sorted({d.split for d in designs})))
    print(table_text(table, args.gpu_speedup))
    print(choose(table, args.gpu_speedup))
    print(choose(table, args.gpu_speedup, "beyond4", "power beyond n = 4"))
    print(f"{time.perf_counter() - start:.0f} s")
    if args.out:
        table.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
