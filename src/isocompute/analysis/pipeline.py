"""The analysis chain end to end: evaluation table in, tables (and figures) out.

`run_analysis` is pure (frames in, frames out) and is what the CLI and the
Snakemake rules call; `write_analysis` is the only place that touches disk,
and it writes atomically: everything goes to a temporary folder next to the
destination, which is renamed into place only when complete.
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from isocompute.analysis.bootstrap import bootstrap_fits, bootstrap_intervals, bootstrap_laws
from isocompute.analysis.curves import fit_curves
from isocompute.analysis.fits import FitGrid, check_method
from isocompute.analysis.fits_noise import (add_standard_errors, noise_fit_grid, pooled_base, residual_se,
                                            run_groups)
from isocompute.analysis.frontier import default_extrapolate, frontier_fixed_batch, frontier_fixed_bp, frontier_joint
from isocompute.analysis.nstar import law_points, n_star_laws
from isocompute.analysis.recommend import recommendation_table
from isocompute.analysis.records import record_points_by_run
from isocompute.analysis.studies import (extrapolation_check, interference_histograms, metric_fits, metric_frontiers,
                                         metric_optima, sensitivity)
from isocompute.analysis.tables import check_evals, check_train, se_column
from isocompute.atomic import atomic_dir
from isocompute.config import schema_defaults

# The analysis section of the config schema is the one home of these defaults.
DEFAULTS = schema_defaults("analysis")

# results key -> file name; keys absent from the results are skipped.
TABLE_FILES = {
    "records": "records.csv",
    "fits": "fits.csv",
    "frontier": "frontier.csv",
    "n_star_fit": "n_star_fit.csv",
    "n_star_fit_draws": "n_star_fit_draws.csv",
    "bootstrap_fits": "bootstrap_fits.csv",
    "recommendations": "recommendations.csv",
    "extrapolation": "extrapolation.csv",
    "frontier_fixed_batch": "frontier_fixed_batch.csv",
    "n_star_fit_fixed_batch": "n_star_fit_fixed_batch.csv",
    "frontier_joint": "frontier_joint.csv",
    "n_star_fit_joint": "n_star_fit_joint.csv",
    "optima": "optima.csv",
    "frontier_metrics": "frontier_metrics.csv",
    "sensitivity": "sensitivity.csv",
    "interference": "interference.csv",
    "fits_tokens": "fits_tokens.csv",
    "frontier_tokens": "frontier_tokens.csv",
    "n_star_fit_tokens": "n_star_fit_tokens.csv",
    "timings": "timings.csv",
    "base": "base.csv",
}


def _with_law_points(frontier: pd.DataFrame, by, x: str, window: int) -> pd.DataFrame:
    """Add the running average of log2 n* (what the law is fitted to) per group."""
    if frontier.empty:
        return frontier.assign(log2_n_star_avg=pd.Series(dtype=float))
    parts = []
    for _, f in (frontier.groupby(by, sort=True) if by else [((), frontier)]):
        f = f.copy()
        f["log2_n_star_avg"] = law_points(f, x=x, window=window)["log2_n_star_avg"].to_numpy()
        parts.append(f)
    return pd.concat(parts, ignore_index=True)


def fit_study(evals: pd.DataFrame, metric: str = "avg@4", *, method: str = DEFAULTS["method"],
              bin_width: float = DEFAULTS["bin_width"], ema_alpha: float | None = DEFAULTS["ema_alpha"],
              min_compute: float | None = DEFAULTS["min_compute"], grid: FitGrid | None = None,
              se_window: int = DEFAULTS["se_window"]):
    """The fitting stage of `run_analysis` on a checked evaluation table.

    Returns (evals, fits, base). Noise method: `evals` gains the column
    `<metric>_se` (from problems and samples, or the residuals' estimate
    when the table has neither), every fit shares the pooled R0, and `base`
    is a one-row table (metric, R0, R0_se, n_base, se_source, se_median).
    Paper method: evals unchanged, fits to records, base None.
    """
    fit_kw = dict(bin_width=bin_width, ema_alpha=ema_alpha, min_compute=min_compute, grid=grid, method=method)
    if method != "noise":
        return evals, fit_curves(evals, metric, **fit_kw), None
    evals, se_source = add_standard_errors(evals, metric, window=se_window)
    fits = fit_curves(evals, metric, R0=pooled_base(evals, metric)["R0"], **fit_kw)
    if se_source == "unknown":
        evals = evals.assign(**{se_column(metric): residual_se(fits)})
    base = pd.DataFrame([{"metric": metric, **pooled_base(evals, metric), "se_source": se_source,
                          "se_median": float(evals[se_column(metric)].median())}])
    return evals, fits, base


def run_analysis(evals: pd.DataFrame, *, metric: str = "avg@4", method: str = DEFAULTS["method"],
                 bin_width: float = DEFAULTS["bin_width"], ema_alpha: float | None = DEFAULTS["ema_alpha"],
                 min_compute: float | None = DEFAULTS["min_compute"], grid_points: int = DEFAULTS["grid_points"],
                 n_boot: int = DEFAULTS["bootstrap"], seed: int = 0,
                 extrapolate_fraction: float = DEFAULTS["extrapolate_fraction"], window: int = DEFAULTS["window"],
                 ci: float = DEFAULTS["ci"], train: pd.DataFrame | None = None, split: str | None = None,
                 hist_bins: int = 10, optima_metrics=("best@4", "worst@4"),
                 bootstrap_studies=("fixed_B_p",), extrapolate: bool | None = None,
                 fit_grid: FitGrid | None = None, record_z: float = DEFAULTS["record_z"],
                 se_window: int = DEFAULTS["se_window"],
                 bootstrap_unit: str | None = None, pool: str = DEFAULTS["pool"],
                 pool_degree: int = DEFAULTS["pool_degree"],
                 pool_alpha: float = DEFAULTS["pool_alpha"],
                 max_extrapolation: float = DEFAULTS["max_extrapolation"]) -> dict[str, pd.DataFrame]:
    """Every table of the analysis from one evaluation table.

    Returns a dict of DataFrames: evals (checked), records, fits, frontier
    (Q1, per B_p, with bootstrap bands), n_star_fit (law per B_p with
    bootstrap intervals), frontier_fixed_batch / n_star_fit_fixed_batch (Q2,
    x = steps M), frontier_joint / n_star_fit_joint (Q3), optima,
    frontier_metrics (the frontier of each optima metric, per B_p),
    sensitivity, extrapolation, interference (with `train`), bootstrap_fits and
    n_star_fit_draws (with `n_boot`: every replicate's cell fits and Q1 law),
    recommendations (module `recommend` at a few budgets over the studied
    range and one `max_extrapolation` times above it), fits_tokens /
    frontier_tokens / n_star_fit_tokens (with a `tokens` column; runs missing a tokens value are
    left out of these, with a warning), base (noise method: the pooled R0 and
    the evaluations' standard errors), params and timings. Raises InputError
    on malformed input before computing anything.

    `method` 'noise' (default; METHODS.md section 11): each evaluation's
    standard error from its problems and samples (`se_window` evaluations
    smooth the success rate behind it; a table without them is analysed
    with one error for all, estimated from the residuals, and a warning);
    one R0 pooled over all runs' step-0 evaluations; each run's sigmoid
    fitted to all its evaluations weighted by 1/se^2, and with `pool`
    'trend' the runs of each B_p refitted at once with one exponent B and
    A, log C_mid polynomials of degree `pool_degree` in log2 n, unless an
    F-test rejects the trend at `pool_alpha` (`fits_pooled`); records (shown, not
    fitted) need a rise of `record_z` standard errors; optima and
    sensitivity from the fitted curves. 'paper': the paper's procedure
    exactly (records in bins of `bin_width`, optionally EMA-smoothed; each
    run its own R0; optima and sensitivity from running maxima).

    `extrapolate` (None: the method's default) takes each fitted curve over
    the whole compute grid (paper: True); False uses each curve only from
    its run's first evaluation at positive compute to its last (noise).
    `fit_grid` None is the method's grid. Bootstrap intervals (`n_boot`
    resamples, `seed`; `bootstrap_unit` 'points' or 'seeds', default seeds
    when a cell has several) are computed for the studies named in
    `bootstrap_studies`: 'fixed_B_p' (Q1, default), 'fixed_batch' (Q2),
    'joint' (Q3); the others get point estimates only.
    """
    clock = _Clock()
    check_method(method)
    evals = check_evals(evals, metric, split=split)
    if train is not None:
        train = check_train(train)
    if extrapolate is None:
        extrapolate = default_extrapolate(method)
    if fit_grid is None:
        fit_grid = noise_fit_grid(pool, pool_degree, pool_alpha) if method == "noise" else FitGrid()
    clock.lap("validate")
    opts = dict(bin_width=bin_width, ema_alpha=ema_alpha)
    fit_kw = dict(min_compute=min_compute, grid=fit_grid, method=method, **opts)
    out: dict[str, pd.DataFrame] = {}

    out["evals"], out["fits"], base = fit_study(evals, metric, se_window=se_window, **fit_kw)
    evals, fits = out["evals"], out["fits"]
    R0 = None if base is None else float(base["R0"].iloc[0])
    if base is not None:
        out["base"] = base
    clock.lap("fits")

    records = record_points_by_run(evals, metric, method=method, z=record_z, **opts)
    keep = [c for c in ("run", "split", "B_p", "n", "seed", "step", "compute", "tokens", metric,
                        se_column(metric), "smoothed", "bin") if c in records.columns]
    out["records"] = records[keep]
    clock.lap("records")

    front = dict(grid_points=grid_points, extrapolate=extrapolate)
    # A B_p with a single n (a fixed-B cell, grid.<split>.cells) has no frontier over n.
    q1 = frontier_fixed_bp(fits, min_runs=2, **front)
    laws = n_star_laws(q1, by="B_p", window=window)
    q2 = frontier_fixed_batch(fits, **front)
    laws_q2 = n_star_laws(q2, by="B", x="M", window=window)
    q3 = frontier_joint(fits, **front)
    laws_q3 = n_star_laws(q3, by=None, window=window)
    clock.lap("frontiers + laws")

    if n_boot > 0:
        boot = bootstrap_fits(evals, metric, n_boot=n_boot, seed=seed, R0=R0, unit=bootstrap_unit,
                              **fit_kw)
        clock.lap("bootstrap fits")
        common = dict(grid_points=grid_points, window=window, ci=ci, extrapolate=extrapolate)
        # The replicate fits and Q1's replicate laws are kept: `recommend` predicts from them at any C.
        out["bootstrap_fits"] = boot.astype({c: np.float64 for c in boot.select_dtypes("float32")})
        if "fixed_B_p" in bootstrap_studies:
            laws, q1, out["n_star_fit_draws"] = bootstrap_laws(boot, fits, laws, q1, by="B_p", **common)
        if "fixed_batch" in bootstrap_studies:
            laws_q2, q2 = bootstrap_intervals(boot, fits, laws_q2, q2, by="B", scale_by_batch=True, **common)
        if "joint" in bootstrap_studies:
            laws_q3, q3 = bootstrap_intervals(boot, fits, laws_q3, q3, by=None, **common)
        clock.lap("bootstrap laws")
    out["frontier"] = _with_law_points(q1, "B_p", "compute", window)
    out["frontier_fixed_batch"] = _with_law_points(q2, "B", "M", window)
    out["frontier_joint"] = _with_law_points(q3, None, "compute", window)
    out["n_star_fit"] = laws
    out["n_star_fit_fixed_batch"] = laws_q2
    out["n_star_fit_joint"] = laws_q3
    out["recommendations"] = recommendation_table(out, extrapolate=extrapolate, ci=ci,
                                                  max_extrapolation=max_extrapolation)

    # best@4 and worst@4 by the same method: their optima (Fig. 8) and frontiers (Fig. 20).
    by_metric = metric_fits(evals, optima_metrics, method=method, fit_grid=fit_grid, min_compute=min_compute,
                            **opts)
    out["optima"] = metric_optima(evals, optima_metrics, method=method, fits=by_metric)
    out["frontier_metrics"] = metric_frontiers(by_metric, grid_points=grid_points, extrapolate=extrapolate)
    out["sensitivity"] = sensitivity(evals, metric, method=method, fits=fits if method == "noise" else None)
    out["extrapolation"] = extrapolation_check(evals, metric, fraction=extrapolate_fraction, fits=fits, R0=R0,
                                               **fit_kw)
    if train is not None:
        out["interference"] = interference_histograms(train, bins=hist_bins)
    clock.lap("studies")

    by_tokens = _tokens_axis(evals)
    if by_tokens is not None:
        fits_tok = fit_curves(by_tokens, metric, R0=R0, **{**fit_kw, "min_compute": None})
        out["fits_tokens"] = fits_tok
        front_tok = frontier_fixed_bp(fits_tok, min_runs=2, **front).rename(columns={"compute": "tokens"})
        # The n* law with compute in generated tokens (appendix: tokens vs rollouts).
        out["n_star_fit_tokens"] = n_star_laws(front_tok, by="B_p", x="tokens", window=window)
        out["frontier_tokens"] = _with_law_points(front_tok, "B_p", "tokens", window)
        clock.lap("tokens")

    params = dict(metric=metric, method=method, bin_width=bin_width, ema_alpha=ema_alpha, min_compute=min_compute,
                  grid_points=grid_points, n_boot=n_boot, seed=seed,
                  extrapolate_fraction=extrapolate_fraction, window=window, ci=ci, split=split,
                  hist_bins=hist_bins, bootstrap_studies=list(bootstrap_studies), extrapolate=extrapolate,
                  record_z=record_z, se_window=se_window, bootstrap_unit=bootstrap_unit,
                  max_extrapolation=max_extrapolation,
                  **{f"fit_{k}": v for k, v in vars(fit_grid).items()})
    out["params"] = pd.DataFrame({"name": list(params), "value": [json.dumps(v) for v in params.values()]})
    out["timings"] = clock.table()
    return out


def _tokens_axis(evals: pd.DataFrame) -> pd.DataFrame | None:
    """The evaluations of the runs whose every row has `tokens`, with compute = tokens.

    A run missing a tokens value (a log without response lengths) is left out
    of the tokens-axis tables with a warning, not the whole analysis."""
    if "tokens" not in evals.columns:
        return None
    keys = run_groups(evals)
    complete = evals["tokens"].notna().groupby([evals[k] for k in keys]).transform("all")
    if not complete.all():
        lacking = evals.loc[~complete, keys].drop_duplicates()
        names = ", ".join("(" + ", ".join(f"{k}={v}" for k, v in zip(keys, row)) + ")"
                          for row in lacking.itertuples(index=False))
        warnings.warn(f"column 'tokens' is missing in {len(lacking)} run(s) {names}: the tokens-axis tables "
                      f"(fits_tokens, frontier_tokens) use the other runs", stacklevel=3)
    kept = evals[complete.to_numpy()]
    if kept.empty:
        return None
    return kept.assign(compute=kept["tokens"].astype(float))


def write_analysis(results: dict[str, pd.DataFrame], out_dir: Path | str, *, figures: bool = True,
                   formats=("png", "pdf")) -> list[Path]:
    """Write the tables (and figures/) of `run_analysis` into `out_dir`, atomically
    (`isocompute.atomic.atomic_dir`: all or nothing; an existing `out_dir` is
    replaced only once the new one is complete). Returns the written paths.
    """
    out_dir = Path(out_dir)
    written = []
    with atomic_dir(out_dir) as tmp:
        for key, name in TABLE_FILES.items():
            if key in results:
                results[key].to_csv(tmp / name, index=False)
                written.append(name)
        if "params" in results:
            p = results["params"]
            (tmp / "params.json").write_text(json.dumps(
                {k: json.loads(v) for k, v in zip(p["name"], p["value"])}, indent=2) + "\n")
            written.append("params.json")
        if figures:
            from isocompute.analysis.plots import plot_all

            start = time.perf_counter()
            figs = plot_all(results, tmp / "figures", formats=formats)
            written += [str(Path(f).relative_to(tmp)) for f in figs]
            if "timings" in results:   # record the figure time alongside the others
                t = pd.concat([results["timings"], pd.DataFrame(
                    {"phase": ["figures"], "seconds": [time.perf_counter() - start]})], ignore_index=True)
                t.to_csv(tmp / TABLE_FILES["timings"], index=False)
    return [out_dir / w for w in written]


class _Clock:
    def __init__(self):
        self.rows, self.last = [], time.perf_counter()

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.rows.append((phase, now - self.last))
        self.last = now

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=["phase", "seconds"]).astype({"seconds": np.float64})
