"""The adaptive sweep's shared curve model (`sweep.bands: shared`, the default).

One run's own data bound its future only once it has passed its midpoint: a young run
identifies (A - R0) * C_mid^-B and little else, so its own band at C_max stays wide and
the per-run rule (`adaptive.rule.prune`) lets nearly every young run go on. The runs of
one B_p are not unrelated: the analysis pools them (`fits.pooled`: one B, A and log C_mid
polynomials in log2 n), and here the rule uses that model to predict every run at once.
Its parameters' sampling distribution (Gaussian, from the fit's Jacobian, widened by the
reduced chi-square when above 1) is drawn `DRAWS` times; every draw gives every run of the
B_p a curve, so a young run's prediction borrows from its neighbours in n. The draws mix the
trend of the analysis' degree with the one a degree lower, by their BIC weights
(`lower_degree_weight`): a curvature in n the data do not ask for would otherwise keep the
runs at the ends and the middle of the grid going to C_max on a null.

The question asked of the draws is the one the study answers, judged by regret: a run may
stop when, in at least 1 - Phi(z) of the draws, at every compute ahead some run that goes
on is within `epsilon` of it (its answer there would cost at most epsilon of reward). Runs
are stopped one at a time, the least likely to matter first, each judged against the runs
still going on, so two tied runs are never both stopped. Where the model is not trusted, the
per-run rule decides: the trend rejected by its F-test (`pool_p` below the analysis'
pool_alpha), too few runs, or a run further than `reach` doublings of compute from C_max
(the model's measured calibration: its bands cover the truth at C_max only that close,
benchmarks/bench_adaptive_strata.py --calibration). The largest n of every B_p (the insurance
run) trains to at least `insurance` x C_max whatever the model says, so that a truth
outside the model is seen before it can stop the run most likely to win late.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy.special import expit
from scipy.stats import norm

from isocompute.analysis.adaptive.draws import DRAWS, Horizon, draw_trend_curves, held_grid, run_spread, trained_to_rung
from isocompute.analysis.fits.noise import cell_arrays
from isocompute.analysis.fits.pooled import fit_trend
from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.fits.sigmoid import USABLE
from isocompute.sweep import SweepSettings


class Ensemble(NamedTuple):
    """One B_p's curve draws on the computes ahead: n (R,), reached (R,), active (R,): trained to the
    rung, and curves (K, R, G) on `grid` (G,)."""

    n: np.ndarray
    reached: np.ndarray
    active: np.ndarray
    grid: np.ndarray
    curves: np.ndarray
    R0: float = float("nan")

    def rise(self) -> float:
        """What training adds by the model: the best run's median predicted reward at the horizon's
        end (C_max) less the base model's R0 (the scale of a sweep.epsilon read as a share of it)."""
        return float(np.max(np.median(self.curves[:, :, -1], axis=0)) - self.R0)


class TrendDraws(NamedTuple):
    """How a B_p's trend model is fitted and drawn: the metric, the trend's degree in log2 n
    (analysis.pool_degree), the F-test level that rejects it (analysis.pool_alpha), the draws, and
    the factor that widens the parameters' sd (sweep.inflation), whether each run gets its own
    deviation (sweep.run_effects) and whether a trend with B varying in n is mixed in (sweep.b_slope)."""

    metric: str = "avg@4"
    degree: int = 2
    alpha: float = 0.01
    draws: int = DRAWS
    inflation: float = 1.0
    runs: bool = False
    b_slope: bool = False


