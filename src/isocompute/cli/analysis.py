"""Subcommands of the analysis rules (rules/analyze.smk, rules/figures.smk):
`collect` (a split's runs into study tables), `analyze` (tables, and figures
when run by hand) and `figures`; and `replay-adaptive`, the adaptive sweep's
rule replayed on a finished evaluation table. Thin edges around `isocompute.analysis`:
`run_analysis` is pure, `write_analysis` writes atomically.

`analyze` is also a tool for anyone's runs: its options default to the
config schema's `analysis` section; the rule passes the study's sections as
`--params` instead, and an option given on the command line wins over both.
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from isocompute import atomic
from isocompute.cli.common import add_stage_parser, config_from_params, setup_logging
from isocompute.config import check_config, schema_defaults
from isocompute.errors import InputError

log = logging.getLogger("isocompute")

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
column), with a bootstrap bootstrap_fits.csv (every replicate's fit of every
cell) and n_star_fit_draws.csv (every replicate's law per B_p),
recommendations.csv (`isocompute recommend` at a few budgets), params.json,
timings.csv, and figures/ (PNG + PDF).

Malformed input (missing column, NaN, negative compute, duplicate
(B_p, n, step), unreadable file) stops with one line and exit status 2,
leaving no output behind.
"""


# analyze option -> key of the config's `analysis` section
ANALYSIS_OPTIONS = {"method": "method", "metric": "metric", "bin_width": "bin_width", "ema": "ema_alpha", "min_compute": "min_compute",
                    "grid_points": "grid_points", "window": "window", "bootstrap": "bootstrap", "ci": "ci",
                    "extrapolate_fraction": "extrapolate_fraction", "observed_range": "observed_range",
                    "record_z": "record_z", "se_window": "se_window", "pool": "pool"}


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


def register(sub) -> None:
    p = add_stage_parser(sub, "collect", cmd_collect, "Gather a split's scored runs into study tables.",
                         params=False)
    p.add_argument("runs", nargs="+", help="run directories (results/{exp}/runs/{split}/bp{B_p}_n{n}), or the "
                                           "rung directory (<run>/rungs/{rung}) where an adaptive sweep stopped a run")
    p.add_argument("--out-evals", required=True)
    p.add_argument("--out-train", required=True)

    p = add_stage_parser(sub, "figures", cmd_figures, "Draw every figure from analysis tables.", params=False)
    p.add_argument("--evals", required=True, help="the collected evaluation table")
    p.add_argument("--tables", required=True, help="folder written by `isocompute analyze`")
    p.add_argument("--out", required=True, help="figure folder (replaced atomically)")

    p = add_stage_parser(sub, "collect-variants", cmd_collect_variants,
                         "Gather the recipe variants' runs into one curve table (metrics and evaluations "
                         "against steps).", params=False)
    p.add_argument("runs", nargs="+", help="variant run directories (results/{exp}/variants/{variant}/runs/...)")
    p.add_argument("--out", required=True)

    p = add_stage_parser(sub, "variant-figures", cmd_variant_figures,
                         "Draw the variants' figures (Fig. 3, Fig. 4, the decoupled baseline) from their curves.")
    p.add_argument("--curves", required=True, help="the table written by `isocompute collect-variants`")
    p.add_argument("--out", required=True, help="figure folder (replaced atomically)")

    p = add_stage_parser(sub, "figure-index", cmd_figure_index,
                         "Render the figure index (docs/figures.md) as an HTML page for the report.", params=False)
    p.add_argument("doc", help="docs/figures.md")
    p.add_argument("--out", required=True, help="HTML file")

    register_analyze(sub)
    register_replay(sub)


