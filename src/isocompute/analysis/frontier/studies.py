"""Secondary studies on the evaluation (and training) tables.

Metric-specific optima (paper Fig. 8), sensitivity to n vs B_p (Fig. 10),
training pass@1 histograms at matched compute (interference, Fig. 11), and the
extrapolation check of the fitted frontier (fit on small compute, predict the
largest). The paper reads optima and sensitivity off running maxima of raw
points, which noise alone spreads apart; the noise method (default) reads them
off each run's fitted curve.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from isocompute.analysis.fits.fitter import Fitter
from isocompute.analysis.fits.records import running_frontier
from isocompute.analysis.fits.sigmoid import USABLE, predict
from isocompute.analysis.frontier.envelope import frontier, frontier_fixed_bp


def value_at_compute(run: pd.DataFrame, metric: str, compute: float, *, how: str = "running_max") -> float:
    """One run's metric at `compute`: the best value of the points with compute
    <= `compute` ('running_max', the running frontier of raw points) or the
    value of the last such point ('last'). NaN if the run has none."""
    run = run[run["compute"] <= compute * (1 + 1e-12)]
    if run.empty:
        return np.nan
    if how == "running_max":
        return float(run[metric].max())
    if how == "last":
        return float(run.sort_values(["compute", "step"], kind="stable")[metric].iloc[-1])
    raise ValueError(f"how must be 'running_max' or 'last', got {how!r}")


def common_compute(runs: pd.DataFrame) -> float:
    """The largest compute every run in `runs` reached (min over runs of max compute)."""
    return float(runs.groupby(["B_p", "n"])["compute"].max().min())


def fitted_values(fits: pd.DataFrame, compute: float) -> pd.Series:
    """Each fitted curve's value at `compute`, indexed by (B_p, n); NaN where
    the fit is unusable or `compute` lies outside its run's evaluations."""
    value = predict(fits, [compute])[:, 0]
    inside = (fits["compute_min"] <= compute * (1 + 1e-12)) & (compute <= fits["compute_max"] * (1 + 1e-12))
    value = np.where(inside.to_numpy() | (compute == 0), value, np.nan)
    return pd.Series(value, index=pd.MultiIndex.from_frame(fits[["B_p", "n"]]))


def _values_at(group: pd.DataFrame, by: str, metric: str, C: float, how: str, fits: pd.DataFrame | None) -> pd.Series:
    """The metric at compute C of each run of `group`, indexed by `by`: from
    raw points (`how`) without `fits`, else from the fitted curves."""
    if fits is None:
        return pd.Series({v: value_at_compute(run, metric, C, how=how)
                          for v, run in group.groupby(by, sort=True)}).dropna()
    cells = group[["B_p", "n"]].drop_duplicates()
    values = fitted_values(fits.merge(cells, on=["B_p", "n"]), C)
    return pd.Series(values.to_numpy(), index=values.index.get_level_values(by)).sort_index().dropna()


def metric_fits(evals: pd.DataFrame, fitter: Fitter) -> dict:
    """Each of the fitter's `optima_metrics`' fitted curves by its method (noise: with the
    metric's own standard errors; paper: fits to its record points). Metrics missing from
    `evals` are skipped."""
    return {m: fitter.metric_curves(evals, m) for m in fitter.settings.optima_metrics if m in evals.columns}


def metric_frontiers(fits: dict, *, grid_points: int = 100, extrapolate: bool = True) -> pd.DataFrame:
    """The frontier over n per B_p of each metric's fits (`metric_fits`): the
    best@4 and worst@4 frontiers (paper appendix, Fig. 20 on Extremely Hard).
    Columns metric, B_p, compute, n_star, reward."""
    parts = [frontier_fixed_bp(f, grid_points=grid_points, min_runs=2, extrapolate=extrapolate)
             .assign(metric=m) for m, f in fits.items()]
    cols = ["metric", "B_p", "compute", "n_star", "reward"]
    parts = [p[cols] for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)