def trend_ensemble(seen: pd.DataFrame, fits: pd.DataFrame, B_p, ahead: Horizon, how: TrendDraws,
                   rng: np.random.Generator, trained: set | None = None) -> Ensemble | None:
    """The curve draws of B_p's runs under its trend model (`how`), or None where the model is not in
    force: fewer than degree + 2 usable runs, a failed fit, or the F-test against the run-by-run fits
    (`pool_p` of `fits`, computed by the analysis) rejecting it at `how.alpha` or not computable.
    `trained`: the set of (B_p, n), as floats, trained to this rung (the ensemble's `active`); without
    it, `draws.trained_to_rung`'s guess (a run taken for stopped would be neither a rival nor a
    candidate)."""
    metric, degree, alpha, draws, inflation, runs, b_slope = how
    group = fits[(fits["B_p"] == B_p) & fits["status"].isin(USABLE)].sort_values("n")
    p = group["pool_p"].to_numpy(dtype=float) if "pool_p" in group.columns else np.array([np.nan])
    if len(group) < degree + 2 or not (np.isfinite(p).all() and (p >= alpha).all()):
        return None
    cells = dict(iter(seen.groupby(["B_p", "n"], sort=False)))
    if not all((B_p, n) in cells for n in group["n"]):
        return None
    R0 = float(group["R0"].iloc[0])
    points = [{"n": float(n), **cell_arrays(cells[(B_p, n)], metric)} for n in group["n"]]
    init = group[(group["status"] == "ok") & (group["C_mid"] > 0)][["n", "A", "B", "C_mid"]]
    trend = None if init.empty else fit_trend(points, R0, init, degree=degree)
    if trend is None:
        return None
    lower = fit_trend(points, R0, init, degree=degree - 1) if degree > 1 else None
    n = group["n"].to_numpy(dtype=float)
    grid = ahead.grid
    at = held_grid(grid, group)                          # a collapsed run's curve held flat
    curves, _ = draw_trend_curves(trend, n, R0, at, rng, draws=draws, inflation=inflation)
    slope = fit_trend(points, R0, init, degree=degree, b_slope=True) if b_slope and degree >= 1 else None
    w_lower, w_slope = model_weights(trend, degree, lower, slope)
    if w_lower > 0 or w_slope > 0:
        if w_lower > 0:
            curves_lower, _ = draw_trend_curves(lower, n, R0, at, rng, draws=draws, inflation=inflation)
        u = rng.random(draws)
        if w_lower > 0:
            curves[u < w_lower] = curves_lower[u < w_lower]
        if w_slope > 0:
            pick = (u >= w_lower) & (u < w_lower + w_slope)
            curves[pick] = draw_trend_curves(slope, n, R0, at, rng, draws=draws, inflation=inflation)[0][pick]
    if runs:                    # each run's own deviation from the trend, drawn apart from the trend's
        tau = run_spread(trend, degree)
        if tau > 0:
            curves = curves + tau * rng.standard_normal((draws, n.size, 1))
    reached = group["compute_max"].to_numpy(dtype=float)
    if trained is None:
        active = trained_to_rung(reached, B_p * n, ahead.c_from)
    else:
        active = np.array([(float(B_p), float(k)) in trained for k in n], dtype=bool)
    return Ensemble(n=n, reached=reached, active=active, grid=grid, curves=curves, R0=R0)


def model_weights(trend: dict, degree: int, lower: dict | None, slope: dict | None) -> tuple[float, float]:
    """The weights, in the model's draws, of the trend one degree lower (`lower`) and of the trend
    whose B varies with n (`slope`, one parameter more than `trend`), against `trend` of `degree`:
    their BIC posterior probabilities (equal prior odds) among the models fitted (None: not
    fitted, weight 0), as `lower_degree_weight` computes them for two. Without `slope` the
    weight of `lower` is `lower_degree_weight`'s."""
    if slope is None:
        return lower_degree_weight(trend, lower, degree), 0.0
    points, scale = _bic_terms(trend, degree)
    fitted = [(trend, 3 + 2 * degree), (lower, 1 + 2 * degree), (slope, 4 + 2 * degree)]
    bic = np.array([np.inf if fit is None else fit["sse"] / scale + k * np.log(points) for fit, k in fitted])
    w = np.exp(-0.5 * (bic - bic.min()))
    w /= w.sum()
    return float(w[1]), float(w[2])


