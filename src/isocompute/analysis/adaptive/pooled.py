"""LEGACY: the adaptive sweep's pooled rule (`sweep.bands: pooled`), kept to replay studies
run with it; the default is the shared model (`adaptive.shared`, `sweep.bands: shared`).

At 2-4 evaluations per doubling one run's own band (`adaptive.rule.prediction_bands`)
is wide at both edges, so a run near the frontier can almost never be shown to
fall behind it: the rule prunes little. The analysis pools the runs of
a B_p (`fits.pooled`: A and log C_mid polynomials in log2 n, one B, kept
unless an F-test rejects it), and this rule uses the same model, drawn (`adaptive.draws`):
a run's chance of being n* at some compute ahead of it is
the share of draws in which its curve is the highest of the runs still training
there. The draws are joint, so what the runs share cancels in the comparison,
which per-run envelopes cannot do.

A trend fitted before a run's midpoint extrapolates that run's asymptote from
its neighbours in n, and the Gaussian approximation is overconfident there (on
the crossover benchmark it stopped future winners at the first rung). So the
pooled chance decides only for a run whose own data already pin its future:
its own band at C_max is at most `mature_width` (legacy too) wide. Any other run continues,
and where the trend is not in force (rejected, the common curve, too few runs)
the per-run rule decides, as before. The shared model asks the question the study is judged
by (regret: is a run going on within epsilon of it?) instead of exact n*, and needs no
`mature_width`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit
from scipy.stats import norm

from isocompute.analysis.adaptive.draws import Horizon, draw_trend_curves, held_grid, trained_to_rung
from isocompute.analysis.fits.noise import cell_arrays
from isocompute.analysis.fits.pooled import fit_trend
from isocompute.analysis.fits.sigmoid import USABLE

POOLED_COLUMNS = ["B_p", "n", "p_n_star", "p_revive", "model"]


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
        active = trained_to_rung(reached, B_p * g["n"].to_numpy(dtype=float), rung_compute)
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


def apply_pooled(decisions: pd.DataFrame, chances: pd.DataFrame, *, z: float, mature_width: float) -> pd.DataFrame:
    """The per-run decisions (`adaptive.rule.prune`) with the pooled trend's verdict on the runs it may judge (pure).

    A run with a pooled chance (`pooled_chances`) that the per-run rule lets go on
    because its band reaches the frontier, and whose own band at C_max is at most `mature_width`
    wide, goes on only if its chance of being n* ahead is at least 1 - Phi(z). The other decisions
    (reached C_max, too few evaluations, next to n*, a band already below the frontier, a band too
    wide to trust the trend for) stand; every run gets its chance in p_n_star.
    """
    out = decisions.copy()
    if chances.empty:
        return out
    chance = out[["B_p", "n"]].merge(chances, on=["B_p", "n"], how="left")["p_n_star"].to_numpy(dtype=float)
    out["p_n_star"] = chance
    floor = float(norm.sf(z))
    judged = (np.isfinite(chance) & out["reason"].str.startswith("band reaches").to_numpy()
              & (out["band_width_at_c_max"].to_numpy(dtype=float) <= mature_width))
    for i in np.flatnonzero(judged):
        width = out.at[i, "band_width_at_c_max"]
        go = chance[i] >= floor
        out.at[i, "continue"] = bool(go)
        out.at[i, "reason"] = (f"pooled trend: n* ahead in {chance[i]:.1%} of its draws "
                               f"({'>=' if go else '<'} {floor:.1%}; own band at C_max {width:.3f} wide)")
    return out
