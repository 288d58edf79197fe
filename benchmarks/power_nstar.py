"""Power analysis before a study: which design would establish that n* rises, and at what cost?

Prints the table of `isocompute.design.power` (its docstring says what is simulated: the truths,
the chain of analysis, the power, false-claim and ">4" rates with their Clopper-Pearson
intervals, the costs from `isocompute.cluster.plan`'s model) and names the cheapest design with
power >= 80% and false claims <= 5%.

    PYTHONPATH=src .venv/bin/python benchmarks/power_nstar.py [--seeds 20] [--bootstrap 50] [--designs E4 E9] [--quick] [--truth-from results/replicate_pilot/analysis] [--out power.csv]

Power is judged at one truth at a time (the hand-made ones, or a finished study's point fits), which
is what the replication's notebook quotes. To design a study from a pilot, averaging over the
pilot's bootstrap replicates and its run-to-run variation, use `isocompute design PILOT`
(isocompute.design.assurance).
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
