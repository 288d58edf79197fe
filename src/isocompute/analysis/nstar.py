"""The scaling law of the compute-optimal group size n*(C).

The frontier's `log2 n*` is smoothed by a running average over the compute
grid and fitted with `log2 n* = L + (U - L) / (1 + exp(-k (log10 C - c0)))`
(METHODS.md section 8; paper Fig. 7; with `M` instead of `C` for Fig. 9).
Bootstrap intervals resample each run's evaluation points, refit every curve,
and recompute frontier and law per replicate.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy.optimize import curve_fit
from scipy.special import expit

from isocompute.analysis.fits import USABLE, FitGrid, fit_replicates, run_arrays
from isocompute.analysis.frontier import envelope, study_grid

LAW_PARAMS = ("L", "U", "k", "c0")


@dataclass(frozen=True)
class NStarLaw:
    L: float
    U: float
    k: float
    c0: float
    rmse: float
    n_points: int
    status: str   # 'ok', 'constant', 'too_few_points', 'failed'

    def as_dict(self) -> dict:
        return asdict(self)


def running_average(values, window: int = 5) -> np.ndarray:
    """Centred moving average over `window` grid points (shrinking at the ends,
    NaN-aware); `window=1` returns the values."""
    y = np.asarray(values, dtype=float)
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    if window == 1 or y.size == 0:
        return y.copy()
    valid = np.isfinite(y)
    kernel = np.ones(window)
    num = np.convolve(np.where(valid, y, 0.0), kernel)
    den = np.convolve(valid.astype(float), kernel)
    start = (window - 1) // 2
    num, den = num[start:start + y.size], den[start:start + y.size]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


def n_star_sigmoid(x, L, U, k, c0):
    """`L + (U - L) / (1 + exp(-k (x - c0)))`, x = log10 of compute (or of M)."""
    return L + (U - L) * expit(k * (np.asarray(x, dtype=float) - c0))


def _jac(x, L, U, k, c0):
    s = expit(k * (x - c0))
    ds = s * (1 - s)
    return np.stack([1 - s, s, (U - L) * ds * (x - c0), -(U - L) * ds * k], axis=1)


def fit_n_star_law(x, y, *, k_max: float = 100.0, p0=None, min_points: int = 4) -> NStarLaw:
    """Fit the sigmoid law to points (x = log10 C, y = log2 n*, usually smoothed).

    Bounds: L and U within the data range widened by max(span, 1) on each
    side (the sign of U - L gives the direction), 0 <= k <= `k_max` per decade,
    c0 within the x range widened by its span. A constant y gives status
    'constant' with L = U = y and k = 0.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size < min_points:
        return NStarLaw(np.nan, np.nan, np.nan, np.nan, np.nan, int(x.size), "too_few_points")
    y_lo, y_hi = float(y.min()), float(y.max())
    x_lo, x_hi = float(x.min()), float(x.max())
    if y_hi - y_lo < 1e-9:
        return NStarLaw(y_lo, y_lo, 0.0, 0.5 * (x_lo + x_hi), 0.0, int(x.size), "constant")
    pad = max(y_hi - y_lo, 1.0)
    x_span = max(x_hi - x_lo, 1e-9)
    lower = [y_lo - pad, y_lo - pad, 0.0, x_lo - x_span]
    upper = [y_hi + pad, y_hi + pad, k_max, x_hi + x_span]
    starts = [p0] if p0 is not None and np.all(np.isfinite(p0)) else []
    quarter = max(x.size // 4, 1)
    rising = y[-quarter:].mean() >= y[:quarter].mean()
    L0, U0 = (y_lo, y_hi) if rising else (y_hi, y_lo)
    half = 0.5 * (L0 + U0)
    crossed = np.flatnonzero((y >= half) if rising else (y <= half))
    c00 = float(x[crossed[0]]) if crossed.size else 0.5 * (x_lo + x_hi)
    for k0 in (8.0 / x_span, 30.0 / x_span):
        starts.append([L0, U0, min(k0, k_max * 0.99), c00])
    best = None
    for start in starts:
        start = np.clip(np.asarray(start, dtype=float), lower, upper)
        try:
            popt, _ = curve_fit(n_star_sigmoid, x, y, p0=start, bounds=(lower, upper),
                                jac=_jac, method="trf", maxfev=2000)
        except (RuntimeError, ValueError):
            continue
        rmse = float(np.sqrt(np.mean((n_star_sigmoid(x, *popt) - y) ** 2)))
        if best is None or rmse < best[1] - 1e-12:
            best = (popt, rmse)
        if p0 is not None and best is not None:
            break   # a warm start (bootstrap) is trusted when it converges
    if best is None:
        return NStarLaw(np.nan, np.nan, np.nan, np.nan, np.nan, int(x.size), "failed")
    L, U, k, c0 = (float(v) for v in best[0])
    return NStarLaw(L, U, k, c0, best[1], int(x.size), "ok")


def law_points(frontier: pd.DataFrame, *, x: str = "compute", window: int = 5) -> pd.DataFrame:
    """The points the law is fitted to: log10 x, log2 n*, and its running average."""
    log2_n = np.log2(frontier["n_star"].to_numpy(dtype=float))
    return pd.DataFrame({
        x: frontier[x].to_numpy(dtype=float),
        "log10_x": np.log10(frontier[x].to_numpy(dtype=float)),
        "log2_n_star": log2_n,
        "log2_n_star_avg": running_average(log2_n, window),
        "reward": frontier["reward"].to_numpy(dtype=float),
    })


def n_star_laws(frontier: pd.DataFrame, *, by="B_p", x: str = "compute", window: int = 5,
                k_max: float = 100.0) -> pd.DataFrame:
    """Law fit per group of a frontier table (by=None: the whole table)."""
    groups = [((), frontier)] if by is None else frontier.groupby(by, sort=True)
    rows = []
    for key, f in groups:
        pts = law_points(f, x=x, window=window)
        law = fit_n_star_law(pts["log10_x"], pts["log2_n_star_avg"], k_max=k_max)
        row = {} if by is None else {by: key}
        row.update(law.as_dict())
        rows.append(row)
    cols = ([] if by is None else [by]) + list(NStarLaw.__dataclass_fields__)
    return pd.DataFrame(rows, columns=cols)


# --------------------------------------------------------------------------- bootstrap

def bootstrap_fits(evals: pd.DataFrame, metric: str = "avg@4", *, n_boot: int = 200, seed: int = 0,
                   bin_width: float = 0.01, ema_alpha: float | None = None,
                   min_compute: float | None = None, grid: FitGrid = FitGrid()) -> pd.DataFrame:
    """Refit every run on `n_boot` resamples of its evaluation points.

    Within each run, the points with compute > 0 are drawn with replacement
    (the step-0 evaluation stays as R0), record points are recomputed and the
    curve refitted. Returns one row per (replicate, run): replicate, B_p, n,
    R0, A, B, C_mid, status, compute_min, compute_max.
    """
    rng = np.random.default_rng(seed)
    parts = []
    for (B_p, n), run in evals.groupby(["B_p", "n"], sort=True):
        arr = run_arrays(run, metric, min_compute)
        P = arr["compute"].size
        if np.isnan(arr["R0"]) or arr["compute_range"] is None or n_boot < 1:
            continue
        idx = np.sort(rng.integers(0, P, size=(n_boot, P)), axis=1)
        res = fit_replicates(arr["compute"], arr["values"], arr["R0"], idx, bin_width=bin_width,
                             ema_alpha=ema_alpha, min_compute=min_compute,
                             compute_range=arr["compute_range"], grid=grid)
        parts.append(pd.DataFrame({
            "replicate": np.arange(n_boot), "B_p": B_p, "n": n, "R0": arr["R0"],
            "A": res["A"], "B": res["B"], "C_mid": res["C_mid"], "status": res["status"],
            "compute_min": arr["compute_min"], "compute_max": arr["compute_max"]}))
    cols = ["replicate", "B_p", "n", "R0", "A", "B", "C_mid", "status", "compute_min", "compute_max"]
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat(parts, ignore_index=True)[cols]


def replicate_frontiers(boot: pd.DataFrame, grid, *, extrapolate: bool = False):
    """n*(C) and reward per replicate on `grid`: arrays (R, G), NaN where undefined."""
    boot = boot.sort_values(["replicate", "n", "B_p"], kind="stable")
    reps = boot["replicate"].nunique()
    K = len(boot) // max(reps, 1)
    shape = (reps, K)
    arr = lambda name: boot[name].to_numpy(dtype=float).reshape(shape)  # noqa: E731
    best, reward = envelope(arr("R0"), arr("A"), arr("B"), arr("C_mid"),
                            boot["status"].isin(USABLE).to_numpy().reshape(shape),
                            arr("compute_max"), grid, extrapolate=extrapolate)
    n = arr("n")
    n_star = np.where(best >= 0, np.take_along_axis(n, np.maximum(best, 0), axis=1), np.nan)
    return n_star, reward


def bootstrap_law_intervals(boot: pd.DataFrame, fits: pd.DataFrame, laws: pd.DataFrame, *,
                            by: str | None = "B_p", scale_by_batch: bool = False,
                            grid_points: int = 100, window: int = 5, ci: float = 0.95,
                            k_max: float = 100.0) -> pd.DataFrame:
    """Percentile intervals of L, U, k, c0 from bootstrap replicate fits.

    `fits`/`laws` are the point estimates (they fix each group's grid and the
    warm start). `by`: 'B_p' (Q1), 'B' (Q2, x = steps M when `scale_by_batch`),
    or None (Q3). Adds columns <param>_lo, <param>_hi and n_boot (replicates
    whose law fit succeeded) to `laws`.
    """
    lo_q, hi_q = 50 * (1 - ci), 50 * (1 + ci)
    boot = boot.assign(B=boot["B_p"] * boot["n"])
    fits = fits.assign(B=fits["B_p"] * fits["n"])
    out = laws.copy()
    for name in LAW_PARAMS:
        out[f"{name}_lo"] = np.nan
        out[f"{name}_hi"] = np.nan
    out["n_boot"] = 0
    for i, law in out.iterrows():
        if by is None:
            g_fits, g_boot = fits, boot
        else:
            g_fits, g_boot = fits[fits[by] == law[by]], boot[boot[by] == law[by]]
        # Only runs present in every replicate (runs with a usable base eval).
        g_boot = g_boot[g_boot.set_index(["B_p", "n"]).index.isin(g_fits.set_index(["B_p", "n"]).index)]
        if g_boot.empty:
            continue
        scale = float(law[by]) if scale_by_batch else 1.0
        grid = study_grid(g_fits, grid_points, scale=scale)
        if grid is None:
            continue
        n_star, _ = replicate_frontiers(g_boot, grid * scale)
        p0 = [law[p] for p in LAW_PARAMS] if law["status"] == "ok" else None
        x = np.log10(grid)
        params = []
        for r in range(n_star.shape[0]):
            y = running_average(np.log2(n_star[r]), window)
            fit = fit_n_star_law(x, y, k_max=k_max, p0=p0)
            if fit.status in ("ok", "constant"):
                params.append([fit.L, fit.U, fit.k, fit.c0])
        if not params:
            continue
        params = np.asarray(params)
        for j, name in enumerate(LAW_PARAMS):
            out.loc[i, f"{name}_lo"] = np.percentile(params[:, j], lo_q)
            out.loc[i, f"{name}_hi"] = np.percentile(params[:, j], hi_q)
        out.loc[i, "n_boot"] = len(params)
    return out
