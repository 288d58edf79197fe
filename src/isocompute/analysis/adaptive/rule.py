"""The adaptive sweep's pruning rule (`sweep.mode: adaptive`).

Every run trains to the first rung of its budget; at each rung the runs are
fitted (the noise method, `fitter.fit_study`), every run gets a predicted
reward band up to C_max, and a run goes on to the next rung only if its band
could still reach the frontier, or it sits next to the predicted n*, at some
compute it has not reached yet. `prediction_bands` turns fits into bands,
`prune` decides from bands alone (pure, testable on hand-built bands), and
`decide` chains them on an evaluation table. The replay is `adaptive.replay`.
On top of the per-run verdicts, the band strategy `sweep.bands` names (`adaptive.strategies`,
registered by name) decides: `shared` (the default) predicts every run of a B_p at once by its
trend model and stops the runs a run going on stays within sweep.epsilon of (`adaptive.shared`);
`runs` adds nothing; `pooled` is the legacy rule (`adaptive.pooled`).

A band is a profile-likelihood band: every sigmoid on a grid of (C_mid, B),
with every A whose weighted SSE lies within z^2 of the best fit's, is a
curve the data cannot rule out; the band is their envelope. A run whose data
stops before its midpoint leaves A unconstrained, so its band reaches high and
it continues; a run past its midpoint has a narrow band.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
from scipy.special import expit
from scipy.stats import norm

from isocompute.analysis.adaptive.draws import Horizon, trained_to_rung
from isocompute.analysis.adaptive.strategies import BANDS
from isocompute.analysis.fits.collapse import held
from isocompute.analysis.fits.fitter import fit_study
from isocompute.analysis.fits.noise import NOISE_FIT_GRID, cell_arrays
from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.sigmoid import OK, USABLE, sigmoid_reward
from isocompute.analysis.inputs.check import check_evals
from isocompute.sweep import SweepSettings

# The sweep section of the config schema is the one home of the rule's defaults and checks.
DEFAULTS = SweepSettings()
BAND_COLUMNS = ["B_p", "n", "compute", "reward", "reward_lo", "reward_hi", "reached", "fitted", "n_evals"]
DECISION_COLUMNS = ["B_p", "n", "continue", "reason", "reached", "fitted", "n_evals", "reward_hi_at_c_max",
                    "frontier_lo_at_c_max", "gap", "n_star_at_c_max", "band_width_at_c_max", "p_n_star"]
# The (C_mid, B) grids of the bands (coarse, then fine): C_mid from a decade
# below a run's first evaluation to a decade beyond C_max, B over the noise
# fit's bounds.
BAND_C_MID_POINTS, BAND_C_MID_MARGIN, BAND_B_POINTS = (48, 40), 1.0, (24, 24)


def _sums(log_c, dy, w, log_cmid, log_b):
    """Weighted sums of a sigmoid grid over one run's points: (sy, ss, cells), cells (nC*nB, 2) of (log C_mid, log B)."""
    cm, lb = np.meshgrid(log_cmid, log_b, indexing="ij")
    cells = np.column_stack([cm.ravel(), lb.ravel()])
    s = expit(np.exp(cells[:, 1])[None, :] * (log_c[:, None] - cells[None, :, 0]))      # (P, cells)
    return (w * dy) @ s, w @ (s * s), cells


def _a_interval(sy, ss, y2, threshold, a_max):
    """The a = A - R0 in [0, a_max] whose SSE y2 - 2 a sy + a^2 ss is <= threshold: (a_lo, a_hi, inside)."""
    disc = sy ** 2 - ss * (y2 - threshold)
    root = np.sqrt(np.maximum(disc, 0.0))
    a_lo = np.clip((sy - root) / ss, 0.0, a_max)
    a_hi = np.clip((sy + root) / ss, 0.0, a_max)
    return a_lo, a_hi, (disc >= 0) & (a_lo <= a_hi)


