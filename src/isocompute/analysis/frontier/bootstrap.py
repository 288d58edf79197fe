"""Intervals by resampling: refit every cell on resampled data, then recompute
the frontier, n*(C) and the n* law per replicate.

With one training run per cell, each run's evaluation points are drawn with
replacement (the paper's procedure). When the table has several seeds of a
cell, the seeds are drawn instead (a bootstrap over runs), which also carries
the run-to-run variation that resampling points cannot show. Either way a
replicate of a cell is the fit to its drawn data, by the analysis method.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from isocompute.analysis.fits.fitter import Fitter
from isocompute.analysis.fits.progress import progress
from isocompute.analysis.fits.records import running_average
from isocompute.analysis.fits.sigmoid import USABLE
from isocompute.analysis.frontier.envelope import Curves, comparable, envelope, run_curves, study_grid
from isocompute.analysis.frontier.nstar import GOOD_LAW, LAW_PARAMS, LawGrid, fit_n_star_laws

BOOT_COLUMNS = ["replicate", "B_p", "n", "R0", "A", "B", "C_mid", "status", "compute_min", "compute_max", "hold_from"]
DRAW_COLUMNS = ["replicate", *LAW_PARAMS, "status"]
BAND_COLUMNS = ["reward_lo", "reward_hi", "n_star_lo", "n_star_hi", "log2_n_star_avg_lo", "log2_n_star_avg_hi"]


def resampling_unit(evals: pd.DataFrame) -> str:
    """'seeds' when some cell of the table has several seeds, else 'points'."""
    if "seed" in evals.columns and evals.groupby(["B_p", "n"])["seed"].nunique().max() > 1:
        return "seeds"
    return "points"


def _seed_draws(rng, seed_of_point, n_boot: int) -> np.ndarray:
    """(n_boot, P) how often each point is drawn when a cell's seeds are drawn with replacement."""
    seeds, which = np.unique(seed_of_point, return_inverse=True)
    draws = rng.integers(0, seeds.size, size=(n_boot, seeds.size))
    per_seed = np.stack([np.bincount(row, minlength=seeds.size) for row in draws])
    return per_seed[:, which]


def bootstrap_fits(evals: pd.DataFrame, fitter: Fitter) -> pd.DataFrame:
    """Refit every cell on `bootstrap` resamples of its data (the fitter's settings: bootstrap,
    seed, bootstrap_unit, and how it fits).

    `bootstrap_unit` 'points' (default with one seed per cell) draws a run's points
    with compute > 0 with replacement; 'seeds' (default with several) draws
    the cell's seeds with replacement and pools their points. The paper
    method recomputes the record points of each replicate (R0: the cell's
    own step-0 value); the noise method refits all drawn points by weighted
    least squares, with the fitter's pooled `R0` (default: pooled from the table).
    Returns one row per (replicate, cell): replicate, B_p, n, R0, A, B,
    C_mid, status, compute_min, compute_max, hold_from (`fits.collapse`).
    """
    s, m = fitter.settings, fitter.method
    n_boot, seed, grid = s.bootstrap, s.seed, s.grid
    unit = resampling_unit(evals) if s.bootstrap_unit is None else s.bootstrap_unit
    R0 = m.study_base(evals, s.metric) if fitter.R0 is None else fitter.R0
    rng = np.random.default_rng(seed)
    parts, drawn = [], {}
    cells = evals.groupby(["B_p", "n"], sort=True)
    for (B_p, n), cell in progress(cells, total=cells.ngroups, desc="bootstrap fits (cells)"):
        arr = fitter.cell_arrays(cell)
        cell_R0 = m.cell_base(arr, R0)
        P = arr["compute"].size
        if np.isnan(cell_R0) or arr["compute_range"] is None or n_boot < 1:
            continue
        idx = counts = None
        if unit == "points":
            idx = np.sort(rng.integers(0, P, size=(n_boot, P)), axis=1)
        else:
            counts = _seed_draws(rng, arr["seed"], n_boot)
        res, kept = fitter.resamples(arr, cell_R0, idx, counts)
        if kept is not None:
            drawn[(B_p, n)] = kept
        parts.append(pd.DataFrame({
            "replicate": np.arange(n_boot), "B_p": B_p, "n": n, "R0": cell_R0,
            "A": res["A"], "B": res["B"], "C_mid": res["C_mid"], "status": res["status"],
            "sse": res["sse"], "compute_min": arr["compute_min"], "compute_max": arr["compute_max"],
            "hold_from": arr.get("hold_from", np.nan)}))
    if not parts:
        return pd.DataFrame(columns=BOOT_COLUMNS)
    boot = m.pool_replicates(pd.concat(parts, ignore_index=True), drawn, R0, grid)
    return boot[BOOT_COLUMNS]


