"""ScaleRL sigmoid fits of reward vs compute, one curve per run.

`R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B)`. The paper's method fits it,
with `R0` the run's step-0 evaluation, to the run's record-breaking points by
ScaleRL's grid search (docs/methods.md section 7, `fit_curves_paper`); the noise method (the default,
module `fits.noise`) fits all evaluations by weighted least squares with one
pooled R0, through the same search. The search is vectorised: for fixed `(C_mid, B)`
the model is linear in `A`, so the best `A` on its 0.005 grid is the grid value
nearest the least-squares optimum, and the minimum SSE over the grid of `A`,
the 100 values of `C_mid` and a grid of `B` (refined locally) is the same
minimum ScaleRL reaches by optimising `B` for each `(A, C_mid)` pair. Many
curves (bootstrap replicates of one run) are fitted in one pass.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy.special import expit

from isocompute.analysis.fits.grid_search import Search, Sums, _grid_fit
from isocompute.analysis.fits.progress import progress
from isocompute.analysis.fits.records import RecordRule, ema, record_mask


FIT_COLUMNS = ["R0", "A", "B", "C_mid", "sse", "n_points", "status", "compute_min", "compute_max"]

# Fit statuses; only 'ok' and 'flat' curves take part in frontiers.
OK, FLAT, TOO_FEW, NO_POSITIVE, NO_BASE = "ok", "flat", "too_few_points", "no_positive_compute", "no_base_eval"
USABLE = (OK, FLAT)


@dataclass(frozen=True)
class SigmoidFit:
    R0: float
    A: float
    B: float
    C_mid: float
    sse: float
    n_points: int
    status: str

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class FitGrid:
    """The numbers that define the grid search (ScaleRL's defaults for A and C_mid)."""

    a_step: float = 0.005          # grid step of A over [R0, 1]
    a_max: float = 1.0             # upper end of the A grid (rewards are fractions)
    c_mid_points: int = 100        # C_mid values, log-spaced over the observed compute range
    b_bounds: tuple[float, float] = (0.05, 20.0)
    b_points: int = 16             # coarse log-spaced grid of B ...
    b_refine_points: int = 9       # ... refined around the best B of each C_mid,
    b_refine_levels: int = 2       # this many times, each finer by (b_refine_points - 1) / 2
    refine_c_mid: int = 100        # how many C_mid values (best first) get their B refined
    boot_refine_c_mid: int = 4     # the same for bootstrap replicates (speed)
    min_points: int = 3            # fewer record points (C > 0) than this: status 'too_few_points'
    c_mid_margin: float = 0.0      # decades the C_mid grid reaches beyond the observed compute range
    pool: str = "none"             # noise method: how runs are pooled (fits.pooled.POOLS: 'none', 'trend')
    pool_degree: int = 2           # pool 'trend': the trend's degree in log2 n ...
    pool_alpha: float = 0.01       # ... unless an F-test rejects the trend at this level (fits.pooled)
    null_alpha: float = 0.05       # pool 'trend': one curve for all n unless an F-test rejects it at this level
    collapse_alpha: float = 0.0    # noise method: test each run for a collapse at this level (0: no test; fits.collapse)
    collapse_window: int = 8       # ... against the mean of this many evaluations before the cut


def sigmoid_reward(compute, R0, A, B, C_mid) -> np.ndarray:
    """Evaluate `R(C)`; `R(0) = R0`, and a flat fit (`A == R0`) is constant."""
    c = np.asarray(compute, dtype=float)
    R0, A, B, C_mid = (np.asarray(x, dtype=float) for x in (R0, A, B, C_mid))
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        frac = expit(B * (np.log(c) - np.log(C_mid)))   # = 1 / (1 + (C_mid/C)^B)
        out = R0 + (A - R0) * frac
    base = R0 + np.zeros_like(out)
    out = np.where(c <= 0, base, out)
    return np.where(A == R0, base, out)


def _a_max(R0: float, grid: FitGrid) -> float:
    """Largest grid value of A - R0 with A <= a_max."""
    return max(np.floor((grid.a_max - R0) / grid.a_step + 1e-9), 0.0) * grid.a_step


def _cmid_grid(compute_range, grid: FitGrid) -> np.ndarray:
    lo, hi = (float(x) for x in compute_range)
    margin = grid.c_mid_margin * np.log(10.0)
    return np.linspace(np.log(lo) - margin, np.log(hi) + margin, grid.c_mid_points)


def fit_replicates(compute, values, R0: float, resample=None, *, records: RecordRule = RecordRule(),
                   grid: FitGrid = FitGrid(), dtype=np.float64) -> dict:
    """Records + sigmoid fit for one run, for each row of `resample`.

    `compute`, `values`: the run's evaluation points with compute > 0, sorted by
    compute; the step-0 value `R0` is prepended to every replicate. `resample`
    (R, K) holds indices into these points (sorted within each row); None means
    the curve itself. The C_mid grid spans the points at compute >= `records.min_compute`.
    Returns arrays A, B, C_mid, sse, n_points, status:
    'ok'; 'flat' when the fit puts A at R0, or when no point ever enters a bin
    above R0's (A = R0, B and C_mid NaN); 'too_few_points' when fewer than
    `grid.min_points` record points (compute > 0, >= `min_compute`) remain.
    """
    c = np.asarray(compute, dtype=float)
    idx = np.arange(c.size)[None, :] if resample is None else np.asarray(resample)
    out = _unfitted(idx.shape[0])
    if c.size == 0:
        return out
    eligible = np.ones(c.size, dtype=bool) if records.min_compute is None else c >= records.min_compute
    seq = np.concatenate([np.full((idx.shape[0], 1), R0), np.asarray(values, dtype=float)[idx]], axis=1)
    smoothed = ema(seq, records.ema_alpha, axis=1)
    rec = record_mask(smoothed, records.bin_width)[:, 1:]        # step 0 is not a fit point
    rec_any = rec.any(axis=1)
    rec &= eligible[idx]
    dev = smoothed[:, 1:] - R0
    sums, out["n_points"] = _record_sums(c.size, idx, rec, dev)
    enough = out["n_points"] >= grid.min_points
    # Never above R0's bin (no record after step 0) over enough points: flat, not too few.
    never_rose = ~rec_any & (eligible[idx].sum(axis=1) >= grid.min_points)
    out["status"] = np.where(enough, OK, np.where(never_rose, FLAT, TOO_FEW)).astype(object)
    if never_rose.any():
        out["A"][never_rose] = R0
        flat_dev = np.where(eligible[idx], dev, 0.0)
        out["sse"][never_rose] = (flat_dev * flat_dev).sum(axis=1)[never_rose]
    if not enough.any():
        return out
    # Only points that are a record in some replicate enter the sums.
    used = sums.count[:, enough].any(axis=1)
    refine = grid.refine_c_mid if resample is None else grid.boot_refine_c_mid
    part = Sums(np.log(c[used]), sums.ysum[used][:, enough], sums.count[used][:, enough], sums.y2[enough])
    log_cmid = _cmid_grid((c[eligible].min(), c[eligible].max()), grid)
    _store(out, enough, R0, _grid_fit(part, log_cmid, Search(grid, _a_max(R0, grid), dtype, refine)))
    return out


def _record_sums(P: int, idx, rec, dev) -> tuple[Sums, np.ndarray]:
    """The sums over each replicate's record points (mask `rec` (R, K) over the points `idx`,
    `dev` their smoothed value - R0), log_c not yet chosen; and each replicate's count of them."""
    R = idx.shape[0]
    rr, jj = np.nonzero(rec)
    pp = idx[rr, jj]
    dy = dev[rr, jj]
    ysum = np.zeros((P, R))
    count = np.zeros((P, R))
    np.add.at(ysum, (pp, rr), dy)
    np.add.at(count, (pp, rr), 1.0)
    y2 = np.bincount(rr, weights=dy * dy, minlength=R)
    return Sums(None, ysum, count, y2), np.bincount(rr, minlength=R)


def _unfitted(R: int) -> dict:
    """Fit arrays of R replicates before fitting: NaN, no points, status 'no_positive_compute'."""
    return {"A": np.full(R, np.nan), "B": np.full(R, np.nan), "C_mid": np.full(R, np.nan),
            "sse": np.full(R, np.nan), "n_points": np.zeros(R, dtype=int),
            "status": np.full(R, NO_POSITIVE, dtype=object)}


def _store(out: dict, enough, R0: float, fit) -> np.ndarray:
    """Put a grid search's (a, B, C_mid, sse) into the rows `enough` of `out`; a fit with A at
    R0 is 'flat' (B, C_mid NaN). Returns the flat mask (over the fitted rows)."""
    a, b, c_mid, sse = fit
    flat = a <= 0
    out["A"][enough] = R0 + a
    out["B"][enough] = np.where(flat, np.nan, b)
    out["C_mid"][enough] = np.where(flat, np.nan, c_mid)
    out["sse"][enough] = sse
    out["status"][np.flatnonzero(enough)[flat]] = FLAT
    return flat


def fit_sigmoid(compute, reward, R0: float, *, compute_range=None, min_compute: float | None = None,
                grid: FitGrid = FitGrid()) -> SigmoidFit:
    """Fit `R(C)` to given points (normally a run's record points) by grid search.

    Points with compute <= 0 or below `min_compute` are left out. Degenerate
    input gives a status instead of an error: 'no_positive_compute',
    'too_few_points' (fewer than `grid.min_points`), 'flat' (no point above
    R0: A = R0, B and C_mid undefined).
    """
    c = np.asarray(compute, dtype=float)
    y = np.asarray(reward, dtype=float)
    keep = c > 0
    if min_compute is not None:
        keep &= c >= min_compute
    c, y = c[keep], y[keep]
    order = np.argsort(c, kind="stable")
    c, y = c[order], y[order]
    if c.size == 0:
        return SigmoidFit(R0, np.nan, np.nan, np.nan, np.nan, 0, NO_POSITIVE)
    # The caller chose the points (normally records): all of them are fitted.
    P = c.size
    dy = (y - R0)[:, None]
    if P < grid.min_points:
        return SigmoidFit(R0, np.nan, np.nan, np.nan, np.nan, P, TOO_FEW)
    if compute_range is None:
        compute_range = (c.min(), c.max())
    sums = Sums(np.log(c), dy, np.ones((P, 1)), np.array([float((dy ** 2).sum())]))
    search = Search(grid, _a_max(R0, grid), refine_c_mid=grid.refine_c_mid)
    a, b, c_mid, sse = _grid_fit(sums, _cmid_grid(compute_range, grid), search)
    if a[0] <= 0:
        sse_flat = float((dy ** 2).sum())
        return SigmoidFit(R0, R0, np.nan, np.nan, sse_flat, P, FLAT)
    A, B, C_mid = R0 + float(a[0]), float(b[0]), float(c_mid[0])
    sse = float(((sigmoid_reward(c, R0, A, B, C_mid) - y) ** 2).sum())
    return SigmoidFit(R0, A, B, C_mid, sse, P, OK)


def run_arrays(run: pd.DataFrame, metric: str, min_compute: float | None = None) -> dict:
    """What a fit needs from one run's evaluation rows: R0, sorted positive points, range.

    Several seeds of one cell pool into one curve; R0 is then the mean of their
    step-0 evaluations, and `seed` labels each point (0 without a seed column).
    """
    run = run.sort_values(["compute", "step"], kind="stable")
    base = run.loc[run["step"] == 0, metric]
    pos = run[run["compute"] > 0]
    c = pos["compute"].to_numpy(dtype=float)
    eligible = c if min_compute is None else c[c >= min_compute]
    return {
        "R0": float(base.mean()) if len(base) else np.nan,
        "compute": c,
        "values": pos[metric].to_numpy(dtype=float),
        "seed": pos["seed"].to_numpy() if "seed" in pos.columns else np.zeros(c.size, dtype=int),
        "compute_range": (eligible.min(), eligible.max()) if eligible.size else None,
        "compute_min": float(c.min()) if c.size else np.nan,
        "compute_max": float(run["compute"].max()) if len(run) else np.nan,
    }


def fit_curves_paper(evals: pd.DataFrame, metric: str = "avg@4", *, bin_width: float = 0.01,
                     ema_alpha: float | None = None, min_compute: float | None = None,
                     run_keys=("B_p", "n"), grid: FitGrid | None = None) -> pd.DataFrame:
    """The paper's method, one sigmoid fit per run (per cell: the seeds of a cell pool
    into one curve): ScaleRL's fit to the run's record-breaking points, R0 its own
    step-0 evaluation. The C_mid grid spans the run's observed compute range
    (evaluations with compute > 0 and >= `min_compute`). Rows and columns as
    `curves.fit_curves`, which chooses between the methods.
    """
    grid = FitGrid() if grid is None else grid
    keys = [k for k in run_keys if k in evals.columns]
    rows = []
    runs = evals.groupby(keys, sort=True)
    for key, run in progress(runs, total=runs.ngroups, desc=f"fits of {metric} (runs)"):
        key = key if isinstance(key, tuple) else (key,)
        arr = run_arrays(run, metric, min_compute)
        row = dict(zip(keys, key))
        row.update(R0=arr["R0"], compute_min=arr["compute_min"], compute_max=arr["compute_max"])
        if np.isnan(arr["R0"]):
            row.update(A=np.nan, B=np.nan, C_mid=np.nan, sse=np.nan, n_points=0, status=NO_BASE)
        elif arr["compute_range"] is None:
            row.update(A=np.nan, B=np.nan, C_mid=np.nan, sse=np.nan, n_points=0, status=NO_POSITIVE)
        else:
            res = fit_replicates(arr["compute"], arr["values"], arr["R0"],
                                 records=RecordRule(bin_width, ema_alpha, min_compute), grid=grid)
            row.update({k: (v[0].item() if hasattr(v[0], "item") else v[0]) for k, v in res.items()})
        rows.append(row)
    cols = keys + FIT_COLUMNS
    fits = pd.DataFrame(rows, columns=cols)
    fits["n_points"] = fits["n_points"].astype(int)
    return fits


def predict(fits: pd.DataFrame, compute) -> np.ndarray:
    """Fitted rewards (runs x compute); runs whose status is not usable give NaN."""
    c = np.asarray(compute, dtype=float)[None, :]
    col = lambda name: fits[name].to_numpy(dtype=float)[:, None]  # noqa: E731
    out = sigmoid_reward(c, col("R0"), col("A"), col("B"), col("C_mid"))
    usable = fits["status"].isin(USABLE).to_numpy()[:, None]
    return np.where(usable, out, np.nan)
