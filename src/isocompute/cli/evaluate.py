"""Subcommand of the scoring stage (rules/evaluate.smk): `score` re-grades a
run's validation dumps into its evaluation table (`isocompute.scoring`), or
those up to a rung of an adaptive sweep (`--max-step`), or an extra evaluation
set's (`--eval-set`)."""

from __future__ import annotations

from isocompute import atomic
from isocompute.cli.common import add_stage_parser, config_from_params
from isocompute.cli.train import add_cell_arguments


def cmd_score(args) -> int:
    from isocompute.scoring import score_run

    cfg = config_from_params(args.params)
    table = score_run(args.run_dir, cfg["eval"]["k"], B_p=args.bp, n=args.n, split=args.split,
                      replicate=args.replicate, max_step=args.max_step, eval_set=args.eval_set)
    atomic.write_parquet(args.out, table)
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
