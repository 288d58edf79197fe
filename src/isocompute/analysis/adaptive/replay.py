"""Offline replay of the adaptive sweep on a finished full-grid study.

At each rung the rule (`adaptive.decide`) sees every surviving run's
evaluations up to the rung's compute only; a stopped run keeps its
evaluations up to where it stopped. The adaptive study (what the sweep would
have recorded) and the full grid are then analysed the same way
(`fitter.fit_study` and the frontier, each curve used where its run has
data), and compared: the bill (training rollouts and validation generations:
each evaluation row costs its problems x samples), n* at probe budgets,
frontier reward at C_max. `isocompute replay-adaptive EVALS` is the command line.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from isocompute.analysis.adaptive.rule import decide
from isocompute.analysis.fits.collapse import held
from isocompute.analysis.fits.fitter import Fitter, fit_study
from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.sigmoid import USABLE, sigmoid_reward
from isocompute.analysis.frontier.bootstrap import bootstrap_fits, n_star_band, replicate_frontiers
from isocompute.analysis.frontier.envelope import frontier
from isocompute.analysis.inputs.check import check_evals
from isocompute.sweep import SweepSettings

RUN_COLUMNS = ["B_p", "n", "full_compute", "spent", "stopped_at", "reason", "evaluations_full", "evaluations_spent",
               "validation_full", "validation_spent", "revivals"]
PROBE_COLUMNS = ["B_p", "compute", "n_star_full", "n_star_adaptive", "reward_full", "reward_adaptive"]


def _visible(evals: pd.DataFrame, limit: dict) -> pd.DataFrame:
    """The rows of each run up to its compute limit ((B_p, n) -> compute)."""
    cap = np.array([limit[(b, n)] for b, n in zip(evals["B_p"], evals["n"])])
    return evals[evals["compute"].to_numpy() <= cap * (1 + 1e-9)]


def validation_cost(evals: pd.DataFrame, eval_rollouts: float | None = None) -> np.ndarray:
    """The generations each evaluation row cost: `eval_rollouts` when given (one number for every
    evaluation), else the row's problems x samples, else 0 (a table that does not say; the caller
    reports validation as not counted)."""
    if eval_rollouts is not None:
        if not eval_rollouts >= 0:
            raise ValueError(f"eval_rollouts must be >= 0, got {eval_rollouts!r}")
        return np.full(len(evals), float(eval_rollouts))
    if {"problems", "samples"} <= set(evals.columns):
        return (evals["problems"].to_numpy(dtype=float) * evals["samples"].to_numpy(dtype=float))
    return np.zeros(len(evals))


def replay_sweep(evals: pd.DataFrame, *, c_max: float, params: SweepSettings | dict | None = None,
                 settings: AnalysisSettings | None = None,
                 eval_rollouts: float | None = None, log: list | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run the rule rung by rung on a checked full-grid table.

    Returns (the adaptive study's evaluations, one row per run: B_p, n,
    full_compute (the run's last compute in `evals`), spent (the rollouts it
    trains in the sweep: whole steps up to the rung where it stopped),
    stopped_at (that rung's compute; c_max for runs that went all the way),
    reason (the rule's), evaluations_full / evaluations_spent (its evaluation
    rows in the grid / in the sweep, step 0 included) and validation_full /
    validation_spent (the generations they cost: `validation_cost`), revivals (how often the
    safety net resumed it)). `log`, when given, gets one entry per rung decided: {"rung": its
    compute, "next": the next rung's, "decision": the rule's frame, "going": the (B_p, n) that train
    on to the next rung}.
    """
    p = SweepSettings.of(params)
    budgets = p.budgets(c_max)
    runs = evals.groupby(["B_p", "n"], sort=True)["compute"].max()
    limit = {key: float(budgets[0]) for key in runs.index}
    active = set(runs.index)
    reason = dict.fromkeys(runs.index, "trained to C_max")
    revivals = dict.fromkeys(runs.index, 0)
    for budget, nxt in zip(budgets[:-1], budgets[1:]):
        if not active:
            break
        decision = decide(_visible(evals, limit), rung_compute=budget, c_max=c_max, params=p, settings=settings,
                          trained=active)
        for B_p, n, go, why in zip(decision["B_p"], decision["n"], decision["continue"], decision["reason"]):
            key = (B_p, n)
            if key not in active and not (go and p.revive):
                continue
            if go:                                   # goes on, or (the safety net) resumes
                revivals[key] += key not in active
                active.add(key)
                limit[key] = float(nxt)
                reason[key] = "trained to C_max"
            else:
                active.discard(key)
                reason[key] = why
        if log is not None:
            log.append({"rung": float(budget), "next": float(nxt), "decision": decision, "going": set(active)})
    visible = _visible(evals, limit)
    return visible, _run_table(evals, visible, runs, limit, reason, revivals, eval_rollouts)


