"""Noise-aware sigmoid fits: the default method (docs/methods.md section 11).

Running maxima of noisy evaluations are lifted by the noise, more so for runs
evaluated more often. Instead, each evaluation gets the standard error of its
own samples, every run starts from one R0 (the base model's step-0
evaluations pooled over all runs of the split), and each run's sigmoid is
fitted to all its evaluations by weighted least squares (weights 1/se^2),
which stays unbiased under noise. The grid search is the one of `fits`, with
the weights in place of the record counts.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd

from isocompute.analysis.fits.collapse import COLUMN as COLLAPSED
from isocompute.analysis.fits.grid_search import Search, Sums, _grid_fit
from isocompute.analysis.fits.pooled import get_pool
from isocompute.analysis.fits.progress import progress
from isocompute.analysis.fits.records import running_average
from isocompute.analysis.fits.sigmoid import (FIT_COLUMNS, NO_BASE, NO_POSITIVE, OK, TOO_FEW, USABLE, FitGrid,
                                              _a_max, _cmid_grid, _store)
from isocompute.analysis.inputs.check import se_column
from isocompute.config import schema_defaults

# The fit grid of the noise method: A nearly continuous (its 0.005 grid is a
# bias of up to 0.0025 at the frontier), C_mid free to sit half a decade
# beyond a run's data (a large-n run may stop before its midpoint; the
# frontier uses each curve only where its run has data).
# The runs of one B_p are pooled by a trend in log2 n unless the data reject it
# (`fits.pooled`; analysis.pool, pool_degree, pool_alpha), and share one curve
# unless the data say n matters (analysis.n_effect_alpha).
_DEFAULTS = schema_defaults("analysis")
NOISE_FIT_GRID = FitGrid(a_step=0.001, c_mid_points=120, c_mid_margin=0.5, pool=_DEFAULTS["pool"],
                         pool_degree=_DEFAULTS["pool_degree"], pool_alpha=_DEFAULTS["pool_alpha"],
                         null_alpha=_DEFAULTS["n_effect_alpha"], collapse_alpha=_DEFAULTS["collapse_alpha"],
                         collapse_window=_DEFAULTS["collapse_window"])
# Evaluations averaged for the success rate behind each standard error (analysis.se_window).
SE_SMOOTH_WINDOW = _DEFAULTS["se_window"]


def noise_fit_grid(pool: str = _DEFAULTS["pool"], degree: int = _DEFAULTS["pool_degree"],
                   alpha: float = _DEFAULTS["pool_alpha"], null_alpha: float = _DEFAULTS["n_effect_alpha"],
                   collapse_alpha: float = _DEFAULTS["collapse_alpha"],
                   collapse_window: int = _DEFAULTS["collapse_window"]) -> FitGrid:
    """The noise method's fit settings with the analysis section's pooling and collapse keys."""
    return replace(NOISE_FIT_GRID, pool=get_pool(pool).name, pool_degree=degree, pool_alpha=alpha,
                   null_alpha=null_alpha, collapse_alpha=collapse_alpha, collapse_window=collapse_window)
NOISE_COLUMNS = FIT_COLUMNS + ["se", "n_evals", "hold_from"]

_AVG_AT_K = re.compile(r"^avg@(\d+)$")


def samples_per_problem(evals: pd.DataFrame, metric: str) -> np.ndarray:
    """Independent draws per validation problem behind one value of `metric`.

    avg@k averages k samples per problem; pass@1 averages all N (column
    `samples`); best@k, worst@k and the rest are one 0/1 (or [0, 1]) outcome
    per problem, the conservative reading.
    """
    m = _AVG_AT_K.match(metric)
    if m:
        return np.full(len(evals), float(m.group(1)))
    if metric == "pass@1" and "samples" in evals.columns:
        return evals["samples"].to_numpy(dtype=float)
    return np.ones(len(evals))


def run_groups(evals: pd.DataFrame, run_keys=("B_p", "n")) -> list[str]:
    """Columns that identify one training run: the cell keys, and `seed` when present."""
    keys = [k for k in run_keys if k in evals.columns]
    return keys + (["seed"] if "seed" in evals.columns and "seed" not in keys else [])


def add_standard_errors(evals: pd.DataFrame, metric: str, *,
                        window: int = SE_SMOOTH_WINDOW) -> tuple[pd.DataFrame, str]:
    """`evals` with a column `<metric>_se`, and where the errors came from.

    A column `<metric>_se` already in the table is kept ('table'). Otherwise,
    with a `problems` column, se = sqrt(p (1 - p) / (problems * draws)) with
    `draws` from `samples_per_problem` ('problems'), where p is the run's
    metric averaged over `window` neighbouring evaluations: an error computed
    from the point's own value would weight upward noise more (p > 0.5).
    Without `problems` the table is returned unchanged ('unknown').
    """
    col = se_column(metric)
    if col in evals.columns:
        return evals, "table"
    if "problems" not in evals.columns:
        return evals, "unknown"
    out = evals.copy()
    draws = out["problems"].to_numpy(dtype=float) * samples_per_problem(out, metric)
    p = np.empty(len(out))
    for _, run in out.groupby(run_groups(out), sort=False):
        order = run.sort_values(["compute", "step"], kind="stable").index
        pos = out.index.get_indexer(order)
        p[pos] = running_average(out.loc[order, metric].to_numpy(dtype=float), window)
    p = np.clip(p, 0.5 / draws, 1 - 0.5 / draws)
    out[col] = np.sqrt(p * (1 - p) / draws)
    return out, "problems"


def _weights(evals: pd.DataFrame, metric: str) -> np.ndarray:
    col = se_column(metric)
    if col not in evals.columns:
        return np.ones(len(evals))
    return 1.0 / np.square(evals[col].to_numpy(dtype=float))


def pooled_base(evals: pd.DataFrame, metric: str) -> dict:
    """One R0 for the split: the step-0 evaluations of all runs, weighted by 1/se^2.

    Every run starts from the same base model on the same validation set, so
    each step-0 evaluation measures the same number. Returns R0, R0_se (from
    the standard errors, or the spread of the step-0 values when the table has
    none) and n_base (how many step-0 evaluations were pooled; 0: R0 is NaN).
    """
    base = evals[evals["step"] == 0]
    if base.empty:
        return {"R0": np.nan, "R0_se": np.nan, "n_base": 0}
    v = base[metric].to_numpy(dtype=float)
    w = _weights(base, metric)
    R0 = float(np.sum(w * v) / np.sum(w))
    if se_column(metric) in base.columns:
        R0_se = float(1 / np.sqrt(np.sum(w)))
    else:
        R0_se = float(np.std(v, ddof=1) / np.sqrt(v.size)) if v.size > 1 else np.nan
    return {"R0": R0, "R0_se": R0_se, "n_base": int(v.size)}


def fit_weighted(compute, values, R0: float, weights, *, compute_range=None, grid: FitGrid = NOISE_FIT_GRID,
                 boot: bool = False) -> dict:
    """Weighted least-squares sigmoid fit of one run, for each column of `weights`.

    `compute`, `values` (P,): the run's evaluations with compute > 0;
    `weights` (P,) or (P, R): 1/se^2 times how often each point is drawn in
    each of R replicates (0 leaves a point out). Returns arrays A, B, C_mid,
    sse (the weighted sum of squared residuals), n_points, status ('ok';
    'flat' when the best A is R0; 'too_few_points' below `grid.min_points`
    distinct points). `boot`: the bootstrap's shortcuts, float32 sums and B refined at the
    `grid.boot_refine_c_mid` best C_mid values only.
    """
    c = np.asarray(compute, dtype=float)
    W = np.asarray(weights, dtype=float).reshape(c.size, -1)
    R = W.shape[1]
    out = {"A": np.full(R, np.nan), "B": np.full(R, np.nan), "C_mid": np.full(R, np.nan),
           "sse": np.full(R, np.nan), "n_points": (W > 0).sum(axis=0), "status": np.full(R, NO_POSITIVE, dtype=object)}
    if c.size == 0:
        return out
    dy = np.asarray(values, dtype=float) - R0
    enough = out["n_points"] >= grid.min_points
    out["status"] = np.where(enough, OK, TOO_FEW).astype(object)
    if not enough.any():
        return out
    if compute_range is None:
        compute_range = (c.min(), c.max())
    used = (W[:, enough] > 0).any(axis=1)
    Wu = W[used][:, enough]
    y2 = (Wu * dy[used, None] ** 2).sum(axis=0)
    search = Search(grid, _a_max(R0, grid), np.float32 if boot else np.float64,
                    grid.boot_refine_c_mid if boot else grid.refine_c_mid, dense=True)
    fit = _grid_fit(Sums(np.log(c[used]), Wu * dy[used, None], Wu, y2), _cmid_grid(compute_range, grid), search)
    flat = _store(out, enough, R0, fit)
    out["sse"][enough] = np.where(flat, y2, fit[3])
    return out


def cell_arrays(cell: pd.DataFrame, metric: str, min_compute: float | None = None) -> dict:
    """What a weighted fit needs from one cell's rows (all its seeds pooled)."""
    cell = cell.sort_values(["compute", "step"], kind="stable")
    pos = cell[cell["compute"] > 0]
    c = pos["compute"].to_numpy(dtype=float)
    keep = np.ones(c.size, dtype=bool) if min_compute is None else c >= min_compute
    collapsed = pos[COLLAPSED].to_numpy(dtype=bool) if COLLAPSED in pos.columns else np.zeros(c.size, dtype=bool)
    hold_from = float(c[keep & ~collapsed].max()) if (keep & collapsed).any() and (keep & ~collapsed).any() else np.nan
    keep &= ~collapsed
    return {
        "compute": c[keep], "values": pos[metric].to_numpy(dtype=float)[keep],
        "weights": _weights(pos, metric)[keep],
        "seed": pos["seed"].to_numpy()[keep] if "seed" in pos.columns else np.zeros(int(keep.sum()), dtype=int),
        "compute_range": (c[keep].min(), c[keep].max()) if keep.any() else None,
        "compute_min": float(c.min()) if c.size else np.nan,
        "compute_max": float(cell["compute"].max()) if len(cell) else np.nan,
        "se": float(np.median(1 / np.sqrt(_weights(pos, metric)))) if se_column(metric) in pos.columns else np.nan,
        "hold_from": hold_from,
    }