def lower_degree_weight(trend: dict, lower: dict | None, degree: int) -> float:
    """The weight of the trend one degree lower (`lower`, nested in `trend` of `degree`) in the
    model's draws: its BIC posterior probability against `trend` (equal prior odds), from the
    weighted SSEs, each scaled by `trend`'s reduced chi-square when above 1, and 2 ln N per two
    extra parameters (N: the points both are fitted to). 0 without a lower fit.

    A quadratic in log2 n is wide where its curvature is not pinned: with one run at each end and
    one in the middle it lets each of them pull ahead in some draws, so on a null (every n the
    same) three runs per B_p trained to C_max under it, for a curvature the data do not ask for.
    Averaged with the straight trend by the evidence, the curvature stays where the data need it
    (a peaked truth) and drops out where they do not."""
    if lower is None:
        return 0.0
    points, scale = _bic_terms(trend, degree)
    delta = (lower["sse"] - trend["sse"]) / scale - 2 * np.log(points)     # BIC(lower) - BIC(trend)
    return float(expit(-0.5 * delta))


def _bic_terms(trend: dict, degree: int) -> tuple[int, float]:
    """What the models' BICs share: N, the points the trend of `degree` is fitted to, and the scale of
    their SSEs, that trend's reduced chi-square when above 1."""
    points = max(int(trend["n_points"]), 2)
    return points, max(1.0, trend["sse"] / max(points - (3 + 2 * degree), 1))


def chance_to_matter(ens: Ensemble, i: int, rivals: np.ndarray, epsilon: float) -> float:
    """Share of the draws in which run i, trained on, would beat every run in `rivals` (a mask over
    the runs) by more than `epsilon` at some compute ahead of it: the chance that going without it
    costs more than epsilon of reward somewhere."""
    others = rivals.copy()
    others[i] = False
    ahead = ens.grid > ens.reached[i] * (1 + 1e-9)
    if not ahead.any():
        return 0.0
    if not others.any():
        return 1.0
    top = ens.curves[:, others, :].max(axis=1)                                             # (K, G)
    beats = ens.curves[:, i, :] > top + epsilon
    return float((beats & ahead[None, :]).any(axis=1).mean())


