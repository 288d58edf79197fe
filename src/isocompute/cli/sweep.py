"""Subcommand of the adaptive sweep (rules/sweep.smk): `adaptive-decide` runs the
pruning rule (`analysis.adaptive.decide`) at one rung of a split on the
evaluations of its runs up to the rung, and writes which runs go on."""

from __future__ import annotations

import logging

from isocompute import atomic
from isocompute.cli.common import add_stage_parser, config_from_params
from isocompute.errors import InputError

log = logging.getLogger("isocompute")


def cmd_adaptive_decide(args) -> int:
    import numpy as np
    import pandas as pd

    from isocompute.analysis.adaptive.rule import DECISION_COLUMNS, decide
    from isocompute.analysis.fits.settings import AnalysisSettings
    from isocompute.sweep import DECISION_KEYS, SweepSettings, write_decisions

    cfg = config_from_params(args.params)
    # The analysis settings the rule fits with (the rule's own keys are the sweep section's).
    settings = AnalysisSettings.from_config(cfg)
    metric = settings.metric
    trained = read_tables(args.trained, "--trained")
    stopped = read_tables(args.stopped, "--stopped")
    evals = pd.concat([trained, stopped], ignore_index=True)
    if "split" in evals.columns and evals["split"].nunique() > 1:
        raise InputError(f"adaptive-decide: evaluation tables of several splits ({sorted(evals['split'].unique())})")
    # Every run seen so far counts for the frontier, those stopped at earlier rungs too.
    trained_keys = set(zip(trained["B_p"], trained["n"]))
    rule = decide(evals, rung_compute=args.rung_compute, c_max=args.c_max, params=SweepSettings.from_config(cfg), settings=settings,
                  trained=trained_keys)
    # One row per run: those trained to the rung, and those stopped earlier (which go on only
    # where the safety net resumes them).
    runs = (evals.groupby(["run", "B_p", "n", "seed"], as_index=False)
            .agg(split=("split", "first"), stop_step=("step", "max")))
    out = runs.merge(rule, on=["B_p", "n"], how="left", validate="many_to_one")
    out = out.assign(rung=args.rung, rung_compute=args.rung_compute)
    missing = out["continue"].isna()
    if missing.any():
        raise InputError(f"adaptive-decide: the rule returned no decision for run(s) {list(out.loc[missing, 'run'])}")
    out["continue"] = out["continue"].astype(bool)
    columns = DECISION_KEYS + [c for c in DECISION_COLUMNS if c not in DECISION_KEYS]
    with atomic.atomic_path(args.out) as tmp:
        write_decisions(tmp, out.sort_values(["B_p", "n", "seed"]).to_dict("records"), columns)
    atomic.write_parquet(args.out_evals, evals)
    at_rung = np.array([(b, n) in trained_keys for b, n in zip(out["B_p"], out["n"])], dtype=bool)
    going, resumed = out[out["continue"] & at_rung], out[out["continue"] & ~at_rung]
    log.info("adaptive-decide rung %d (C = %g of %g, %s): %d of %d runs go on (%s); resumed by the safety net: %s; "
             "stopped: %s", args.rung, args.rung_compute, args.c_max, metric, len(going), int(at_rung.sum()),
             ", ".join(going["run"]) or "none", ", ".join(resumed["run"]) or "none",
             "; ".join(f"{r.run}: {r.reason}" for r in out[~out["continue"] & at_rung].itertuples()) or "none")
    return 0


def read_tables(paths, flag: str):
    import pandas as pd

    from pathlib import Path

    frames = []
    for path in paths or []:
        if not Path(path).is_file():
            raise InputError(f"{flag}: evaluation table not found: {path}")
        frames.append(atomic.read_parquet(path))
    if not frames:
        if flag == "--trained":
            raise InputError("--trained: no evaluation tables of runs trained to this rung")
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True)


def register(sub) -> None:
    p = add_stage_parser(sub, "adaptive-decide", cmd_adaptive_decide,
                         "Adaptive sweep: decide at one rung which runs train on (decisions CSV).")
    p.add_argument("--trained", nargs="+", required=True, metavar="EVALS",
                   help="evaluation tables of the runs trained to this rung (runs/.../rungs/R/evals.parquet)")
    p.add_argument("--stopped", nargs="*", default=[], metavar="EVALS",
                   help="evaluation tables of the runs stopped at earlier rungs (they count for the frontier)")
    p.add_argument("--rung", type=int, required=True)
    p.add_argument("--rung-compute", type=float, required=True, help="the rung's compute, in rollouts")
    p.add_argument("--c-max", type=float, required=True, help="the split's C_max")
    p.add_argument("--out", required=True, help="decisions CSV: one row per run, column `continue` (a run "
                                                "stopped earlier goes on only where the safety net resumes it)")
    p.add_argument("--out-evals", required=True, help="the evaluation table the rule saw")