def replicate_frontiers(boot: pd.DataFrame, grid, *, extrapolate: bool = True, ties: bool = False):
    """n*(C) and reward per replicate on `grid`: arrays (R, G), NaN where undefined. With
    `ties`, (n_star, n_star_max, reward): n_star_max the largest n tied at the optimum."""
    boot = boot.sort_values(["replicate", "n", "B_p"], kind="stable")
    reps = boot["replicate"].nunique()
    K = len(boot) // max(reps, 1)
    shape = (reps, K)
    best, best_last, reward = envelope(Curves.of(boot, shape), grid, extrapolate=extrapolate, last=True)
    n = boot["n"].to_numpy(dtype=float).reshape(shape)
    pick = lambda i: np.where(i >= 0, np.take_along_axis(n, np.maximum(i, 0), axis=1), np.nan)  # noqa: E731
    if ties:
        return pick(best), pick(best_last), reward
    return pick(best), reward


def frontier_reward_band(boot: pd.DataFrame, fits: pd.DataFrame, grid, *, extrapolate: bool = True,
                         ci: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) of the frontier reward max_n R_n(C) on `grid`, aware of the selection of n.

    The maximum of noisy curves is biased upward, and so are the percentiles of
    its replicates (on n that tie, every replicate takes the luckiest). Here
    each run gets its own bounds instead: lower bounds that hold for all runs
    at once (the replicates' maximum over runs of the studentised deviation
    from the point fit, a max-t band), and upper bounds that hold for each
    (basic bootstrap); the frontier's band runs from the largest lower bound to
    the largest upper bound. It holds the true maximum whenever every run's
    lower bound and the best run's upper bound hold. `boot`, `fits`: one group
    (B_p) of replicate fits and of point fits.
    """
    g = np.asarray(grid, dtype=float)
    nan = np.full(g.shape, np.nan)
    usable = fits[fits["status"].isin(USABLE)]
    ns = np.sort(boot["n"].unique()) if len(boot) else np.array([])
    ns = ns[np.isin(ns, usable["n"].to_numpy())]
    if boot.empty or ns.size == 0:
        return nan, nan
    point = run_curves(usable.set_index("n").loc[ns].reset_index(), g, extrapolate=extrapolate)  # (K, G)
    boot = boot[boot["n"].isin(ns)].sort_values(["replicate", "n"], kind="stable")
    R = boot["replicate"].nunique()
    if len(boot) != R * ns.size:
        return nan, nan
    reps = run_curves(boot, g, extrapolate=extrapolate).reshape(R, ns.size, g.size)          # (R, K, G)
    dev = reps - point[None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)        # a run with no replicate at a grid point
        sd = np.nanstd(dev, axis=0)
        sd = np.where(sd > 1e-12, sd, 1e-12)
        worst = np.nanmax(dev / sd[None], axis=1)                                            # (R, G)
        q = np.nanpercentile(worst, 50 * (1 + ci), axis=0)
        lo = np.nanmax(point - q[None] * sd, axis=0)
        hi = np.nanmax(point - np.nanpercentile(dev, 50 * (1 - ci), axis=0), axis=0)
    return lo, hi


# The batch B = B_p * n is kept apart from the sigmoid exponent (column B).
_GROUP_OF = {"B_p": lambda t: t["B_p"], "B": lambda t: t["B_p"] * t["n"]}


def _groups(boot, fits, table, by):
    """(key, fits of the group, replicates of the group, rows of `table` in the group)."""
    if by is None:
        yield None, fits, boot, np.ones(len(table), dtype=bool)
        return
    for key in table[by].unique():
        yield (key, fits[(_GROUP_OF[by](fits) == key).to_numpy()], boot[(_GROUP_OF[by](boot) == key).to_numpy()],
               (table[by] == key).to_numpy())


@dataclass(frozen=True)
class LawBootstrap:
    """How replicate fits become the law's intervals and the frontier's bands: the groups
    (`by` 'B_p' (Q1), 'B' (Q2, x = steps M with `scale_by_batch`), or None (Q3)), the
    frontier's grid (`grid_points`, `extrapolate`: as the point estimate's), the running
    average's `window`, the interval level `ci`, and the law fit's `law_grid`."""

    by: str | None = "B_p"
    scale_by_batch: bool = False
    grid_points: int = 100
    window: int = 5
    ci: float = 0.95
    extrapolate: bool = True
    law_grid: LawGrid = LawGrid()

    @property
    def quantiles(self) -> tuple[float, float]:
        """The interval's percentiles (lo, hi)."""
        return 50 * (1 - self.ci), 50 * (1 + self.ci)


