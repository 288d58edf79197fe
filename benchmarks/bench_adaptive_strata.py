"""Benchmark: the adaptive sweep on a prior of truths, judged by regret, per stratum.

The truths are `isocompute.analysis.adaptive.strata`'s: early, mid and late crossovers (by
lambda = log2(C_max / C_lead)), n* still climbing at C_max, saturating, peaked and null
curves, and a B_p that collapses mid-run; on the paper's Easy columns B_p 16 and 32,
n 8..512, C_max 2^22, validated on the compute-matched schedule from C_max / 2^10 with
300 x 4 generations per evaluation. Each truth is studied with two noise seeds; its noise
sd (0.013 or 0.03) and evaluations per doubling (2 or 4) cycle with the truth's index, so
every stratum holds each of the four settings equally.

Each study is replayed by `adaptive.replay.replay` with the sweep's schema defaults (or
`--bands`), and judged at 20 probe budgets per B_p over [C_max / 2^10, C_max]:
- wrong by regret: the true worth of the sweep's n* is more than the regret (sweep.epsilon,
  0.05 of the truth's rise) below the best n's; the full grid's own rate beside it (its n*
  from all the data), and the two differenced on the same probes with a bootstrap interval.
  A run's worth at a budget is the true reward of its best checkpoint so far (`Truth.value`):
  the study's frontier is a running maximum (docs/methods.md, section 6), so the n* it names is a claim about
  best checkpoints. It differs from the reward at the budget only after a collapse (the
  unstable stratum), where the rate judged by the reward at the budget is printed beside it
  (wrong_now, grid_wrong_now);
- wrong by the full grid's band (with --bootstrap R > 0): the sweep's n* outside the full
  grid's n* band (frontier.csv's n_star_lo / hi, R resamples);
- exact agreement with the full grid's n*;
- the bill (training rollouts + validation generations) as a share of the grid's, and the
  oracle floor: the least any rule told the true curves could train so that at every probe
  some run trained that far is within epsilon of the best (`oracle_share`);
- revivals (the safety net resuming a stopped run);
- where the sweep and the grid part (probes at or above the first rung): sweep_only, the probes
  where only the sweep is wrong, of them before_stops, at compute below the B_p's first stop
  (no decision of the sweep's yet: only the stopped runs' shorter data, and so their fits,
  differ from the grid's), and full_pick, where the sweep's answer was a run it trained to
  C_max; grid_only, where only the grid is wrong.
Wrong-answer rates carry Wilson 95% intervals over the probes (probes of one study are
correlated, so the intervals are narrower than an interval over studies would be; the
per-study share of wrong probes is printed as well).

The scoring is `isocompute.analysis.adaptive.scoring` (the oracle: `adaptive.oracle`, the
calibration: `adaptive.calibration`); this script runs it over the strata and prints it.

Seeds: the rule's settings were chosen on tuning truths 1000-1019 (noise seed 0), which no
report uses; the holdouts are 2000-2049 (spent) and 2100-2149 (docs/adaptive-sweep.md says
which truths chose what); 1020-1159 were used on late crossovers once (no choice made on them);
truths 0..T-1, the default, are the report seeds used before them.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_adaptive_strata.py [--truths 50] [--first-truth 0]
        [--strata early,late] [--bootstrap 0] [--jobs 2] [--out studies.csv]

--quick: 2 truths per stratum, one noise seed (what `make test` runs).

--bar CSV reads a holdout's rows (written by --out) instead of running, and reads the relative bar
(the sweep's wrong rate where it acts at most 1 point above the grid's, in every stratum) with its
error rate (`intervals.gap_bar`): per stratum the gap and its p against "at most 1 point", and how
often a sweep exactly as good as the grid, or 0.5 points worse, in every stratum would fail it.
"""

from __future__ import annotations

import argparse
import logging
from concurrent.futures import ProcessPoolExecutor
import sys
import time

import pandas as pd
from scipy.stats import norm
import yaml

