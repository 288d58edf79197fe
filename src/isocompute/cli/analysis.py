"""Subcommands of the analysis rules (rules/analyze.smk, rules/figures.smk):
`collect` (a split's runs into study tables), `analyze` (tables, and figures
when run by hand) and `figures`; `replay-adaptive` (cli/replay.py) is registered
with them. Thin edges around `isocompute.analysis`:
`run_analysis` is pure, `write_analysis` writes atomically.

`analyze` is also a tool for anyone's runs: its options default to the
config schema's `analysis` section; the rule passes the study's sections as
`--params` instead, and an option given on the command line wins over both.
"""

from __future__ import annotations

import argparse
import logging
import re
import time
from pathlib import Path

from isocompute import atomic
from isocompute.cli.common import add_stage_parser, config_from_params, setup_logging
from isocompute.cli.replay import register_replay
from isocompute.config import check_config, schema_defaults
from isocompute.errors import ConfigError, InputError

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
timings.csv, figures/ (PNG + PDF), and last MANIFEST.json (each table's sha256 and
rows, which every reader of the folder checks: a table changed since is refused).

On stderr it says each stage as it ends and, in the per-cell fits and the
bootstrap, how far it is: a bar on a terminal, else a line every 30 s.

Malformed input (missing column, NaN, negative compute, duplicate
(B_p, n, step), unreadable file) stops with one line and exit status 2,
leaving no output behind.
"""


# The analyze options of the analysis settings: schema key (the option's dest) -> its flags
# (the first is the one an error names; the others are aliases). The one table of the names.
SETTING_OPTIONS = {"method": ("--method",), "metric": ("--metric",), "bin_width": ("--bin-width",),
                   "ema_alpha": ("--ema", "--ema-alpha"), "min_compute": ("--min-compute",),
                   "grid_points": ("--grid-points",), "window": ("--window",), "bootstrap": ("--bootstrap",),
                   "seed": ("--seed",), "ci": ("--ci",), "extrapolate_fraction": ("--extrapolate-fraction",),
                   "observed_range": ("--observed-range",), "record_z": ("--record-z",),
                   "se_window": ("--se-window",), "pool": ("--pool",), "pool_degree": ("--pool-degree",),
                   "pool_alpha": ("--pool-alpha",), "n_effect_alpha": ("--n-effect-alpha",),
                   "collapse_alpha": ("--collapse-alpha",), "collapse_window": ("--collapse-window",),
                   "max_extrapolation": ("--max-extrapolation",)}


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
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

    p = add_stage_parser(sub, "headline", cmd_headline,
                         "Write the report's headline (per split: what may be said of n*, the frontier at the top "
                         "of the range, what to train) and each split's summary and recommendations as HTML.",
                         params=False)
    p.add_argument("tables", nargs="+", metavar="SPLIT=TABLES", help="a split and its analysis tables folder")
    p.add_argument("--experiment", required=True, help="the study's name, for the title")
    p.add_argument("--out", required=True, help="the headline page (HTML)")
    p.add_argument("--brief", required=True, help="its short form without a page around it (the report's landing page)")
    p.add_argument("--tables-out", required=True, help="folder of {split}/{summary,recommendations}.html")

    register_analyze(sub)
    register_replay(sub)      # cli/replay.py


def register_analyze(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "analyze", help="Fits, frontiers, n*(C) law and figures from an evaluation table.",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("evals", metavar="EVALS", type=Path, help="evaluation table: .csv, .parquet or verl .jsonl")
    p.add_argument("--out", metavar="DIR", type=Path, required=True, help="output folder (replaced atomically)")
    p.add_argument("--params", default=None, metavar="JSON",
                   help="config sections (analysis, eval, seed) as JSON, as the analyze rule passes them; "
                        "options below override them")
    _add_settings(p, schema_defaults("analysis"))
    _add_table_options(p)
    p.set_defaults(func=lambda a: (setup_logging(), cmd_analyze(a))[1])
    return p


def _add_settings(p: argparse.ArgumentParser, d: dict) -> None:
    """The analysis settings' options (defaults `d`: the schema's), each overriding --params."""
    opt = _setting_adder(p)
    opt("method", metavar="{noise,paper}",
        help="noise: standard errors from each evaluation's problems x samples, one pooled R0, "
             "fits to all points weighted by 1/se^2, frontiers where runs have data; paper: the "
             f"paper's running-maximum record points, exactly (default: {d['method']})")
    opt("metric", help="metric the fits and frontiers use (default: avg@k, k = eval.k)")
    opt("bin_width", type=float, metavar="W",
        help=f"record-breaking points: bin width of the metric (default: {d['bin_width']})")
    opt("ema_alpha", type=float, metavar="ALPHA",
        help="smooth the metric by an EMA with this weight on the newest point before binning (default: off)")
    opt("min_compute", type=float, metavar="C",
        help="leave points with compute below C out of the sigmoid fits (default: none)")
    opt("grid_points", type=int, metavar="N",
        help=f"log-spaced compute grid of the frontiers (default: {d['grid_points']})")
    opt("window", type=int, metavar="N",
        help=f"running average of log2 n* over N grid points (default: {d['window']})")
    opt("bootstrap", type=int, metavar="N",
        help="bootstrap resamples for the intervals of the n* law per B_p (n_star_fit.csv); "
             f"0 turns them off (default: {d['bootstrap']})")
    opt("seed", type=int, help="bootstrap random seed (default: the config's seed, 0)")
    opt("ci", type=float, help=f"interval coverage (default: {d['ci']})")
    opt("extrapolate_fraction", type=float, metavar="F",
        help="extrapolation check: fit on compute <= F x the maximum, predict the maximum "
             f"(default: {d['extrapolate_fraction']})")
    opt("observed_range", action=argparse.BooleanOptionalAction,
        help="frontiers: use each fitted curve only over the compute range its run has data for, or "
             "(--no-observed-range) over the whole grid (default: the method's: noise yes, paper no)")
    opt("record_z", type=float, metavar="Z",
        help=f"noise method: a record point must beat the standing record by Z standard errors "
             f"(default: {d['record_z']})")
    opt("se_window", type=int, metavar="N",
        help=f"noise method: evaluations averaged for the success rate behind each standard error "
             f"(default: {d['se_window']})")
    opt("pool", metavar="{trend,none}",
        help=f"noise method: fit the runs of each B_p at once with a trend in log2 n (unless an "
             f"F-test rejects it) or each run alone (default: {d['pool']})")
    opt("pool_degree", type=int, metavar="D",
        help=f"noise method, pool trend: degree of the trend in log2 n (default: {d['pool_degree']})")
    opt("pool_alpha", type=float, metavar="P",
        help=f"noise method, pool trend: F-test level that rejects the trend (default: {d['pool_alpha']})")
    opt("n_effect_alpha", type=float, metavar="P",
        help=f"noise method, pool trend: F-test level at which the runs of a B_p stop sharing one curve "
             f"(n matters); below it n* is undetermined (default: {d['n_effect_alpha']})")
    opt("collapse_alpha", type=float, metavar="P",
        help=f"noise method: level of the test for a run's collapse (fitted up to it, held flat after it; "
             f"0: no test; default: {d['collapse_alpha']})")
    opt("collapse_window", type=_positive_int, metavar="K",
        help=f"noise method, collapse test: evaluations before a cut its later ones are compared with "
             f"(default: {d['collapse_window']})")
    opt("max_extrapolation", type=float, metavar="F",
        help=f"recommendations.csv: its last budget this many times above the studied range "
             f"(default: {d['max_extrapolation']:g})")


def _add_table_options(p: argparse.ArgumentParser) -> None:
    """What the evaluation table is and what to write: the training table, split, a single run's cell,
    verl JSONL's data source and estimates, figures or not."""
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