def _run_table(evals, visible, runs, limit, reason, revivals, eval_rollouts) -> pd.DataFrame:
    """`replay_sweep`'s one row per run, from where each run stopped (`limit`), why, and its revivals."""
    cost = pd.Series(validation_cost(evals, eval_rollouts), index=evals.index)
    keys = ["B_p", "n"]
    counts_full, counts_spent = evals.groupby(keys).size(), visible.groupby(keys).size()
    val_full, val_spent = cost.groupby([evals[k] for k in keys]).sum(), cost[visible.index].groupby(
        [visible[k] for k in keys]).sum()
    rows = []
    for (B_p, n), full in runs.items():
        batch = B_p * n
        stop = min(limit[(B_p, n)], float(full))
        spent = min(np.floor(stop / batch + 1e-9) * batch, float(full))
        rows.append({"B_p": B_p, "n": n, "full_compute": float(full), "spent": float(spent),
                     "stopped_at": limit[(B_p, n)], "reason": reason[(B_p, n)],
                     "evaluations_full": int(counts_full.get((B_p, n), 0)),
                     "evaluations_spent": int(counts_spent.get((B_p, n), 0)),
                     "validation_full": float(val_full.get((B_p, n), 0.0)),
                     "validation_spent": float(val_spent.get((B_p, n), 0.0)),
                     "revivals": revivals[(B_p, n)]})
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def bill(runs: pd.DataFrame) -> dict:
    """The whole bill of a replay's runs (`replay_sweep`): {"grid"|"adaptive": {"training",
    "validation", "total"}} in rollouts and validation generations, and the adaptive sweep's
    shares of the grid's: "share" (the total), "share_training", "share_validation" (NaN when the
    grid has no validation cost on record)."""
    out = {}
    for name, train, val in (("grid", "full_compute", "validation_full"), ("adaptive", "spent", "validation_spent")):
        t, v = float(runs[train].sum()), float(runs[val].sum())
        out[name] = {"training": t, "validation": v, "total": t + v}
    ratio = lambda a, b: a / b if b > 0 else np.nan  # noqa: E731
    out["share"] = ratio(out["adaptive"]["total"], out["grid"]["total"])
    out["share_training"] = ratio(out["adaptive"]["training"], out["grid"]["training"])
    out["share_validation"] = ratio(out["adaptive"]["validation"], out["grid"]["validation"])
    return out


def _frontiers(fits: pd.DataFrame, probes, joint: bool) -> pd.DataFrame:
    groups = [(np.nan, fits)] if joint else fits.groupby("B_p", sort=True)
    parts = []
    for B_p, group in groups:
        f = frontier(group, probes, extrapolate=False)
        f.insert(0, "B_p", B_p)
        parts.append(f)
    return pd.concat(parts, ignore_index=True)


def grid_n_star_bands(evals: pd.DataFrame, budgets, settings: AnalysisSettings, resamples: int) -> pd.DataFrame:
    """The full grid's n* band at `budgets` per B_p, as the analysis draws it (frontier.csv's
    n_star_lo / n_star_hi): the noise method's fits on `resamples` bootstrap resamples, each
    replicate's frontier over the runs' observed range (tied n spanning the band), percentiles at
    the settings' ci. Columns B_p, compute, n_star_lo, n_star_hi."""
    s = replace(settings, method="noise", bootstrap=int(resamples))
    seen, _, _ = fit_study(evals, s)             # standard errors and collapse marks, as the analysis has them
    parts = []
    for B_p, cell in seen.groupby("B_p", sort=True):
        boot = bootstrap_fits(cell, Fitter(s))
        n_star, n_max, _ = replicate_frontiers(boot, np.asarray(budgets, dtype=float), extrapolate=False, ties=True)
        lo, hi = n_star_band(n_star, n_max, 50 * (1 - s.ci), 50 * (1 + s.ci))
        parts.append(pd.DataFrame({"B_p": B_p, "compute": budgets, "n_star_lo": lo, "n_star_hi": hi}))
    return pd.concat(parts, ignore_index=True)