def bootstrap_intervals(boot: pd.DataFrame, fits: pd.DataFrame, laws: pd.DataFrame,
                        frontier: pd.DataFrame | None = None, spec: LawBootstrap = LawBootstrap()):
    """Percentile intervals of the law (and of the frontier) from replicate fits.

    `fits`/`laws`/`frontier` are the point estimates (`fits` fixes each
    group's grid, the grid `frontier` was computed on); `spec` the groups and
    the grid (`LawBootstrap`). Returns (laws plus <param>_lo,
    <param>_hi and n_boot, the replicates whose law fit succeeded; frontier
    plus reward_lo/hi, n_star_lo/hi and log2_n_star_avg_lo/hi per grid
    point, or None without `frontier`).
    """
    laws, bands, _ = bootstrap_laws(boot, fits, laws, frontier, spec)
    return laws, bands


def bootstrap_laws(boot: pd.DataFrame, fits: pd.DataFrame, laws: pd.DataFrame,
                   frontier: pd.DataFrame | None = None, spec: LawBootstrap = LawBootstrap()):
    """`bootstrap_intervals`, plus the law fitted to every replicate: (laws,
    bands, draws), draws one row per (group, replicate) with columns `by`
    (absent when None), replicate, L, U, k, c0, status. The intervals are
    percentiles over the draws with status 'ok' or 'constant'; keeping the
    draws lets a prediction of the law at any compute (`recommend`) carry
    their correlation, which the per-parameter intervals lose.
    """
    lo_q, hi_q = spec.quantiles
    draws = []
    out = laws.copy()
    for name in LAW_PARAMS:
        out[f"{name}_lo"] = np.nan
        out[f"{name}_hi"] = np.nan
    out["n_boot"] = 0
    bands = None
    if frontier is not None:
        bands = frontier.copy()
        for col in BAND_COLUMNS:
            bands[col] = np.nan
    for key, g_fits, g_boot, rows in _groups(boot, fits, out, spec.by):
        res = None if g_boot.empty else _replicate_laws(key, g_fits, g_boot, spec, bands)
        if res is None:
            continue
        draws.append(pd.DataFrame({**({} if spec.by is None else {spec.by: key}),
                                   "replicate": np.sort(g_boot["replicate"].unique()),
                                   **{name: res[name] for name in LAW_PARAMS}, "status": res["status"]}))
        good = np.isin(res["status"], GOOD_LAW)
        if not good.any():
            continue
        i = np.flatnonzero(rows)[0]
        for name in LAW_PARAMS:
            out.loc[out.index[i], f"{name}_lo"] = np.percentile(res[name][good], lo_q)
            out.loc[out.index[i], f"{name}_hi"] = np.percentile(res[name][good], hi_q)
        out.loc[out.index[i], "n_boot"] = int(good.sum())
    columns = ([] if spec.by is None else [spec.by]) + DRAW_COLUMNS
    draws = pd.concat(draws, ignore_index=True)[columns] if draws else pd.DataFrame(columns=columns)
    return out, bands, draws


