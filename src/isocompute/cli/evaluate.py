"""Subcommand of the scoring stage (rules/evaluate.smk): `score` re-grades a
run's validation dumps into its evaluation table (`isocompute.scoring`), or
those up to a rung of an adaptive sweep (`--max-step`), or an extra evaluation
set's (`--eval-set`); `cross-eval` gathers every run's tables on every
evaluation set and draws Fig. 14 and the out-of-domain curves."""

from __future__ import annotations

from isocompute import atomic
from isocompute.cli.common import add_stage_parser, config_from_params
from isocompute.cli.train import add_cell_arguments


def cmd_score(args) -> int:
    from isocompute.scoring import ScoredRun, ScoreSettings, score_run

    cfg = config_from_params(args.params)
    table = score_run(args.run_dir, ScoredRun(args.split, args.bp, args.n, args.replicate),
                      ScoreSettings.from_config(cfg), max_step=args.max_step, eval_set=args.eval_set)
    atomic.write_parquet(args.out, table)
    return 0


def cmd_cross_eval(args) -> int:
    import pandas as pd

    from isocompute.analysis.inputs.cross_eval import cross_eval_curves, cross_eval_table
    from isocompute.analysis.plots.cross_eval import plot_cross_eval, plot_out_of_domain

    cfg = config_from_params(args.params)
    extra = cfg["eval"]["extra_sets"]
    table = cross_eval_table(pd.concat([atomic.read_parquet(p) for p in args.own], ignore_index=True),
                             pd.concat([atomic.read_parquet(p) for p in args.sets], ignore_index=True), extra)
    atomic.write_parquet(args.out_table, table)
    metric = f"avg@{cfg['eval']['k']}"
    sets = list(dict.fromkeys([*sorted(table.loc[~table["eval_set"].isin([s["name"] for s in extra]), "eval_set"]),
                               *(s["name"] for s in extra)]))
    with atomic.atomic_dir(args.figures) as out:
        plot_cross_eval(cross_eval_curves(table, metric), metric, f"{out}/fig14_cross_eval", sets)
        if table["out_of_domain"].any():
            plot_out_of_domain(cross_eval_curves(table, metric, extremes=False), metric,
                               f"{out}/appendix_out_of_domain")
    return 0


def register(sub) -> None:
    p = add_stage_parser(sub, "score", cmd_score,
                         "Re-grade a run's validation dumps into its evaluation table (evals.parquet).")
    add_cell_arguments(p)
    p.add_argument("--run-dir", required=True)
    p.add_argument("--max-step", type=int, default=None, metavar="S",
                   help="score the evaluations up to step S only (a rung of an adaptive sweep)")
    p.add_argument("--eval-set", default=None, metavar="NAME",
                   help="score the dumps of extra evaluation set NAME (config eval.extra_sets)")
    p.add_argument("--out", required=True)
    p = add_stage_parser(sub, "cross-eval", cmd_cross_eval,
                         "Every run on every evaluation set: one table, Fig. 14 and the out-of-domain curves.")
    p.add_argument("--own", nargs="+", required=True, metavar="EVALS", help="the runs' own tables (score)")
    p.add_argument("--sets", nargs="+", required=True, metavar="EVALS", help="their sets' tables (score_eval_set)")
    p.add_argument("--out-table", required=True)
    p.add_argument("--figures", required=True, help="folder of the figures")
