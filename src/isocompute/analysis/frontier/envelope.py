"""Compute-optimal frontiers: the upper envelope of the fitted curves.

On a log-spaced compute grid, `F(C) = max over runs of R_run(C)` and `n*(C)`
(and `B_p*(C)`) is the run attaining it (docs/methods.md section 8). Studies cut the
runs differently: Q1 fixes `B_p` and varies `n`; Q2 fixes `B = B_p * n` and
puts the number of steps `M` on the x-axis; Q3 takes all cells jointly.
With `extrapolate=True` (the paper's procedure) each fitted curve counts over
the whole grid, as the envelope of the fitted curves is defined (a run that
plateaued keeps its plateau); `extrapolate=False` (the noise method's default)
uses each curve only where its run has data: from its first evaluation at
positive compute to its last.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from isocompute.analysis.fits.collapse import held
from isocompute.analysis.fits.sigmoid import USABLE, sigmoid_reward


def compute_grid(compute, points: int = 100, lo: float | None = None, hi: float | None = None) -> np.ndarray:
    """`points` log-spaced values over the positive range of `compute` (or [lo, hi])."""
    c = np.asarray(compute, dtype=float)
    c = c[np.isfinite(c) & (c > 0)]
    lo = float(c.min()) if lo is None else float(lo)
    hi = float(c.max()) if hi is None else float(hi)
    if not (0 < lo <= hi):
        raise ValueError(f"compute grid needs 0 < lo <= hi, got lo={lo}, hi={hi}")
    return np.geomspace(lo, hi, points)


class Curves(NamedTuple):
    """K fitted curves, each field an array (..., K) (a leading axis holds bootstrap
    replicates): the sigmoid's parameters, whether the fit is usable, the compute range of
    its run's data (`compute_min` None: no lower end), and where a collapsed run's curve is held
    flat (`hold_from`, NaN or None: nowhere; `fits.collapse`)."""

    R0: np.ndarray
    A: np.ndarray
    B: np.ndarray
    C_mid: np.ndarray
    usable: np.ndarray
    compute_max: np.ndarray
    compute_min: np.ndarray | None = None
    hold_from: np.ndarray | None = None

    @classmethod
    def of(cls, table: pd.DataFrame, shape=None) -> "Curves":
        """The curves of a fits (or bootstrap) table, in its row order, as arrays of `shape`."""
        shape = (len(table),) if shape is None else shape
        col = lambda name: table[name].to_numpy(dtype=float).reshape(shape)  # noqa: E731
        return cls(col("R0"), col("A"), col("B"), col("C_mid"), table["status"].isin(USABLE).to_numpy().reshape(shape),
                   col("compute_max"), col("compute_min"), col("hold_from") if "hold_from" in table.columns else None)


def curve_values(curves: Curves, grid, *, extrapolate: bool = True) -> np.ndarray:
    """(..., K, G) each curve's reward on `grid`, NaN where the curve is not usable or (without
    `extrapolate`) outside [compute_min, compute_max]: what the frontier takes the maximum of. A
    held curve (`hold_from`, a collapsed run) is flat from hold_from on."""
    g = np.asarray(grid, dtype=float)
    expand = lambda x: np.asarray(x, dtype=float)[..., None]  # noqa: E731
    at = g if curves.hold_from is None else held(g, expand(curves.hold_from))     # a collapsed run: held flat
    values = sigmoid_reward(at, expand(curves.R0), expand(curves.A), expand(curves.B), expand(curves.C_mid))
    ok = np.asarray(curves.usable, dtype=bool)[..., None] & np.isfinite(values)   # (..., K, G)
    if not extrapolate:
        ok &= g <= expand(curves.compute_max) * (1 + 1e-12)
        if curves.compute_min is not None:
            ok &= g >= expand(curves.compute_min) * (1 - 1e-12)
    return np.where(ok, values, np.nan)


def run_curves(fits: pd.DataFrame, grid, *, extrapolate: bool = True) -> np.ndarray:
    """(K, G) `curve_values` of the runs of a fits table, in its row order."""
    return curve_values(Curves.of(fits), grid, extrapolate=extrapolate)


def envelope(curves: Curves, grid, *, extrapolate: bool = True, last: bool = False):
    """Index of the best curve and its reward at each grid point.

    `curves` holds arrays (..., K) over K curves (a leading axis holds
    bootstrap replicates); returns (best (..., G) int, reward (..., G)), with
    best = -1 where no curve is defined. Ties go to the earlier curve. Without
    `extrapolate`, a curve is defined on [compute_min, compute_max]. With `last`, (best, best_last, reward):
    best_last the last curve tied at the maximum (curves with identical
    values, e.g. one common curve for every n, are all optimal).
    """
    values = curve_values(curves, grid, extrapolate=extrapolate)
    values = np.where(np.isnan(values), -np.inf, values)
    best = np.argmax(values, axis=-2)
    reward = np.take_along_axis(values, best[..., None, :], axis=-2)[..., 0, :]
    none = ~np.isfinite(reward)
    if last:
        K = values.shape[-2]
        best_last = K - 1 - np.argmax(values[..., ::-1, :], axis=-2)
        return np.where(none, -1, best), np.where(none, -1, best_last), np.where(none, np.nan, reward)
    return np.where(none, -1, best), np.where(none, np.nan, reward)


def frontier(fits: pd.DataFrame, grid, *, extrapolate: bool = True) -> pd.DataFrame:
    """Upper envelope of the fitted curves in `fits` on `grid`.

    Returns columns compute, n_star, B_p_star, reward (NaN where no usable
    curve covers the grid point). Ties go to the smaller n, then smaller B_p.
    """
    fits = fits.sort_values(["n", "B_p"], kind="stable").reset_index(drop=True)
    col = lambda name: fits[name].to_numpy(dtype=float)  # noqa: E731
    best, reward = envelope(Curves.of(fits), grid, extrapolate=extrapolate)
    pick = lambda name: np.where(best >= 0, col(name)[np.maximum(best, 0)], np.nan)  # noqa: E731
    return pd.DataFrame({"compute": np.asarray(grid, dtype=float), "n_star": pick("n"),
                         "B_p_star": pick("B_p"), "reward": reward})


def _usable(fits: pd.DataFrame) -> pd.DataFrame:
    return fits[fits["status"].isin(USABLE)]


def study_grid(fits: pd.DataFrame, points: int = 100, scale: float = 1.0, *,
               extrapolate: bool = True) -> np.ndarray | None:
    """Grid over the observed range of the usable runs (compute / scale); None if empty.

    Without `extrapolate`, the last point is the smallest end among the runs that end
    within the last grid step: on an axis that is not the sweep's own (tokens), runs with
    one budget end a little apart, and a last point at the furthest end would compare
    that one run alone (its frontier drops there). Runs that end earlier (an adaptive
    sweep's stopped runs) leave the grid as it is."""
    ok = _usable(fits)
    if ok.empty:
        return None
    lo = float(ok["compute_min"].min()) / scale
    hi = float(ok["compute_max"].max()) / scale
    if not (np.isfinite(lo) and np.isfinite(hi) and 0 < lo <= hi):
        return None
    grid = np.geomspace(lo, hi, points)
    if not extrapolate and points >= 2:
        ends = ok["compute_max"].to_numpy(dtype=float) / scale
        last = ends[ends >= grid[-2]].min()
        grid[-1] = max(last, grid[-2])
    return grid


def comparable(fits: pd.DataFrame, grid, *, extrapolate: bool) -> np.ndarray:
    """Where on `grid` every usable run of `fits` can enter the frontier: without
    `extrapolate`, from the latest first evaluation on (below it the small-n runs
    alone have data, and n* is the smallest n by default, not by evidence)."""
    g = np.asarray(grid, dtype=float)
    ok = _usable(fits)
    if extrapolate or ok.empty:
        return np.ones(g.shape, dtype=bool)
    return g >= float(ok["compute_min"].max()) * (1 - 1e-12)


def frontier_fixed_bp(fits: pd.DataFrame, *, grid_points: int = 100, min_runs: int = 1,
                      extrapolate: bool = True) -> pd.DataFrame:
    """Q1: for each B_p with >= `min_runs` runs, the frontier over n. Columns B_p,
    compute, n_star, reward, comparable (`comparable`: the n* law is fitted there)."""
    parts = []
    for B_p, group in fits.groupby("B_p", sort=True):
        if group["n"].nunique() < min_runs:
            continue
        grid = study_grid(group, grid_points, extrapolate=extrapolate)
        if grid is None:
            continue
        f = frontier(group, grid, extrapolate=extrapolate)
        f.insert(0, "B_p", B_p)
        f["comparable"] = comparable(group, grid, extrapolate=extrapolate)
        parts.append(f.drop(columns="B_p_star"))
    return _concat(parts, ["B_p", "compute", "n_star", "reward", "comparable"])


def frontier_fixed_batch(fits: pd.DataFrame, *, grid_points: int = 100, batch_sizes=None,
                         min_runs: int = 2, extrapolate: bool = True) -> pd.DataFrame:
    """Q2: for each rollout batch B = B_p * n with >= `min_runs` usable runs, the
    frontier against the number of steps M. Columns B, M, compute, n_star,
    B_p_star (= B / n_star), reward."""
    # Not a column named B: in `fits` that is the sigmoid's exponent.
    batch = (fits["B_p"] * fits["n"]).rename("batch")
    parts = []
    for B, group in fits.groupby(batch, sort=True):
        if batch_sizes is not None and B not in set(batch_sizes):
            continue
        if len(_usable(group)) < min_runs:
            continue
        steps = study_grid(group, grid_points, scale=float(B), extrapolate=extrapolate)
        if steps is None:
            continue
        f = frontier(group, steps * B, extrapolate=extrapolate)
        f.insert(0, "M", steps)
        f.insert(0, "B", B)
        parts.append(f)
    return _concat(parts, ["B", "M", "compute", "n_star", "B_p_star", "reward"])


def frontier_joint(fits: pd.DataFrame, *, grid_points: int = 100, extrapolate: bool = True) -> pd.DataFrame:
    """Q3: all (B_p, n) cells jointly. Columns compute, n_star, B_p_star, reward."""
    grid = study_grid(fits, grid_points, extrapolate=extrapolate)
    if grid is None:
        return pd.DataFrame(columns=["compute", "n_star", "B_p_star", "reward"])
    return frontier(fits, grid, extrapolate=extrapolate)


def _concat(parts, columns) -> pd.DataFrame:
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True)[columns]