def fit_curves_noise(evals: pd.DataFrame, metric: str = "avg@4", *, R0: float | None = None,
                     min_compute: float | None = None, run_keys=("B_p", "n"),
                     grid: FitGrid = NOISE_FIT_GRID) -> pd.DataFrame:
    """One weighted least-squares fit per cell (seeds pooled), all sharing R0.

    `R0` defaults to `pooled_base(evals, metric)`. The weights are 1/se^2
    from the column `<metric>_se` (see `add_standard_errors`); without it
    every evaluation is assumed to have the same error, with a warning, and
    the column `se` of the result is that error estimated from the residuals.
    Columns as `curves.fit_curves`, plus se (median standard error of the
    cell's evaluations) and n_evals.
    """
    keys = [k for k in run_keys if k in evals.columns]
    known = se_column(metric) in evals.columns
    if not known:
        warnings.warn(f"evaluation table has no column 'problems' (nor '{se_column(metric)}'): assuming every "
                      f"evaluation of {metric} has the same standard error, estimated from the fit residuals",
                      stacklevel=2)
    if R0 is None:
        R0 = pooled_base(evals, metric)["R0"]
    rows, arrays = [], {}
    cells = evals.groupby(keys, sort=True)
    for key, cell in progress(cells, total=cells.ngroups, desc=f"fits of {metric} (cells)"):
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        arr = cell_arrays(cell, metric, min_compute)
        if "B_p" in row and "n" in row and arr["compute_range"] is not None:
            arrays[(row["B_p"], row["n"])] = arr
        row.update(R0=R0, compute_min=arr["compute_min"], compute_max=arr["compute_max"], se=arr["se"],
                   n_evals=int(arr["compute"].size), hold_from=arr["hold_from"])
        if not np.isfinite(R0):
            row.update(A=np.nan, B=np.nan, C_mid=np.nan, sse=np.nan, n_points=0, status=NO_BASE)
        elif arr["compute_range"] is None:
            row.update(A=np.nan, B=np.nan, C_mid=np.nan, sse=np.nan, n_points=0, status=NO_POSITIVE)
        else:
            res = fit_weighted(arr["compute"], arr["values"], R0, arr["weights"],
                               compute_range=arr["compute_range"], grid=grid)
            row.update({k: (v[0].item() if hasattr(v[0], "item") else v[0]) for k, v in res.items()})
        rows.append(row)
    fits = pd.DataFrame(rows, columns=keys + NOISE_COLUMNS)
    fits["n_points"] = fits["n_points"].astype(int)
    if not known:
        fits["se"] = residual_se(fits)
    return get_pool(grid.pool).pool(fits, arrays, R0, grid)


def residual_se(fits: pd.DataFrame, n_params: int = 3) -> float:
    """Pooled standard error of one evaluation from unweighted fits' residuals."""
    ok = fits[fits["status"].isin(USABLE)]
    dof = (ok["n_points"] - n_params).clip(lower=0).sum()
    return float(np.sqrt(ok["sse"].sum() / dof)) if dof > 0 else np.nan