def _replicate_laws(key, g_fits: pd.DataFrame, g_boot: pd.DataFrame, spec: LawBootstrap, bands) -> dict | None:
    """One group's replicate frontiers and the law fitted to each (`fit_n_star_laws`'s arrays);
    fills the group's rows of `bands` (when given). None when the group has no grid."""
    by, extrapolate = spec.by, spec.extrapolate
    scale = float(key) if spec.scale_by_batch else 1.0
    grid = study_grid(g_fits, spec.grid_points, scale=scale, extrapolate=extrapolate)
    if grid is None:
        return None
    n_star, n_star_max, reward = replicate_frontiers(g_boot, grid * scale, extrapolate=extrapolate, ties=True)
    # the law is fitted where every run can enter (`envelope.comparable`; Q1 only)
    where = comparable(g_fits, grid, extrapolate=extrapolate) if by == "B_p" else np.ones(grid.size, bool)
    log2_avg = running_average(np.where(where, np.log2(n_star), np.nan), spec.window)
    res = fit_n_star_laws(np.log10(grid), log2_avg, grid=spec.law_grid)
    if bands is not None:
        in_group = np.ones(len(bands), dtype=bool) if by is None else (bands[by] == key).to_numpy()
        if in_group.sum() == grid.size:
            _fill_bands(bands, in_group, reward, (n_star, n_star_max), log2_avg, *spec.quantiles)
            if by == "B_p":     # Q1's reward band: selection-aware (`frontier_reward_band`)
                lo, hi = frontier_reward_band(g_boot, g_fits, grid, extrapolate=extrapolate, ci=spec.ci)
                bands.loc[in_group, "reward_lo"], bands.loc[in_group, "reward_hi"] = lo, hi
    return res


def n_star_band(n_star, n_star_max, lo_q: float, hi_q: float) -> tuple[np.ndarray, np.ndarray]:
    """The band of the frontier's n* over replicates (axis 0) at each grid point: from the lower
    percentile of the smallest optimal n to the upper percentile of the largest (a replicate
    where n tie spans all the tied n), on the studied n themselves (no interpolation)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # a grid point no replicate reaches
        return (np.nanpercentile(n_star, lo_q, axis=0, method="lower"),
                np.nanpercentile(n_star_max, hi_q, axis=0, method="higher"))


def _fill_bands(bands, rows, reward, n_star, log2_avg, lo_q, hi_q) -> None:
    """Percentiles over replicates (axis 0) of each grid point, into `bands` rows. `n_star`:
    (smallest, largest) optimal n per replicate (`n_star_band`)."""
    bands.loc[rows, "n_star_lo"], bands.loc[rows, "n_star_hi"] = n_star_band(*n_star, lo_q, hi_q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # a grid point no replicate reaches
        for name, values in (("reward", reward), ("log2_n_star_avg", log2_avg)):
            bands.loc[rows, f"{name}_lo"] = np.nanpercentile(values, lo_q, axis=0)
            bands.loc[rows, f"{name}_hi"] = np.nanpercentile(values, hi_q, axis=0)


def bootstrap_law_intervals(boot: pd.DataFrame, fits: pd.DataFrame, laws: pd.DataFrame,
                            spec: LawBootstrap = LawBootstrap()) -> pd.DataFrame:
    """The law's percentile intervals alone (`bootstrap_intervals` without a frontier)."""
    return bootstrap_intervals(boot, fits, laws, None, spec)[0]