def _cell_band(arr: dict, R0: float, grid, *, z: float, a_max: float, c_hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper edge (G,) of the curves one run's data cannot rule out, on `grid`.

    For a fixed (C_mid, B) the weighted SSE is quadratic in a = A - R0, so the
    A values within the threshold form an interval [a_lo, a_hi], and a curve's
    value at any compute increases with a. A coarse (C_mid, B) grid finds the
    box holding the accepted curves; a fine grid over that box gives the band
    (the band is a maximum over the grid, too narrow where the grid is coarse).
    """
    log_c, dy, w = np.log(arr["compute"]), arr["values"] - R0, arr["weights"]
    y2, dof = float(np.sum(w * dy * dy)), max(log_c.size - 3, 1)
    margin = BAND_C_MID_MARGIN * np.log(10)
    log_cmid = np.linspace(log_c.min() - margin, np.log(c_hi) + margin, BAND_C_MID_POINTS[0])
    log_b = np.linspace(*np.log(NOISE_FIT_GRID.b_bounds), BAND_B_POINTS[0])

    def threshold(sy, ss):
        a = np.clip(sy / ss, 0.0, a_max)
        sse_min = min(float(np.min(y2 - 2 * a * sy + a * a * ss)), y2)
        return sse_min + z ** 2 * max(1.0, sse_min / dof)   # widened when the fit is worse than the errors say

    sy, ss, cells = _sums(log_c, dy, w, log_cmid, log_b)
    t = threshold(sy, ss)
    inside = _a_interval(sy, ss, y2, t, a_max)[2].reshape(log_cmid.size, log_b.size)
    if inside.any():
        ic, ib = np.flatnonzero(inside.any(axis=1)), np.flatnonzero(inside.any(axis=0))
        pick = lambda g, i: g[max(i.min() - 1, 0)], lambda g, i: g[min(i.max() + 1, g.size - 1)]  # noqa: E731
        log_cmid = np.linspace(pick[0](log_cmid, ic), pick[1](log_cmid, ic), BAND_C_MID_POINTS[1])
        log_b = np.linspace(pick[0](log_b, ib), pick[1](log_b, ib), BAND_B_POINTS[1])
        sy, ss, cells = _sums(log_c, dy, w, log_cmid, log_b)
        t = min(t, threshold(sy, ss))
    a_lo, a_hi, inside = _a_interval(sy, ss, y2, t, a_max)
    sg = expit(np.exp(cells[inside, 1])[None, :] * (np.log(np.asarray(grid, float))[:, None] - cells[inside, 0]))
    hi = R0 + (sg * a_hi[inside]).max(axis=1, initial=0.0)
    lo = R0 + (sg * a_lo[inside]).min(axis=1, initial=np.inf)
    if y2 <= t or not inside.any():                        # a = 0, no progress at all, is a curve too
        lo = np.minimum(lo, R0)
    return lo, hi


def prediction_bands(evals: pd.DataFrame, fits: pd.DataFrame, *, c_max: float, c_from: float,
                     metric: str = "avg@4", z: float = DEFAULTS.z,
                     grid_points: int = DEFAULTS.grid_points) -> pd.DataFrame:
    """Each run's predicted reward and band on `grid_points` log-spaced computes in [c_from, c_max].

    `evals` carries `<metric>_se` and `fits` is its noise fit (`fit_study`).
    Columns B_p, n, compute, reward (the fit, extrapolated), reward_lo,
    reward_hi (the band; NaN for a run without a usable fit), reached (the
    run's largest evaluated compute), fitted (whether its fit is usable: a fit, and finite
    standard errors to weigh its band by),
    n_evals (its evaluations at positive compute).
    """
    grid = Horizon(c_from, c_max, grid_points).grid
    parts = []
    cells = dict(iter(evals.groupby(["B_p", "n"], sort=False)))
    for row in fits.itertuples(index=False):
        cell = cells.get((row.B_p, row.n), evals.iloc[:0])
        arr = cell_arrays(cell, metric) if row.status in USABLE else None
        # Usable: a fit, and the standard errors its band is weighed by (unknown ones, estimated from
        # the residuals of too few points, are NaN: such a run is not judged, as one without a fit).
        fitted = arr is not None and bool(np.isfinite(arr["weights"]).all())
        reward = lo = hi = np.full(grid.size, np.nan)
        if fitted:
            at = held(grid, getattr(row, "hold_from", np.nan))      # a collapsed run: held flat (fits.collapse)
            reward = (np.full(grid.size, row.R0) if row.status != OK
                      else sigmoid_reward(at, row.R0, row.A, row.B, row.C_mid))
            a_max = max(NOISE_FIT_GRID.a_max - row.R0, 0.0)
            lo, hi = _cell_band(arr, row.R0, at, z=z, a_max=a_max, c_hi=c_max)
        parts.append(pd.DataFrame({"B_p": row.B_p, "n": row.n, "compute": grid, "reward": reward,
                                   "reward_lo": lo, "reward_hi": hi, "reached": float(row.compute_max),
                                   "fitted": fitted, "n_evals": int(row.n_evals)}))
    if not parts:
        return pd.DataFrame(columns=BAND_COLUMNS)
    return pd.concat(parts, ignore_index=True)[BAND_COLUMNS]


def prune(bands: pd.DataFrame, *, neighbours: int = DEFAULTS.neighbours, min_evals: int = DEFAULTS.min_evals,
          frontier: str = DEFAULTS.frontier, c_max: float | None = None) -> pd.DataFrame:
    """Which runs go on, from their bands alone (pure; no fitting).

    `bands`: one row per (run, compute) with columns B_p, n, compute, reward,
    reward_lo, reward_hi, reached, fitted, n_evals (as `prediction_bands`). Within each
    frontier group (one B_p, or all runs with `frontier='joint'`), the
    frontier's lower band at each compute is the largest reward_lo of its
    runs, and the predicted n* the run of the largest reward. A run continues
    when it has no usable fit or fewer than `min_evals` evaluations ('too few
    evaluations to fit': a fit to a handful of points can look saturated by
    chance), or, at some
    compute above `reached` (it has not got there yet), its reward_hi reaches
    the frontier's lower band, or its n lies within `neighbours` grid steps
    (positions in the group's sorted n; with a joint frontier, the larger of
    the steps in n and in B_p) of the predicted n* run. A run with no room for one
    more step before c_max (default: the largest compute in `bands`) stops
    as finished. Returns one row per run: columns
    of DECISION_COLUMNS (gap: the largest reward_hi minus the frontier's lower band
    over the computes ahead of the run).
    """
    if bands.empty:
        return pd.DataFrame(columns=DECISION_COLUMNS)
    c_max = float(bands["compute"].max()) if c_max is None else float(c_max)
    groups = [((None,), bands)] if frontier == "joint" else bands.groupby(["B_p"], sort=True)
    rows = []
    for _, group in groups:
        rows += _prune_group(_group_bands(group), neighbours, min_evals, c_max)
    out = pd.DataFrame(rows, columns=DECISION_COLUMNS)
    return out.sort_values(["B_p", "n"], kind="stable").reset_index(drop=True)


def _group_bands(group: pd.DataFrame) -> dict:
    """One frontier group's bands as arrays: runs (B_p, n) in sorted order x computes `comp`
    (lo, hi, mid: reward_lo, reward_hi, reward), and each run's reached, fitted, n_evals."""
    run_keys, run_of = np.unique(group[["B_p", "n"]].to_numpy(), axis=0, return_inverse=True)
    comp, comp_of = np.unique(group["compute"].to_numpy(dtype=float), return_inverse=True)
    run_of, comp_of = run_of.ravel(), comp_of.ravel()
    lo, hi, mid = (np.full((len(run_keys), comp.size), np.nan) for _ in range(3))
    for out, col in ((lo, "reward_lo"), (hi, "reward_hi"), (mid, "reward")):
        out[run_of, comp_of] = group[col].to_numpy(dtype=float)
    first = np.unique(run_of, return_index=True)[1]         # one row per run, in run_keys order
    return {"bp": run_keys[:, 0], "n": run_keys[:, 1], "comp": comp, "lo": lo, "hi": hi, "mid": mid,
            "reached": group["reached"].to_numpy(dtype=float)[first],
            "fitted": group["fitted"].to_numpy(dtype=bool)[first],
            "n_evals": group["n_evals"].to_numpy(dtype=int)[first]}


def _prune_group(g: dict, neighbours: int, min_evals: int, c_max: float) -> list[dict]:
    """`prune`'s decision rows for one frontier group (`_group_bands`)."""
    comp, lo, hi, reached, fitted, n_evals = g["comp"], g["lo"], g["hi"], g["reached"], g["fitted"], g["n_evals"]
    with np.errstate(invalid="ignore"):
        front_lo = np.nanmax(np.where(np.isnan(lo), -np.inf, lo), axis=0)
        best = np.argmax(np.where(np.isnan(g["mid"]), -np.inf, g["mid"]), axis=0)
    any_mid = np.isfinite(g["mid"]).any(axis=0)
    bp_vals, n_vals = g["bp"], g["n"]
    # Grid steps from the n* run: in n, and (joint frontier) in B_p, whichever is larger.
    steps = np.maximum(*(np.abs(r[:, None] - r[None, best]) for r in
                         (np.searchsorted(np.unique(v), v) for v in (n_vals, bp_vals))))
    ahead = comp[None, :] > reached[:, None] * (1 + 1e-9)
    gap = np.where(ahead & fitted[:, None], hi - front_lo[None, :], -np.inf)
    near = ahead & any_mid[None, :] & (steps <= neighbours)
    last = int(np.argmax(comp))
    rows = []
    for i, (B_p, n) in enumerate(zip(bp_vals, n_vals)):
        reach = np.flatnonzero(gap[i] >= 0)
        close = np.flatnonzero(near[i])
        if reached[i] + B_p * n > c_max * (1 + 1e-9):     # not one more step fits in the budget
            go, why = False, "reached C_max"
        elif not fitted[i] or n_evals[i] < min_evals:
            go, why = True, "too few evaluations to fit"
        elif reach.size:
            go, why = True, f"band reaches the frontier's lower band at C = {comp[reach[0]]:.4g}"
        elif close.size:
            go, why = True, (f"within {neighbours} grid step(s) of n* = {n_vals[best[close[0]]]}"
                             f" at C = {comp[close[0]]:.4g}")
        else:
            top = float(np.max(gap[i])) if ahead[i].any() else np.nan
            go, why = False, f"band below the frontier's lower band up to C_max (by {-top:.3g} at least)"
        rows.append({"B_p": B_p, "n": n, "continue": go, "reason": why, "reached": reached[i],
                     "fitted": bool(fitted[i]), "n_evals": int(n_evals[i]), "reward_hi_at_c_max": hi[i, last],
                     "frontier_lo_at_c_max": front_lo[last],
                     "gap": float(np.max(gap[i])) if np.isfinite(gap[i]).any() else np.nan,
                     "n_star_at_c_max": n_vals[best[last]] if any_mid[last] else np.nan,
                     "band_width_at_c_max": hi[i, last] - lo[i, last], "p_n_star": np.nan})
    return rows


def rule_settings(settings: AnalysisSettings | None, params: SweepSettings, c_max: float) -> AnalysisSettings:
    """The analysis settings the rule fits a rung's runs with: the study's (default the schema's) by
    the noise method, its collapse test at the analysis' level divided by the rungs. Every rung tests
    the runs anew, so the level is shared over the rungs (Bonferroni): a dip a run recovers from is
    not held flat at one rung after another."""
    s = replace(settings or AnalysisSettings(), method="noise")
    return replace(s, collapse_alpha=s.collapse_alpha / len(params.budgets(c_max)))


def decide(evals: pd.DataFrame, *, rung_compute: float, c_max: float, params: SweepSettings | dict | None = None,
           settings: AnalysisSettings | None = None, trained=None) -> pd.DataFrame:
    """The rule at one rung: which runs train on to the next.

    `evals`: the study's evaluation table (as `isocompute analyze` reads it);
    only rows with compute <= `rung_compute` are used. Every run is fitted by
    the noise method (`fitter.fit_study` with `settings`, the study's analysis
    settings, default the schema's, by the noise method whatever their method:
    pooled R0, weights 1/se^2), gets
    its band (`prediction_bands`) on the computes from `rung_compute` to
    `c_max`, and `prune` decides. `params`: the sweep section's rule keys
    (eta, rungs, z, neighbours, min_evals, frontier, grid_points), schema defaults for
    the rest. Returns one row per run in `evals` (DECISION_COLUMNS); the caller
    applies it to the runs it trained to this rung (a run stopped earlier
    keeps its evaluations, and they count for the frontier). `trained`: the (B_p, n) trained to
    this rung (default: the runs evaluated within one step of it); every other run stopped at
    an earlier rung and stays stopped (continue false), unless the safety net (`revive`, bands
    pooled) resumes it.
    """
    p = SweepSettings.of(params)
    if not 0 < rung_compute <= c_max:
        raise ValueError(f"need 0 < rung_compute <= c_max, got {rung_compute!r} and {c_max!r}")
    s = rule_settings(settings, p, c_max)
    metric = s.metric
    evals = check_evals(evals, metric)
    keys = None if trained is None else {(float(b), float(n)) for b, n in trained}
    seen = evals[evals["compute"] <= rung_compute * (1 + 1e-9)]
    seen, fits, _ = fit_study(seen, s)
    bands = prediction_bands(seen, fits, c_max=c_max, c_from=rung_compute, metric=metric, z=p.z,
                             grid_points=p.grid_points)
    out = prune(bands, neighbours=p.neighbours, min_evals=p.min_evals, frontier=p.frontier, c_max=c_max)
    strategy = BANDS.get(p.bands if p.frontier == "fixed_B_p" else "runs")   # the models judge per B_p
    out, chances = strategy.judge(out, seen, fits, Horizon(rung_compute, c_max, p.grid_points), params=p,
                                  settings=s, trained=keys)
    reached = out["reached"].to_numpy(dtype=float)
    step = out["B_p"].to_numpy(dtype=float) * out["n"].to_numpy(dtype=float)
    if keys is None:
        stopped = ~trained_to_rung(reached, step, rung_compute)
    else:
        stopped = np.array([(float(b), float(n)) not in keys for b, n in zip(out["B_p"], out["n"])], dtype=bool)
    stopped &= reached + step <= c_max * (1 + 1e-9)        # a run at C_max has nothing left to resume
    z_revive, revived = strategy.revival(p)
    return apply_revival(out, chances if p.revive else pd.DataFrame(), stopped=stopped, z=z_revive,
                         revived=revived)


def apply_revival(decisions: pd.DataFrame, chances: pd.DataFrame, *, stopped: np.ndarray, z: float,
                  revived: str = "its pooled trend curve is n* ahead") -> pd.DataFrame:
    """Decisions on the runs stopped at an earlier rung (`stopped`, a mask over `decisions`; pure):
    the safety net resumes one when its chance in the band strategy's model, put back among the
    runs still training (`p_revive` of `chances`), is at least 1 - Phi(z); every other stopped run
    stays stopped. `revived`: what that chance is the chance of, in the strategy's words (its
    `revival`), for the decision's reason."""
    out = decisions.copy()
    if not stopped.any():
        return out
    revive = (out[["B_p", "n"]].merge(chances, on=["B_p", "n"], how="left")["p_revive"].to_numpy(dtype=float)
              if "p_revive" in chances.columns else np.full(len(out), np.nan))
    floor = float(norm.sf(z))
    for i in np.flatnonzero(stopped):
        go = bool(np.isfinite(revive[i]) and revive[i] >= floor)
        out.at[i, "continue"] = go
        out.at[i, "p_n_star"] = revive[i]
        out.at[i, "reason"] = (f"revived: {revived} in {revive[i]:.1%} of the draws (>= {floor:.1%})"
                               if go else "stopped at an earlier rung")
    return out