def shared_verdicts(ens: Ensemble, *, epsilon: float, floor: float, judged: np.ndarray, c_max: float,
                    insurance: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which of one B_p's active runs stop, by the model (pure over the draws).

    `judged`: the runs the model may stop (active, inside the calibrated reach, enough evaluations).
    Greedy: the judged run least likely to matter (`chance_to_matter` against the runs going on;
    ties broken by the lower predicted reward at the end of the horizon, the median over the draws)
    stops if that chance is below `floor`; the rest are judged again without it; until none stops.
    Regret does not chain: a run stopped because a rival stayed within epsilon of it, whose rival
    stopped in turn, is judged again against the runs that finally go on; one that matters against
    them goes on after all and is not judged again at this rung, and the greedy runs again, until
    every stopped run is below `floor` against the final set.
    The largest n (the insurance run) is not stopped before it reaches `insurance` x c_max.
    Returns (stop (R,) bool, p_matters (R,): each active run's last chance, NaN for the others,
    p_revive (R,): for a run stopped at an earlier rung, its chance to matter against the runs
    going on, were it trained on)."""
    R = ens.n.size
    going = ens.active.copy()
    stop = np.zeros(R, dtype=bool)
    insured = (ens.n == ens.n.max()) & (ens.reached < insurance * c_max * (1 - 1e-9))
    candidates = judged & ens.active & ~insured
    predicted = np.median(ens.curves[:, :, -1], axis=0)                        # (R,) at the horizon's end
    p = np.full(R, np.nan)
    for _ in range(R + 1):               # each pass keeps one more run for good, so R + 1 passes end it
        while True:
            left = np.flatnonzero(candidates & going)
            for i in np.flatnonzero(going):
                p[i] = chance_to_matter(ens, i, going, epsilon)
            if not left.size:
                break
            worst = left[np.lexsort((predicted[left], p[left]))[0]]
            if p[worst] >= floor:
                break
            going[worst], stop[worst] = False, True
        for i in np.flatnonzero(stop):          # each stopped run against the runs that go on now
            p[i] = chance_to_matter(ens, i, going, epsilon)
        back = np.flatnonzero(stop & (p >= floor))
        if not back.size:
            break
        going[back], stop[back], candidates[back] = True, False, False
    revive = np.full(R, np.nan)
    for i in np.flatnonzero(~ens.active):
        revive[i] = chance_to_matter(ens, i, going, epsilon)
    return stop, p, revive


def extrapolation_doublings(reached, c_max: float) -> np.ndarray:
    """How far a run's data are from C_max, in doublings of compute (0 at C_max)."""
    return np.log2(float(c_max) / np.maximum(np.asarray(reached, dtype=float), 1e-300))


def apply_shared(decisions: pd.DataFrame, seen: pd.DataFrame, fits: pd.DataFrame, ahead: Horizon, *,
                 params: SweepSettings, settings: AnalysisSettings, trained=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The per-run decisions (`adaptive.rule.prune`) with the shared model's stops added (this module).

    Per B_p whose trend model is in force: the runs the per-run rule lets go on that the model may
    judge (enough evaluations, data within `params.reach` doublings of C_max) stop when the model
    says a run going on stays within the regret it accepts (`params.regret` of the model's rise,
    `Ensemble.rise`) of them at every compute ahead in all but
    1 - Phi(z) of its draws; finished runs are rivals, never candidates. `trained`: the set of
    (B_p, n), as floats, trained to this rung (`shared.trend_ensemble`'s). Returns (the decisions,
    with p_n_star the chance to matter; the chances, columns B_p, n, p_revive, for the revival of
    runs stopped at earlier rungs: NaN where the model is not in force)."""
    out = decisions.copy()
    floor = float(norm.sf(params.z))
    rng = np.random.default_rng(0)
    how = TrendDraws(settings.metric, settings.pool_degree, settings.pool_alpha, inflation=params.inflation,
                     runs=params.run_effects, b_slope=params.b_slope)
    c_max = ahead.c_max
    rows = []
    for B_p in sorted(out["B_p"].unique()):
        ens = trend_ensemble(seen, fits, B_p, ahead, how, rng, trained=trained)
        if ens is None:
            continue
        idx = [int(np.flatnonzero((out["B_p"] == B_p).to_numpy() & (out["n"] == n).to_numpy())[0]) for n in ens.n]
        sub = out.loc[idx]
        finished = sub["reason"].eq("reached C_max").to_numpy()
        going = sub["continue"].to_numpy(dtype=bool)
        judged = (going & sub["fitted"].to_numpy(dtype=bool) & (sub["n_evals"].to_numpy() >= params.min_evals)
                  & (extrapolation_doublings(ens.reached, c_max) <= params.reach + 1e-9))
        ens = ens._replace(active=ens.active & (going | finished))
        epsilon = params.regret(ens.rise())
        if not np.isfinite(epsilon):          # no rise to scale by: the per-run rule decides
            continue
        stop, p_matters, p_revive = shared_verdicts(ens, epsilon=epsilon, floor=floor, judged=judged,
                                                    c_max=c_max, insurance=params.insurance)
        for k, i in enumerate(idx):
            out.at[i, "p_n_star"] = p_matters[k]
            if stop[k]:
                out.at[i, "continue"] = False
                out.at[i, "reason"] = (f"shared model: a run going on stays within {epsilon:.3g} of it at every "
                                       f"compute ahead in {1 - p_matters[k]:.1%} of the draws (>= {1 - floor:.1%})")
        rows += [{"B_p": B_p, "n": n, "p_revive": r} for n, r in zip(ens.n, p_revive)]
    return out, pd.DataFrame(rows, columns=["B_p", "n", "p_revive"])