def register_analyze(subparsers) -> argparse.ArgumentParser:
    d = schema_defaults("analysis")
    p = subparsers.add_parser(
        "analyze", help="fits, frontiers, n*(C) law and figures from an evaluation table",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("evals", metavar="EVALS", type=Path, help="evaluation table: .csv, .parquet or verl .jsonl")
    p.add_argument("--out", metavar="DIR", type=Path, required=True, help="output folder (replaced atomically)")
    p.add_argument("--params", default=None, metavar="JSON",
                   help="config sections (analysis, eval, seed) as JSON, as the analyze rule passes them; "
                        "options below override them")
    p.add_argument("--method", choices=("noise", "paper"), default=None,
                   help="noise: standard errors from each evaluation's problems x samples, one pooled R0, "
                        "fits to all points weighted by 1/se^2, frontiers where runs have data; paper: the "
                        f"paper's running-maximum record points, exactly (default: {d['method']})")
    p.add_argument("--metric", default=None, help="metric the fits and frontiers use (default: avg@k, k = eval.k)")
    p.add_argument("--bin-width", type=_positive_float, default=None, metavar="W",
                   help=f"record-breaking points: bin width of the metric (default: {d['bin_width']})")
    p.add_argument("--ema", type=_fraction, default=None, metavar="ALPHA",
                   help="smooth the metric by an EMA with this weight on the newest point before binning "
                        "(default: off)")
    p.add_argument("--min-compute", type=float, default=None, metavar="C",
                   help="leave points with compute below C out of the sigmoid fits (default: none)")
    p.add_argument("--grid-points", type=_positive_int, default=None, metavar="N",
                   help=f"log-spaced compute grid of the frontiers (default: {d['grid_points']})")
    p.add_argument("--window", type=_positive_int, default=None, metavar="N",
                   help=f"running average of log2 n* over N grid points (default: {d['window']})")
    p.add_argument("--bootstrap", type=_non_negative_int, default=None, metavar="N",
                   help="bootstrap resamples for the intervals of the n* law per B_p (n_star_fit.csv); "
                        f"0 turns them off (default: {d['bootstrap']})")
    p.add_argument("--seed", type=int, default=None, help="bootstrap random seed (default: the config's seed, 0)")
    p.add_argument("--ci", type=_fraction, default=None, help=f"interval coverage (default: {d['ci']})")
    p.add_argument("--extrapolate-fraction", type=_fraction, default=None, metavar="F",
                   help="extrapolation check: fit on compute <= F x the maximum, predict the maximum "
                        f"(default: {d['extrapolate_fraction']})")
    p.add_argument("--observed-range", action=argparse.BooleanOptionalAction, default=None,
                   help="frontiers: use each fitted curve only over the compute range its run has data for, or "
                        "(--no-observed-range) over the whole grid (default: the method's: noise yes, paper no)")
    p.add_argument("--record-z", type=_positive_float, default=None, metavar="Z",
                   help=f"noise method: a record point must beat the standing record by Z standard errors "
                        f"(default: {d['record_z']})")
    p.add_argument("--se-window", type=_positive_int, default=None, metavar="N",
                   help=f"noise method: evaluations averaged for the success rate behind each standard error "
                        f"(default: {d['se_window']})")
    p.add_argument("--pool", choices=("trend", "none"), default=None,
                   help=f"noise method: fit the runs of each B_p at once with a trend in log2 n (unless an "
                        f"F-test rejects it) or each run alone (default: {d['pool']})")
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
    p.set_defaults(func=lambda a: (setup_logging(), cmd_analyze(a))[1])
    return p


def analysis_settings(args) -> tuple[dict, int]:
    """The `analysis` section in force (schema defaults < --params < options) and the bootstrap seed."""
    cfg = config_from_params(args.params) if args.params else check_config({})
    settings = dict(cfg["analysis"])
    for option, key in ANALYSIS_OPTIONS.items():
        if getattr(args, option) is not None:
            settings[key] = getattr(args, option)
    settings["metric"] = settings["metric"] or f"avg@{cfg['eval']['k']}"
    return settings, (args.seed if args.seed is not None else cfg["seed"])


def cmd_analyze(args: argparse.Namespace) -> int:
    import pandas as pd

    from isocompute.analysis.io import read_evals, read_train
    from isocompute.analysis.pipeline import run_analysis, write_analysis

    if (args.B_p is None) != (args.n is None):
        raise InputError("--bp and --n go together")
    a, seed = analysis_settings(args)
    start = time.perf_counter()
    evals = read_evals(args.evals, B_p=args.B_p, n=args.n, data_source=args.data_source,
                       verl_best_worst=args.verl_best_worst)
    train = read_train(args.train_table) if args.train_table is not None else None
    read_s = time.perf_counter() - start
    extrapolate = None if a["observed_range"] is None else not a["observed_range"]
    results = run_analysis(evals, metric=a["metric"], method=a["method"], bin_width=a["bin_width"],
                           ema_alpha=a["ema_alpha"], min_compute=a["min_compute"], grid_points=a["grid_points"],
                           n_boot=a["bootstrap"], seed=seed, extrapolate_fraction=a["extrapolate_fraction"],
                           window=a["window"], ci=a["ci"], train=train, split=args.split, extrapolate=extrapolate,
                           record_z=a["record_z"], se_window=a["se_window"], pool=a["pool"],
                           pool_degree=a["pool_degree"], pool_alpha=a["pool_alpha"],
                           max_extrapolation=a["max_extrapolation"])
    results["timings"] = pd.concat([pd.DataFrame({"phase": ["read"], "seconds": [read_s]}), results["timings"]],
                                   ignore_index=True)
    written = write_analysis(results, args.out, figures=not args.no_figures)
    fits = results["fits"]
    log.info("analyze: %d runs (%d fitted), %d files in %s (%.1f s)", len(fits), int((fits["status"] == "ok").sum()),
             len(written), args.out, time.perf_counter() - start)
    return 0


def cmd_collect(args) -> int:
    from isocompute.analysis.collect import collect_runs

    evals, rates = collect_runs(args.runs)
    atomic.write_parquet(args.out_evals, evals)
    atomic.write_parquet(args.out_train, rates)
    log.info("collected %d runs, %d evaluation points", evals[["B_p", "n"]].drop_duplicates().shape[0], len(evals))
    return 0


def cmd_figures(args) -> int:
    import pandas as pd

    from isocompute.analysis.collect import load_analysis
    from isocompute.analysis.plots import plot_all

    evals = pd.read_parquet(args.evals)
    results = load_analysis(args.tables, evals)
    with atomic.atomic_dir(args.out) as tmp:
        paths = plot_all(results, tmp)
    log.info("%d figure files -> %s", len(paths), args.out)
    return 0


def cmd_collect_variants(args) -> int:
    from isocompute.analysis.variants import collect_variant_runs

    curves = collect_variant_runs(args.runs)
    atomic.write_parquet(args.out, curves)
    log.info("collected %d variant runs of %d variants, %d rows", len(args.runs), curves["variant"].nunique(),
             len(curves))
    return 0


def cmd_variant_figures(args) -> int:
    """--params: the config's variants (which figure draws which) and eval.k (the metric)."""
    import pandas as pd

    from isocompute.analysis.plots.variants import plot_variants

    cfg = config_from_params(args.params)
    curves = pd.read_parquet(args.curves)
    with atomic.atomic_dir(args.out) as tmp:
        paths = plot_variants(curves, cfg["variants"], tmp, metric=f"avg@{cfg['eval']['k']}")
    log.info("%d variant figure files -> %s", len(paths), args.out)
    return 0


REPLAY_DESCRIPTION = """\
Replay the adaptive sweep's rule (config section sweep, issue 13) on a finished
full-grid evaluation table: at each rung it sees every surviving run's
evaluations up to the rung's compute only, and a stopped run keeps its
evaluations up to where it stopped. Both studies are then analysed the same
way (noise-method fits, frontiers where runs have data) and compared:
rollouts the adaptive sweep spends as a share of the full grid's, the share of
probe budgets (log-spaced over the studied range) where both name the same n*,
and the frontier reward at C_max (adaptive - full). EVALS as for `analyze`.
"""


def register_replay(subparsers) -> argparse.ArgumentParser:
    d = schema_defaults("sweep")
    p = subparsers.add_parser("replay-adaptive", help="replay the adaptive sweep's rule on a finished evaluation table",
                              description=REPLAY_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("evals", metavar="EVALS", type=Path, help="evaluation table: .csv, .parquet or verl .jsonl")
    p.add_argument("--c-max", type=float, default=None, metavar="C",
                   help="compute budget of every run (default: the table's largest compute)")
    p.add_argument("--eta", type=float, default=None, help=f"compute ratio between rungs (default: {d['eta']:.4g})")
    p.add_argument("--rungs", type=int, default=None, help=f"number of rungs, the last at C_max (default: {d['rungs']})")
    p.add_argument("--z", type=float, default=None, help=f"band width in standard errors (default: {d['z']})")
    p.add_argument("--neighbours", type=int, default=None,
                   help=f"grid steps in log2 n around n* that always continue (default: {d['neighbours']})")
    p.add_argument("--frontier", choices=("fixed_B_p", "joint"), default=None,
                   help=f"the frontier a run must reach: its B_p's, or all cells' (default: {d['frontier']})")
    p.add_argument("--probes", type=int, default=20, help="probe budgets for the n* agreement (default: 20)")
    p.add_argument("--metric", default="avg@4", help="metric the fits use (default: avg@4)")
    p.add_argument("--split", default=None, help="the split to replay when EVALS has several")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_replay_adaptive)
    return p


def _replay_params(args) -> dict:
    """The rule keys given on the command line, checked (one-line InputError naming the option)."""
    given = {k: getattr(args, k) for k in ("eta", "rungs", "z", "neighbours", "frontier") if getattr(args, k) is not None}
    checks = {"eta": (lambda v: v > 1, "a number > 1"), "rungs": (lambda v: v >= 1, "an integer >= 1"),
              "z": (lambda v: v > 0, "a number > 0"), "neighbours": (lambda v: v >= 0, "an integer >= 0")}
    for key, (ok, what) in checks.items():
        if key in given and not ok(given[key]):
            raise InputError(f"--{key}: expected {what}, got {given[key]:g}")
    if args.c_max is not None and not args.c_max > 0:
        raise InputError(f"--c-max: expected a positive compute, got {args.c_max:g}")
    if args.probes < 1:
        raise InputError(f"--probes: expected an integer >= 1, got {args.probes}")
    return given


def cmd_replay_adaptive(args) -> int:
    import json

    from isocompute.analysis.adaptive_replay import replay
    from isocompute.analysis.io import read_evals

    params = _replay_params(args)
    evals = read_evals(args.evals)
    res = replay(evals, c_max=args.c_max, params=params, probes=args.probes, metric=args.metric, split=args.split)
    runs = res["runs"]
    if args.json:
        print(json.dumps({"evals": str(args.evals), "share": res["share"], "agreement": res["agreement"],
                          "reward_diff": res["reward_diff"], "c_max": res["c_max"], "budgets": res["budgets"],
                          "params": res["params"], "runs": runs.to_dict(orient="records")}, indent=2))
        return 0
    p = res["params"]
    print(f"adaptive replay of {args.evals}: {len(runs)} runs, C_max = {res['c_max']:.6g}, {p['rungs']} rungs "
          f"from C_max/{p['eta']:.4g}^{p['rungs'] - 1} = {res['budgets'][0]:.4g} (z {p['z']}, neighbours "
          f"{p['neighbours']}, min_evals {p['min_evals']}, frontier {p['frontier']})")
    print(f"rollouts spent: {res['share']:.1%} of the full grid's")
    print(f"same n* as the full grid: {res['agreement']:.1%} of {args.probes} probe budgets per frontier")
    print(f"frontier reward at C_max, adaptive - full: {res['reward_diff']:+.4f}")
    table = runs.assign(share=runs["spent"] / runs["full_compute"])[["B_p", "n", "share", "stopped_at", "reason"]]
    print(table.to_string(index=False, formatters={"share": "{:.1%}".format, "stopped_at": "{:.4g}".format}))
    return 0


def cmd_figure_index(args) -> int:
    from isocompute.analysis.figure_index import markdown_html

    atomic.write_text(args.out, markdown_html(Path(args.doc).read_text()))
    log.info("figure index %s -> %s", args.doc, args.out)
    return 0
