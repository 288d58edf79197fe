"""The adaptive sweep's curve model, drawn: the primitives the shared model (`adaptive.shared`)
and the legacy pooled rule (`adaptive.pooled`) both predict with.

A B_p's trend fit (`fits.pooled.fit_trend`: one B, A and log C_mid polynomials in log2 n) is
drawn jointly, `DRAWS` times, from its parameters' sampling distribution (Gaussian, from the
fit's Jacobian, widened by the reduced chi-square when above 1), and every draw gives every run
of the B_p a curve on the computes ahead of a rung (`Horizon`). Which runs were trained to a
rung, and so compete there, is `trained_to_rung`'s to say.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy.special import expit

from isocompute.analysis.fits.collapse import held
from isocompute.analysis.fits.pooled import _design, _efficiency

DRAWS = 4000          # parameter draws per B_p: the tail share 1 - Phi(2.5) = 0.6% is ~25 draws


class Horizon(NamedTuple):
    """The computes ahead of a rung: `grid_points` log-spaced from `c_from` (the rung) to `c_max`."""

    c_from: float
    c_max: float
    grid_points: int

    @property
    def grid(self) -> np.ndarray:
        if self.c_from < self.c_max:
            return np.geomspace(self.c_from, self.c_max, self.grid_points)
        return np.array([float(self.c_max)])


def trained_to_rung(reached, step, rung_compute: float) -> np.ndarray:
    """Which runs were trained to the rung at `rung_compute`, from their last evaluated compute
    (`reached`) and their rollouts per step (`step`, B_p x n), both arrays: those whose next step
    would pass the rung. A run's evaluations need not reach its rung (on a schedule of a few points
    per doubling, rounded to whole steps, the last may sit a quarter doubling below it); one step
    short of it or closer, it was trained there. The one home of this guess, for the rule and its
    models alike, where the caller does not know which runs it trained."""
    reached, step = np.asarray(reached, dtype=float), np.asarray(step, dtype=float)
    return reached + step > rung_compute * (1 - 1e-9)


def run_spread(trend: dict, degree: int) -> float:
    """The sd of the runs' own deviations from the trend (in the metric's units), beyond what their
    evaluations' noise explains: a method-of-moments estimate from each run's weighted mean residual
    m_r (noise variance v_r = the reduced chi-square, at least 1, over its summed weights),
    tau^2 = max(0, sum m_r^2 / (R - degree - 1) - mean v_r), the trend's degree + 1 coefficients
    of A having absorbed that many dimensions of the runs' spread. 0 without residuals by run.

    A run's evaluations share one validation set and one training seed, so a run can sit above or
    below the trend as a whole; and a trend of low degree in log2 n does not follow runs whose A or
    C_mid wander beyond it. Either way the trend's parameter draws put every run on the trend, and a
    rival's distance from a run is surer than it is."""
    if not {"residuals", "run", "weights"} <= set(trend):
        return 0.0
    e, run, w = (np.asarray(trend[k], dtype=float) for k in ("residuals", "run", "weights"))
    groups = np.unique(run)
    if groups.size <= degree + 1:
        return 0.0
    dof = max(e.size - trend["jac"].shape[1], 1)
    scale = max(1.0, float(e @ e) / dof)
    sw = np.sqrt(w)
    m = np.array([np.sum(sw[run == r] * e[run == r]) / np.sum(w[run == r]) for r in groups])
    v = np.array([scale / np.sum(w[run == r]) for r in groups])
    return float(np.sqrt(max(0.0, np.sum(m ** 2) / (groups.size - degree - 1) - np.mean(v))))


def trend_covariance(trend: dict) -> np.ndarray:
    """The trend fit's parameter covariance: (J'J)^-1 times the reduced chi-square when above 1."""
    jac = trend["jac"]
    dof = max(jac.shape[0] - jac.shape[1], 1)
    cov = np.linalg.pinv(jac.T @ jac) * max(1.0, trend["sse"] / dof)
    return (cov + cov.T) / 2                  # pinv's rounding leaves it a hair off symmetric


def draw_trend_curves(trend: dict, n: np.ndarray, R0: float, grid: np.ndarray, rng: np.random.Generator,
                      draws: int = DRAWS, inflation: float = 1.0):
    """`draws` joint draws of a trend fit's parameters (`fits.pooled.fit_trend`; Gaussian, covariance
    `trend_covariance` times inflation^2) as curves of the runs `n` (R,) on `grid` (G,): (curves
    (K, R, G), (A (K, R), log C_mid (K, R), B (K, 1, 1); (K, R, 1) where B has a slope in n)). The draws come from the covariance's
    non-negative part: pinv's rounding can leave an eigenvalue a hair below 0. `grid` may be (R, G),
    one row per run (a collapsed run's grid held, `held_grid`)."""
    k = 2 if trend.get("b_slope", False) else 1             # theta: B (and its slope in log2 n), then
    degree = (trend["theta"].size - k) // 2 - 1             # A's and log C_mid's coefficients
    theta = rng.multivariate_normal(trend["theta"], trend_covariance(trend) * inflation ** 2, size=draws,
                                    method="eigh", check_valid="ignore")
    X = _design(np.log2(np.asarray(n, dtype=float)), trend["centre"], degree)                 # (R, degree + 1)
    A, log_mid = theta[:, k:degree + 1 + k] @ X.T, theta[:, degree + 1 + k:] @ X.T            # (K, R)
    B = np.maximum(theta[:, :1, None], 1e-6)
    if k == 2:                                       # each run's own B, as the fit has it: (K, R, 1)
        B = _efficiency((B[:, :, 0], theta[:, 1:2]), X)[:, :, None]
    at = np.broadcast_to(np.asarray(grid, dtype=float), (A.shape[1], np.shape(grid)[-1]))         # (R, G)
    curves = R0 + (A - R0)[:, :, None] * expit(B * (np.log(at)[None, :, :] - log_mid[:, :, None]))
    return curves, (A, log_mid, B)


def held_grid(grid: np.ndarray, fits: pd.DataFrame) -> np.ndarray:
    """(R, G) `grid` as each run of `fits` sees it: held flat from its hold_from on (a collapsed
    run, `fits.collapse`; a table without the column holds nothing)."""
    hold = fits["hold_from"].to_numpy(dtype=float) if "hold_from" in fits.columns else np.full(len(fits), np.nan)
    return held(np.asarray(grid, dtype=float)[None, :], hold[:, None])