def metric_optima(evals: pd.DataFrame, fitter: Fitter | None = None, *, how: str = "running_max",
                  fits: dict | None = None) -> pd.DataFrame:
    """For each B_p and each of the fitter's `optima_metrics`, the n maximising the metric at
    the largest compute common to all n of that B_p. Columns B_p, metric, compute, n_opt,
    value, n_runs. Metrics missing from `evals` are skipped.

    method 'noise': the value of each run's fitted curve of that metric
    (`fits`, from `metric_fits`, fitted here when None); 'paper': the raw
    points' running maximum (`how`)."""
    fitter = fitter or Fitter()
    metrics = fitter.settings.optima_metrics
    fits = fitter.method.study_curves(lambda: metric_fits(evals, fitter) if fits is None else fits) or {}
    rows = []
    for B_p, group in evals.groupby("B_p", sort=True):
        C = common_compute(group)
        for metric in metrics:
            if metric not in group.columns:
                continue
            vals = _values_at(group, "n", metric, C, how, fits.get(metric))
            if vals.empty:
                continue
            n_opt = vals.idxmax()   # first (smallest) n among ties
            rows.append({"B_p": B_p, "metric": metric, "compute": C, "n_opt": n_opt,
                         "value": float(vals[n_opt]), "n_runs": int(vals.size)})
    return pd.DataFrame(rows, columns=["B_p", "metric", "compute", "n_opt", "value", "n_runs"])


def sensitivity(evals: pd.DataFrame, fitter: Fitter | None = None, *, compute: float | None = None,
                how: str = "running_max", min_runs: int = 2, fits: pd.DataFrame | None = None) -> pd.DataFrame:
    """Range of the fitter's metric across n at fixed B_p, and across B_p at fixed n.

    Each group (one fixed value, >= `min_runs` runs) is compared at `compute`,
    or by default at the largest compute all its runs reached. method
    'noise': values of the fitted curves (`fits`, noise-method fits of
    the metric, fitted here when None); 'paper': the raw points' running
    maximum (`how`). Columns: varied ('n' or 'B_p'), fixed ('B_p' or 'n'),
    fixed_value, compute, range, min, max, n_runs.
    """
    fitter = fitter or Fitter()
    metric = fitter.metric
    fits = fitter.method.study_curves(lambda: fitter.metric_curves(evals, metric) if fits is None else fits)
    rows = []
    for varied, fixed in (("n", "B_p"), ("B_p", "n")):
        for value, group in evals.groupby(fixed, sort=True):
            if group[varied].nunique() < min_runs:
                continue
            C = common_compute(group) if compute is None else float(compute)
            vals = _values_at(group, varied, metric, C, how, fits)
            if vals.size < min_runs:
                continue
            rows.append({"varied": varied, "fixed": fixed, "fixed_value": value, "compute": C,
                         "range": float(vals.max() - vals.min()), "min": float(vals.min()),
                         "max": float(vals.max()), "n_runs": int(vals.size)})
    return pd.DataFrame(rows, columns=["varied", "fixed", "fixed_value", "compute", "range", "min", "max", "n_runs"])


def interference_histograms(train: pd.DataFrame, *, bins: int = 10, compute: float | None = None,
                            by=("B_p",)) -> pd.DataFrame:
    """Histogram of per-problem training pass@1 at matched compute.

    `train` has one row per (B_p, n, step, problem_id) with `compute` and
    `pass_rate`. Within each `by` group the matched compute is `compute` or, by
    default, the largest compute all its runs reached; each problem contributes
    its latest pass rate at or before it. Columns B_p, n, compute (matched),
    step (the run's last step used), bin_lo, bin_hi, count, fraction.
    """
    edges = np.linspace(0.0, 1.0, bins + 1)
    rows = []
    for _, group in train.groupby(list(by), sort=True):
        C = common_compute(group) if compute is None else float(compute)
        for (B_p, n), run in group.groupby(["B_p", "n"], sort=True):
            seen = run[run["compute"] <= C * (1 + 1e-12)]
            if seen.empty:
                continue
            # Each problem's latest pass rate in each seed replicate (pooled over seeds).
            per_run = ["problem_id"] + (["seed"] if "seed" in seen.columns else [])
            latest = seen.sort_values(["step"], kind="stable").groupby(per_run).tail(1)
            counts, _ = np.histogram(np.clip(latest["pass_rate"].to_numpy(dtype=float), 0, 1), bins=edges)
            total = max(int(counts.sum()), 1)
            for lo, hi, cnt in zip(edges[:-1], edges[1:], counts):
                rows.append({"B_p": B_p, "n": n, "compute": C, "step": int(seen["step"].max()),
                             "bin_lo": lo, "bin_hi": hi, "count": int(cnt), "fraction": cnt / total})
    return pd.DataFrame(rows, columns=["B_p", "n", "compute", "step", "bin_lo", "bin_hi", "count", "fraction"])


def interference_rates(train: pd.DataFrame) -> pd.DataFrame:
    """The rates Fig. 11 reads: the fixed probe's where the runs have one, else the batches'."""
    if "source" not in train.columns:
        return train
    probe = train[train["source"] == "probe"]
    return probe if len(probe) else train[train["source"] == "batch"]


