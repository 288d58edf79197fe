"""The scaling law of the compute-optimal group size n*(C).

The frontier's `log2 n*` is smoothed by a running average over the compute
grid and fitted with `log2 n* = L + (U - L) / (1 + exp(-k (log10 C - c0)))`
(docs/methods.md section 8; paper Fig. 7; with `M` instead of `C` for Fig. 9).
Its intervals come from resampling (module `bootstrap`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy.optimize import curve_fit
from scipy.special import expit

from isocompute.analysis.fits.records import running_average


LAW_PARAMS = ("L", "U", "k", "c0")

# Law statuses (the status column of n_star_fit.csv and its draws), as fits.sigmoid names the
# curves': a law with parameters to read is fitted, or one n* throughout (constant).
LAW_OK, LAW_CONSTANT, LAW_TOO_FEW, LAW_FAILED = "ok", "constant", "too_few_points", "failed"
LAW_STATUSES = (LAW_OK, LAW_CONSTANT, LAW_TOO_FEW, LAW_FAILED)
GOOD_LAW = (LAW_OK, LAW_CONSTANT)


@dataclass(frozen=True)
class NStarLaw:
    L: float
    U: float
    k: float
    c0: float
    rmse: float
    n_points: int
    status: str   # one of LAW_STATUSES

    def as_dict(self) -> dict:
        return asdict(self)


def n_star_sigmoid(x, L, U, k, c0):
    """`L + (U - L) / (1 + exp(-k (x - c0)))`, x = log10 of compute (or of M)."""
    return L + (U - L) * expit(k * (np.asarray(x, dtype=float) - c0))


def _jac(x, L, U, k, c0):
    s = expit(k * (x - c0))
    ds = s * (1 - s)
    return np.stack([1 - s, s, (U - L) * ds * (x - c0), -(U - L) * ds * k], axis=1)


@dataclass(frozen=True)
class LawGrid:
    """Search grid of the law fit: (k, c0) on a grid, L and U by least squares."""

    k_max: float = 100.0          # per decade of compute; larger is a step
    k_points: int = 24
    c0_points: int = 40
    refine_points: int = 7        # per axis, around the best cell ...
    refine_levels: int = 2        # ... this many times, each 4x finer


class _Curves(NamedTuple):
    """The curves a law search fits, (R', G), centred, and what every (k, c0) cell's solve
    shares: Wf (1 for a point used, 0 otherwise), Y0 (centred y, 0 where unused), xw (x, 0
    where not finite), the sums over points sw, sy, yy of w, y, y^2 (R', 1), and the bounds
    [lo, hi] (R', 1) L and U are clipped to."""

    Wf: np.ndarray
    Y0: np.ndarray
    xw: np.ndarray
    sw: np.ndarray
    sy: np.ndarray
    yy: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


def _solve_lu(curves: _Curves, ws, ws2, ys):
    """Least-squares L, U for fixed (k, c0), clipped to [lo, hi]; SSE (inf if singular).

    With t = 1 - s, the normal equations need only sums over points of w, y,
    w*s, w*s^2 and y*s (w: 1 for a point used, 0 otherwise).
    """
    sw, sy, yy = curves.sw, curves.sy, curves.yy
    a00, a01, a11 = sw - 2 * ws + ws2, ws - ws2, ws2
    b0, b1 = sy - ys, ys
    det = a00 * a11 - a01 * a01
    ok = det > 1e-10 * np.maximum(a00 * a11, 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        L = np.clip((a11 * b0 - a01 * b1) / det, curves.lo, curves.hi)
        U = np.clip((a00 * b1 - a01 * b0) / det, curves.lo, curves.hi)
    sse = yy - 2 * (L * b0 + U * b1) + L * L * a00 + 2 * L * U * a01 + U * U * a11
    return L, U, np.where(ok, sse, np.inf)


def fit_n_star_laws(x, Y, *, grid: LawGrid = LawGrid(), min_points: int = 4) -> dict:
    """Vectorised law fit of many curves Y (R, G) sharing x (G,) (bootstrap replicates).

    Returns arrays L, U, k, c0, rmse, n_points, status. Non-finite y are left
    out. Bounds as in `fit_n_star_law`.
    """
    x = np.asarray(x, dtype=float)
    Y = np.atleast_2d(np.asarray(Y, dtype=float))
    R, G = Y.shape
    out = {name: np.full(R, np.nan) for name in ("L", "U", "k", "c0", "rmse")}
    out["n_points"] = np.zeros(R, dtype=int)
    out["status"] = np.full(R, LAW_TOO_FEW, dtype=object)
    if G == 0:  # an empty frontier (e.g. every curve degenerate): nothing to fit
        return out
    W = np.isfinite(Y) & np.isfinite(x)[None, :]
    out["n_points"] = n_points = W.sum(axis=1)
    with np.errstate(invalid="ignore"):
        y_lo = np.where(W, Y, np.inf).min(axis=1)
        y_hi = np.where(W, Y, -np.inf).max(axis=1)
    enough = n_points >= min_points
    constant = enough & (y_hi - y_lo < 1e-9)
    xs = x[np.isfinite(x)]
    if xs.size == 0:
        return out
    x_lo, x_hi = float(xs.min()), float(xs.max())
    out["status"][constant] = LAW_CONSTANT
    out["L"][constant] = out["U"][constant] = y_lo[constant]
    out["k"][constant] = 0.0
    out["c0"][constant] = 0.5 * (x_lo + x_hi)
    out["rmse"][constant] = 0.0
    todo = np.flatnonzero(enough & ~constant)
    if todo.size == 0:
        return out
    curves, centre = _centred(x, np.where(W, Y, 0.0)[todo], W.astype(float)[todo], y_lo[todo], y_hi[todo])
    k_best, c0_best, L_best, U_best, sse_best = _refine_law(curves, _coarse_law(curves, x_lo, x_hi, grid), grid)
    finite = np.isfinite(sse_best)
    out["L"][todo] = np.where(finite, L_best + centre[:, 0], np.nan)
    out["U"][todo] = np.where(finite, U_best + centre[:, 0], np.nan)
    out["k"][todo] = np.where(finite, k_best, np.nan)
    out["c0"][todo] = np.where(finite, c0_best, np.nan)
    out["rmse"][todo] = np.sqrt(np.maximum(sse_best, 0) / n_points[todo])
    out["status"][todo] = np.where(finite, LAW_OK, LAW_FAILED)
    return out


def _centred(x, Y0, Wf, y_lo, y_hi) -> tuple[_Curves, np.ndarray]:
    """The curves to fit, each centred (L and U shift with it: smaller sums, less
    cancellation), and their centres (R', 1)."""
    centre = (Y0.sum(axis=1) / Wf.sum(axis=1))[:, None]
    Y0 = np.where(Wf > 0, Y0 - centre, 0.0)
    pad = np.maximum(y_hi - y_lo, 1.0)
    lo, hi = (y_lo - pad)[:, None] - centre, (y_hi + pad)[:, None] - centre
    xw = np.where(np.isfinite(x), x, 0.0)
    yy = (Y0 * Y0).sum(axis=1)[:, None]
    sw, sy = Wf.sum(axis=1)[:, None], Y0.sum(axis=1)[:, None]
    return _Curves(Wf, Y0, xw, sw, sy, yy, lo, hi), centre


def _coarse_law(curves: _Curves, x_lo: float, x_hi: float, grid: LawGrid):
    """The coarse (k, c0) grid, shared by all curves (sums by matrix products): each curve's
    best cell (k, c0, L, U, sse) and the grid's steps (log k, c0)."""
    x_span = max(x_hi - x_lo, 1e-9)
    k_grid = np.geomspace(0.1 / x_span, grid.k_max, grid.k_points)
    c0_grid = np.linspace(x_lo - x_span, x_hi + x_span, grid.c0_points)
    kk, cc = np.meshgrid(k_grid, c0_grid, indexing="ij")
    s = expit(kk.reshape(-1, 1) * (curves.xw[None, :] - cc.reshape(-1, 1)))     # (F, G)
    Wf, Y0 = curves.Wf, curves.Y0
    ws, ws2, ys = (s @ Wf.T).T, ((s * s) @ Wf.T).T, (s @ Y0.T).T                 # (R', F)
    L, U, sse = _solve_lu(curves, ws, ws2, ys)
    j = np.argmin(sse, axis=1)
    ik, ic = np.divmod(j, grid.c0_points)
    r = np.arange(Y0.shape[0])
    log_k_step = np.log(k_grid[1] / k_grid[0]) if grid.k_points > 1 else 0.0
    c0_step = c0_grid[1] - c0_grid[0] if grid.c0_points > 1 else 0.0
    return (k_grid[ik], c0_grid[ic], L[r, j], U[r, j], sse[r, j]), (log_k_step, c0_step)


def _refine_law(curves: _Curves, coarse, grid: LawGrid):
    """Local refinement around each curve's best coarse cell: (k, c0, L, U, sse)."""
    (k_best, c0_best, L_best, U_best, sse_best), (log_k_step, c0_step) = coarse
    Wf, Y0, xw = curves.Wf, curves.Y0, curves.xw
    r = np.arange(Y0.shape[0])
    m = grid.refine_points
    u = np.linspace(-1.0, 1.0, m)
    for _ in range(grid.refine_levels if m > 1 else 0):
        kf = np.minimum(k_best[:, None, None] * np.exp(log_k_step * u)[None, :, None], grid.k_max)
        cf = c0_best[:, None, None] + c0_step * u[None, None, :]
        kf, cf = (a.reshape(len(r), -1) for a in np.broadcast_arrays(kf, cf))    # (R', F)
        s = expit(kf[:, :, None] * (xw[None, None, :] - cf[:, :, None]))         # (R', F, G)
        ws, ys = np.matmul(s, Wf[:, :, None])[..., 0], np.matmul(s, Y0[:, :, None])[..., 0]
        np.multiply(s, s, out=s)
        ws2 = np.matmul(s, Wf[:, :, None])[..., 0]
        L, U, sse = _solve_lu(curves, ws, ws2, ys)
        j = np.argmin(sse, axis=1)
        better = sse[r, j] <= sse_best
        k_best, c0_best = np.where(better, kf[r, j], k_best), np.where(better, cf[r, j], c0_best)
        L_best, U_best = np.where(better, L[r, j], L_best), np.where(better, U[r, j], U_best)
        sse_best = np.where(better, sse[r, j], sse_best)
        log_k_step, c0_step = log_k_step * 2 / (m - 1), c0_step * 2 / (m - 1)
    return k_best, c0_best, L_best, U_best, sse_best


def fit_n_star_law(x, y, *, grid: LawGrid = LawGrid(), min_points: int = 4, polish: bool = False) -> NStarLaw:
    """Fit the sigmoid law to points (x = log10 C, y = log2 n*, usually smoothed).

    L and U are bounded to the data range widened by max(span, 1) on each side
    (the sign of U - L gives the direction), 0 < k <= `grid.k_max` per decade,
    c0 within the x range widened by its span. A grid search over (k, c0),
    refined locally, with L, U by least squares: the same estimator as the
    bootstrap replicates, so that intervals and estimate agree; `polish` adds
    a bounded least-squares polish (scipy curve_fit). A constant y gives
    status 'constant' (L = U = y, k = 0).
    """
    res = fit_n_star_laws(x, np.asarray(y, dtype=float)[None, :], grid=grid, min_points=min_points)
    law = NStarLaw(*(float(res[p][0]) for p in ("L", "U", "k", "c0", "rmse")),
                   int(res["n_points"][0]), str(res["status"][0]))
    if not polish or law.status != LAW_OK:
        return law
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    pad = max(y.max() - y.min(), 1.0)
    x_span = max(x.max() - x.min(), 1e-9)
    lower = [y.min() - pad, y.min() - pad, 0.0, x.min() - x_span]
    upper = [y.max() + pad, y.max() + pad, grid.k_max, x.max() + x_span]
    p0 = np.clip([law.L, law.U, law.k, law.c0], lower, upper)
    try:
        popt, _ = curve_fit(n_star_sigmoid, x, y, p0=p0, bounds=(lower, upper), jac=_jac,
                            method="trf", max_nfev=200)
    except (RuntimeError, ValueError):
        return law
    rmse = float(np.sqrt(np.mean((n_star_sigmoid(x, *popt) - y) ** 2)))
    if rmse <= law.rmse:
        law = NStarLaw(*(float(v) for v in popt), rmse, law.n_points, LAW_OK)
    return law


def law_points(frontier: pd.DataFrame, *, x: str = "compute", window: int = 5) -> pd.DataFrame:
    """The points the law is fitted to: log10 x, log2 n*, and its running average
    (only over the rows marked `comparable`, where the table has that column)."""
    log2_n = np.log2(frontier["n_star"].to_numpy(dtype=float))
    if "comparable" in frontier.columns:
        log2_n = np.where(frontier["comparable"].to_numpy(dtype=bool), log2_n, np.nan)
    return pd.DataFrame({
        x: frontier[x].to_numpy(dtype=float),
        "log10_x": np.log10(frontier[x].to_numpy(dtype=float)),
        "log2_n_star": log2_n,
        "log2_n_star_avg": running_average(log2_n, window),
        "reward": frontier["reward"].to_numpy(dtype=float),
    })


def n_star_laws(frontier: pd.DataFrame, *, by="B_p", x: str = "compute", window: int = 5,
                grid: LawGrid = LawGrid()) -> pd.DataFrame:
    """Law fit per group of a frontier table (by=None: the whole table)."""
    groups = [((), frontier)] if by is None else frontier.groupby(by, sort=True)
    rows = []
    for key, f in groups:
        pts = law_points(f, x=x, window=window)
        law = fit_n_star_law(pts["log10_x"], pts["log2_n_star_avg"], grid=grid)
        row = {} if by is None else {by: key}
        row.update(law.as_dict())
        rows.append(row)
    cols = ([] if by is None else [by]) + list(NStarLaw.__dataclass_fields__)
    return pd.DataFrame(rows, columns=cols)