def _setting_adder(parser):
    """add_argument for a setting: its flags from SETTING_OPTIONS, dest the schema key, default None (not given)."""
    def add(key, **kw):
        parser.add_argument(*SETTING_OPTIONS[key], dest=key, default=None, **kw)
    return add


def analysis_settings(args, cfg: dict | None = None):
    """The `AnalysisSettings` in force: schema defaults < --params (`cfg`, parsed from
    args.params when not given) < options; a refused option is an InputError naming it
    (the schema's check, as for the config)."""
    from isocompute.analysis.fits.settings import AnalysisSettings

    if cfg is None:
        cfg = config_from_params(args.params) if args.params else check_config({})
    given = {key: getattr(args, key) for key in SETTING_OPTIONS if getattr(args, key) is not None}
    try:
        return AnalysisSettings.from_config(cfg, **given)
    except (ConfigError, ValueError) as exc:
        found = re.match(r"config key 'analysis\.(\w+)': |(\w+): ", str(exc))
        key = found and (found.group(1) or found.group(2))
        if key not in given:
            raise
        raise InputError(f"{SETTING_OPTIONS[key][0]}: {str(exc)[found.end():]}") from exc


def cmd_analyze(args: argparse.Namespace) -> int:
    import pandas as pd

    from isocompute.analysis.fits.sigmoid import OK
    from isocompute.analysis.inputs.check import check_timeout_shares
    from isocompute.analysis.inputs.read import read_evals, read_train
    from isocompute.analysis.pipeline import run_analysis, write_analysis

    if (args.B_p is None) != (args.n is None):
        raise InputError("--bp and --n go together")
    cfg = config_from_params(args.params) if args.params else check_config({})   # --params, parsed once
    settings = analysis_settings(args, cfg)
    atomic.check_replaceable(args.out)  # before the work, not after it
    start = time.perf_counter()
    evals = read_evals(args.evals, B_p=args.B_p, n=args.n, data_source=args.data_source,
                       verl_best_worst=args.verl_best_worst)
    # Evaluations the grader left too undecided are refused, not fitted (grading.max_timeout_share).
    check_timeout_shares(evals, cfg["grading"]["max_timeout_share"], what=str(args.evals))
    train = read_train(args.train_table) if args.train_table is not None else None
    read_s = time.perf_counter() - start
    results = run_analysis(evals, settings, train=train, split=args.split)
    results["timings"] = pd.concat([pd.DataFrame({"phase": ["read"], "seconds": [read_s]}), results["timings"]],
                                   ignore_index=True)
    written = write_analysis(results, args.out, figures=not args.no_figures)
    fits = results["fits"]
    log.info("analyze: %d runs (%d fitted), %d files in %s (%.1f s)", len(fits), int((fits["status"] == OK).sum()),
             len(written), args.out, time.perf_counter() - start)
    for line in claim_lines(results.get("summary")):
        print(line)
    return 0