MECHANISM_COLUMNS = ["B_p", "n", "compute", "compute_lo", "compute_hi", "steps", "groups", "zero_variance",
                     "all_correct", "all_wrong", "pass_rate_mean", "pass_rate_q25", "pass_rate_q50", "pass_rate_q75"]


def mechanism_table(train: pd.DataFrame, *, bins_per_octave: int = 2) -> pd.DataFrame:
    """Why n* moves or does not: the learning signal each n keeps, step by step.

    From the training batches' pass rates (one row per problem of a step: the share of
    its n rollouts that were correct), per (B_p, n) and compute bin (`bins_per_octave`
    bins per doubling, the same edges for every run): the share of zero-variance groups
    (all n correct or all wrong: a zero advantage, no gradient), split into all-correct and
    all-wrong, and the distribution of the groups' pass rates (mean and quartiles).
    `compute` is the bin's geometric centre."""
    batch = train[train["source"] == "batch"] if "source" in train.columns else train
    if batch.empty:
        return pd.DataFrame(columns=MECHANISM_COLUMNS)
    p = batch["pass_rate"].to_numpy(dtype=float)
    df = batch.assign(bin=np.floor(np.log2(batch["compute"].to_numpy(dtype=float)) * bins_per_octave).astype(int),
                      all_correct=p >= 1.0, all_wrong=p <= 0.0)
    rows = []
    for (B_p, n, k), g in df.groupby(["B_p", "n", "bin"], sort=True):
        rates = g["pass_rate"].to_numpy(dtype=float)
        q25, q50, q75 = np.quantile(rates, [0.25, 0.5, 0.75])
        rows.append({"B_p": B_p, "n": n, "compute": 2.0 ** ((k + 0.5) / bins_per_octave),
                     "compute_lo": 2.0 ** (k / bins_per_octave), "compute_hi": 2.0 ** ((k + 1) / bins_per_octave),
                     "steps": int(g["step"].nunique()), "groups": len(g),
                     "zero_variance": float((g["all_correct"] | g["all_wrong"]).mean()),
                     "all_correct": float(g["all_correct"].mean()), "all_wrong": float(g["all_wrong"].mean()),
                     "pass_rate_mean": float(rates.mean()), "pass_rate_q25": float(q25), "pass_rate_q50": float(q50),
                     "pass_rate_q75": float(q75)})
    return pd.DataFrame(rows, columns=MECHANISM_COLUMNS)


def extrapolation_check(evals: pd.DataFrame, fitter: Fitter | None = None, *, fits: pd.DataFrame | None = None,
                        by: str = "B_p") -> pd.DataFrame:
    """Fit on compute <= `extrapolate_fraction` x the group's maximum, predict at the maximum.

    For each `by` group (Q1: fixed B_p): curves are refitted by the fitter (the
    noise method with its pooled R0) on the truncated points and
    extrapolated to C_max; the prediction (frontier reward and n*) is
    compared with the full-data fits at C_max (`fits`, refitted if None) and
    with the best raw evaluation at or below C_max.
    """
    fitter = fitter or Fitter()
    metric, fraction = fitter.metric, fitter.settings.extrapolate_fraction
    if fits is None:
        fits = fitter.curves(evals)
    rows = []
    for key, group in evals.groupby(by, sort=True):
        c_max = float(group["compute"].max())
        c_fit = fraction * c_max
        small = group[group["compute"] <= c_fit * (1 + 1e-12)]
        small_fits = fitter.curves(small)
        pred = frontier(small_fits, [c_max], extrapolate=True).iloc[0]
        full = frontier(fits[fits[by] == key], [c_max], extrapolate=True).iloc[0]
        best = group.loc[group[metric].idxmax()]
        raw = running_frontier(group["compute"], group[metric])
        rows.append({
            by: key, "fit_max_compute": c_fit, "compute": c_max,
            "n_runs_fitted": int(small_fits["status"].isin(USABLE).sum()),
            "predicted_reward": pred["reward"], "predicted_n_star": pred["n_star"],
            "observed_reward": full["reward"], "observed_n_star": full["n_star"],
            "observed_raw_reward": float(raw.max()), "observed_raw_n_star": best["n"],
            "abs_error": abs(pred["reward"] - full["reward"]),
        })
    cols = [by, "fit_max_compute", "compute", "n_runs_fitted", "predicted_reward", "predicted_n_star",
            "observed_reward", "observed_n_star", "observed_raw_reward", "observed_raw_n_star", "abs_error"]
    return pd.DataFrame(rows, columns=cols)
