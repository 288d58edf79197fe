"""The adaptive sweep's pooled predictions (`sweep.bands: pooled`, the default).

At 2-4 evaluations per doubling one run's own band (`adaptive.prediction_bands`)
is wide at both edges, so a run near the frontier can almost never be shown to
fall behind it: the rule prunes little. The default analysis pools the runs of
a B_p (`fits.pooled`: A and log C_mid polynomials in log2 n, one B, kept
unless an F-test rejects it), and the rule uses the same model: its parameters'
sampling distribution (Gaussian, from the fit's Jacobian, widened by the reduced
chi-square when above 1) is drawn `DRAWS` times, every draw gives every run of
the B_p a curve, and a run's chance of being n* at some compute ahead of it is
the share of draws in which its curve is the highest of the runs still training
there. The draws are joint, so what the runs share cancels in the comparison,
which per-run envelopes cannot do.

A trend fitted before a run's midpoint extrapolates that run's asymptote from
its neighbours in n, and the Gaussian approximation is overconfident there (on
the crossover benchmark it stopped future winners at the first rung). So the
pooled chance decides only for a run whose own data already pin its future:
its own band at C_max is at most `mature_width` wide. Any other run continues,
and where the trend is not in force (rejected, the common curve, too few runs)
the per-run rule decides, as before.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy.special import expit

from isocompute.analysis.fits.collapse import held
from isocompute.analysis.fits.noise import cell_arrays
from isocompute.analysis.fits.pooled import _design, fit_trend
from isocompute.analysis.fits.sigmoid import USABLE

DRAWS = 4000          # parameter draws per B_p: the tail share 1 - Phi(2.5) = 0.6% is ~25 draws
POOLED_COLUMNS = ["B_p", "n", "p_n_star", "p_revive", "model"]


def trend_covariance(trend: dict) -> np.ndarray:
    """The trend fit's parameter covariance: (J'J)^-1 times the reduced chi-square when above 1."""
    jac = trend["jac"]
    dof = max(jac.shape[0] - jac.shape[1], 1)
    cov = np.linalg.pinv(jac.T @ jac) * max(1.0, trend["sse"] / dof)
    return (cov + cov.T) / 2                  # pinv's rounding leaves it a hair off symmetric


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


def draw_trend_curves(trend: dict, n: np.ndarray, R0: float, grid: np.ndarray, rng: np.random.Generator,
                      draws: int = DRAWS, inflation: float = 1.0):
    """`draws` joint draws of a trend fit's parameters (`fits.pooled.fit_trend`; Gaussian, covariance
    `trend_covariance` times inflation^2) as curves of the runs `n` (R,) on `grid` (G,): (curves
    (K, R, G), (A (K, R), log C_mid (K, R), B (K, 1, 1))). The draws come from the covariance's
    non-negative part: pinv's rounding can leave an eigenvalue a hair below 0. `grid` may be (R, G),
    one row per run (a collapsed run's grid held, `held_grid`)."""
    degree = (trend["theta"].size - 1) // 2 - 1             # theta: B, then A's and log C_mid's coefficients
    theta = rng.multivariate_normal(trend["theta"], trend_covariance(trend) * inflation ** 2, size=draws,
                                    method="eigh", check_valid="ignore")
    X = _design(np.log2(np.asarray(n, dtype=float)), trend["centre"], degree)                 # (R, degree + 1)
    A, log_mid = theta[:, 1:degree + 2] @ X.T, theta[:, degree + 2:] @ X.T                    # (K, R)
    B = np.maximum(theta[:, :1, None], 1e-6)
    at = np.broadcast_to(np.asarray(grid, dtype=float), (A.shape[1], np.shape(grid)[-1]))         # (R, G)
    curves = R0 + (A - R0)[:, :, None] * expit(B * (np.log(at)[None, :, :] - log_mid[:, :, None]))
    return curves, (A, log_mid, B)


def held_grid(grid: np.ndarray, fits: pd.DataFrame) -> np.ndarray:
    """(R, G) `grid` as each run of `fits` sees it: held flat from its hold_from on (a collapsed
    run, `fits.collapse`; a table without the column holds nothing)."""
    hold = fits["hold_from"].to_numpy(dtype=float) if "hold_from" in fits.columns else np.full(len(fits), np.nan)
    return held(np.asarray(grid, dtype=float)[None, :], hold[:, None])


def pooled_chances(seen: pd.DataFrame, fits: pd.DataFrame, ahead: Horizon, *, metric: str, degree: int,
                   seed: int = 0) -> pd.DataFrame:
    """Each run's chance of being n* at some compute ahead of it, under its B_p's trend model.

    `seen`: the evaluations up to the rung; `fits`: their noise fits (`fitter.fit_study`, with the
    columns model and R0). Only B_p whose runs are pooled by the trend ('model' trend) get a chance;
    the runs still training at the rung (their last evaluation within one step of it) are the
    competitors, on the computes `ahead` (from the rung to c_max). Returns
    POOLED_COLUMNS, one row per run of such a B_p: p_n_star for a run still training (NaN for a
    run that stopped earlier), p_revive for a run that stopped earlier (NaN for the others): the
    share of draws in which its trend curve, were it trained on, would be the highest at some
    compute ahead.
    Deterministic: the draws are seeded by `seed`.
    """
    rows = []
    grid, rung_compute = ahead.grid, ahead.c_from
    cells = dict(iter(seen.groupby(["B_p", "n"], sort=False)))
    rng = np.random.default_rng(seed)
    for B_p, group in fits.groupby("B_p", sort=True):
        g = group[group["status"].isin(USABLE) & (group["model"] == "trend")].sort_values("n")
        if len(g) < 2 or not all((B_p, n) in cells for n in g["n"]):
            continue
        R0 = float(g["R0"].iloc[0])
        points = [{"n": float(n), **cell_arrays(cells[(B_p, n)], metric)} for n in g["n"]]
        trend = fit_trend(points, R0, g[["n", "A", "B", "C_mid"]], degree=degree)
        if trend is None:
            continue
        curves, (A, log_mid, B) = draw_trend_curves(trend, g["n"].to_numpy(dtype=float), R0, held_grid(grid, g),
                                                    rng)
        reached = g["compute_max"].to_numpy(dtype=float)
        active = reached + B_p * g["n"].to_numpy(dtype=float) > rung_compute * (1 - 1e-9)
        curves = np.where(active[None, :, None], curves, -np.inf)
        top = curves.max(axis=1)                                                             # (K, G)
        for i, n in enumerate(g["n"]):
            ahead = grid > reached[i] * (1 + 1e-9)
            chance = float(((curves[:, i, :] >= top - 1e-12) & ahead[None, :]).any(axis=1).mean())
            # A stopped run, put back among the competitors: its trend curve against theirs.
            own = R0 + (A[:, i] - R0)[:, None] * expit(B[:, 0] * (np.log(held_grid(grid, g)[i])[None, :]
                                                                   - log_mid[:, i, None]))
            revive = float((own >= top - 1e-12).any(axis=1).mean())
            rows.append({"B_p": B_p, "n": n, "p_n_star": chance if active[i] else np.nan,
                         "p_revive": np.nan if active[i] else revive, "model": "trend"})
    return pd.DataFrame(rows, columns=POOLED_COLUMNS)