def _probe_table(fits_full: pd.DataFrame, fits_adaptive: pd.DataFrame, grid, joint: bool) -> pd.DataFrame:
    """Both studies' n* and frontier reward at the probe budgets `grid`, and the sweep's regret by the
    full grid's fits (`fitted_regret`)."""
    full, ad = _frontiers(fits_full, grid, joint), _frontiers(fits_adaptive, grid, joint)
    table = pd.DataFrame({"B_p": full["B_p"], "compute": full["compute"], "n_star_full": full["n_star"],
                          "n_star_adaptive": ad["n_star"], "reward_full": full["reward"],
                          "reward_adaptive": ad["reward"]})
    table["regret"] = fitted_regret(fits_full, table, "n_star_adaptive")
    return table


def fitted_regret(fits: pd.DataFrame, probes: pd.DataFrame, column: str) -> np.ndarray:
    """At each probe (rows B_p, compute), how far the fitted reward of the n in `column` falls below
    the best fitted reward of its B_p there (each curve only where its run has data): the full
    grid's fits standing in for the truth on a real study. NaN where the probe has no answer."""
    out = np.full(len(probes), np.nan)
    ok = fits[fits["status"].isin(USABLE)]
    if "hold_from" not in ok.columns:
        ok = ok.assign(hold_from=np.nan)
    for k, (B_p, c, n) in enumerate(zip(probes["B_p"], probes["compute"], probes[column])):
        g = ok[(ok["B_p"] == B_p) & (ok["compute_max"] >= c * (1 - 1e-9))]
        if g.empty or not np.isfinite(n) or not (g["n"] == n).any():
            continue
        hold = g["hold_from"].to_numpy(float)
        r = sigmoid_reward(held(c, hold), g["R0"].to_numpy(float), g["A"].to_numpy(float), g["B"].to_numpy(float),
                           g["C_mid"].to_numpy(float))
        out[k] = float(np.max(r) - r[np.flatnonzero(g["n"].to_numpy() == n)[0]])
    return out


def fitted_regrets(fits: pd.DataFrame, probes: pd.DataFrame, c_max: float, params: SweepSettings) -> np.ndarray:
    """The regret the sweep accepts at each probe (rows B_p): `SweepSettings.regret` of the rise by the
    full grid's fits, per B_p (all of them for a joint frontier, B_p NaN): the best usable run's fitted
    reward at c_max (a collapsed run's held) less the mean R0."""
    ok = fits[fits["status"].isin(USABLE)]
    if "hold_from" not in ok.columns:
        ok = ok.assign(hold_from=np.nan)
    out = {}
    for B_p in pd.unique(probes["B_p"]):
        g = ok if not np.isfinite(B_p) else ok[ok["B_p"] == B_p]
        if g.empty:
            out[B_p] = np.nan
            continue
        r = sigmoid_reward(held(c_max, g["hold_from"].to_numpy(float)), g["R0"].to_numpy(float),
                           g["A"].to_numpy(float), g["B"].to_numpy(float), g["C_mid"].to_numpy(float))
        out[B_p] = params.regret(float(np.max(r) - g["R0"].mean()))
    return np.array([out[b] for b in probes["B_p"]], dtype=float)


def probe_budgets(fits: pd.DataFrame, c_max: float, probes: int) -> np.ndarray:
    """`probes` log-spaced budgets over the studied range: from the first positive compute a usable run
    is evaluated at, to c_max."""
    ok = fits[fits["status"].isin(USABLE)]
    lo = float(ok["compute_min"].min()) if len(ok) else float(c_max)
    return np.geomspace(min(lo, c_max), c_max, probes)