from isocompute.analysis.adaptive.calibration import coverage_table
from isocompute.analysis.adaptive.claims import claims_summary
from isocompute.analysis.adaptive.intervals import gap_bar
from isocompute.analysis.adaptive.scoring import judge, mean_bill_interval, summary, verdict
from isocompute.analysis.adaptive.strata import B_PS, NS, STRATA
from isocompute.analysis.fits.progress import progress
from isocompute.sweep import SweepSettings


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--truths", type=int, default=None, help="truths per stratum (default 50; 2 with --quick)")
    parser.add_argument("--first-truth", type=int, default=0, help="first truth seed (report: 0; tuning: 1000)")
    parser.add_argument("--noise-seeds", type=int, default=None, help="noise seeds per truth (default 2; 1 with --quick)")
    parser.add_argument("--strata", default=",".join(STRATA), help="comma-separated strata (default: all)")
    parser.add_argument("--bands", choices=("shared", "pooled", "runs"), default=None, help="the rule (default: the schema's)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a sweep setting for the replays (e.g. reach=3); repeatable")
    parser.add_argument("--bootstrap", type=int, default=0, help="resamples of the full grid's n* band (0: off)")
    parser.add_argument("--calibration", action="store_true",
                        help="also the shared model's 95%% band coverage of the true reward at C_max, by doublings")
    parser.add_argument("--claims", type=int, default=0, metavar="R",
                        help="also summary.csv's claims and the n*(C) law of the sweep, the grid and the truth, "
                             "their bands from R bootstrap resamples (0: off; ~2-9 s per study at 20)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--out", default=None, help="write one row per study as CSV")
    parser.add_argument("--quick", action="store_true", help="2 truths per stratum, one noise seed")
    parser.add_argument("--bar", default=None, metavar="CSV", help="read the relative bar's error rate off rows")
    args = parser.parse_args(argv)
    if args.bar:
        return print_bar(pd.read_csv(args.bar, keep_default_na=False, na_values=[""]))
    truths = args.truths or (2 if args.quick else 50)
    noise = args.noise_seeds or (1 if args.quick else 2)
    strata = [s for s in args.strata.split(",") if s]
    unknown = [s for s in strata if s not in STRATA]
    if unknown:
        parser.error(f"unknown stratum {unknown[0]!r}: expected some of {', '.join(STRATA)}")
    params = {k: yaml.safe_load(v) for k, v in (kv.split("=", 1) for kv in args.set)}
    if args.bands:
        params["bands"] = args.bands
    params = SweepSettings.of(params).rule()
    tasks = [(s, t, k, params, args.bootstrap, args.calibration, args.claims) for s in strata
             for t in range(args.first_truth, args.first_truth + truths) for k in range(noise)]
    print(f"B_p {B_PS}, n {NS}, C_max 2^22; {truths} truths x {noise} noise seeds per stratum "
          f"(truth seeds {args.first_truth}-{args.first_truth + truths - 1}); rule {params}", flush=True)
    start = time.perf_counter()
    rows = []
    logging.basicConfig(level=logging.INFO, format="%(message)s")      # progress on stderr
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for row in progress(pool.map(judge, tasks, chunksize=1), total=len(tasks), desc="studies"):
            rows.append(row)
    table = pd.DataFrame(rows)
    if args.calibration:
        print(coverage_table(table).to_string(float_format=lambda v: f"{v:.3f}"))
    if args.claims:
        said, law = pd.concat(table["claims"].tolist()), pd.concat(table["law"].tolist())
        print("claims of summary.csv that differ (share of B_p x claim; Wilson 95%):")
        print(claims_summary(said, by=("stratum",)).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print(claims_summary(said, by=("claim",)).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print("the n*(C) law and n* at the top: median |difference| (studies where both have it)")
        diffs = law.assign(**{c: law[c].abs() for c in ("sweep_minus_grid", "sweep_minus_truth", "grid_minus_truth")})
        print(diffs.groupby(["value"])[["sweep_minus_grid", "sweep_minus_truth", "grid_minus_truth"]].median()
              .to_string(float_format=lambda v: f"{v:.3f}"))
        if args.out:
            said.to_csv(args.out.removesuffix(".csv") + ".claims.csv", index=False)
            law.to_csv(args.out.removesuffix(".csv") + ".law.csv", index=False)
    table = table.drop(columns=["calibration", "claims", "law"])
    if args.out:
        table.to_csv(args.out, index=False)
    summ = summary(table)
    with pd.option_context("display.width", 250, "display.max_columns", None):
        print(summ.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("\n".join(verdict(summ, float(norm.sf(params["z"])), mean_bill_interval(table))))
    print(f"{time.perf_counter() - start:.0f} s ({table['seconds'].mean():.1f} s per study, {args.jobs} jobs)")
    return 0


def print_bar(studies: pd.DataFrame) -> int:
    """The relative bar of a holdout's rows, with its error rate (`intervals.gap_bar`)."""
    table, fails = gap_bar(studies)
    print(f"{studies['truth'].nunique()} truths x {studies['noise_seed'].nunique()} noise seeds; gap: sweep - grid, "
          "wrong where it acts (paired); p_over: one-sided p against a true gap of at most 1 point")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print(f"strata over 1 point: {int((table['gap'] > 0.01 + 1e-12).sum())} of {len(table)}; smallest p_over x strata "
          f"(Bonferroni): {min(1.0, table['p_over'].min() * len(table)):.3g}")
    for g, rate in fails.items():
        print(f"a sweep {100 * g:.1f} points worse than the grid in every stratum fails the bar in {rate:.3f} of holdouts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