def claim_lines(summary) -> list[str]:
    """What the analysis may say per B_p (summary.csv), as a person reads it."""
    if summary is None or summary.empty:
        return []
    lines = []
    for r in summary.itertuples(index=False):
        band = "" if r.reward_lo != r.reward_lo else f" [{r.reward_lo:.3f}, {r.reward_hi:.3f}]"
        lines.append(f"B_p {r.B_p}: at C = {r.compute:,.0f}, {r.n_star_claim}; frontier {r.reward:.3f}{band}; "
                     f"n*(C) {r.law_claim}")
    if "resampled" in summary.columns and (summary["resampled"] == "points").any():
        lines.append("(bands from resampling the evaluations of one seed per cell: they do not hold run-to-run "
                     "variation; grid.<split>.seeds >= 2 gives bands that do)")
    return lines


def cmd_collect(args) -> int:
    from isocompute.analysis.inputs.collect import collect_runs

    evals, rates = collect_runs(args.runs)
    atomic.write_parquet(args.out_evals, evals)
    atomic.write_parquet(args.out_train, rates)
    log.info("collected %d runs, %d evaluation points", evals[["B_p", "n"]].drop_duplicates().shape[0], len(evals))
    return 0


def cmd_figures(args) -> int:
    from isocompute.analysis.outputs.folder import load_analysis
    from isocompute.analysis.plots import plot_all

    evals = atomic.read_parquet(args.evals)
    results = load_analysis(args.tables, evals)
    with atomic.atomic_dir(args.out) as tmp:
        paths = plot_all(results, tmp)
    log.info("%d figure files -> %s", len(paths), args.out)
    return 0


def cmd_collect_variants(args) -> int:
    from isocompute.analysis.inputs.variants import collect_variant_runs

    curves = collect_variant_runs(args.runs)
    atomic.write_parquet(args.out, curves)
    log.info("collected %d variant runs of %d variants, %d rows", len(args.runs), curves["variant"].nunique(),
             len(curves))
    return 0


def cmd_variant_figures(args) -> int:
    """--params: the config's variants (which figure draws which) and eval.k (the metric)."""
    from isocompute.analysis.plots.variants import plot_variants

    cfg = config_from_params(args.params)
    curves = atomic.read_parquet(args.curves)
    with atomic.atomic_dir(args.out) as tmp:
        paths = plot_variants(curves, cfg["variants"], tmp, metric=f"avg@{cfg['eval']['k']}")
    log.info("%d variant figure files -> %s", len(paths), args.out)
    return 0


def cmd_figure_index(args) -> int:
    from isocompute.analysis.outputs.figure_index import markdown_html

    atomic.write_text(args.out, markdown_html(Path(args.doc).read_text()))
    log.info("figure index %s -> %s", args.doc, args.out)
    return 0


HEADLINE_TABLES = ("summary", "recommendations")


def cmd_headline(args) -> int:
    from isocompute.analysis.outputs import headline
    from isocompute.analysis.outputs.folder import read_tables, table_file

    splits, ci = {}, 0.95
    for item in args.tables:
        split, sep, folder = item.partition("=")
        if not sep or not split:
            raise InputError(f"{item}: expected SPLIT=TABLES")
        tables, params = read_tables(folder, HEADLINE_TABLES)
        for t in HEADLINE_TABLES:
            if t not in tables:
                raise InputError(f"{Path(folder) / table_file(t)}: no such table (isocompute analyze writes it)")
        splits[split] = tuple(tables[t] for t in HEADLINE_TABLES)
        if params is not None:
            try:
                ci = float(params.get("ci", ci))
            except (TypeError, ValueError):
                raise InputError(f"{Path(folder) / 'params.json'}: 'ci' is not a number, got "
                                 f"{params.get('ci')!r}") from None
    body = headline.headline_body(args.experiment, splits, ci=ci)
    brief = headline.headline_body(args.experiment, splits, ci=ci, brief=True)
    with atomic.atomic_dir(args.tables_out) as tmp:
        for split, tables in splits.items():
            (tmp / split).mkdir()
            for name, table in zip(HEADLINE_TABLES, tables):
                (tmp / split / f"{name}.html").write_text(headline.table_page(table, title=f"{split}: {name}.csv"))
    atomic.write_text(args.brief, brief)
    atomic.write_text(args.out, headline.page(body, title=f"Headline: {args.experiment}"))
    log.info("headline of %d splits -> %s", len(splits), args.out)
    return 0
