"""`isocompute replay-adaptive EVALS`: the adaptive sweep's rule (config section sweep)
replayed on a finished full-grid evaluation table (`analysis.adaptive.replay.replay`),
and its bill, its n* judged by regret, by the full grid's n* band and exactly, and the frontier
reward printed (or as JSON). With --configfile, the sweep a study's config would run: its whole
sweep and analysis sections, options on top."""

from __future__ import annotations

import argparse
import math

import numpy as np
import re
from pathlib import Path

from isocompute.cli.common import json_text
from isocompute.config import load_schema, schema_defaults
from isocompute.errors import ConfigError, InputError
from isocompute.sweep import SWEEP_OPTIONS


REPLAY_DESCRIPTION = """\
Replay the adaptive sweep's rule (config section sweep) on a finished
full-grid evaluation table: at each rung it sees every surviving run's
evaluations up to the rung's compute only, and a stopped run keeps its
evaluations up to where it stopped. Both studies are then analysed the same
way (noise-method fits, frontiers where runs have data) and compared:
the bill the adaptive sweep runs up as a share of the full grid's (training
rollouts plus validation generations, each evaluation costing its problems x
samples, or --eval-rollouts; both parts are printed), the share of
probe budgets (log-spaced over the studied range) where the sweep's n* is within
the regret the sweep accepts (sweep.epsilon, of the B_p's rise by default) of the best n by
the full grid's own fits, inside the full
grid's n* band (--bootstrap), and the same n* as the full grid's,
and the frontier reward at C_max (adaptive - full). EVALS as for `analyze`.

--configfile CONFIG replays the sweep that config would run: every key of its
sweep section (epsilon, reach, inflation, insurance, revive, bands, ...) and
of its analysis section (the settings the rule fits with, as the sweep's
adaptive-decide jobs take them; the method is always noise), checked as the
pipeline checks it. The options given here override the config's values;
without --configfile, the schema's defaults.
"""