def replay(evals: pd.DataFrame, *, c_max: float | None = None, params: SweepSettings | dict | None = None, probes=20,
           settings: AnalysisSettings | None = None, split: str | None = None,
           eval_rollouts: float | None = None) -> dict:
    """Replay the adaptive rule on a finished full-grid evaluation table, and score it.

    `c_max` defaults to the table's largest compute; `params` the sweep
    section's rule keys (schema defaults for the rest); `settings` the analysis
    settings the runs are fitted with (by the noise method; default: the
    schema's); `probes` a number of
    log-spaced budgets over the studied range or the budgets themselves;
    `eval_rollouts` the generations of one evaluation (default: each row's
    problems x samples; `validation_cost`). `with_grid_band` adds the full grid's n* band.
    Returns a dict: share (the adaptive sweep's whole bill, training rollouts
    plus validation generations, over the full grid's), share_training,
    share_validation and bill (`bill`), validation_counted (whether the
    table said what an evaluation costs), agreement (share of (frontier, probe) pairs where both studies
    name the same n*), reward_diff (adaptive - full frontier reward at
    c_max, averaged over the frontiers: one per B_p, or one joint),
    right_by_regret (share of probes where the sweep's n* is within the regret the sweep accepts
    (`fitted_regrets`) of the best n by the full grid's own fits: `fitted_regret`), in_band (NaN: `with_grid_band` fills it),
    budgets (the rungs), params, runs (per run, see `replay_sweep`),
    probes (per frontier and probe: n* and reward of both, regret, and the band), evals (the
    adaptive study's evaluations), fits_full / fits_adaptive (both studies' fits), log (the
    rule's decisions per rung, `replay_sweep`'s) and regrets (B_p -> the regret right_by_regret
    is judged by, `fitted_regrets`).
    """
    s = replace(settings or AnalysisSettings(), method="noise")
    evals = check_evals(evals, s.metric, split=split)
    c_max = float(evals["compute"].max()) if c_max is None else float(c_max)
    if not c_max > 0:
        raise ValueError(f"c_max must be > 0, got {c_max!r}")
    p = SweepSettings.of(params)
    evals = evals[evals["compute"] <= c_max * (1 + 1e-9)]
    log: list = []
    adaptive, runs = replay_sweep(evals, c_max=c_max, params=p, settings=s, eval_rollouts=eval_rollouts, log=log)
    _, fits_full, _ = fit_study(evals, s)
    _, fits_adaptive, _ = fit_study(adaptive, s)
    grid = (probe_budgets(fits_full, c_max, int(probes)) if np.ndim(probes) == 0
            else np.asarray(probes, dtype=float))
    table = _probe_table(fits_full, fits_adaptive, grid, p.frontier == "joint")
    tolerance = pd.Series(fitted_regrets(fits_full, table, c_max, p), index=table.index)
    defined = table["n_star_full"].notna()
    same = (table["n_star_full"] == table["n_star_adaptive"])[defined]
    at_max = table[np.isclose(table["compute"], grid[-1])]
    cost = bill(runs)
    return {
        "share": cost["share"], "share_training": cost["share_training"],
        "share_validation": cost["share_validation"], "bill": {k: cost[k] for k in ("grid", "adaptive")},
        "validation_counted": bool(cost["grid"]["validation"] > 0),
        "agreement": float(same.mean()) if len(same) else np.nan,
        "right_by_regret": float((table["regret"][defined] <= tolerance[defined] + 1e-12).mean()) if defined.any()
        else np.nan,
        "in_band": np.nan,
        "reward_diff": float((at_max["reward_adaptive"] - at_max["reward_full"]).mean()),
        "budgets": p.budgets(c_max),
        "params": p.rule(), "c_max": c_max, "runs": runs, "probes": table,
        "evals": adaptive, "fits_full": fits_full, "fits_adaptive": fits_adaptive, "log": log,
        "regrets": {float(b): float(r) for b, r in zip(table["B_p"], tolerance)},
    }


def with_grid_band(result: dict, evals: pd.DataFrame, resamples: int, settings: AnalysisSettings | None = None,
                   split: str | None = None) -> dict:
    """A replay's `result` judged against the full grid's n* band too (fixed-B_p frontiers): its
    probes gain n_star_lo, n_star_hi (`grid_n_star_bands` from `resamples` bootstrap resamples of
    `evals`, the table replayed) and in_band, and in_band becomes the share of probes with a full
    grid's n* whose sweep n* lies inside the band."""
    s = replace(settings or AnalysisSettings(), method="noise")
    evals = check_evals(evals, s.metric, split=split)
    evals = evals[evals["compute"] <= result["c_max"] * (1 + 1e-9)]
    table = result["probes"].drop(columns=["n_star_lo", "n_star_hi", "in_band"], errors="ignore")
    budgets = np.unique(table["compute"].to_numpy(dtype=float))
    table = table.merge(grid_n_star_bands(evals, budgets, s, resamples), on=["B_p", "compute"], how="left")
    ad = table["n_star_adaptive"]
    table["in_band"] = (ad >= table["n_star_lo"]) & (ad <= table["n_star_hi"])
    defined = table["n_star_full"].notna()
    return {**result, "probes": table, "in_band": float(table["in_band"][defined].mean()) if defined.any() else np.nan}
