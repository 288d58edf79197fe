"""Record-breaking points: the first stage of the analysis chain.

Each run's evaluation curve is reduced to the points that enter a new, higher
bin of the metric (docs/methods.md section 6); the paper's sigmoid fits use only
these. The array core (`record_mask`) is shared with the bootstrap, which
applies it to many resampled curves at once. A running maximum is lifted by
noise, so the noise method fits all points instead and keeps records only to
show them, with a rule tied to each evaluation's standard error: a point is a
record when it beats the standing record by more than z standard errors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.signal import lfilter

from isocompute.analysis.inputs.check import se_column
from isocompute.config import schema_defaults

# Standard errors a point must rise above the standing record to count as one
# in the noise method's records (which are shown, not fitted): analysis.record_z.
RECORD_Z = schema_defaults("analysis")["record_z"]

# Rounding applied to metric / bin_width before the floor, so that values such
# as 0.12 / 0.01 = 11.999999999999998 land in bin 12 and not 11.
BIN_DECIMALS = 9


@dataclass(frozen=True)
class RecordRule:
    """Which evaluations of a run are its record-breaking points (the paper's method): new
    bins of width `bin_width` of the `ema_alpha`-smoothed curve, at compute >= `min_compute`."""

    bin_width: float = 0.01
    ema_alpha: float | None = None
    min_compute: float | None = None


def metric_bins(values, bin_width: float = 0.01, decimals: int = BIN_DECIMALS) -> np.ndarray:
    """`floor(metric / w)` with float edges rounded away (integer array)."""
    if not bin_width > 0:
        raise ValueError(f"bin_width must be > 0, got {bin_width!r}")
    ratio = np.round(np.asarray(values, dtype=float) / bin_width, decimals)
    return np.floor(ratio).astype(np.int64)


def ema(values, alpha: float | None, axis: int = -1) -> np.ndarray:
    """Exponential moving average `s_t = alpha*x_t + (1-alpha)*s_{t-1}`, `s_0 = x_0`.

    `alpha=None` (or 1) returns the values unchanged: smoothing is off by default.
    """
    x = np.asarray(values, dtype=float)
    if alpha is None or alpha == 1 or x.shape[axis] == 0:
        return x.copy()
    if not 0 < alpha <= 1:
        raise ValueError(f"EMA alpha must be in (0, 1], got {alpha!r}")
    x0 = np.take(x, [0], axis=axis)
    # Initial state chosen so that s_0 = x_0 exactly.
    out, _ = lfilter([alpha], [1.0, alpha - 1.0], x, axis=axis, zi=(1.0 - alpha) * x0)
    return out


def running_average(values, window: int = 5) -> np.ndarray:
    """Centred moving average over `window` grid points along the last axis
    (shrinking at the ends, NaN-aware); `window=1` returns the values."""
    y = np.asarray(values, dtype=float)
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    if window == 1 or y.shape[-1] == 0:
        return y.copy()
    G = y.shape[-1]
    valid = np.isfinite(y)
    zero = np.zeros(y.shape[:-1] + (1,))
    num = np.concatenate([zero, np.cumsum(np.where(valid, y, 0.0), axis=-1)], axis=-1)
    den = np.concatenate([zero, np.cumsum(valid, axis=-1)], axis=-1)
    after = (window - 1) // 2
    i = np.arange(G)
    hi = np.minimum(i + after + 1, G)
    lo = np.maximum(i - (window - 1 - after), 0)
    total, count = num[..., hi] - num[..., lo], den[..., hi] - den[..., lo]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def record_mask(values, bin_width: float = 0.01, ema_alpha: float | None = None) -> np.ndarray:
    """Boolean mask of record-breaking points along the last axis.

    `values` (..., K) are ordered by increasing compute. The first point is a
    record; a later point is one when its bin is strictly higher than the bins
    of all earlier points, so of several points entering the same new bin only
    the earliest is kept.
    """
    v = ema(values, ema_alpha)
    if v.shape[-1] == 0:
        return np.zeros(v.shape, dtype=bool)
    bins = metric_bins(v, bin_width)
    running = np.maximum.accumulate(bins, axis=-1)
    mask = np.empty(bins.shape, dtype=bool)
    mask[..., 0] = True
    mask[..., 1:] = bins[..., 1:] > running[..., :-1]
    return mask


def significant_record_mask(values, se, z: float = RECORD_Z) -> np.ndarray:
    """Boolean mask of significant records along the last axis.

    The first point is a record; a later point is one when it exceeds the
    standing record (the last accepted one) by more than `z` times its own
    standard error `se` (broadcast against `values`).
    """
    v = np.asarray(values, dtype=float)
    e = np.broadcast_to(np.asarray(se, dtype=float), v.shape)
    mask = np.zeros(v.shape, dtype=bool)
    if v.shape[-1] == 0:
        return mask
    if v.ndim == 1:
        return _significant_records(v, z * e, mask)
    mask[..., 0] = True
    best = v[..., 0].copy()
    for j in range(1, v.shape[-1]):
        new = v[..., j] > best + z * e[..., j]
        mask[..., j] = new
        best = np.where(new, v[..., j], best)
    return mask


def _significant_records(v: np.ndarray, margin: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """`significant_record_mask` of one curve (`margin` = z * se): the same comparisons, made
    a window of points at a time from each record to the next instead of point by point (a
    curve of a pooled B_p has hundreds of thousands of points and a few dozen records)."""
    mask[0] = True
    best, i, width = v[0], 1, 256
    while i < v.size:
        stop = min(v.size, i + width)
        hit = np.flatnonzero(v[i:stop] > best + margin[i:stop])
        if hit.size == 0:
            i, width = stop, min(2 * width, 1 << 16)
            continue
        j = i + int(hit[0])
        mask[j], best, i, width = True, v[j], j + 1, 256
    return mask


def record_points(curve: pd.DataFrame, metric: str = "avg@4", *, bin_width: float = 0.01,
                  ema_alpha: float | None = None, compute: str = "compute", method: str = "paper",
                  z: float = RECORD_Z) -> pd.DataFrame:
    """Record-breaking points of one curve (a run, or a pool of runs).

    Rows are ordered by `compute` (then `step`, stable). method 'paper'
    (default here: records are the paper's construct): points entering a new
    bin of width `bin_width`. method 'noise': significant records
    (`significant_record_mask` with the column `<metric>_se` and `z`). The
    result keeps the input columns plus `bin`; with EMA smoothing it also has
    `smoothed`, the value that was binned (and that the paper's fits use).
    """
    order = [compute] + (["step"] if "step" in curve.columns and compute != "step" else [])
    curve = curve.sort_values(order, kind="stable")
    raw = curve[metric].to_numpy(dtype=float)
    smoothed = ema(raw, ema_alpha)
    if method == "noise":
        if se_column(metric) not in curve.columns:
            raise ValueError(f"noise-method records need the column '{se_column(metric)}' "
                             "(fits.noise.add_standard_errors)")
        mask = significant_record_mask(smoothed, curve[se_column(metric)].to_numpy(dtype=float), z)
    else:
        mask = record_mask(smoothed, bin_width)
    out = curve.loc[mask].copy()
    if ema_alpha is not None:
        out["smoothed"] = smoothed[mask]
    out["bin"] = metric_bins(smoothed[mask], bin_width)
    return out.reset_index(drop=True)


def record_points_by_run(evals: pd.DataFrame, metric: str = "avg@4", *, bin_width: float = 0.01,
                         ema_alpha: float | None = None, run_keys=("B_p", "n"), method: str = "paper",
                         z: float = RECORD_Z) -> pd.DataFrame:
    """`record_points` applied to each run (one curve per `run_keys` value)."""
    keys = [k for k in run_keys if k in evals.columns]
    parts = [record_points(g, metric, bin_width=bin_width, ema_alpha=ema_alpha, method=method, z=z)
             for _, g in evals.groupby(keys, sort=True)]
    if not parts:
        cols = list(evals.columns) + (["smoothed"] if ema_alpha is not None else []) + ["bin"]
        return pd.DataFrame(columns=cols)
    return pd.concat(parts, ignore_index=True)


def running_frontier(compute, values) -> np.ndarray:
    """`f(C) = max{metric_j : C_j <= C}` evaluated at each given point's compute."""
    c = np.asarray(compute, dtype=float)
    v = np.asarray(values, dtype=float)
    order = np.argsort(c, kind="stable")
    best = np.maximum.accumulate(v[order])
    # Points sharing a compute value share the best over all of them.
    sorted_c = c[order]
    last = np.searchsorted(sorted_c, sorted_c, side="right") - 1
    out = np.empty_like(v)
    out[order] = best[last]
    return out