def register_replay(subparsers) -> argparse.ArgumentParser:
    d, d_schema = schema_defaults("sweep"), load_schema()["properties"]["sweep"]["properties"]
    p = subparsers.add_parser("replay-adaptive", help="Replay the adaptive sweep's rule on a finished evaluation table.",
                              description=REPLAY_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("evals", metavar="EVALS", type=Path, help="evaluation table: .csv, .parquet or verl .jsonl")
    p.add_argument("--configfile", type=Path, default=None, metavar="CONFIG",
                   help="a study config: replay the sweep it would run (its sweep and analysis sections; "
                        "the options below override them)")
    p.add_argument("--c-max", type=float, default=None, metavar="C",
                   help="compute budget of every run (default: the table's largest compute)")
    for key, (flag, type_, text) in SWEEP_OPTIONS.items():
        choices = d_schema[key].get("enum")
        p.add_argument(flag, dest=key, type=type_, default=None, choices=choices,
                       help=f"{text} (default: {d[key]:.4g})" if type_ is float else f"{text} (default: {d[key]})")
    p.add_argument("--probes", type=int, default=20, help="probe budgets for the n* agreement (default: 20)")
    p.add_argument("--metric", default=None,
                   help="metric the fits use (default: the config's analysis.metric, else avg@4)")
    p.add_argument("--split", default=None, help="the split to replay when EVALS has several")
    p.add_argument("--eval-rollouts", type=float, default=None, metavar="G",
                   help="generations one evaluation costs (default: each row's problems x samples; a table "
                        "without those columns counts no validation, and says so)")
    p.add_argument("--bootstrap", type=int, default=0, metavar="R",
                   help="resamples of the full grid's n* band (frontier.csv's n_star_lo/hi), to report how "
                        "often the sweep's n* falls inside it (default: 0, off; the analysis draws 200)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_replay_adaptive)
    return p


def _replay_config(args) -> dict:
    """The checked config whose sweep and analysis sections the replay takes: --configfile's, as
    the pipeline loads it (a bad key stops with one line naming the file and the key), else the
    schema's defaults."""
    from isocompute.config import check_config, load_config

    if args.configfile is None:
        return check_config({})
    try:
        return load_config(args.configfile)
    except ConfigError as exc:
        text = str(exc)
        raise ConfigError(text if str(args.configfile) in text else f"{args.configfile}: {text}") from None


def _replay_params(args, cfg: dict):
    """The sweep and analysis settings in force: the schema's defaults < the config's (`cfg`) < the
    options; a refused option is an InputError naming it (the schema's check, as for the config)."""
    from isocompute.analysis.fits.settings import AnalysisSettings
    from isocompute.sweep import SweepSettings

    given = {k: getattr(args, k) for k in SWEEP_OPTIONS if getattr(args, k) is not None}
    try:
        settings = SweepSettings.from_config(cfg, **given)
    except ConfigError as exc:
        found = re.match(r"config key 'sweep\.(\w+)': ", str(exc))
        if not found or found.group(1) not in given:
            raise
        raise InputError(f"{SWEEP_OPTIONS[found.group(1)][0]}: {str(exc)[found.end():]}") from exc
    analysis = AnalysisSettings.from_config(cfg, **({} if args.metric is None else {"metric": args.metric}))
    finite = math.isfinite
    if args.c_max is not None and not (args.c_max > 0 and finite(args.c_max)):
        raise InputError(f"--c-max: expected a finite positive compute, got {args.c_max:g}")
    if args.probes < 1:
        raise InputError(f"--probes: expected an integer >= 1, got {args.probes}")
    if args.bootstrap < 0:
        raise InputError(f"--bootstrap: expected an integer >= 0, got {args.bootstrap}")
    if args.eval_rollouts is not None and not (args.eval_rollouts >= 0 and finite(args.eval_rollouts)):
        raise InputError(f"--eval-rollouts: expected a finite number >= 0, got {args.eval_rollouts:g}")
    return settings, analysis


def cmd_replay_adaptive(args) -> int:
    from dataclasses import replace as with_values

    from isocompute.analysis.adaptive.replay import replay, with_grid_band
    from isocompute.analysis.fits.settings import SCHEMA_KEYS
    from isocompute.analysis.inputs.read import read_evals

    params, settings = _replay_params(args, _replay_config(args))
    evals = read_evals(args.evals)
    if "compute" in evals.columns and not (evals["compute"] > 0).any():
        raise InputError(f"{args.evals}: no evaluation at a positive compute (only the base model's): nothing to replay")
    try:
        res = replay(evals, c_max=args.c_max, params=params, probes=args.probes,
                     settings=settings, split=args.split, eval_rollouts=args.eval_rollouts)
        if args.bootstrap and params.frontier == "fixed_B_p":
            res = with_grid_band(res, evals, args.bootstrap, settings, split=args.split)
    except ValueError as exc:      # the rule's own checks of what it was given (the rung budgets)
        raise InputError(f"replay-adaptive: {exc}") from exc
    runs = res["runs"]
    fitted = with_values(settings, method="noise")             # what the replay fits with (`replay`)
    analysis = {k: getattr(fitted, k) for k in SCHEMA_KEYS} | {"seed": fitted.seed}
    if args.json:
        print(json_text({"evals": str(args.evals), "share": res["share"], "share_training": res["share_training"],
                         "share_validation": res["share_validation"], "bill": res["bill"],
                         "validation_counted": res["validation_counted"], "agreement": res["agreement"],
                         "right_by_regret": res["right_by_regret"], "in_band": res["in_band"],
                         "reward_diff": res["reward_diff"], "c_max": res["c_max"], "budgets": res["budgets"],
                         "params": res["params"], "analysis": analysis,
                         "configfile": None if args.configfile is None else str(args.configfile),
                         "runs": runs.to_dict(orient="records")}))
        return 0
    p = res["params"]
    print(f"adaptive replay of {args.evals}: {len(runs)} runs, C_max = {res['c_max']:.6g}, {p['rungs']} rungs "
          f"from C_max/{p['eta']:.4g}^{p['rungs'] - 1} = {res['budgets'][0]:.4g} (bands {p['bands']}, z {p['z']}, neighbours "
          f"{p['neighbours']}, min_evals {p['min_evals']}, frontier {p['frontier']}, epsilon {p['epsilon']:g}"
          f"{' of the rise' if p['epsilon_of'] == 'rise' else ''}, run_effects {p['run_effects']}, b_slope {p['b_slope']}, "
          f"revive {p['revive']}; fitted on {analysis['metric']})")
    if args.configfile is not None:
        print(f"settings: {args.configfile}'s sweep and analysis sections, the options given on top")
    b = res["bill"]
    if res["validation_counted"]:
        print(f"whole bill: {res['share']:.1%} of the full grid's ({b['adaptive']['total']:,.0f} of "
              f"{b['grid']['total']:,.0f}: training rollouts {res['share_training']:.1%} "
              f"({b['adaptive']['training']:,.0f} of {b['grid']['training']:,.0f}), validation generations "
              f"{res['share_validation']:.1%} ({b['adaptive']['validation']:,.0f} of {b['grid']['validation']:,.0f}))")
    else:
        print(f"training rollouts: {res['share_training']:.1%} of the full grid's; validation NOT counted: "
              f"{args.evals} has no problems and samples columns (give --eval-rollouts)")
    regrets = ", ".join(f"{r:.4g} (B_p {b:g})" if np.isfinite(b) else f"{r:.4g}" for b, r in res["regrets"].items())
    print(f"n* within the regret the sweep accepts ({regrets}) of the best n by the full grid's fits: "
          f"{res['right_by_regret']:.1%} of {args.probes} probe budgets per frontier")
    if np.isfinite(res["in_band"]):
        print(f"n* inside the full grid's n* band ({args.bootstrap} resamples): {res['in_band']:.1%}")
    print(f"same n* as the full grid: {res['agreement']:.1%} of {args.probes} probe budgets per frontier")
    print(f"frontier reward at C_max, adaptive - full: {res['reward_diff']:+.4f}")
    table = runs.assign(share=runs["spent"] / runs["full_compute"])[["B_p", "n", "share", "stopped_at", "reason"]]
    print(table.to_string(index=False, formatters={"share": "{:.1%}".format, "stopped_at": "{:.4g}".format}))
    return 0
