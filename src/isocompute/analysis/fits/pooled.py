"""Pooling the runs of one B_p: sigmoid parameters that vary smoothly with n.

One run's fit has three free parameters (A, B, C_mid) for one noisy curve.
Near a crossover the frontier's n* turns on differences between neighbouring
runs smaller than the evaluation noise, so run-by-run fits name the wrong n*
at a fifth of the budgets (benchmarks/bench_frontier_bias.py). The runs of
one B_p are not unrelated, though: the paper's asymptote and midpoint move
steadily with n. The trend model fits all runs of a B_p at once, with one
efficiency exponent B and A and log C_mid polynomials of degree `degree` in
log2 n (all evaluations weighted by 1/se^2, R0 the pooled base value): seven
parameters instead of three per run.

The trend is an assumption, so the data are asked first: an F-test of the
trend model against the run-by-run fits (nested: the trend is a constrained
set of per-run curves) keeps the run-by-run fits when the trend leaves
significantly more residual than they do (p < `alpha`); `pooled` says which.
A B_p needs `degree + 2` fitted runs, so that pooling constrains something.
When the test cannot be computed (no degrees of freedom left) the runs are
not pooled: an untested trend is not kept.

Nested inside the trend is the model where n does nothing: one curve for
every run of the B_p (the trend of degree 0). A second F-test, of that common
curve against the model in force (trend or run-by-run), keeps the common
curve unless it is rejected at `null_alpha`; `model` says which of 'common',
'trend', 'runs' holds and `n_effect_p` is that test's p-value. Without it the
frontier is the maximum over noisy copies of one curve (biased upward, the
winner's curse) and its n* jumps between runs that do not differ: a common
curve makes every n optimal, and the claims (`claims`) say n* is undetermined.
When each run alone holds (the trend is rejected) and n matters, neighbouring
runs the data cannot tell apart are fused into blocks that share one curve
(`fuse_neighbours`, same level; `model` 'blocks'): a step in n is two blocks,
not seven noisy copies whose maximum is biased.
A replicate's tests count its draws as observations (a point drawn twice is
two), as its sums of squares do.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import least_squares
from scipy.special import expit
from scipy.stats import f as f_dist

from isocompute.analysis.fits.progress import progress
from isocompute.analysis.fits.sigmoid import FLAT, OK
from isocompute.registry import Registry

POOLED_COLUMN = "pooled"   # True: A, B, C_mid are the trend model's (or the common curve's); False: the run's own fit
# column `model`: no effect of n, the trend in log2 n, neighbouring n fused into blocks, each run alone
MODELS = ("common", "trend", "blocks", "runs")


def _design(log2_n: np.ndarray, centre: float, degree: int) -> np.ndarray:
    return np.vander(log2_n - centre, degree + 1)          # highest power first, as np.polyval


def _unpack(theta: np.ndarray, degree: int, b_slope: bool = False):
    """theta's parts: B (with `b_slope`, (B, beta): log2 B linear in log2 n), A's and log C_mid's
    coefficients."""
    k = 2 if b_slope else 1
    B = theta[:2] if b_slope else theta[0]
    return B, theta[k:degree + 1 + k], theta[degree + 1 + k:]


def _efficiency(B, X: np.ndarray):
    """The efficiency exponent at the design rows X: B, or with a slope (B, beta) B x 2^(beta x
    (log2 n - centre)), the slope on the design's linear column. B and beta may be (K, 1) columns
    of K parameter draws: then (K, rows)."""
    if np.ndim(B) == 0:
        return B
    return B[0] * np.exp2(np.clip(B[1] * X[:, -2], -60.0, 60.0))


class _WeightedResiduals:
    """The trend model's weighted residuals at theta, `sw * (sigmoid_reward(compute, R0, X @ a, B,
    exp(X @ m)) - y)`: the same numbers by the same operations,
    with what a step of theta leaves unchanged kept: log compute always, log C_mid while the
    midpoint coefficients stay, the sigmoid's fraction while B does too. The solver's
    finite-difference Jacobian steps one coefficient at a time, so most of its evaluations
    move A alone and need no exp, log or expit over the points (the cost of the bootstrap's
    pooled refits on a large table)."""

    def __init__(self, X, R0: float, compute, y, sw, b_slope: bool = False):
        self.X, self.R0, self.y, self.sw, self.b_slope = X, R0, y, sw, b_slope
        self.degree = X.shape[1] - 1
        self.nonpositive = compute <= 0
        with np.errstate(divide="ignore", invalid="ignore"):
            self.log_c = np.log(compute)
        self.m_key = self.b_key = None

    def __call__(self, theta):
        B, a, m = _unpack(theta, self.degree, self.b_slope)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            if self.m_key != m.tobytes():
                self.m_key, self.b_key = m.tobytes(), None
                self.shift = self.log_c - np.log(np.exp(self.X @ m))
            if self.b_key != B.tobytes():
                self.b_key = B.tobytes()
                self.frac = expit(_efficiency(B, self.X) * self.shift)
            A = self.X @ a
            out = self.R0 + (A - self.R0) * self.frac
        base = self.R0 + 0.0
        if self.nonpositive.any():
            out = np.where(self.nonpositive, base, out)
        same = A == self.R0
        if same.any():
            out = np.where(same, base, out)
        return self.sw * (out - self.y)


def fit_trend(points: list[dict], R0: float, init: pd.DataFrame, *, degree: int = 2,
              b_slope: bool = False) -> dict | None:
    """Least-squares trend fit of the runs in `points` (one dict per run:
    n, compute, values, weights; a bootstrap replicate's weights are its
    drawn counts times 1/se^2), started from the run-by-run fits `init`
    (columns n, A, B, C_mid). Returns theta, centre, sse (weighted),
    n_points (the draws behind the points: a point's `draws`, default 1),
    jac (the weighted residuals' Jacobian at theta), residuals (the weighted residuals there), run
    (each residual's run, an index into `points`) and weights (each residual's), or None when the
    solver fails. `degree` 0 is one curve for every run. `b_slope` (degree >= 1): B varies
    with n too, log2 B linear in log2 n (one parameter more, after B in theta; the result's
    b_slope says so).
    """
    if b_slope and degree < 1:
        raise ValueError("fit_trend: b_slope needs degree >= 1 (a linear term in log2 n)")
    log2_n = np.log2([p["n"] for p in points]).astype(float)
    centre = float(log2_n.mean())
    x0 = np.log2(init["n"].to_numpy(dtype=float))
    design0 = _design(x0, centre, degree)
    theta0 = np.concatenate([[float(np.median(init["B"]))] + ([0.0] if b_slope else []),
                             np.linalg.lstsq(design0, init["A"].to_numpy(dtype=float), rcond=None)[0],
                             np.linalg.lstsq(design0, np.log(init["C_mid"].to_numpy(dtype=float)), rcond=None)[0]])
    sizes = [p["compute"].size for p in points]
    X = np.repeat(_design(log2_n, centre, degree), sizes, axis=0)
    c = np.concatenate([p["compute"] for p in points])
    y = np.concatenate([p["values"] for p in points])
    w = np.concatenate([p["weights"] for p in points])
    keep = w > 0
    draws = np.concatenate([p.get("draws", np.ones(p["compute"].size)) for p in points])
    run = np.repeat(np.arange(len(points)), sizes)[keep]
    X, c, y, sw = X[keep], c[keep], y[keep], np.sqrt(w[keep])
    try:
        res = least_squares(_WeightedResiduals(X, R0, c, y, sw, b_slope), theta0, method="trf", x_scale="jac")
    except (ValueError, np.linalg.LinAlgError):
        return None
    if not (res.success and np.all(np.isfinite(res.x)) and res.x[0] > 0):
        return None
    return {"theta": res.x, "centre": centre, "sse": float(np.sum(res.fun ** 2)),
            "n_points": int(round(draws[keep].sum())), "jac": res.jac, "residuals": res.fun, "run": run,
            "weights": w[keep], "b_slope": b_slope}


def trend_params(trend: dict, n, degree: int) -> dict:
    """A, B, C_mid of the trend model at group sizes `n`."""
    B, a, m = _unpack(trend["theta"], degree, trend.get("b_slope", False))
    X = _design(np.log2(np.asarray(n, dtype=float)), trend["centre"], degree)
    return {"A": X @ a, "B": np.broadcast_to(_efficiency(B, X), X.shape[0]).astype(float), "C_mid": np.exp(X @ m)}


def f_test(sse_trend: float, sse_runs: float, n_points: int, params_trend: int, params_runs: int) -> float:
    """p-value of the trend model against the run-by-run fits (nested models)."""
    extra, dof = params_runs - params_trend, n_points - params_runs
    if extra <= 0 or dof <= 0 or sse_runs <= 0:
        return np.nan
    F = max(sse_trend - sse_runs, 0.0) / extra / (sse_runs / dof)
    return float(f_dist.sf(F, extra, dof))


def pool_fits(fits: pd.DataFrame, arrays: dict, R0: float, *, degree: int = 2,
              alpha: float = 0.01, null_alpha: float | None = 0.05) -> pd.DataFrame:
    """Replace the run-by-run fits of each B_p by the trend model, or by one common
    curve, where the data allow.

    `fits`: the noise method's run-by-run fits (columns B_p, n, A, B, C_mid,
    sse, status, ...); `arrays`: (B_p, n) -> `fits.noise.cell_arrays` of the
    cell. Returns the fits with columns pooled, pool_p (trend against runs),
    model (`MODELS`) and n_effect_p (common curve against the model in force;
    `null_alpha` None skips that test, and the fusing of neighbours when each
    run alone holds: `fuse_neighbours`). Cells without a usable fit (too few
    points, no base) are left as they are; the trend needs `degree + 2` usable
    runs, the common curve two.
    """
    out = fits.copy()
    t = {c: out[c].to_numpy(dtype=float).copy() for c in ("A", "B", "C_mid")}
    t["status"] = out["status"].to_numpy(dtype=object).copy()
    t.update(pooled=np.zeros(len(out), dtype=bool), pool_p=np.full(len(out), np.nan),
             n_effect_p=np.full(len(out), np.nan), model=np.full(len(out), "runs", dtype=object))
    if "B_p" in out.columns and np.isfinite(R0):
        bp, t["n"], t["sse"] = out["B_p"].to_numpy(), out["n"].to_numpy(), out["sse"].to_numpy(dtype=float)
        for B_p in np.unique(bp):
            rows = np.flatnonzero((bp == B_p) & np.isin(t["status"], (OK, FLAT))
                                  & np.array([(B_p, n) in arrays for n in t["n"]]))
            fitted = rows[t["status"][rows] == OK]
            if np.unique(t["n"][rows]).size < 2 or fitted.size == 0:
                continue
            points = [{"n": float(t["n"][i]), **arrays[(B_p, t["n"][i])]} for i in rows]
            held = _held_model(t, rows, points, R0, degree=degree, alpha=alpha, null_alpha=null_alpha)
            if held["trend"] is not None:
                values = trend_params(held["trend"], t["n"][rows], held["degree"])
                _pool_rows(t, rows, values, "common" if held["degree"] == 0 else "trend")
            elif null_alpha is not None and np.unique(t["n"][rows]).size > 2:  # two runs: the common test was it
                _fuse(t, rows, points, R0, null_alpha)
    out["A"], out["B"], out["C_mid"], out["status"] = t["A"], t["B"], t["C_mid"], t["status"]
    out[POOLED_COLUMN], out["pool_p"], out["model"], out["n_effect_p"] = (t["pooled"], t["pool_p"], t["model"],
                                                                         t["n_effect_p"])
    return out


def _held_model(t: dict, rows, points: list, R0: float, *, degree: int, alpha: float,
                null_alpha: float | None) -> dict:
    """The model one B_p's runs (`rows` of the columns `t`) hold to: run by run, the trend
    in log2 n of `degree` unless an F-test rejects it at `alpha`, or one common curve unless
    rejected at `null_alpha` (None: not tried). Writes the p-values into t's pool_p, n_effect_p."""
    fitted = rows[t["status"][rows] == OK]
    n_col = t["n"]
    init = pd.DataFrame({"n": n_col[fitted], "A": t["A"][fitted], "B": t["B"][fitted], "C_mid": t["C_mid"][fitted]})
    # run-by-run: A, B, C_mid per fitted run (a flat run: A alone)
    held = {"sse": float(t["sse"][rows].sum()), "params": 3 * fitted.size + (rows.size - fitted.size),
            "trend": None, "degree": None}
    if np.unique(n_col[rows]).size >= degree + 2 and np.unique(n_col[fitted]).size >= degree + 1:
        trend = fit_trend(points, R0, init, degree=degree)
        if trend is not None:
            p = f_test(trend["sse"], held["sse"], trend["n_points"], 1 + 2 * (degree + 1), held["params"])
            t["pool_p"][rows] = p
            if np.isfinite(p) and p >= alpha:     # an untestable trend (p NaN) is not kept
                held = {"sse": trend["sse"], "params": 1 + 2 * (degree + 1), "trend": trend, "degree": degree}
    if null_alpha is not None:
        common = fit_trend(points, R0, init, degree=0)
        if common is not None:
            p = f_test(common["sse"], held["sse"], common["n_points"], 3, held["params"])
            t["n_effect_p"][rows] = p
            if np.isfinite(p) and p >= null_alpha:
                held = {**held, "trend": common, "degree": 0}
    return held


def _fuse(t: dict, rows, points: list, R0: float, alpha: float) -> None:
    """Each run alone holds, and n matters: fuse neighbours in n that the data cannot tell
    apart (`fuse_neighbours`), and pool each fused block's rows of `t`."""
    n_col, status = t["n"], t["status"]
    order = rows[np.argsort(n_col[rows], kind="stable")]
    blocks = fuse_neighbours(order, dict(zip(rows, points)),
                             {i: (float(t["sse"][i]), 3 if status[i] == OK else 1) for i in rows},
                             pd.DataFrame({"n": n_col, "A": t["A"], "B": t["B"], "C_mid": t["C_mid"]}), R0, alpha)
    for block in blocks:
        if block["fit"] is None:
            continue
        b_rows = np.asarray(block["rows"])
        _pool_rows(t, b_rows, trend_params(block["fit"], n_col[b_rows], 0), "blocks")


def _pool_rows(t: dict, rows, values: dict, model: str) -> None:
    """Rows of `t` take a pooled model's curves."""
    t["A"][rows], t["B"][rows], t["C_mid"][rows] = values["A"], values["B"], values["C_mid"]
    t["status"][rows], t["pooled"][rows], t["model"][rows] = OK, True, model


def fuse_neighbours(order, points: dict, own: dict, runs: pd.DataFrame, R0: float, alpha: float) -> list[dict]:
    """Blocks of neighbouring runs (in n) that share one curve, merged greedily: while the
    merge of two adjacent blocks that the data contest least is not rejected by an F-test
    against the two apart (p >= `alpha`), merge them. `order`: row indices by n;
    `points[i]`, `own[i]` = (sse, parameters) of run i's own fit; `runs`: the run fits
    (columns n, A, B, C_mid by row, the starting values). Returns the blocks (rows, sse,
    params, fit: the common curve's `fit_trend` result, None for a single run).

    Without this, n that tie (a step in n: every n above it on one curve) are fitted
    apart and the frontier takes the luckiest of them (the winner's curse)."""
    blocks = [{"rows": [i], "sse": own[i][0], "params": own[i][1], "fit": None} for i in order]
    merged: dict = {}

    def merge(a, b):
        key = (tuple(a["rows"]), tuple(b["rows"]))
        if key not in merged:
            rows = a["rows"] + b["rows"]
            init = runs.loc[[i for i in rows if own[i][1] == 3]]
            fit = None if init.empty else fit_trend([points[i] for i in rows], R0, init, degree=0)
            p = np.nan if fit is None else f_test(fit["sse"], a["sse"] + b["sse"], fit["n_points"], 3,
                                                  a["params"] + b["params"])
            merged[key] = {"rows": rows, "sse": np.nan if fit is None else fit["sse"], "params": 3, "fit": fit,
                           "p": p}
        return merged[key]

    while len(blocks) > 1:
        pairs = [merge(blocks[j], blocks[j + 1]) for j in range(len(blocks) - 1)]
        ps = np.array([m["p"] for m in pairs], dtype=float)
        if not np.isfinite(ps).any() or np.nanmax(ps) < alpha:
            break
        j = int(np.nanargmax(ps))
        blocks[j:j + 2] = [{k: pairs[j][k] for k in ("rows", "sse", "params", "fit")}]
    return blocks


# ------------------------------------------------------------------ pooling strategies (analysis.pool)

class Pool:
    """How the noise method's run-by-run fits are pooled: one strategy per value of `analysis.pool`."""

    name = ""

    def pool(self, fits: pd.DataFrame, arrays: dict, R0: float, grid) -> pd.DataFrame:
        """The point estimate's fits; `arrays` (B_p, n) -> the cell's `fits.noise.cell_arrays`."""
        raise NotImplementedError

    def pool_replicates(self, boot: pd.DataFrame, drawn: dict, R0: float, grid) -> pd.DataFrame:
        """The bootstrap replicates' fits; `drawn` (B_p, n) -> (cell arrays, counts (R, P) of each replicate)."""
        raise NotImplementedError


# @register_pool(name) files the strategy under the config value `name`; get_pool(name) finds it.
POOLS = Registry("pool")
register_pool, get_pool = POOLS.register, POOLS.get


@register_pool("none")
class NoPool(Pool):
    """Each run fitted alone."""

    def pool(self, fits, arrays, R0, grid):
        return fits

    def pool_replicates(self, boot, drawn, R0, grid):
        return boot


@register_pool("trend")
class TrendPool(Pool):
    """The runs of each B_p at once, with a trend of degree `grid.pool_degree` in log2 n (`pool_fits`)."""

    def pool(self, fits, arrays, R0, grid):
        return pool_fits(fits, arrays, R0, degree=grid.pool_degree, alpha=grid.pool_alpha,
                         null_alpha=grid.null_alpha)

    def pool_replicates(self, boot, drawn, R0, grid):
        """Each replicate pooled as the point estimate is (the F-test included), on its drawn points."""
        parts = []
        replicates = boot.groupby("replicate", sort=True)
        for r, rep in progress(replicates, total=replicates.ngroups, desc="bootstrap pooling (replicates)"):
            arrays = {key: {**arr, "weights": arr["weights"] * counts[r], "draws": counts[r]}
                      for key, (arr, counts) in drawn.items()}
            parts.append(self.pool(rep.astype({"sse": float}), arrays, R0, grid))
        return pd.concat(parts, ignore_index=True)
