"""`isocompute analyze`: evaluation table in, analysis tables and figures out.

The command is a thin edge around `pipeline.run_analysis` (pure) and
`pipeline.write_analysis` (atomic writes), so that the Snakemake rules and
the command line run the same code.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from isocompute.errors import InputError

DESCRIPTION = """\
Analyse an evaluation table of a sweep over (B_p, n): record-breaking points,
ScaleRL sigmoid fits per run, compute-optimal frontiers and n*(C), the sigmoid
law of log2 n* vs log10 C with bootstrap intervals, metric-specific optima,
sensitivity, interference histograms and an extrapolation check.

EVALS is one row per evaluation point with columns B_p, n, step, compute
(= B_p*n*step; step 0 is the base model, R0), avg@4, best@4, worst@4 and
optionally run, tokens (cumulative generated tokens), split. It may be CSV,
parquet, or verl's file-logger JSONL ({"step": N, "data": {...}} per line,
validation key val-core/<data_source>/<acc|reward>/mean@<k> -> avg@<k>);
a JSONL log is one run: give --bp and --n, or a sidecar <EVALS>.meta.json
holding {"B_p": .., "n": ..}.

Writes into OUT (atomically: all or nothing): records.csv, fits.csv,
frontier.csv (Q1: B_p, compute, n_star, reward), n_star_fit.csv (per B_p: L,
U, k, c0 with _lo/_hi intervals), extrapolation.csv, frontier_fixed_batch.csv
and n_star_fit_fixed_batch.csv (Q2, x = steps M), frontier_joint.csv and
n_star_fit_joint.csv (Q3), optima.csv, sensitivity.csv, interference.csv
(with --train-table), fits_tokens.csv and frontier_tokens.csv (with a tokens
column), params.json, timings.csv, and figures/ (PNG + PDF).

Malformed input (missing column, NaN, negative compute, duplicate
(B_p, n, step), unreadable file) stops with one line and exit status 2,
leaving no output behind.
"""


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text}")
    return value


def register(subparsers) -> argparse.ArgumentParser:
    """Add the `analyze` subcommand to the `isocompute` command's subparsers."""
    p = subparsers.add_parser(
        "analyze", help="fits, frontiers, n*(C) law and figures from an evaluation table",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("evals", metavar="EVALS", type=Path, help="evaluation table: .csv, .parquet or verl .jsonl")
    p.add_argument("--out", metavar="DIR", type=Path, required=True, help="output folder (replaced atomically)")
    p.add_argument("--metric", default="avg@4", help="metric the fits and frontiers use (default: avg@4)")
    p.add_argument("--bin-width", type=_positive_float, default=0.01, metavar="W",
                   help="record-breaking points: bin width of the metric (default: 0.01)")
    p.add_argument("--ema", type=_fraction, default=None, metavar="ALPHA",
                   help="smooth the metric by an EMA with this weight on the newest point before binning "
                        "(default: off)")
    p.add_argument("--min-compute", type=float, default=None, metavar="C",
                   help="leave points with compute below C out of the sigmoid fits (default: none)")
    p.add_argument("--grid-points", type=_positive_int, default=100, metavar="N",
                   help="log-spaced compute grid of the frontiers (default: 100)")
    p.add_argument("--window", type=_positive_int, default=5, metavar="N",
                   help="running average of log2 n* over N grid points (default: 5)")
    p.add_argument("--bootstrap", type=_non_negative_int, default=200, metavar="N",
                   help="bootstrap resamples for the intervals of the n* law per B_p (n_star_fit.csv); "
                        "0 turns them off (default: 200)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap random seed (default: 0)")
    p.add_argument("--ci", type=_fraction, default=0.95, help="interval coverage (default: 0.95)")
    p.add_argument("--extrapolate-fraction", type=_fraction, default=0.25, metavar="F",
                   help="extrapolation check: fit on compute <= F x the maximum, predict the maximum "
                        "(default: 0.25)")
    p.add_argument("--observed-range", action="store_true",
                   help="frontiers: use each fitted curve only up to the compute its run reached (default: "
                        "the whole grid, the envelope of the fitted curves)")
    p.add_argument("--train-table", type=Path, default=None, metavar="PATH",
                   help="per-step training table (B_p, n, step, compute, problem_id, pass_rate; CSV or "
                        "parquet) for the interference histograms")
    p.add_argument("--split", default=None, help="the split to analyse when EVALS has a 'split' column "
                                                 "with several values")
    p.add_argument("--bp", dest="B_p", type=_positive_int, default=None, metavar="B_P",
                   help="problems per step of a single-run table (verl JSONL, or a CSV without B_p)")
    p.add_argument("--n", dest="n", type=_positive_int, default=None, metavar="N",
                   help="rollouts per problem of a single-run table")
    p.add_argument("--data-source", default=None,
                   help="verl JSONL: the validation data source to read when several are logged")
    p.add_argument("--verl-best-worst", action="store_true",
                   help="verl JSONL: also read verl's best@k/mean and worst@k/mean (bootstrap estimates, "
                        "biased; off by default)")
    p.add_argument("--no-figures", action="store_true", help="write the tables only")
    p.set_defaults(func=analyze)
    return p


def analyze(args: argparse.Namespace) -> int:
    from isocompute.analysis.io import read_evals, read_train
    from isocompute.analysis.pipeline import run_analysis, write_analysis

    if (args.B_p is None) != (args.n is None):
        raise InputError("--bp and --n go together")
    start = time.perf_counter()
    evals = read_evals(args.evals, B_p=args.B_p, n=args.n, data_source=args.data_source,
                       verl_best_worst=args.verl_best_worst)
    train = read_train(args.train_table) if args.train_table is not None else None
    read_s = time.perf_counter() - start
    results = run_analysis(evals, metric=args.metric, bin_width=args.bin_width, ema_alpha=args.ema,
                           min_compute=args.min_compute, grid_points=args.grid_points, n_boot=args.bootstrap,
                           seed=args.seed, extrapolate_fraction=args.extrapolate_fraction, window=args.window,
                           ci=args.ci, train=train, split=args.split, extrapolate=not args.observed_range)
    import pandas as pd

    results["timings"] = pd.concat([pd.DataFrame({"phase": ["read"], "seconds": [read_s]}), results["timings"]],
                                   ignore_index=True)
    written = write_analysis(results, args.out, figures=not args.no_figures)
    fits = results["fits"]
    print(f"isocompute analyze: {len(fits)} runs ({int((fits['status'] == 'ok').sum())} fitted), "
          f"{len(written)} files in {args.out} ({time.perf_counter() - start:.1f} s)")
    return 0
